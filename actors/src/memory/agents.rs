//! `Memories`: the running memory actors, one per agent, and what the
//! tools and methods need to reach them. Built by the tree at start: each
//! agent's index lives at `<state dir>/memory/<agent>.sqlite`, watching the
//! agent's workspace (its `workspace`, else the default one). An index
//! that cannot be opened leaves that agent without memory search (logged),
//! never the gateway without a start.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::prelude::*;

use super::actor::MemoryActor;
use super::index::MemoryIndex;
use super::provider::{Embedder, MemorySettings, OpenAiEmbedder};

/// One agent's memory.
#[derive(Clone)]
pub struct AgentMemory {
    pub addr: Addr<MemoryActor>,
    pub workspace: PathBuf,
    pub settings: MemorySettings,
}

/// Every agent's memory (empty when `memorySearch.enabled` is false).
#[derive(Clone, Default)]
pub struct Memories {
    agents: Arc<HashMap<String, AgentMemory>>,
    default_agent: String,
}

impl Memories {
    /// Starts a memory actor per agent (`agents`: id and workspace).
    pub fn start(
        settings: &MemorySettings,
        state_dir: &Path,
        agents: &[(String, PathBuf)],
        default_agent: &str,
    ) -> Memories {
        let mut map = HashMap::new();
        if settings.enabled {
            let dir = state_dir.join("memory");
            // Private: the index holds the memory files' text. Made so
            // whole (an index from before, its WAL) before it is opened.
            let private =
                crate::fsutil::private_dir(&dir).and_then(|()| crate::fsutil::make_private(&dir));
            if let Err(e) = private {
                tracing::error!(error = %e, "memory index folder not made: memory search is off");
            }
            for (id, workspace) in agents {
                let safe = crate::fsutil::safe_name(id);
                let index = match MemoryIndex::open(&dir.join(format!("{safe}.sqlite"))) {
                    Ok(i) => i,
                    Err(e) => {
                        tracing::error!(agent_id = %id, error = %e, "memory index not opened: no memory search for this agent");
                        continue;
                    }
                };
                let embedder: Option<Arc<dyn Embedder>> = settings
                    .remote
                    .clone()
                    .map(|r| Arc::new(OpenAiEmbedder::new(r)) as Arc<dyn Embedder>);
                let addr =
                    MemoryActor::new(workspace.clone(), settings.clone(), index, embedder).start();
                map.insert(
                    id.clone(),
                    AgentMemory {
                        addr,
                        workspace: workspace.clone(),
                        settings: settings.clone(),
                    },
                );
            }
        }
        Memories {
            agents: Arc::new(map),
            default_agent: default_agent.to_string(),
        }
    }

    /// The memory of `agent` (None: the default agent's).
    pub fn get(&self, agent: Option<&str>) -> Option<&AgentMemory> {
        self.agents.get(agent.unwrap_or(&self.default_agent))
    }

    pub fn default_agent(&self) -> &str {
        &self.default_agent
    }

    /// The agents with memory, sorted.
    pub fn agent_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.agents.keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// A search result in OpenClaw's `memory_search` shape; `cite`: each
/// snippet ends with its `Source: path#Lx-Ly` (private chats).
pub fn results_json(r: &super::SearchResult, cite: bool) -> serde_json::Value {
    let results: Vec<serde_json::Value> = r
        .hits
        .iter()
        .map(|h| {
            let citation = if h.start_line == h.end_line {
                format!("{}#L{}", h.path, h.start_line)
            } else {
                format!("{}#L{}-L{}", h.path, h.start_line, h.end_line)
            };
            let snippet = if cite {
                format!("{}\n\nSource: {citation}", h.snippet.trim_end())
            } else {
                h.snippet.clone()
            };
            let mut v = serde_json::json!({
                "path": h.path, "startLine": h.start_line, "endLine": h.end_line,
                "score": (h.score * 1000.0).round() / 1000.0, "snippet": snippet,
                "source": "memory", "corpus": "memory",
            });
            if cite {
                v["citation"] = citation.into();
            }
            v
        })
        .collect();
    let mut out = serde_json::json!({
        "results": results, "provider": r.provider, "model": r.model,
        "citations": "auto", "mode": r.mode,
    });
    if let Some(why) = &r.degraded {
        out["fallback"] = serde_json::json!({ "from": r.provider, "reason": why });
        out["warning"] =
            "Semantic memory search is unavailable (embedding provider error); only keyword matches are included."
                .into();
    }
    out
}
