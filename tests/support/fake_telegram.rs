//! A fake Telegram Bot API on loopback, in its own thread (actix-web), that
//! speaks the real JSON shapes: `POST /bot<token>/<method>` answering
//! `{ok, result}` or `{ok:false, error_code, description, parameters}`, and
//! `GET /file/bot<token>/<path>`. `getUpdates` long-polls and forgets
//! updates below the offset it is sent, as Telegram does. `parse_mode:
//! HTML` texts are checked (unbalanced tags are refused as "can't parse
//! entities"). Scriptable faults per method: 429 with `retry_after`, 409,
//! 5xx, a hang, an answer that never comes after the call was applied, a
//! parse error. Everything sent is recorded for the tests.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};

use super::fake_server::{serve, NoSocket, Served};
use serde_json::{json, Value};

pub const BOT_ID: i64 = 777;
pub const BOT_USERNAME: &str = "ferro_bot";

/// A fault the next call of a method meets.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `parameters.retry_after` (seconds).
    RateLimit(u64),
    /// 409 Conflict (another poller).
    Conflict,
    /// 5xx.
    Server(u16),
    /// No answer for this long, then the call is applied and answered
    /// (a client timeout shorter than this sees no answer).
    Hang(Duration),
    /// The call is applied at once, the answer never comes (held this long).
    AppliedNoAnswer(Duration),
    /// 400 "can't parse entities".
    ParseEntities,
    /// 200 with a body that is not the Bot API's (an HTML error page).
    Garbage,
}

/// One message the bot sent (or its latest text after edits).
#[derive(Debug, Clone)]
pub struct Sent {
    pub chat_id: i64,
    pub message_id: i64,
    pub text: String,
    pub html: bool,
    pub thread_id: Option<i64>,
    pub reply_to: Option<i64>,
    pub edits: usize,
    pub at: Instant,
    /// Its inline keyboard, row by row: (text, callback_data).
    pub buttons: Vec<Vec<(String, String)>>,
}

#[derive(Default)]
struct Inner {
    /// Files uploaded (multipart), in order.
    uploads: Vec<super::fake_server::Part>,
    updates: VecDeque<Value>,
    next_update_id: i64,
    next_message_id: i64,
    sent: Vec<Sent>,
    /// (method, time) of every call.
    calls: Vec<(String, Instant)>,
    faults: HashMap<String, VecDeque<Fault>>,
    commands: Value,
    actions: Vec<(i64, String)>,
    files: HashMap<String, Vec<u8>>,
    polls_now: usize,
    polls_max: usize,
    /// The highest offset a poll confirmed.
    confirmed: i64,
    /// How many polls returned each update.
    delivered: HashMap<i64, usize>,
    /// The bot's reactions: (chat, message) -> emoji (none: taken away).
    reactions: HashMap<(i64, i64), Vec<String>>,
    /// Messages deleted: (chat, message).
    deleted: Vec<(i64, i64)>,
    /// Messages users sent (pushed as updates): (chat, message).
    updates_seen: std::collections::HashSet<(i64, i64)>,
    /// Button presses answered (`answerCallbackQuery`), by id.
    callbacks_answered: Vec<String>,
    next_callback_id: i64,
}

struct State {
    token: String,
    inner: Mutex<Inner>,
    arrived: tokio::sync::Notify,
}

pub struct FakeTelegram {
    pub base: String,
    state: Arc<State>,
    _served: Served,
}

fn ok(result: Value) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "ok": true, "result": result }))
}

fn err(code: u16, description: &str, retry_after: Option<u64>) -> HttpResponse {
    let mut body = json!({ "ok": false, "error_code": code, "description": description });
    if let Some(s) = retry_after {
        body["parameters"] = json!({ "retry_after": s });
    }
    let status = actix_web::http::StatusCode::from_u16(code)
        .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST);
    HttpResponse::build(status).json(body)
}

