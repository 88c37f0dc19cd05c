//! The channels' delivery ledger in the store: the inbound half and the
//! outbound half of the delivery contract (ARCHITECTURE.md).
//!
//! Inbound: an update is recorded under its dedupe key
//! (`<channel>/<account>/<peer>/<message id>`) in the same transaction that
//! moves the account's platform cursor past it. The adapter flushes before
//! it acknowledges the update to the platform (the next poll from the new
//! cursor), so a crash either loses neither or replays an update whose key
//! is already there: `accept` says `Replay` and it is not run again.
//!
//! Outbound: every reply chunk is written to the outbox under its
//! idempotency key (`<session>/<run>/<chunk index>`) before it is sent, and
//! marked sent (with the platform's message id) after. After a crash the
//! chunks still `pending` are sent; a `sent` one never is again. A send
//! whose outcome is unknown (the request left, no answer came) is marked
//! `unknown` with the way it was resolved: `not_resent` (at most once, the
//! default: a duplicate reply is the worse harm) or `resent`.

use crate::ids::{RunId, SessionKey};
use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError, StoreWrite, Tree};

/// Where an inbound update came from, as its dedupe key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundKey<'a> {
    pub channel: &'a str,
    pub account: &'a str,
    pub peer: &'a str,
    pub message_id: &'a str,
}

impl InboundKey<'_> {
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.channel, self.account, self.peer, self.message_id
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Seen {
    at_ms: u64,
}

/// Whether an update is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Recorded now: run it (after the flush).
    New,
    /// Recorded before (a re-poll or a replay): do not run it again.
    Replay,
}

fn cursor_key(channel: &str, account: &str) -> String {
    format!("{channel}/{account}")
}

/// Records an update and, in the same transaction, moves the account's
/// cursor to `next_cursor` (never backwards). The caller flushes the store
/// before it acknowledges the update to the platform.
pub fn accept(
    store: &Store,
    key: &InboundKey<'_>,
    next_cursor: Option<i64>,
    now_ms: u64,
) -> Result<Accepted, StoreError> {
    accept_with(store, key, next_cursor, now_ms, None)
}

/// `accept`, and when the update is new, its `dispatch` record (what the
/// adapter needs to hand it to its session) in the same transaction: an
/// update accepted before a crash and not yet handed over is handed over
/// after the restart (`dispatches`).
pub fn accept_with(
    store: &Store,
    key: &InboundKey<'_>,
    next_cursor: Option<i64>,
    now_ms: u64,
    dispatch: Option<&serde_json::Value>,
) -> Result<Accepted, StoreError> {
    let k = key.key();
    let seen = store.get::<Seen>(Tree::ChannelInbound, &k)?.is_some();
    let mut writes: Vec<StoreWrite> = Vec::new();
    if !seen {
        if let Some(d) = dispatch {
            let dk = item_key(key.account, &k);
            writes.push((Tree::ChannelDispatch, dk, Some(d.clone())));
        }
        let v = serde_json::to_value(Seen { at_ms: now_ms })?;
        writes.push((Tree::ChannelInbound, k, Some(v)));
    }
    if let Some(next) = next_cursor {
        let current = cursor(store, key.channel, key.account)?;
        if current.is_none_or(|c| next > c) {
            let ck = cursor_key(key.channel, key.account);
            writes.push((Tree::ChannelCursors, ck, Some(serde_json::json!(next))));
        }
    }
    store.commit(&writes)?;
    Ok(if seen {
        Accepted::Replay
    } else {
        Accepted::New
    })
}

/// Whether an update was recorded (`InboundKey::key`).
pub fn seen(store: &Store, key: &str) -> Result<bool, StoreError> {
    Ok(store.get::<Seen>(Tree::ChannelInbound, key)?.is_some())
}

