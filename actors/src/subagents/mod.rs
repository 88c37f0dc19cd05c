//! `SessionTools`: the tools that reach other sessions, as one actor with
//! the router's address: `sessions_list`, `sessions_send` (a message to
//! another session, optionally waiting for its reply), `sessions_spawn` (a
//! sub-agent: a new `agent:<id>:subagent:<ulid>` session on the `subagent`
//! lane with the `minimal` prompt, within `subagents.maxSpawnDepth`),
//! `session_status`, `subagents` (list, steer or kill the caller's
//! sub-agents), and the readers `sessions_history`, `sessions_search` and
//! `agents_list` (`readers.rs`). When a sub-agent's run ends, its session reports
//! `SubagentDone` here and the result is announced to the parent session
//! as a new message (a parent turn).
//!
//! Files: `actor.rs` (the actor and its handlers), `tools.rs` (one async
//! function per tool); this file holds the tool bodies' helpers.

mod actor;
mod readers;
mod tools;

use crate::inbound::SessionKey;
use crate::tool::error;
use crate::tool::ToolOutcome;

pub use actor::*;
pub use readers::AgentRow;

fn canonical(cx: &tools::Cx, raw: &str) -> Result<SessionKey, ToolOutcome> {
    SessionKey::canonical(raw, &cx.agent, &cx.main_key)
        .map_err(|e| error(format!("bad sessionKey {raw:?}: {e}")))
}
