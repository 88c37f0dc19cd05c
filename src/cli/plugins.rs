//! `ferroclaw plugins list|inspect|install|enable|disable|uninstall`
//! (OpenClaw's `openclaw plugins` names): through the running gateway
//! (`plugins.*`), which applies each change before it answers; with no
//! gateway running, on the state dir and the config file directly, for
//! the next start. `inspect` shows what enabling a bundle would run;
//! `enable --accept-capabilities` (and `install --accept-capabilities`)
//! consents to exactly that. Exit codes: 0 done, 1 the gateway or the
//! disk failed, 2 refused.

use std::path::{Path, PathBuf};

use ferroclaw::config as cfg;
use ferroclaw::protocol::plugins as wire;
use ferroclaw_actors::plugins::{store, PluginDirs, PluginSet};
use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

#[derive(clap::Subcommand)]
pub enum PluginsCommand {
    /// Installed plugins: id, format, state.
    List {
        /// Only the enabled ones.
        #[arg(long)]
        enabled: bool,
    },
    /// One plugin: its format, what it maps to, and what enabling it runs.
    Inspect { id: String },
    /// Install a bundle from a folder or a .tar, .tgz or .tar.gz archive.
    Install {
        path: PathBuf,
        /// Replace an install of the same id.
        #[arg(long)]
        force: bool,
        /// Enable it even though it runs commands (shown first).
        #[arg(long)]
        accept_capabilities: bool,
    },
    /// Turn a plugin on (a bundle that runs commands needs --accept-capabilities).
    Enable {
        id: String,
        #[arg(long)]
        accept_capabilities: bool,
    },
    /// Turn a plugin off.
    Disable { id: String },
    /// Remove a plugin and its files.
    Uninstall {
        id: String,
        /// Keep its data folder.
        #[arg(long)]
        keep_files: bool,
    },
}

/// Where a command without a gateway works.
pub struct Local<'a> {
    pub state: &'a Path,
    pub config: &'a Path,
    pub settings: &'a ferroclaw_actors::settings::Settings,
}

fn refused(msg: impl Into<String>) -> Failure {
    Failure::new(2, msg.into())
}

fn print_list(v: &Value, enabled_only: bool, as_json: bool) {
    if as_json {
        return print_json(v);
    }
    let plugins = v["plugins"].as_array().cloned().unwrap_or_default();
    let shown: Vec<&Value> = plugins
        .iter()
        .filter(|p| !enabled_only || p["enabled"] == true)
        .collect();
    if shown.is_empty() {
        println!("No plugins installed.");
    }
    for p in shown {
        println!(
            "{}  {}  bundle ({})  {}",
            p["id"].as_str().unwrap_or(""),
            p["version"].as_str().unwrap_or("-"),
            p["bundleFormat"].as_str().unwrap_or("?"),
            p["state"].as_str().unwrap_or("")
        );
    }
}

fn print_inspect(v: &Value, as_json: bool) {
    if as_json {
        return print_json(v);
    }
    let p = &v["plugin"];
    println!(
        "{} ({})",
        p["name"].as_str().unwrap_or(""),
        p["id"].as_str().unwrap_or("")
    );
    println!("Format: bundle");
    println!(
        "Bundle format: {}",
        v["bundleFormatLabel"].as_str().unwrap_or("")
    );
    println!("Enabled: {}", p["enabled"]);
    println!("Root: {}", v["rootDir"].as_str().unwrap_or(""));
    print_components(v);
    let runs = v["runs"].as_array().cloned().unwrap_or_default();
    if runs.is_empty() {
        println!("Runs: nothing (content only)");
    } else {
        println!("Enabling it runs:");
        for r in runs {
            println!("  {}", r.as_str().unwrap_or(""));
        }
    }
    for d in v["diagnostics"].as_array().into_iter().flatten() {
        println!("warning: {}", d.as_str().unwrap_or(""));
    }
    for d in v["components"]["unavailable"]["capabilities"]
        .as_array()
        .into_iter()
        .flatten()
    {
        println!("not run: {}", d.as_str().unwrap_or(""));
    }
}

