//! `WhatsAppHook`: one business number's webhook receiver (the account's
//! connection actor). The edge passes each `POST <webhookPath>` here as it
//! came (`Webhook`: `X-Hub-Signature-256` and the raw body). A body whose
//! signature does not verify gets 401. Messages are recorded in the
//! ledger under their `wamid` and flushed before the 200, so Meta's
//! retries (it retries any non-2xx, for days) are answered once; status
//! callbacks (`sent`, `delivered`, `read`, `failed`) update the outbox
//! chunk they name and are never refused; anything else is named in one
//! log line and answered 200 (a refusal would only be retried).

use std::sync::Arc;

use actix::prelude::*;

use super::api::GraphApi;
use super::config::WhatsAppAccount;
use super::envelope::{parse, Parsed, WaStatus};
use super::inbound::{record, Received};
use super::signature;
use crate::channels::desk::{ConnectionFailed, DeskLink};
use crate::channels::dispatch::Incoming;
use crate::channels::flushes::Flushes;
use crate::channels::health::AccountHealth;
use crate::channels::ledger::{self, Receipt};
use crate::channels::messages::{StopAccount, Webhook, WebhookReply};
use crate::channels::receiver;
use crate::channels::receiver::Answer;
use crate::channels::sender::Buckets;
use crate::store::Store;

fn reply(status: u16, answer: Answer) -> WebhookReply {
    WebhookReply {
        status,
        body: answer.body(),
    }
}

pub struct WhatsAppHook {
    cfg: Arc<WhatsAppAccount>,
    api: GraphApi,
    buckets: Buckets,
    store: Store,
    desk: DeskLink,
    health: Arc<AccountHealth>,
    /// The token was checked (`GET /{phone-number-id}`).
    ready: bool,
    flushes: Flushes<Incoming>,
    span: tracing::Span,
}

impl WhatsAppHook {
    pub fn new(
        cfg: Arc<WhatsAppAccount>,
        api: GraphApi,
        buckets: Buckets,
        store: Store,
        desk: DeskLink,
    ) -> WhatsAppHook {
        WhatsAppHook {
            span: tracing::info_span!("channel", channel = "whatsapp", account = %cfg.account_id),
            health: buckets.health().clone(),
            cfg,
            api,
            buckets,
            store,
            desk,
            ready: false,
            flushes: Flushes::default(),
        }
    }

    /// Checks the token against the number, retried until Meta answers.
    fn boot(&mut self, ctx: &mut Context<Self>) {
        let (api, limiter) = (self.api.clone(), self.buckets.get("messages"));
        let refused = |e: &super::api::WaError| matches!(e, super::api::WaError::Auth(..));
        let fut = crate::channels::sender::until_ready(
            self.health.clone(),
            move || {
                let (api, limiter) = (api.clone(), limiter.clone());
                async move { limiter.call(true, || api.number()).await }
            },
            refused,
        );
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(number) => {
                tracing::info!(parent: &act.span, %number, path = %act.cfg.webhook_path, "whatsapp webhook ready");
                act.ready = true;
            }
            Err(e) => {
                act.desk
                    .failed
                    .do_send(ConnectionFailed { error: format!("the access token was refused: {e}") });
                ctx.stop();
            }
        }));
    }

    /// The request's contents, or the answer that ends it here.
    fn admit(&mut self, msg: &Webhook) -> Result<Parsed, WebhookReply> {
        let sig = msg.signature.as_deref();
        if let Err(e) = signature::verify(&self.cfg.app_secret, sig, &msg.body) {
            tracing::warn!(parent: &self.span, error = %e, "whatsapp webhook refused: bad signature");
            return Err(reply(401, Answer::error(&e.to_string())));
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&msg.body) else {
            tracing::warn!(parent: &self.span, "whatsapp webhook body is not JSON");
            return Err(reply(400, Answer::error("body is not JSON")));
        };
        self.health.alive(crate::now_ms());
        let parsed = parse(&v, &self.cfg.phone_number_id);
        if !parsed.ignored.is_empty() {
            tracing::info!(parent: &self.span, ignored = ?parsed.ignored, "whatsapp webhook: left alone");
        }
        // Not ready (the token check is pending): Meta retries.
        if !parsed.messages.is_empty() && !self.ready {
            return Err(reply(503, Answer::error("starting")));
        }
        Ok(parsed)
    }

    /// Records the messages: the new ones to hand over.
    fn record(&mut self, parsed: &Parsed) -> Result<Vec<Incoming>, WebhookReply> {
        let mut fresh = Vec::new();
        for m in &parsed.messages {
            match record(&self.store, &self.cfg.account_id, m, crate::now_ms()) {
                Ok(Received::New(inc)) => fresh.push(*inc),
                Ok(Received::Replay) => {
                    self.health
                        .replays
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(parent: &self.span, wamid = %m.id, "whatsapp message delivered again: not run again");
                }
                Ok(Received::Skipped(why)) => {
                    tracing::info!(parent: &self.span, wamid = %m.id, %why, "whatsapp message skipped");
                }
                Err(e) => {
                    tracing::error!(parent: &self.span, error = %e, "cannot record a whatsapp message");
                    return Err(reply(500, Answer::error("not recorded")));
                }
            }
        }
        Ok(fresh)
    }

    /// A status callback: on the outbox chunk it names (never refused).
    fn status(&self, s: &WaStatus) {
        let error = s
            .error
            .as_ref()
            .map(|(code, title)| format!("{code}: {title}"));
        if s.status == "failed" {
            tracing::warn!(parent: &self.span, wamid = %s.id, error = error.as_deref().unwrap_or(""),
                "whatsapp says a sent message failed");
        }
        let r = Receipt {
            status: s.status.clone(),
            error,
            at_ms: crate::now_ms(),
        };
        if let Err(e) = ledger::receipt(&self.store, &self.cfg.account_id, &s.id, r) {
            tracing::warn!(parent: &self.span, error = %e, "whatsapp status not recorded");
        }
    }
}

impl Actor for WhatsAppHook {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.boot(ctx);
    }
}

impl Handler<Webhook> for WhatsAppHook {
    type Result = ResponseActFuture<Self, WebhookReply>;
    fn handle(&mut self, msg: Webhook, _: &mut Context<Self>) -> Self::Result {
        let recorded = self.admit(&msg).and_then(|p| {
            p.statuses.iter().for_each(|s| self.status(s));
            self.record(&p)
        });
        let fresh = match recorded {
            Ok(f) => f,
            Err(reply) => return Box::pin(fut::ready(reply)),
        };
        // Durable before the 200: a retry finds the key.
        receiver::durable_then(self, fresh, reply(200, Answer::ok()))
    }
}

impl receiver::Receiver for WhatsAppHook {
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

impl Handler<StopAccount> for WhatsAppHook {
    type Result = ();
    fn handle(&mut self, _: StopAccount, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
