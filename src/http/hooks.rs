//! Webhooks (`hooks.*`, OpenClaw's keys): `POST <hooks.path>/wake` (a system
//! event; `mode: "now"` runs a heartbeat turn), `POST <hooks.path>/agent`
//! (an agent turn in a `hook:<uuid>` session, its reply delivered to the
//! last route unless `deliver: false`), and `POST <hooks.path>/<name>` for
//! each of `hooks.mappings` (its `match.path`; `messageTemplate` /
//! `textTemplate` read the payload with `{{a.b[0].c}}`).
//!
//! The hook token (`hooks.token`, not the gateway's) comes in
//! `Authorization: Bearer` or `X-OpenClaw-Token`; one in the query string is
//! refused with 400. 20 failures a minute from one client lock it out for a
//! minute (429, `Retry-After`). Bodies over `hooks.maxBodyBytes` get 413, a
//! body that does not arrive in 10 s 408. A repeated `idempotencyKey` (body)
//! or `Idempotency-Key` (header) answers with the first dispatch's result
//! for 5 minutes.

use std::time::Duration;

use actix_web::http::{header, Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use ferroclaw_actors::devices::secret_eq;
use ferroclaw_actors::idempotency::{
    ask_idempotency, CachedResponse, LookupIdempotent, RecordIdempotent,
};
use ferroclaw_actors::session::SendChat;
use ferroclaw_actors::settings::{BadSetting, HookAction, HookMapping, HooksSettings};
use futures_util::StreamExt;
use serde_json::{json, Value};
use sha2::Digest;

use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;
use crate::ws::methods::outbound::{self, DeliverParams};

const MAX_FAILURES: u32 = 20;

fn reply(status: StatusCode, body: Value) -> HttpResponse {
    HttpResponse::build(status).json(body)
}

fn bad(status: StatusCode, error: &str) -> HttpResponse {
    reply(status, json!({ "ok": false, "error": error }))
}

/// The hooks section, when hooks are on.
struct Hooks {
    base: String,
    token: String,
    max_body: usize,
    config: HooksSettings,
}

fn hooks(state: &SharedState) -> Option<Hooks> {
    let settings = state.live.settings();
    let h = &settings.hooks;
    if !h.enabled {
        return None;
    }
    let token = h.token.clone().filter(|t| !t.is_empty())?;
    Some(Hooks {
        base: h.path.trim_end_matches('/').to_string(),
        token,
        max_body: h.max_body_bytes as usize,
        config: h.clone(),
    })
}

/// Checks a `hooks` section at start: the error names the key.
pub fn check(h: &HooksSettings) -> Result<(), BadSetting> {
    if !h.enabled {
        return Ok(());
    }
    if h.token.as_deref().is_none_or(str::is_empty) {
        return Err(BadSetting::new(
            "hooks.token",
            "required when hooks.enabled is true",
        ));
    }
    if !(h.path.starts_with('/') && h.path.len() > 1) {
        return Err(BadSetting::new(
            "hooks.path",
            "expected a path such as \"/hooks\"",
        ));
    }
    for (i, m) in h.mappings.iter().enumerate() {
        if m.transform.as_ref().is_some_and(|t| !t.is_null()) {
            return Err(BadSetting::new(
                format!("hooks.mappings[{i}].transform"),
                "transform modules are not supported by ferroclaw; use messageTemplate",
            ));
        }
        if m.matches.path.is_empty() {
            return Err(BadSetting::new(
                format!("hooks.mappings[{i}].match.path"),
                "required",
            ));
        }
    }
    Ok(())
}

fn token_of(req: &HttpRequest) -> Option<&str> {
    let h = req.headers();
    h.get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| h.get("x-openclaw-token").and_then(|v| v.to_str().ok()))
        .map(str::trim)
}

/// Serves `req` when it is under the hooks path (and hooks are on).
pub async fn serve(
    req: &HttpRequest,
    payload: &mut web::Payload,
    state: &SharedState,
) -> Option<HttpResponse> {
    let hooks = hooks(state)?;
    let name = req
        .path()
        .strip_prefix(&hooks.base)?
        .strip_prefix('/')?
        .to_string();
    Some(handle(req, payload, state, &hooks, &name).await)
}

