//! More real MCP servers no one here wrote, in real turns and from the
//! CLI: `@modelcontextprotocol/server-filesystem` (npm) on a folder of the
//! test's, `mcp-server-time` (PyPI, Python), and `ferroclaw mcp
//! list|show|tools|probe` against them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::mcp::{node, servers_until, tool_results, ROOT};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, chat_send, chat_until_done, final_text, TestGateway};

fn filesystem(dir: &Path) -> Value {
    let js = PathBuf::from(ROOT)
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        js.exists(),
        "{} missing: run bash tests/mcp/setup.sh",
        js.display()
    );
    json!({"command": node(), "args": [js, dir]})
}

fn time_server() -> Value {
    let bin = PathBuf::from(ROOT).join("tests/mcp/.venv/bin/mcp-server-time");
    assert!(
        bin.exists(),
        "{} missing: run bash tests/mcp/setup.sh",
        bin.display()
    );
    json!({"command": bin, "args": ["--local-timezone", "UTC"]})
}

#[tokio::test]
async fn the_filesystem_and_time_reference_servers_serve_real_turns() {
    let shared = tempfile::tempdir().unwrap();
    std::fs::write(shared.path().join("notes.txt"), "the launch code is 0000\n").unwrap();
    let fake = FakeProvider::start().await;
    let notes = shared.path().canonicalize().unwrap().join("notes.txt");
    fake.push(Script::tool_call(
        "c1",
        "files__read_text_file",
        &json!({"path": notes}),
    ));
    fake.push(Script::tool_call(
        "c2",
        "time__convert_time",
        &json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ));
    fake.push(Script::tool_call(
        "c3",
        "files__read_text_file",
        &json!({"path": "/etc/passwd"}),
    ));
    fake.push(Script::text(&["done"]));
    let gw = TestGateway::with_config(json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k0" },
        }},
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        "mcp": { "servers": { "files": filesystem(shared.path()), "time": time_server() } },
    }));
    let mut c = admin(&gw).await;
    let servers = servers_until(&mut c, |s| {
        s.len() == 2 && s.iter().all(|x| x["state"] == "ready")
    })
    .await;
    // The npm server speaks 2025-11-25; the Python SDK under the time
    // server already speaks 2026-07-28 (discover, no initialize).
    let by = |n: &str| servers.iter().find(|s| s["name"] == n).unwrap()["protocol"].clone();
    assert_eq!(by("files"), "2025-11-25", "{servers:?}");
    assert_eq!(by("time"), "2026-07-28", "{servers:?}");
    chat_send(
        &mut c,
        "main",
        "read my notes, then the time in Tokyo",
        "t1",
    )
    .await;
    assert_eq!(final_text(&chat_until_done(&mut c, "t1").await), "done");
    let last = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let r = tool_results(&last);
    assert!(r[0].contains("the launch code is 0000"), "{r:?}");
    assert!(r[1].contains("21:00"), "noon UTC is 21:00 in Tokyo: {r:?}");
    // The filesystem server keeps to its folder: that is the server's
    // rule, and its refusal reaches the model as an error result.
    assert!(r[2].contains("denied") || r[2].contains("outside"), "{r:?}");
    assert!(!r[2].contains("root:x:0"), "{r:?}");
}

fn ferroclaw(state: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroclaw"))
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .within(CHILD_LIMIT);
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_mcp_cli_lists_shows_probes_and_says_which_server_failed() {
    let state = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let mut files = filesystem(shared.path());
    files["env"] = json!({"SECRET_TOKEN": "s3cr3t-value"});
    let cfg = json!({"mcp": {"servers": {
        "files": files,
        "time": time_server(),
        "broken": {"command": "/nonexistent/server"},
        "off": {"command": "x", "enabled": false},
    }}});
    std::fs::write(state.path().join("ferroclaw.json"), cfg.to_string()).unwrap();

    let (code, out) = ferroclaw(state.path(), &["mcp", "list", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let names: Vec<&str> = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["broken", "files", "off", "time"]);

    let (code, out) = ferroclaw(state.path(), &["mcp", "show", "files"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("SECRET_TOKEN") && !out.contains("s3cr3t-value"),
        "{out}"
    );

    let (code, out) = ferroclaw(state.path(), &["mcp", "tools", "time"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("time__get_current_time") && out.contains("time__convert_time"),
        "{out}"
    );

    let (code, out) = ferroclaw(state.path(), &["mcp", "probe", "files", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["servers"][0]["ok"], true, "{v}");
    assert!(
        v["servers"][0]["tools"].as_array().unwrap().len() >= 5,
        "{v}"
    );

    // Every enabled server: one failed, so the exit code says so.
    let (code, out) = ferroclaw(state.path(), &["mcp", "probe"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("broken: FAILED") && out.contains("files: ok") && out.contains("time: ok"),
        "{out}"
    );
    assert!(
        !out.contains("off:"),
        "disabled servers are not probed: {out}"
    );
    let (code, _) = ferroclaw(state.path(), &["mcp", "probe", "nosuch"]);
    assert_eq!(code, 2);
    // No server process is left behind by the probes.
    let ps = Command::new("ps").args(["-eo", "args"]).within(CHILD_LIMIT);
    let ps = String::from_utf8_lossy(&ps.stdout);
    assert!(
        !ps.lines()
            .any(|l| l.contains(shared.path().to_str().unwrap())),
        "a probed server still runs: {ps}"
    );
}
