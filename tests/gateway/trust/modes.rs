//! Road 6: files readable by other users. The real binary on a state dir
//! that starts out world-readable: after start, `config.set`, a paired
//! device, `cron.add`, `exec.approvals.set`, and (a second state dir)
//! `ferroclaw import`, everything the gateway keeps there is private (the
//! state dir and its folders 0700, its files 0600) but the agent's own
//! workspace, skills and sandbox scratch folders.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::device::{now_ms, Device};
use crate::support::process::{ferroclaw, spawn_gateway};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{admin_at, Client};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Everything under `state` some other user could read or enter.
fn loose(state: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![state.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if dir == state && ["workspace", "skills", "sandboxes"].contains(&name.as_str()) {
                continue;
            }
            if meta.file_type().is_symlink() {
                continue;
            }
            if mode(&p) & 0o077 != 0 {
                out.push((p.clone(), mode(&p)));
            }
            if meta.is_dir() {
                todo.push(p);
            }
        }
    }
    out
}

fn check(state: &Path, after: &str) {
    assert_eq!(mode(state), 0o700, "the state dir after {after}");
    let bad = loose(state);
    assert!(
        bad.is_empty(),
        "after {after}: {:?}",
        bad.iter()
            .map(|(p, m)| format!("{} {m:o}", p.display()))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_state_dir_and_everything_secret_in_it_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    // No token in the config: the gateway makes one in the state dir.
    std::fs::write(
        state.join("ferroclaw.json"),
        "{ tools: { exec: { security: 'full', ask: 'off' } } }",
    )
    .unwrap();
    std::fs::set_permissions(
        state.join("ferroclaw.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let (_gw, addr, token) = spawn_gateway(&state);
    let url = format!("ws://{addr}/");
    assert_eq!(mode(&state.join("gateway.token")), 0o600);
    check(&state, "start");
    let mut c = admin_at(&url, &token).await;
    let hash = c.call("config.get", json!({})).await["payload"]["hash"].clone();
    let r = c
        .call(
            "config.set",
            json!({"key": "agents.defaults.thinkingDefault", "value": "low", "baseHash": hash}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        mode(&state.join("ferroclaw.json")),
        0o600,
        "kept private by the rewrite"
    );
    check(&state, "config.set");
    // A device pairs (silently, on loopback): its token is stored.
    let dev = Device::new(7);
    let mut d = Client::connect(&url).await;
    let nonce = d.nonce();
    let res = d
        .handshake(dev.connect_params(
            "cli",
            "cli",
            "operator",
            &["operator.read"],
            Some(&token),
            &nonce,
            now_ms(),
            false,
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    check(&state, "pairing");
    let job = json!({"name": "tea", "schedule": {"kind": "every", "everyMs": 3_600_000}, "sessionTarget": "isolated",
        "payload": {"kind": "agentTurn", "message": "tea?"}});
    let r = c.call("cron.add", job).await;
    assert_eq!(r["ok"], true, "{r}");
    check(&state, "cron.add");
    let got = c.call("exec.approvals.get", json!({})).await["payload"].clone();
    let file = json!({"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss"}});
    let r = c
        .call(
            "exec.approvals.set",
            json!({"file": file, "baseHash": got["hash"]}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(mode(&state.join("exec-approvals.json")), 0o600);
    let say = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "hello", "idempotencyKey": "m1"}),
        )
        .await;
    assert_eq!(say["ok"], true, "{say}");
    crate::support::chat_until_done(&mut c, "m1").await;
    check(&state, "approvals and a chat");

    // An import from OpenClaw into a new state dir.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openclaw-state");
    let from = dir.path().join("openclaw");
    copy(&fixture, &from);
    // As an OpenClaw install may leave them: readable by everyone.
    for f in [
        "agents/main/agent/auth-profiles.json",
        "exec-approvals.json",
    ] {
        std::fs::set_permissions(from.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let state2 = dir.path().join("state2");
    let out = ferroclaw(&state2)
        .args(["import", "--from"])
        .arg(&from)
        .within(CHILD_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        mode(&state2.join("agents/main/agent/auth-profiles.json")),
        0o600
    );
    check(&state2, "import");
}

fn copy(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let to = dest.join(p.file_name().unwrap());
        if p.is_dir() {
            copy(&p, &to);
        } else {
            std::fs::copy(&p, &to).unwrap();
        }
    }
}
