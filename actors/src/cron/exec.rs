//! The gateway's runner of cron jobs, and the announce both cron and the
//! heartbeat use.
//!
//! - `agentTurn`: the message goes to the job's session (`cron:<id>` on
//!   the cron lane, or the named one) as a message whose id is the run id,
//!   so the session itself refuses a second copy; the run is waited for.
//! - `systemEvent`: the text joins the main session's queue of system
//!   events (durable); `wakeMode: "now"` asks the heartbeat for a turn now.
//! - `announce`: the reply (never a silent one or `HEARTBEAT_OK`) goes to
//!   the target through the channel outbox under the key `cron:<run id>`:
//!   the run is recorded `delivering` (with the reply) first, and reported
//!   `delivered` only when the platform accepted every chunk.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::job::{target_of, Target};
use super::messages::{Order, Outcome, Runner};
use super::record::{self, Phase};
use crate::channels::supervisor::ChannelSupervisor;
use crate::channels::{ChannelSendError, SendText};
use crate::inbound::SessionKey;
use crate::router::{LookupSession, RouterActor};
use crate::run::{Outcome as RunOutcome, RunKind};
use crate::runs::{wait_run, RunRegistry, Waited};
use crate::session::SendChat;
use crate::store::Store;

/// How long a cron turn may take when its job sets no timeout.
pub const DEFAULT_TURN_LIMIT: Duration = Duration::from_secs(15 * 60);
/// The longest a job's `timeoutSeconds` is taken as (a day; the agent's own
/// timeout caps the run anyway).
pub const MAX_TURN_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// A job's `timeoutSeconds` as a wait: any number (1e20, NaN, negative)
/// becomes a duration, never a panic.
fn turn_limit(seconds: Option<f64>) -> Duration {
    match seconds {
        Some(s) if s > 0.0 => Duration::try_from_secs_f64(s)
            .unwrap_or(MAX_TURN_LIMIT)
            .min(MAX_TURN_LIMIT),
        _ => DEFAULT_TURN_LIMIT,
    }
}

/// What announcing needs: the sessions (for `last`) and the channels.
#[derive(Clone)]
pub struct Announcer {
    pub store: Store,
    pub router: Addr<RouterActor>,
    pub channels: Addr<ChannelSupervisor>,
    pub default_agent: String,
    /// `session.mainKey`: the main session's name.
    pub main_key: String,
}

/// A target with `last` resolved to a chat.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub channel: String,
    pub account: Option<String>,
    pub to: String,
    pub thread_id: Option<String>,
}

/// Why an announce has nowhere to go.
#[derive(Debug, thiserror::Error)]
pub enum NoRoute {
    #[error("the delivery target has no `to`")]
    NoTo,
    #[error(transparent)]
    Key(#[from] crate::ids::SessionKeyError),
    #[error("the gateway is stopping")]
    Stopping,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("no last route: the main session has not talked on a channel yet")]
    NoLast,
}

