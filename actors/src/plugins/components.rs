//! What a bundle's files map to: MCP servers (`.mcp.json` / Agent
//! Plugins' `mcp.json` / inline `mcpServers`, `${PLUGIN_ROOT}` and
//! `${PLUGIN_DATA}` expanded once in `command`, `args`, `env` and `cwd`),
//! LSP servers (`.lsp.json`, manifest `lspServers`), Claude `settings.json`
//! (OpenClaw's sanitising: no shell overrides; ferroclaw applies its `env`
//! to tool processes, minus what changes how programs load) and hook files.
//! A server entry that is invalid or would run something outside the
//! plugin is skipped with a diagnostic; the others still load.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::bundle::{read_json, Bundle, BundleFormat};
use super::PluginError;
use crate::hooks::table::PluginEnv;
use crate::settings::{LspServerSettings, McpServerSettings};

/// Env names a bundle never sets: they change what programs load or run.
const REFUSED_ENV: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "BASH_ENV",
    "ENV",
    "SHELL",
    "PERL5OPT",
    "RUBYOPT",
];

/// Claude `settings.json` keys OpenClaw strips before applying.
const SANITIZED_SETTINGS: &[&str] = &["shellPath", "shellCommandPrefix"];

/// What a bundle declares, read (`diagnostics`: what was skipped and why).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Components {
    pub mcp: BTreeMap<String, McpServerSettings>,
    pub lsp: BTreeMap<String, LspServerSettings>,
    /// Hook files' contents, each with its path.
    pub hooks: Vec<(String, Value)>,
    /// `settings.json` env applied to the agent's tool processes.
    pub env: Vec<(String, String)>,
    /// `settings.json` keys read and not applied.
    pub settings_ignored: Vec<String>,
    pub diagnostics: Vec<String>,
}

fn server_map(raw: Value, key: &str) -> BTreeMap<String, Value> {
    let inner = match raw.get(key) {
        Some(Value::Object(_)) => raw.get(key).cloned().unwrap_or_default(),
        _ => raw,
    };
    match inner {
        Value::Object(m) => m.into_iter().filter(|(k, _)| !k.starts_with('$')).collect(),
        _ => BTreeMap::new(),
    }
}

/// Reads every component of `b`; `env` expands its placeholders.
pub fn read(b: &Bundle, env: &PluginEnv) -> Components {
    let mut c = Components::default();
    let mut mcp_raw: BTreeMap<String, Value> = BTreeMap::new();
    for file in &b.mcp_files {
        match read_json(&b.root, file) {
            Ok(v) => {
                if b.format == BundleFormat::Agent && v.get("$schema").is_none() {
                    c.diagnostics
                        .push(format!("{file}: no $schema; MCP off for this plugin"));
                    continue;
                }
                mcp_raw.extend(server_map(v, "mcpServers"));
            }
            Err(e) => c
                .diagnostics
                .push(format!("{file}: {e}; MCP off for this file")),
        }
    }
    if let Some(v) = &b.inline_mcp {
        mcp_raw.extend(server_map(v.clone(), "mcpServers"));
    }
    for (name, raw) in mcp_raw {
        match mcp_server(&name, raw, env) {
            Ok(s) => {
                c.mcp.insert(name, s);
            }
            Err(why) => c
                .diagnostics
                .push(format!("MCP server {name} skipped: {why}")),
        }
    }
    lsp(b, env, &mut c);
    for file in &b.hook_files {
        match read_json(&b.root, file) {
            Ok(v) => c.hooks.push((file.clone(), v)),
            Err(e) => c
                .diagnostics
                .push(format!("{file}: {e}; its hooks do not run")),
        }
    }
    if let Some(v) = &b.inline_hooks {
        c.hooks.push(("plugin manifest".into(), v.clone()));
    }
    if let Some(file) = &b.settings_file {
        settings(&b.root, file, &mut c);
    }
    c
}

fn lsp(b: &Bundle, env: &PluginEnv, c: &mut Components) {
    let mut raw: BTreeMap<String, Value> = BTreeMap::new();
    for file in &b.lsp_files {
        match read_json(&b.root, file) {
            Ok(v) => raw.extend(server_map(v, "lspServers")),
            Err(e) => c
                .diagnostics
                .push(format!("{file}: {e}; its LSP servers do not load")),
        }
    }
    if let Some(v) = &b.inline_lsp {
        raw.extend(server_map(v.clone(), "lspServers"));
    }
    for (name, v) in raw {
        let parsed = serde_json::from_value::<LspServerSettings>(expand(v, env));
        match parsed {
            Ok(s) if s.transport.as_deref().is_some_and(|t| t != "stdio") => {
                c.diagnostics.push(format!(
                    "LSP server {name}: transport {} is not run (stdio only)",
                    s.transport.unwrap_or_default()
                ))
            }
            Ok(mut s) => match runnable(&s.command, env) {
                Ok(()) => {
                    if let Some(rel) = s.command.strip_prefix("./") {
                        s.command = env.root.join(rel).display().to_string();
                    }
                    c.lsp.insert(name, s);
                }
                Err(why) => c
                    .diagnostics
                    .push(format!("LSP server {name} skipped: {why}")),
            },
            Err(e) => c
                .diagnostics
                .push(format!("LSP server {name} skipped: {e}")),
        }
    }
}

