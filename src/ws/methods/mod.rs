//! The one method dispatch: authorise (role, scope), replay idempotent
//! duplicates, run the handler, record the response for idempotent calls,
//! and build the `res` frame. One file per method family.

pub(crate) mod agents;
mod approvals;
mod artifacts;
pub(crate) mod attachments;
mod audit;
mod branches;
mod browser;
pub(crate) mod cards;
mod channels;
pub(crate) mod chat;
mod companion;
pub(crate) mod config;
pub(crate) mod cron;
mod dashboard;
mod devices;
mod durable;
mod hook_status;
mod host;
mod memory;
pub(crate) mod message_action;
mod migrations;
mod models;
mod nodes;
pub(crate) mod outbound;
pub(crate) mod plugins;
pub(crate) mod questions;
mod secrets;
mod sessions;
mod skills;
mod stability;
mod system;
mod tasks;
mod tts;
mod usage;
mod users;
mod watch;

pub use crate::ws::messages::EarlyFrame;
use std::sync::Arc;

use ferroclaw_actors::idempotency::{ask_idempotency, CachedResponse, RecordIdempotent};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::protocol::errors::ErrorShape;
use crate::protocol::frames::{self, RequestFrame};
use crate::protocol::methods::{authorize_call, requirement, Requirement};
use crate::state::SharedState;
pub use crate::ws::caller::Caller;

/// A handler's successful answer.
pub enum Payload {
    Json(Value),
    /// Pre-serialised (the cached health summary).
    Raw(Arc<RawValue>),
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Json(v) => v.serialize(s),
            Payload::Raw(r) => r.serialize(s),
        }
    }
}

pub type MethodResult = Result<Payload, ErrorShape>;

pub(crate) fn json(v: Value) -> MethodResult {
    Ok(Payload::Json(v))
}

/// Methods that take no params: `{}` or nothing, anything else refused.
pub(crate) fn empty_params(method: &str, p: &Value) -> Result<(), ErrorShape> {
    if p.is_null() || p.as_object().is_some_and(|o| o.is_empty()) {
        Ok(())
    } else {
        Err(ErrorShape::invalid(format!(
            "invalid {method} params: must NOT have additional properties"
        )))
    }
}

/// Reads typed params; a mismatch is `INVALID_REQUEST invalid <method> params: ...`.
pub(crate) fn params<T: serde::de::DeserializeOwned>(
    method: &str,
    v: &Value,
) -> Result<T, ErrorShape> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            "root".to_string()
        } else {
            format!("/{}", path.replace('.', "/"))
        };
        ErrorShape::invalid(format!("invalid {method} params: at {at}: {}", e.inner()))
    })
}

/// The idempotency cache key, for calls that carry an `idempotencyKey` and
/// are not read-only.
fn idempotency_key(frame: &RequestFrame) -> Option<String> {
    let key = frame.params.get("idempotencyKey")?.as_str()?;
    if key.is_empty()
        || matches!(
            requirement(&frame.method),
            Requirement::Anyone | Requirement::Scope("operator.read")
        )
    {
        return None;
    }
    Some(format!("{}:{}", frame.method, key))
}

