//! The inbound pipeline's second half, shared by every adapter: an
//! accepted message (`Incoming`, stored as the ledger's dispatch record)
//! goes through the channel's access rules, is finalised (`inbound::finalize`),
//! routed (`routing::Router`: agent and session key), and handed to its
//! session with a message id made from its dedupe key, so a message handed
//! over twice (a restart between the hand-over and its record) is a
//! duplicate the session recognises. The session's ack names the run that
//! answers it; that run becomes the account's `Delivery`, recorded in the
//! transaction that removes the dispatch record. On the way: the
//! `message_received` hooks (`hooks.rs`), the
//! session's reset policy (a stale session is reset first), the model for
//! the channel (`modelOverride`, `channels.modelByChannel`), and the send
//! policy (`/send off`, `session.sendPolicy`: the reply stays in the
//! session).

use std::sync::Arc;

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use super::ledger::{self, Delivery};
use crate::inbound::finalize::{finalize, RawInbound};
use crate::inbound::SessionKey;
use crate::provider::Image;
use crate::router::RouterActor;
pub use crate::routing::reset::Stale;
use crate::routing::reset::{self, ResetType};
use crate::routing::{Peer, PeerKind, RouteInput, Router};
use crate::session::{Origin, SendChat, SendStatus};
use crate::store::{Store, StoreError};

/// One accepted platform message, in neutral terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incoming {
    pub channel: String,
    pub account: String,
    /// The ledger's dedupe key.
    pub dedupe_key: String,
    /// Where the answer goes (the chat).
    pub chat_id: String,
    /// The platform's chat type word (`private`, `group`, `supergroup`...).
    pub chat_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub sender: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    pub message_id: String,
    pub text: String,
    /// The bot was mentioned or replied to (groups).
    #[serde(default)]
    pub mentioned: bool,
    /// Attachments, as the adapter names them (file ids, with a type).
    #[serde(default)]
    pub media: Vec<MediaRef>,
    /// For routing: Slack's team (`binding.team`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    /// For routing: Discord's guild and the sender's roles in it
    /// (`binding.guild`, `binding.guild+roles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guild_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub member_roles: Vec<String>,
    /// For routing: the conversation a thread belongs to, when the thread
    /// is a conversation of its own (a Discord thread channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Dedupe keys of messages debounced into this one (their dispatch
    /// records go with it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
    pub ts_ms: u64,
    /// A button pressed under a question (`ask_user`): the question it
    /// answers; `text` is the option's number. Never a turn of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

/// An attachment not yet fetched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Where the platform serves it (Slack's `url_private_download`, a
    /// Discord CDN URL), when the id alone does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Incoming {
    pub fn is_group(&self) -> bool {
        !matches!(
            crate::inbound::finalize::chat_type(&self.chat_type, false),
            crate::inbound::msg_context::ChatType::Direct
        )
    }

    /// The id the session knows the message by.
    pub fn session_message_id(&self) -> String {
        format!("{}:{}", self.channel, self.dedupe_key)
    }
}

/// What recording a platform event did.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// New: hand it over (after the flush).
    New(Box<Incoming>),
    /// Seen before: answered once already.
    Replay,
    /// Not a message to answer (the bot's own, an empty one).
    Skipped(&'static str),
}

/// Records a message under its dedupe key with its dispatch record (not
/// flushed: the caller flushes before it acknowledges or hands it over).
/// For adapters without a platform cursor (Slack, Discord).
pub fn record_incoming(
    store: &Store,
    inc: Result<Incoming, &'static str>,
    now_ms: u64,
) -> Result<Received, StoreError> {
    let inc = match inc {
        Ok(i) => i,
        Err(why) => return Ok(Received::Skipped(why)),
    };
    let key = ledger::InboundKey {
        channel: &inc.channel,
        account: &inc.account,
        peer: &inc.chat_id,
        message_id: &inc.message_id,
    };
    let value = serde_json::to_value(&inc)?;
    Ok(
        match ledger::accept_with(store, &key, None, now_ms, Some(&value))? {
            ledger::Accepted::New => Received::New(Box::new(inc)),
            ledger::Accepted::Replay => Received::Replay,
        },
    )
}

