//! The tool bench: the built-in tools plus whatever the MCP servers offer
//! now (`mcp::McpCatalog`), and a run's view of it (`OfferedTools`: what
//! the tool policy lets that run have, recomputed when the bench changed,
//! so a server's `tools/list_changed` reaches the run's next model call).

use std::sync::{Arc, Mutex};

use super::McpCatalog;
use crate::provider::ToolSpec;

/// Every tool there is (cheap to clone).
#[derive(Clone)]
pub struct ToolBench {
    builtin: Arc<[ToolSpec]>,
    mcp: McpCatalog,
    /// (catalog version, built-in + MCP) of the last `all`.
    joined: Arc<Mutex<(u64, Arc<[ToolSpec]>)>>,
    /// (the `all` it was made from, that without the heartbeat-only tools).
    no_heartbeat: Arc<Mutex<Option<Derived>>>,
}

/// A list made from another (the source kept to tell when it is stale).
type Derived = (Arc<[ToolSpec]>, Arc<[ToolSpec]>);

/// Tools only a heartbeat turn is offered.
pub const HEARTBEAT_ONLY: &[&str] = &["heartbeat_respond"];

impl ToolBench {
    pub fn new(builtin: Arc<[ToolSpec]>, mcp: McpCatalog) -> ToolBench {
        let joined = Arc::new(Mutex::new((u64::MAX, builtin.clone())));
        ToolBench {
            builtin,
            mcp,
            joined,
            no_heartbeat: Default::default(),
        }
    }

    /// Changes whenever the MCP or LSP tools do.
    pub fn version(&self) -> u64 {
        self.mcp.version()
    }

    pub fn mcp(&self) -> &McpCatalog {
        &self.mcp
    }

    /// Built-in tools first, then the MCP tools, then the LSP tools
    /// (shared while nothing changed).
    pub fn all(&self) -> Arc<[ToolSpec]> {
        let version = self.version();
        let mut joined = self.joined.lock().unwrap_or_else(|e| e.into_inner());
        if joined.0 != version {
            let (mcp, lsp) = (self.mcp.specs(), self.mcp.lsp_specs());
            joined.1 = if mcp.is_empty() && lsp.is_empty() {
                self.builtin.clone()
            } else {
                let more = mcp.iter().chain(lsp.iter());
                self.builtin.iter().chain(more).cloned().collect()
            };
            joined.0 = version;
        }
        joined.1.clone()
    }
}

impl ToolBench {
    /// `all` without the heartbeat-only tools, for the other turns: made
    /// once per `all` and shared.
    pub fn without_heartbeat_tools(&self, all: &Arc<[ToolSpec]>) -> Arc<[ToolSpec]> {
        if !all
            .iter()
            .any(|t| HEARTBEAT_ONLY.contains(&t.name.as_str()))
        {
            return all.clone();
        }
        let mut cache = self.no_heartbeat.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((from, made)) = cache.as_ref() {
            if Arc::ptr_eq(from, all) {
                return made.clone();
            }
        }
        let made: Arc<[ToolSpec]> = all
            .iter()
            .filter(|t| !HEARTBEAT_ONLY.contains(&t.name.as_str()))
            .cloned()
            .collect();
        *cache = Some((all.clone(), made.clone()));
        made
    }
}

impl From<Arc<[ToolSpec]>> for ToolBench {
    fn from(builtin: Arc<[ToolSpec]>) -> ToolBench {
        ToolBench::new(builtin, McpCatalog::default())
    }
}

impl From<Vec<ToolSpec>> for ToolBench {
    fn from(builtin: Vec<ToolSpec>) -> ToolBench {
        ToolBench::from(Arc::<[ToolSpec]>::from(builtin))
    }
}

/// What the policy lets one run have out of a bench.
pub type Offer = Arc<dyn Fn(&Arc<[ToolSpec]>) -> Arc<[ToolSpec]> + Send + Sync>;

/// A run's tools: fixed (tests, a run without a bench), or live (the
/// offer re-applied when the bench's version moved).
pub struct OfferedTools {
    live: Option<(ToolBench, Offer)>,
    seen: Mutex<(u64, Arc<[ToolSpec]>)>,
}

impl OfferedTools {
    pub fn fixed(tools: Arc<[ToolSpec]>) -> OfferedTools {
        OfferedTools {
            live: None,
            seen: Mutex::new((0, tools)),
        }
    }

    /// `first` is what `offer` gave for the bench as it is now.
    pub fn live(bench: ToolBench, offer: Offer, first: Arc<[ToolSpec]>) -> OfferedTools {
        let version = bench.version();
        OfferedTools {
            live: Some((bench, offer)),
            seen: Mutex::new((version, first)),
        }
    }

    /// The tools of the run's next model call.
    pub fn current(&self) -> Arc<[ToolSpec]> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((bench, offer)) = &self.live {
            let version = bench.version();
            if version != seen.0 {
                *seen = (version, offer(&bench.all()));
            }
        }
        seen.1.clone()
    }
}

impl From<Arc<[ToolSpec]>> for OfferedTools {
    fn from(tools: Arc<[ToolSpec]>) -> OfferedTools {
        OfferedTools::fixed(tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::ToolDef;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn a_run_sees_a_changed_catalog_at_its_next_call() {
        let catalog = McpCatalog::default();
        let bench = ToolBench::new(vec![spec("exec"), spec("read")].into(), catalog.clone());
        let offer: Offer = Arc::new(|all: &Arc<[ToolSpec]>| {
            all.iter().filter(|t| t.name != "read").cloned().collect()
        });
        let first = offer(&bench.all());
        let run = OfferedTools::live(bench.clone(), offer, first);
        let names = |t: Arc<[ToolSpec]>| t.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(run.current()), ["exec"]);
        catalog.publish(
            &[(
                "srv".into(),
                "srv".into(),
                vec![ToolDef {
                    name: "echo".into(),
                    description: "e".into(),
                    schema: json!({"type": "object"}),
                    kind: Default::default(),
                    read_only: false,
                }],
            )],
            &Default::default(),
        );
        assert_eq!(names(bench.all()), ["exec", "read", "srv__echo"]);
        assert_eq!(names(run.current()), ["exec", "srv__echo"]);
        assert!(
            Arc::ptr_eq(&run.current(), &run.current()),
            "shared while unchanged"
        );
    }
}
