//! `ferroclaw security audit`: the configuration and the state dir read
//! cold (no gateway needed), each finding with a severity, what it means
//! and how to fix it. Exit code: 2 with a critical finding, 1 with a
//! warning, 0 otherwise. `ferroclaw doctor` reports the count.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ferroclaw_actors::channels::{keys, open_to_strangers};
use ferroclaw_actors::settings::{AuthMode, SandboxMode, Settings, ToolList};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warn,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    pub title: String,
    pub fix: String,
}

/// The tools a stranger's turn has on a shipped config (`tools.untrusted.allow`
/// of `config/default.json5`).
fn shipped_untrusted() -> Vec<String> {
    crate::config::parse_json5(crate::config::DEFAULT_JSON5, "defaults")
        .ok()
        .and_then(|d| d.pointer("/tools/untrusted/allow").cloned())
        .and_then(|a| serde_json::from_value(a).ok())
        .unwrap_or_default()
}

fn find(check: &'static str, severity: Severity, title: String, fix: &str) -> Finding {
    Finding {
        check,
        severity,
        title,
        fix: fix.to_string(),
    }
}

/// Every finding for `settings` (from `config`) and the state dir `state`.
pub fn audit(settings: &Settings, config: &Path, state: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    exposure(settings, &mut out);
    secrets(settings, &mut out);
    files(config, state, &mut out);
    strangers(settings, &mut out);
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

fn exposure(s: &Settings, out: &mut Vec<Finding>) {
    if s.gateway.auth.mode == AuthMode::None {
        browsers(s, out);
    }
    let bind = s.gateway.bind.as_str();
    let loopback = matches!(bind, "loopback" | "localhost" | "127.0.0.1" | "::1");
    if loopback {
        return;
    }
    if s.gateway.auth.mode == AuthMode::None {
        out.push(find("gateway.bind_no_auth", Severity::Critical, format!("the gateway listens on {bind} with gateway.auth.mode \"none\": anyone who reaches the port is an operator"), "set gateway.auth.mode \"token\" (or bind loopback)"));
    }
    let tls = s.gateway.tls.enabled == Some(true);
    if !tls {
        out.push(find("gateway.bind_no_tls", Severity::Warn, format!("the gateway listens on {bind} without TLS: the token and every message cross the network in clear"), "bind loopback and reach it over SSH or a tunnel, or put TLS in front (gateway.tls)"));
    }
}

/// With auth none only the request's `Host` and `Origin` keep a web page
/// or another machine out (`src/http/same_origin.rs`): what widens them.
fn browsers(s: &Settings, out: &mut Vec<Finding>) {
    if s.gateway
        .control_ui
        .allowed_origins
        .iter()
        .any(|o| o.trim() == "*")
    {
        out.push(find("gateway.none_any_origin", Severity::Critical, "gateway.auth.mode \"none\" with gateway.controlUi.allowedOrigins [\"*\"]: any web page open in a browser on this machine can drive the gateway's tools".into(), "list only the origins the Control UI is opened from, or set gateway.auth.mode \"token\""));
    }
    let hosts = ferroclaw::http::same_origin::foreign_hosts(s);
    if !hosts.is_empty() {
        out.push(find("gateway.none_foreign_host", Severity::Warn, format!("gateway.auth.mode \"none\" answers requests for {}: whoever reaches the gateway by that name (a proxy, a tunnel, another machine) is an operator", hosts.join(", ")), "set gateway.auth.mode \"token\" when the gateway is reached by any name but this machine's"));
    }
}

fn secrets(s: &Settings, out: &mut Vec<Finding>) {
    let auth = &s.gateway.auth;
    for (key, value) in [
        ("gateway.auth.token", &auth.token),
        ("gateway.auth.password", &auth.password),
    ] {
        if let Some(why) = value.as_deref().and_then(crate::config::weak_secret) {
            out.push(find(
                "secrets.weak_gateway_secret",
                Severity::Critical,
                format!("{key}: {why}"),
                "set at least 16 random characters (`openssl rand -hex 32`)",
            ));
        }
    }
    if s.hooks.enabled {
        match s.hooks.token.as_deref() {
            Some(t) if auth.token.as_deref() == Some(t) => out.push(find(
                "secrets.hooks_token_reused",
                Severity::Warn,
                "hooks.token is the gateway token: a webhook sender could connect as an operator"
                    .into(),
                "give hooks a token of its own",
            )),
            Some(t) if crate::config::weak_secret(t).is_some() => out.push(find(
                "secrets.weak_hooks_token",
                Severity::Warn,
                "hooks.token is short or a placeholder".into(),
                "set at least 16 random characters",
            )),
            _ => {}
        }
    }
}

fn mode(p: &Path) -> Option<u32> {
    std::fs::metadata(p)
        .ok()
        .map(|m| m.permissions().mode() & 0o777)
}

fn files(config: &Path, state: &Path, out: &mut Vec<Finding>) {
    if let Some(m) = mode(state) {
        if m & 0o077 != 0 {
            let sev = if m & 0o007 != 0 {
                Severity::Critical
            } else {
                Severity::Warn
            };
            out.push(find("fs.state_dir_mode", sev, format!("{} is {m:o}: transcripts, device tokens and the gateway token are readable by other users", state.display()), "chmod 700 the state dir (the gateway does it at start)"));
        }
    }
    let mut secret_files = vec![
        config.to_path_buf(),
        state.join("gateway.token"),
        state.join("exec-approvals.json"),
    ];
    for dir in ["credentials", "agents"] {
        for e in walkdir::WalkDir::new(state.join(dir)).into_iter().flatten() {
            if e.file_type().is_file() {
                secret_files.push(e.into_path());
            }
        }
    }
    for f in secret_files {
        let Some(m) = mode(&f) else { continue };
        if m & 0o077 != 0 {
            let sev = if m & 0o004 != 0 {
                Severity::Critical
            } else {
                Severity::Warn
            };
            out.push(find(
                "fs.secret_file_mode",
                sev,
                format!(
                    "{} is {m:o}: it holds secrets other users can read",
                    f.display()
                ),
                "chmod 600 it",
            ));
        }
    }
}

/// Whether strangers can reach the agent: a channel open to everyone
/// (`dmPolicy`/`groupPolicy` "open", `"*"` in `allowFrom`; Slack's
/// channels are open by default), or webhooks.
fn open_doors(s: &Settings) -> Vec<String> {
    let mut doors = Vec::new();
    for (id, section) in &s.channels {
        let defaults = s.channels.defaults.layer(id);
        let accounts = keys::accounts(id, &section.other, &defaults, true).unwrap_or_default();
        if accounts.iter().any(|a| open_to_strangers(id, a)) {
            doors.push(format!("channels.{id}"));
        }
    }
    if s.hooks.enabled {
        doors.push("hooks".into());
    }
    doors
}

fn strangers(s: &Settings, out: &mut Vec<Finding>) {
    let doors = open_doors(s);
    if doors.is_empty() {
        return;
    }
    let doors = doors.join(", ");
    let host_full =
        s.tools.exec.security == "full" && s.tools.exec.host.as_deref() != Some("sandbox");
    if host_full {
        out.push(find("trust.open_with_full_exec", Severity::Warn, format!("strangers can reach the agent ({doors}) and exec runs anything on the host: their turns never exec on the host, but one mistaken allowFrom entry makes a stranger an operator"), "keep tools.exec.security \"allowlist\" with ask \"on-miss\", or close the open policies"));
    }
    if s.agents.defaults.sandbox.mode == SandboxMode::Off {
        out.push(find("trust.no_sandbox", Severity::Info, format!("strangers can reach the agent ({doors}) and there is no sandbox: their commands are refused, not sandboxed"), "agents.defaults.sandbox.mode \"all\" (bubblewrap) lets their commands run sandboxed"));
    }
    if s.session.dm_scope == ferroclaw_actors::settings::DmScope::Main {
        out.push(find("trust.shared_main_session", Severity::Warn, format!("strangers' direct messages ({doors}) land in your main session (session.dmScope \"main\"): they see its history in the model's context"), "session.dmScope \"per-channel-peer\" gives each sender a session of their own"));
    }
    let shipped = shipped_untrusted();
    for (layer, list) in widened(s) {
        let risky: Vec<&String> = list.iter().filter(|t| !shipped.contains(t)).collect();
        if !risky.is_empty() {
            let names: Vec<&str> = risky.iter().map(|t| t.as_str()).collect();
            out.push(find(
                "trust.untrusted_widened",
                Severity::Warn,
                format!("{layer} gives strangers' turns {}", names.join(", ")),
                "keep the shipped tools.untrusted profile unless a stranger must have these",
            ));
        }
    }
}

/// Every `untrusted.allow` list: the profile itself and its widenings.
fn widened(s: &Settings) -> Vec<(String, Vec<String>)> {
    let list = |l: Option<&ToolList>| -> Vec<String> {
        l.and_then(|u| u.allow.clone()).unwrap_or_default()
    };
    let mut out = vec![(
        "tools.untrusted.allow".to_string(),
        list(s.tools.untrusted.as_ref()),
    )];
    for (id, c) in &s.channels {
        let l = list(c.tools.as_ref().and_then(|t| t.untrusted.as_ref()));
        out.push((format!("channels.{id}.tools.untrusted.allow"), l));
    }
    for a in &s.agents.list {
        let l = list(a.tools.as_ref().and_then(|t| t.untrusted.as_ref()));
        out.push((format!("agents.list.{}.tools.untrusted.allow", a.id), l));
    }
    out
}

/// The findings as `{summary, findings}` (OpenClaw's report shape).
/// `ferroclaw security audit`: the findings of a loaded config (a config
/// the gateway refuses is itself critical), printed, then their exit code.
pub fn print(
    loaded: Result<ferroclaw::config::LoadedConfig, ferroclaw::config::ConfigError>,
    state: &Path,
    json: bool,
) -> std::process::ExitCode {
    let findings = match loaded {
        Ok(c) => audit(&c.settings, &c.sources.path, state),
        // A config the gateway refuses (a placeholder secret among them).
        Err(e) => vec![Finding {
            check: "config.invalid",
            severity: Severity::Critical,
            title: e.to_string(),
            fix: "fix the config: the gateway does not start with it".into(),
        }],
    };
    if json {
        println!("{}", report(&findings));
    } else if findings.is_empty() {
        println!("no findings");
    } else {
        for f in &findings {
            println!(
                "{:<8} {}: {}\n         fix: {}",
                f.severity.as_str().to_uppercase(),
                f.check,
                f.title,
                f.fix
            );
        }
    }
    std::process::ExitCode::from(exit_code(&findings))
}

pub fn report(findings: &[Finding]) -> Value {
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    json!({
        "summary": { "critical": count(Severity::Critical), "warn": count(Severity::Warn), "info": count(Severity::Info) },
        "findings": findings.iter().map(|f| json!({
            "checkId": f.check, "severity": f.severity.as_str(), "title": f.title, "remediation": f.fix,
        })).collect::<Vec<_>>(),
    })
}

/// The exit code a report earns: 2 critical, 1 warnings, 0 otherwise.
pub fn exit_code(findings: &[Finding]) -> u8 {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Critical) => 2,
        Some(Severity::Warn) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(patch: Value) -> Settings {
        let mut v = crate::config::parse_json5(crate::config::DEFAULT_JSON5, "defaults").unwrap();
        crate::config::merge_patch(&mut v, &patch);
        crate::config::typed(&v, "test").unwrap().0
    }

    fn checks(s: &Settings, state: &Path) -> Vec<&'static str> {
        audit(s, &state.join("ferroclaw.json"), state)
            .iter()
            .map(|f| f.check)
            .collect()
    }

    #[test]
    fn a_shipped_config_on_a_private_state_dir_has_nothing_to_report() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let s = settings(json!({}));
        assert_eq!(checks(&s, d.path()), Vec::<&str>::new());
        assert_eq!(exit_code(&audit(&s, &d.path().join("x"), d.path())), 0);
    }

    #[test]
    fn each_risk_is_reported_with_its_severity() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(d.path().join("ferroclaw.json"), "{}").unwrap();
        std::fs::set_permissions(
            d.path().join("ferroclaw.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let s = settings(json!({
            "gateway": { "bind": "lan", "auth": { "token": "hunter2" } },
            "tools": { "exec": { "security": "full", "ask": "off" }, "untrusted": { "allow": ["read", "write", "sessions_send"] } },
            "channels": { "telegram": { "dmPolicy": "open", "allowFrom": ["*"] } },
            "hooks": { "enabled": true, "token": "hunter2" },
        }));
        let found = audit(&s, &d.path().join("ferroclaw.json"), d.path());
        let ids: Vec<&str> = found.iter().map(|f| f.check).collect();
        for want in [
            "gateway.bind_no_tls",
            "secrets.weak_gateway_secret",
            "secrets.hooks_token_reused",
            "fs.state_dir_mode",
            "fs.secret_file_mode",
            "trust.open_with_full_exec",
            "trust.no_sandbox",
            "trust.shared_main_session",
            "trust.untrusted_widened",
        ] {
            assert!(ids.contains(&want), "{want}: {ids:?}");
        }
        let widened = found
            .iter()
            .find(|f| f.check == "trust.untrusted_widened")
            .unwrap();
        assert!(
            widened.title.contains("write, sessions_send") && !widened.title.contains("read"),
            "{}",
            widened.title
        );
        assert_eq!(exit_code(&found), 2);
        assert_eq!(
            report(&found)["summary"]["critical"],
            3,
            "{}",
            report(&found)
        );
    }

    #[test]
    fn auth_none_is_reported_when_a_foreign_host_or_every_origin_is_let_in() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let none = |origins: Value| {
            settings(
                json!({ "gateway": { "auth": { "mode": "none" }, "controlUi": { "allowedOrigins": origins } } }),
            )
        };
        assert_eq!(checks(&none(json!([])), d.path()), Vec::<&str>::new());
        assert_eq!(
            checks(&none(json!(["http://localhost:18789"])), d.path()),
            Vec::<&str>::new()
        );
        assert_eq!(
            checks(&none(json!(["*"])), d.path()),
            vec!["gateway.none_any_origin"]
        );
        let found = audit(
            &none(json!(["https://gw.tailnet.ts.net"])),
            &d.path().join("x"),
            d.path(),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].check, "gateway.none_foreign_host");
        assert!(
            found[0].title.contains("gw.tailnet.ts.net"),
            "{}",
            found[0].title
        );
        let token = settings(json!({ "gateway": { "controlUi": { "allowedOrigins": ["*"] } } }));
        assert_eq!(
            checks(&token, d.path()),
            Vec::<&str>::new(),
            "the token is the check"
        );
    }
}