/// What dispatching needs; cloned into each hand-over.
#[derive(Clone)]
pub struct DispatchDeps {
    pub store: Store,
    pub sessions: Addr<RouterActor>,
    pub default_agent: String,
    pub main_key: String,
    /// Where attachments are kept and understood (None: not kept).
    pub media: Option<Addr<crate::media::MediaStore>>,
    /// Pending questions a reply may answer (None: none are asked).
    pub questions: Option<Addr<crate::questions::QuestionsActor>>,
    /// Command hooks (`message_received` here, the others in delivery).
    pub hooks: crate::hooks::HookClient,
    /// Spoken replies (None: text only).
    pub speech: Option<Addr<crate::tts::Speaker>>,
}

/// What a message's attachments became (`media::take`).
pub use crate::media::{Heard, Taken};

/// The settings a hand-over reads besides routing.
#[derive(Debug, Clone)]
#[cfg_attr(test, derive(Default))]
pub struct Policies {
    /// `session`: reset policies, `sendPolicy`.
    pub session: crate::settings::SessionSettings,
    /// `channels.modelByChannel`.
    pub model_by_channel: std::collections::BTreeMap<String, String>,
    /// The `message_received` hooks.
    pub received: super::hooks::InboundHooks,
    /// `tools.media`: how attachments are understood.
    pub media: Arc<crate::media::MediaConfig>,
    /// `messages.lateReplyNoticeMinutes`, in ms (None: off).
    pub late_reply_ms: Option<u64>,
}

