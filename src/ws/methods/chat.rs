//! chat.send, chat.history, chat.abort: the edge of the agent runtime.

use ferroclaw_actors::ids::RunId;
use ferroclaw_actors::inbound::{sanitize_text, SessionKey};
use ferroclaw_actors::session::{
    AbortSession, CancelQueuedRun, GetPendingInputs, GetTranscript, InjectNote, PendingInput,
    SendAck, SendChat, SendStatus, SessionEntry, THINKING_LEVELS,
};
use std::time::Duration;

use crate::protocol::events;
use crate::protocol::frames;
use crate::ws::event_bridge::{AddToolRecipient, ChatSendAcked, PublishChat, TimeChatSend};
use crate::ws::methods::EarlyFrame;
use ferroclaw_actors::run::RunStatus;
use ferroclaw_actors::runs::{wait_run, LiveRunOf, RunResult, Waited};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{down, json, params, session_for, session_key, store_err, Caller, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// Largest accepted chat message (characters after sanitising).
pub const MAX_MESSAGE_CHARS: usize = 200_000;
pub const HISTORY_DEFAULT: usize = 200;
pub const HISTORY_MAX: usize = 1000;

/// Sanitised message text, or the error for an empty or oversized one.
fn message_text(method: &str, raw: &str, has_attachments: bool) -> Result<String, ErrorShape> {
    let text = sanitize_text(raw);
    if text.trim().is_empty() && !has_attachments {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: message is empty"
        )));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(ErrorShape::invalid(format!(
            "message too long (max {MAX_MESSAGE_CHARS} characters)"
        )));
    }
    Ok(text)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendParams {
    session_key: String,
    message: String,
    idempotency_key: String,
    #[serde(default)]
    attachments: Option<Vec<Value>>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(flatten)]
    deliver: super::outbound::DeliverParams,
}

