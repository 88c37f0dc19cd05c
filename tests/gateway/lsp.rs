//! The LSP tools against a real language server: python-lsp-server (PyPI,
//! installed by `tests/lsp/setup.sh`) over stdio, started by the gateway on
//! the first call, for the agent's workspace: the diagnostics of a file
//! with an error, definition and references across a two-file project, a
//! path outside the workspace refused, and the same server brought by a
//! Claude bundle's `.lsp.json`.

use std::path::PathBuf;

use serde_json::json;

use super::mcp::{tool_results, ROOT};
use super::plugins::{fake_config, plugins_cli, write};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_send, chat_until_done, final_text, TestGateway};

fn pylsp() -> PathBuf {
    let p = PathBuf::from(ROOT).join("tests/lsp/.venv/bin/pylsp");
    assert!(
        p.exists(),
        "{} missing: run bash tests/lsp/setup.sh",
        p.display()
    );
    p
}

#[tokio::test]
async fn pylsp_answers_diagnostics_definition_and_references_in_the_workspace() {
    let fake = FakeProvider::start().await;
    let cfg = fake_config(
        &fake,
        json!({"tools": {"lsp": {"servers": {"py": {"command": pylsp()}}}}}),
    );
    let gw = TestGateway::with_config(cfg);
    let ws = gw.state_dir().join("workspace");
    write(&ws, "bad.py", "import os\n\nprint(undefined_name)\n");
    write(&ws, "lib.py", "def greet(name):\n    return 'hi ' + name\n");
    write(
        &ws,
        "app.py",
        "from lib import greet\n\nprint(greet('ann'))\n",
    );
    fake.push(Script::tool_call(
        "c1",
        "lsp_diagnostics_py",
        &json!({"path": "bad.py"}),
    ));
    fake.push(Script::tool_call(
        "c2",
        "lsp_definition_py",
        &json!({"path": "app.py", "line": 2, "character": 7}),
    ));
    fake.push(Script::tool_call(
        "c3",
        "lsp_references_py",
        &json!({"path": "lib.py", "line": 0, "character": 4}),
    ));
    fake.push(Script::tool_call(
        "c4",
        "lsp_hover_py",
        &json!({"path": "/etc/passwd", "line": 0, "character": 0}),
    ));
    fake.push(Script::text(&["done"]));
    let mut c = admin(&gw).await;
    chat_send(&mut c, "main", "check my code", "t1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "t1").await), "done");
    let first = fake.requests.lock().unwrap()[0].0.clone();
    let offered = super::system_events::tools(&first);
    for t in [
        "lsp_hover_py",
        "lsp_definition_py",
        "lsp_references_py",
        "lsp_diagnostics_py",
        "lsp_symbols_py",
        "lsp_rename_py",
    ] {
        assert!(
            offered.iter().any(|o| o == t),
            "{t} not offered: {offered:?}"
        );
    }
    let last = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let r = tool_results(&last);
    assert!(
        r[0].contains("bad.py:3:7 error [pyflakes] undefined name 'undefined_name'"),
        "{}",
        r[0]
    );
    assert!(
        r[0].contains("bad.py:1:1 warning [pyflakes] 'os' imported but unused"),
        "{}",
        r[0]
    );
    assert!(
        r[0].contains("not instructions"),
        "a server's answer is outside data: {}",
        r[0]
    );
    assert!(
        r[1].contains("definition:") && r[1].contains("\"uri\": \"lib.py\""),
        "{}",
        r[1]
    );
    assert!(
        r[2].contains("\"uri\": \"app.py\"") && r[2].contains("\"uri\": \"lib.py\""),
        "{}",
        r[2]
    );
    assert!(r[3].contains("outside the workspace"), "{}", r[3]);
    let status = c.call("status", json!({})).await;
    let lsp = &status["payload"]["lsp"][0];
    let health = c.call("health", json!({})).await;
    assert_eq!(health["payload"]["lsp"][0]["name"], "py", "{health}");
    assert_eq!(
        (lsp["name"].as_str(), lsp["running"].as_bool()),
        (Some("py"), Some(true)),
        "{lsp}"
    );
}

#[tokio::test]
async fn a_claude_bundles_language_server_is_offered_once_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("python-lsp");
    write(
        &pack,
        ".lsp.json",
        &json!({"python": {"command": pylsp(), "extensionToLanguage": {".py": "python"}}})
            .to_string(),
    );
    let fake = FakeProvider::start().await;
    let gw = TestGateway::with_config(fake_config(&fake, json!({})));
    // An absolute command outside the bundle: the bundle may not run it.
    let (code, out) = plugins_cli(&gw, &["install", pack.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("leaves the plugin folder"), "{out}");
    // A bare program name is found on PATH: a wrapper inside the bundle.
    let wrapper = dir.path().join("python-lsp-2");
    write(
        &wrapper,
        ".lsp.json",
        r#"{"python": {"command": "./bin/pylsp"}}"#,
    );
    super::plugins::executable(
        &wrapper,
        "bin/pylsp",
        &format!("#!/bin/sh\nexec {}\n", pylsp().display()),
    );
    let (code, out) = plugins_cli(
        &gw,
        &[
            "install",
            wrapper.to_str().unwrap(),
            "--accept-capabilities",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    write(&gw.state_dir().join("workspace"), "m.py", "x = y\n");
    fake.push(Script::tool_call(
        "c1",
        "lsp_diagnostics_python",
        &json!({"path": "m.py"}),
    ));
    fake.push(Script::text(&["done"]));
    let mut c = admin(&gw).await;
    chat_send(&mut c, "main", "diagnose", "t1").await;
    chat_until_done(&mut c, "t1").await;
    let last = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let r = tool_results(&last);
    assert!(
        r[0].contains("m.py:1:5 error [pyflakes] undefined name 'y'"),
        "{r:?}"
    );
}
