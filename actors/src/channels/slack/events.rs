//! `SlackEvents`: one Slack app's Events API receiver (HTTP mode; the
//! account's connection actor). The edge passes each `POST <webhookPath>`
//! here as it came (`Webhook`: the signature headers and the raw
//! body). A request whose signature does not verify (forged, stale,
//! missing) gets 401; `url_verification` gets its challenge; a message is
//! recorded in the ledger and flushed before the 200, so Slack's retries
//! (`X-Slack-Retry-Num`) find the key and are answered once.

use crate::channels::messages::{Webhook, WebhookReply};
use std::sync::Arc;

use actix::prelude::*;

use super::api::{BotIdentity, WebApi};
use super::config::SlackAccount;
use super::envelope::{parse_callback, Callback, SlackMessage};
use super::inbound::{record, Received};
use super::signature;
use crate::channels::desk::{ConnectionFailed, DeskLink};
use crate::channels::dispatch::Incoming;
use crate::channels::flushes::Flushes;
use crate::channels::health::AccountHealth;
use crate::channels::messages::StopAccount;
use crate::channels::receiver;
use crate::channels::receiver::Answer;
use crate::channels::sender::Buckets;
use crate::store::Store;

/// A reply with a JSON body.
fn reply(status: u16, answer: Answer) -> WebhookReply {
    WebhookReply {
        status,
        body: answer.body(),
    }
}

pub struct SlackEvents {
    cfg: Arc<SlackAccount>,
    api: WebApi,
    buckets: Buckets,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    bot: Option<BotIdentity>,
    /// Messages whose flush failed (their request got a 500): flushed
    /// again with backoff and handed over once stored, while Slack's retry
    /// finds their key.
    flushes: Flushes<Incoming>,
    span: tracing::Span,
}

impl SlackEvents {
    pub fn new(
        cfg: Arc<SlackAccount>,
        api: WebApi,
        buckets: Buckets,
        store: Store,
        desk: DeskLink,
    ) -> SlackEvents {
        SlackEvents {
            span: tracing::info_span!("channel", channel = "slack", account = %cfg.account_id),
            health: buckets.health().clone(),
            cfg,
            api,
            buckets,
            store,
            desk,
            bot: None,
            flushes: Flushes::default(),
        }
    }

    fn boot(&mut self, ctx: &mut Context<Self>) {
        let fut = super::who_am_i(self.api.clone(), self.buckets.clone());
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(bot) => {
                tracing::info!(parent: &act.span, bot = %bot.user_id, path = %act.cfg.webhook_path, "slack events endpoint ready");
                // What was said while the app was stopped (`catch_up.rs`).
                let (api, store) = (act.api.clone(), act.store.clone());
                let read = super::catch_up::read(api, store, act.cfg.account_id.clone(), bot.clone());
                ctx.spawn(read.into_actor(act).map(|fresh, act, _| {
                    if !fresh.is_empty() {
                        act.desk.accepted.do_send(crate::channels::messages::Accepted { messages: fresh });
                    }
                }));
                act.bot = Some(bot);
            }
            Err(e) => {
                act.desk.failed.do_send(ConnectionFailed {
                    error: e.to_string(),
                });
                ctx.stop();
            }
        }));
    }
}

impl Actor for SlackEvents {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
    }
}

impl SlackEvents {
    /// The request's message, or the answer that ends it here (a bad
    /// signature, a body that is not JSON, the challenge, an event that is
    /// not a message, not ready yet).
    fn admit(&mut self, msg: &Webhook) -> Result<SlackMessage, WebhookReply> {
        let secret = self.cfg.signing_secret.as_deref().unwrap_or_default();
        let now_s = crate::now_ms() / 1000;
        let (ts, sig) = (msg.timestamp.as_deref(), msg.signature.as_deref());
        if let Err(e) = signature::verify(secret, ts, sig, &msg.body, now_s) {
            tracing::warn!(parent: &self.span, error = %e, "slack request refused: bad signature");
            return Err(reply(401, Answer::refused(&e.to_string())));
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&msg.body) else {
            tracing::warn!(parent: &self.span, "slack request body is not JSON");
            return Err(reply(400, Answer::refused("body is not JSON")));
        };
        self.health.alive(crate::now_ms());
        match parse_callback(&v) {
            Callback::UrlVerification { challenge } => {
                Err(reply(200, Answer::challenge(&challenge)))
            }
            Callback::Ignored { kind } => {
                tracing::debug!(parent: &self.span, %kind, "slack event not handled");
                Err(reply(200, Answer::ok()))
            }
            // Not ready (auth.test pending): Slack retries.
            Callback::Message(_) if self.bot.is_none() => {
                Err(reply(503, Answer::refused("starting")))
            }
            Callback::Message(m) => Ok(*m),
        }
    }

    /// Records the message: the new one to hand over, if it is new.
    fn record(
        &mut self,
        msg: &Webhook,
        m: &SlackMessage,
    ) -> Result<Option<Incoming>, WebhookReply> {
        let bot = self.bot.clone().unwrap_or_default();
        let got = record(&self.store, &self.cfg.account_id, &bot, m, crate::now_ms());
        match got {
            Ok(Received::New(inc)) => Ok(Some(*inc)),
            Ok(Received::Replay) => {
                self.health
                    .replays
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::info!(parent: &self.span, retry = msg.retry_num.as_deref().unwrap_or("0"),
                    channel_id = %m.channel, ts = %m.ts, "slack event delivered again: not run again");
                Ok(None)
            }
            Ok(Received::Skipped(_)) => Ok(None),
            Err(e) => {
                tracing::error!(parent: &self.span, error = %e, "cannot record a slack message");
                Err(reply(500, Answer::refused("not recorded")))
            }
        }
    }
}

impl Handler<Webhook> for SlackEvents {
    type Result = ResponseActFuture<Self, WebhookReply>;
    fn handle(&mut self, msg: Webhook, _: &mut Context<Self>) -> Self::Result {
        let fresh = match self.admit(&msg).and_then(|m| self.record(&msg, &m)) {
            Ok(f) => f,
            Err(reply) => return Box::pin(fut::ready(reply)),
        };
        // Durable before the 200: a retry finds the key.
        let fresh = fresh.into_iter().collect();
        receiver::durable_then(self, fresh, reply(200, Answer::ok()))
    }
}

impl receiver::Receiver for SlackEvents {
    fn store(&self) -> Store {
        self.store.clone()
    }
    fn desk(&self) -> &DeskLink {
        &self.desk
    }
    fn flushes(&mut self) -> &mut Flushes<Incoming> {
        &mut self.flushes
    }
    fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl Handler<StopAccount> for SlackEvents {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