async fn handle(
    req: &HttpRequest,
    payload: &mut web::Payload,
    state: &SharedState,
    hooks: &Hooks,
    name: &str,
) -> HttpResponse {
    let query = req.query_string();
    if query
        .split('&')
        .any(|kv| kv == "token" || kv.starts_with("token="))
    {
        tracing::info!(path = %req.path(), "hook token in the query string refused");
        return bad(StatusCode::BAD_REQUEST, "send the hook token in the Authorization or X-OpenClaw-Token header, not the query string");
    }
    if req.method() != Method::POST {
        return HttpResponse::MethodNotAllowed()
            .insert_header((header::ALLOW, "POST"))
            .finish();
    }
    if let Some(refused) = refusal(req, state, hooks) {
        return refused;
    }
    let body = match read_body(payload, hooks.max_body, "hooks.maxBodyBytes").await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => return bad(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
    };
    let key = req
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| body["idempotencyKey"].as_str().map(str::to_string))
        .filter(|k| !k.trim().is_empty())
        .map(|k| replay_key(&hooks.token, name, &k));
    if let Some(first) = replayed(state, key.as_deref()).await {
        tracing::info!(hook = %name, "hook replay answered from the first dispatch");
        return reply(StatusCode::OK, first);
    }
    let (status, out) = dispatch(state, hooks, name, &body).await;
    if let (Some(k), true) = (key, status == StatusCode::OK) {
        remember(state, k, &out).await;
    }
    if status == StatusCode::NO_CONTENT {
        return HttpResponse::NoContent().finish();
    }
    reply(status, out)
}

/// The answer to a request without the hook token (in a header), if it
/// has none; failures counted per client address, which is locked out
/// after `MAX_FAILURES` in a minute.
fn refusal(req: &HttpRequest, state: &SharedState, hooks: &Hooks) -> Option<HttpResponse> {
    let ip = crate::http::auth::client_ip(req, &state.live.settings().gateway.trusted_proxies);
    let lock_key = format!("hook:{}", ip.map(|i| i.to_string()).unwrap_or_default());
    if let Err(ms) = state.control_plane_limiter.check(&lock_key) {
        return Some(HttpResponse::TooManyRequests()
            .insert_header((header::RETRY_AFTER, ms.div_ceil(1000).to_string()))
            .json(json!({ "ok": false, "error": "too many failed hook authentications; try again later" })));
    }
    if !token_of(req).is_some_and(|t| secret_eq(&hooks.token, t)) {
        let minute = Duration::from_secs(60);
        state
            .control_plane_limiter
            .hit(&lock_key, MAX_FAILURES, minute, minute);
        tracing::info!(path = %req.path(), ?ip, "unauthorized hook request");
        return Some(bad(StatusCode::UNAUTHORIZED, "unauthorized"));
    }
    None
}

/// What the first dispatch under this replay key answered, if any.
async fn replayed(state: &SharedState, key: Option<&str>) -> Option<Value> {
    let key = key?.to_string();
    let cached = ask_idempotency(
        &state.gateway.idempotency,
        &state.gateway.metrics,
        LookupIdempotent { key },
    )
    .await;
    match cached {
        Ok(Some(c)) => Some(c.payload.unwrap_or(json!({ "ok": true }))),
        _ => None,
    }
}

/// A dispatched hook's answer under its replay key (durable).
async fn remember(state: &SharedState, key: String, out: &Value) {
    let response = CachedResponse {
        ts: ferroclaw_actors::now_ms(),
        ok: true,
        payload: Some(out.clone()),
        error: None,
    };
    let record = RecordIdempotent {
        key,
        response,
        durable: true,
    };
    let _ = ask_idempotency(&state.gateway.idempotency, &state.gateway.metrics, record).await;
}