fn settings(root: &Path, file: &str, c: &mut Components) {
    let Ok(Value::Object(m)) = read_json(root, file) else {
        c.diagnostics
            .push(format!("{file}: not a JSON object; not applied"));
        return;
    };
    for (k, v) in m {
        match (k.as_str(), v) {
            ("env", Value::Object(env)) => {
                for (name, value) in env {
                    let refused = REFUSED_ENV.contains(&name.as_str())
                        || name.starts_with("LD_")
                        || name.starts_with("DYLD_");
                    match (refused, value.as_str()) {
                        (false, Some(val)) => c.env.push((name, val.to_string())),
                        _ => c.settings_ignored.push(format!("env.{name}")),
                    }
                }
            }
            (k, _) if SANITIZED_SETTINGS.contains(&k) => {
                c.settings_ignored.push(format!("{k} (sanitized)"))
            }
            (k, _) => c.settings_ignored.push(k.to_string()),
        }
    }
}

/// `${PLUGIN_ROOT}`/`${PLUGIN_DATA}` (and Claude's) in every string of `v`.
fn expand(v: Value, env: &PluginEnv) -> Value {
    match v {
        Value::String(s) => Value::String(env.expand(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| expand(x, env)).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, x)| (k, expand(x, env))).collect())
        }
        other => other,
    }
}

/// A command a bundle may run: a bare program name (found on PATH) or a
/// path inside the plugin or its data dir.
fn runnable(command: &str, env: &PluginEnv) -> Result<(), PluginError> {
    if command.trim().is_empty() {
        return Err(PluginError::Invalid("no command".into()));
    }
    if !command.contains('/') {
        return Ok(());
    }
    match in_plugin(&env.root.join(command.trim_start_matches("./")), env) {
        true => Ok(()),
        false => Err(PluginError::Outside(format!("command {command}"))),
    }
}

/// Whether `path` (links resolved) is inside the plugin or its data dir.
fn in_plugin(path: &Path, env: &PluginEnv) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let Some(path) = real(path) else {
        return false;
    };
    [&env.root, &env.data]
        .iter()
        .filter_map(|b| real(b))
        .any(|b| path.starts_with(b))
}

fn mcp_server(name: &str, raw: Value, env: &PluginEnv) -> Result<McpServerSettings, PluginError> {
    let invalid = PluginError::Invalid;
    let mut s: McpServerSettings =
        serde_json::from_value(expand(raw, env)).map_err(|e| invalid(e.to_string()))?;
    if s.command.is_some() && s.url.is_some() {
        return Err(invalid("both command and url".into()));
    }
    if let Some(command) = &s.command {
        runnable(command, env)?;
        if command.starts_with("./") {
            s.command = Some(
                env.root
                    .join(command.trim_start_matches("./"))
                    .display()
                    .to_string(),
            );
        }
        for (k, v) in env.env() {
            s.env.entry(k).or_insert(v);
        }
        if let Some(cwd) = &s.cwd {
            let cwd = env.root.join(cwd);
            if !in_plugin(&cwd, env) {
                return Err(PluginError::Outside("cwd".into()));
            }
            s.cwd = Some(cwd.display().to_string());
        } else {
            s.cwd = Some(env.root.display().to_string());
        }
    }
    s.transport().map_err(|e| invalid(format!("{name}: {e}")))?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::bundle;

    #[test]
    fn mcp_servers_expand_and_nothing_runs_from_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let data = dir.path().join("d");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(root.join("bin/srv"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {
                "ok": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/s.py", "--data", "${PLUGIN_DATA}"]},
                "local": {"command": "./bin/srv"},
                "out": {"command": "/usr/bin/env"},
                "both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}
            }}"#,
        )
        .unwrap();
        std::fs::write(
            root.join("settings.json"),
            r#"{"env": {"A": "1", "LD_PRELOAD": "/x.so"}, "shellPath": "/bin/evil", "model": "x"}"#,
        )
        .unwrap();
        let b = bundle::load(&root, BundleFormat::Claude).unwrap();
        let env = PluginEnv {
            root: root.clone(),
            data: data.clone(),
        };
        let c = read(&b, &env);
        let ok = &c.mcp["ok"];
        assert_eq!(
            ok.args,
            [
                format!("{}/s.py", root.display()),
                "--data".into(),
                data.display().to_string()
            ]
        );
        assert_eq!(ok.env["PLUGIN_ROOT"], root.display().to_string());
        assert!(c.mcp.contains_key("local"));
        assert!(
            !c.mcp.contains_key("out") && !c.mcp.contains_key("both"),
            "{:?}",
            c.diagnostics
        );
        assert_eq!(c.env, [("A".to_string(), "1".to_string())]);
        assert!(c
            .settings_ignored
            .contains(&"shellPath (sanitized)".to_string()));
        assert!(c.settings_ignored.contains(&"env.LD_PRELOAD".to_string()));
    }
}
