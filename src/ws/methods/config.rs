//! config.get / config.set / config.apply / config.patch: redacted snapshot
//! with the file's hash; writes need the current `baseHash`, are validated
//! before they touch the file, written atomically and hot-applied.

use std::time::Duration;

use ferroclaw_actors::audit::{Activity, ControlActivity, End};
use ferroclaw_actors::gateway::SettingsChanged;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::config::{self as cfg, LoadedConfig};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;
use crate::ws::caller::Caller;

fn warnings(c: &LoadedConfig) -> Vec<Value> {
    c.warnings
        .iter()
        .map(|w| {
            let path = w
                .strip_prefix("unknown config key ")
                .and_then(|r| r.split(' ').next())
                .unwrap_or("");
            json!({ "path": path, "message": w })
        })
        .collect()
}

/// What the config file holds now fails, by the checks `config validate`
/// runs (parse, types, semantics, what a start would refuse): the running
/// gateway keeps the config it loaded, so a file edited since into
/// something it would refuse says so here.
fn issues(state: &SharedState, c: &LoadedConfig) -> Vec<Value> {
    let issue = |path: &str, message: String| json!({ "path": path, "message": message });
    if !c.exists {
        return Vec::new();
    }
    let file = c.sources.path.display().to_string();
    let raw = match std::fs::read_to_string(&c.sources.path) {
        Ok(raw) => raw,
        Err(e) => return vec![issue(".", format!("cannot read {file}: {e}"))],
    };
    if c.raw.as_deref() == Some(raw.as_str()) {
        return Vec::new();
    }
    let settings = match cfg::check_user_raw(&raw, &file) {
        Ok((_, settings, _)) => settings,
        Err(cfg::ConfigError::Invalid { path, message, .. }) => return vec![issue(&path, message)],
        Err(e) => return vec![issue(".", e.to_string())],
    };
    match ferroclaw_actors::plan::plan(&settings, &state.state_dir, state.gateway.env.clone()) {
        Ok(_) => Vec::new(),
        Err(e) => vec![issue(".", e.to_string())],
    }
}

fn snapshot(c: &LoadedConfig, issues: Vec<Value>) -> Value {
    let parsed = cfg::redact(&c.parsed);
    let raw = match &c.raw {
        None => Value::Null,
        // Keep the user's text (comments) unless it holds secrets.
        Some(r) if parsed == c.parsed => Value::String(r.clone()),
        Some(_) => Value::String(serde_json::to_string_pretty(&parsed).unwrap_or_default()),
    };
    json!({
        "path": c.sources.path.display().to_string(),
        "exists": c.exists,
        "raw": raw,
        "parsed": parsed,
        "valid": issues.is_empty(),
        "config": cfg::redact(&c.effective),
        "hash": c.hash,
        "issues": issues,
        "warnings": warnings(c),
        "legacyIssues": [],
    })
}

