//! `openclaw.json` -> ferroclaw config: the keys ferroclaw takes are kept,
//! those it refuses are removed by their key path and listed, workspaces
//! are resolved.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferroclaw::config;
use ferroclaw_actors::settings::Settings;
use serde_json::{json, Value};

use super::{Copy, Plan};
use crate::cli::Failure;

pub(super) fn bad(message: impl Into<String>) -> Failure {
    Failure::new(2, format!("{}; nothing was imported", message.into()))
}

// ---- config -----------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Path segments from `a.b[0].c` (serde_path_to_error, `config_keys`) or
/// `a.b.0.c` (`?` segments mark options and are skipped).
fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty() && *p != "?") {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            out.push(Seg::Key(rest[..i].to_string()));
            rest = &rest[i..];
            while let Some(r) = rest.strip_prefix('[') {
                let Some((n, tail)) = r.split_once(']') else {
                    break;
                };
                if let Ok(n) = n.parse() {
                    out.push(Seg::Index(n));
                }
                rest = tail;
            }
        } else if let Ok(n) = rest.parse::<usize>() {
            out.push(Seg::Index(n));
        } else {
            out.push(Seg::Key(rest.to_string()));
        }
    }
    out
}

/// Removes the value at `path`; true when something was removed.
pub(super) fn remove_path(v: &mut Value, path: &str) -> bool {
    let segs = segments(path);
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = v;
    for s in parents {
        let next = match s {
            Seg::Key(k) => cur.get_mut(k.as_str()),
            Seg::Index(i) => cur.get_mut(*i),
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    match (last, cur) {
        (Seg::Key(k), Value::Object(m)) => m.remove(k).is_some(),
        (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}

/// The config key a start-time error names (`tools.web.fetch.maxChars must
/// be ...` -> `tools.web.fetch.maxChars`).
pub(super) fn key_in_message(message: &str) -> Option<String> {
    let key: String = message
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '[' | ']'))
        .collect();
    let key = key.trim_end_matches('.').to_string();
    key.contains('.').then_some(key)
}

pub(super) fn expand(raw: &str, home: Option<&Path>, base: &Path) -> PathBuf {
    let p = match (raw.strip_prefix("~/"), raw == "~", home) {
        (Some(rest), _, Some(h)) => h.join(rest),
        (_, true, Some(h)) => h.to_path_buf(),
        _ => PathBuf::from(raw),
    };
    if p.is_absolute() {
        p
    } else {
        base.join(p)
    }
}

pub(super) fn valid_bind(cfg: &Value) -> bool {
    let bind = cfg.pointer("/gateway/bind").and_then(Value::as_str);
    match bind {
        None | Some("loopback" | "localhost" | "lan" | "auto") => true,
        Some("custom") => cfg
            .pointer("/gateway/host")
            .and_then(Value::as_str)
            .is_some_and(|h| h.parse::<std::net::IpAddr>().is_ok()),
        Some(ip) => ip.parse::<std::net::IpAddr>().is_ok(),
    }
}

/// Plans the workspace at `ptr` (a config pointer, or the default when the
/// key is absent): one under the OpenClaw state dir is copied to the same
/// place under the ferroclaw state dir (and the key follows it, or goes when
/// it is the default); one elsewhere stays where it is.
pub(super) fn plan_workspace(
    cfg: &mut Value,
    ptr: &str,
    default: Option<&Path>,
    from: &Path,
    state: &Path,
    home: Option<&Path>,
    plan: &mut Plan,
) {
    let configured = cfg.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    let src = match (&configured, default) {
        (Some(raw), _) => expand(raw, home, from),
        (None, Some(d)) => d.to_path_buf(),
        (None, None) => return,
    };
    let src = src.canonicalize().unwrap_or(src);
    let inside = src.strip_prefix(from).ok().map(Path::to_path_buf);
    let default_dest = state.join("workspace");
    match inside {
        Some(rel) if !rel.as_os_str().is_empty() => {
            let dest = state.join(&rel);
            if src.is_dir() {
                plan.copies.push(Copy {
                    label: "workspace",
                    src: src.clone(),
                    dest: dest.clone(),
                    secret: false,
                });
            } else if configured.is_some() {
                plan.notes.push(format!(
                    "workspace {} (from {ptr}) does not exist; nothing copied",
                    src.display()
                ));
            }
            if let Some((parent, key)) = ptr.rsplit_once('/') {
                if let Some(Value::Object(m)) = cfg.pointer_mut(parent) {
                    if dest == default_dest && ptr == "/agents/defaults/workspace" {
                        m.remove(key);
                    } else if configured.is_some() {
                        m.insert(key.into(), json!(dest.display().to_string()));
                    }
                }
            }
        }
        _ => {
            if let Some(Value::Object(m)) =
                ptr.rsplit_once('/').and_then(|(p, _)| cfg.pointer_mut(p))
            {
                if let Some(key) = ptr.rsplit('/').next() {
                    m.insert(key.into(), json!(src.display().to_string()));
                }
            }
            plan.notes.push(format!(
                "workspace {} is outside {}: left where it is, and the config points at it",
                src.display(),
                from.display()
            ));
        }
    }
}

/// Converts `openclaw.json` into a ferroclaw config: settings ferroclaw
/// takes stay as they are; the rest is left out with a note each; the
/// result passes the same checks as a gateway start.
pub(super) fn convert_config(
    mut cfg: Value,
    from: &Path,
    state: &Path,
    home: Option<&Path>,
    plan: &mut Plan,
) -> Result<Value, Failure> {
    if contains_key(&cfg, "$include") {
        plan.notes.push(
            "openclaw.json uses $include: the included files were not read; merge them into the ferroclaw config by hand".into(),
        );
    }
    // Older OpenClaw configs kept the workspace under `agent.workspace`.
    if let Some(w) = cfg.pointer("/agent/workspace").cloned() {
        if cfg.pointer("/agents/defaults/workspace").is_none() {
            config::set_dotted(&mut cfg, "agents.defaults.workspace", w);
        }
    }
    let mut left_out = Vec::new();
    let settings = checked(&mut cfg, &mut left_out)?;
    plan_workspaces(&mut cfg, &settings, from, state, home, plan);
    startable(cfg, state, left_out, plan)
}

/// What the config checks refuse is left out (each in `left_out`), until
/// it passes them and holds only ferroclaw's keys.
fn checked(cfg: &mut Value, left_out: &mut Vec<String>) -> Result<Settings, Failure> {
    loop {
        if !valid_bind(cfg) {
            let bind = cfg.pointer("/gateway/bind").cloned().unwrap_or(Value::Null);
            remove_path(cfg, "gateway.bind");
            remove_path(cfg, "gateway.host");
            left_out.push(format!("gateway.bind {bind} (ferroclaw binds loopback, lan, custom or an IP; loopback is used)"));
            continue;
        }
        let text = serde_json::to_string(&cfg).map_err(|e| bad(e.to_string()))?;
        match config::check_user_raw(&text, "openclaw.json") {
            Ok((_, settings, _)) => {
                let unknown: Vec<String> = ferroclaw::config_keys::unknown_keys(cfg)
                    .into_iter()
                    .map(|u| u.path)
                    .collect();
                let mut removed = false;
                for path in unknown {
                    if remove_path(cfg, &path) {
                        left_out.push(format!("{path} (not a ferroclaw setting)"));
                        removed = true;
                    }
                }
                if !removed {
                    return Ok(settings);
                }
            }
            Err(config::ConfigError::Invalid { path, message, .. }) => {
                // An unsupported provider API takes its provider with it.
                let target = match path.strip_suffix(".api") {
                    Some(provider) if path.starts_with("models.providers.") => provider.to_string(),
                    _ => path.clone(),
                };
                if !remove_path(cfg, &target) {
                    return Err(bad(format!("openclaw.json: {path}: {message}")));
                }
                left_out.push(format!("{target} ({message})"));
            }
            Err(e) => return Err(bad(e.to_string())),
        }
        if left_out.len() > 500 {
            return Err(bad(
                "openclaw.json: too many settings ferroclaw cannot take",
            ));
        }
    }
}

/// Workspaces: the default one, then each agent's.
fn plan_workspaces(
    cfg: &mut Value,
    settings: &Settings,
    from: &Path,
    state: &Path,
    home: Option<&Path>,
    plan: &mut Plan,
) {
    let default_ws = from.join("workspace");
    plan_workspace(
        cfg,
        "/agents/defaults/workspace",
        Some(&default_ws),
        from,
        state,
        home,
        plan,
    );
    let agents = settings.agents.list.len();
    for i in 0..agents {
        let ptr = format!("/agents/list/{i}/workspace");
        if cfg.pointer(&ptr).is_some() {
            plan_workspace(cfg, &ptr, None, from, state, home, plan);
            plan.notes.push(format!(
                "agents.list[{i}].workspace: ferroclaw runs every agent in agents.defaults.workspace for now; the copy is kept for when per-agent workspaces come"
            ));
        }
    }
}

/// The checks a gateway start runs; a setting they refuse is left out.
/// The config once it would start, with the notes of what was left out.
fn startable(
    mut cfg: Value,
    state: &Path,
    mut left_out: Vec<String>,
    plan: &mut Plan,
) -> Result<Value, Failure> {
    let no_env: ferroclaw_actors::provider::hub::EnvReader = Arc::new(|_: &str| None);
    for _ in 0..50 {
        let text = serde_json::to_string(&cfg).map_err(|e| bad(e.to_string()))?;
        let (_, settings, _) = config::check_user_raw(&text, "openclaw.json")
            .map_err(|e| bad(format!("the converted config: {e}")))?;
        use ferroclaw_actors::plan::StartError;
        let failed = match ferroclaw_actors::plan::plan(&settings, state, no_env.clone()) {
            Ok(_) => {
                plan.kept_keys = count_leaves(&cfg);
                for l in left_out {
                    plan.notes.push(format!("config: left out {l}"));
                }
                return Ok(cfg);
            }
            Err(e @ (StartError::Model(_) | StartError::Provider(_))) => {
                ("agents.defaults.model".to_string(), e.to_string())
            }
            Err(e) => match key_in_message(&e.to_string()) {
                Some(key) => (key, e.to_string()),
                None => return Err(bad(format!("the converted config would not start: {e}"))),
            },
        };
        if !remove_path(&mut cfg, &failed.0) {
            return Err(bad(format!(
                "the converted config would not start: {}",
                failed.1
            )));
        }
        left_out.push(format!("{} ({})", failed.0, failed.1));
    }
    Err(bad("the converted config would not start"))
}

pub(super) fn contains_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|v| contains_key(v, key)),
        Value::Array(a) => a.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}

