//! The real binary: config validation exit codes, a second process on the
//! same state dir, SIGTERM (shutdown event + 1012) and logs.tail on the real
//! log file.

use std::process::Command;

use serde_json::json;

use crate::support::process::{ferroclaw, spawn_gateway};
use crate::support::process::{WaitWithin, Within, CHILD_LIMIT};
use crate::support::{connect_params, Client};

/// The mistakes a new user makes, as they make them: a typo at the top
/// (`channel:`), one inside a section (`botTokn`, whose section then lacks
/// `botToken`), a JSON5 syntax error. Each is named where it is, with the
/// key it likely meant; `--strict` fails on unknown keys.
#[test]
fn config_mistakes_are_named_with_what_was_meant_and_strict_fails_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferroclaw.json");
    let validate = |args: &[&str]| {
        let out = ferroclaw(dir.path())
            .args(["config", "validate"])
            .args(args)
            .within(CHILD_LIMIT);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    std::fs::write(&path, "{ channel: {}, gateway: { prot: 19999 } }").unwrap();
    let (code, text) = validate(&[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("unknown config key channel (ignored): did you mean channels?")
            && text.contains("unknown config key gateway.prot (ignored): did you mean port?")
            && text.contains("2 warning(s)"),
        "{text}"
    );
    let (code, text) = validate(&["--strict"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("2 unknown key(s) (--strict)"), "{text}");

    // Inside a section: the typo is named, with the key it stands in for.
    std::fs::write(
        &path,
        "{ channels: { telegram: { botTokn: '1:x', dmPolicy: 'pairing' } } }",
    )
    .unwrap();
    let (_, text) = validate(&["--strict"]);
    assert!(
        text.contains("channels.telegram.botTokn (ignored): did you mean botToken?"),
        "{text}"
    );

    // A syntax error: one line and one column, where it is.
    std::fs::write(
        &path,
        "{\n  gateway: {\n    port: 19999\n    bind: 'loopback'\n  }\n}",
    )
    .unwrap();
    let (code, text) = validate(&[]);
    assert_eq!(code, Some(2), "{text}");
    let at = text.matches("line ").count();
    assert_eq!(at, 1, "one location: {text}");
    assert!(text.contains("line 4"), "{text}");
}

#[test]
fn config_validate_names_file_key_and_expectation_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferroclaw.json");
    std::fs::write(&path, "{ gateway: { port: 'eighty' } }").unwrap();
    let out = ferroclaw(dir.path())
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&path.display().to_string())
            && err.contains("gateway.port")
            && err.contains("expected u16"),
        "{err}"
    );

    std::fs::write(&path, "{ gateway: { port: 19999 }, typo: 1 }").unwrap();
    let out = ferroclaw(dir.path())
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown config key typo"));

    let out = ferroclaw(dir.path())
        .args(["config", "validate"])
        .env("FERROCLAW_GATEWAY__PORT", "x")
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("environment"));

    // What a gateway start would refuse, validate refuses too.
    std::fs::write(&path, "{ agents: { defaults: { model: 'nowhere/m1' } } }").unwrap();
    let out = ferroclaw(dir.path())
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("models.providers.nowhere is not configured"),
        "{err}"
    );

    std::fs::write(&path, "{ gateway: { port: 19999 } }").unwrap();
    let out = ferroclaw(dir.path())
        .args(["config", "validate", "--json"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report,
        json!({ "ok": true, "config": path.display().to_string(), "warnings": [] })
    );
}