impl Policies {
    /// From the settings, with the environment `main.rs` reads (`env`:
    /// media's provider keys and `PATH`).
    pub fn from_settings(
        s: &crate::settings::Settings,
        env: &crate::provider::hub::EnvReader,
    ) -> Policies {
        let model_by_channel = s
            .channels
            .get("modelByChannel")
            .map(|c| {
                c.other
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|m| (k.clone(), m.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let received = super::hooks::InboundHooks::from_settings(&s.hooks).unwrap_or_else(|e| {
            // Checked at start (`channels::plan`); a bad live change keeps none.
            tracing::error!(error = %e, "message_received hook not configured");
            super::hooks::InboundHooks::default()
        });
        Policies {
            session: s.session.clone(),
            model_by_channel,
            received,
            media: Arc::new(crate::media::MediaConfig::from_settings(s, env)),
            late_reply_ms: match s.messages.late_reply_notice_minutes {
                0 => None,
                m => Some(m.saturating_mul(60_000)),
            },
        }
    }
}

/// Whether a session's replies may go to its chat: the session's own
/// `/send on|off` first, then `session.sendPolicy` rules (first match:
/// `channel`, `chatType`, `keyPrefix`), then its `default` (allow).
pub fn send_allowed(
    entry_policy: Option<&str>,
    session: &crate::settings::SessionSettings,
    channel: &str,
    chat_type: &str,
    key: &str,
) -> bool {
    match entry_policy {
        Some("allow") => return true,
        Some("deny") => return false,
        _ => {}
    }
    let sp = &session.send_policy;
    let hit = |m: &crate::settings::SendMatch| {
        m.channel
            .as_ref()
            .is_none_or(|c| c.eq_ignore_ascii_case(channel))
            && m.chat_type.as_ref().is_none_or(|t| t == chat_type)
            && m.key_prefix.as_ref().is_none_or(|p| key.starts_with(p))
    };
    let rule = sp.rules.iter().find(|r| r.matches.as_ref().is_none_or(hit));
    rule.map_or(sp.default, |r| r.action) == crate::settings::AllowDeny::Allow
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Session(crate::router::DeliverError),
    #[error("invalid session key: {0}")]
    Key(crate::ids::SessionKeyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the gateway is stopping")]
    Down,
}

/// Hands an allowed message to its session. `commands`: the sender may
/// use directives; `images`, `note`: fetched attachments and what could not
/// be fetched. Reply: the delivery to run (None when the session dropped
/// the message).
pub async fn hand_over(
    deps: &DispatchDeps,
    msg: &Incoming,
    commands: bool,
    taken: Taken,
    (routed, model): (Routed, Option<String>),
) -> Result<Option<Delivery>, DispatchError> {
    let inbound = finalized(msg, commands, &taken);
    let taken_heard = taken.heard.is_some();
    let (images, note, media) = (taken.images, taken.note, taken.media);
    let Routed {
        route,
        key,
        policies,
    } = routed;
    if answers_a_question(deps, msg, commands, &key).await {
        return Ok(None);
    }
    let seen = received(msg, &inbound, &key, &route);
    policies.received.received(&seen);
    notify_received(&deps.hooks, &seen, !inbound.ctx.command_authorized);
    let model = model.or_else(|| policies.model_by_channel.get(&msg.channel).cloned());
    let mut send = send_chat(msg, &inbound, &route, note, images, model);
    send.media = media;
    // A spoken command: parsed from the transcript (OpenClaw's CommandBody).
    send.commands = taken_heard.then(|| inbound.ctx.body_for_commands.clone());
    send.fresh = Some(reset_policy(&policies, msg));
    let ack = match crate::router::deliver(&deps.sessions, key.clone(), send).await {
        Ok(ack) => ack,
        Err(crate::router::DeliverError::Down) => return Err(DispatchError::Down),
        Err(e) => return Err(DispatchError::Session(e)),
    };
    tracing::info!(
        channel = %msg.channel,
        account = %msg.account,
        session_key = %key.as_str(),
        run_id = %ack.run_id,
        matched_by = route.matched_by.as_str(),
        status = ?ack.status,
        "channel message handed to its session"
    );
    if ack.status == SendStatus::Dropped {
        return Ok(None);
    }
    let (policy, chat_type) = (ack.send_policy.as_deref(), inbound.ctx.chat_type.as_str());
    if !send_allowed(policy, &policies.session, &msg.channel, chat_type, &key) {
        tracing::info!(session_key = %key.as_str(), "reply kept in the session: its send policy denies the chat");
        return Ok(None);
    }
    let untrusted = !inbound.ctx.command_authorized;
    let mut d = delivery_of(msg, &key, ack.run_id, untrusted);
    // Its age is judged when it is delivered (`late.rs`).
    d.late = policies.late_reply_ms.map(|after_ms| super::ledger::Late {
        message_ms: msg.ts_ms,
        after_ms,
    });
    Ok(Some(d))
}

/// Whether the message answered its session's pending question (a reply
/// in the question's chat from a sender who may answer it, or a button
/// press): then it is not a turn.
async fn answers_a_question(
    deps: &DispatchDeps,
    msg: &Incoming,
    authorized: bool,
    key: &SessionKey,
) -> bool {
    let Some(questions) = &deps.questions else {
        return msg.question.is_some();
    };
    let reply = crate::questions::ReplyInChat {
        chat: crate::tool::Route {
            channel: msg.channel.clone(),
            account_id: msg.account.clone(),
            to: msg.chat_id.clone(),
            thread_id: msg.thread_id.clone(),
        },
        session_key: key.as_str().to_string(),
        authorized,
        by: format!("{}:{}", msg.channel, msg.sender),
        text: msg.text.clone(),
        question: msg.question.clone(),
    };
    match questions.send(reply).await {
        Ok(None) => msg.question.is_some(),
        Ok(Some(Ok(_))) => {
            tracing::info!(channel = %msg.channel, session_key = %key.as_str(), "a reply answered the session's question");
            true
        }
        Ok(Some(Err(e))) => {
            tracing::info!(channel = %msg.channel, error = %e, "a reply for a question that takes no answer: dropped");
            true
        }
        Err(_) => msg.question.is_some(),
    }
}

/// The reply's delivery: to the chat the message came from (in a group,
/// as a reply to it).
fn delivery_of(
    msg: &Incoming,
    key: &SessionKey,
    run_id: crate::ids::RunId,
    untrusted: bool,
) -> Delivery {
    Delivery {
        account: msg.account.clone(),
        session_key: super::ledger::DeliveryOf::Session(key.clone()),
        run_id,
        target: msg.chat_id.clone(),
        thread_id: msg.thread_id.clone(),
        reply_to: msg.is_group().then(|| msg.message_id.clone()),
        answers: Some(msg.message_id.clone()),
        created_ms: crate::now_ms(),
        finalized: false,
        chat_type: Some(msg.chat_type.clone()),
        untrusted,
        // A channel message's run is a chat.
        kind: crate::run::RunKind::Chat,
        voice_in: msg.media.iter().any(|m| {
            m.mime_type
                .as_deref()
                .is_some_and(|t| t.starts_with("audio/"))
        }),
        late: None,
    }
}

/// The audit's conversation kind of a platform chat type word.
pub fn conversation(chat_type: Option<&str>) -> crate::audit::Conversation {
    use crate::audit::Conversation;
    use crate::inbound::msg_context::ChatType;
    match chat_type.map(|w| crate::inbound::finalize::chat_type(w, false)) {
        Some(ChatType::Direct) => Conversation::Direct,
        Some(ChatType::Group) => Conversation::Group,
        Some(ChatType::Channel) => Conversation::Channel,
        None => Conversation::Unknown,
    }
}

/// What the session is sent: the agent's text, the sender's standing (a
/// sender the channel's allowlist does not name is not an operator) and
/// where the reply goes.
fn send_chat(
    msg: &Incoming,
    inbound: &crate::inbound::finalize::Inbound,
    route: &crate::routing::Route,
    note: Option<String>,
    images: Vec<Image>,
    model: Option<String>,
) -> SendChat {
    let shown = note.is_some().then(|| agent_text(msg, inbound, None));
    let mut send = SendChat::text(&agent_text(msg, inbound, note), &msg.session_message_id());
    send.shown = shown;
    send.model = model;
    send.images = images;
    send.command_authorized = inbound.ctx.command_authorized;
    send.untrusted = !inbound.ctx.command_authorized;
    send.origin = Some(Origin {
        channel: msg.channel.clone(),
        account_id: msg.account.clone(),
        to: msg.chat_id.clone(),
        thread_id: msg.thread_id.clone(),
        chat_type: inbound.ctx.chat_type.as_str().to_string(),
        matched_by: route.matched_by.as_str().to_string(),
    });
    send
}

/// The message's context (`commands`: its sender may use directives).
fn finalized(msg: &Incoming, commands: bool, taken: &Taken) -> crate::inbound::finalize::Inbound {
    let heard = taken.heard.as_ref();
    let group = msg.is_group();
    let raw = RawInbound {
        channel: msg.channel.clone(),
        account_id: Some(msg.account.clone()),
        chat_type: msg.chat_type.clone(),
        from: msg.sender.clone(),
        sender_name: msg.sender_name.clone(),
        group_id: group.then(|| msg.chat_id.clone()),
        thread_id: msg.thread_id.clone(),
        message_id: msg.message_id.clone(),
        body: Some(heard.map_or_else(|| msg.text.clone(), |h| h.body.clone())),
        // A spoken command is parsed from the transcript (OpenClaw's CommandBody).
        command_body: heard.map(|h| h.commands.clone()),
        forced_body_for_agent: heard.map(|h| h.body.clone()),
        media: taken.media.iter().map(|m| m.path.clone()).collect(),
        media_types: taken.media.iter().map(|m| m.content_type.clone()).collect(),
        timestamp_ms: msg.ts_ms,
        ..RawInbound::default()
    };
    let allow: Vec<String> = match commands {
        true => vec![msg.sender.clone()],
        false => Vec::new(),
    };
    finalize(&raw, &allow)
}

/// A message's route, as of the config in force when it was asked (the
/// supervisor answers `RouteIncoming` with it).
#[derive(Debug, Clone)]
pub struct Routed {
    pub route: crate::routing::Route,
    pub key: SessionKey,
    pub policies: Arc<Policies>,
}

/// What routing reads of a message: the supervisor is asked with this,
/// not a copy of the whole message.
#[derive(Debug, Clone)]
pub struct RouteQuery {
    pub channel: String,
    pub account: String,
    /// The group chat, or the sender of a direct message.
    pub peer: Peer,
    pub parent_id: Option<String>,
    pub guild_id: Option<String>,
    pub team_id: Option<String>,
    pub member_roles: Vec<String>,
    pub thread_id: Option<String>,
}

impl RouteQuery {
    pub fn of(msg: &Incoming) -> RouteQuery {
        let (kind, id) = match msg.is_group() {
            true => (PeerKind::Group, &msg.chat_id),
            false => (PeerKind::Direct, &msg.sender),
        };
        RouteQuery {
            channel: msg.channel.clone(),
            account: msg.account.clone(),
            peer: Peer {
                kind,
                id: id.clone(),
            },
            parent_id: msg.parent_id.clone(),
            guild_id: msg.guild_id.clone(),
            team_id: msg.team_id.clone(),
            member_roles: msg.member_roles.clone(),
            thread_id: msg.thread_id.clone(),
        }
    }
}

/// The agent and session `routes` give the message `q` describes.
pub(super) fn route_of(
    routes: &mut Router,
    (default_agent, main_key): (&str, &str),
    q: RouteQuery,
) -> Result<(crate::routing::Route, SessionKey), DispatchError> {
    let input = RouteInput {
        channel: &q.channel,
        account_id: Some(&q.account),
        peer: Some(q.peer),
        parent_peer: q.parent_id.map(|id| Peer {
            kind: PeerKind::Group,
            id,
        }),
        guild_id: q.guild_id.as_deref(),
        team_id: q.team_id.as_deref(),
        member_roles: &q.member_roles,
        thread_id: q.thread_id.as_deref(),
    };
    let route = routes.resolve(&input);
    let key = SessionKey::canonical(&route.session_key, default_agent, main_key)
        .map_err(DispatchError::Key)?;
    Ok((route, key))
}

/// What the model reads: in a group, who speaks; and what could not be
/// fetched (`note`).
fn agent_text(
    msg: &Incoming,
    inbound: &crate::inbound::finalize::Inbound,
    note: Option<String>,
) -> String {
    let mut text = inbound.ctx.body_for_agent.clone();
    if msg.is_group() {
        let who = inbound.sender_name.as_deref().unwrap_or(&msg.sender);
        text = format!("{who}: {text}");
    }
    match note {
        Some(n) if text.trim().is_empty() => n,
        Some(n) => format!("{text}\n{n}"),
        None => text,
    }
}

/// The reset policy of the message's conversation (its session judges it).
fn reset_policy(policies: &Policies, msg: &Incoming) -> reset::ResetPolicy {
    let kind = match (msg.is_group(), msg.thread_id.is_some()) {
        (_, true) => ResetType::Thread,
        (true, false) => ResetType::Group,
        (false, false) => ResetType::Direct,
    };
    reset::policy(&policies.session, kind, &msg.channel)
}

/// `message_received` command hooks (a stranger's text wrapped for them).
fn notify_received(
    hooks: &crate::hooks::HookClient,
    seen: &super::hooks::ReceivedMessage,
    untrusted: bool,
) {
    if !hooks.has(crate::hooks::HookPoint::MessageReceived) {
        return;
    }
    let event = crate::hooks::HookEvent::Message {
        channel: seen.channel.clone(),
        to: seen.chat_id.clone(),
        content: seen.text.clone(),
        sent: None,
    };
    let ctx = crate::hooks::HookCtx {
        agent_id: seen.agent_id.clone(),
        session_key: seen.session_key.to_string(),
        run_id: None,
        untrusted,
        workspace: Default::default(),
    };
    hooks.notify(crate::hooks::HookPoint::MessageReceived, event, ctx);
}

/// The `message_received` hook's view of the message.
fn received(
    msg: &Incoming,
    inbound: &crate::inbound::finalize::Inbound,
    key: &SessionKey,
    route: &crate::routing::Route,
) -> super::hooks::ReceivedMessage {
    super::hooks::ReceivedMessage {
        channel: msg.channel.clone(),
        account_id: msg.account.clone(),
        chat_id: msg.chat_id.clone(),
        chat_type: inbound.ctx.chat_type.as_str().to_string(),
        thread_id: msg.thread_id.clone(),
        from: msg.sender.clone(),
        sender_name: inbound.sender_name.clone(),
        message_id: msg.message_id.clone(),
        text: inbound.ctx.body_for_agent.clone(),
        session_key: key.clone(),
        agent_id: route.agent_id.clone(),
        matched_by: route.matched_by.as_str().to_string(),
        timestamp: msg.ts_ms,
    }
}

/// Records the hand-over (dispatch record out, delivery in, one
/// transaction). Not flushed here: until the next flush (at the latest
/// before the reply's first send) a crash leaves the dispatch record, and
/// the message is handed over again: the session knows its id and names
/// the same run.
pub fn record(
    store: &Store,
    msg: &Incoming,
    delivery: Option<&Delivery>,
) -> Result<(), StoreError> {
    for part in &msg.merged {
        ledger::dispatched(store, &msg.account, part, None)?;
    }
    ledger::dispatched(store, &msg.account, &msg.dedupe_key, delivery)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionEntry;
    use serde_json::json;

    /// Whether the session of `e` is stale before a message of `kind` on
    /// `channel` (as its session judges the policy dispatch passes it).
    fn reset_due(
        p: &Policies,
        kind: ResetType,
        channel: &str,
        e: &SessionEntry,
        now_ms: u64,
        utc_offset_secs: i32,
    ) -> Option<Stale> {
        let policy = reset::policy(&p.session, kind, channel);
        e.stale(&policy, now_ms, utc_offset_secs)
    }

    const H: u64 = 3_600_000;
    /// 2026-11-24 00:00 UTC.
    const DAY0: u64 = 1_795_478_400_000;

    fn policies(session: serde_json::Value) -> Policies {
        Policies {
            session: crate::settings::shipped_with("session", session),
            ..Policies::default()
        }
    }

    fn entry(started: u64, last: u64) -> SessionEntry {
        let mut e = SessionEntry::new(started);
        e.session_id = ulid::Ulid::from_parts(started, 7).to_string();
        e.updated_at = last;
        e
    }

    #[test]
    fn stale_sessions_are_found_by_transcript_start_and_last_activity() {
        let daily = policies(json!({ "reset": { "mode": "daily", "atHour": 4 } }));
        // Started yesterday 10:00, now 05:00: past today's 04:00 reset.
        let e = entry(DAY0 - 14 * H, DAY0 - 13 * H);
        assert_eq!(
            reset_due(&daily, ResetType::Direct, "telegram", &e, DAY0 + 5 * H, 0),
            Some(Stale::Daily)
        );
        // Now 03:00: the reset hour has not come yet.
        assert_eq!(
            reset_due(&daily, ResetType::Direct, "telegram", &e, DAY0 + 3 * H, 0),
            None
        );
        // Gateway-local: at UTC+2, 04:00 local is 02:00 UTC.
        assert_eq!(
            reset_due(
                &daily,
                ResetType::Direct,
                "telegram",
                &e,
                DAY0 + 3 * H,
                7200
            ),
            Some(Stale::Daily)
        );
        let idle = policies(
            json!({ "resetByChannel": { "telegram": { "mode": "idle", "idleMinutes": 30 } } }),
        );
        let e = entry(DAY0, DAY0 + H);
        assert_eq!(
            reset_due(
                &idle,
                ResetType::Group,
                "telegram",
                &e,
                DAY0 + H + 31 * 60_000,
                0
            ),
            Some(Stale::Idle)
        );
        assert_eq!(
            reset_due(
                &idle,
                ResetType::Group,
                "telegram",
                &e,
                DAY0 + H + 29 * 60_000,
                0
            ),
            None
        );
        assert_eq!(
            reset_due(&idle, ResetType::Group, "slack", &e, DAY0 + 9 * H, 0),
            None,
            "other channels: none"
        );
        assert_eq!(
            reset_due(
                &Policies::default(),
                ResetType::Direct,
                "telegram",
                &e,
                DAY0 + 99 * H,
                0
            ),
            None
        );
    }

    #[test]
    fn send_policy_rules_first_match_then_default_and_the_session_wins() {
        let s: crate::settings::SessionSettings = crate::settings::shipped_with(
            "session",
            json!({ "sendPolicy": {
            "default": "allow",
            "rules": [
                { "action": "deny", "match": { "channel": "telegram", "chatType": "group" } },
                { "action": "allow", "match": { "keyPrefix": "agent:main:telegram:group:-1" } },
            ],
        } }),
        );
        assert!(!send_allowed(
            None,
            &s,
            "telegram",
            "group",
            "agent:main:telegram:group:-1"
        ));
        assert!(send_allowed(
            None,
            &s,
            "telegram",
            "direct",
            "agent:main:main"
        ));
        assert!(send_allowed(Some("allow"), &s, "telegram", "group", "k"));
        assert!(!send_allowed(Some("deny"), &s, "telegram", "direct", "k"));
        let deny_all: crate::settings::SessionSettings = crate::settings::shipped_with(
            "session",
            json!({ "sendPolicy": { "default": "deny" } }),
        );
        assert!(!send_allowed(None, &deny_all, "telegram", "direct", "k"));
        assert!(send_allowed(
            None,
            &crate::settings::SessionSettings::default(),
            "telegram",
            "direct",
            "k"
        ));
    }
}
