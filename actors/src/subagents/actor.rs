//! `SessionTools`: answers `ExecuteTool` for the session tools, and `SubagentDone`.

use actix::prelude::*;

use super::*;
use crate::inbound::SessionKey;
use crate::router::RouterActor;
use crate::runs::RunRegistry;
use crate::session::{SendChat, SubagentDone};
use crate::tool::error;
use crate::tool::{ExecuteTool, ToolOutcome};

pub struct SessionTools {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    router: Addr<RouterActor>,
    runs: Addr<RunRegistry>,
    default_agent: String,
    /// `session.mainKey`: what `main` names.
    main_key: String,
    max_depth: u32,
    store: crate::store::Store,
    agents: std::sync::Arc<[super::AgentRow]>,
}

impl SessionTools {
    pub fn new(
        router: Addr<RouterActor>,
        runs: Addr<RunRegistry>,
        (default_agent, main_key): (&str, &str),
        max_depth: u32,
        store: crate::store::Store,
        agents: std::sync::Arc<[super::AgentRow]>,
    ) -> SessionTools {
        SessionTools {
            span: tracing::info_span!("session_tools"),
            router,
            runs,
            default_agent: default_agent.to_string(),
            main_key: main_key.to_string(),
            max_depth,
            store,
            agents,
        }
    }
}

impl Actor for SessionTools {
    type Context = Context<Self>;
}

/// A session tool call; `session_key` is the calling session.
impl Handler<ExecuteTool> for SessionTools {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let cx = tools::Cx {
            router: self.router.clone(),
            runs: self.runs.clone(),
            agent: self.default_agent.clone(),
            main_key: self.main_key.clone(),
            max_depth: self.max_depth,
            trust: msg.trust.clone(),
            store: self.store.clone(),
        };
        let agents = self.agents.clone();
        Box::pin(async move {
            let (caller, args) = (msg.session_key.as_str(), &msg.call.arguments);
            match msg.call.name.as_str() {
                "sessions_list" => tools::list(&cx, caller, args).await,
                "sessions_send" => tools::send(&cx, caller, args).await,
                "sessions_spawn" => tools::spawn(&cx, caller, args).await,
                "session_status" => tools::status(&cx, caller, args).await,
                "subagents" => tools::manage(&cx, caller, args).await,
                "sessions_history" => super::readers::history(&cx, caller, args).await,
                "sessions_search" => super::readers::search(&cx, caller, args).await,
                "agents_list" => super::readers::agents_list(&agents),
                other => error(format!("unknown tool: {other}")),
            }
        })
    }
}

impl Handler<SubagentDone> for SessionTools {
    type Result = ();
    fn handle(&mut self, msg: SubagentDone, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let (router, agent) = (self.router.clone(), self.default_agent.clone());
        let main_key = self.main_key.clone();
        ctx.spawn(
            async move {
                let Ok(parent) = SessionKey::canonical(&msg.parent_key, &agent, &main_key) else {
                    return;
                };
                let who = msg.label.clone().unwrap_or_else(|| msg.child_key.clone());
                let body = if msg.text.is_empty() { "(no reply)".to_string() } else { msg.text.clone() };
                let text = format!("[Sub-agent {who} finished: {}]\n{body}", msg.status);
                let mut m = SendChat::text(&text, &ulid::Ulid::generate().to_string());
                m.command_authorized = false;
                m.untrusted = msg.trust.untrusted;
                m.channels = msg.trust.channels.clone();
                if let Err(e) = crate::router::deliver(&router, parent, m).await {
                    tracing::warn!(child = %msg.child_key, error = %e, "cannot announce a sub-agent result");
                }
            }
            .into_actor(self),
        );
    }
}