/// How an announce went: (`delivered`, status, error).
pub type Announced = (bool, &'static str, Option<String>);

impl Announcer {
    /// `last`: the route of the agent's main session.
    pub async fn resolve(&self, agent: &str, t: &Target) -> Result<Resolved, NoRoute> {
        if !t.channel.eq_ignore_ascii_case("last") {
            return Ok(Resolved {
                channel: t.channel.to_ascii_lowercase(),
                account: t.account_id.clone(),
                to: t.to.clone().ok_or(NoRoute::NoTo)?,
                thread_id: t.thread_id.clone(),
            });
        }
        let key = SessionKey::canonical("main", agent, &self.main_key)?;
        let entry = self
            .router
            .send(LookupSession { key })
            .await
            .map_err(|_| NoRoute::Stopping)??;
        let origin = entry.and_then(|e| e.origin).ok_or(NoRoute::NoLast)?;
        Ok(Resolved {
            channel: origin.channel,
            account: t.account_id.clone().or(Some(origin.account_id)),
            to: t.to.clone().unwrap_or(origin.to),
            thread_id: t.thread_id.clone().or(origin.thread_id),
        })
    }

    /// Sends `text` once per `key` (the outbox keeps it across restarts).
    pub async fn send(&self, to: &Resolved, text: &str, key: &str) -> Announced {
        let sent = self
            .channels
            .send(SendText {
                channel: to.channel.clone(),
                account: to.account.clone(),
                to: to.to.clone(),
                thread_id: to.thread_id.clone(),
                reply_to: None,
                text: text.to_string(),
                media: Vec::new(),
                key: key.to_string(),
                buttons: Vec::new(),
                voice: false,
            })
            .await;
        match sent {
            Ok(Ok(_)) => (true, "delivered", None),
            Ok(Err(ChannelSendError::Unknown)) => (
                false,
                "unknown",
                Some(ChannelSendError::Unknown.to_string()),
            ),
            Ok(Err(e)) => (false, "not-delivered", Some(e.to_string())),
            Err(_) => (
                false,
                "not-delivered",
                Some("the channels are stopping".into()),
            ),
        }
    }
}

/// The gateway's runner.
#[derive(Clone)]
pub struct GatewayRunner {
    pub announcer: Announcer,
    pub runs: Addr<RunRegistry>,
    /// Asked for a turn now by `systemEvent` jobs with `wakeMode: "now"`.
    pub wake: Option<Recipient<super::messages::RunHeartbeat>>,
}

fn summary_of(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.chars().take(2000).collect())
}

impl GatewayRunner {
    async fn system_event(self, order: Order) -> Outcome {
        let text = order.job.payload()["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let a = &self.announcer;
        let agent = order.job.agent(&a.default_agent);
        let key = match SessionKey::canonical("main", agent, &a.main_key) {
            Ok(k) => k,
            Err(e) => return Outcome::failed(format!("invalid session: {e}")),
        };
        if let Err(e) = crate::router::queue_system_event(&a.router, key, text.clone(), false).await
        {
            return Outcome::failed(format!("cannot queue the system event: {e}"));
        }
        if order.job.wake_mode == "now" {
            if let Some(w) = &self.wake {
                w.do_send(super::messages::RunHeartbeat {
                    reason: "cron".into(),
                });
            }
        }
        Outcome {
            status: "ok".into(),
            summary: summary_of(&text),
            delivery_status: Some("not-requested".into()),
            ..Default::default()
        }
    }

    async fn agent_turn(self, order: Order) -> Outcome {
        let job = &order.job;
        let a = &self.announcer;
        let key = match job.session(&a.default_agent, &a.main_key) {
            Ok(k) => k,
            Err(e) => return Outcome::failed(format!("invalid session: {e}")),
        };
        let session_key = key.as_str().to_string();
        let with_session = |mut o: Outcome| {
            o.session_key = Some(session_key.clone());
            o
        };
        let p = &job.payload();
        let mut msg = SendChat::text(
            p["message"].as_str().unwrap_or_default(),
            &order.entry.run_id,
        );
        msg.model = p["model"].as_str().map(str::to_string);
        msg.thinking = p["thinking"].as_str().map(str::to_string);
        msg.lane = Some("cron".into());
        msg.kind = RunKind::Cron;
        msg.tools_allow = p["toolsAllow"].as_array().map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        });
        let limit = turn_limit(p["timeoutSeconds"].as_f64());
        msg.timeout = Some(limit);
        let ack = match crate::router::deliver(&a.router, key, msg).await {
            Ok(ack) => ack,
            Err(e) => return with_session(Outcome::failed(e.to_string())),
        };
        let grace = limit.saturating_add(Duration::from_secs(30));
        let result = match wait_run(&self.runs, &ack.run_id, None, grace).await {
            Waited::Ended(r) => r,
            Waited::TimedOut { .. } => {
                return with_session(Outcome::failed(format!(
                    "timed out after {}s",
                    grace.as_secs()
                )))
            }
            Waited::Busy | Waited::Down => {
                return with_session(Outcome::failed("cannot wait for the turn"))
            }
        };
        let reply = match result.outcome {
            RunOutcome::Error(e) => return with_session(Outcome::failed(e)),
            RunOutcome::Aborted(_) => {
                return with_session(Outcome::failed("the turn ended aborted"))
            }
            reply => reply,
        };
        let outcome = self.announce(order.clone(), reply).await;
        with_session(outcome)
    }

    /// The reply to the job's target, recorded `delivering` first.
    async fn announce(self, order: Order, reply: RunOutcome) -> Outcome {
        let silent = reply.to_announce().is_none();
        let reply = reply.text().to_string();
        let base = Outcome {
            status: "ok".into(),
            summary: summary_of(&reply),
            ..Default::default()
        };
        let target = match target_of(order.job.delivery().as_ref()) {
            Ok(Some(t)) => t,
            _ => {
                return Outcome {
                    delivery_status: Some("not-requested".into()),
                    ..base
                }
            }
        };
        if silent {
            return Outcome {
                delivered: Some(false),
                delivery_status: Some("not-delivered".into()),
                suppression: Some("silent reply".into()),
                ..base
            };
        }
        let mut entry = order.entry.clone();
        entry.phase = Phase::Delivering;
        entry.reply = Some(reply.clone());
        entry.target = Some(target.clone());
        let store = self.announcer.store.clone();
        if let Err(e) = record::save_run(&store, &order.key, &entry) {
            return Outcome::failed(format!("cannot record the delivery: {e}"));
        }
        if let Err(e) = store.flush().await {
            return Outcome::failed(format!("cannot record the delivery: {e}"));
        }
        self.deliver(order, reply, target, base).await
    }

    async fn deliver(self, order: Order, reply: String, target: Target, base: Outcome) -> Outcome {
        let a = &self.announcer;
        let agent = order.job.agent(&a.default_agent).to_string();
        let sent = match a.resolve(&agent, &target).await {
            Ok(to) => {
                a.send(&to, &reply, &format!("cron:{}", order.entry.run_id))
                    .await
            }
            Err(e) => (false, "not-delivered", Some(e.to_string())),
        };
        let (delivered, status, error) = sent;
        let failed = !delivered && !target.best_effort;
        Outcome {
            status: if failed { "error".into() } else { base.status },
            error: match failed {
                true => Some(format!(
                    "delivery failed: {}",
                    error.clone().unwrap_or_default()
                )),
                false => base.error,
            },
            delivered: Some(delivered),
            delivery_status: Some(status.into()),
            delivery_error: error,
            ..base
        }
    }
}