/// `config.schema`: the config file's JSON Schema, generated from the typed
/// settings (what ferroclaw reads; free-form sections stay open), its
/// references inlined (OpenClaw's Control UI reads no `$ref`).
pub fn schema(p: &Value) -> MethodResult {
    super::empty_params("config.schema", p)?;
    // OpenClaw's Control UI shows `sensitive` fields masked.
    let hints: serde_json::Map<String, Value> = ferroclaw_actors::secrets::paths()
        .into_iter()
        .map(|p| (p, json!({ "sensitive": true })))
        .collect();
    json(json!({
        "schema": ferroclaw_actors::settings::schema::inlined(),
        "uiHints": hints,
        "version": env!("CARGO_PKG_VERSION"),
        "generatedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LookupParams {
    path: String,
}

/// `config.schema.lookup`: one path's schema and its children
/// (`settings::lookup`).
pub fn schema_lookup(p: &Value) -> MethodResult {
    let p: LookupParams = super::params("config.schema.lookup", p)?;
    let ok_chars = p
        .path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./[]-*".contains(c));
    if p.path.is_empty() || p.path.len() > 1024 || !ok_chars {
        return Err(ErrorShape::invalid(
            "invalid config.schema.lookup params: at /path: must match pattern \"^[A-Za-z0-9_./\\[\\]\\-*]+$\"",
        ));
    }
    match ferroclaw_actors::settings::lookup::lookup(&p.path) {
        Some(found) => json(found),
        None => Err(ErrorShape::invalid("config schema path not found")),
    }
}

/// `config.get`; the file is read and checked on the blocking pool.
pub async fn get(state: &SharedState) -> MethodResult {
    let c = state.live.get();
    let (s, loaded) = (state.clone(), c.clone());
    let found = actix_web::rt::task::spawn_blocking(move || issues(&s, &loaded))
        .await
        .map_err(|_| ErrorShape::unavailable("cannot read the config file"))?;
    json(snapshot(&c, found))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Set,
    Apply,
    Patch,
}

impl Mode {
    fn method(self) -> &'static str {
        match self {
            Mode::Set => "config.set",
            Mode::Apply => "config.apply",
            Mode::Patch => "config.patch",
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetParams {
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    base_hash: Option<String>,
    #[serde(default, rename = "sessionKey")]
    _session_key: Option<String>,
    #[serde(default, rename = "note")]
    _note: Option<String>,
    #[serde(default, rename = "continuePrompt")]
    _continue_prompt: Option<Value>,
    #[serde(default, rename = "restartDelayMs")]
    _restart_delay_ms: Option<u64>,
}

const CONTROL_PLANE_MAX: u32 = 3;
const CONTROL_PLANE_WINDOW: Duration = Duration::from_secs(60);

pub async fn set(state: &SharedState, caller: &Caller, p: &Value, mode: Mode) -> MethodResult {
    let method = mode.method();
    let p: SetParams = params(method, p)?;
    if mode != Mode::Set {
        rate_limited(state, method)?;
    }
    let _guard = state.config_write.lock().await;
    let current = state.live.get();
    let path = current.sources.path.clone();
    let disk = on_disk(&path).await?;
    check_base(disk.as_deref(), p.base_hash.as_deref())?;
    let file = path.display().to_string();
    let old_parsed = match &disk {
        Some(raw) => cfg::parse_json5(raw, &file).map_err(invalid)?,
        None => Value::Object(Default::default()),
    };
    let new_text = new_text(mode, &p, &old_parsed, &file)?;
    // Validate before touching the file.
    let (_, new_settings, _) = cfg::check_user_raw(&new_text, &file).map_err(|e| {
        let (path, message) = match &e {
            cfg::ConfigError::Invalid { path, message, .. } => (path.clone(), message.clone()),
            other => (String::new(), other.to_string()),
        };
        invalid(e).with_details(json!({ "issues": [{ "path": path, "message": message }] }))
    })?;
    let restart = cfg::restart_required(&current.settings, &new_settings);
    let reloaded = write_and_reload(&current, new_text.clone()).await?;
    let out = json!({
        "ok": true,
        "path": file,
        "config": cfg::redact(&reloaded.effective),
        "hash": reloaded.hash,
        "restartRequired": restart,
    });
    apply(state, reloaded);
    let new_parsed = cfg::parse_json5(&new_text, &file).unwrap_or_default();
    record(
        state,
        caller,
        method,
        changed_paths(&old_parsed, &new_parsed),
    );
    tracing::info!(method, restart_required = ?restart, "config written");
    json(out)
}

/// Merges `patch` into the config file and applies it, as `config.patch`
/// does, for the gateway's own methods (`plugins.setEnabled`,
/// `plugins.uninstall`): no base hash (the write lock orders writers), no
/// rate limit. The settings now in force.
pub async fn apply_patch(
    state: &SharedState,
    caller: &Caller,
    method: &str,
    patch: &Value,
) -> Result<std::sync::Arc<ferroclaw_actors::settings::Settings>, ErrorShape> {
    let _guard = state.config_write.lock().await;
    let current = state.live.get();
    let path = current.sources.path.clone();
    let disk = on_disk(&path).await?;
    let file = path.display().to_string();
    let old = match &disk {
        Some(raw) => cfg::parse_json5(raw, &file).map_err(invalid)?,
        None => Value::Object(Default::default()),
    };
    let mut merged = old.clone();
    cfg::merge_patch(&mut merged, patch);
    let text = serde_json::to_string_pretty(&merged).unwrap_or_default();
    cfg::check_user_raw(&text, &file).map_err(invalid)?;
    let reloaded = write_and_reload(&current, text).await?;
    let settings = apply(state, reloaded);
    record(state, caller, method, changed_paths(&old, &merged));
    Ok(settings)
}

/// Writes `text` as the config file and reads the config again (not yet
/// in force).
async fn write_and_reload(
    current: &LoadedConfig,
    text: String,
) -> Result<LoadedConfig, ErrorShape> {
    let path = current.sources.path.clone();
    tokio::task::spawn_blocking(move || cfg::write_atomic(&path, &text))
        .await
        .map_err(|_| ErrorShape::unavailable("config write failed"))?
        .map_err(|e| ErrorShape::unavailable(format!("config write failed: {e}")))?;
    cfg::load(&current.sources)
        .map_err(|e| ErrorShape::unavailable(format!("config reload failed: {e}")))
}

/// Puts `reloaded` in force: the edge reads it, the tree applies it.
fn apply(
    state: &SharedState,
    reloaded: LoadedConfig,
) -> std::sync::Arc<ferroclaw_actors::settings::Settings> {
    let settings = reloaded.settings.clone();
    state.live.replace(reloaded);
    state.gateway.root.do_send(SettingsChanged {
        settings: settings.clone(),
    });
    settings
}

fn invalid(e: cfg::ConfigError) -> ErrorShape {
    ErrorShape::invalid(format!("invalid config: {e}"))
}

/// A write names the file it read (its hash), when there is a file.
fn check_base(disk: Option<&str>, base_hash: Option<&str>) -> Result<(), ErrorShape> {
    if disk.is_none() {
        return Ok(());
    }
    match base_hash.map(str::trim) {
        None | Some("") => Err(ErrorShape::invalid(
            "config base hash required; re-run config.get and retry",
        )),
        Some(h) if h != cfg::hash_raw(disk) => Err(ErrorShape::invalid(
            "config changed since last load; re-run config.get and retry",
        )),
        Some(_) => Ok(()),
    }
}

/// `config.apply` and `config.patch`: 3 per minute.
fn rate_limited(state: &SharedState, method: &str) -> Result<(), ErrorShape> {
    let Err(retry_ms) = state.control_plane_limiter.take(
        &method.to_string(),
        CONTROL_PLANE_MAX,
        CONTROL_PLANE_WINDOW,
    ) else {
        return Ok(());
    };
    Err(ErrorShape::unavailable(format!(
        "rate limit exceeded for {method}; retry after {}s",
        retry_ms.div_ceil(1000)
    ))
    .with_details(json!({ "method": method, "limit": "3 per 60s" }))
    .retry_after(retry_ms))
}

/// The file on disk now (another writer may have changed it); None when
/// there is none.
async fn on_disk(path: &std::path::Path) -> Result<Option<String>, ErrorShape> {
    let path = path.to_path_buf();
    let unavailable =
        || ErrorShape::invalid("config base hash unavailable; re-run config.get and retry");
    tokio::task::spawn_blocking(move || match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    })
    .await
    .map_err(|_| unavailable())?
    .map_err(|_| unavailable())
}

/// The config's new text: a patch merged, a raw text (its redacted
/// secrets restored from the file), or one key set.
fn new_text(mode: Mode, p: &SetParams, old: &Value, file: &str) -> Result<String, ErrorShape> {
    let restored = |mut v: Value| {
        cfg::restore_redacted(&mut v, old);
        serde_json::to_string_pretty(&v).unwrap_or_default()
    };
    match (mode, &p.raw, &p.key) {
        (Mode::Patch, Some(raw), _) => {
            let patch = cfg::parse_json5(raw, "patch").map_err(invalid)?;
            if !patch.is_object() {
                return Err(ErrorShape::invalid(
                    "invalid config.patch params: raw must be a JSON5 object",
                ));
            }
            let mut merged = old.clone();
            cfg::merge_patch(&mut merged, &patch);
            Ok(restored(merged))
        }
        (_, Some(raw), _) if !raw.trim().is_empty() => {
            if raw.contains(cfg::REDACTED) {
                Ok(restored(cfg::parse_json5(raw, file).map_err(invalid)?))
            } else {
                Ok(raw.clone())
            }
        }
        (Mode::Set, None, Some(key)) if !key.trim().is_empty() => {
            let mut v = old.clone();
            cfg::set_dotted(&mut v, key.trim(), p.value.clone().unwrap_or(Value::Null));
            Ok(restored(v))
        }
        _ => Err(ErrorShape::invalid(format!(
            "invalid {} params: expected a non-empty raw{}",
            mode.method(),
            if mode == Mode::Set {
                " or key + value"
            } else {
                ""
            }
        ))),
    }
}

/// The change in the audit ledger: who, which method, the changed paths
/// (names only).
fn record(state: &SharedState, caller: &Caller, method: &str, paths: Vec<String>) {
    state
        .gateway
        .audit_log
        .record(Activity::Control(ControlActivity {
            action: "config.changed".into(),
            outcome: End::Succeeded,
            actor: super::audit::operator(caller),
            subject: Some(method.to_string()),
            decision: None,
            paths,
        }));
}

/// The dotted paths whose values differ between two configs (leaves; a
/// key added or removed counts as its own path), at most 8 and then
/// `+N more`. Names only: the audit never holds a config value.
pub fn changed_paths(old: &Value, new: &Value) -> Vec<String> {
    fn walk(prefix: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
        match (a, b) {
            (Some(Value::Object(_)), None | Some(Value::Object(_)))
            | (None, Some(Value::Object(_))) => {
                let empty = serde_json::Map::new();
                let x = a.and_then(Value::as_object).unwrap_or(&empty);
                let y = b.and_then(Value::as_object).unwrap_or(&empty);
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, x.get(k), y.get(k), out);
                }
            }
            (a, b) if a != b => out.push(if prefix.is_empty() {
                "<root>".to_string()
            } else {
                prefix.to_string()
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", Some(old), Some(new), &mut out);
    if out.len() > 8 {
        let more = out.len() - 8;
        out.truncate(8);
        out.push(format!("+{more} more"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::changed_paths;
    use serde_json::json;

    #[test]
    fn changed_paths_name_leaves_never_values() {
        let old = json!({ "logging": { "level": "info" }, "gateway": { "port": 1 } });
        let new = json!({ "logging": { "level": "debug", "file": "x" }, "gateway": { "port": 1 },
                          "agents": { "defaults": { "timeoutSeconds": 5 } } });
        assert_eq!(
            changed_paths(&old, &new),
            [
                "agents.defaults.timeoutSeconds",
                "logging.file",
                "logging.level"
            ]
        );
        let many: serde_json::Map<String, serde_json::Value> =
            (0..10).map(|i| (format!("k{i}"), json!(i))).collect();
        let paths = changed_paths(&json!({}), &serde_json::Value::Object(many));
        assert_eq!(paths.len(), 9);
        assert_eq!(paths[8], "+2 more");
    }
}
