//! Messages the gateway sends to chats on a client's word: `send` (a text
//! to a channel target, once per idempotency key, kept in the channel
//! outbox so a repeat after a restart answers with the first send's ids),
//! `chat.send`'s `deliver` (the run's reply also goes to the session's
//! last route), and `wake` (a system event, and with `mode: "now"` a
//! heartbeat turn in the main session at once).

use ferroclaw_actors::channels::dispatch::send_allowed;
use ferroclaw_actors::channels::ledger::{Delivery, DeliveryOf};
use ferroclaw_actors::channels::{ChannelSendError, FollowRun, SendText};
use ferroclaw_actors::session::{InjectNote, SendChat};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{down, session_for, session_key, store_err};
use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// OpenClaw's default heartbeat prompt (a `wake` with `mode: "now"`).

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SendParams {
    to: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    media_url: Option<String>,
    #[serde(default)]
    media_urls: Option<Vec<String>>,
    #[serde(default)]
    buffer: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    as_voice: Option<bool>,
    #[serde(default)]
    gif_playback: Option<bool>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    account_id: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    reply_to_id: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    force_document: Option<bool>,
    #[serde(default)]
    silent: Option<bool>,
    #[serde(default)]
    parse_mode: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
    idempotency_key: String,
}

fn send_failed(e: ChannelSendError) -> ErrorShape {
    store_err(e)
}

/// The channel a send names, else the only configured one.
fn channel_of(state: &SharedState, asked: Option<&str>) -> Result<String, ErrorShape> {
    if let Some(c) = asked.map(str::trim).filter(|c| !c.is_empty()) {
        return Ok(c.to_ascii_lowercase());
    }
    let settings = state.live.settings();
    // `modelByChannel` and `defaults` are settings, not channels.
    let configured: Vec<&String> = settings
        .channels
        .keys()
        .filter(|k| !matches!(k.as_str(), "modelByChannel" | "defaults"))
        .collect();
    match configured.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ErrorShape::invalid(
            "no channel is configured (channels.<id>)",
        )),
        _ => Err(ErrorShape::invalid(
            "invalid send params: channel is required when several channels are configured",
        )),
    }
}

/// Largest `send` buffer (decoded).
const MAX_BUFFER_BYTES: usize = 20 * 1024 * 1024;