fn replay_key(token: &str, name: &str, id: &str) -> String {
    let hash = |s: &str| {
        let d = sha2::Sha256::digest(s.as_bytes());
        d.iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    format!("hook:{}:{}:{}", hash(token), hash(name), hash(id))
}

/// A request body of at most `max` bytes (`limit`: the setting that
/// says so, for the 413), arriving within 10 s (else 408).
pub(crate) async fn read_body(
    payload: &mut web::Payload,
    max: usize,
    limit: &str,
) -> Result<Vec<u8>, HttpResponse> {
    let read = async {
        let mut body = Vec::new();
        while let Some(chunk) = payload.next().await {
            let chunk =
                chunk.map_err(|_| bad(StatusCode::BAD_REQUEST, "the body could not be read"))?;
            if body.len() + chunk.len() > max {
                return Err(bad(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the body is too large ({limit})"),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(r) => r,
        Err(_) => Err(bad(
            StatusCode::REQUEST_TIMEOUT,
            "the body did not arrive in time",
        )),
    }
}

async fn dispatch(
    state: &SharedState,
    hooks: &Hooks,
    name: &str,
    body: &Value,
) -> (StatusCode, Value) {
    match name {
        "wake" => {
            wake(
                state,
                body["text"].as_str().unwrap_or_default(),
                body["mode"].as_str(),
            )
            .await
        }
        "agent" => agent(state, hooks, body).await,
        other => {
            let mapping = hooks.config.mappings.iter().find(|m| {
                m.matches.path.trim_matches('/') == other
                    && (m.matches.source.as_deref())
                        .is_none_or(|s| body["source"].as_str() == Some(s))
            });
            match mapping {
                Some(m) => mapped(state, hooks, m, body).await,
                None => (
                    StatusCode::NOT_FOUND,
                    json!({ "ok": false, "error": format!("no hook named {other}") }),
                ),
            }
        }
    }
}

async fn wake(state: &SharedState, text: &str, mode: Option<&str>) -> (StatusCode, Value) {
    let mode = mode.unwrap_or("now");
    if text.trim().is_empty() || !matches!(mode, "now" | "next-heartbeat") {
        return (
            StatusCode::BAD_REQUEST,
            json!({ "ok": false, "error": "text is required; mode is now or next-heartbeat" }),
        );
    }
    // A webhook's text is a stranger's: wrapped, and its turn untrusted.
    match outbound::wake_now(state, mode, text, None, None, true).await {
        Ok(_) => (StatusCode::OK, json!({ "ok": true, "mode": mode })),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "ok": false, "error": e.message }),
        ),
    }
}

/// An agent turn from a hook: `agentId` (within `allowedAgentIds`),
/// `sessionKey` (only with `allowRequestSessionKey`), else
/// `defaultSessionKey` or a new `hook:<uuid>`.
async fn agent(state: &SharedState, hooks: &Hooks, body: &Value) -> (StatusCode, Value) {
    let files = body["attachments"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    let message = body["message"].as_str().unwrap_or_default();
    if message.trim().is_empty() && !files {
        return (
            StatusCode::BAD_REQUEST,
            json!({ "ok": false, "error": "message is required" }),
        );
    }
    let cfg = &hooks.config;
    let agent = body["agentId"]
        .as_str()
        .map(|a| a.trim().to_ascii_lowercase());
    if let (Some(a), Some(allowed)) = (&agent, &cfg.allowed_agent_ids) {
        if !allowed.iter().any(|x| x == "*" || x == a) {
            return (
                StatusCode::BAD_REQUEST,
                json!({ "ok": false, "error": format!("agentId {a} is not allowed for hooks") }),
            );
        }
    }
    let asked = body["sessionKey"]
        .as_str()
        .filter(|_| cfg.allow_request_session_key);
    let tail = asked
        .map(str::to_string)
        .or_else(|| cfg.default_session_key.clone())
        .unwrap_or_else(|| format!("hook:{}", uuid::Uuid::new_v4()));
    let raw = match (&agent, ferroclaw_actors::ids::key::is_qualified(&tail)) {
        (_, true) => tail,
        (Some(a), false) => format!("agent:{a}:{tail}"),
        (None, false) => tail,
    };
    let text = match body["name"].as_str().filter(|n| !n.trim().is_empty()) {
        Some(n) => format!("[{n}] {message}"),
        None => message.to_string(),
    };
    run(state, &raw, &text, body).await
}

/// A hook's turn. Its text and files are outside data (`untrusted`).
async fn run(state: &SharedState, raw_key: &str, text: &str, body: &Value) -> (StatusCode, Value) {
    use crate::ws::methods::attachments;
    let unavailable = |e: String| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "ok": false, "error": e }),
        )
    };
    let key = match crate::ws::methods::session_key(state, raw_key) {
        Ok(k) => k,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                json!({ "ok": false, "error": e.message }),
            )
        }
    };
    // Attachments as chat.send takes them (base64), checked before anything runs.
    let raw = body["attachments"].as_array().cloned().unwrap_or_default();
    let checked = match attachments::check(&raw) {
        Ok(c) => c,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                json!({ "ok": false, "error": e.message }),
            )
        }
    };
    let taken = attachments::take_in(state, &key, text, checked, false).await;
    let shown = attachments::shown_with(text, &taken);
    let text = attachments::text_with(text, &taken);
    let mut send = SendChat::text(&text, &format!("hook-{}", ulid::Ulid::generate()));
    send.shown = shown;
    send.images = taken.images;
    send.media = taken.media;
    send.thinking = body["thinking"].as_str().map(str::to_string);
    // Webhook payloads are external content: their turn never execs on the host.
    send.untrusted = true;
    send.kind = ferroclaw_actors::run::RunKind::Hook;
    send.timeout = body["timeoutSeconds"].as_u64().map(Duration::from_secs);
    let ack =
        match ferroclaw_actors::router::deliver(&state.gateway.router, key.clone(), send).await {
            Ok(a) => a,
            Err(e) => return unavailable(e.to_string()),
        };
    if body["deliver"] != json!(false) {
        if let Err(e) = deliver(state, key.as_str(), &ack.run_id, body).await {
            tracing::warn!(error = %e.message, "hook reply not delivered to a channel");
        }
    }
    tracing::info!(session_key = %key.as_str(), run_id = %ack.run_id, "hook dispatched an agent turn");
    (StatusCode::OK, json!({ "ok": true, "runId": ack.run_id }))
}

