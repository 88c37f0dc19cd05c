//! `BrowserActor`: one profile's browser. It starts its SSRF proxy when it
//! starts (`proxy.rs`), starts Chromium behind it when asked or on the
//! first call (`launch.rs`) and connects to its DevTools socket
//! (chromiumoxide), starts it again with backoff (1 s doubling to 60 s,
//! back to 1 s after a minute up) when it dies while wanted, stops its
//! whole process group when told or when the actor stops, and owns the
//! tabs (`tabs.rs`). Calls (`calls.rs`) run one at a time per profile.
//! New settings (`ReconfigureBrowser`) apply after the call in flight:
//! bounds at once, a new launch or policy by closing Chromium for the next
//! call to start again (and a new proxy for a new policy). A
//! gateway killed outright takes the browser with it (the child gets
//! SIGTERM on its parent's death: `crate::child`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use chromiumoxide::Browser;
use futures_util::StreamExt;

use super::launch::{launch, Launch, Launched};
use super::messages::{
    BrowserCall, BrowserExited, BrowserState, CdpClosed, Done, GetBrowserState, ReconfigureBrowser,
    RetireBrowser, StartBrowser, StopBrowser, TabEvent,
};
use super::policy::Policy;
use super::tabs::Tabs;
use super::BrowserError;

const MAX_BACKOFF_MS: u64 = 60_000;
/// How long a stopped browser has to end before its group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Where Chromium writes downloads first, in the profile directory.
const STAGING: &str = "downloads.staging";

/// What one profile's calls may do (`browser.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub action: Duration,
    pub evaluate: bool,
    pub max_response_bytes: u64,
    pub screenshot_max_bytes: u64,
    pub max_tabs: usize,
    /// The managed downloads directory (`<workspace>/downloads`).
    pub downloads: std::path::PathBuf,
    /// `browser.snapshotDefaults.mode` is `efficient`.
    pub snapshot_efficient: bool,
}

/// The running browser.
pub(super) struct Running {
    pub pid: u32,
    pub port: u16,
    pub ws_url: String,
    pub since: Instant,
    pub cdp: Arc<Browser>,
    /// Turns true when the browser's process or its DevTools socket ends,
    /// so a call in flight fails at once instead of at its deadline.
    pub gone: tokio::sync::watch::Receiver<bool>,
    pub downloads: Arc<super::downloads::Downloads>,
}

/// A browser launched and connected, its protocol reader running, its
/// downloads followed: what `adopt` keeps.
struct Connected {
    launched: Launched,
    cdp: Arc<Browser>,
    gone: Gone,
    downloads: Arc<super::downloads::Downloads>,
}

/// Marks the browser gone (its process or its socket ended), and reads it.
type Gone = (
    Arc<tokio::sync::watch::Sender<bool>>,
    tokio::sync::watch::Receiver<bool>,
);

pub struct BrowserActor {
    pub(super) profile: String,
    pub(super) launch: Launch,
    pub(super) policy: Arc<Policy>,
    pub(super) limits: Limits,
    pub(super) running: Option<Running>,
    pub(super) tabs: Tabs,
    /// Started and not stopped since: a death is answered by a restart.
    wanted: bool,
    backoff_ms: u64,
    restarts: u32,
    last_error: Option<String>,
    /// What the SSRF proxy refused or cut (read in place by calls).
    pub(super) reports: Arc<super::proxy::Reports>,
    /// The SSRF proxy the browser goes through (stops when dropped).
    proxy: Option<super::proxy::Proxy>,
    pub(super) span: tracing::Span,
}

impl BrowserActor {
    pub fn new(profile: &str, launch: Launch, policy: Arc<Policy>, limits: Limits) -> BrowserActor {
        BrowserActor {
            span: tracing::info_span!("browser", profile = %profile),
            profile: profile.to_string(),
            launch,
            policy,
            limits,
            running: None,
            tabs: Tabs::default(),
            wanted: false,
            backoff_ms: 0,
            restarts: 0,
            last_error: None,
            reports: Arc::default(),
            proxy: None,
        }
    }

    pub(super) fn state(&self) -> BrowserState {
        let r = self.running.as_ref();
        BrowserState {
            profile: self.profile.clone(),
            running: r.is_some(),
            pid: r.map(|r| r.pid),
            cdp_port: r.map(|r| r.port),
            ws_url: r.map(|r| r.ws_url.clone()),
            tabs: self.tabs.len(),
            restarts: self.restarts,
            last_error: self.last_error.clone(),
        }
    }

