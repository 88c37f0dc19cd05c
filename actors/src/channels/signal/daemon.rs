//! `SignalDaemon`: the `signal-cli daemon --http` ferroclaw owns for a
//! managed-native account. The child runs in its own process group with
//! the parent-death signal set (SIGTERM when the gateway dies, even by
//! SIGKILL: it is never orphaned); it is restarted with backoff (1 s
//! doubling to 60 s, reset after a minute up) when it exits, and its group
//! is sent SIGTERM, then SIGKILL after 5 s, when the account stops. Its
//! output goes to the log at debug level.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::api::SignalRpc;
use super::config::Managed;
use super::messages::Exited;
use crate::channels::health::AccountHealth;
use crate::channels::messages::StopAccount;

const MAX_BACKOFF_MS: u64 = 60_000;

pub struct SignalDaemon {
    number: String,
    managed: Managed,
    rpc: SignalRpc,
    health: Arc<AccountHealth>,
    /// The running child's pid (its process group's id too).
    pid: Option<u32>,
    started_at: Instant,
    backoff_ms: u64,
    span: tracing::Span,
}

impl SignalDaemon {
    pub fn new(
        account_id: String,
        number: String,
        managed: Managed,
        rpc: SignalRpc,
        health: Arc<AccountHealth>,
    ) -> SignalDaemon {
        SignalDaemon {
            span: tracing::info_span!("signal_daemon", account = %account_id),
            number,
            managed,
            rpc,
            health,
            pid: None,
            started_at: Instant::now(),
            backoff_ms: 0,
        }
    }

    fn args(&self) -> Vec<String> {
        let m = &self.managed;
        let mut a = Vec::new();
        if let Some(c) = &m.config_path {
            a.extend(["--config".to_string(), c.clone()]);
        }
        a.extend(["-a".to_string(), self.number.clone(), "daemon".to_string()]);
        a.extend(["--http".to_string(), m.bind.clone()]);
        if let Some(r) = &m.receive_mode {
            a.extend(["--receive-mode".to_string(), r.clone()]);
        }
        if m.ignore_stories {
            a.push("--ignore-stories".to_string());
        }
        a
    }

    fn spawn_child(&mut self, ctx: &mut Context<Self>) {
        let mut cmd = tokio::process::Command::new(&self.managed.cli_path);
        cmd.args(self.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::child::owned(&mut cmd);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let why = format!("cannot start {}: {e}", self.managed.cli_path);
                return ctx.notify(Exited { status: why });
            }
        };
        self.pid = child.id();
        self.started_at = Instant::now();
        tracing::info!(parent: &self.span, pid = ?self.pid, bind = %self.managed.bind, "signal-cli daemon started");
        for out in [
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin>),
            child
                .stderr
                .take()
                .map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Unpin>),
        ]
        .into_iter()
        .flatten()
        {
            let span = self.span.clone();
            ctx.spawn(
                async move {
                    let mut lines = BufReader::new(out).lines();
                    while let Ok(Some(l)) = lines.next_line().await {
                        tracing::debug!(parent: &span, line = %l, "signal-cli");
                    }
                }
                .into_actor(self),
            );
        }
        ctx.spawn(
            async move {
                match child.wait().await {
                    Ok(s) => format!("signal-cli exited ({s})"),
                    Err(e) => format!("signal-cli: {e}"),
                }
            }
            .into_actor(self)
            .map(|why, _, ctx| ctx.notify(Exited { status: why })),
        );
        self.await_ready(ctx);
    }

    /// Reports a daemon that does not answer its check within
    /// `startupTimeoutMs` (it keeps running: a JVM may start slowly).
    fn await_ready(&mut self, ctx: &mut Context<Self>) {
        let rpc = self.rpc.clone();
        let limit = Duration::from_millis(self.managed.startup_timeout_ms);
        let fut = async move {
            let start = Instant::now();
            while start.elapsed() < limit {
                if rpc.check().await.is_ok() {
                    return Some(start.elapsed());
                }
                actix::clock::sleep(Duration::from_millis(100)).await;
            }
            None
        };
        ctx.spawn(fut.into_actor(self).map(move |ready, act, _| match ready {
            Some(t) => {
                tracing::info!(parent: &act.span, ms = t.as_millis() as u64, "signal-cli daemon answers")
            }
            None => {
                let why = format!("signal-cli did not answer within {} ms", limit.as_millis());
                tracing::error!(parent: &act.span, "{why}");
                act.health.error(Some(why));
            }
        }));
    }

    /// SIGTERM to the daemon's group now, SIGKILL in 5 s if it lingers.
    fn stop_child(&mut self) {
        if let Some(pid) = self.pid.take() {
            crate::child::stop_group(pid, Duration::from_secs(5));
        }
    }
}

impl Actor for SignalDaemon {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.spawn_child(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stop_child();
        tracing::info!(parent: &self.span, "signal-cli daemon stopped with its account");
    }
}

impl Handler<Exited> for SignalDaemon {
    type Result = ();
    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.pid = None;
        if self.started_at.elapsed() > Duration::from_secs(60) {
            self.backoff_ms = 0;
        }
        self.backoff_ms = (self.backoff_ms * 2).clamp(1000, MAX_BACKOFF_MS);
        tracing::warn!(parent: &self.span, why = %msg.status, restart_in_ms = self.backoff_ms, "signal-cli daemon ended: restarting");
        self.health.error(Some(msg.status));
        ctx.run_later(Duration::from_millis(self.backoff_ms), |act, ctx| {
            act.spawn_child(ctx)
        });
    }
}

impl Handler<StopAccount> for SignalDaemon {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