impl Runner for GatewayRunner {
    fn run(&self, order: Order) -> BoxFuture<'static, Outcome> {
        let me = self.clone();
        match order.job.payload_kind().as_str() {
            "systemEvent" => me.system_event(order).boxed(),
            _ => me.agent_turn(order).boxed(),
        }
    }

    fn redeliver(
        &self,
        order: Order,
        reply: String,
        target: Target,
    ) -> BoxFuture<'static, Outcome> {
        let me = self.clone();
        let base = Outcome {
            status: "ok".into(),
            summary: summary_of(&reply),
            ..Default::default()
        };
        async move { me.deliver(order, reply, target, base).await }.boxed()
    }
}

/// The runner as the scheduler takes it.
pub fn runner(r: GatewayRunner) -> Arc<dyn Runner> {
    Arc::new(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_timeout_a_job_names_is_a_bounded_wait() {
        for (given, want) in [
            (Some(1e20), MAX_TURN_LIMIT),
            (Some(f64::INFINITY), MAX_TURN_LIMIT),
            (Some(f64::NAN), DEFAULT_TURN_LIMIT),
            (Some(-5.0), DEFAULT_TURN_LIMIT),
            (None, DEFAULT_TURN_LIMIT),
            (Some(90.5), Duration::from_millis(90_500)),
        ] {
            assert_eq!(turn_limit(given), want, "{given:?}");
        }
        assert!(turn_limit(Some(1e20)).saturating_add(Duration::from_secs(30)) > MAX_TURN_LIMIT);
    }
}
