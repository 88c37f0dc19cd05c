//! `ferroclaw mcp probe|tools`: one connection to one configured server,
//! outside the gateway: connect (discover, else initialize), list its
//! tools with the names the agent would be offered, say what else it has,
//! close (a stdio child's process group is killed).

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use super::catalog::{McpCatalog, ToolKind};
use crate::settings::McpSettings;

/// What one server answered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    pub name: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub protocol: String,
    pub server_info: String,
    pub tools: Vec<ProbedTool>,
    pub resources: bool,
    pub prompts: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbedTool {
    /// The server's own name.
    pub name: String,
    /// The name the agent is offered (None: filtered out, or skipped).
    pub offered_as: Option<String>,
    pub description: String,
}

/// `name` as the gateway would publish its tools under it (this server's
/// place among all configured ones decides its safe name).
fn safe_name(all: &McpSettings, name: &str) -> String {
    let safe = super::names::server_names(all.servers.keys().map(String::as_str));
    all.servers
        .keys()
        .position(|k| k == name)
        .and_then(|i| safe.get(i).cloned())
        .unwrap_or_else(|| name.to_string())
}

/// Connects to `name` (as configured in `all`) and reports; never panics,
/// an unreachable server is `ok: false` with the error.
pub async fn probe(all: &McpSettings, name: &str, builtin: &[String]) -> ProbeReport {
    let mut report = ProbeReport {
        name: name.to_string(),
        ok: false,
        error: None,
        protocol: String::new(),
        server_info: String::new(),
        tools: Vec::new(),
        resources: false,
        prompts: false,
    };
    let Some(settings) = all.servers.get(name) else {
        report.error = Some(format!("no server {name:?} in mcp.servers"));
        return report;
    };
    let timeouts = settings.timeouts(&all.defaults);
    let http = reqwest::Client::new();
    let opened = super::client::open(name, settings, timeouts, None, Arc::default(), http);
    match opened.await {
        Ok((conn, tools)) => {
            report.ok = true;
            report.protocol = conn.protocol.clone();
            report.server_info = conn.server_info.clone();
            report.resources = tools.iter().any(|t| t.kind == ToolKind::ResourcesList);
            report.prompts = tools.iter().any(|t| t.kind == ToolKind::PromptsList);
            let mine = safe_name(all, name);
            let admitted: Vec<_> = tools
                .iter()
                .filter(|t| settings.tool_filter.admits(&t.name))
                .cloned()
                .collect();
            let catalog = McpCatalog::default();
            let reserved: HashSet<String> = builtin.iter().cloned().collect();
            catalog.publish(&[(name.to_string(), mine, admitted)], &reserved);
            let specs = catalog.specs();
            for t in tools {
                let offered_as = specs
                    .iter()
                    .find(|s| {
                        catalog
                            .route(&s.name)
                            .is_some_and(|r| r.tool == t.name && r.kind == t.kind)
                    })
                    .map(|s| s.name.clone());
                report.tools.push(ProbedTool {
                    name: t.name,
                    offered_as,
                    description: t.description,
                });
            }
            let stop = conn.service.cancellation_token();
            stop.cancel();
            crate::tool::kill_group(conn.pid);
        }
        Err(e) => report.error = Some(e.to_string()),
    }
    report
}
