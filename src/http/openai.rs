//! OpenAI-compatible HTTP API (protocol.md section 8), off unless
//! `gateway.http.endpoints.chatCompletions.enabled` is true:
//! `POST /v1/chat/completions` (stream and non-stream; the agent from
//! `model: "ferroclaw:<id>" | "openclaw:<id>" | "agent:<id>"` or the
//! `x-openclaw-agent-id` header; the session from `x-openclaw-session-key`,
//! else the `user` field, else a new one per request) and `GET /v1/models`.
//! `POST /tools/invoke` is always on: one tool call with the tool policy
//! applied. All need the gateway token or password as a bearer.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use ferroclaw_actors::inbound::{sanitize_text, SessionKey};
use ferroclaw_actors::router::LookupSession;
use ferroclaw_actors::session::SendChat;
use ferroclaw_actors::tool::ExecuteTool;
use serde_json::{json, Value};

use crate::state::SharedState;
use ferroclaw_actors::runs::{wait_run, RunResult, RunUpdate, Waited, WatchRun};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(post_only("/v1/chat/completions", chat_completions));
    cfg.service(post_only("/tools/invoke", tools_invoke));
    cfg.service(
        web::resource("/v1/models")
            .route(web::get().to(models))
            .default_service(web::to(|| async { not_allowed("GET") })),
    );
}

fn post_only<F, Args>(path: &str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .route(web::post().to(handler))
        .default_service(web::to(|| async { not_allowed("POST") }))
}

fn not_allowed(allow: &'static str) -> HttpResponse {
    HttpResponse::MethodNotAllowed()
        .insert_header((header::ALLOW, allow))
        .json(json!({ "error": { "message": "Method Not Allowed", "type": "method_not_allowed" } }))
}

/// OpenAI's error body.
fn oai_error(status: actix_web::http::StatusCode, kind: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({ "error": { "message": message, "type": kind } }))
}

fn enabled(state: &SharedState) -> bool {
    state
        .live
        .settings()
        .gateway
        .http
        .endpoints
        .chat_completions
        .enabled
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain")
        .body("Not Found")
}

async fn models(req: HttpRequest, state: web::Data<SharedState>) -> HttpResponse {
    if !enabled(&state) {
        return not_found();
    }
    if let Err(refused) = super::auth::check_bearer(&req, &state, "/v1/models") {
        return refused.response();
    }
    let data: Vec<Value> = state
        .gateway
        .context
        .agents
        .iter()
        .map(|a| json!({ "id": format!("ferroclaw:{a}"), "object": "model", "created": 0, "owned_by": "ferroclaw" }))
        .collect();
    HttpResponse::Ok().json(json!({ "object": "list", "data": data }))
}

/// The text of one OpenAI message's `content` (a string or text parts).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The agent a request names (`ferroclaw:<id>`, `openclaw:<id>`, `agent:<id>`, or the header).
fn agent_of(req: &HttpRequest, model: Option<&str>, default: &str) -> String {
    let from_model = model.and_then(|m| {
        ["ferroclaw:", "openclaw:", "agent:"]
            .iter()
            .find_map(|p| m.strip_prefix(p))
            .map(str::to_string)
    });
    from_model
        .or_else(|| {
            req.headers()
                .get("x-openclaw-agent-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_else(|| default.to_string())
        .trim()
        .to_ascii_lowercase()
}

/// One completion's names: its id, when it was made, the model asked for.
struct Completion {
    id: String,
    created: u64,
    model: String,
}

impl Completion {
    /// One `chat.completion.chunk` SSE event.
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Bytes {
        let c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        });
        Bytes::from(format!("data: {c}\n\n"))
    }

    /// The whole `chat.completion`.
    fn whole(&self, r: &RunResult) -> HttpResponse {
        HttpResponse::Ok().json(json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": r.outcome.text() }, "finish_reason": finish_reason(r) }],
            "usage": usage_of(r),
        }))
    }
}

/// An SSE error event.
fn error_event(message: &str) -> Bytes {
    let e = json!({ "error": { "message": message, "type": "server_error" } });
    Bytes::from(format!("data: {e}\n\n"))
}

fn finish_reason(r: &RunResult) -> &'static str {
    if r.stop_reason == "length" {
        "length"
    } else {
        "stop"
    }
}

