//! `doctor`: config, state dir, the gateway, the model (a real one-line
//! exchange with the default model on a `doctor` session), channels. One
//! verdict per check (ok, warn, fail); exit 1 when any fails.

use std::time::Duration;

use serde_json::{json, Value};

use super::{audit, disk, print_json, Connection, Failure, Target};

/// One `doctor` check.
struct Check {
    name: &'static str,
    verdict: &'static str,
    detail: String,
}

impl Check {
    fn new(name: &'static str, verdict: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            verdict,
            detail: detail.into(),
        }
    }
}

pub async fn doctor(
    t: &Target,
    config: Result<String, ferroclaw::config::ConfigError>,
    state_dir: &std::path::Path,
    channels: Vec<String>,
    control_ui: Option<(String, Option<String>)>,
    audit: Option<Vec<audit::Finding>>,
) -> Result<(), Failure> {
    let mut checks = vec![control_ui_check(control_ui)];
    checks.extend(audit.map(|findings| security_check(&findings)));
    checks.push(match config {
        Ok(what) => Check::new("config", "ok", what),
        Err(e) => Check::new("config", "fail", e.to_string()),
    });
    let (verdict, detail) = disk::check(state_dir);
    checks.push(Check::new("disk", verdict, detail));
    checks.push(state_dir_check(state_dir));
    checks.extend(gateway_checks(t).await);
    checks.push(Check::new(
        "channels",
        "ok",
        if channels.is_empty() {
            "none configured (WebSocket and web chat only)".into()
        } else {
            format!("configured: {}", channels.join(", "))
        },
    ));
    report(t, &checks)
}

/// `security audit`'s findings of warn or worse, counted.
fn security_check(findings: &[audit::Finding]) -> Check {
    let serious = findings
        .iter()
        .filter(|f| f.severity >= audit::Severity::Warn)
        .count();
    match serious {
        0 => Check::new(
            "security",
            "ok",
            "nothing to report (`ferroclaw security audit` for details)",
        ),
        n => Check::new(
            "security",
            "warn",
            format!("{n} finding(s): run `ferroclaw security audit`"),
        ),
    }
}

/// Whether the state dir takes a file.
fn state_dir_check(state_dir: &std::path::Path) -> Check {
    let probe = state_dir.join(format!(".doctor-{}", ulid::Ulid::generate()));
    let writable = ferroclaw_actors::fsutil::private_dir(state_dir)
        .and_then(|_| std::fs::write(&probe, b"ok"))
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    if writable {
        Check::new(
            "state dir",
            "ok",
            format!("{} is writable", state_dir.display()),
        )
    } else {
        Check::new(
            "state dir",
            "fail",
            format!("{} is not writable", state_dir.display()),
        )
    }
}

/// The gateway's health, then a real exchange with the default model.
async fn gateway_checks(t: &Target) -> Vec<Check> {
    let mut c = match Connection::open(t).await {
        Ok(c) => c,
        Err(f) => {
            return vec![
                Check::new("gateway", "fail", f.message),
                Check::new("model", "warn", "not checked: the gateway is not reachable"),
            ]
        }
    };
    let gateway = match c.call("health", json!({})).await {
        Ok(h) if h.get("ok").and_then(Value::as_bool) == Some(true) => {
            Check::new("gateway", "ok", format!("{} answers and is healthy", t.url))
        }
        Ok(_) => Check::new("gateway", "warn", "reachable but reports unhealthy"),
        Err(f) => Check::new("gateway", "fail", f.message),
    };
    let outcome = exchange(&mut c).await;
    let status = c.call("status", json!({})).await.ok();
    let extensions = status.as_ref().map(extension_checks).unwrap_or_default();
    let model = status
        .and_then(|s| {
            s.pointer("/defaults/model")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "the default model".into());
    let model = match outcome {
        Ok(()) => Check::new("model", "ok", format!("{model} answered")),
        Err(e) => Check::new("model", "fail", format!("{model}: {}", e.message)),
    };
    let _ = c.call("sessions.delete", json!({ "key": "doctor" })).await;
    let mut checks = vec![gateway, model];
    checks.extend(extensions);
    checks
}

/// Plugins, command hooks and language servers from `status`: what is
/// installed and on, and what failed last (a hook's error, a server that
/// would not start).
fn extension_checks(status: &Value) -> Vec<Check> {
    let list = |k: &str| status[k].as_array().cloned().unwrap_or_default();
    vec![
        plugins_check(&list("plugins")),
        hooks_check(&list("hooks")),
        lsp_check(&list("lsp")),
        delivery_check(&status["durable"]),
    ]
}

/// Replies whose fate is not known (a send that got no answer before a
/// stop, a run a stop cut off), from `status`'s `durable` (the same records
/// `durable.uncertainty.list` lists).
fn delivery_check(durable: &Value) -> Check {
    let uncertain = durable["uncertain"].as_array().cloned().unwrap_or_default();
    let open = durable["unresolvedUncertaintyFacts"].as_u64().unwrap_or(0);
    let owed = durable["pendingWakes"].as_u64().unwrap_or(0);
    if let Some(e) = durable["error"].as_str() {
        return Check::new("delivery", "warn", format!("cannot read the outbox: {e}"));
    }
    if open == 0 {
        return Check::new(
            "delivery",
            "ok",
            format!("nothing uncertain; {owed} replies on their way"),
        );
    }
    let items: Vec<String> = uncertain
        .iter()
        .map(|f| {
            let what = match f["kind"].as_str() {
                Some("delivery_unknown") => "a reply chunk sent with no answer, not sent again",
                _ => "a run cut off by a stop (its tools may have run)",
            };
            format!("{what}: {}", f["sourceRef"].as_str().unwrap_or(""))
        })
        .collect();
    Check::new(
        "delivery",
        "warn",
        format!(
            "{open} uncertain (durable.uncertainty.list): {}",
            items.join("; ")
        ),
    )
}

fn plugins_check(plugins: &[Value]) -> Check {
    let on = plugins.iter().filter(|p| p["enabled"] == true).count();
    let broken: Vec<String> = plugins
        .iter()
        .filter(|p| p["state"] == "error")
        .map(|p| {
            format!(
                "{}: {}",
                p["id"].as_str().unwrap_or(""),
                p["error"].as_str().unwrap_or("")
            )
        })
        .collect();
    match broken.is_empty() {
        true => Check::new(
            "plugins",
            "ok",
            format!("{} installed, {on} enabled", plugins.len()),
        ),
        false => Check::new("plugins", "warn", broken.join("; ")),
    }
}

fn hooks_check(hooks: &[Value]) -> Check {
    let failing: Vec<String> = hooks
        .iter()
        .filter_map(|h| {
            Some(format!(
                "{} ({}): {}",
                h["id"].as_str()?,
                h["point"].as_str()?,
                h["lastError"].as_str()?
            ))
        })
        .collect();
    let blocked = hooks.iter().filter(|h| h["blocked"].is_string()).count();
    match failing.is_empty() {
        true => Check::new(
            "hooks",
            "ok",
            format!(
                "{} command hooks ({blocked} kept out by their plugin's policy)",
                hooks.len() - blocked
            ),
        ),
        false => Check::new(
            "hooks",
            "warn",
            format!("last errors: {}", failing.join("; ")),
        ),
    }
}

fn lsp_check(lsp: &[Value]) -> Check {
    let down: Vec<String> = lsp
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{}: {}",
                s["name"].as_str()?,
                s["lastError"].as_str()?
            ))
        })
        .collect();
    match down.is_empty() {
        true => Check::new(
            "lsp",
            "ok",
            format!("{} language servers configured", lsp.len()),
        ),
        false => Check::new("lsp", "warn", down.join("; ")),
    }
}