/// The hook's reply to `channel`/`to`, or (`last`, the default) to the
/// main session's last route.
async fn deliver(
    state: &SharedState,
    key: &str,
    run_id: &str,
    body: &Value,
) -> Result<bool, ErrorShape> {
    let channel = body["channel"]
        .as_str()
        .filter(|c| *c != "last")
        .map(str::to_string);
    let main = crate::ws::methods::session_key(state, "main")?;
    let origin = state
        .gateway
        .router
        .send(ferroclaw_actors::router::LookupSession { key: main })
        .await
        .map_err(|e| ErrorShape::unavailable(e.to_string()))?
        .map_err(|e| ErrorShape::unavailable(e.to_string()))?
        .and_then(|e| e.origin);
    let d = DeliverParams {
        deliver: Some(true),
        originating_channel: channel.or_else(|| origin.as_ref().map(|o| o.channel.clone())),
        originating_to: body["to"]
            .as_str()
            .map(str::to_string)
            .or_else(|| origin.as_ref().map(|o| o.to.clone())),
        originating_account_id: origin.as_ref().map(|o| o.account_id.clone()),
        originating_thread_id: origin.as_ref().and_then(|o| o.thread_id.clone()),
    };
    // A webhook's turn answers outside data: its reply sends no stored file.
    let hook = ferroclaw_actors::run::RunKind::Hook;
    outbound::follow(state, key, run_id, &d, (true, hook)).await
}