fn check_thinking(level: &Option<String>) -> Result<(), ErrorShape> {
    match level {
        Some(l) if !THINKING_LEVELS.contains(&l.as_str()) => Err(ErrorShape::invalid(format!(
            "invalid chat.send params: thinking must be one of {}",
            THINKING_LEVELS.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// Sends to a session, re-resolving it once if it stopped (idle) meanwhile.
pub(crate) async fn send_to_session(
    state: &SharedState,
    key: &SessionKey,
    make: impl Fn() -> SendChat,
) -> Result<SendAck, ErrorShape> {
    use ferroclaw_actors::router::{DeliverError, SendToSession};
    for attempt in 0..2 {
        let sent = state
            .gateway
            .router
            .send(SendToSession {
                key: key.clone(),
                message: make(),
            })
            .await;
        match sent {
            Ok(Ok(ack)) => return Ok(ack),
            // The session stopped under the message: once more, to a new one.
            Ok(Err(DeliverError::Gone)) if attempt == 0 => continue,
            Ok(Err(e)) => return Err(super::deliver_err(e)),
            Err(e) => return Err(down(e)),
        }
    }
    Err(down(()))
}

/// Before the run is sent: its tool events to a caller that asked for
/// them (the first may come before the ack), and its timings to a client
/// that reads them (returned: whether it does).
fn follow_events(state: &SharedState, caller: &Caller, run_id: &str, key: &SessionKey) -> bool {
    if caller.caps.iter().any(|c| c == "tool-events") {
        state.event_bridge.do_send(AddToolRecipient {
            run_id: run_id.into(),
            conn_id: caller.conn_id.clone(),
        });
    }
    let timed = crate::ws::send_timing::wants_timings(&caller.client_id);
    if timed {
        state.event_bridge.do_send(TimeChatSend {
            run_id: run_id.into(),
            conn_id: caller.conn_id.clone(),
            session_key: key.as_str().to_string(),
        });
    }
    timed
}

pub async fn send(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: SendParams = params("chat.send", p)?;
    if p.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid chat.send params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    check_thinking(&p.thinking)?;
    let raw = p.attachments.unwrap_or_default();
    let text = message_text("chat.send", &p.message, !raw.is_empty())?;
    let checked = super::attachments::check(&raw)?;
    let key = session_key(state, &p.session_key)?;
    if matches!(text.trim(), "/stop" | "/abort") {
        let session = session_for(state, key).await?;
        let run_ids = session.send(AbortSession).await.map_err(down)?;
        return json(json!({ "ok": true, "aborted": !run_ids.is_empty(), "runIds": run_ids }));
    }
    let run_id = p.idempotency_key.clone();
    let timeout = p.timeout_ms.map(Duration::from_millis);
    let timed = follow_events(state, caller, &run_id, &key);
    let taken = super::attachments::take_in(state, &key, &text, checked, true).await;
    let commands = taken.heard.as_ref().map(|h| h.commands.clone());
    let shown = super::attachments::shown_with(&text, &taken);
    let text = super::attachments::text_with(&text, &taken);
    // chat.send needs operator.write: such a caller may use directives. The
    // web chat has no reset policy (OpenClaw's is per channel): no `fresh`.
    let ack = send_to_session(state, &key, || SendChat {
        images: taken.images.clone(),
        thinking: p.thinking.clone(),
        timeout,
        command_authorized: true,
        media: taken.media.clone(),
        commands: commands.clone(),
        shown: shown.clone(),
        ..SendChat::text(&text, &run_id)
    })
    .await?;
    if timed {
        state.event_bridge.do_send(ChatSendAcked {
            run_id: run_id.into(),
        });
    }
    if let Err(e) = super::outbound::follow(
        state,
        key.as_str(),
        &ack.run_id,
        &p.deliver,
        (false, ferroclaw_actors::run::RunKind::Chat),
    )
    .await
    {
        // The message is acknowledged; only its delivery to a chat failed.
        tracing::warn!(session_key = %key.as_str(), error = %e.message, "reply not delivered to the channel");
    }
    ack_payload(&ack)
}

/// The acknowledgement on the wire: the run that answers the message and,
/// in OpenClaw's words, where it is: `started` (a run started with it),
/// `accepted` (it waits for its turn), `in_flight` (it joined the running
/// run, or repeats a message that is queued or running), `ok` (repeats a
/// message whose run ended). A full queue (`drop: new`) refuses it.
pub(crate) fn ack_payload(ack: &SendAck) -> MethodResult {
    let status = match ack.status {
        SendStatus::Started | SendStatus::Directive => "started",
        SendStatus::Queued => "accepted",
        SendStatus::Steered | SendStatus::Duplicate { live: true } => "in_flight",
        SendStatus::Duplicate { live: false } => "ok",
        SendStatus::Dropped => {
            return Err(ErrorShape::unavailable(
                "the session's queue is full (messages.queue.cap with drop \"new\"); send it again later",
            )
            .retry_after(1000))
        }
    };
    json(json!({ "runId": ack.run_id, "status": status }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryParams {
    session_key: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    max_chars: Option<usize>,
}

use crate::protocol::messages::{
    display_message, with_transcript_meta, HISTORY_FIELD_CHARS, HISTORY_TOTAL_BYTES,
};

/// What `chat.history` and `chat.startup` read of a transcript.
pub(crate) struct HistoryQuery {
    pub key: SessionKey,
    pub limit: usize,
    pub max_chars: usize,
    /// Budget of the messages' serialised bytes (the newest win).
    pub max_bytes: usize,
}

/// `chat.history`'s params, checked.
pub(crate) fn history_query(state: &SharedState, p: &Value) -> Result<HistoryQuery, ErrorShape> {
    let p: HistoryParams = params("chat.history", p)?;
    let limit = p.limit.unwrap_or(HISTORY_DEFAULT);
    if !(1..=HISTORY_MAX).contains(&limit) {
        return Err(ErrorShape::invalid(format!(
            "invalid chat.history params: at /limit: must be 1..{HISTORY_MAX}"
        )));
    }
    Ok(HistoryQuery {
        key: session_key(state, &p.session_key)?,
        limit,
        max_chars: p.max_chars.unwrap_or(HISTORY_FIELD_CHARS),
        max_bytes: HISTORY_TOTAL_BYTES,
    })
}

/// The messages (each with its size) that fit `max_bytes` in all: the
/// newest win.
fn newest_within(shown: Vec<(Value, usize)>, max_bytes: usize) -> Vec<Value> {
    let mut total: usize = shown.iter().map(|(_, size)| size).sum();
    let mut first = 0;
    while total > max_bytes && first < shown.len() {
        total -= shown[first].1;
        first += 1;
    }
    shown.into_iter().skip(first).map(|(m, _)| m).collect()
}

/// The history answer, and the session's entry (None: no session yet).
pub(crate) async fn read_history(
    state: &SharedState,
    q: &HistoryQuery,
) -> Result<(Value, Option<SessionEntry>), ErrorShape> {
    let key = &q.key;
    let max_chars = q.max_chars.clamp(1, HISTORY_FIELD_CHARS);
    let max_bytes = q.max_bytes.min(HISTORY_TOTAL_BYTES);
    let default_thinking = state
        .live
        .settings()
        .agents
        .defaults
        .thinking_default
        .clone();
    let Some(entry) = super::lookup(state, key).await? else {
        let out = json!({ "sessionKey": key.as_str(), "messages": [], "thinkingLevel": default_thinking });
        return Ok((out, None));
    };
    let session = session_for(state, key.clone()).await?;
    let entries = session
        .send(GetTranscript)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let messages: Vec<Value> = entries
        .iter()
        .filter(|e| ferroclaw_actors::transcript::Entry::of(e).is_delivered_message())
        .enumerate()
        .filter_map(|(i, e)| with_transcript_meta(e, Some(i as u64 + 1)))
        .collect();
    let skip = messages.len().saturating_sub(q.limit);
    let shown: Vec<(Value, usize)> = messages
        .into_iter()
        .skip(skip)
        .map(|m| display_message(m, max_chars, &state.media_links))
        .collect();
    let shown = newest_within(shown, max_bytes);
    let waiting = session.send(GetPendingInputs).await.map_err(down)?;
    let mut out = json!({
        "sessionKey": key.as_str(),
        "sessionId": entry.session_id,
        "messages": shown,
        "pendingInputs": pending_inputs(&entries, &waiting, max_chars, state),
        "thinkingLevel": entry.thinking_level.clone().unwrap_or(default_thinking),
    });
    if let Some(v) = &entry.verbose_level {
        out["verboseLevel"] = json!(v);
    }
    Ok((out, Some(entry)))
}

/// Most pending inputs a history page shows (OpenClaw's).
const PENDING_INPUTS_SHOWN: usize = 20;

/// OpenClaw's `pendingInputs` page: the messages accepted while the
/// session was busy and still waiting for their turn (their transcript
/// lines are not model history yet), oldest first.
fn pending_inputs(
    entries: &[Value],
    waiting: &[PendingInput],
    max_chars: usize,
    state: &SharedState,
) -> Value {
    let line = |id: &str| {
        entries.iter().find(|e| {
            ferroclaw_actors::transcript::Entry::of(e).is_pending()
                && e.get("messageId").and_then(Value::as_str) == Some(id)
        })
    };
    let items: Vec<Value> = waiting
        .iter()
        .filter_map(|w| {
            let m = with_transcript_meta(line(&w.message_id)?, None)?;
            let (message, _) = display_message(m, max_chars, &state.media_links);
            Some(
                json!({ "id": w.message_id, "runId": w.run_id.as_str(), "message": message,
                         "acceptedAt": w.accepted_at, "state": "queued" }),
            )
        })
        .take(PENDING_INPUTS_SHOWN)
        .collect();
    json!({ "items": items, "total": waiting.len() })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AbortParams {
    session_key: String,
    #[serde(default)]
    run_id: Option<String>,
}

pub async fn abort(state: &SharedState, p: &Value) -> MethodResult {
    let p: AbortParams = params("chat.abort", p)?;
    let key = session_key(state, &p.session_key)?;
    if let Some(run_id) = &p.run_id {
        let live = state
            .gateway
            .runs
            .send(LiveRunOf {
                run_id: run_id.clone().into(),
            })
            .await
            .map_err(down)?;
        match live {
            Some(live) if live.session_key != key.as_str() => {
                return Err(ErrorShape::invalid("runId does not match sessionKey"));
            }
            Some(live) if !live.started => {
                // Still queued: it is taken out of the queue, never run.
                let session = session_for(state, key).await?;
                let cancelled = session
                    .send(CancelQueuedRun {
                        run_id: run_id.clone().into(),
                    })
                    .await
                    .map_err(down)?;
                let ids: Vec<&String> = cancelled.then_some(run_id).into_iter().collect();
                return json(json!({ "ok": true, "aborted": cancelled, "runIds": ids }));
            }
            Some(_) => {}
            None => return json(json!({ "ok": true, "aborted": false, "runIds": [] })),
        }
    }
    let session = session_for(state, key).await?;
    let run_ids = session.send(AbortSession).await.map_err(down)?;
    json(json!({ "ok": true, "aborted": !run_ids.is_empty(), "runIds": run_ids }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InjectParams {
    session_key: String,
    message: String,
    #[serde(default)]
    label: Option<String>,
}

/// `chat.inject`: an assistant note in the transcript, shown as a `chat` final.
pub async fn inject(state: &SharedState, p: &Value) -> MethodResult {
    let p: InjectParams = params("chat.inject", p)?;
    let text = message_text("chat.inject", &p.message, false)?;
    if p.label.as_ref().is_some_and(|l| l.chars().count() > 100) {
        return Err(ErrorShape::invalid(
            "invalid chat.inject params: at /label: must NOT have more than 100 characters",
        ));
    }
    let key = session_key(state, &p.session_key)?;
    let session = session_for(state, key.clone()).await?;
    let message_id = session
        .send(InjectNote {
            text: text.clone(),
            label: p.label.clone(),
        })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    let shown = match &p.label {
        Some(l) => format!("[{l}]\n\n{text}"),
        None => text,
    };
    state.event_bridge.do_send(PublishChat {
        payload: json!({
            "runId": format!("inject-{message_id}"), "sessionKey": key.as_str(), "seq": 1,
            "state": "final", "stopReason": "injected",
            "message": { "role": "assistant", "content": [{ "type": "text", "text": shown }],
                         "timestamp": ferroclaw_actors::now_ms() },
        }),
    });
    json(json!({ "ok": true, "messageId": message_id }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentParams {
    message: String,
    idempotency_key: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    /// Seconds (OpenClaw's CLI sends 600).
    #[serde(default)]
    timeout: Option<u64>,
}

/// The longest `agent.wait` (24 h); longer `timeoutMs` values are clamped.
pub const WAIT_MAX: Duration = Duration::from_secs(24 * 60 * 60);

fn final_payload(r: &RunResult) -> Value {
    json!({
        "runId": r.run_id,
        "status": "ok",
        "summary": if r.status() == RunStatus::Aborted { "aborted" } else { "completed" },
        "result": {
            "payloads": [{ "text": r.outcome.text() }],
            "meta": { "durationMs": r.ended_at.saturating_sub(r.started_at), "usage": events::usage(r.usage.as_ref()), "stopReason": r.stop_reason },
        },
    })
}

/// `agent`'s answer once its run ended, or why it has none.
fn agent_answer(waited: Waited, run_id: &RunId) -> MethodResult {
    match waited {
        Waited::Ended(r) if r.status() != RunStatus::Error => json(final_payload(&r)),
        Waited::Ended(r) => Err(ErrorShape::unavailable(
            r.outcome
                .error()
                .filter(|e| !e.is_empty())
                .unwrap_or("run failed"),
        )
        .with_details(json!({ "runId": r.run_id, "status": "error" }))),
        Waited::Busy => Err(too_many_waits()),
        Waited::Down => Err(down(())),
        Waited::TimedOut { .. } => Err(ErrorShape::new(
            crate::protocol::errors::ErrorCode::AgentTimeout,
            "agent timed out waiting for the run",
        )
        .with_details(json!({ "runId": run_id }))),
    }
}

/// `agent`: two answers on the same request id: `accepted` at once, then the result.
pub async fn agent(
    state: &SharedState,
    caller: &Caller,
    p: &Value,
    req_id: &str,
    early: Option<&actix::Recipient<EarlyFrame>>,
) -> MethodResult {
    let p: AgentParams = params("agent", p)?;
    let text = message_text("agent", &p.message, false)?;
    if p.idempotency_key.trim().is_empty() {
        return Err(ErrorShape::invalid(
            "invalid agent params: at /idempotencyKey: must NOT have fewer than 1 characters",
        ));
    }
    let agent = p
        .agent_id
        .unwrap_or_else(|| state.live.settings().default_agent_id().to_string());
    let main = || super::main_session(state, &agent);
    let key = session_key(state, &p.session_key.unwrap_or_else(main))?;
    let message_id = p.idempotency_key;
    if caller.caps.iter().any(|c| c == "tool-events") {
        state.event_bridge.do_send(AddToolRecipient {
            run_id: message_id.clone().into(),
            conn_id: caller.conn_id.clone(),
        });
    }
    // `agent` needs operator.write: such a caller may use directives. A
    // repeated key is recognised by the session (its run is named again).
    let ack = send_to_session(state, &key, || SendChat {
        command_authorized: true,
        ..SendChat::text(&text, &message_id)
    })
    .await?;
    if ack.status == SendStatus::Dropped {
        return ack_payload(&ack);
    }
    let run_id = ack.run_id;
    let accepted =
        json!({ "runId": run_id, "status": "accepted", "acceptedAt": ferroclaw_actors::now_ms() });
    if let Some(early) = early {
        early.do_send(EarlyFrame {
            req_id: req_id.to_string(),
            text: frames::res_ok(req_id, &accepted),
        });
    }
    let limit = Duration::from_secs(
        p.timeout
            .unwrap_or(state.live.settings().agents.defaults.timeout_seconds)
            .max(1)
            + 5,
    );
    let conn = Some(caller.conn_id.clone());
    agent_answer(
        wait_run(&state.gateway.runs, &run_id, conn, limit).await,
        &run_id,
    )
}

fn too_many_waits() -> ErrorShape {
    ErrorShape::unavailable("too many agent.wait calls are waiting; retry later").retry_after(1000)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WaitParams {
    run_id: RunId,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// `agent.wait`: the run's status once it ended, or `timeout`. The id may
/// be a run id or the id of a message another run answered (that run is
/// waited for). `timeoutMs` (default 30 s) is clamped to 24 h; an id that
/// is neither live nor recorded is answered `timeout` when it runs out,
/// with nothing kept meanwhile.
pub async fn agent_wait(state: &SharedState, caller: &Caller, p: &Value) -> MethodResult {
    let p: WaitParams = params("agent.wait", p)?;
    let limit = Duration::from_millis(p.timeout_ms.unwrap_or(30_000)).min(WAIT_MAX);
    let conn = Some(caller.conn_id.clone());
    match wait_run(&state.gateway.runs, &p.run_id, conn, limit).await {
        Waited::Ended(r) => {
            let mut out = json!({
                "runId": r.run_id, "status": if r.status() == RunStatus::Error { "error" } else { "ok" },
                "startedAt": r.started_at, "endedAt": r.ended_at, "stopReason": r.stop_reason,
            });
            if let Some(e) = r.outcome.error() {
                out["error"] = json!(e);
            }
            json(out)
        }
        Waited::TimedOut { run_id } => json(json!({ "runId": run_id, "status": "timeout" })),
        Waited::Busy => Err(too_many_waits()),
        Waited::Down => Err(down(())),
    }
}