/// Moves the cursor past updates that carry nothing to run (never
/// backwards).
pub fn advance_cursor(
    store: &Store,
    channel: &str,
    account: &str,
    next: i64,
) -> Result<(), StoreError> {
    if cursor(store, channel, account)?.is_none_or(|c| next > c) {
        store.put(Tree::ChannelCursors, &cursor_key(channel, account), &next)?;
    }
    Ok(())
}

/// Updates accepted and not yet handed to their session, oldest first:
/// (dedupe key, dispatch record).
pub fn dispatches(
    store: &Store,
    account: &str,
) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
    let prefix = format!("{account}\0");
    Ok(store
        .scan::<serde_json::Value>(Tree::ChannelDispatch, &prefix)?
        .into_iter()
        .map(|(k, v)| (k.strip_prefix(&prefix).unwrap_or(&k).to_string(), v))
        .collect())
}

/// A run whose reply goes to a chat: written when the session
/// acknowledged the update, removed when every chunk of the reply is
/// settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub account: String,
    /// Whose reply it carries (stored as OpenClaw's `sessionKey` string).
    pub session_key: DeliveryOf,
    pub run_id: RunId,
    /// The platform's chat to answer in (and its thread, reply target).
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// The message it answers (its typing names it), threaded or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
    pub created_ms: u64,
    /// The run ended and every chunk of its reply is in the outbox.
    #[serde(default)]
    pub finalized: bool,
    /// The platform's word for the chat (`private`, `group`...), when the
    /// delivery answers a message (the audit's conversation kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    /// It answers a stranger (a sender who may not use commands): its
    /// reply's `MEDIA:` lines may name URLs only, never a stored file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted: bool,
    /// Why the run it carries runs: its reply, read back from the
    /// transcript after a restart, is judged by it (`run/reply.rs`).
    #[serde(default, skip_serializing_if = "is_chat")]
    pub kind: crate::run::RunKind,
    /// It answers a voice note (`tts.auto: inbound` speaks the reply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub voice_in: bool,
    /// When the message it answers was sent, and after how long a reply
    /// says how late it is (`late.rs`; None: no note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Late>,
}

/// A delivery's lateness rule (see `Delivery::late`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Late {
    pub message_ms: u64,
    pub after_ms: u64,
}

fn is_chat(kind: &crate::run::RunKind) -> bool {
    *kind == crate::run::RunKind::Chat
}

/// Whose reply a delivery carries: a session's run, or the gateway's own
/// words (`send`: an operator's `send` or `message.action`; `notice`: a
/// notice the gateway writes itself). Stored as one string: the session's
/// key, or `send` / `notice` (which no canonical key is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOf {
    Session(SessionKey),
    Send,
    Notice,
}

impl DeliveryOf {
    /// The stored string (the ledger's keys are built from it).
    pub fn as_str(&self) -> &str {
        match self {
            DeliveryOf::Session(k) => k.as_str(),
            DeliveryOf::Send => "send",
            DeliveryOf::Notice => "notice",
        }
    }

    /// The agent whose reply it is (None: the gateway's own).
    pub fn agent(&self) -> Option<&str> {
        match self {
            DeliveryOf::Session(k) => Some(k.agent_id()),
            DeliveryOf::Send | DeliveryOf::Notice => None,
        }
    }

    /// The session it answers for.
    pub fn session(&self) -> Option<&SessionKey> {
        match self {
            DeliveryOf::Session(k) => Some(k),
            DeliveryOf::Send | DeliveryOf::Notice => None,
        }
    }
}

impl Serialize for DeliveryOf {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DeliveryOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DeliveryOf, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(match s.as_ref() {
            "send" => DeliveryOf::Send,
            "notice" => DeliveryOf::Notice,
            key => DeliveryOf::Session(SessionKey::stored(key)),
        })
    }
}

