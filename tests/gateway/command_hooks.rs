//! Lifecycle hooks as commands, in real turns: a Claude bundle's
//! `hooks/hooks.json` (the `{description, hooks}` form) installed by the
//! CLI runs unchanged (a Python `PreToolUse` hook blocks `exec` of `rm`
//! and the run goes on with the refusal; a shell `UserPromptSubmit` hook
//! adds context the provider request carries); the operator's
//! `hooks.commands` (a hanging hook cut at its budget, one printing
//! garbage logged, a failing `before_tool_call` hook failing closed); a
//! `message_sending` hook rewriting replies on the fake Telegram; a
//! stranger's turn that runs no hook its plugin may not see and gets no
//! LSP tool.

use std::time::Duration;

use serde_json::{json, Value};

use super::mcp::tool_results;
use super::plugins::{executable, fake_config, plugins_cli, system_of, write};
use super::telegram::{telegram_config, LONG};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, chat_send, chat_until_done, final_text, TestGateway};

const GUARD: &str = r#"import json, sys
event = json.load(sys.stdin)
command = event.get("tool_input", {}).get("command", "")
if event["hook_event_name"] == "PreToolUse" and "rm" in command.split():
    print("rm is not allowed here", file=sys.stderr)
    sys.exit(2)
"#;

fn exec_anywhere() -> Value {
    json!({"tools": {"exec": {"host": "gateway", "security": "full", "ask": "off"}}})
}