/// A `send` call's base64 `buffer`, kept in the media store: the item's
/// `media:<id>`.
async fn stored_buffer(
    state: &SharedState,
    b64: &str,
    p: &SendParams,
) -> Result<String, ErrorShape> {
    use base64::Engine;
    let cleaned: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
    if cleaned.len() > MAX_BUFFER_BYTES.div_ceil(3) * 4 + 4 {
        return Err(ErrorShape::invalid(
            "invalid send params: buffer is larger than 20 MB",
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&cleaned)
        .map_err(|e| {
            ErrorShape::invalid(format!(
                "invalid send params: buffer is not valid base64 ({e})"
            ))
        })?;
    let put = ferroclaw_actors::media::PutMedia {
        bytes: bytes.into(),
        content_type: p.content_type.clone(),
        file_name: p.filename.clone(),
    };
    let m = state
        .gateway
        .media
        .send(put)
        .await
        .map_err(down)?
        .map_err(|e| ErrorShape::unavailable(format!("the file was not stored: {e}")))?;
    Ok(format!(
        "{}{}",
        ferroclaw_actors::channels::media_out::STORED,
        m.id
    ))
}

/// `send`.
/// `mediaUrl` and `mediaUrls`: each an http(s) URL the platform fetches.
fn media_urls(p: &SendParams) -> Result<Vec<String>, ErrorShape> {
    let media: Vec<String> = p
        .media_url
        .iter()
        .chain(p.media_urls.iter().flatten())
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .collect();
    if let Some(bad) = media
        .iter()
        .find(|u| !(u.starts_with("https://") || u.starts_with("http://")))
    {
        return Err(ErrorShape::invalid(format!(
            "invalid send params: mediaUrl must be an http(s) URL the platform can fetch: {bad}"
        )));
    }
    Ok(media)
}

/// What was sent, mirrored into the session `raw`'s transcript as a note
/// (as OpenClaw does).
async fn mirror(
    state: &SharedState,
    raw: &str,
    text: String,
    media: &[String],
    label: String,
) -> Result<(), ErrorShape> {
    let key = session_key(state, raw)?;
    let session = session_for(state, key).await?;
    let mut shown = text;
    for url in media {
        shown = format!("{shown}\n{url}").trim_start().to_string();
    }
    let note = InjectNote {
        text: shown,
        label: Some(label),
    };
    session.send(note).await.map_err(down)?.map_err(store_err)?;
    Ok(())
}

pub async fn send(state: &SharedState, p: &Value) -> MethodResult {
    let p: SendParams = params("send", p)?;
    let _ = (
        &p.agent_id,
        p.as_voice,
        p.gif_playback,
        p.force_document,
        p.silent,
        &p.parse_mode,
    );
    let mut media = media_urls(&p)?;
    if let Some(b64) = &p.buffer {
        // Kept in the media store, uploaded by the channel (`media:<id>`).
        media.push(stored_buffer(state, b64, &p).await?);
    }
    let text = p.message.clone().unwrap_or_default();
    if text.trim().is_empty() && media.is_empty() {
        return Err(ErrorShape::invalid(
            "invalid send params: text or media is required",
        ));
    }
    if p.idempotency_key.trim().is_empty() || p.to.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid send params: to and idempotencyKey must not be empty",
        ));
    }
    let channel = channel_of(state, p.channel.as_deref())?;
    let ids = state
        .gateway
        .channels
        .send(SendText {
            channel: channel.clone(),
            account: p.account_id.clone(),
            to: p.to.trim().to_string(),
            thread_id: p.thread_id.clone(),
            reply_to: p.reply_to_id.clone(),
            text: text.clone(),
            media: media.clone(),
            key: p.idempotency_key.clone(),
            buttons: Vec::new(),
            voice: false,
        })
        .await
        .map_err(down)?
        .map_err(send_failed)?;
    if let Some(raw) = &p.session_key {
        let label = format!("sent to {channel}:{}", p.to);
        mirror(state, raw, text, &media, label).await?;
    }
    let message_id = ids.last().cloned().unwrap_or_default();
    json(json!({
        "runId": p.idempotency_key,
        "messageId": message_id,
        "channel": channel,
        "chatId": p.to,
    }))
}

/// What `chat.send` says about delivery (`deliver` and the originating
/// route, which wins over the session's last one).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliverParams {
    #[serde(default)]
    pub deliver: Option<bool>,
    #[serde(default)]
    pub originating_channel: Option<String>,
    #[serde(default)]
    pub originating_to: Option<String>,
    #[serde(default)]
    pub originating_account_id: Option<String>,
    #[serde(default)]
    pub originating_thread_id: Option<String>,
}

/// `chat.send` with `deliver: true`: the run's reply goes to the route too.
/// Reply: whether a channel took it (a session without a route has none).
pub async fn follow(
    state: &SharedState,
    key: &str,
    run_id: &str,
    d: &DeliverParams,
    (untrusted, kind): (bool, ferroclaw_actors::run::RunKind),
) -> Result<bool, ErrorShape> {
    if d.deliver != Some(true) {
        return Ok(false);
    }
    let session = session_key(state, key)?;
    let entry = super::lookup(state, &session).await?;
    let policy = entry.as_ref().and_then(|e| e.send_policy.clone());
    let Some(to) = Target::of(d, entry.and_then(|e| e.origin)) else {
        tracing::info!(session_key = %key, "deliver asked, but the session has no channel route");
        return Ok(false);
    };
    let settings = state.live.settings();
    let (channel, chat_type) = (&to.channel, to.chat_type.as_deref().unwrap_or("direct"));
    if !send_allowed(
        policy.as_deref(),
        &settings.session,
        channel,
        chat_type,
        session.as_str(),
    ) {
        tracing::info!(session_key = %key, "deliver asked, but the session's send policy denies it");
        return Ok(false);
    }
    let delivery = Delivery {
        account: String::new(),
        session_key: DeliveryOf::Session(session.clone()),
        run_id: run_id.into(),
        target: to.to,
        thread_id: to.thread_id,
        reply_to: None,
        answers: None,
        created_ms: ferroclaw_actors::now_ms(),
        finalized: false,
        chat_type: to.chat_type,
        untrusted,
        kind,
        voice_in: false,
        late: None,
    };
    let follow = FollowRun {
        channel: to.channel,
        account: to.account,
        delivery,
    };
    state
        .gateway
        .channels
        .send(follow)
        .await
        .map_err(down)?
        .map_err(send_failed)?;
    Ok(true)
}