/// A configured mapping: its templates rendered from the payload; an
/// empty rendering drops the event (204).
async fn mapped(
    state: &SharedState,
    hooks: &Hooks,
    m: &HookMapping,
    body: &Value,
) -> (StatusCode, Value) {
    if m.action == HookAction::Wake {
        let text = m.text_template.as_deref().map_or_else(
            || body["text"].as_str().unwrap_or_default().to_string(),
            |t| render(t, body),
        );
        if text.trim().is_empty() {
            return (StatusCode::NO_CONTENT, Value::Null);
        }
        return wake(state, &text, m.wake_mode.as_deref()).await;
    }
    let message = m.message_template.as_deref().map_or_else(
        || body["message"].as_str().unwrap_or_default().to_string(),
        |t| render(t, body),
    );
    if message.trim().is_empty() {
        return (StatusCode::NO_CONTENT, Value::Null);
    }
    // The call as `/hooks/agent` takes it, from the mapping's own fields.
    let mut call = json!({ "message": message });
    let fields = [
        ("name", json!(m.name)),
        ("agentId", json!(m.agent_id)),
        ("deliver", json!(m.deliver)),
        ("channel", json!(m.channel)),
        ("to", json!(m.to)),
        ("thinking", json!(m.thinking)),
        ("timeoutSeconds", json!(m.timeout_seconds)),
    ];
    for (k, v) in fields {
        if !v.is_null() {
            call[k] = v;
        }
    }
    let mut scoped = Hooks {
        base: hooks.base.clone(),
        token: hooks.token.clone(),
        max_body: hooks.max_body,
        config: hooks.config.clone(),
    };
    if let Some(sk) = &m.session_key {
        // A mapping's own session key is the operator's, not the caller's.
        call["sessionKey"] = json!(render(sk, body));
        scoped.config.allow_request_session_key = true;
    }
    agent(state, &scoped, &call).await
}

/// `{{a.b[0].c}}` placeholders read from the payload (strings as they are,
/// other values as JSON, missing ones empty).
pub fn render(template: &str, payload: &Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let path = rest[start + 2..start + end].trim();
        match lookup(payload, path) {
            Some(Value::String(s)) => out.push_str(s),
            Some(Value::Null) | None => {}
            Some(v) => out.push_str(&v.to_string()),
        }
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.') {
        let (name, mut idx) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        while let Some(close) = idx.find(']') {
            let n: usize = idx.get(1..close)?.parse().ok()?;
            cur = cur.get(n)?;
            idx = &idx[close + 1..];
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_read_the_payload() {
        let p = json!({ "messages": [{ "subject": "Hi", "from": { "name": "Ann" } }], "n": 3, "s": "x" });
        assert_eq!(
            render(
                "New mail from {{messages[0].from.name}}: {{ messages[0].subject }}",
                &p
            ),
            "New mail from Ann: Hi"
        );
        assert_eq!(
            render("{{n}} {{missing.path}}|{{messages[5].x}}", &p),
            "3 |"
        );
        assert_eq!(render("open {{s", &p), "open {{s");
        assert_eq!(render("plain", &p), "plain");
    }

    /// The shipped `hooks` section with `patch`'s keys over it.
    fn hooks(patch: Value) -> HooksSettings {
        let (_, s, _) = crate::config::check_user_raw(&json!({ "hooks": patch }).to_string(), "f")
            .expect("a readable hooks section");
        s.hooks
    }

    /// `check` of the section (the config check runs it too: read it raw).
    fn check(patch: &Value) -> Result<(), BadSetting> {
        let mut h = serde_json::to_value(hooks(json!({}))).unwrap();
        for (k, v) in patch.as_object().unwrap() {
            h[k] = v.clone();
        }
        super::check(&serde_json::from_value(h).unwrap())
    }

    #[test]
    fn hook_sections_are_checked() {
        assert!(check(&json!({})).is_ok());
        assert_eq!(hooks(json!({})).path, "/hooks", "the shipped default");
        assert_eq!(hooks(json!({})).max_body_bytes, 262_144);
        assert!(check(&json!({ "enabled": true }))
            .unwrap_err()
            .to_string()
            .starts_with("hooks.token"));
        assert!(
            check(&json!({ "enabled": true, "token": "t", "path": "hooks" }))
                .unwrap_err()
                .to_string()
                .starts_with("hooks.path")
        );
        let e = check(
            &json!({ "enabled": true, "token": "t", "mappings": [{ "match": { "path": "gmail" }, "transform": { "module": "x.js" } }] }),
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .starts_with("hooks.mappings[0].transform"));
        assert!(check(&json!({ "enabled": true, "token": "t", "mappings": [{ "match": { "path": "gmail" } }] })).is_ok());
    }
}