/// Handles one request; returns the `res` frame text. `early` takes the
/// frames sent ahead of the answer (`agent`'s accepted ack); without one
/// (`/mcp`) they are not sent.
pub async fn dispatch(
    state: SharedState,
    caller: Arc<Caller>,
    frame: RequestFrame,
    early: Option<actix::Recipient<EarlyFrame>>,
) -> String {
    if !crate::protocol::methods::answers(&frame.method) {
        let e = ErrorShape::invalid(format!("unknown method: {}", frame.method));
        tracing::info!(conn_id = %caller.conn_id, method = %frame.method, "unknown method");
        return frames::res_err(&frame.id, &e, None);
    }
    if let Err(e) = authorize_call(&frame.method, &frame.params, caller.role, &caller.scopes) {
        tracing::info!(conn_id = %caller.conn_id, method = %frame.method, error = %e.message, "request denied");
        return frames::res_err(&frame.id, &e, None);
    }
    let idem = idempotency_key(&frame);
    // Read in place: no round trip to the cache's actor.
    if let Some(cached) = idem
        .as_deref()
        .and_then(|k| state.gateway.idempotent.get(k))
    {
        tracing::debug!(method = %frame.method, cached = true, "idempotent replay");
        return replay(&state, &frame, &cached).await;
    }
    let result = route(&state, &caller, &frame, early.as_ref()).await;
    match &result {
        Err(e) => {
            tracing::info!(conn_id = %caller.conn_id, method = %frame.method, error = %e.message, "request failed")
        }
        Ok(_) => audit::record_control(&state, &caller, &frame.method, &frame.params),
    }
    if let Some(key) = idem {
        if let Err(e) = remember(&state, &frame.method, key, &result).await {
            return frames::res_err(&frame.id, &e, None);
        }
    }
    match result {
        Ok(payload) => frames::res_ok(&frame.id, &payload),
        Err(e) => frames::res_err(&frame.id, &e, None),
    }
}

/// The answer a repeated request gets: the first one's, except a
/// `chat.send` whose run is still going (`in_flight`).
async fn replay(state: &SharedState, frame: &RequestFrame, cached: &CachedResponse) -> String {
    if frame.method == "chat.send" {
        // The run the first ack named (a queued message may be
        // answered by a collected run).
        let run_id = cached
            .payload
            .as_ref()
            .and_then(|p| p.get("runId"))
            .and_then(Value::as_str);
        if let Some(run_id) = run_id {
            let live = ferroclaw_actors::runs::LiveRunOf {
                run_id: run_id.into(),
            };
            if matches!(state.gateway.runs.send(live).await, Ok(Some(_))) {
                let payload = serde_json::json!({ "runId": run_id, "status": "in_flight" });
                return frames::res_ok(&frame.id, &payload);
            }
        }
    }
    frames::res_cached(
        &frame.id,
        cached.ok,
        cached.payload.as_ref(),
        cached.error.as_ref(),
    )
}

/// The answer recorded under its idempotency key. `chat.send` and `agent`:
/// the session keeps the message id (it is the key), so their record rides
/// the turn's next flush and the answer does not wait for it; any other
/// waits for its record to be durable (else the request fails, retryable).
async fn remember(
    state: &SharedState,
    method: &str,
    key: String,
    result: &MethodResult,
) -> Result<(), ErrorShape> {
    let gw = &state.gateway;
    let response = CachedResponse {
        ts: ferroclaw_actors::now_ms(),
        ok: result.is_ok(),
        payload: result
            .as_ref()
            .ok()
            .and_then(|p| serde_json::to_value(p).ok()),
        error: result
            .as_ref()
            .err()
            .and_then(|e| serde_json::to_value(e).ok()),
    };
    if matches!(method, "chat.send" | "agent") {
        // Counted in the mailbox gauge as `ask_idempotency` counts.
        gw.metrics
            .idempotency_mailbox
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        gw.idempotency.do_send(RecordIdempotent {
            key,
            response,
            durable: false,
        });
        return Ok(());
    }
    let record = RecordIdempotent {
        key,
        response,
        durable: true,
    };
    let recorded = ask_idempotency(&gw.idempotency, &gw.metrics, record).await;
    if !matches!(recorded, Ok(Ok(()))) {
        tracing::error!(%method, "idempotency record failed");
        return Err(
            ErrorShape::unavailable("store unavailable: response not recorded").retry_after(1000),
        );
    }
    Ok(())
}