/// Where a delivered run's reply goes: the request's `originating*`
/// fields, else the session's last route.
struct Target {
    channel: String,
    to: String,
    account: Option<String>,
    thread_id: Option<String>,
    chat_type: Option<String>,
}

impl Target {
    /// None: neither names a channel and a chat.
    fn of(d: &DeliverParams, origin: Option<ferroclaw_actors::session::Origin>) -> Option<Target> {
        let o = origin.as_ref();
        Some(Target {
            channel: d
                .originating_channel
                .clone()
                .or_else(|| o.map(|o| o.channel.clone()))?,
            to: d
                .originating_to
                .clone()
                .or_else(|| o.map(|o| o.to.clone()))?,
            account: d
                .originating_account_id
                .clone()
                .or_else(|| o.map(|o| o.account_id.clone())),
            thread_id: d
                .originating_thread_id
                .clone()
                .or_else(|| o.and_then(|o| o.thread_id.clone())),
            chat_type: o.map(|o| o.chat_type.clone()),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WakeParams {
    mode: String,
    text: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
}

/// `wake`: the text as a system event; `now` also runs a heartbeat turn.
pub async fn wake(state: &SharedState, p: &Value) -> MethodResult {
    let p: WakeParams = params("wake", p)?;
    if !matches!(p.mode.as_str(), "now" | "next-heartbeat") {
        return Err(ErrorShape::invalid(
            "invalid wake params: at /mode: must be \"now\" or \"next-heartbeat\"",
        ));
    }
    if p.text.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid wake params: at /text: must NOT have fewer than 1 characters",
        ));
    }
    let run_id = wake_now(
        state,
        &p.mode,
        &p.text,
        p.session_key.as_deref(),
        p.agent_id.as_deref(),
        false,
    )
    .await?;
    let mut out = json!({ "ok": true, "mode": p.mode });
    if let Some(r) = run_id {
        out["runId"] = json!(r);
    }
    json(out)
}

/// Queues `text` as a system event (durable before the answer) and, for
/// `now`, starts a heartbeat turn. Reply: the turn's run id. `untrusted`:
/// a stranger's text (a webhook's).
pub async fn wake_now(
    state: &SharedState,
    mode: &str,
    text: &str,
    session: Option<&str>,
    agent: Option<&str>,
    untrusted: bool,
) -> Result<Option<String>, ErrorShape> {
    let raw = match (session, agent) {
        (Some(s), _) => s.to_string(),
        (None, Some(a)) => super::main_session(state, a),
        (None, None) => "main".to_string(),
    };
    let key = session_key(state, &raw)?;
    if ferroclaw_actors::ids::key::has(key.as_str(), "subagent") {
        return Err(ErrorShape::invalid(
            "wake sessionKey cannot target a subagent session",
        ));
    }
    let router = &state.gateway.router;
    ferroclaw_actors::router::queue_system_event(router, key.clone(), text.into(), untrusted)
        .await
        .map_err(|e| ErrorShape::unavailable(e.to_string()))?;
    if mode != "now" {
        return Ok(None);
    }
    let main = session_key(state, "main")?;
    if key == main {
        // The heartbeat runs it: its prompt, model, gate and delivery.
        let run = state
            .gateway
            .heartbeat
            .send(ferroclaw_actors::cron::beat::RunHeartbeat {
                reason: "wake".into(),
            })
            .await
            .map_err(down)?;
        return Ok(run);
    }
    let run_id = format!("wake:{}", ulid::Ulid::generate());
    let prompt = state
        .live
        .settings()
        .agents
        .defaults
        .heartbeat
        .prompt
        .clone();
    let mut msg = SendChat::text(&prompt, &run_id);
    msg.kind = ferroclaw_actors::run::RunKind::Heartbeat {
        ack_max_chars: ferroclaw_actors::run::reply::ACK_MAX_CHARS,
    };
    let ack = ferroclaw_actors::router::deliver(&state.gateway.router, key, msg)
        .await
        .map_err(super::deliver_err)?;
    Ok(Some(ack.run_id.to_string()))
}