    /// Keeps the launched and connected browser and watches for its end.
    fn adopt(&mut self, c: Connected, ctx: &mut Context<Self>) {
        let Launched {
            mut child,
            pid,
            port,
            ws_url,
        } = c.launched;
        tracing::info!(parent: &self.span, pid, port, "browser started");
        self.running = Some(Running {
            pid,
            port,
            ws_url,
            since: Instant::now(),
            cdp: c.cdp,
            gone: c.gone.1,
            downloads: c.downloads,
        });
        self.tabs.clear();
        // Its own task, not a future of this context: a call waited for in
        // place must still learn that the browser died.
        let (me, gone) = (ctx.address(), c.gone.0);
        actix::spawn(async move {
            let status = match child.wait().await {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            };
            let _ = gone.send(true);
            me.do_send(BrowserExited { pid, status });
        });
    }

    /// Launches and connects, as a future of this actor (`restart`: a try
    /// after a death, which schedules the next one when it fails).
    pub(super) fn starting(
        &mut self,
        restart: bool,
        me: &Addr<Self>,
    ) -> ResponseActFuture<Self, Result<BrowserState, BrowserError>> {
        let l = self.launch.clone();
        let rules = super::downloads::DownloadRules {
            dir: self.limits.downloads.clone(),
            staging: l.user_data_dir.join(STAGING),
            max_bytes: self.limits.max_response_bytes,
        };
        let (policy, me) = (self.policy.clone(), me.clone());
        let started = async move {
            let b = launch(&l).await?;
            match connect(&b, l.deadline, rules, policy, me).await {
                Ok(c) => Ok(c),
                Err(e) => {
                    crate::child::stop_group(b.pid, STOP_GRACE);
                    Err(e)
                }
            }
            .map(|(cdp, gone, downloads)| Connected {
                launched: b,
                cdp,
                gone,
                downloads,
            })
        };
        Box::pin(started.into_actor(self).map(move |r, act, ctx| {
            match r {
                Ok(c) => act.adopt(c, ctx),
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
        }))
    }

    /// Starts the browser, waited for in place (`ctx.wait`): the actor
    /// takes no other message meanwhile, so two starts never race. (A
    /// handler that itself answers in place chains `starting` instead:
    /// in-place futures run last-in first.)
    fn start(
        &mut self,
        ctx: &mut Context<Self>,
        answer: Option<tokio::sync::oneshot::Sender<Result<BrowserState, BrowserError>>>,
    ) {
        let restart = answer.is_none();
        ctx.wait(self.starting(restart, &ctx.address()).map(|r, _, _| {
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
        self.tabs.clear();
        if let Some(r) = self.running.take() {
            crate::child::stop_group(r.pid, STOP_GRACE);
        }
    }

    /// The profile's SSRF proxy, under the current policy and cap (the
    /// old one, if any, stops).
    fn start_proxy(&mut self) {
        self.proxy = None;
        self.launch.proxy = None;
        let rules = super::proxy::Rules {
            policy: self.policy.clone(),
            max_response_bytes: self.limits.max_response_bytes,
            reports: self.reports.clone(),
        };
        match super::proxy::start(rules) {
            Ok(p) => {
                self.launch.proxy = Some(p.port);
                self.proxy = Some(p);
            }
            Err(e) => {
                // Without its proxy the browser is never started.
                tracing::error!(parent: &self.span, error = %e, "browser proxy: cannot listen");
                self.last_error = Some(format!("the browser's proxy cannot listen: {e}"));
            }
        }
    }

    /// The browser is wanted from now on (a call or a start asked for it).
    pub(super) fn want(&mut self) {
        self.wanted = true;
    }
}

impl Actor for BrowserActor {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.start_proxy();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stop_running();
        self.proxy = None;
    }
}

impl Handler<StartBrowser> for BrowserActor {
    type Result = ResponseFuture<Result<BrowserState, BrowserError>>;
    fn handle(&mut self, _: StartBrowser, ctx: &mut Context<Self>) -> Self::Result {
        self.want();
        if self.running.is_some() {
            let state = self.state();
            return Box::pin(async move { Ok(state) });
        }
        if self.launch.proxy.is_none() {
            let e = BrowserError::NoProxy;
            return Box::pin(async move { Err(e) });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.start(ctx, Some(tx));
        Box::pin(async move { rx.await.unwrap_or(Err(BrowserError::Stopping)) })
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

impl Handler<ReconfigureBrowser> for BrowserActor {
    type Result = ();
    fn handle(&mut self, msg: ReconfigureBrowser, _: &mut Context<Self>) {
        let proxy = !Arc::ptr_eq(&msg.policy, &self.policy)
            || msg.limits.max_response_bytes != self.limits.max_response_bytes;
        self.launch = Launch {
            proxy: self.launch.proxy,
            ..msg.launch
        };
        (self.limits, self.policy) = (msg.limits, msg.policy);
        // Chromium is told its proxy's port when it starts: a new proxy
        // needs a new Chromium.
        if msg.relaunch || proxy {
            self.stop_running();
        }
        if proxy {
            self.start_proxy();
        }
        tracing::info!(parent: &self.span, relaunch = msg.relaunch || proxy, "browser settings applied");
    }
}

impl Handler<RetireBrowser> for BrowserActor {
    type Result = ();
    fn handle(&mut self, _: RetireBrowser, ctx: &mut Context<Self>) {
        self.wanted = false;
        tracing::info!(parent: &self.span, "browser profile retired");
        ctx.stop();
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
        self.tabs.clear();
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

impl Handler<CdpClosed> for BrowserActor {
    type Result = ();
    fn handle(&mut self, msg: CdpClosed, _: &mut Context<Self>) {
        // The DevTools socket of the running browser closed: the browser is
        // ending (its exit restarts it) or wedged (stopped, so it exits).
        if self.running.as_ref().is_some_and(|r| r.pid == msg.pid) {
            tracing::warn!(parent: &self.span, "browser's DevTools connection closed");
            crate::child::stop_group(msg.pid, STOP_GRACE);
        }
    }
}

impl Handler<TabEvent> for BrowserActor {
    type Result = ();
    fn handle(&mut self, msg: TabEvent, _: &mut Context<Self>) {
        match msg {
            TabEvent::Dialog { tab, dialog } => {
                if let Some(t) = self.tabs.get_mut(tab) {
                    t.dialog = Some(dialog);
                }
            }
            TabEvent::Log { tab, log, line } => {
                if let Some(t) = self.tabs.get_mut(tab) {
                    t.log(log, line);
                }
            }
            // Told after a snapshot of that same document was taken: its
            // refs stay.
            TabEvent::Navigated { tab, loader } => {
                if let Some(t) = self
                    .tabs
                    .get_mut(tab)
                    .filter(|t| t.loader.as_ref() != Some(&loader))
                {
                    t.refs.reset();
                    t.loader = Some(loader);
                }
            }
        }
    }
}

/// Connects to a launched browser's DevTools socket, runs its protocol
/// reader (its own task: every event and answer passes through it; its
/// end marks the browser gone) and sets up its downloads before any call.
async fn connect(
    b: &Launched,
    deadline: Duration,
    rules: super::downloads::DownloadRules,
    policy: Arc<Policy>,
    me: Addr<BrowserActor>,
) -> Result<(Arc<Browser>, Gone, Arc<super::downloads::Downloads>), BrowserError> {
    let config = chromiumoxide::handler::HandlerConfig {
        request_timeout: deadline,
        ..Default::default()
    };
    let (cdp, mut handler) = Browser::connect_with_config(b.ws_url.clone(), config)
        .await
        .map_err(|e| BrowserError::Connect(e.to_string()))?;
    let (gone_tx, gone) = tokio::sync::watch::channel(false);
    let gone_tx = Arc::new(gone_tx);
    let (pid, ended) = (b.pid, gone_tx.clone());
    actix::spawn(async move {
        while handler.next().await.is_some() {}
        let _ = ended.send(true);
        me.do_send(CdpClosed { pid });
    });
    let cdp = Arc::new(cdp);
    let downloads = super::downloads::follow(cdp.clone(), rules, policy).await?;
    Ok((cdp, (gone_tx, gone), downloads))
}

/// A call answered at once with an error.
fn refused(e: BrowserError) -> ResponseActFuture<BrowserActor, Result<Done, BrowserError>> {
    Box::pin(actix::fut::ready(Err(e)))
}

/// A tool call (`calls.rs`): one at a time per profile, the browser
/// started first when it is not running.
impl Handler<BrowserCall> for BrowserActor {
    type Result = AtomicResponse<Self, Result<Done, BrowserError>>;
    fn handle(&mut self, msg: BrowserCall, ctx: &mut Context<Self>) -> Self::Result {
        let action = msg.action.to_ascii_lowercase();
        let needs_browser = !matches!(action.as_str(), "status" | "stop");
        if needs_browser && self.running.is_none() {
            self.want();
            if self.launch.proxy.is_none() {
                return AtomicResponse::new(refused(BrowserError::NoProxy));
            }
            let after = self
                .starting(false, &ctx.address())
                .then(move |started, act, ctx| match started {
                    Ok(_) => act.dispatch(&action, msg, ctx),
                    Err(e) => refused(e),
                });
            return AtomicResponse::new(Box::pin(after));
        }
        AtomicResponse::new(self.dispatch(&action, msg, ctx))
    }
}

#[cfg(test)]
#[path = "actor_tests.rs"]
mod tests;
