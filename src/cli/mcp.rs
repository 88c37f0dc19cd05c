//! `ferroclaw mcp list|show|tools|probe`: the MCP servers of the config, as
//! OpenClaw's `openclaw mcp` shows its saved ones. `list` and `show` read
//! the config only; `tools` and `probe` connect to a server themselves (no
//! gateway needed) and close again. Exit codes: 0 answered, 1 a server did
//! not, 2 bad input.

use std::process::ExitCode;

use ferroclaw_actors::settings::{McpServerSettings, McpSettings};
use serde_json::{json, Value};

#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// The configured MCP servers, sorted (no connection).
    List,
    /// One server's definition, or all of them (env and header values redacted).
    Show { name: Option<String> },
    /// Connect to a server and list its tools with the names the agent is offered.
    Tools { name: String },
    /// Connect to one server, or every enabled one; exit 1 when one did not answer.
    Probe { name: Option<String> },
    /// Serve the running gateway's conversations as MCP tools over stdio
    /// (read-only unless --allow names chat_send, permissions_respond or all).
    Serve {
        /// Tools beyond the read-only ones: chat_send, permissions_respond, or all.
        #[arg(long)]
        allow: Option<String>,
    },
}

fn transport(s: &McpServerSettings) -> String {
    match s.transport() {
        Ok(_) => s.transport_name().into(),
        Err(e) => format!("invalid: {e}"),
    }
}

fn redacted(s: &McpServerSettings) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    for key in ["env", "headers"] {
        if let Some(Value::Object(m)) = v.get_mut(key) {
            for val in m.values_mut() {
                *val = json!("__OPENCLAW_REDACTED__");
            }
        }
    }
    v
}

pub fn run(mcp: &McpSettings, command: McpCommand, as_json: bool) -> ExitCode {
    match command {
        // main.rs runs `serve` (it needs the gateway target, not the config).
        McpCommand::Serve { .. } => ExitCode::from(2),
        McpCommand::List => list(mcp, as_json),
        McpCommand::Show { name } => show(mcp, name.as_deref()),
        McpCommand::Tools { name } => tools(mcp, name, as_json),
        McpCommand::Probe { name } => probe(mcp, name, as_json),
    }
}

/// `mcp list`: each server, its transport, whether it is enabled.
fn list(mcp: &McpSettings, as_json: bool) -> ExitCode {
    let rows: Vec<Value> = mcp
        .servers
        .iter()
        .map(|(n, s)| json!({"name": n, "transport": transport(s), "enabled": s.is_enabled()}))
        .collect();
    if as_json {
        println!("{}", json!({ "servers": rows }));
    } else if rows.is_empty() {
        println!("no MCP servers configured (mcp.servers)");
    } else {
        for (n, s) in &mcp.servers {
            let off = if s.is_enabled() { "" } else { " (disabled)" };
            println!("{n}\t{}{off}", transport(s));
        }
    }
    ExitCode::SUCCESS
}

/// `mcp show [name]`: the config of one server or all, secrets redacted.
fn show(mcp: &McpSettings, name: Option<&str>) -> ExitCode {
    let shown = match name {
        Some(n) => match mcp.servers.get(n) {
            Some(s) => redacted(s),
            None => {
                eprintln!("error: no MCP server {n:?} in mcp.servers");
                return ExitCode::from(2);
            }
        },
        None => Value::Object(
            mcp.servers
                .iter()
                .map(|(n, s)| (n.clone(), redacted(s)))
                .collect(),
        ),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    );
    ExitCode::SUCCESS
}

/// `mcp tools <name>`: the server's tools, as offered to the agent.
fn tools(mcp: &McpSettings, name: String, as_json: bool) -> ExitCode {
    if !mcp.servers.contains_key(&name) {
        eprintln!("error: no MCP server {name:?} in mcp.servers");
        return ExitCode::from(2);
    }
    let reports = probe_all(mcp, &[name]);
    let r = &reports[0];
    if as_json {
        println!(
            "{}",
            json!({ "name": r.name, "ok": r.ok, "error": r.error, "tools": r.tools })
        );
    } else if let Some(e) = &r.error {
        eprintln!("error: {}: {e}", r.name);
    } else {
        for t in &r.tools {
            match &t.offered_as {
                Some(o) => println!("{o}\t{}", t.description),
                None => println!("({} not offered: filtered)", t.name),
            }
        }
    }
    if r.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `mcp probe [name]`: one enabled server, or all, connected and listed.
fn probe(mcp: &McpSettings, name: Option<String>, as_json: bool) -> ExitCode {
    let names: Vec<String> = match name {
        Some(n) if !mcp.servers.contains_key(&n) => {
            eprintln!("error: no MCP server {n:?} in mcp.servers");
            return ExitCode::from(2);
        }
        Some(n) if !mcp.servers[&n].is_enabled() => {
            eprintln!("error: MCP server {n:?} is disabled (set mcp.servers.{n}.enabled to true)");
            return ExitCode::from(2);
        }
        Some(n) => vec![n],
        None => mcp
            .servers
            .iter()
            .filter(|(_, s)| s.is_enabled())
            .map(|(n, _)| n.clone())
            .collect(),
    };
    let reports = probe_all(mcp, &names);
    if as_json {
        println!("{}", json!({ "servers": reports }));
    } else if reports.is_empty() {
        println!("no enabled MCP servers to probe (mcp.servers)");
    }
    for r in reports.iter().filter(|_| !as_json) {
        match &r.error {
            Some(e) => println!("{}: FAILED: {e}", r.name),
            None => println!(
                "{}: ok, protocol {}, {} tools{}{} ({})",
                r.name,
                r.protocol,
                r.tools.len(),
                if r.resources { ", resources" } else { "" },
                if r.prompts { ", prompts" } else { "" },
                r.server_info
            ),
        }
    }
    if reports.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn probe_all(mcp: &McpSettings, names: &[String]) -> Vec<ferroclaw_actors::mcp::ProbeReport> {
    let builtin: Vec<String> = ferroclaw_actors::tool::ToolExecutor::specs()
        .into_iter()
        .map(|t| t.name)
        .collect();
    actix_rt::System::new().block_on(async {
        let mut out = Vec::new();
        for n in names {
            out.push(ferroclaw_actors::mcp::probe(mcp, n, &builtin).await);
        }
        out
    })
}
