//! `RunActor`: starts the loop on its own task inside the boundary (timeout,
//! panic, drop all end as `Failed`), and aborts it on `AbortRun`.

use crate::ids::RunId;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;
use tokio::sync::watch;
use tracing::Instrument;

use super::messages::{AbortRun, LoopEnded, RunEvent};
use super::turn::run_loop;
use super::{FailureKind, RunConfig};

pub struct RunActor {
    config: Option<RunConfig>,
    abort: watch::Sender<bool>,
}

impl RunActor {
    pub fn new(config: RunConfig) -> RunActor {
        let (abort, _) = watch::channel(false);
        RunActor {
            config: Some(config),
            abort,
        }
    }
}

impl Actor for RunActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(cfg) = self.config.take() else {
            ctx.stop();
            return;
        };
        let abort = self.abort.subscribe();
        let me = ctx.address();
        let span = tracing::info_span!(
            "run",
            run_id = %cfg.run_id,
            session_key = %cfg.session_key,
            agent_id = %cfg.agent_id,
            model = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
        );
        actix::spawn(
            async move {
                let sink = cfg.sink.clone();
                cfg.sink.do_send(RunEvent::Started {
                    run_id: cfg.run_id.clone(),
                });
                guarded(cfg, abort).await;
                drop(sink);
                me.do_send(LoopEnded);
            }
            .instrument(span),
        );
    }
}

impl Handler<AbortRun> for RunActor {
    type Result = ();
    fn handle(&mut self, _: AbortRun, _: &mut Context<Self>) {
        let _ = self.abort.send(true);
    }
}

impl Handler<LoopEnded> for RunActor {
    type Result = ();
    fn handle(&mut self, _: LoopEnded, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Tells the sink when the run's future is dropped before it ended (its
/// task was cancelled or its arbiter stopped): a run never ends silently.
struct EndGuard {
    sink: Recipient<RunEvent>,
    run_id: RunId,
    armed: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if self.armed {
            self.sink.do_send(RunEvent::Failed {
                run_id: self.run_id.clone(),
                error: "the run stopped before it finished".into(),
                kind: FailureKind::Stopped,
            });
        }
    }
}

/// The run with its boundaries: the timeout, a panic caught and turned into
/// a failure, and the guard that reports a dropped run. Sends the closing
/// event to the sink.
async fn guarded(cfg: RunConfig, abort: watch::Receiver<bool>) {
    let (sink, run_id, timeout) = (cfg.sink.clone(), cfg.run_id.clone(), cfg.timeout);
    bounded(sink, run_id, timeout, run_loop(cfg, abort)).await;
}

/// Runs `run` to its closing event and hands that to `sink`, whatever
/// happens: a timeout, a panic (caught at this boundary) or the future
/// being dropped all become a `Failed` event.
pub(super) async fn bounded(
    sink: Recipient<RunEvent>,
    run_id: RunId,
    timeout: Duration,
    run: impl std::future::Future<Output = RunEvent>,
) {
    let started = std::time::Instant::now();
    let mut guard = EndGuard {
        sink,
        run_id: run_id.clone(),
        armed: true,
    };
    let run = std::panic::AssertUnwindSafe(run).catch_unwind();
    let end = match actix::clock::timeout(timeout, run).await {
        Ok(Ok(end)) => end,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(%run_id, panic = %what, "run panicked");
            RunEvent::Failed {
                run_id,
                error: format!("internal error in the run: {what}"),
                kind: FailureKind::Panicked,
            }
        }
        Err(_) => RunEvent::Failed {
            run_id,
            error: format!("run timed out after {}s", timeout.as_secs()),
            kind: FailureKind::Timeout,
        },
    };
    guard.armed = false;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    tracing::Span::current().record("elapsed_ms", elapsed_ms);
    tracing::debug!(
        elapsed_ms,
        status = end.end_status().map(|s| s.as_str()),
        "run ended"
    );
    guard.sink.do_send(end);
}