/// The update `dedupe_key` was handed to its session, which answers it with
/// `delivery.run_id`: the dispatch record goes and the delivery is recorded,
/// in one transaction (a run answered by several updates keeps its first
/// delivery). `None`: the update needs no answer (dropped, a duplicate).
pub fn dispatched(
    store: &Store,
    account: &str,
    dedupe_key: &str,
    delivery: Option<&Delivery>,
) -> Result<(), StoreError> {
    let mut writes: Vec<StoreWrite> =
        vec![(Tree::ChannelDispatch, item_key(account, dedupe_key), None)];
    if let Some(d) = delivery {
        let k = item_key(account, &d.run_id);
        if store
            .get::<Delivery>(Tree::ChannelDeliveries, &k)?
            .is_none()
        {
            writes.push((Tree::ChannelDeliveries, k, Some(serde_json::to_value(d)?)));
        }
    }
    store.commit(&writes)
}

/// Records a delivery that no inbound update started (`chat.send` with
/// `deliver`); one already there for the run is kept.
pub fn add_delivery(store: &Store, d: &Delivery) -> Result<(), StoreError> {
    let k = item_key(&d.account, &d.run_id);
    if store
        .get::<Delivery>(Tree::ChannelDeliveries, &k)?
        .is_none()
    {
        store.put(Tree::ChannelDeliveries, &k, d)?;
    }
    Ok(())
}

/// The deliveries of an account not finished (resume after a restart).
pub fn deliveries(store: &Store, account: &str) -> Result<Vec<Delivery>, StoreError> {
    Ok(store
        .scan::<Delivery>(Tree::ChannelDeliveries, &format!("{account}\0"))?
        .into_iter()
        .map(|(_, d)| d)
        .collect())
}

/// One delivery, if not finished.
pub fn delivery(
    store: &Store,
    account: &str,
    run_id: &str,
) -> Result<Option<Delivery>, StoreError> {
    store.get(Tree::ChannelDeliveries, &item_key(account, run_id))
}

/// The reply's last chunks go into the outbox with the delivery marked
/// final, in one transaction (`writes` from `enqueue`).
pub fn finalize(
    store: &Store,
    d: &Delivery,
    mut writes: Vec<StoreWrite>,
) -> Result<(), StoreError> {
    let done = Delivery {
        finalized: true,
        ..d.clone()
    };
    writes.push((
        Tree::ChannelDeliveries,
        item_key(&d.account, &d.run_id),
        Some(serde_json::to_value(done)?),
    ));
    store.commit(&writes)
}

/// A delivery is finished (every chunk settled, or nothing to say).
pub fn delivered(store: &Store, account: &str, run_id: &str) -> Result<(), StoreError> {
    store.commit(&[(Tree::ChannelDeliveries, item_key(account, run_id), None)])
}

/// The cursor an account polls from next (Telegram's `offset`).
pub fn cursor(store: &Store, channel: &str, account: &str) -> Result<Option<i64>, StoreError> {
    store.get(Tree::ChannelCursors, &cursor_key(channel, account))
}

/// A platform's opaque resume point (signal-cli's last event id, Matrix's
/// `since` token): written after the records of the events it covers, so
/// the flush that makes it durable makes them durable too.
pub fn put_mark(store: &Store, channel: &str, account: &str, mark: &str) -> Result<(), StoreError> {
    store.put(Tree::ChannelCursors, &mark_key(channel, account), &mark)
}

/// The stored resume point, if any.
pub fn mark(store: &Store, channel: &str, account: &str) -> Result<Option<String>, StoreError> {
    store.get(Tree::ChannelCursors, &mark_key(channel, account))
}

fn mark_key(channel: &str, account: &str) -> String {
    format!("{channel}/{account}/mark")
}

fn conversation_key(channel: &str, account: &str, conversation: &str) -> String {
    format!("{channel}/{account}/conv/{conversation}")
}

/// The newest message id an account has taken in one conversation (Slack's
/// `ts`, Discord's snowflake): where its catch-up reads history from.
pub fn conversation_mark(
    store: &Store,
    channel: &str,
    account: &str,
    conversation: &str,
) -> Result<Option<String>, StoreError> {
    store.get(
        Tree::ChannelCursors,
        &conversation_key(channel, account, conversation),
    )
}