fn joined(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn print_components(v: &Value) {
    let c = &v["components"];
    println!("Capabilities: {}", joined(&v["declared"]["capabilities"]));
    println!("Skill roots: {}", joined(&c["skills"]));
    println!("MCP servers: {}", joined(&c["mcpServers"]));
    println!("LSP servers: {}", joined(&c["lspServers"]));
    println!("Hook files: {}", joined(&c["hooks"]));
}

/// Runs `command` through the gateway, or locally when none answers.
pub async fn plugins(t: &Target, local: Local<'_>, command: PluginsCommand) -> Result<(), Failure> {
    match Connection::open(t).await {
        Ok(mut c) => remote(&mut c, t.json, command).await,
        Err(_) => {
            eprintln!("note: no gateway is running; the change applies at its next start");
            local_run(&local, t.json, command)
        }
    }
}

async fn remote(c: &mut Connection, as_json: bool, command: PluginsCommand) -> Result<(), Failure> {
    let (method, params, line) = match command {
        PluginsCommand::List { enabled } => {
            let list = c.call("plugins.list", json!({})).await?;
            print_list(&list, enabled, as_json);
            return Ok(());
        }
        PluginsCommand::Inspect { id } => {
            let shown = c.call("plugins.inspect", json!({"pluginId": id})).await?;
            print_inspect(&shown, as_json);
            return Ok(());
        }
        PluginsCommand::Install {
            path,
            force,
            accept_capabilities,
        } => return remote_install(c, &path, force, accept_capabilities, as_json).await,
        PluginsCommand::Enable {
            id,
            accept_capabilities,
        } => {
            let mut params = json!({"pluginId": id, "enabled": true});
            if accept_capabilities {
                let inspected = c.call("plugins.inspect", json!({"pluginId": id})).await?;
                params["acknowledgeCapabilities"] =
                    json!({"reviewToken": inspected["reviewToken"]});
            }
            ("plugins.setEnabled", params, format!("{id} enabled"))
        }
        PluginsCommand::Disable { id } => {
            let params = json!({"pluginId": id, "enabled": false});
            ("plugins.setEnabled", params, format!("{id} disabled"))
        }
        PluginsCommand::Uninstall { id, keep_files } => {
            let params = json!({"pluginId": id, "keepFiles": keep_files});
            ("plugins.uninstall", params, format!("{id} uninstalled"))
        }
    };
    let res = c.call(method, params).await?;
    done(&res, as_json, &line);
    Ok(())
}

async fn remote_install(
    c: &mut Connection,
    path: &Path,
    force: bool,
    accept: bool,
    as_json: bool,
) -> Result<(), Failure> {
    let path =
        std::fs::canonicalize(path).map_err(|e| refused(format!("{}: {e}", path.display())))?;
    let mut params = json!({"source": "local", "path": path.display().to_string()});
    if force {
        params["mode"] = json!("update");
    }
    let res = c.call("plugins.install", params).await?;
    let id = res["plugin"]["id"].as_str().unwrap_or("").to_string();
    if accept && res["plugin"]["enabled"] != true {
        let inspected = c.call("plugins.inspect", json!({"pluginId": id})).await?;
        let token = inspected["reviewToken"].clone();
        let ack = json!({"pluginId": id, "enabled": true, "acknowledgeCapabilities": {"reviewToken": token}});
        c.call("plugins.setEnabled", ack).await?;
    }
    let shown = c.call("plugins.inspect", json!({"pluginId": id})).await?;
    print_inspect(&shown, as_json);
    if shown["plugin"]["enabled"] != true && !as_json {
        println!("Installed disabled: review what it runs, then `ferroclaw plugins enable {id} --accept-capabilities`.");
    }
    Ok(())
}

fn done(res: &Value, as_json: bool, line: &str) {
    match as_json {
        true => print_json(res),
        false => println!("{line}"),
    }
}

/// Sets `plugins.entries.<id>.enabled` in the config file.
fn set_enabled(config: &Path, id: &str, on: bool) -> Result<(), Failure> {
    let file = config.display().to_string();
    let old = match std::fs::read_to_string(config) {
        Ok(raw) => cfg::parse_json5(&raw, &file).map_err(|e| refused(e.to_string()))?,
        Err(_) => json!({}),
    };
    let mut merged = old;
    cfg::merge_patch(
        &mut merged,
        &json!({"plugins": {"entries": {id: {"enabled": on}}}}),
    );
    let text = serde_json::to_string_pretty(&merged).unwrap_or_default();
    cfg::check_user_raw(&text, &file).map_err(|e| refused(e.to_string()))?;
    cfg::write_atomic(config, &text).map_err(|e| Failure::new(1, format!("{file}: {e}")))
}

/// Enables `id` when it runs nothing or `accept` consents; an install
/// that may not enable it stays installed, disabled.
fn local_enable(
    l: &Local<'_>,
    id: &str,
    accept: bool,
    as_json: bool,
    installing: bool,
) -> Result<(), Failure> {
    let set = PluginSet::load(l.state, &l.settings.plugins);
    let p = set
        .get(id)
        .ok_or_else(|| refused(format!("no installed plugin {id}")))?;
    if p.runs_commands() && !accept {
        print_inspect(&wire::inspect(p), as_json);
        if installing {
            println!("Installed disabled: review what it runs, then `ferroclaw plugins enable {id} --accept-capabilities`.");
            return Ok(());
        }
        return Err(refused(format!(
            "{id} runs commands (above); pass --accept-capabilities to enable it"
        )));
    }
    set_enabled(l.config, id, true)?;
    done(
        &json!({"ok": true, "pluginId": id}),
        as_json,
        &format!("{id} enabled"),
    );
    Ok(())
}

fn local_run(l: &Local<'_>, as_json: bool, command: PluginsCommand) -> Result<(), Failure> {
    let dirs = PluginDirs::of(l.state);
    let set = PluginSet::load(l.state, &l.settings.plugins);
    let one = |id: &str| match set.get(id) {
        Some(p) => Ok(wire::inspect(p)),
        None => Err(refused(format!("no installed plugin {id}"))),
    };
    let (id, line) = match command {
        PluginsCommand::List { enabled } => {
            print_list(&wire::list(&set), enabled, as_json);
            return Ok(());
        }
        PluginsCommand::Inspect { id } => {
            print_inspect(&one(&id)?, as_json);
            return Ok(());
        }
        PluginsCommand::Install {
            path,
            force,
            accept_capabilities,
        } => {
            let b = store::install(&dirs, &path, force).map_err(|e| refused(e.to_string()))?;
            return local_enable(l, &b.id, accept_capabilities, as_json, true);
        }
        PluginsCommand::Enable {
            id,
            accept_capabilities,
        } => return local_enable(l, &id, accept_capabilities, as_json, false),
        PluginsCommand::Disable { id } => {
            set_enabled(l.config, &id, false)?;
            let line = format!("{id} disabled");
            (id, line)
        }
        PluginsCommand::Uninstall { id, keep_files } => {
            store::uninstall(&dirs, &id, keep_files).map_err(|e| refused(e.to_string()))?;
            set_enabled(l.config, &id, false)?;
            let line = format!("{id} uninstalled");
            (id, line)
        }
    };
    done(&json!({"ok": true, "pluginId": id}), as_json, &line);
    Ok(())
}