/// Telegram's HTML check, roughly: known tags balanced, `&` entities known.
fn html_ok(text: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['<', '&']) {
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix('&') {
            let known = ["amp;", "lt;", "gt;", "quot;"];
            if !known.iter().any(|k| after.starts_with(k)) {
                return false;
            }
            rest = after;
            continue;
        }
        let Some(end) = tail.find('>') else {
            return false;
        };
        let tag = &tail[1..end];
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop().as_deref() != Some(name) {
                return false;
            }
        } else {
            let name = tag.split_whitespace().next().unwrap_or("");
            if ![
                "b",
                "i",
                "s",
                "u",
                "code",
                "pre",
                "a",
                "blockquote",
                "tg-spoiler",
            ]
            .contains(&name)
            {
                return false;
            }
            stack.push(name.to_string());
        }
        rest = &tail[end + 1..];
    }
    stack.is_empty()
}

fn dm_message(user: i64, message_id: i64, text: &str) -> Value {
    json!({
        "message_id": message_id, "date": super::unix_s(),
        "chat": { "id": user, "type": "private", "first_name": "U" },
        "from": { "id": user, "is_bot": false, "first_name": format!("User{user}") },
        "text": text,
    })
}

impl FakeTelegram {
    pub fn start(token: &str) -> FakeTelegram {
        let state = Arc::new(State {
            token: token.to_string(),
            inner: Mutex::new(Inner {
                next_update_id: 1000,
                next_message_id: 1,
                ..Inner::default()
            }),
            arrived: tokio::sync::Notify::new(),
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let served = serve(
            listener,
            state.clone(),
            |cfg| {
                cfg.app_data(web::JsonConfig::default().limit(1 << 20))
                    .route("/bot{token}/{method}", web::post().to(call))
                    .route("/file/bot{token}/{path:.*}", web::get().to(file));
            },
            None::<(TcpListener, NoSocket<State>)>,
        );
        FakeTelegram {
            base: format!("http://{addr}"),
            state,
            _served: served,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.state.inner.lock().unwrap())
    }

    /// Queues an update (`message` filled in); returns its update_id.
    pub fn push(&self, kind: &str, message: Value) -> i64 {
        let id = self.with(|i| {
            i.next_update_id += 1;
            let id = i.next_update_id;
            let mut u = json!({ "update_id": id });
            if let (Some(chat), Some(m)) = (
                message["chat"]["id"].as_i64(),
                message["message_id"].as_i64(),
            ) {
                i.updates_seen.insert((chat, m));
            }
            u[kind] = message;
            i.updates.push_back(u);
            id
        });
        self.state.arrived.notify_waiters();
        id
    }

    /// A direct text message from `user` (chat id = user id).
    pub fn dm(&self, user: i64, message_id: i64, text: &str) -> i64 {
        self.push("message", dm_message(user, message_id, text))
    }

    /// Direct messages `(user, message id, text)` that arrive together:
    /// the next poll returns them in one batch. Their update ids.
    pub fn dms(&self, messages: &[(i64, i64, &str)]) -> Vec<i64> {
        let ids = self.with(|i| {
            messages
                .iter()
                .map(|(user, id, text)| {
                    i.next_update_id += 1;
                    let update = i.next_update_id;
                    let mut u = json!({ "update_id": update });
                    i.updates_seen.insert((*user, *id));
                    u["message"] = dm_message(*user, *id, text);
                    i.updates.push_back(u);
                    update
                })
                .collect()
        });
        self.state.arrived.notify_waiters();
        ids
    }

    /// A group message; `mention` puts `@ferro_bot ` in front.
    pub fn group(
        &self,
        chat: i64,
        user: i64,
        message_id: i64,
        text: &str,
        mention: bool,
        topic: Option<i64>,
    ) -> i64 {
        let (text, entities) = if mention {
            (
                format!("@{BOT_USERNAME} {text}"),
                json!([{ "type": "mention", "offset": 0, "length": BOT_USERNAME.len() + 1 }]),
            )
        } else {
            (text.to_string(), json!([]))
        };
        let mut m = json!({
            "message_id": message_id, "date": super::unix_s(),
            "chat": { "id": chat, "type": "supergroup", "title": "G", "is_forum": topic.is_some() },
            "from": { "id": user, "is_bot": false, "first_name": format!("User{user}") },
            "text": text, "entities": entities,
        });
        if let Some(t) = topic {
            m["message_thread_id"] = json!(t);
            m["is_topic_message"] = json!(true);
        }
        self.push("message", m)
    }

    /// `user` presses the button with `data` under the bot's message
    /// `message_id` in `chat` (a `callback_query`); its update_id.
    pub fn press(&self, user: i64, chat: i64, message_id: i64, data: &str) -> i64 {
        let cb = self.with(|i| {
            i.next_callback_id += 1;
            i.next_callback_id
        });
        self.push(
            "callback_query",
            json!({
                "id": format!("cb{cb}"),
                "chat_instance": "ci1",
                "from": { "id": user, "is_bot": false, "first_name": format!("User{user}") },
                "message": {
                    "message_id": message_id, "date": super::unix_s(),
                    "chat": { "id": chat, "type": if chat < 0 { "supergroup" } else { "private" } },
                    "from": { "id": BOT_ID, "is_bot": true, "first_name": "Ferro" },
                    "text": "(question)",
                },
                "data": data,
            }),
        )
    }

    /// The ids of button presses the bot answered (`answerCallbackQuery`).
    pub fn callbacks_answered(&self) -> Vec<String> {
        self.with(|i| i.callbacks_answered.clone())
    }

    /// A raw update as given (malformed ones included).
    pub fn push_raw(&self, update: Value) {
        self.with(|i| {
            i.next_update_id += 1;
            let mut u = update;
            if u.get("update_id").is_none() {
                u["update_id"] = json!(i.next_update_id);
            }
            i.updates.push_back(u);
        });
        self.state.arrived.notify_waiters();
    }

    /// The same message again under a new update_id (a platform replay).
    pub fn replay_last(&self) {
        let again = self.with(|i| i.updates.back().cloned());
        if let Some(u) = again {
            let kind = if u.get("message").is_some() {
                "message"
            } else {
                "channel_post"
            };
            self.push(kind, u[kind].clone());
        }
    }

    pub fn fault(&self, method: &str, f: Fault) {
        self.with(|i| i.faults.entry(method.to_string()).or_default().push_back(f));
    }

    pub fn add_file(&self, file_id: &str, bytes: Vec<u8>) {
        self.with(|i| i.files.insert(file_id.to_string(), bytes));
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.with(|i| i.sent.clone())
    }

    /// The bot's reaction on a message (empty: none).
    pub fn reaction(&self, chat: i64, message: i64) -> Vec<String> {
        self.with(|i| {
            i.reactions
                .get(&(chat, message))
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Messages deleted, (chat, message id), in order.
    pub fn deleted(&self) -> Vec<(i64, i64)> {
        self.with(|i| i.deleted.clone())
    }

    pub fn sent_to(&self, chat: i64) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.chat_id == chat)
            .collect()
    }

    /// The files uploaded (multipart sends), in order.
    pub fn uploads(&self) -> Vec<super::fake_server::Part> {
        self.state.inner.lock().unwrap().uploads.clone()
    }

    pub fn calls(&self, method: &str) -> Vec<Instant> {
        self.with(|i| {
            i.calls
                .iter()
                .filter(|(m, _)| m == method)
                .map(|(_, t)| *t)
                .collect()
        })
    }

    pub fn actions(&self) -> Vec<(i64, String)> {
        self.with(|i| i.actions.clone())
    }

    pub fn max_concurrent_polls(&self) -> usize {
        self.with(|i| i.polls_max)
    }

    /// How many polls returned the update `update_id`.
    pub fn deliveries(&self, update_id: i64) -> usize {
        self.with(|i| i.delivered.get(&update_id).copied().unwrap_or(0))
    }

    /// Updates not yet confirmed by a poll's offset.
    pub fn unconfirmed(&self) -> usize {
        self.with(|i| i.updates.len())
    }

    /// Waits until `f` holds (polling every 20 ms), at most `limit`.
    pub async fn until(&self, limit: Duration, mut f: impl FnMut(&FakeTelegram) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if f(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        f(self)
    }
}

async fn file(state: web::Data<State>, path: web::Path<(String, String)>) -> HttpResponse {
    let (token, file) = path.into_inner();
    if token != state.token {
        return HttpResponse::Unauthorized().finish();
    }
    let bytes = state.inner.lock().unwrap().files.get(&file).cloned();
    match bytes {
        Some(b) => HttpResponse::Ok()
            .content_type("application/octet-stream")
            .body(b),
        None => HttpResponse::NotFound().finish(),
    }
}

async fn call(
    state: web::Data<State>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    let (token, method) = path.into_inner();
    if token != state.token {
        return err(401, "Unauthorized", None);
    }
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // An upload: its text fields are the params, its file is kept.
    let params: Value = match super::fake_server::multipart(&ct, &body) {
        Some(parts) => {
            let mut p = json!({});
            for part in parts {
                match &part.filename {
                    Some(f) => {
                        p[&part.name] = json!(format!("upload:{f}"));
                        state.inner.lock().unwrap().uploads.push(part);
                    }
                    None => {
                        let v = String::from_utf8_lossy(&part.data).to_string();
                        p[&part.name] = v
                            .parse::<i64>()
                            .map(Value::from)
                            .unwrap_or(Value::String(v));
                    }
                }
            }
            p
        }
        None => serde_json::from_slice(&body).unwrap_or(json!({})),
    };
    let fault = {
        let mut i = state.inner.lock().unwrap();
        i.calls.push((method.clone(), Instant::now()));
        i.faults.get_mut(&method).and_then(VecDeque::pop_front)
    };
    match fault {
        Some(Fault::RateLimit(s)) => return err(429, &format!("Too Many Requests: retry after {s}"), Some(s)),
        Some(Fault::Conflict) => {
            return err(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", None)
        }
        Some(Fault::Server(code)) => return err(code, "Internal Server Error", None),
        Some(Fault::ParseEntities) => return err(400, "Bad Request: can't parse entities: unsupported start tag", None),
        Some(Fault::Garbage) => {
            return HttpResponse::Ok().content_type("text/html").body("<html><body>502 Bad Gateway</body></html>")
        }
        Some(Fault::Hang(d)) => tokio::time::sleep(d).await,
        Some(Fault::AppliedNoAnswer(d)) => {
            let _ = apply(&state, &method, &params).await;
            tokio::time::sleep(d).await;
            return err(504, "Gateway Timeout", None);
        }
        None => {}
    }
    apply(&state, &method, &params).await
}

async fn apply(state: &State, method: &str, p: &Value) -> HttpResponse {
    match method {
        "getMe" => ok(
            json!({ "id": BOT_ID, "is_bot": true, "first_name": "Ferro", "username": BOT_USERNAME }),
        ),
        "getUpdates" => get_updates(state, p).await,
        "sendMessage" => send_message(state, p),
        "editMessageText" => edit_message(state, p),
        "setMessageReaction" | "deleteMessage" => on_message(state, method, p),
        "answerCallbackQuery" => match p["callback_query_id"].as_str() {
            Some(id) if id.starts_with("cb") => {
                let mut i = state.inner.lock().unwrap();
                i.callbacks_answered.push(id.to_string());
                ok(json!(true))
            }
            _ => err(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
                None,
            ),
        },
        "sendPhoto" | "sendDocument" | "sendVoice" | "sendAudio" => send_media(state, method, p),
        "sendChatAction" => {
            let chat = p["chat_id"].as_i64().unwrap_or_default();
            let action = p["action"].as_str().unwrap_or_default().to_string();
            state.inner.lock().unwrap().actions.push((chat, action));
            ok(json!(true))
        }
        "setMyCommands" => {
            state.inner.lock().unwrap().commands = p["commands"].clone();
            ok(json!(true))
        }
        "getMyCommands" => ok(state.inner.lock().unwrap().commands.clone()),
        "getFile" => {
            let id = p["file_id"].as_str().unwrap_or_default().to_string();
            let size = state.inner.lock().unwrap().files.get(&id).map(Vec::len);
            match size {
                Some(n) => ok(
                    json!({ "file_id": id, "file_unique_id": id, "file_size": n, "file_path": id }),
                ),
                None => err(400, "Bad Request: invalid file_id", None),
            }
        }
        _ => err(404, "Not Found", None),
    }
}

async fn get_updates(state: &State, p: &Value) -> HttpResponse {
    let offset = p["offset"].as_i64();
    let hold = Duration::from_secs(p["timeout"].as_u64().unwrap_or(0).min(50));
    {
        let mut i = state.inner.lock().unwrap();
        if i.polls_now > 0 {
            return err(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", None);
        }
        i.polls_now += 1;
        i.polls_max = i.polls_max.max(i.polls_now);
        if let Some(o) = offset {
            i.confirmed = i.confirmed.max(o);
            i.updates
                .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= o);
        }
    }
    struct Done<'a>(&'a State);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.inner.lock().unwrap().polls_now -= 1;
        }
    }
    let _done = Done(state);
    let end = Instant::now() + hold;
    loop {
        // Registered before the check, so a push in between is not missed.
        let notified = state.arrived.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let ready: Vec<Value> = {
            let mut i = state.inner.lock().unwrap();
            let ready: Vec<Value> = i.updates.iter().take(100).cloned().collect();
            for u in &ready {
                *i.delivered
                    .entry(u["update_id"].as_i64().unwrap_or(0))
                    .or_default() += 1;
            }
            ready
        };
        if !ready.is_empty() || Instant::now() >= end {
            return ok(Value::Array(ready));
        }
        let wait = end.saturating_duration_since(Instant::now());
        let _ = tokio::time::timeout(wait, notified).await;
    }
}

fn send_message(state: &State, p: &Value) -> HttpResponse {
    let text = p["text"].as_str().unwrap_or_default().to_string();
    let html = p["parse_mode"].as_str() == Some("HTML");
    if text.is_empty() {
        return err(400, "Bad Request: message text is empty", None);
    }
    if text.chars().count() > 4096 {
        return err(400, "Bad Request: message is too long", None);
    }
    if html && !html_ok(&text) {
        return err(
            400,
            "Bad Request: can't parse entities: unmatched end tag",
            None,
        );
    }
    let Some(chat_id) = p["chat_id"].as_i64() else {
        return err(400, "Bad Request: chat not found", None);
    };
    let mut i = state.inner.lock().unwrap();
    i.next_message_id += 1;
    let message_id = i.next_message_id;
    let thread_id = p["message_thread_id"].as_i64();
    let reply_to = p["reply_parameters"]["message_id"].as_i64();
    let Ok(buttons) = keyboard(&p["reply_markup"]) else {
        return err(400, "Bad Request: BUTTON_DATA_INVALID", None);
    };
    i.sent.push(Sent {
        chat_id,
        message_id,
        text: text.clone(),
        html,
        thread_id,
        reply_to,
        edits: 0,
        at: Instant::now(),
        buttons,
    });
    ok(json!({
        "message_id": message_id, "date": super::unix_s(),
        "chat": { "id": chat_id, "type": if chat_id < 0 { "supergroup" } else { "private" } },
        "from": { "id": BOT_ID, "is_bot": true, "first_name": "Ferro" },
        "text": text,
    }))
}

/// An inline keyboard as Telegram checks it: each button has text and
/// 1-64 bytes of callback_data.
fn keyboard(markup: &Value) -> Result<Vec<Vec<(String, String)>>, ()> {
    let Some(rows) = markup["inline_keyboard"].as_array() else {
        return Ok(Vec::new());
    };
    rows.iter()
        .map(|row| {
            row.as_array()
                .ok_or(())?
                .iter()
                .map(|b| {
                    let text = b["text"].as_str().filter(|t| !t.is_empty()).ok_or(())?;
                    let data = b["callback_data"].as_str().ok_or(())?;
                    match (1..=64).contains(&data.len()) {
                        true => Ok((text.to_string(), data.to_string())),
                        false => Err(()),
                    }
                })
                .collect()
        })
        .collect()
}

/// A photo or document by URL: recorded as `[photo] <url>` (or
/// `[document]`) and the caption on the next line.
fn send_media(state: &State, method: &str, p: &Value) -> HttpResponse {
    let field = match method {
        "sendPhoto" => "photo",
        "sendVoice" => "voice",
        "sendAudio" => "audio",
        _ => "document",
    };
    let Some(url) = p[field]
        .as_str()
        .filter(|u| u.starts_with("http") || u.starts_with("upload:"))
    else {
        return err(
            400,
            "Bad Request: wrong file identifier/HTTP URL specified",
            None,
        );
    };
    let Some(chat_id) = p["chat_id"].as_i64() else {
        return err(400, "Bad Request: chat not found", None);
    };
    let caption = p["caption"].as_str().unwrap_or_default();
    let text = format!("[{field}] {url}\n{caption}").trim_end().to_string();
    let mut i = state.inner.lock().unwrap();
    i.next_message_id += 1;
    let message_id = i.next_message_id;
    let thread_id = p["message_thread_id"].as_i64();
    i.sent.push(Sent {
        chat_id,
        message_id,
        text,
        html: false,
        thread_id,
        reply_to: None,
        edits: 0,
        at: Instant::now(),
        buttons: Vec::new(),
    });
    ok(
        json!({ "message_id": message_id, "date": super::unix_s(), "chat": { "id": chat_id, "type": "private" } }),
    )
}

/// `setMessageReaction` / `deleteMessage` on a message the bot sent or
/// was sent (as Telegram: an unknown or deleted one is a 400).
fn on_message(state: &State, method: &str, p: &Value) -> HttpResponse {
    let (chat, id) = (
        p["chat_id"].as_i64().unwrap_or_default(),
        p["message_id"].as_i64().unwrap_or_default(),
    );
    let mut i = state.inner.lock().unwrap();
    let sent = i
        .sent
        .iter()
        .any(|s| s.chat_id == chat && s.message_id == id);
    let received = i.updates_seen.contains(&(chat, id));
    if !(sent || received) || i.deleted.contains(&(chat, id)) {
        let what = if method == "deleteMessage" {
            "delete"
        } else {
            "react"
        };
        return err(
            400,
            &format!("Bad Request: message to {what} not found"),
            None,
        );
    }
    if method == "deleteMessage" {
        i.deleted.push((chat, id));
    } else {
        let emoji: Vec<String> = p["reaction"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["emoji"].as_str().map(str::to_string))
            .collect();
        i.reactions.insert((chat, id), emoji);
    }
    ok(json!(true))
}

fn edit_message(state: &State, p: &Value) -> HttpResponse {
    let text = p["text"].as_str().unwrap_or_default().to_string();
    let html = p["parse_mode"].as_str() == Some("HTML");
    if html && !html_ok(&text) {
        return err(
            400,
            "Bad Request: can't parse entities: unmatched end tag",
            None,
        );
    }
    let (chat, id) = (
        p["chat_id"].as_i64().unwrap_or_default(),
        p["message_id"].as_i64().unwrap_or_default(),
    );
    let mut i = state.inner.lock().unwrap();
    let Some(m) = i
        .sent
        .iter_mut()
        .find(|s| s.chat_id == chat && s.message_id == id)
    else {
        return err(400, "Bad Request: message to edit not found", None);
    };
    if m.text == text && m.html == html {
        return err(400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", None);
    }
    m.text = text;
    m.html = html;
    m.edits += 1;
    ok(
        json!({ "message_id": id, "date": super::unix_s(), "chat": { "id": chat, "type": "private" }, "text": m.text }),
    )
}