pub(super) fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(count_leaves).sum(),
        Value::Array(a) if !a.is_empty() => a.iter().map(count_leaves).sum(),
        _ => 1,
    }
}

// ---- reading the OpenClaw state dir -------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_both_error_formats_remove_the_right_value() {
        let check = |path: &str, want: Value| {
            let mut v = json!({"a": {"list": [{"x": 1, "y": 2}, {"x": 3}]}, "b": 1});
            assert!(remove_path(&mut v, path), "{path}");
            assert_eq!(v, want, "{path}");
        };
        check(
            "a.list[0].x",
            json!({"a": {"list": [{"y": 2}, {"x": 3}]}, "b": 1}),
        );
        check(
            "a.list.1.x",
            json!({"a": {"list": [{"x": 1, "y": 2}, {}]}, "b": 1}),
        );
        check("a.?.list.0", json!({"a": {"list": [{"x": 3}]}, "b": 1}));
        check("b", json!({"a": {"list": [{"x": 1, "y": 2}, {"x": 3}]}}));
        let mut v = json!({"a": 1});
        assert!(!remove_path(&mut v, "a.b.c"));
        assert!(!remove_path(&mut v, "."));
    }

    #[test]
    fn keys_are_found_at_the_start_of_start_errors() {
        assert_eq!(
            key_in_message("tools.web.fetch.maxChars must be a non-negative integer").as_deref(),
            Some("tools.web.fetch.maxChars")
        );
        assert_eq!(
            key_in_message("agents.defaults.sandbox.mode: \"docker\" (off, non-main or all)")
                .as_deref(),
            Some("agents.defaults.sandbox.mode")
        );
        assert_eq!(key_in_message("no key here"), None);
    }
}
