//! What the receivers share. Webhooks (Slack's Events API, WhatsApp's
//! Cloud API): a request's new messages are recorded, then the ledger is
//! flushed, and only then is the request answered 200 and the messages
//! handed to the desk, so a platform's retry finds their keys. A failed
//! flush answers 500 (the platform retries) and keeps the messages in
//! line (`Flushes`): flushed again with backoff and handed over once
//! stored. Streams (Discord's gateway, Signal's events) record as they
//! read and hand over through the same line (`flush_waiting`).

use std::time::Duration;

use actix::prelude::*;

use super::desk::{Accepted, DeskLink};
use super::dispatch::Incoming;
use super::flushes::Flushes;
use super::messages::WebhookReply;
use crate::store::Store;

/// A webhook receiver's parts this module works with.
pub trait Receiver: Actor<Context = Context<Self>> {
    fn store(&self) -> Store;
    fn desk(&self) -> &DeskLink;
    fn flushes(&mut self) -> &mut Flushes<Incoming>;
    fn span(&self) -> &tracing::Span;
}

/// The answer to a request whose new messages (`fresh`) are recorded:
/// `ok` once the ledger is flushed (and `fresh` handed over), else 500.
pub fn durable_then<A: Receiver>(
    act: &mut A,
    fresh: Vec<Incoming>,
    ok: WebhookReply,
) -> ResponseActFuture<A, WebhookReply> {
    let store = act.store();
    Box::pin(async move { store.flush().await }.into_actor(act).map(
        move |flushed, act, ctx| match flushed {
            Ok(()) => {
                if !fresh.is_empty() {
                    act.desk().accepted.do_send(Accepted { messages: fresh });
                }
                ok
            }
            Err(e) => {
                tracing::error!(parent: act.span(), error = %e, "cannot flush the ledger: trying again");
                for inc in fresh {
                    act.flushes().push(inc);
                }
                flush_later(Duration::ZERO, ctx);
                WebhookReply {
                    status: 500,
                    body: Answer::failed().body(),
                }
            }
        },
    ))
}

/// Flushes the messages whose request failed, after `wait`, and hands
/// them over once stored.
fn flush_later<A: Receiver>(wait: Duration, ctx: &mut Context<A>) {
    ctx.run_later(wait, |act, ctx| flush_waiting(act, ctx));
}

/// Flushes the recorded messages waiting (one flush at a time), then hands
/// them over in order and flushes what came meanwhile; a failed flush
/// hands nothing over and is tried again after its backoff. For
/// connections that record as they read (Discord's gateway, Signal's
/// event stream) and for a webhook's failed flush.
pub fn flush_waiting<A: Receiver>(act: &mut A, ctx: &mut Context<A>) {
    let Some(batch) = act.flushes().start() else {
        return;
    };
    let store = act.store();
    ctx.spawn(async move { store.flush().await }.into_actor(act).map(
        move |flushed, act, ctx| {
            if let Err(e) = &flushed {
                tracing::error!(parent: act.span(), error = %e, "cannot flush the ledger: trying again");
            }
            match act.flushes().finished(batch, flushed.is_ok()) {
                Ok(batch) => {
                    act.desk().accepted.do_send(Accepted { messages: batch });
                    flush_waiting(act, ctx);
                }
                Err(wait) => flush_later(wait, ctx),
            }
        },
    ));
}

/// What a platform's webhook is answered: `{"ok":true}`; Slack's refusal
/// `{"ok":false,"error":..}`; Meta's `{"error":..}`; Slack's URL check
/// `{"challenge":..}`.
#[derive(Debug, Default, serde::Serialize)]
pub struct Answer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    challenge: Option<&'a str>,
}

impl<'a> Answer<'a> {
    pub fn ok() -> Answer<'a> {
        Answer {
            ok: Some(true),
            ..Answer::default()
        }
    }

    /// Not stored: the platform sends it again.
    pub fn failed() -> Answer<'a> {
        Answer {
            ok: Some(false),
            ..Answer::default()
        }
    }

    /// Slack's refusal.
    pub fn refused(error: &'a str) -> Answer<'a> {
        Answer {
            error: Some(error),
            ..Answer::failed()
        }
    }

    /// Meta's refusal.
    pub fn error(error: &'a str) -> Answer<'a> {
        Answer {
            error: Some(error),
            ..Answer::default()
        }
    }

    pub fn challenge(challenge: &'a str) -> Answer<'a> {
        Answer {
            challenge: Some(challenge),
            ..Answer::default()
        }
    }

    /// The body's text.
    pub fn body(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