/// One message to the `doctor` session and its run's end (60 s at most);
/// the failure says what went wrong.
async fn exchange(c: &mut Connection) -> Result<(), Failure> {
    let run_id = ulid::Ulid::generate().to_string();
    c.call("chat.send", json!({ "sessionKey": "doctor", "message": "Reply with the word ok.", "idempotencyKey": run_id }))
        .await?;
    loop {
        let ev = match tokio::time::timeout(Duration::from_secs(60), c.event()).await {
            Err(_) => return Err(Failure::new(1, "no answer within 60 s")),
            Ok(Err(f)) => return Err(f),
            Ok(Ok(ev)) => ev,
        };
        let p = &ev["payload"];
        if ev["event"] != "chat" || p["runId"] != run_id.as_str() {
            continue;
        }
        match p["state"].as_str() {
            Some("final") => return Ok(()),
            Some("error") => {
                return Err(Failure::new(
                    1,
                    p["errorMessage"].as_str().unwrap_or("failed"),
                ))
            }
            Some("aborted") => return Err(Failure::new(1, "aborted")),
            _ => {}
        }
    }
}

/// The verdicts printed (a table, or JSON); a failure is exit 1.
fn report(t: &Target, checks: &[Check]) -> Result<(), Failure> {
    let failed = checks.iter().any(|c| c.verdict == "fail");
    if t.json {
        let rows: Vec<Value> = checks
            .iter()
            .map(|c| json!({ "check": c.name, "verdict": c.verdict, "detail": c.detail }))
            .collect();
        print_json(&json!({ "ok": !failed, "checks": rows }));
    } else {
        for c in checks {
            println!(
                "{:<5} {:<10} {}",
                c.verdict.to_uppercase(),
                c.name,
                c.detail
            );
        }
    }
    if failed {
        Err(Failure::new(
            1,
            "doctor found problems (see the FAIL lines above)",
        ))
    } else {
        Ok(())
    }
}

/// `gateway.controlUi.root`: served from where, or how to serve it.
fn control_ui_check(control_ui: Option<(String, Option<String>)>) -> Check {
    match control_ui {
        None => Check {
            name: "control ui",
            verdict: "ok",
            detail: "OpenClaw's Control UI is not served; to serve it, install openclaw (npm install -g openclaw) and set gateway.controlUi.root (or start with --control-ui) to its dist/control-ui folder, e.g. $(npm root -g)/openclaw/dist/control-ui".into(),
        },
        Some((root, base)) => {
            match ferroclaw::http::ui_root::ControlUiRoot::load(&root, base.as_deref()) {
                Ok(_) => Check {
                    name: "control ui",
                    verdict: "ok",
                    detail: format!("served from {root}"),
                },
                Err(e) => Check {
                    name: "control ui",
                    verdict: "fail",
                    detail: e.to_string(),
                },
            }
        }
    }
}