fn usage_of(r: &RunResult) -> Value {
    let (input, output) = r.usage.map_or((0, 0), |u| (u.input, u.output));
    json!({ "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output })
}

fn bad_request(m: &str) -> HttpResponse {
    oai_error(
        actix_web::http::StatusCode::BAD_REQUEST,
        "invalid_request_error",
        m,
    )
}

ferroclaw_actors::reason_error! {
    /// Why a request is not one the endpoint can answer (a 400).
    struct BadRequest;
}

/// What a request asks: its session, the prompt's last user message and
/// where it is, whether it streams.
struct Asked<'a> {
    messages: &'a [Value],
    last_user: usize,
    text: String,
    model: Option<&'a str>,
    stream: bool,
}

impl<'a> Asked<'a> {
    fn read(body: &'a Value) -> Result<Asked<'a>, BadRequest> {
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return Err("`messages` (an array) is required".into());
        };
        let Some(last_user) = messages
            .iter()
            .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        else {
            return Err("`messages` needs a user message".into());
        };
        let text = sanitize_text(&content_text(&messages[last_user]["content"]));
        if text.trim().is_empty() {
            return Err("the last user message is empty".into());
        }
        Ok(Asked {
            messages,
            last_user,
            text,
            model: body.get("model").and_then(Value::as_str),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// The prompt: for a new session the earlier messages of the request
    /// come first, as context.
    fn prompt(&self, known: bool) -> String {
        let mut prompt = String::new();
        if !known && self.last_user > 0 {
            prompt.push_str("[Earlier messages of this conversation]\n");
            for m in &self.messages[..self.last_user] {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                prompt.push_str(&format!("{role}: {}\n", content_text(&m["content"])));
            }
            prompt.push_str("\n[Current message]\n");
        }
        prompt.push_str(&self.text);
        prompt
    }
}

/// The session: `x-openclaw-session-key`, else one per `user`, else a new
/// one per request.
fn session_of(
    req: &HttpRequest,
    body: &Value,
    agent: &str,
    (default_agent, main_key): (&str, &str),
) -> Result<SessionKey, BadRequest> {
    let header = req
        .headers()
        .get("x-openclaw-session-key")
        .and_then(|v| v.to_str().ok());
    let user = body
        .get("user")
        .and_then(Value::as_str)
        .filter(|u| !u.trim().is_empty());
    let raw_key = match (header, user) {
        (Some(k), _) => k.to_string(),
        (None, Some(user)) => {
            let user: String = user
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || "-_.@".contains(*c))
                .take(64)
                .collect();
            format!("agent:{agent}:openai-user:{user}")
        }
        (None, None) => format!(
            "agent:{agent}:openai:{}",
            ulid::Ulid::generate().to_string().to_lowercase()
        ),
    };
    SessionKey::canonical(&raw_key, default_agent, main_key)
        .map_err(|e| format!("invalid session key: {e}").into())
}

/// A refused send as OpenAI's error body, with the wire code's status.
fn send_refused(e: &crate::protocol::errors::ErrorShape) -> HttpResponse {
    use actix_web::http::StatusCode;
    let status =
        StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let kind = if status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    };
    oai_error(status, kind, &e.message)
}

async fn chat_completions(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<SharedState>,
) -> HttpResponse {
    if !enabled(&state) {
        return not_found();
    }
    if let Err(refused) = super::auth::check_bearer(&req, &state, "/v1/chat/completions") {
        return refused.response();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad_request("the body must be a JSON object");
    };
    let asked = match Asked::read(&body) {
        Ok(a) => a,
        Err(e) => return bad_request(&e.to_string()),
    };
    let settings = state.live.settings();
    let agent = agent_of(&req, asked.model, settings.default_agent_id());
    if !state.gateway.context.agents.contains(&agent) {
        return bad_request(&format!("unknown agent {agent:?}"));
    }
    let ids = (
        settings.default_agent_id(),
        settings.session.main_key.as_str(),
    );
    let key = match session_of(&req, &body, &agent, ids) {
        Ok(k) => k,
        Err(e) => return bad_request(&e.to_string()),
    };
    let lookup = LookupSession { key: key.clone() };
    let known = matches!(state.gateway.router.send(lookup).await, Ok(Ok(Some(_))));
    let prompt = asked.prompt(known);
    let completion = Completion {
        id: format!(
            "chatcmpl-{}",
            ulid::Ulid::generate().to_string().to_lowercase()
        ),
        created: ferroclaw_actors::now_ms() / 1000,
        model: asked.model.unwrap_or("ferroclaw").to_string(),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    if asked.stream {
        let run_id = completion.id.clone().into();
        state.gateway.runs.do_send(WatchRun { run_id, tx });
    }
    let ack = match send(&state, &key, &prompt, &completion.id).await {
        Ok(ack) => ack,
        Err(refused) => return refused,
    };
    let limit = Duration::from_secs(settings.agents.defaults.timeout_seconds.max(1) + 5);
    if asked.stream {
        return streamed(completion, limit, rx);
    }
    whole(&state, &ack.run_id, limit, &completion).await
}

/// The prompt to the session as the operator's own message (the bearer
/// token is the operator's); a full queue is a 429.
async fn send(
    state: &SharedState,
    key: &SessionKey,
    prompt: &str,
    run_id: &str,
) -> Result<ferroclaw_actors::session::SendAck, HttpResponse> {
    let make = || SendChat {
        command_authorized: true,
        origin: None,
        untrusted: false,
        model: None,
        ..SendChat::text(prompt, run_id)
    };
    let ack = crate::ws::methods::chat::send_to_session(state, key, make)
        .await
        .map_err(|e| send_refused(&e))?;
    if ack.status == ferroclaw_actors::session::SendStatus::Dropped {
        return Err(oai_error(
            actix_web::http::StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "the session's queue is full; send it again later",
        ));
    }
    Ok(ack)
}

/// The run's answer in one `chat.completion` once it ends.
async fn whole(
    state: &SharedState,
    run_id: &ferroclaw_actors::ids::RunId,
    limit: Duration,
    completion: &Completion,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    match wait_run(&state.gateway.runs, run_id, None, limit).await {
        Waited::Ended(r) => match r.outcome.error() {
            Some(e) => {
                let e = if e.is_empty() { "the run failed" } else { e };
                oai_error(StatusCode::BAD_GATEWAY, "server_error", e)
            }
            None => completion.whole(&r),
        },
        _ => oai_error(
            StatusCode::GATEWAY_TIMEOUT,
            "server_error",
            "the agent did not answer in time",
        ),
    }
}

/// The run's updates as `chat.completion.chunk` events, then `[DONE]`.
fn streamed(
    c: Completion,
    limit: Duration,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<RunUpdate>,
) -> HttpResponse {
    let body = async_stream(move |out| async move {
        let _ = out.send(c.chunk(json!({ "role": "assistant", "content": "" }), None));
        // The current assistant message's text as streamed so far.
        let mut current = String::new();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let Ok(Some(update)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
                let _ = out.send(error_event("the agent did not answer in time"));
                break;
            };
            match update {
                RunUpdate::Delta { text, fresh } => {
                    if fresh {
                        current.clear();
                    }
                    current.push_str(&text);
                    let _ = out.send(c.chunk(json!({ "content": text }), None));
                }
                RunUpdate::End(r) => {
                    if let Some(e) = r.outcome.error() {
                        let _ = out.send(error_event(e));
                        break;
                    }
                    // What the final adds to the streamed text (a usage footer).
                    let rest = r.outcome.text().strip_prefix(current.as_str());
                    if let Some(rest) = rest.filter(|r| !r.is_empty()) {
                        let _ = out.send(c.chunk(json!({ "content": rest }), None));
                    }
                    let _ = out.send(c.chunk(json!({}), Some(finish_reason(&r))));
                    break;
                }
            }
        }
        let _ = out.send(Bytes::from_static(b"data: [DONE]\n\n"));
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(body)
}

/// A byte stream fed by a task: `f` gets the sender.
fn async_stream<F, Fut>(f: F) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>>
where
    F: FnOnce(tokio::sync::mpsc::UnboundedSender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    actix_web::rt::spawn(f(tx));
    futures_util::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|b| (Ok(b), rx)) },
    )
}

fn invoke_error(status: actix_web::http::StatusCode, kind: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status)
        .json(json!({ "ok": false, "error": { "type": kind, "message": message } }))
}

