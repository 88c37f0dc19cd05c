//! `BrowserActor`: one profile's browser. It starts Chromium when asked
//! (`launch.rs`), starts it again with backoff (1 s doubling to 60 s, back
//! to 1 s after a minute up) when it dies while wanted, stops its whole
//! process group when told or when the actor stops, and says what it is
//! doing. A gateway killed outright takes the browser with it (the child
//! gets SIGTERM on its parent's death: `crate::child`).

use std::time::{Duration, Instant};

use actix::prelude::*;

use super::launch::{launch, Launch, LaunchError, Launched};
use super::messages::{BrowserExited, BrowserState, GetBrowserState, StartBrowser, StopBrowser};

const MAX_BACKOFF_MS: u64 = 60_000;
/// How long a stopped browser has to end before its group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The running browser.
struct Running {
    pid: u32,
    port: u16,
    ws_url: String,
    since: Instant,
}

pub struct BrowserActor {
    profile: String,
    launch: Launch,
    running: Option<Running>,
    /// Started and not stopped since: a death is answered by a restart.
    wanted: bool,
    backoff_ms: u64,
    restarts: u32,
    last_error: Option<String>,
    span: tracing::Span,
}

impl BrowserActor {
    pub fn new(profile: &str, launch: Launch) -> BrowserActor {
        BrowserActor {
            span: tracing::info_span!("browser", profile = %profile),
            profile: profile.to_string(),
            launch,
            running: None,
            wanted: false,
            backoff_ms: 0,
            restarts: 0,
            last_error: None,
        }
    }

    fn state(&self) -> BrowserState {
        let r = self.running.as_ref();
        BrowserState {
            profile: self.profile.clone(),
            running: r.is_some(),
            pid: r.map(|r| r.pid),
            cdp_port: r.map(|r| r.port),
            ws_url: r.map(|r| r.ws_url.clone()),
            restarts: self.restarts,
            last_error: self.last_error.clone(),
        }
    }

    /// Keeps the launched browser and watches for its end.
    fn adopt(&mut self, b: Launched, ctx: &mut Context<Self>) {
        let Launched {
            mut child,
            pid,
            port,
            ws_url,
        } = b;
        tracing::info!(parent: &self.span, pid, port, "browser started");
        self.running = Some(Running {
            pid,
            port,
            ws_url,
            since: Instant::now(),
        });
        let ended = async move {
            match child.wait().await {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            }
        };
        ctx.spawn(
            ended
                .into_actor(self)
                .map(move |status, _, ctx| ctx.notify(BrowserExited { pid, status })),
        );
    }

    /// Starts the browser, waited for in place (`ctx.wait`): the actor
    /// takes no other message meanwhile, so two starts never race.
    fn start(
        &mut self,
        ctx: &mut Context<Self>,
        answer: Option<tokio::sync::oneshot::Sender<Result<BrowserState, LaunchError>>>,
    ) {
        let l = self.launch.clone();
        let restart = answer.is_none();
        let started = async move { launch(&l).await }
            .into_actor(self)
            .map(move |r, act, ctx| {
                match r {
                    Ok(b) => act.adopt(b, ctx),
                    Err(e) => {
                        tracing::warn!(parent: &act.span, error = %e, "browser did not start");
                        act.last_error = Some(e.to_string());
                        if restart {
                            act.restart_later(ctx);
                        }
                        return Err(e);
                    }
                }
                Ok(act.state())
            });
        ctx.wait(started.map(|r, _, _| {
            if let Some(tx) = answer {
                let _ = tx.send(r);
            }
        }));
    }

    /// Starts the browser again after the backoff, while it is wanted.
    fn restart_later(&mut self, ctx: &mut Context<Self>) {
        if !self.wanted {
            return;
        }
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        tracing::warn!(parent: &self.span, restart_in_ms = self.backoff_ms, "browser down: restarting");
        ctx.run_later(Duration::from_millis(self.backoff_ms), |act, ctx| {
            if act.wanted && act.running.is_none() {
                act.restarts += 1;
                act.start(ctx, None);
            }
        });
    }

    fn stop_running(&mut self) {
        if let Some(r) = self.running.take() {
            crate::child::stop_group(r.pid, STOP_GRACE);
        }
    }
}

impl Actor for BrowserActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stop_running();
    }
}

impl Handler<StartBrowser> for BrowserActor {
    type Result = ResponseFuture<Result<BrowserState, LaunchError>>;
    fn handle(&mut self, _: StartBrowser, ctx: &mut Context<Self>) -> Self::Result {
        self.wanted = true;
        if self.running.is_some() {
            let state = self.state();
            return Box::pin(async move { Ok(state) });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.start(ctx, Some(tx));
        Box::pin(async move { rx.await.unwrap_or(Err(LaunchError::Stopping)) })
    }
}

impl Handler<StopBrowser> for BrowserActor {
    type Result = MessageResult<StopBrowser>;
    fn handle(&mut self, _: StopBrowser, _: &mut Context<Self>) -> Self::Result {
        self.wanted = false;
        self.stop_running();
        MessageResult(self.state())
    }
}

impl Handler<GetBrowserState> for BrowserActor {
    type Result = MessageResult<GetBrowserState>;
    fn handle(&mut self, _: GetBrowserState, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.state())
    }
}

impl Handler<BrowserExited> for BrowserActor {
    type Result = ();
    fn handle(&mut self, msg: BrowserExited, ctx: &mut Context<Self>) {
        // A stopped browser's end, or one already replaced: nothing to do.
        let Some(r) = self.running.take_if(|r| r.pid == msg.pid) else {
            return;
        };
        if r.since.elapsed() > Duration::from_secs(60) {
            self.backoff_ms = 0;
        }
        // What it left of its group (renderers, the zygote) goes with it.
        crate::child::stop_group(r.pid, STOP_GRACE);
        tracing::warn!(parent: &self.span, status = %msg.status, "browser exited");
        self.last_error = Some(format!("the browser exited ({})", msg.status));
        self.restart_later(ctx);
    }
}

#[cfg(test)]
#[path = "actor_tests.rs"]
mod tests;
