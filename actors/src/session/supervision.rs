//! Supervision of the session's run: a run that failed in a way a retry
//! may cure (`FailureKind::restartable`) is started again from its last
//! persisted step, at most `runRestarts.max` times with a doubling backoff;
//! when the session gives up, the error says how many tries it took.

use actix::prelude::*;

use super::*;

impl SessionActor {
    /// Restarts the active run if `event` is its restartable failure and
    /// tries remain. Reply: whether it did (the event is then not an end).
    pub(super) fn restart_if_transient(
        &mut self,
        event: &RunEvent,
        ctx: &mut Context<Self>,
    ) -> bool {
        let Some((n, wait)) = self.state.restart(event, self.deps.restart) else {
            return false;
        };
        self.run = None;
        let run_id = run_id_of(event).unwrap_or_default().to_string();
        if let RunEvent::Failed { error, .. } = event {
            tracing::warn!(session_key = %self.key, %run_id, %error, restart = n, ?wait, "run failed; restarting from its last step");
        }
        ctx.run_later(wait, move |act, ctx| match act.state.run(&run_id) {
            Some(a) if !a.aborted => act.spawn_run(ctx),
            Some(_) => act.end_without_run(&run_id, None, ctx),
            None => {}
        });
        true
    }

    /// A failed run's error, saying how many tries it took when it was
    /// restarted.
    pub(super) fn with_tries(&self, event: RunEvent) -> RunEvent {
        match event {
            RunEvent::Failed {
                run_id,
                error,
                kind,
            } => {
                let tries = self.state.active().map(|a| a.restarts).unwrap_or(0);
                let error = match tries {
                    0 => error,
                    n => format!("{error} (gave up after {} tries)", n + 1),
                };
                RunEvent::Failed {
                    run_id,
                    error,
                    kind,
                }
            }
            other => other,
        }
    }
}