/// Every method's handler (a declared table).
async fn route(
    state: &SharedState,
    caller: &Caller,
    frame: &RequestFrame,
    early: Option<&actix::Recipient<EarlyFrame>>,
) -> MethodResult {
    let p = &frame.params;
    match frame.method.as_str() {
        "health" => system::health(state).await,
        "browser.request" => browser::request(state, p).await,
        "status" => system::status(state).await,
        "system-presence" => system::presence(state).await,
        "system-event" => system::system_event(state, caller, p).await,
        "models.list" => system::models_list(state, p),
        "logs.tail" => system::logs_tail(state, p).await,
        "config.get" => config::get(state).await,
        "config.set" => config::set(state, caller, p, config::Mode::Set).await,
        "config.apply" => config::set(state, caller, p, config::Mode::Apply).await,
        "config.patch" => config::set(state, caller, p, config::Mode::Patch).await,
        "device.pair.list" => devices::list(state).await,
        "device.pair.approve" => devices::approve(state, p).await,
        "device.pair.reject" => devices::reject(state, p).await,
        "device.pair.remove" => devices::remove(state, p).await,
        "device.pair.rename" => devices::rename(state, caller, p).await,
        "device.pair.setupCode" => devices::setup_code(state, p),
        "device.token.rotate" => devices::rotate(state, caller, p).await,
        "device.token.revoke" => devices::revoke(state, caller, p).await,
        "chat.send" => chat::send(state, caller, p).await,
        "channels.status" => channels::status(state, p).await,
        "memory.search" => memory::search(state, p).await,
        "sessions.compact" => sessions::compact(state, p).await,
        "doctor.memory.status" => memory::status(state, p).await,
        "send" => outbound::send(state, p).await,
        "wake" => outbound::wake(state, p).await,
        "channels.logout" | "channels.stop" => channels::logout(state, &frame.method, p).await,
        "channels.start" => channels::start(state, p).await,
        "channels.pairing.list" => channels::pairing_list(state, p).await,
        "channels.pairing.approve" | "channels.pairing.dismiss" => {
            channels::pairing_decide(state, &frame.method, p).await
        }
        "chat.history" => watch::history(state, p).await,
        "chat.abort" => chat::abort(state, p).await,
        "tasks.list" => tasks::list(state, p).await,
        "migrations.memory.plan" => migrations::plan(state, p).await,
        "migrations.memory.apply" => migrations::apply(state, p).await,
        "sessions.fork" => branches::fork(state, p).await,
        "artifacts.list" => artifacts::list(state, p).await,
        m if m.starts_with("durable.") || m == "gateway.restore.status" => {
            durable::dispatch(state, m, p).await
        }
        "progressCard.get" => cards::get(state, p).await,
        "progressCard.put" => cards::put_method(state, p).await,
        "sessions.branches.list" => branches::list(state, p).await,
        "tasks.get" => tasks::get(state, p).await,
        "tasks.cancel" => tasks::cancel(state, p).await,
        "chat.inject" => chat::inject(state, p).await,
        "sessions.list" => sessions::list(state, p).await,
        "sessions.patch" => sessions::patch(state, p).await,
        "sessions.reset" => sessions::reset(state, p).await,
        "sessions.delete" => sessions::delete(state, p).await,
        "sessions.export" => sessions::export(state, p).await,
        "agent" => chat::agent(state, caller, p, &frame.id, early).await,
        "agent.wait" => chat::agent_wait(state, caller, p).await,
        "skills.status" => skills::status(state, p).await,
        "skills.library.list" => skills::library_list(state, p).await,
        "skills.search" => skills::search(state, p).await,
        "sessions.subscribe" => watch::subscribe(state, caller, p).await,
        "sessions.unsubscribe" => watch::unsubscribe(state, caller, p).await,
        "sessions.messages.subscribe" => watch::messages_subscribe(state, caller, p).await,
        "sessions.messages.unsubscribe" => watch::messages_unsubscribe(state, caller, p).await,
        "sessions.describe" => watch::describe(state, p).await,
        "sessions.get" => watch::get(state, p).await,
        "sessions.catalog.list" => watch::catalog_list(p),
        "chat.startup" => watch::startup(state, p).await,
        "chat.metadata" => watch::metadata(state, p).await,
        "agents.list" => agents::list(state, p).await,
        "system.info" => host::info(state, p).await,
        "diagnostics.lanes" => host::lanes(state, p).await,
        "last-heartbeat" => cron::last_heartbeat(state, p).await,
        "set-heartbeats" => cron::set_heartbeats(state, p).await,
        "cron.list" => cron::list(state, p).await,
        "cron.get" => cron::get(state, p).await,
        "cron.add" => cron::add(state, p).await,
        "cron.update" => cron::update(state, p).await,
        "cron.remove" => cron::remove(state, p).await,
        "cron.run" => cron::run(state, p).await,
        "cron.runs" => cron::runs(state, p).await,
        "cron.status" => cron::status(state, p).await,
        "environments.list" => host::environments(state, p).await,
        "agent.identity.get" => agents::identity_get(state, p).await,
        "question.request" => questions::request(state, p).await,
        "question.waitAnswer" => questions::wait_answer(state, p).await,
        "question.resolve" => questions::resolve(state, caller, p).await,
        "question.get" => questions::get(state, p).await,
        "question.list" => questions::list(state, p).await,
        "exec.approval.request" => approvals::request(state, p).await,
        "exec.approval.waitDecision" => approvals::wait_decision(state, p).await,
        "exec.approval.resolve" => approvals::resolve(state, caller, p).await,
        "exec.approvals.get" => approvals::get(state).await,
        "exec.approvals.set" => approvals::set(state, p).await,
        "tools.catalog" => skills::tools_catalog(state),
        "tools.effective" => skills::tools_effective(state, p).await,
        "sessions.companion.ask" => companion::ask(state, p).await,
        "sessions.companion.state" => companion::state(state, p).await,
        "sessions.companion.reset" => companion::reset(state, p).await,
        "commands.list" => skills::commands_list(),
        "connect" => Err(ErrorShape::invalid(
            "connect is only valid as the first request",
        )),
        "exec.approval.list" => approvals::list(state, p).await,
        "exec.approval.grants.list" => approvals::grants_list(state, p).await,
        "exec.approval.grants.revoke" => approvals::grants_revoke(state, caller, p).await,
        "models.authStatus" => models::auth_status(state, p).await,
        "sessions.usage" => usage::sessions_usage(state, p).await,
        "usage.cost" => usage::cost(state, p).await,
        "usage.status" => usage::status(state, p).await,
        "config.schema" => config::schema(p),
        "config.schema.lookup" => config::schema_lookup(p),
        "users.list" => users::list(p),
        "users.self" => users::this(p),
        "secrets.reload" => secrets::reload(state, p).await,
        "hooks.status" => hook_status::status(state, p).await,
        "tts.status" | "tts.providers" | "tts.personas" | "tts.enable" | "tts.disable"
        | "tts.setProvider" | "tts.setPersona" | "tts.convert" | "tts.speak" | "talk.catalog" => {
            tts::method(state, frame.method.as_str(), p.clone()).await
        }
        "plugins.list" => plugins::list(state, p).await,
        "plugins.inspect" => plugins::inspect(state, p).await,
        "plugins.install" => plugins::install(state, caller, p).await,
        "plugins.setEnabled" => plugins::set_enabled(state, caller, p).await,
        "plugins.uninstall" => plugins::uninstall(state, caller, p).await,
        "message.action" => message_action::action(state, p).await,
        "diagnostics.stability" => stability::stability(state, p),
        "audit.activity.list" => audit::activity_list(state, p).await,
        "audit.list" => audit::legacy_list(state, p).await,
        other if other.starts_with("node.") || other.starts_with("exec.approvals.node.") => {
            nodes::route(state, caller, other, p)
                .await
                .unwrap_or_else(|| Err(ErrorShape::invalid(format!("unknown method: {other}"))))
        }
        other => dashboard::answer(state, other, p)
            .unwrap_or_else(|| Err(ErrorShape::invalid(format!("unknown method: {other}")))),
    }
}

