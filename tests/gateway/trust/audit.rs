//! `ferroclaw security audit` on the real binary: a risky setup is
//! reported check by check with exit code 2, a shipped one on a private
//! state dir has nothing to report, a placeholder token is a critical
//! finding, and `doctor` points at the audit.

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use crate::support::process::ferroclaw;
use crate::support::process::{Within, CHILD_LIMIT};

fn audit(state: &std::path::Path) -> (Option<i32>, Value) {
    let out = ferroclaw(state)
        .args(["security", "audit", "--json"])
        .within(CHILD_LIMIT);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), report)
}

fn ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["checkId"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_audit_names_each_risk_and_exits_by_the_worst() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let risky = json!({
        "gateway": { "bind": "lan", "auth": { "token": "a-real-secret-0123456789" } },
        "tools": { "exec": { "security": "full", "ask": "off" },
                   "untrusted": { "allow": ["read", "exec", "write", "sessions_spawn"] } },
        "channels": { "telegram": { "enabled": false, "dmPolicy": "open", "allowFrom": ["*"] },
                      "discord": { "enabled": false, "tools": { "untrusted": { "allow": ["apply_patch"] } } } },
        "hooks": { "enabled": true, "token": "a-real-secret-0123456789" },
    });
    std::fs::write(state.join("ferroclaw.json"), risky.to_string()).unwrap();
    std::fs::set_permissions(
        state.join("ferroclaw.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let (code, report) = audit(state);
    assert_eq!(code, Some(2), "{report}");
    let found = ids(&report);
    for want in [
        "gateway.bind_no_tls",
        "secrets.hooks_token_reused",
        "fs.state_dir_mode",
        "fs.secret_file_mode",
        "trust.open_with_full_exec",
        "trust.no_sandbox",
        "trust.shared_main_session",
        "trust.untrusted_widened",
    ] {
        assert!(found.iter().any(|f| f == want), "{want}: {report}");
    }
    let text = report.to_string();
    assert!(
        text.contains("write, sessions_spawn") && text.contains("apply_patch"),
        "{text}"
    );
    assert!(
        !text.contains("a-real-secret"),
        "the report names no secret: {text}"
    );
    // What the audit says about a doctor: one line pointing at it.
    let doctor = ferroclaw(state)
        .args(["doctor", "--url", "ws://127.0.0.1:9/"])
        .within(CHILD_LIMIT);
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        out.contains("security") && out.contains("ferroclaw security audit"),
        "{out}"
    );
}

#[test]
fn a_shipped_setup_is_clean_and_a_placeholder_token_is_critical() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, report) = audit(state);
    assert_eq!(
        (
            code,
            report["summary"]["critical"].as_u64(),
            report["summary"]["warn"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{report}"
    );
    std::fs::write(
        state.join("ferroclaw.json"),
        "{ gateway: { auth: { token: 'undefined' } } }",
    )
    .unwrap();
    std::fs::set_permissions(
        state.join("ferroclaw.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let (code, report) = audit(state);
    assert_eq!(code, Some(2), "{report}");
    assert_eq!(ids(&report), ["config.invalid"]);
    assert!(
        report.to_string().contains("gateway.auth.token"),
        "{report}"
    );
}

#[test]
fn auth_none_that_lets_in_every_origin_or_a_foreign_host_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let write = |origins: Value| {
        let cfg = json!({ "gateway": { "auth": { "mode": "none" }, "controlUi": { "allowedOrigins": origins } } });
        std::fs::write(state.join("ferroclaw.json"), cfg.to_string()).unwrap();
        std::fs::set_permissions(
            state.join("ferroclaw.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    };
    write(json!(["http://127.0.0.1:18789"]));
    let (code, report) = audit(state);
    assert_eq!((code, ids(&report)), (Some(0), vec![]), "{report}");
    write(json!(["*", "https://gw.tailnet.ts.net"]));
    let (code, report) = audit(state);
    assert_eq!(code, Some(2), "{report}");
    let found = ids(&report);
    assert!(
        found.contains(&"gateway.none_any_origin".to_string())
            && found.contains(&"gateway.none_foreign_host".to_string()),
        "{report}"
    );
    assert!(report.to_string().contains("gw.tailnet.ts.net"), "{report}");
}