/// The tool and its arguments (`action` folded into them when they do
/// not name one).
fn invocation(body: &Value) -> Result<(&str, Value), &'static str> {
    let Some(tool) = body
        .get("tool")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return Err("`tool` (a string) is required");
    };
    let mut args = match body.get("args") {
        None | Some(Value::Null) => json!({}),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => return Err("`args` must be an object"),
    };
    if let Some(action) = body.get("action").and_then(Value::as_str) {
        if args.get("action").is_none() {
            args["action"] = json!(action);
        }
    }
    Ok((tool, args))
}

/// The exec policy of a call on `key`: `tools.exec` (its host, else the
/// sandbox's choice for the session).
fn exec_policy(
    p: &ferroclaw_actors::tool::policy::ToolPolicy,
    key: &SessionKey,
) -> ferroclaw_actors::approvals::ExecPolicy {
    ferroclaw_actors::approvals::ExecPolicy {
        host: p
            .exec
            .host
            .unwrap_or_else(|| p.exec.sandbox.host_for(key.as_str())),
        security: p.exec.security,
        ask: p.exec.ask,
        node: p.exec.node.as_deref().map(std::sync::Arc::from),
    }
}

async fn tools_invoke(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<SharedState>,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    if let Err(refused) = super::auth::check_bearer(&req, &state, "/tools/invoke") {
        return refused.response();
    }
    let bad = |m: &str| invoke_error(StatusCode::BAD_REQUEST, "invalid_request", m);
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return bad("the body must be a JSON object");
    };
    let (tool, args) = match invocation(&body) {
        Ok(asked) => asked,
        Err(e) => return bad(e),
    };
    let settings = state.live.settings();
    let raw_key = body
        .get("sessionKey")
        .and_then(Value::as_str)
        .unwrap_or("main");
    let main_key = &settings.session.main_key;
    let key = match SessionKey::canonical(raw_key, settings.default_agent_id(), main_key) {
        Ok(k) => k,
        Err(e) => return bad(&format!("invalid sessionKey: {e}")),
    };
    let agent = key.agent_id();
    let channel = req
        .headers()
        .get("x-openclaw-message-channel")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("http")
        .to_string();
    let g = &state.gateway;
    // A bearer of the gateway secret is an operator.
    let trust = ferroclaw_actors::trust::Trust {
        untrusted: false,
        channels: vec![channel],
    };
    let offered = g.tool_policy.offered(&g.tools.all(), agent, &trust, None);
    if !offered.iter().any(|t| t.name == tool) {
        return invoke_error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("tool {tool:?} is not available"),
        );
    }
    if body.get("dryRun").and_then(Value::as_bool) == Some(true) {
        return HttpResponse::Ok()
            .json(json!({ "ok": true, "result": { "dryRun": true, "tool": tool, "args": args } }));
    }
    let call = ferroclaw_actors::provider::ToolCall {
        id: format!("http_{}", ulid::Ulid::generate()),
        name: tool.to_string(),
        arguments: args,
    };
    run_tool(g, call, key, trust).await
}

/// Runs `call` as the operator's, on `key`'s agent, and answers with its
/// text or its error.
async fn run_tool(
    g: &ferroclaw_actors::tree::Gateway,
    call: ferroclaw_actors::provider::ToolCall,
    key: SessionKey,
    trust: ferroclaw_actors::trust::Trust,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    // Kept until the tool answers: the call is never cancelled.
    let (_keep, cancel) = tokio::sync::watch::channel(false);
    let call = ExecuteTool {
        call,
        cancel,
        env: Vec::new().into(),
        exec: exec_policy(&g.tool_policy, &key),
        agent_id: key.agent_id().to_string(),
        session_key: key,
        trust,
        progress: None,
        run_id: None,
        origin: None,
        model: None,
    };
    match g.executor.send(call).await {
        Ok(out) if !out.is_error => HttpResponse::Ok().json(json!({
            "ok": true, "result": { "content": [{ "type": "text", "text": out.text }] },
        })),
        Ok(out) => invoke_error(StatusCode::BAD_REQUEST, "tool_error", &out.text),
        Err(_) => invoke_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the tool executor is unavailable",
        ),
    }
}