pub fn put_conversation_mark(
    store: &Store,
    channel: &str,
    account: &str,
    conversation: &str,
    id: &str,
) -> Result<(), StoreError> {
    let key = conversation_key(channel, account, conversation);
    store.put(Tree::ChannelCursors, &key, &id)
}

/// Every conversation an account has a mark in: (conversation, id).
pub fn conversation_marks(
    store: &Store,
    channel: &str,
    account: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let prefix = conversation_key(channel, account, "");
    Ok(store
        .scan::<String>(Tree::ChannelCursors, &prefix)?
        .into_iter()
        .map(|(k, id)| (k[prefix.len()..].to_string(), id))
        .collect())
}

/// Forgets dedupe keys recorded before `before_ms` (platforms stop
/// redelivering long before). Returns how many went.
pub fn prune_inbound(store: &Store, before_ms: u64) -> Result<usize, StoreError> {
    let old: Vec<StoreWrite> = store
        .scan::<Seen>(Tree::ChannelInbound, "")?
        .into_iter()
        .filter(|(_, s)| s.at_ms < before_ms)
        .map(|(k, _)| (Tree::ChannelInbound, k, None))
        .collect();
    store.commit(&old)?;
    Ok(old.len())
}

/// Forgets settled outbox items (sent, failed, unknown) made before
/// `before_ms`, with the index of their platform ids. An item still to send
/// stays whatever its age, and so does every item of a reply still open
/// (its settled chunks are what keep a resumed delivery from sending them
/// again). Returns how many went.
pub fn prune_outbox(store: &Store, before_ms: u64) -> Result<usize, StoreError> {
    let open: std::collections::HashSet<String> = store
        .scan::<Delivery>(Tree::ChannelDeliveries, "")?
        .into_iter()
        .map(|(_, d)| item_key(&d.account, &chunk_key(d.session_key.as_str(), &d.run_id, 0)))
        .map(|k| k.rsplit_once('/').map(|(g, _)| g.to_string()).unwrap_or(k))
        .collect();
    let mut old: Vec<StoreWrite> = Vec::new();
    for (k, item) in store.scan::<OutboxItem>(Tree::Outbox, "")? {
        let settled = !matches!(item.state, OutState::Pending | OutState::Sending { .. });
        let group = k.rsplit_once('/').map_or(k.as_str(), |(g, _)| g);
        if item.created_ms >= before_ms || !settled || open.contains(group) {
            continue;
        }
        if let OutState::Sent { message_id, .. } = &item.state {
            old.push((Tree::OutboxSent, sent_key(&item.account, message_id), None));
        }
        old.push((Tree::Outbox, k, None));
    }
    store.commit(&old)?;
    Ok(old.iter().filter(|(t, _, _)| *t == Tree::Outbox).count())
}

/// Where a chunk is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum OutState {
    Pending,
    /// The request is about to leave (written and flushed before it does):
    /// found after a restart, the chunk's outcome is unknown.
    Sending {
        at_ms: u64,
    },
    Sent {
        message_id: String,
        at_ms: u64,
    },
    /// The platform refused it (it did not land).
    Failed {
        error: String,
        at_ms: u64,
    },
    /// The request left and no answer came; `resolution` says what was done.
    Unknown {
        resolution: Resolution,
        at_ms: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Treated as delivered (at most once).
    NotResent,
    /// Sent again (at least once).
    Resent,
}

