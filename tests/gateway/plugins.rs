//! Bundles made here in each format (a Claude command pack, an Agent
//! Plugins bundle with an MCP server, a Codex skill bundle, a Cursor
//! command pack), installed by `ferroclaw plugins` into a running gateway
//! and used in its next turns without a restart; a native OpenClaw plugin
//! refused; a bundle that runs commands kept off until the operator
//! accepts what `inspect` showed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::mcp::{node, servers_until, ROOT};
use super::system_events::tools;
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin, chat_send, chat_until_done, final_text, TestGateway, TOKEN};

pub(super) fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

pub(super) fn executable(root: &Path, rel: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(root, rel, text);
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `ferroclaw plugins <args>` against the running `gw`: (exit code, output).
pub(super) async fn plugins_cli(gw: &TestGateway, args: &[&str]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferroclaw"));
    cmd.arg("--state-dir")
        .arg(gw.state_dir())
        .arg("--config")
        .arg(gw.config_path())
        .args(["--url", &gw.ws_url(), "--token", TOKEN, "plugins"])
        .args(args);
    let out = tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT))
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The system prompt of a model request.
pub(super) fn system_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

pub(super) fn fake_config(fake: &FakeProvider, more: Value) -> Value {
    let mut v = json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k0" },
        }},
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
    });
    ferroclaw::config::merge_patch(&mut v, &more);
    v
}

fn bundles(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let claude = dir.join("review-pack");
    write(
        &claude,
        "commands/review-diff.md",
        "---\ndescription: Review the staged diff line by line\n---\nRead `git diff --staged` and comment.\n",
    );
    let codex = dir.join("codex-lint");
    write(
        &codex,
        ".codex-plugin/plugin.json",
        r#"{"name": "Codex Lint"}"#,
    );
    write(
        &codex,
        "skills/lint-helper/SKILL.md",
        "---\nname: lint-helper\ndescription: Run the linters the project uses\n---\nRun them.\n",
    );
    let cursor = dir.join("cursor-ship");
    write(
        &cursor,
        ".cursor-plugin/plugin.json",
        r#"{"name": "Cursor Ship"}"#,
    );
    write(
        &cursor,
        ".cursor/commands/ship-it.md",
        "---\ndescription: Ship the current branch\n---\nShip.\n",
    );
    write(&cursor, ".cursor/rules/style.mdc", "no tabs");
    // Agent Plugins: an MCP server that is a script inside the plugin,
    // given its data folder by placeholder.
    let agent = dir.join("notes-agent");
    write(
        &agent,
        "plugin.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "Notes Agent", "version": "1.2.0"}"#,
    );
    let fs = PathBuf::from(ROOT)
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    executable(
        &agent,
        "bin/serve.sh",
        &format!(
            "#!/bin/sh\nexec {} {} \"$1\"\n",
            node().display(),
            fs.display()
        ),
    );
    write(
        &agent,
        "mcp.json",
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {"notes": {"command": "./bin/serve.sh", "args": ["${PLUGIN_DATA}"]}}}"#,
    );
    (claude, codex, cursor, agent)
}

