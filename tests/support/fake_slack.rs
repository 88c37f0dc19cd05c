//! A fake Slack on loopback, in its own thread: the Web API (`POST
//! /api/<method>` with a bearer token, `{ok, ...}` or `{ok:false, error}`;
//! 429 with `Retry-After`) and Socket Mode (`apps.connections.open`
//! answers with this fake's own `ws://` URL; each socket gets `hello`,
//! then `events_api` envelopes to acknowledge by `envelope_id`). Like
//! Slack, an envelope not acknowledged is sent again (with
//! `retry_attempt` + 1) on the next socket that says hello. Faults: socket
//! drops, `disconnect` envelopes, a frozen socket (no frames, no pongs: a
//! zombie), replays, and per-method HTTP faults. Everything is recorded.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Ws;

use super::fake_server::{serve, Served};

pub const BOT_TOKEN: &str = "xoxb-test-bot";
pub const APP_TOKEN: &str = "xapp-test-app";
pub const BOT_USER: &str = "UBOT";
pub const TEAM: &str = "T0TEAM";

#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `Retry-After` (seconds).
    RateLimit(u64),
    Server(u16),
    /// `{ok: false, error}`.
    Error(String),
    Hang(Duration),
}

/// A message the bot posted (its latest text after updates).
#[derive(Debug, Clone)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub text: String,
    pub markdown: bool,
    pub thread_ts: Option<String>,
    pub edits: usize,
}

struct Socket {
    id: u64,
    tx: mpsc::UnboundedSender<Ws>,
    frozen: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Default)]
struct Inner {
    posted: Vec<Posted>,
    next_ts: u64,
    calls: Vec<(String, Instant)>,
    faults: HashMap<String, VecDeque<Fault>>,
    sockets: Vec<Socket>,
    next_socket: u64,
    opened: u64,
    max_live: usize,
    /// Envelopes sent and not acknowledged, by id, with their retries.
    unacked: Vec<(String, Value)>,
    /// Every envelope sent, by id (for replays).
    envelopes: HashMap<String, Value>,
    acks: HashMap<String, usize>,
    next_envelope: u64,
    next_event_ts: u64,
    /// The bot's reactions: (channel, ts) -> names.
    reactions: HashMap<(String, String), Vec<String>>,
    /// Messages deleted: (channel, ts).
    deleted: Vec<(String, String)>,
    /// Shared files by id: (bytes, served type).
    files: HashMap<String, (Vec<u8>, String)>,
    /// Downloads asked for: (file id, with the bot token).
    downloads: Vec<(String, bool)>,
    /// Upload slots: file id -> (name, length, the bytes once uploaded).
    slots: HashMap<String, (String, u64, Option<Vec<u8>>)>,
    /// Files shared by `files.completeUploadExternal`.
    shared: Vec<SharedFile>,
    /// Users' messages by channel, oldest first (`conversations.history`).
    history: HashMap<String, Vec<Value>>,
}

/// A file the bot shared.
#[derive(Debug, Clone)]
pub struct SharedFile {
    pub channel: String,
    pub name: String,
    pub bytes: Vec<u8>,
    pub comment: Option<String>,
    pub thread_ts: Option<String>,
}

struct State {
    inner: Mutex<Inner>,
    ws_url: String,
    base: String,
}

pub struct FakeSlack {
    pub api: String,
    state: Arc<State>,
    _served: Served,
}

fn ok(mut v: Value) -> HttpResponse {
    v["ok"] = json!(true);
    HttpResponse::Ok().json(v)
}

fn refuse(error: &str) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "ok": false, "error": error }))
}

impl FakeSlack {
    pub fn start() -> FakeSlack {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ws_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ws_addr = ws_listener.local_addr().unwrap();
        let state = Arc::new(State {
            inner: Mutex::new(Inner {
                next_ts: 1_700_000_000,
                next_event_ts: super::unix_s() as u64,
                ..Inner::default()
            }),
            ws_url: format!("ws://{ws_addr}/link"),
            base: format!("http://{addr}"),
        });
        let served = serve(
            listener,
            state.clone(),
            |cfg| {
                cfg.route("/api/{method}", web::post().to(call));
                cfg.route(
                    "/files-pri/{team_file}/download/{name}",
                    web::get().to(download),
                );
                cfg.route("/upload/{id}", web::post().to(upload));
            },
            Some((ws_listener, socket)),
        );
        FakeSlack {
            api: format!("http://{addr}/api"),
            state,
            _served: served,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.state.inner.lock().unwrap())
    }