/// One reply chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub account: String,
    /// `<session>/<run>/<chunk index>`.
    pub key: String,
    /// The platform's chat (and thread) to send to.
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The platform message this chunk replaces (a streamed preview made
    /// final by an edit) instead of sending a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_of: Option<String>,
    /// A photo or document to send (an http(s) URL the platform fetches);
    /// `text` is its caption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<String>,
    pub text: String,
    /// Buttons under the text (a question's options; see `Outlet::send_buttons`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buttons: Vec<Vec<crate::questions::Button>>,
    /// `media` is audio sent as the channel's voice note (or audio file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub voice: bool,
    /// Speech to synthesise before the send (then `media` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<crate::tts::SpeechJob>,
    #[serde(flatten)]
    pub state: OutState,
    pub created_ms: u64,
    /// What the platform later said of the sent message (WhatsApp's status
    /// callbacks: `delivered`, `read`, `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
}

/// A sent message's delivery status, as the platform reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub at_ms: u64,
}

/// How far a status is along (a late `delivered` never replaces `read`).
fn rank(status: &str) -> u8 {
    match status {
        "sent" => 1,
        "delivered" => 2,
        "read" => 3,
        "failed" => 4,
        _ => 0,
    }
}

/// A reply chunk's idempotency key.
pub fn chunk_key(session: &str, run_id: &str, index: usize) -> String {
    format!("{session}/{run_id}/{index:06}")
}

fn item_key(account: &str, key: &str) -> String {
    format!("{account}\0{key}")
}

/// Where a sent chunk is found by the platform's message id
/// (`Tree::OutboxSent`, the index status callbacks read).
fn sent_key(account: &str, message_id: &str) -> String {
    format!("{account}\0{message_id}")
}

/// The writes that put chunks in the outbox as pending (committed with
/// whatever else records the reply). A chunk already there is left alone.
pub fn enqueue(store: &Store, items: &[OutboxItem]) -> Result<Vec<StoreWrite>, StoreError> {
    let mut writes = Vec::new();
    for item in items {
        let k = item_key(&item.account, &item.key);
        if store.get::<OutboxItem>(Tree::Outbox, &k)?.is_none() {
            let pending = OutboxItem {
                state: OutState::Pending,
                ..item.clone()
            };
            writes.push((Tree::Outbox, k, Some(serde_json::to_value(pending)?)));
        }
    }
    Ok(writes)
}

/// A voice item's speech is made: its audio (`media:<id>`) is what it
/// sends, after a restart too.
pub fn synthesized(
    store: &Store,
    account: &str,
    key: &str,
    media: String,
) -> Result<(), StoreError> {
    let k = item_key(account, key);
    let Some(mut item) = store.get::<OutboxItem>(Tree::Outbox, &k)? else {
        return Ok(());
    };
    item.media = Some(media);
    item.speech = None;
    store.put(Tree::Outbox, &k, &item)
}

/// Records a chunk's step: `Sending` before the request leaves, then how
/// it ended. A chunk that is sent or unknown never changes again. Returns
/// whether it changed.
pub fn settle(
    store: &Store,
    account: &str,
    key: &str,
    state: OutState,
) -> Result<bool, StoreError> {
    let k = item_key(account, key);
    let Some(mut item) = store.get::<OutboxItem>(Tree::Outbox, &k)? else {
        return Ok(false);
    };
    let open = matches!(item.state, OutState::Pending | OutState::Sending { .. });
    if !open || item.state == state {
        return Ok(false);
    }
    let index = match &state {
        OutState::Sent { message_id, .. } if !message_id.is_empty() => Some((
            Tree::OutboxSent,
            sent_key(account, message_id),
            Some(serde_json::Value::String(key.to_string())),
        )),
        _ => None,
    };
    item.state = state;
    match index {
        // Sent: the chunk and its message id's index in one transaction.
        Some(index) => {
            store.commit(&[(Tree::Outbox, k, Some(serde_json::to_value(&item)?)), index])?
        }
        None => store.put(Tree::Outbox, &k, &item)?,
    }
    Ok(true)
}