#[tokio::test]
async fn a_claude_bundles_hooks_run_unchanged_at_the_matching_points() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("guard-pack");
    write(
        &pack,
        ".claude-plugin/plugin.json",
        r#"{"name": "guard-pack", "version": "0.1.0"}"#,
    );
    write(&pack, "guard.py", GUARD);
    executable(
        &pack,
        "context.sh",
        "#!/bin/sh\ncat > \"$PLUGIN_DATA/prompt.json\"\necho 'The deploy freeze ends Friday.'\n",
    );
    write(
        &pack,
        "hooks/hooks.json",
        r#"{"description": "guards", "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/guard.py", "timeout": 20}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/context.sh"}]}]
        }}"#,
    );
    let fake = FakeProvider::start().await;
    let mut cfg = fake_config(&fake, exec_anywhere());
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"plugins": {"entries": {"guard-pack": {"hooks": {"allowConversationAccess": true}}}}}),
    );
    let gw = TestGateway::with_config(cfg);
    let (code, out) = plugins_cli(
        &gw,
        &["install", pack.to_str().unwrap(), "--accept-capabilities"],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("hook plugin:guard-pack:PreToolUse#0.0 (before_tool_call): runs python3 ${PLUGIN_ROOT}/guard.py"), "{out}");
    fake.push(Script::tool_call(
        "c1",
        "exec",
        &json!({"command": "rm -rf build"}),
    ));
    fake.push(Script::tool_call(
        "c2",
        "exec",
        &json!({"command": "echo still-here"}),
    ));
    fake.push(Script::text(&["done"]));
    let mut c = admin(&gw).await;
    chat_send(&mut c, "main", "clean the build", "t1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "t1").await), "done");
    let requests: Vec<Value> = fake
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.0.clone())
        .collect();
    let system = system_of(&requests[0]);
    assert!(
        system.contains("The deploy freeze ends Friday."),
        "{system}"
    );
    assert!(
        system.contains("not instructions from the operator"),
        "hook output is outside data: {system}"
    );
    let results = tool_results(&requests[2]);
    assert_eq!(
        results[0], "Tool call blocked by a hook: rm is not allowed here",
        "{results:?}"
    );
    assert!(
        results[1].contains("still-here"),
        "the run went on: {results:?}"
    );
    let seen: Value = serde_json::from_str(
        &std::fs::read_to_string(gw.state_dir().join("plugins/data/guard-pack/prompt.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(seen["hook_event_name"], "UserPromptSubmit");
    // The prepared prompt (its envelope too, as OpenClaw's).
    assert!(
        seen["prompt"]
            .as_str()
            .unwrap()
            .ends_with("clean the build"),
        "{seen}"
    );
    assert_eq!(seen["untrusted"], false);
}

#[tokio::test]
async fn a_hanging_hook_is_cut_a_garbage_one_logged_and_a_failing_gate_fails_closed() {
    let fake = FakeProvider::start().await;
    let mut cfg = fake_config(&fake, exec_anywhere());
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"hooks": {"commands": {"before_tool_call": [
            {"command": "sleep 30", "timeoutMs": 400, "onError": "continue", "priority": 3},
            {"command": "echo not-json", "onError": "continue", "priority": 2},
            {"command": "exit 1", "matcher": ["exec"], "priority": 1},
        ]}}}),
    );
    let gw = TestGateway::with_config(cfg);
    fake.push(Script::tool_call(
        "c1",
        "exec",
        &json!({"command": "echo ran"}),
    ));
    fake.push(Script::text(&["done"]));
    let mut c = admin(&gw).await;
    let started = std::time::Instant::now();
    chat_send(&mut c, "main", "run it", "t1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "t1").await), "done");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the hanging hook did not hold the turn"
    );
    let last = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let results = tool_results(&last);
    assert!(
        results[0].starts_with("Tool call blocked by a hook: hook config:before_tool_call#2 failed: exited with Some(1)"),
        "{results:?}"
    );
    let status = c.call("status", json!({})).await;
    let hooks = status["payload"]["hooks"].as_array().unwrap().clone();
    let by = |id: &str| {
        hooks
            .iter()
            .find(|h| h["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {hooks:?}"))
            .clone()
    };
    let hung = by("config:before_tool_call#0");
    assert_eq!(
        (hung["runs"].as_u64(), hung["failures"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        hung["lastError"]
            .as_str()
            .unwrap()
            .starts_with("timed out after 400ms"),
        "{hung}"
    );
    let garbage = by("config:before_tool_call#1");
    assert_eq!(
        garbage["lastError"],
        "printed something that is not a JSON object: not-json"
    );
    assert!(by("config:before_tool_call#2")["failClosed"] == true);
    // The block is in the audit ledger like a policy refusal (batched: waited for).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let page = c
            .call("audit.activity.list", json!({"kind": "control"}))
            .await;
        let events = page["payload"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let blocked =
            |e: &Value| e["action"] == "hook.blocked" && e["subject"] == "before_tool_call:exec";
        if events.iter().any(blocked) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no hook.blocked record: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // `doctor` names the failing hooks.
    fake.push(Script::text(&["pong"]));
    let mut doctor = std::process::Command::new(env!("CARGO_BIN_EXE_ferroclaw"));
    doctor
        .arg("--state-dir")
        .arg(gw.state_dir())
        .arg("--config")
        .arg(gw.config_path())
        .args([
            "--url",
            &gw.ws_url(),
            "--token",
            crate::support::TOKEN,
            "doctor",
        ]);
    let out = tokio::task::spawn_blocking(move || {
        use crate::support::process::Within;
        doctor.within(crate::support::process::CHILD_LIMIT)
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("printed something that is not a JSON object"),
        "{text}"
    );
}

/// A hook recording its stdin into `file`.
fn recorder(file: &std::path::Path) -> String {
    format!("cat > {}", file.display())
}

#[tokio::test]
async fn message_sending_rewrites_telegram_replies_and_a_stranger_reaches_no_forbidden_hook() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("watcher");
    let marker = dir.path().join("plugin-saw-a-prompt");
    write(
        &pack,
        ".claude-plugin/plugin.json",
        r#"{"name": "watcher"}"#,
    );
    write(
        &pack,
        "hooks/hooks.json",
        &json!({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": format!("touch {}", marker.display())}]}]}).to_string(),
    );
    let operator_saw = dir.path().join("operator-hook.json");
    let upper = "python3 -c 'import json,sys; e=json.load(sys.stdin); print(json.dumps({\"content\": e[\"event\"][\"content\"].upper()}))'";
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({"dmPolicy": "open", "allowFrom": ["*"]}));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({
            "hooks": {"commands": {
                "message_sending": [{"command": upper}],
                "before_prompt_build": [{"command": recorder(&operator_saw)}],
            }},
            "tools": {"lsp": {"servers": {"py": {"command": "pylsp"}}}},
        }),
    );
    let gw = TestGateway::with_config(cfg);
    let (code, out) = plugins_cli(
        &gw,
        &["install", pack.to_str().unwrap(), "--accept-capabilities"],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    // "*" makes nobody an operator: user 77 is a stranger.
    fake.dm(77, 1, "@tool lsp_diagnostics_py {\"path\": \"x.py\"}");
    // One chat's turns run in order: the second's reply closes the first.
    fake.dm(77, 2, "barrier 2");
    let both = fake.until(LONG, |f| f.sent_to(77).len() >= 2).await;
    assert!(both, "{:?}", fake.sent());
    let replies: Vec<String> = fake.sent_to(77).iter().map(|s| s.text.clone()).collect();
    assert!(
        replies[0].starts_with("TOOL LSP_DIAGNOSTICS_PY RETURNED: UNKNOWN TOOL"),
        "{replies:?}"
    );
    assert!(
        replies[1].contains("BARRIER 2"),
        "every reply rewritten: {replies:?}"
    );
    assert!(
        !marker.exists(),
        "the plugin may not see conversations: its hook never ran"
    );
    // The operator's own hook ran, and got the stranger's text as outside data.
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(&operator_saw).unwrap()).unwrap();
    assert_eq!(seen["ctx"]["untrusted"], true);
    let prompt = seen["event"]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("barrier 2") && prompt.contains("not instructions"),
        "{prompt}"
    );
}

#[tokio::test]
async fn every_lifecycle_point_runs_its_command_hook() {
    let dir = tempfile::tempdir().unwrap();
    // One file per event: hooks of different points run at once.
    let log = dir.path().join("events");
    std::fs::create_dir_all(&log).unwrap();
    let append = format!("cat > $(mktemp -p {} event.XXXXXX)", log.display());
    let observed = [
        "gateway_start",
        "session_start",
        "session_end",
        "model_call_started",
        "model_call_ended",
        "after_tool_call",
        "agent_end",
        "notification",
    ];
    let mut commands = serde_json::Map::new();
    for p in observed {
        commands.insert(p.into(), json!([{"command": append}]));
    }
    let claim = "python3 -c 'import json,sys; e=json.load(sys.stdin); print(json.dumps({\"handled\": True, \"reply\": {\"text\": \"Hook is working.\"}}) if \"hook-demo-check\" in e[\"event\"][\"prompt\"] else \"\")'";
    commands.insert("before_agent_reply".into(), json!([{"command": claim}]));
    commands.insert(
        "before_model_resolve".into(),
        json!([{"command": "echo '{\"modelOverride\": \"offline/echo\"}'"}]),
    );
    let fake = FakeProvider::start().await;
    let mut cfg = fake_config(&fake, json!({"hooks": {"commands": commands}}));
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"tools": {"exec": {"host": "gateway", "security": "allowlist", "ask": "always"}}}),
    );
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    // OpenClaw's own quick start: a reply without a model call.
    chat_send(&mut c, "main", "hook-demo-check", "t1").await;
    assert_eq!(
        final_text(&chat_until_done(&mut c, "t1").await),
        "Hook is working."
    );
    // Another message: the model a hook chose (not the configured fake/m1).
    chat_send(&mut c, "main", "@tool read {\"path\": \"AGENTS.md\"}", "t2").await;
    let text = final_text(&chat_until_done(&mut c, "t2").await);
    assert!(text.starts_with("Tool read returned:"), "{text}");
    assert_eq!(
        fake.request_count(),
        0,
        "no call reached the configured model"
    );
    let r = c.call("sessions.reset", json!({"key": "main"})).await;
    assert_eq!(r["ok"], true, "{r}");
    // An exec that asks the operator: `notification`.
    chat_send(
        &mut c,
        "other",
        "@tool exec {\"command\": \"echo hi\"}",
        "t3",
    )
    .await;
    let deadline = std::time::Instant::now() + LONG;
    let read_all = || -> Vec<Value> {
        let files = std::fs::read_dir(&log).unwrap().flatten();
        let texts = files.filter_map(|f| std::fs::read_to_string(f.path()).ok());
        texts
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect()
    };
    let missing = loop {
        let seen = read_all();
        let missing: Vec<&str> = observed
            .iter()
            .copied()
            .filter(|p| !seen.iter().any(|v| v["hook"] == *p))
            .collect();
        if missing.is_empty() || std::time::Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(missing.is_empty(), "never ran: {missing:?}");
    let text = serde_json::to_string(&read_all()).unwrap();
    assert!(text.contains("\"reason\":\"reset\""), "{text}");
    assert!(
        text.contains("ferroclaw needs your permission to run: echo hi"),
        "{text}"
    );
}