    /// A user's message event in `channel` (`channel_type`: `im`,
    /// `channel`, ...), sent as an `events_api` envelope on the newest
    /// socket (kept for a later socket when none is up). Returns
    /// (envelope id, message ts).
    pub fn message(
        &self,
        channel: &str,
        channel_type: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> (String, String) {
        self.with(|i| {
            i.next_event_ts += 1;
            let ts = format!("{}.000100", i.next_event_ts);
            let mut event = json!({
                "type": "message", "channel": channel, "channel_type": channel_type,
                "user": user, "text": text, "ts": ts, "team": TEAM,
            });
            if let Some(t) = thread_ts {
                event["thread_ts"] = json!(t);
            }
            let mut kept = event.clone();
            kept.as_object_mut().map(|o| o.remove("channel"));
            i.history.entry(channel.to_string()).or_default().push(kept);
            let body = json!({
                "type": "event_callback", "team_id": TEAM, "api_app_id": "A1",
                "event_id": format!("Ev{}", i.next_event_ts), "event_time": i.next_event_ts,
                "event": event,
            });
            let id = enqueue(i, body);
            (id, ts)
        })
    }

    /// A user's message sharing `files` (name, type, bytes; a declared
    /// size when given, else the real one), as Slack sends it: subtype
    /// `file_share`, each file with its `url_private_download`.
    pub fn share(
        &self,
        channel: &str,
        channel_type: &str,
        user: &str,
        text: &str,
        files: &[(&str, &str, Vec<u8>, Option<u64>)],
    ) -> (String, String) {
        let base = self.state.base.clone();
        self.with(|i| {
            i.next_event_ts += 1;
            let ts = format!("{}.000100", i.next_event_ts);
            let list: Vec<Value> = files
                .iter()
                .enumerate()
                .map(|(n, (name, mime, bytes, size))| {
                    let id = format!("F{}{n}", i.next_event_ts);
                    i.files.insert(id.clone(), (bytes.clone(), mime.to_string()));
                    json!({
                        "id": id, "name": name, "mimetype": mime, "filetype": "auto",
                        "size": size.unwrap_or(bytes.len() as u64), "mode": "hosted",
                        "url_private": format!("{base}/files-pri/{TEAM}-{id}/{name}"),
                        "url_private_download": format!("{base}/files-pri/{TEAM}-{id}/download/{name}"),
                    })
                })
                .collect();
            let body = json!({
                "type": "event_callback", "team_id": TEAM, "api_app_id": "A1",
                "event_id": format!("Ev{}", i.next_event_ts), "event_time": i.next_event_ts,
                "event": {
                    "type": "message", "subtype": "file_share", "channel": channel,
                    "channel_type": channel_type, "user": user, "text": text, "ts": ts,
                    "team": TEAM, "files": list, "upload": true,
                },
            });
            let id = enqueue(i, body);
            (id, ts)
        })
    }

    /// A file served at the returned `url_private_download`.
    pub fn add_file(&self, id: &str, bytes: Vec<u8>, mime: &str) -> String {
        self.with(|i| i.files.insert(id.to_string(), (bytes, mime.to_string())));
        format!("{}/files-pri/{TEAM}-{id}/download/file", self.state.base)
    }

    /// The files the bot shared, in order.
    pub fn shared(&self) -> Vec<SharedFile> {
        self.with(|i| i.shared.clone())
    }

    /// The file downloads asked for: (file id, with the bot's token).
    pub fn downloads(&self) -> Vec<(String, bool)> {
        self.with(|i| i.downloads.clone())
    }

    /// Sends an envelope again as it was (same id).
    pub fn replay(&self, envelope_id: &str) {
        self.with(|i| {
            if let Some(env) = i.envelopes.get(envelope_id) {
                send_newest(i, env);
            }
        })
    }

    /// Sends an event again in a new envelope (what a retry after a lost
    /// acknowledgement looks like).
    pub fn redeliver(&self, body: Value) -> String {
        self.with(|i| enqueue(i, body))
    }

    /// A raw text frame on the newest socket (malformed input).
    pub fn raw(&self, text: &str) {
        self.with(|i| {
            if let Some(s) = i.sockets.last() {
                let _ = s.tx.send(Ws::Text(text.to_string().into()));
            }
        })
    }

    /// Closes every socket without a word (a network drop).
    pub fn drop_sockets(&self) {
        self.with(|i| {
            for s in i.sockets.drain(..) {
                let _ = s.tx.send(Ws::Close(None));
            }
        })
    }

    /// A `disconnect` envelope on every socket; each closes after `grace`.
    pub fn disconnect(&self, grace: Duration) {
        let txs: Vec<_> = self.with(|i| i.sockets.iter().map(|s| (s.id, s.tx.clone())).collect());
        for (_, tx) in &txs {
            let _ = tx.send(Ws::Text(
                json!({ "type": "disconnect", "reason": "refresh_requested" })
                    .to_string()
                    .into(),
            ));
        }
        let state = self.state.clone();
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            let mut i = state.inner.lock().unwrap();
            i.sockets.retain(|s| {
                let old = txs.iter().any(|(id, _)| *id == s.id);
                if old {
                    let _ = s.tx.send(Ws::Close(None));
                }
                !old
            });
        });
    }

    /// The newest socket stops answering (no frames, no pongs) and stays
    /// open: a zombie.
    pub fn freeze(&self) {
        self.with(|i| {
            if let Some(s) = i.sockets.last() {
                s.frozen.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        })
    }

    pub fn fault(&self, method: &str, f: Fault) {
        self.with(|i| i.faults.entry(method.into()).or_default().push_back(f));
    }

    /// The bot's reactions on a message.
    pub fn reactions(&self, channel: &str, ts: &str) -> Vec<String> {
        self.with(|i| {
            i.reactions
                .get(&(channel.to_string(), ts.to_string()))
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Messages deleted, (channel, ts).
    pub fn deleted(&self) -> Vec<(String, String)> {
        self.with(|i| i.deleted.clone())
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.with(|i| i.posted.clone())
    }

    pub fn posted_in(&self, channel: &str) -> Vec<Posted> {
        self.with(|i| {
            i.posted
                .iter()
                .filter(|p| p.channel == channel)
                .cloned()
                .collect()
        })
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

    /// Sockets up now, opened in all, and the most up at once.
    pub fn sockets(&self) -> (usize, u64, usize) {
        self.with(|i| (i.sockets.len(), i.opened, i.max_live))
    }

    pub fn acks(&self, envelope_id: &str) -> usize {
        self.with(|i| i.acks.get(envelope_id).copied().unwrap_or(0))
    }

    pub fn unacked(&self) -> usize {
        self.with(|i| i.unacked.len())
    }

    pub async fn until(&self, limit: Duration, mut f: impl FnMut(&FakeSlack) -> bool) -> bool {
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

impl FakeSlack {
    /// Slack stops retrying the envelopes nobody acknowledged (its retries
    /// end after about an hour): they are never sent again; their messages
    /// stay in the channels' history.
    pub fn expire_unacked(&self) {
        self.with(|i| i.unacked.clear());
    }
}

/// `conversations.history`: a channel's messages after `oldest`
/// (exclusive), newest first, at most `limit` (Slack's default 100).
fn history(i: &Inner, p: &Value) -> Value {
    let num = |k: &str| {
        p[k].as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .or(p[k].as_f64())
    };
    let oldest = num("oldest").unwrap_or(0.0);
    let limit = num("limit").unwrap_or(100.0) as usize;
    let Some(all) = i.history.get(p["channel"].as_str().unwrap_or_default()) else {
        return json!({ "ok": false, "error": "channel_not_found" });
    };
    let newer: Vec<&Value> = all
        .iter()
        .filter(|m| {
            m["ts"]
                .as_str()
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or(0.0)
                > oldest
        })
        .collect();
    let page: Vec<&Value> = newer.iter().rev().take(limit).copied().collect();
    json!({ "ok": true, "messages": page, "has_more": newer.len() > limit })
}

fn enqueue(i: &mut Inner, body: Value) -> String {
    i.next_envelope += 1;
    let id = format!("env-{}", i.next_envelope);
    let env = json!({
        "envelope_id": id, "type": "events_api", "payload": body,
        "accepts_response_payload": false, "retry_attempt": 0, "retry_reason": "",
    });
    i.unacked.push((id.clone(), env.clone()));
    i.envelopes.insert(id.clone(), env.clone());
    send_newest(i, &env);
    id
}

fn send_newest(i: &Inner, env: &Value) {
    if let Some(s) = i.sockets.last() {
        let _ = s.tx.send(Ws::Text(env.to_string().into()));
    }
}

impl Drop for FakeSlack {
    fn drop(&mut self) {
        self.drop_sockets();
    }
}

/// One Socket Mode connection: hello, then the envelopes still
/// unacknowledged (retries), then whatever comes.
async fn socket(state: Arc<State>, stream: tokio::net::TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Ws>();
    let frozen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let id = {
        let mut i = state.inner.lock().unwrap();
        i.next_socket += 1;
        i.opened += 1;
        let id = i.next_socket;
        i.sockets.push(Socket {
            id,
            tx: tx.clone(),
            frozen: frozen.clone(),
        });
        i.max_live = i.max_live.max(i.sockets.len());
        let hello = json!({ "type": "hello", "num_connections": i.sockets.len(),
            "debug_info": { "host": "fake", "approximate_connection_time": 3600 },
            "connection_info": { "app_id": "A1" } });
        let _ = tx.send(Ws::Text(hello.to_string().into()));
        for (_, env) in &mut i.unacked {
            env["retry_attempt"] = json!(env["retry_attempt"].as_u64().unwrap_or(0) + 1);
            env["retry_reason"] = json!("timeout");
            let _ = tx.send(Ws::Text(env.to_string().into()));
        }
        id
    };
    let is_frozen = || frozen.load(std::sync::atomic::Ordering::SeqCst);
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Ws::Close(_)) | None => { let _ = sink.send(Ws::Close(None)).await; break; }
                Some(m) => { if !is_frozen() && sink.send(m).await.is_err() { break; } }
            },
            frame = source.next(), if !is_frozen() => match frame {
                Some(Ok(Ws::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).unwrap_or_default();
                    if let Some(env) = v["envelope_id"].as_str() {
                        let mut i = state.inner.lock().unwrap();
                        *i.acks.entry(env.to_string()).or_default() += 1;
                        i.unacked.retain(|(e, _)| e != env);
                    }
                }
                Some(Ok(Ws::Ping(p))) => { let _ = sink.send(Ws::Pong(p)).await; }
                Some(Ok(Ws::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            _ = tokio::time::sleep(Duration::from_millis(100)), if is_frozen() => {}
        }
    }
    state.inner.lock().unwrap().sockets.retain(|s| s.id != id);
}

/// An upload slot's URL: the bytes (signed URL: no token needed).
async fn upload(state: web::Data<State>, id: web::Path<String>, body: web::Bytes) -> HttpResponse {
    let mut i = state.inner.lock().unwrap();
    match i.slots.get_mut(id.as_str()) {
        Some(slot) => {
            slot.2 = Some(body.to_vec());
            HttpResponse::Ok().body(format!("OK - {}", body.len()))
        }
        None => HttpResponse::NotFound().finish(),
    }
}

/// `url_private_download`: the file with the bot token; without it, as
/// Slack does, a sign-in web page (200, text/html).
async fn download(
    state: web::Data<State>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    let id = path.0.rsplit('-').next().unwrap_or_default().to_string();
    let authed = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {BOT_TOKEN}"));
    let mut i = state.inner.lock().unwrap();
    i.downloads.push((id.clone(), authed));
    if !authed {
        return HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body("<!DOCTYPE html><html><body>Sign in to Slack</body></html>");
    }
    match i.files.get(&id) {
        Some((bytes, mime)) => HttpResponse::Ok()
            .content_type(mime.as_str())
            .body(bytes.clone()),
        None => HttpResponse::NotFound().finish(),
    }
}

async fn call(
    state: web::Data<State>,
    req: HttpRequest,
    method: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let method = method.into_inner();
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_string();
    let form = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let p: Value = match form {
        // Form fields, as Slack takes them for some methods.
        true => {
            let q = String::from_utf8_lossy(&body).to_string();
            let url = reqwest::Url::parse(&format!("http://x/?{q}")).unwrap();
            Value::Object(
                url.query_pairs()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect(),
            )
        }
        false => serde_json::from_slice(&body).unwrap_or(json!({})),
    };
    let fault = {
        let mut i = state.inner.lock().unwrap();
        i.calls.push((method.clone(), Instant::now()));
        i.faults.get_mut(&method).and_then(VecDeque::pop_front)
    };
    match fault {
        Some(Fault::RateLimit(s)) => {
            return HttpResponse::TooManyRequests()
                .insert_header(("Retry-After", s.to_string()))
                .json(json!({ "ok": false, "error": "ratelimited" }))
        }
        Some(Fault::Server(code)) => {
            return HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap())
                .body("upstream error")
        }
        Some(Fault::Error(e)) => return refuse(&e),
        Some(Fault::Hang(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    let want = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        BOT_TOKEN
    };
    if token != want {
        return refuse("invalid_auth");
    }
    let mut i = state.inner.lock().unwrap();
    match method.as_str() {
        "conversations.history" => HttpResponse::Ok().json(history(&i, &p)),
        "auth.test" => ok(
            json!({ "user_id": BOT_USER, "team_id": TEAM, "bot_id": "B1", "user": "ferro", "team": "Test Team", "url": "https://test.slack.com/" }),
        ),
        "apps.connections.open" => ok(json!({ "url": state.ws_url })),
        "chat.postMessage" => {
            let Some(channel) = p["channel"].as_str() else {
                return refuse("channel_not_found");
            };
            let text = p["text"].as_str().unwrap_or_default().to_string();
            if text.is_empty() {
                return refuse("no_text");
            }
            i.next_ts += 1;
            let ts = format!("{}.000200", i.next_ts);
            i.posted.push(Posted {
                channel: channel.to_string(),
                ts: ts.clone(),
                text,
                markdown: p["blocks"][0]["type"] == "markdown",
                thread_ts: p["thread_ts"].as_str().map(str::to_string),
                edits: 0,
            });
            ok(json!({ "channel": channel, "ts": ts, "message": { "text": p["text"] } }))
        }
        "files.getUploadURLExternal" => {
            let (Some(name), Some(len)) = (p["filename"].as_str(), p["length"].as_str()) else {
                return refuse("invalid_arguments");
            };
            i.next_ts += 1;
            let id = format!("F0UP{}", i.next_ts);
            i.slots.insert(
                id.clone(),
                (name.to_string(), len.parse().unwrap_or(0), None),
            );
            ok(json!({ "upload_url": format!("{}/upload/{id}", state.base), "file_id": id }))
        }
        "files.completeUploadExternal" => {
            let files: Value =
                serde_json::from_str(p["files"].as_str().unwrap_or("[]")).unwrap_or(json!([]));
            let Some(id) = files[0]["id"].as_str() else {
                return refuse("invalid_arguments");
            };
            let Some((name, len, Some(bytes))) = i.slots.get(id).cloned() else {
                return refuse("file_not_found");
            };
            if bytes.len() as u64 != len {
                return refuse("file_upload_size_mismatch");
            }
            let channel = p["channel_id"].as_str().unwrap_or_default().to_string();
            i.shared.push(SharedFile {
                channel,
                name,
                bytes,
                comment: p["initial_comment"].as_str().map(str::to_string),
                thread_ts: p["thread_ts"].as_str().map(str::to_string),
            });
            ok(json!({ "files": [{ "id": id, "title": files[0]["title"] }] }))
        }
        "chat.update" => {
            let ts = p["ts"].as_str().unwrap_or_default();
            let Some(m) = i.posted.iter_mut().find(|m| m.ts == ts) else {
                return refuse("message_not_found");
            };
            m.text = p["text"].as_str().unwrap_or_default().to_string();
            m.markdown = p["blocks"][0]["type"] == "markdown";
            m.edits += 1;
            ok(json!({ "channel": m.channel, "ts": ts }))
        }
        // As Slack: a reaction already there (or not there) is an error
        // the caller may take as done.
        "reactions.add" | "reactions.remove" => {
            let key = (
                p["channel"].as_str().unwrap_or_default().to_string(),
                p["timestamp"].as_str().unwrap_or_default().to_string(),
            );
            let name = p["name"].as_str().unwrap_or_default().to_string();
            if key.1.is_empty() || i.deleted.contains(&key) {
                return refuse("message_not_found");
            }
            let names = i.reactions.entry(key).or_default();
            match (method.as_str(), names.contains(&name)) {
                ("reactions.add", true) => refuse("already_reacted"),
                ("reactions.add", false) => {
                    names.push(name);
                    ok(json!({}))
                }
                (_, false) => refuse("no_reaction"),
                (_, true) => {
                    names.retain(|n| *n != name);
                    ok(json!({}))
                }
            }
        }
        "chat.delete" => {
            let key = (
                p["channel"].as_str().unwrap_or_default().to_string(),
                p["ts"].as_str().unwrap_or_default().to_string(),
            );
            if !i.posted.iter().any(|m| m.channel == key.0 && m.ts == key.1)
                || i.deleted.contains(&key)
            {
                return refuse("message_not_found");
            }
            i.deleted.push(key.clone());
            ok(json!({ "channel": key.0, "ts": key.1 }))
        }
        _ => refuse("unknown_method"),
    }
}
