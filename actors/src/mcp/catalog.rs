//! The tools servers offer: one snapshot shared by the MCP hub and the LSP
//! hub (each the only writer of its part) and every reader (sessions
//! building a run's tool list, the executor routing a call,
//! `tools.catalog`), versioned so a run sees a `tools/list_changed` (or a
//! language server configured) at its next model call without asking anyone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::provider::ToolSpec;

/// One tool a server listed, as the hub keeps it (and a lazy server's
/// cache stores it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub schema: Value,
    #[serde(default)]
    pub kind: ToolKind,
    /// The server says the tool only reads (`annotations.readOnlyHint`;
    /// the utility tools are): `approval: "auto"` runs it without asking.
    #[serde(default)]
    pub read_only: bool,
}

/// What calling a tool does on its server: `tools/call`, or one of the
/// utility tools a server that has resources or prompts gets (OpenClaw's
/// names: `resources_list`, `resources_read`, `prompts_list`, `prompts_get`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolKind {
    #[default]
    Tool,
    ResourcesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
}

/// Where an offered MCP tool name goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The server's name in `mcp.servers`.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    pub kind: ToolKind,
    pub read_only: bool,
}

#[derive(Default)]
struct Snapshot {
    specs: Arc<[ToolSpec]>,
    routes: HashMap<String, Route>,
    /// The language servers' `lsp_*` tools (the LSP hub's part).
    lsp: Arc<[ToolSpec]>,
}

/// The shared catalog (cheap to clone).
#[derive(Clone, Default)]
pub struct McpCatalog {
    inner: Arc<RwLock<Snapshot>>,
    version: Arc<AtomicU64>,
    /// Servers offered to some agents only (`mcp.servers.<name>.agents`).
    agents: Arc<RwLock<HashMap<String, Vec<String>>>>,
}

impl McpCatalog {
    /// Bumped by every publish that changed something.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn specs(&self) -> Arc<[ToolSpec]> {
        self.inner
            .read()
            .map(|s| s.specs.clone())
            .unwrap_or_else(|e| e.into_inner().specs.clone())
    }

    /// The language servers' tools.
    pub fn lsp_specs(&self) -> Arc<[ToolSpec]> {
        let snap = self.inner.read().unwrap_or_else(|e| e.into_inner());
        snap.lsp.clone()
    }

    /// The LSP hub's part: the tools of the language servers in force.
    pub fn publish_lsp(&self, specs: Vec<ToolSpec>) {
        let mut snap = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if *snap.lsp != *specs.as_slice() {
            snap.lsp = specs.into();
            self.version.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Which servers are for which agents only (the hub sets it before
    /// publishing).
    pub fn set_agents(&self, agents: HashMap<String, Vec<String>>) {
        *self.agents.write().unwrap_or_else(|e| e.into_inner()) = agents;
    }

    /// Whether the tool offered as `offered` is for `agent` (built-in tools
    /// and unrestricted servers' tools are for every agent).
    pub fn serves_agent(&self, offered: &str, agent: &str) -> bool {
        let Some(route) = self.route(offered) else {
            return true;
        };
        let agents = self.agents.read().unwrap_or_else(|e| e.into_inner());
        agents
            .get(&route.server)
            .is_none_or(|ids| ids.iter().any(|i| i == agent))
    }

    pub fn route(&self, offered: &str) -> Option<Route> {
        let snap = self.inner.read().unwrap_or_else(|e| e.into_inner());
        snap.routes.get(offered).cloned()
    }

    /// Rebuilds the offer from every ready server's tools (in config order,
    /// so names are stable), `reserved` holding the built-in tools' names.
    /// A tool whose schema is not a JSON Schema object is skipped with one
    /// line; names are made safe and unique (`names.rs`). Returns the names
    /// skipped, with why.
    pub fn publish(
        &self,
        servers: &[(String, String, Vec<ToolDef>)],
        reserved: &HashSet<String>,
    ) -> Vec<(String, String)> {
        let mut taken: HashSet<String> = reserved.iter().map(|n| n.to_ascii_lowercase()).collect();
        let mut specs = Vec::new();
        let mut routes = HashMap::new();
        let mut skipped = Vec::new();
        for (server, safe, tools) in servers {
            for t in tools {
                let Some(schema) = input_schema(&t.schema) else {
                    skipped.push((
                        format!("{server}/{}", t.name),
                        "its inputSchema is not a JSON Schema object".to_string(),
                    ));
                    continue;
                };
                let name = super::names::tool_name(safe, &t.name, &mut taken);
                routes.insert(
                    name.clone(),
                    Route {
                        server: server.clone(),
                        tool: t.name.clone(),
                        kind: t.kind,
                        read_only: t.read_only,
                    },
                );
                specs.push(ToolSpec {
                    name,
                    description: if t.description.is_empty() {
                        format!("{} (from the MCP server {server})", t.name)
                    } else {
                        t.description.clone()
                    },
                    parameters: schema,
                });
            }
        }
        let mut snap = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let changed = snap.routes != routes || *snap.specs != *specs.as_slice();
        if changed {
            snap.specs = specs.into();
            snap.routes = routes;
            self.version.fetch_add(1, Ordering::AcqRel);
        }
        skipped
    }
}

/// A tool's input schema as offered to a model: a JSON object whose `type`
/// is `object` (added when absent); None when it is not one.
fn input_schema(v: &Value) -> Option<Value> {
    let obj = v.as_object()?;
    match obj.get("type") {
        None => {
            let mut o = obj.clone();
            o.insert("type".into(), Value::String("object".into()));
            Some(Value::Object(o))
        }
        Some(Value::String(t)) if t == "object" => {
            if obj.get("properties").is_some_and(|p| !p.is_object()) {
                return None;
            }
            Some(v.clone())
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, schema: Value) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: String::new(),
            schema,
            kind: ToolKind::Tool,
            read_only: false,
        }
    }

    /// Two servers: one with a good tool and two bad schemas, one whose
    /// tool has the same name.
    fn sample() -> Vec<(String, String, Vec<ToolDef>)> {
        vec![
            (
                "a".into(),
                "a".into(),
                vec![
                    def("echo", json!({"type": "object", "properties": {}})),
                    def("bad", json!({"type": "string"})),
                    def("nil", json!(null)),
                ],
            ),
            ("b".into(), "b".into(), vec![def("echo", json!({}))]),
        ]
    }

    #[test]
    fn publishing_names_routes_and_skips_bad_schemas() {
        let c = McpCatalog::default();
        let reserved: HashSet<String> = ["exec".to_string()].into();
        let v0 = c.version();
        let skipped = c.publish(&sample(), &reserved);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        let names: Vec<String> = c.specs().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["a__echo", "b__echo"]);
        assert_eq!(c.specs()[1].parameters["type"], "object");
        assert_eq!(
            c.route("b__echo"),
            Some(Route {
                server: "b".into(),
                tool: "echo".into(),
                kind: ToolKind::Tool,
                read_only: false,
            })
        );
        assert!(c.version() > v0);
        let v1 = c.version();
        c.publish(&sample(), &reserved);
        assert_eq!(c.version(), v1, "the same tools again change nothing");
    }
}
