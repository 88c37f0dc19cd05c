//! `gateway`: the owner's agent inspects and changes its gateway with the
//! `config.*` methods (the same checks, hash lock, validation, atomic
//! write and hot apply as the Control UI's) and restarts it. OpenClaw's
//! restart semantics: a change whose paths need a restart restarts the
//! gateway by itself, and the `note` comes back to the session after it
//! (`restart-sentinel.json` in the state dir, read once at the next start).
//! Never offered to a turn holding a stranger's message; refused here
//! too.

use std::sync::atomic::Ordering;

use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde_json::{json, Value};

use super::{answer, fail, refused, text, ToolError};
use crate::state::SharedState;
use crate::ws::methods::config::{self, Mode};
use crate::ws::methods::Payload;

const TOOL: &str = "gateway";

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    if msg.trust.untrusted {
        return refused("gateway: the gateway's config and restarts are the owner's");
    }
    let args = &msg.call.arguments;
    let Some(action) = text(args, "action") else {
        return fail("gateway: `action` is required (config.get, config.schema.lookup, config.patch, config.apply, restart, update.status)");
    };
    match action {
        "config.get" => answer(TOOL, config::get(state).await),
        "config.schema" | "config.schema.lookup" => schema_lookup(text(args, "path")),
        "config.patch" | "config.apply" => {
            let mode = if action == "config.patch" { Mode::Patch } else { Mode::Apply };
            let p = json!({ "raw": args.get("raw"), "baseHash": args.get("baseHash") });
            let caller = crate::ws::caller::Caller::agent_tool(&msg.agent_id);
            let r = config::set(state, &caller, &p, mode).await;
            let restart = match &r {
                Ok(Payload::Json(v)) => v["restartRequired"]
                    .as_array()
                    .is_some_and(|paths| !paths.is_empty()),
                _ => false,
            };
            let mut out = answer(TOOL, r);
            if restart && !out.is_error {
                let note = text(args, "note").unwrap_or("config changed");
                out.text = match request_restart(state, msg, note, delay(args)) {
                    Ok(()) => format!("{}\nThe change needs a restart: the gateway restarts now and tells this session when it is back.", out.text),
                    Err(why) => format!("{}\nThe change needs a restart, which {why}: restart it yourself.", out.text),
                };
            }
            out
        }
        "restart" => {
            let note = text(args, "note").unwrap_or("restart requested");
            match request_restart(state, msg, note, delay(args)) {
                Ok(()) => ToolOutcome::ok(json!({ "ok": true, "restarting": true, "note": note }).to_string()),
                Err(why) => fail(format!("gateway: restart is unsupported here: {why}")),
            }
        }
        // ferroclaw is updated by the package or binary it came from; it
        // does not check for updates itself.
        "update.status" => ToolOutcome::ok(
            json!({
                "version": crate::VERSION,
                "updateAvailable": null,
                "selfUpdate": "unsupported: ferroclaw updates through the package or binary it was installed from",
            })
            .to_string(),
        ),
        other => fail(format!(
            "gateway: unknown action {other:?} (config.get, config.schema.lookup, config.patch, config.apply, restart, update.status)"
        )),
    }
}

fn delay(args: &Value) -> u64 {
    args.get("restartDelayMs")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(60_000)
}

/// The config schema at a dotted `path` and its children, as the gateway's
/// `config.schema.lookup` answers it (none: the top-level keys).
fn schema_lookup(path: Option<&str>) -> ToolOutcome {
    let Some(path) = path else {
        let top = ferroclaw_actors::settings::lookup::lookup(".").unwrap_or_default();
        let keys: Vec<&Value> = top["children"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| &c["key"])
            .collect();
        return ToolOutcome::ok(json!({ "keys": keys, "hint": "config.schema.lookup with path (e.g. tools.web.search) for one section" }).to_string());
    };
    match ferroclaw_actors::settings::lookup::lookup(path) {
        Some(found) => ToolOutcome::ok(found.to_string()),
        None => ToolOutcome::ok(
            json!({ "path": path, "schema": null, "note": "config schema path not found" })
                .to_string(),
        ),
    }
}

/// Records the note for the next start and asks the process to restart.
fn request_restart(
    state: &SharedState,
    msg: &ExecuteTool,
    note: &str,
    delay_ms: u64,
) -> Result<(), ToolError> {
    if !state.restart.supported.load(Ordering::Acquire) {
        return Err(ToolError::Unsupported(
            "this gateway runs embedded in another program, which decides when it restarts".into(),
        ));
    }
    let call = format!(
        "{}:{}",
        msg.run_id.as_ref().map(|r| r.as_str()).unwrap_or("-"),
        msg.call.id
    );
    if state
        .restart
        .done_by
        .lock()
        .is_ok_and(|d| d.as_deref() == Some(call.as_str()))
    {
        // This very call restarted the process already (its run came back).
        return Ok(());
    }
    let sentinel = json!({
        "note": note,
        "sessionKey": msg.session_key.as_str(),
        "call": call,
        "requestedAtMs": ferroclaw_actors::now_ms(),
    });
    crate::runtime::write_restart_sentinel(&state.state_dir, &sentinel)
        .map_err(|e| ToolError::Unsupported(format!("cannot record the restart: {e}")))?;
    tracing::info!(session_key = %msg.session_key, note, "restart requested by the gateway tool");
    let restart = state.restart.clone();
    actix::spawn(async move {
        if delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        }
        restart.notify.notify_one();
    });
    Ok(())
}