#[tokio::test]
async fn bundles_of_every_format_install_by_the_cli_and_apply_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (claude, codex, cursor, agent) = bundles(dir.path());
    let fake = FakeProvider::start().await;
    let gw = TestGateway::with_config(fake_config(&fake, json!({})));
    let mut c = admin(&gw).await;
    for (src, id) in [
        (&claude, "review-pack"),
        (&codex, "codex-lint"),
        (&cursor, "cursor-ship"),
    ] {
        let (code, out) = plugins_cli(&gw, &["install", src.to_str().unwrap()]).await;
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains(&format!("({id})")) && out.contains("Enabled: true"),
            "{out}"
        );
    }
    let (_, out) = plugins_cli(&gw, &["inspect", "cursor-ship"]).await;
    assert!(
        out.contains("Bundle format: cursor") && out.contains("not run: rules"),
        "{out}"
    );
    // The Agent Plugins bundle runs a server: installed, off, its command shown.
    let (code, out) = plugins_cli(&gw, &["install", agent.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Bundle format: agent (Agent Plugins)"),
        "{out}"
    );
    assert!(
        out.contains("mcp notes: runs ${PLUGIN_ROOT}/bin/serve.sh ${PLUGIN_DATA}"),
        "{out}"
    );
    assert!(out.contains("Installed disabled"), "{out}");
    let listed = c.call("plugins.list", json!({})).await;
    let plugins = listed["payload"]["plugins"].as_array().unwrap().clone();
    let state = |id: &str| {
        let p = plugins
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {plugins:?}"));
        (
            p["bundleFormat"].as_str().unwrap().to_string(),
            p["state"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(state("review-pack"), ("claude".into(), "enabled".into()));
    assert_eq!(state("notes-agent"), ("agent".into(), "disabled".into()));
    // Enabling without accepting is refused; with it, the server starts.
    let (code, out) = plugins_cli(&gw, &["enable", "notes-agent"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("runs commands"), "{out}");
    let (code, out) = plugins_cli(&gw, &["enable", "notes-agent", "--accept-capabilities"]).await;
    assert_eq!(code, 0, "{out}");
    servers_until(&mut c, |s| {
        s.iter()
            .any(|x| x["name"] == "notes" && x["state"] == "ready")
    })
    .await;
    // The next turn: every bundle's skills and the server's tools are offered.
    fake.push(Script::text(&["ok"]));
    chat_send(&mut c, "main", "what can you do?", "t1").await;
    assert_eq!(final_text(&chat_until_done(&mut c, "t1").await), "ok");
    let body = fake.requests.lock().unwrap().last().unwrap().0.clone();
    let system = system_of(&body);
    for skill in ["review-diff", "lint-helper", "ship-it"] {
        assert!(system.contains(skill), "{skill} not offered: {system}");
    }
    let offered = tools(&body);
    assert!(
        offered
            .iter()
            .any(|t| t == "notes__list_allowed_directories"),
        "{offered:?}"
    );
    // Disabled again: its server stops and its tools go, still no restart.
    let (code, out) = plugins_cli(&gw, &["disable", "notes-agent"]).await;
    assert_eq!(code, 0, "{out}");
    servers_until(&mut c, |s| !s.iter().any(|x| x["name"] == "notes")).await;
    let (code, out) = plugins_cli(&gw, &["uninstall", "review-pack"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(!gw.state_dir().join("extensions/review-pack").exists());
    fake.push(Script::text(&["ok"]));
    chat_send(&mut c, "main", "again", "t2").await;
    chat_until_done(&mut c, "t2").await;
    let body = fake.requests.lock().unwrap().last().unwrap().0.clone();
    assert!(!system_of(&body).contains("review-diff"));
    assert!(!tools(&body).iter().any(|t| t.starts_with("notes__")));
}

#[tokio::test]
async fn a_native_plugin_or_a_folder_that_is_no_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let native = dir.path().join("native");
    write(&native, "openclaw.plugin.json", r#"{"id": "native"}"#);
    write(&native, "index.ts", "export default {}");
    let empty = dir.path().join("empty");
    write(&empty, "README.md", "nothing here");
    let gw = TestGateway::start();
    let (code, out) = plugins_cli(&gw, &["install", native.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("native plugin") && out.contains("bundles only"),
        "{out}"
    );
    let (code, out) = plugins_cli(&gw, &["install", empty.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("is not a bundle"), "{out}");
    let (code, out) = plugins_cli(&gw, &["list"]).await;
    assert_eq!((code, out.trim()), (0, "No plugins installed."));
    let left: Vec<_> = std::fs::read_dir(gw.state_dir().join("extensions"))
        .unwrap()
        .collect();
    assert!(
        left.is_empty(),
        "a refused install leaves nothing: {left:?}"
    );
}
