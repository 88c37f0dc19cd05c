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
        if let RunEvent::Failed { error, kind, .. } = event {
            let restart = self.deps.restart;
            if let Some(a) = self.active.as_mut() {
                if kind.restartable() && !a.aborted && a.restarts < restart.max {
                    a.restarts += 1;
                    a.run = None;
                    let n = a.restarts;
                    let wait = restart.backoff * 2u32.saturating_pow(n - 1);
                    let run_id = a.run_id.clone();
                    tracing::warn!(session_key = %self.key, %run_id, %error, restart = n, ?wait, "run failed; restarting from its last step");
                    ctx.run_later(wait, move |act, ctx| match act.active.as_ref() {
                        Some(a) if a.run_id == run_id && !a.aborted => act.spawn_run(ctx),
                        Some(a) if a.run_id == run_id => act.end_without_run(&run_id, None, ctx),
                        _ => {}
                    });
                    return true;
                }
            }
        }
        false
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
                let tries = self.active.as_ref().map(|a| a.restarts).unwrap_or(0);
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