// Helpers every method family shares.

use crate::protocol::errors::WireError;
use ferroclaw_actors::inbound::SessionKey;
use ferroclaw_actors::router::GetSession;
use ferroclaw_actors::session::SessionActor;

pub(crate) fn session_key(state: &SharedState, raw: &str) -> Result<SessionKey, ErrorShape> {
    let settings = state.live.settings();
    let main_key = &settings.session.main_key;
    SessionKey::canonical(raw, settings.default_agent_id(), main_key).map_err(store_err)
}

/// The session a key names for a method that also takes `agentId`, as
/// OpenClaw resolves it: a key that does not name its agent (`main`) is
/// that agent's; one that does must name the same agent.
pub(crate) fn agent_session_key(
    state: &SharedState,
    raw: &str,
    agent_id: Option<&str>,
) -> Result<SessionKey, ErrorShape> {
    let Some(a) = agent_id else {
        return session_key(state, raw);
    };
    if !ferroclaw_actors::ids::key::is_qualified(raw.trim()) {
        let settings = state.live.settings();
        let agent = a.trim().to_ascii_lowercase();
        return SessionKey::canonical(raw, &agent, &settings.session.main_key).map_err(store_err);
    }
    let k = session_key(state, raw)?;
    let agent = crate::protocol::session_rows::agent_of(k.as_str());
    if !a.eq_ignore_ascii_case(agent) {
        return Err(ErrorShape::invalid(format!(
            "agentId \"{a}\" does not match session key agent \"{agent}\""
        )));
    }
    Ok(k)
}

