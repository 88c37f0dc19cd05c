//! How the active run's end goes on, as `SessionState::ended` decides
//! (`state/ending.rs`): a context overflow compacts and runs the turn
//! once more; a failure a retry may cure (`FailureKind::restartable`)
//! starts the run again from its last persisted step, at most
//! `runRestarts.max` times with a doubling backoff (completed tool calls
//! are in the transcript and never run again); anything else finishes it.

use actix::prelude::*;

use super::autocompact::{Compaction, Then};
use super::state::{Ending, Resumed};
use super::*;
use crate::compaction::job::Keep;

impl SessionActor {
    /// The active run ended with `event` (an end status).
    pub(super) fn run_ended(&mut self, event: RunEvent, ctx: &mut Context<Self>) {
        match self.state.ended(event, self.deps.restart) {
            Ending::NotOurs(event) => self.forward(event),
            Ending::Compact(event) => {
                self.running.run = None;
                if let RunEvent::Failed { error, .. } = &event {
                    tracing::warn!(session_key = %self.key, %error, "context overflow: compacting and running the turn again");
                }
                // The provider says the window is smaller than we thought:
                // keep only the last two user turns.
                let compaction = Compaction {
                    flush: false,
                    keep: Some(Keep::LastTwoTurns),
                    models: self.view().models(None).unwrap_or_default(),
                    system: std::sync::Arc::from(""),
                    instructions: None,
                    then: Then::Run,
                };
                if self.start_compaction(compaction, ctx).is_err() {
                    // Nothing to compact: the turn cannot be retried usefully.
                    self.state.no_room();
                    self.run_ended(event, ctx);
                }
            }
            Ending::Restart { n, wait } => {
                self.running.run = None;
                let run_id = self.state.active_id().unwrap_or_default();
                crate::metrics::Metrics::inc(&self.deps.metrics.runs_restarted);
                tracing::warn!(session_key = %self.key, %run_id, restart = n, ?wait, "run failed; restarting from its last step");
                ctx.run_later(wait, move |act, ctx| match act.state.resume(&run_id) {
                    Resumed::Go => act.spawn_run(ctx),
                    Resumed::Aborted => act.end_without_run(&run_id, None, ctx),
                    Resumed::Gone => {}
                });
            }
            Ending::Finish(event) => self.finish(event, ctx),
        }
    }
}
