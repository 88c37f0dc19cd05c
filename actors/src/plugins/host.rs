//! `PluginHost`: holds the applied `PluginSet` and hands each part of it
//! to its owner: skill roots and tool env to the agent context, MCP
//! servers (merged under the config's) to the `McpHub`, the hook table to
//! the `HookHub`, LSP servers to the `LspHub`. The root sends it every
//! config change; the edge sends it installs. Reads run on the blocking
//! pool; the host takes no other message meanwhile, so sets apply in order.

use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;

use super::messages::{ApplyPlugins, CurrentPlugins};
use super::PluginSet;
use crate::hooks::{HookClient, SetHookTable};
use crate::settings::Settings;

/// What applying a set reaches.
pub struct PluginTargets {
    pub context: Arc<crate::context::AgentContext>,
    pub mcp: Addr<crate::mcp::McpHub>,
    pub hooks: HookClient,
    pub lsp: Addr<crate::lsp::LspHub>,
}

pub struct PluginHost {
    state_dir: PathBuf,
    current: Arc<PluginSet>,
    targets: PluginTargets,
    span: tracing::Span,
}

impl Actor for PluginHost {
    type Context = Context<Self>;
}

impl PluginHost {
    /// A host whose set `current` was applied at start.
    pub fn new(state_dir: PathBuf, current: Arc<PluginSet>, targets: PluginTargets) -> PluginHost {
        PluginHost {
            state_dir,
            current,
            targets,
            span: tracing::info_span!("plugins"),
        }
    }

    fn apply(&mut self, set: Arc<PluginSet>, settings: &Settings) {
        let t = &self.targets;
        t.context
            .set_plugin_skills(set.skill_roots(), set.tool_env());
        t.mcp.do_send(crate::mcp::McpReconfigure {
            settings: set.merged_mcp(&settings.mcp),
        });
        if let Some(hub) = t.hooks.hub() {
            let table = set.hook_table(&settings.hooks, &settings.plugins);
            hub.do_send(SetHookTable {
                table: Arc::new(table),
            });
        }
        t.lsp.do_send(crate::lsp::LspReconfigure {
            servers: set.lsp_servers(&settings.tools.lsp.servers),
        });
        let on = set.plugins.iter().filter(|p| p.enabled).count();
        tracing::info!(
            installed = set.plugins.len(),
            enabled = on,
            "plugins applied"
        );
        self.current = set;
    }
}

impl Handler<ApplyPlugins> for PluginHost {
    type Result = ResponseActFuture<Self, Arc<PluginSet>>;
    fn handle(&mut self, msg: ApplyPlugins, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (dir, settings) = (self.state_dir.clone(), msg.settings);
        let plugins = settings.plugins.clone();
        let read = tokio::task::spawn_blocking(move || PluginSet::load(&dir, &plugins));
        // Waited for: the next change applies after this one.
        let (tx, rx) = tokio::sync::oneshot::channel();
        ctx.wait(read.into_actor(self).map(move |set, act, _| {
            let mut set = set.unwrap_or_default();
            set.generation = act.current.generation + 1;
            let set = Arc::new(set);
            act.apply(set.clone(), &settings);
            let _ = tx.send(set);
        }));
        Box::pin(async move { rx.await.unwrap_or_default() }.into_actor(self))
    }
}

impl Handler<CurrentPlugins> for PluginHost {
    type Result = MessageResult<CurrentPlugins>;
    fn handle(&mut self, _: CurrentPlugins, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.current.clone())
    }
}