/// The stored entry of `key` (None: not created yet; nothing is made).
pub(crate) async fn lookup(
    state: &SharedState,
    key: &SessionKey,
) -> Result<Option<ferroclaw_actors::session::SessionEntry>, ErrorShape> {
    let asked = ferroclaw_actors::router::LookupSession { key: key.clone() };
    state
        .gateway
        .router
        .send(asked)
        .await
        .map_err(down)?
        .map_err(store_err)
}

/// A stored session's transcript (None: no such session; none is made).
pub(crate) async fn stored_transcript(
    state: &SharedState,
    key: &SessionKey,
) -> Result<Option<Vec<serde_json::Value>>, ErrorShape> {
    if lookup(state, key).await?.is_none() {
        return Ok(None);
    }
    let session = session_for(state, key.clone()).await?;
    let entries = session
        .send(ferroclaw_actors::session::GetTranscript)
        .await
        .map_err(down)?
        .map_err(store_err)?;
    Ok(Some(entries))
}

/// The main session of `agent` (`agent:<id>:<session.mainKey>`).
pub(crate) fn main_session(state: &SharedState, agent: &str) -> String {
    let settings = state.live.settings();
    format!(
        "agent:{}:{}",
        agent.trim().to_ascii_lowercase(),
        settings.session.main_key
    )
}

pub(crate) fn down<E>(_: E) -> ErrorShape {
    ErrorShape::unavailable("agent runtime unavailable").retry_after(1000)
}

/// An actor's error by the one table (`protocol::errors`).
/// The error frame of a message that did not reach its session.
pub(crate) fn deliver_err(e: ferroclaw_actors::router::DeliverError) -> ErrorShape {
    use ferroclaw_actors::router::DeliverError;
    match e {
        DeliverError::Store(e) => store_err(e),
        DeliverError::Transcript(e) => store_err(e),
        DeliverError::Gone | DeliverError::Down => down(()),
    }
}

pub(crate) fn store_err(e: impl WireError) -> ErrorShape {
    ErrorShape::from_error(&e)
}

/// The session actor for a client's key (created on first use).
pub(crate) async fn session_for(
    state: &SharedState,
    key: SessionKey,
) -> Result<actix::Addr<SessionActor>, ErrorShape> {
    let (session, _) = state
        .gateway
        .router
        .send(GetSession { key })
        .await
        .map_err(down)?
        .map_err(store_err)?;
    Ok(session)
}