/// Records a platform's status for the chunk sent as `message_id`; a
/// status never moves back. Returns whether a chunk took it (a status of
/// a message this outbox did not send, or a stale one, changes nothing).
pub fn receipt(
    store: &Store,
    account: &str,
    message_id: &str,
    r: Receipt,
) -> Result<bool, StoreError> {
    let Some(key) = store.get::<String>(Tree::OutboxSent, &sent_key(account, message_id))? else {
        return Ok(false);
    };
    let k = item_key(account, &key);
    let Some(mut item) = store.get::<OutboxItem>(Tree::Outbox, &k)? else {
        return Ok(false);
    };
    if item
        .receipt
        .as_ref()
        .is_some_and(|old| rank(&old.status) >= rank(&r.status))
    {
        return Ok(false);
    }
    item.receipt = Some(r);
    store.put(Tree::Outbox, &k, &item)?;
    Ok(true)
}

/// What the channels still owe, gateway-wide: updates taken and not yet
/// handed to their session, runs that owe a chat a reply, and chunks
/// waiting in the outbox. All zero: nothing taken is still on its way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backlog {
    pub dispatch: usize,
    pub deliveries: usize,
    pub outbox_pending: usize,
}

pub fn backlog(store: &Store) -> Result<Backlog, StoreError> {
    Ok(Backlog {
        dispatch: store
            .scan::<serde_json::Value>(Tree::ChannelDispatch, "")?
            .len(),
        deliveries: store
            .scan::<serde_json::Value>(Tree::ChannelDeliveries, "")?
            .len(),
        outbox_pending: store
            .scan::<OutboxItem>(Tree::Outbox, "")?
            .iter()
            .filter(|(_, item)| item.state == OutState::Pending)
            .count(),
    })
}

/// The chunks of an account still to send, oldest key first (resume
/// after a restart).
pub fn pending(store: &Store, account: &str) -> Result<Vec<OutboxItem>, StoreError> {
    Ok(store
        .scan::<OutboxItem>(Tree::Outbox, &format!("{account}\0"))?
        .into_iter()
        .map(|(_, item)| item)
        .filter(|item| item.state == OutState::Pending)
        .collect())
}

/// Every chunk of one run's reply, in key order (preview first).
/// The idempotency key of a send the `message` tool makes in run `run_id`
/// (call `call_id`): a run restarted from its last step repeats the call
/// with the same id, and the outbox answers it with the first send.
pub fn tool_send_key(run_id: &str, call_id: &str) -> String {
    format!("tool:{run_id}:{call_id}")
}

/// Whether the `message` tool of run `d.run_id` sent to `d`'s own chat
/// (and thread): then the run's final text is not sent again (OpenClaw
/// suppresses it the same way).
pub fn answered_by_tool(store: &Store, d: &Delivery) -> Result<bool, StoreError> {
    let prefix = item_key(
        &d.account,
        &format!("send/{}", tool_send_key(&d.run_id, "")),
    );
    Ok(store
        .scan::<OutboxItem>(Tree::Outbox, &prefix)?
        .iter()
        .any(|(_, i)| i.target == d.target && i.thread_id == d.thread_id))
}

pub fn run_items(
    store: &Store,
    account: &str,
    session: &str,
    run_id: &str,
) -> Result<Vec<OutboxItem>, StoreError> {
    Ok(store
        .scan::<OutboxItem>(
            Tree::Outbox,
            &item_key(account, &format!("{session}/{run_id}/")),
        )?
        .into_iter()
        .map(|(_, item)| item)
        .collect())
}

/// The chunk the platform knows as `message_id`, if this outbox sent it.
pub fn sent_item(
    store: &Store,
    account: &str,
    message_id: &str,
) -> Result<Option<OutboxItem>, StoreError> {
    match store.get::<String>(Tree::OutboxSent, &sent_key(account, message_id))? {
        Some(key) => get(store, account, &key),
        None => Ok(None),
    }
}

/// One chunk as the outbox holds it.
pub fn get(store: &Store, account: &str, key: &str) -> Result<Option<OutboxItem>, StoreError> {
    store.get(Tree::Outbox, &item_key(account, key))
}