#[tokio::test]
async fn sigterm_sends_shutdown_and_a_second_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, token) = spawn_gateway(dir.path());

    let out = ferroclaw(dir.path())
        .args(["gateway", "--port", "0"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already in use"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not a terminal: plain text, no colour codes.
    assert!(
        !out.stderr.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another state dir on the same port: the gateway already there is named.
    let other = tempfile::tempdir().unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let out = ferroclaw(other.path())
        .args(["gateway", "--port", port])
        .within(CHILD_LIMIT);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("a gateway is already running there"),
        "{said}"
    );
    assert!(!out.stderr.contains(&0x1b), "{said}");

    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.admin"],
            Some(&token),
        ))
        .await;
    assert_eq!(res["ok"], true, "generated token works: {res}");
    let logs = c.call("logs.tail", json!({})).await;
    let lines = logs["payload"]["lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.as_str().unwrap().contains("gateway listening")),
        "{logs}"
    );

    Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status_within(CHILD_LIMIT);
    let ev = c.event("shutdown").await;
    assert_eq!(ev["payload"]["reason"], "gateway stopping");
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1012, "service restart")
    );
    let status = child.wait_within(CHILD_LIMIT);
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn sigkill_during_50_runs_loses_no_acknowledged_message_and_every_session_answers_again() {
    const N: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, token) = spawn_gateway(dir.path());
    let scopes = ["operator.admin", "operator.read", "operator.write"];
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    assert_eq!(
        c.handshake(connect_params("cli", "cli", &scopes, Some(&token)))
            .await["ok"],
        true
    );
    // 50 slow runs (the main lane runs 4 at once; the rest wait for a slot).
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(
            c.send_req("chat.send", json!({"sessionKey": format!("dur-{i}"), "message": format!("@tokens 400\n@delay 10\nmessage {i}"), "idempotencyKey": format!("d{i}")}))
                .await,
        );
    }
    for id in &ids {
        let ack = c.res(id).await;
        assert_eq!(ack["payload"]["status"], "started", "{ack}");
    }
    Command::new("kill")
        .arg("-KILL")
        .arg(child.id().to_string())
        .status_within(CHILD_LIMIT);
    child.wait_within(CHILD_LIMIT);

    let (mut child, addr, _) = spawn_gateway(dir.path());
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    assert_eq!(
        c.handshake(connect_params("cli", "cli", &scopes, Some(&token)))
            .await["ok"],
        true
    );
    for i in 0..N {
        let h = c
            .call("chat.history", json!({"sessionKey": format!("dur-{i}")}))
            .await;
        let msgs = h["payload"]["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("{h}"))
            .clone();
        let first = msgs[0]["content"][0]["text"].as_str().unwrap();
        assert!(
            first.ends_with(&format!("message {i}")),
            "the acknowledged message is kept: {first}"
        );
        let last = msgs.last().unwrap();
        assert_eq!(
            last["role"], "assistant",
            "the cut run is marked, never left unanswered: {h}"
        );
        // ... and agent.wait says how it ended instead of timing out.
        let w = c
            .call(
                "agent.wait",
                json!({"runId": format!("d{i}"), "timeoutMs": 5000}),
            )
            .await;
        assert_eq!(w["payload"]["status"], "error", "{w}");
        assert!(
            w["payload"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("gateway stopped")),
            "{w}"
        );
    }
    for i in 0..N {
        c.send_req("chat.send", json!({"sessionKey": format!("dur-{i}"), "message": "still there?", "idempotencyKey": format!("again-{i}")})).await;
    }
    let mut answered = std::collections::HashSet::new();
    while answered.len() < N {
        let ev = c.event("chat").await;
        let p = &ev["payload"];
        if p["state"] == "final" && p["runId"].as_str().is_some_and(|r| r.starts_with("again-")) {
            assert_eq!(p["message"]["content"][0]["text"], "You said: still there?");
            answered.insert(p["runId"].as_str().unwrap().to_string());
        }
    }
    Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status_within(CHILD_LIMIT);
    assert!(child.wait_within(CHILD_LIMIT).success());
}

/// Log lines carry the spans they were written in, with the fixed field
/// vocabulary: a tool call refused inside a run names the run, its session
/// and agent; a request's lines name the connection and the method.
#[tokio::test]
async fn log_lines_carry_the_run_and_request_spans() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr, token) = spawn_gateway(dir.path());
    let mut c = crate::support::admin_at(&format!("ws://{addr}/"), &token).await;
    let ack = crate::support::chat_send(
        &mut c,
        "agent:main:spans",
        "@tool no_such_tool {}",
        "span-1",
    )
    .await;
    let run_id = ack["runId"].as_str().unwrap().to_string();
    let w = c
        .call("agent.wait", json!({"runId": run_id, "timeoutMs": 10000}))
        .await;
    assert_eq!(w["payload"]["status"], "ok", "{w}");
    let bad = c.call("no.such.method", json!({})).await;
    assert_eq!(bad["ok"], false, "{bad}");
    // A clean stop flushes the log writer (a SIGKILL may lose its last lines).
    Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status_within(CHILD_LIMIT);
    assert!(child.wait_within(CHILD_LIMIT).success());
    let log = std::fs::read_to_string(dir.path().join("logs/ferroclaw.log")).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let refused = lines
        .iter()
        .find(|l| l["fields"]["message"] == "tool call refused")
        .unwrap_or_else(|| panic!("no refused tool call in the log:\n{log}"));
    let run = refused["spans"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "run"))
        .unwrap_or_else(|| panic!("not in a run span: {refused}"));
    assert_eq!(run["run_id"], run_id.as_str(), "{refused}");
    assert_eq!(run["session_key"], "agent:main:spans", "{refused}");
    assert_eq!(run["agent_id"], "main", "{refused}");
    assert_eq!(run["model"], "offline/echo", "{refused}");
    let unknown = lines
        .iter()
        .find(|l| {
            l["spans"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["method"] == "no.such.method"))
        })
        .unwrap_or_else(|| panic!("no line of the unknown method's request:\n{log}"));
    let spans = unknown["spans"].as_array().unwrap();
    assert_eq!(spans[0]["name"], "conn", "{unknown}");
    assert!(spans[0]["conn_id"].is_string(), "{unknown}");
}

/// A child that outlives its deadline (OpenClaw's CLI once deadlocked at
/// exit under load, and the suite hung with no output) is killed by its
/// PID, and the test fails naming it, with what it printed.
#[test]
fn a_child_past_its_deadline_is_killed_and_the_test_fails_with_its_output() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo started; exec sleep 600"]);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::support::process::output_within(&mut cmd, std::time::Duration::from_millis(300))
    }))
    .expect_err("a hung child fails the test");
    let message = failed.downcast_ref::<String>().expect("a message");
    assert!(
        message.contains("killed") && message.contains("stdout: started"),
        "{message}"
    );
    let pid = message
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("the pid is named");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} was killed and reaped"
    );
}
