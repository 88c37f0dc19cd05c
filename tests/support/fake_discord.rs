//! A fake Discord on loopback, in its own thread: REST (`/api/v10`:
//! `GET /gateway/bot`, `GET /users/@me`, create and edit messages,
//! typing, a channel's history, a channel, a guild member; 429 with
//! `retry_after` and `global`, per route) and the gateway (a WebSocket:
//! `Hello`, `Identify` -> `READY` with a session and a resume URL,
//! heartbeats acknowledged, `Resume` replays the session's events after
//! the client's sequence then `RESUMED`). Events are kept in the session's
//! log with their sequence numbers, so events sent while no socket is up
//! are replayed on resume, as Discord does; every message is also kept in
//! its channel's history. Faults: drops, close codes, heartbeats no longer
//! acknowledged (a zombie), `Reconnect`, `Invalid Session`, a session that
//! expired, replays, junk. Everything is recorded.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message as Ws;

use super::fake_server::{serve, Served};

pub const TOKEN: &str = "discord-test-token";
pub const BOT_ID: &str = "9000";

#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `retry_after` (seconds) and `global`.
    RateLimit(f64, bool),
    Server(u16),
    Hang(Duration),
}

#[derive(Debug, Clone)]
pub struct Created {
    pub channel: String,
    pub id: String,
    pub content: String,
    pub reply_to: Option<String>,
    pub edits: usize,
    pub at: Instant,
}

enum Out {
    Frame(Value),
    Close(Option<u16>),
}

struct Socket {
    id: u64,
    tx: mpsc::UnboundedSender<Out>,
}

#[derive(Default)]
struct Inner {
    created: Vec<Created>,
    next_id: u64,
    calls: Vec<(String, Instant)>,
    faults: HashMap<String, VecDeque<Fault>>,
    typing: Vec<String>,
    socket: Option<Socket>,
    next_socket: u64,
    opened: u64,
    max_live: usize,
    live: usize,
    session: Option<String>,
    /// The session's events: (seq, payload).
    log: Vec<(u64, Value)>,
    seq: u64,
    identifies: Vec<Instant>,
    resumes: u64,
    heartbeats: u64,
    acking: bool,
    heartbeat_ms: u64,
    /// Sockets still to open without a hello (a gateway that hangs).
    mute_next: usize,
    /// The bot's reactions: (channel, message) -> emoji.
    reactions: HashMap<(String, String), Vec<String>>,
    /// Messages deleted: (channel, message).
    deleted: Vec<(String, String)>,
    /// Attachments on the CDN by path: (bytes, type).
    cdn: HashMap<String, (Vec<u8>, String)>,
    /// CDN paths fetched.
    fetched: Vec<String>,
    /// Files uploaded with messages.
    uploads: Vec<super::fake_server::Part>,
    /// Each channel's messages, oldest first (users' and the bot's), as
    /// `GET /channels/{id}/messages` lists them.
    history: HashMap<String, Vec<Value>>,
    /// Channels seen: id -> channel object (`guild_id`, a thread's
    /// `parent_id`).
    channels: HashMap<String, Value>,
    /// Guild members seen: (guild, user) -> member (`roles`).
    members: HashMap<(String, String), Value>,
}

struct State {
    inner: Mutex<Inner>,
    ws_url: String,
    base: String,
}

pub struct FakeDiscord {
    pub api: String,
    pub gateway: String,
    state: Arc<State>,
    _served: Served,
}

impl FakeDiscord {
    /// A fake whose gateway asks for a heartbeat every `heartbeat_ms`.
    pub fn start(heartbeat_ms: u64) -> FakeDiscord {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ws_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ws_addr = ws_listener.local_addr().unwrap();
        let state = Arc::new(State {
            inner: Mutex::new(Inner {
                acking: true,
                heartbeat_ms,
                next_id: 5_000_000,
                ..Inner::default()
            }),
            ws_url: format!("ws://{ws_addr}"),
            base: format!("http://{addr}"),
        });
        let served = serve(
            listener,
            state.clone(),
            |cfg| {
                cfg.route("/api/v10/{path:.*}", web::route().to(rest));
                cfg.route("/attachments/{path:.*}", web::get().to(cdn));
            },
            Some((ws_listener, socket)),
        );
        FakeDiscord {
            api: format!("http://{addr}/api/v10"),
            gateway: state.ws_url.clone(),
            state,
            _served: served,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.state.inner.lock().unwrap())
    }

    /// A `MESSAGE_CREATE` from `author` in `channel` (a guild's when
    /// `guild` is set, with the member's `roles`); returns its message id.
    pub fn message(
        &self,
        channel: &str,
        guild: Option<&str>,
        author: &str,
        roles: &[&str],
        content: &str,
    ) -> String {
        self.with(|i| {
            i.next_id += 1;
            let id = i.next_id.to_string();
            let mut d = json!({
                "id": id, "channel_id": channel, "content": content,
                "author": { "id": author, "username": format!("user{author}") },
                "mentions": if content.contains(&format!("<@{BOT_ID}>")) {
                    json!([{ "id": BOT_ID, "username": "ferro" }])
                } else { json!([]) },
                "timestamp": chrono::Utc::now().to_rfc3339(), "type": 0,
            });
            let mut kind = json!({ "id": channel, "type": 1 });
            if let Some(g) = guild {
                d["guild_id"] = json!(g);
                d["member"] = json!({ "roles": roles });
                let member = json!({ "user": d["author"].clone(), "roles": roles });
                i.members
                    .insert((g.to_string(), author.to_string()), member);
                kind = json!({ "id": channel, "type": 0, "guild_id": g });
            }
            i.channels.entry(channel.to_string()).or_insert(kind);
            keep(i, channel, &d);
            dispatch(i, "MESSAGE_CREATE", d);
            id
        })
    }

    /// A direct message from `author` with `files` attached (name, type,
    /// bytes, a declared size when given), each served by the fake CDN;
    /// returns its message id.
    pub fn message_with_files(
        &self,
        channel: &str,
        author: &str,
        content: &str,
        files: &[(&str, &str, Vec<u8>, Option<u64>)],
    ) -> String {
        let base = self.state.base.clone();
        self.with(|i| {
            i.next_id += 1;
            let id = i.next_id.to_string();
            let list: Vec<Value> = files
                .iter()
                .enumerate()
                .map(|(n, (name, mime, bytes, size))| {
                    let path = format!("{channel}/{id}{n}/{name}");
                    i.cdn
                        .insert(path.clone(), (bytes.clone(), mime.to_string()));
                    json!({
                        "id": format!("{id}{n}"), "filename": name, "content_type": mime,
                        "size": size.unwrap_or(bytes.len() as u64),
                        "url": format!("{base}/attachments/{path}?ex=1&is=2&hm=3"),
                        "proxy_url": format!("{base}/attachments/{path}"),
                    })
                })
                .collect();
            let d = json!({
                "id": id, "channel_id": channel, "content": content,
                "author": { "id": author, "username": format!("user{author}") },
                "mentions": [], "attachments": list,
                "timestamp": chrono::Utc::now().to_rfc3339(), "type": 0,
            });
            keep(i, channel, &d);
            dispatch(i, "MESSAGE_CREATE", d);
            id
        })
    }

    /// Dates message `id` of `channel` `secs` ago (in its history and in
    /// the session's log).
    pub fn backdate(&self, channel: &str, id: &str, secs: i64) {
        let at = (chrono::Utc::now() - chrono::Duration::seconds(secs)).to_rfc3339();
        self.with(|i| {
            let logged = i.log.iter_mut().map(|(_, ev)| &mut ev["d"]);
            let kept = i.history.get_mut(channel).into_iter().flatten();
            for m in logged.chain(kept) {
                if m["id"] == id && m["channel_id"] == channel {
                    m["timestamp"] = json!(at);
                }
            }
        });
    }

    /// Discord forgets the session (it outlived its resume window): the
    /// next `Resume` is answered `Invalid Session` (not resumable), and
    /// what is said until the next `READY` is only in the channels'
    /// history.
    pub fn expire_session(&self) {
        self.with(|i| i.session = None);
    }

    /// The history requests' routes (`GET /channels/{id}/messages`).
    pub fn history_reads(&self) -> Vec<String> {
        self.with(|i| {
            i.calls
                .iter()
                .filter(|(r, _)| r.starts_with("GET /channels/") && r.contains("/messages"))
                .map(|(r, _)| r.clone())
                .collect()
        })
    }

    /// The files uploaded with messages, in order.
    pub fn uploads(&self) -> Vec<super::fake_server::Part> {
        self.with(|i| i.uploads.clone())
    }

    /// The CDN paths fetched.
    pub fn fetched(&self) -> Vec<String> {
        self.with(|i| i.fetched.clone())
    }

    /// Any event in the session's log (and on the socket); a thread's
    /// create or update is remembered as a channel.
    pub fn event(&self, kind: &str, d: Value) {
        self.with(|i| {
            if kind.starts_with("THREAD_") {
                if let Some(id) = d["id"].as_str() {
                    i.channels.insert(id.to_string(), d.clone());
                }
            }
            dispatch(i, kind, d)
        });
    }

    /// Sends the event with sequence `seq` again on the socket.
    pub fn replay(&self, seq: u64) {
        self.with(|i| {
            let ev = i
                .log
                .iter()
                .find(|(s, _)| *s == seq)
                .map(|(_, e)| e.clone());
            if let (Some(ev), Some(s)) = (ev, &i.socket) {
                let _ = s.tx.send(Out::Frame(ev));
            }
        })
    }

    pub fn last_seq(&self) -> u64 {
        self.with(|i| i.seq)
    }

    /// Drops the socket without a close frame.
    pub fn drop_socket(&self) {
        self.with(|i| {
            if let Some(s) = i.socket.take() {
                let _ = s.tx.send(Out::Close(None));
            }
        })
    }

    /// Closes the socket with `code`.
    pub fn close(&self, code: u16) {
        self.with(|i| {
            if let Some(s) = i.socket.take() {
                let _ = s.tx.send(Out::Close(Some(code)));
            }
        })
    }

    pub fn frame(&self, v: Value) {
        self.with(|i| {
            if let Some(s) = &i.socket {
                let _ = s.tx.send(Out::Frame(v));
            }
        })
    }

    /// The next `n` sockets get no hello (the gateway hangs).
    pub fn mute_next(&self, n: usize) {
        self.with(|i| i.mute_next = n);
    }

    /// Heartbeats are no longer acknowledged (until `ack_again`).
    pub fn stop_acking(&self) {
        self.with(|i| i.acking = false);
    }

    pub fn ack_again(&self) {
        self.with(|i| i.acking = true);
    }

    pub fn fault(&self, route: &str, f: Fault) {
        self.with(|i| i.faults.entry(route.into()).or_default().push_back(f));
    }

    /// The faults still queued are dropped: every route answers again.
    pub fn clear_faults(&self) {
        self.with(|i| i.faults.clear());
    }

    /// The bot's reactions on a message.
    pub fn reactions(&self, channel: &str, message: &str) -> Vec<String> {
        self.with(|i| {
            i.reactions
                .get(&(channel.to_string(), message.to_string()))
                .cloned()
                .unwrap_or_default()
        })
    }

    /// Messages deleted, (channel, message id).
    pub fn deleted(&self) -> Vec<(String, String)> {
        self.with(|i| i.deleted.clone())
    }

    pub fn created(&self) -> Vec<Created> {
        self.with(|i| i.created.clone())
    }

    pub fn created_in(&self, channel: &str) -> Vec<Created> {
        self.with(|i| {
            i.created
                .iter()
                .filter(|c| c.channel == channel)
                .cloned()
                .collect()
        })
    }

    pub fn calls(&self, route: &str) -> Vec<Instant> {
        self.with(|i| {
            i.calls
                .iter()
                .filter(|(r, _)| r == route)
                .map(|(_, t)| *t)
                .collect()
        })
    }

    pub fn typing(&self) -> Vec<String> {
        self.with(|i| i.typing.clone())
    }

    /// (identifies, resumes, sockets opened, most sockets at once, up now).
    pub fn gateway_stats(&self) -> (usize, u64, u64, usize, bool) {
        self.with(|i| {
            (
                i.identifies.len(),
                i.resumes,
                i.opened,
                i.max_live,
                i.socket.is_some(),
            )
        })
    }

    pub fn identify_times(&self) -> Vec<Instant> {
        self.with(|i| i.identifies.clone())
    }

    pub fn heartbeats(&self) -> u64 {
        self.with(|i| i.heartbeats)
    }

    pub async fn until(&self, limit: Duration, mut f: impl FnMut(&FakeDiscord) -> bool) -> bool {
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

/// A message in its channel's history (as REST lists it: no guild, no
/// member).
fn keep(i: &mut Inner, channel: &str, d: &Value) {
    let mut m = d.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("guild_id");
        o.remove("member");
    }
    i.history.entry(channel.to_string()).or_default().push(m);
}

/// `GET /channels/{id}/messages?after=&limit=`: the `limit` oldest after
/// `after`, listed newest first (as Discord lists them).
fn history(i: &Inner, channel: &str, query: &str) -> HttpResponse {
    let q = web::Query::<HashMap<String, String>>::from_query(query)
        .map(|q| q.into_inner())
        .unwrap_or_default();
    let after: u64 = q.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return HttpResponse::BadRequest()
            .json(json!({ "message": "Invalid Form Body", "code": 50035 }));
    }
    let Some(list) = i.history.get(channel) else {
        return HttpResponse::NotFound()
            .json(json!({ "message": "Unknown Channel", "code": 10003 }));
    };
    let id = |m: &Value| {
        m["id"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut page: Vec<Value> = list
        .iter()
        .filter(|m| id(m) > after)
        .take(limit)
        .cloned()
        .collect();
    page.reverse();
    HttpResponse::Ok().json(page)
}

fn dispatch(i: &mut Inner, kind: &str, d: Value) {
    i.seq += 1;
    let ev = json!({ "op": 0, "s": i.seq, "t": kind, "d": d });
    i.log.push((i.seq, ev.clone()));
    if let Some(s) = &i.socket {
        let _ = s.tx.send(Out::Frame(ev));
    }
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        self.drop_socket();
    }
}

async fn socket(state: Arc<State>, stream: tokio::net::TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
    let id = {
        let mut i = state.inner.lock().unwrap();
        i.next_socket += 1;
        i.opened += 1;
        i.live += 1;
        i.max_live = i.max_live.max(i.live);
        let id = i.next_socket;
        // The newest socket is the one events go to.
        i.socket = Some(Socket { id, tx: tx.clone() });
        if i.mute_next > 0 {
            i.mute_next -= 1;
        } else {
            let _ = tx.send(Out::Frame(
                json!({ "op": 10, "d": { "heartbeat_interval": i.heartbeat_ms } }),
            ));
        }
        id
    };
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Out::Frame(v)) => { if sink.send(Ws::Text(v.to_string().into())).await.is_err() { break; } }
                Some(Out::Close(Some(code))) => {
                    let _ = sink.send(Ws::Close(Some(CloseFrame { code: CloseCode::from(code), reason: "fake".into() }))).await;
                    break;
                }
                Some(Out::Close(None)) | None => break,
            },
            frame = source.next() => match frame {
                Some(Ok(Ws::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).unwrap_or_default();
                    let mut i = state.inner.lock().unwrap();
                    on_client(&mut i, &state.ws_url, &tx, &v);
                }
                Some(Ok(Ws::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    let mut i = state.inner.lock().unwrap();
    i.live -= 1;
    if i.socket.as_ref().is_some_and(|s| s.id == id) {
        i.socket = None;
    }
}

fn on_client(i: &mut Inner, url: &str, tx: &mpsc::UnboundedSender<Out>, v: &Value) {
    match v["op"].as_u64() {
        Some(1) => {
            i.heartbeats += 1;
            if i.acking {
                let _ = tx.send(Out::Frame(json!({ "op": 11 })));
            }
        }
        Some(2) => {
            if v["d"]["token"] != TOKEN {
                let _ = tx.send(Out::Close(Some(4004)));
                return;
            }
            i.identifies.push(Instant::now());
            let session = format!("session-{}", i.identifies.len());
            i.session = Some(session.clone());
            i.log.clear();
            i.seq += 1;
            let ready = json!({ "op": 0, "s": i.seq, "t": "READY", "d": {
                "v": 10, "session_id": session, "resume_gateway_url": format!("{url}/resume"),
                "user": { "id": BOT_ID, "username": "ferro", "bot": true }, "guilds": [],
            } });
            let _ = tx.send(Out::Frame(ready));
        }
        Some(6) => {
            let known =
                v["d"]["session_id"].as_str() == i.session.as_deref() && v["d"]["token"] == TOKEN;
            if !known {
                let _ = tx.send(Out::Frame(json!({ "op": 9, "d": false })));
                return;
            }
            i.resumes += 1;
            let after = v["d"]["seq"].as_u64().unwrap_or(0);
            for (s, ev) in &i.log {
                if *s > after {
                    let _ = tx.send(Out::Frame(ev.clone()));
                }
            }
            i.seq += 1;
            let _ = tx.send(Out::Frame(
                json!({ "op": 0, "s": i.seq, "t": "RESUMED", "d": {} }),
            ));
        }
        _ => {}
    }
}

/// Discord's CDN: the attachment at its (signed) URL, no token needed.
async fn cdn(state: web::Data<State>, path: web::Path<String>) -> HttpResponse {
    let mut i = state.inner.lock().unwrap();
    i.fetched.push(path.to_string());
    match i.cdn.get(path.as_str()) {
        Some((bytes, mime)) => HttpResponse::Ok()
            .content_type(mime.as_str())
            .body(bytes.clone()),
        None => HttpResponse::NotFound().finish(),
    }
}

async fn rest(
    state: web::Data<State>,
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let path = path.into_inner();
    let method = req.method().as_str().to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // The route as Discord buckets it: method, path with the channel id.
    let parts: Vec<&str> = path.split('/').collect();
    let route = match parts.as_slice() {
        ["channels", c, "messages", _] => format!("{method} /channels/{c}/messages"),
        _ => format!("{method} /{path}"),
    };
    let fault = {
        let mut i = state.inner.lock().unwrap();
        i.calls.push((route.clone(), Instant::now()));
        i.faults.get_mut(&route).and_then(VecDeque::pop_front)
    };
    match fault {
        Some(Fault::RateLimit(after, global)) => {
            let mut res = HttpResponse::TooManyRequests();
            res.insert_header(("Retry-After", format!("{}", after.ceil() as u64)))
                .insert_header(("X-RateLimit-Bucket", "fakebucket"));
            if global {
                res.insert_header(("X-RateLimit-Global", "true"));
            }
            return res.json(json!({ "message": "You are being rate limited.", "retry_after": after, "global": global }));
        }
        Some(Fault::Server(code)) => {
            return HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap())
                .body("upstream error")
        }
        Some(Fault::Hang(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    if auth != format!("Bot {TOKEN}") {
        return HttpResponse::Unauthorized()
            .json(json!({ "message": "401: Unauthorized", "code": 0 }));
    }
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // An upload: `payload_json` is the body, `files[n]` its attachments.
    let (p, files) = match super::fake_server::multipart(&ct, &body) {
        Some(parts) => {
            let payload = parts.iter().find(|p| p.name == "payload_json");
            let p = payload
                .and_then(|p| serde_json::from_slice(&p.data).ok())
                .unwrap_or(json!({}));
            let files: Vec<_> = parts
                .into_iter()
                .filter(|p| p.name.starts_with("files["))
                .collect();
            (p, files)
        }
        None => (
            serde_json::from_slice(&body).unwrap_or(json!({})),
            Vec::new(),
        ),
    };
    let mut i = state.inner.lock().unwrap();
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["gateway", "bot"]) => HttpResponse::Ok().json(json!({
            "url": state.ws_url, "shards": 1,
            "session_start_limit": { "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1 },
        })),
        ("GET", ["users", "@me"]) => {
            HttpResponse::Ok().json(json!({ "id": BOT_ID, "username": "ferro", "bot": true }))
        }
        ("POST", ["channels", c, "messages"]) => {
            let mut content = p["content"].as_str().unwrap_or_default().to_string();
            if (content.is_empty() && files.is_empty()) || content.chars().count() > 2000 {
                return HttpResponse::BadRequest()
                    .json(json!({ "message": "Invalid Form Body", "code": 50035 }));
            }
            // A message with files: recorded as `[file] <name>` lines.
            for f in &files {
                let line = format!("[file] {}", f.filename.clone().unwrap_or_default());
                content = format!("{content}\n{line}").trim_start().to_string();
            }
            i.uploads.extend(files);
            i.next_id += 1;
            let id = i.next_id.to_string();
            i.created.push(Created {
                channel: c.to_string(),
                id: id.clone(),
                content: content.clone(),
                reply_to: p["message_reference"]["message_id"].as_str().map(str::to_string),
                edits: 0,
                at: Instant::now(),
            });
            let made = json!({ "id": id, "channel_id": c, "content": content,
                "author": { "id": BOT_ID, "username": "ferro", "bot": true },
                "timestamp": chrono::Utc::now().to_rfc3339(), "type": 0 });
            keep(&mut i, c, &made);
            HttpResponse::Ok().json(made)
        }
        ("PATCH", ["channels", c, "messages", m]) => {
            let content = p["content"].as_str().unwrap_or_default().to_string();
            let Some(msg) = i.created.iter_mut().find(|x| x.id == *m && x.channel == *c) else {
                return HttpResponse::NotFound().json(json!({ "message": "Unknown Message", "code": 10008 }));
            };
            msg.content = content;
            msg.edits += 1;
            HttpResponse::Ok().json(json!({ "id": m, "channel_id": c }))
        }
        ("PUT" | "DELETE", ["channels", c, "messages", m, "reactions", e, "@me"]) => {
            let emoji = percent_encoding::percent_decode_str(e).decode_utf8_lossy().into_owned();
            let key = (c.to_string(), m.to_string());
            let known = i.created.iter().any(|x| x.id == *m && x.channel == *c)
                || m.parse::<u64>().is_ok_and(|n| n <= i.next_id);
            if !known || i.deleted.contains(&key) {
                return HttpResponse::NotFound().json(json!({ "message": "Unknown Message", "code": 10008 }));
            }
            let list = i.reactions.entry(key).or_default();
            list.retain(|x| *x != emoji);
            if method == "PUT" {
                list.push(emoji);
            }
            HttpResponse::NoContent().finish()
        }
        ("DELETE", ["channels", c, "messages", m]) => {
            let key = (c.to_string(), m.to_string());
            if !i.created.iter().any(|x| x.id == *m && x.channel == *c) || i.deleted.contains(&key) {
                return HttpResponse::NotFound().json(json!({ "message": "Unknown Message", "code": 10008 }));
            }
            i.deleted.push(key);
            HttpResponse::NoContent().finish()
        }
        ("GET", ["channels", c, "messages"]) => history(&i, c, req.query_string()),
        ("GET", ["channels", c]) => match i.channels.get(*c) {
            Some(ch) => HttpResponse::Ok().json(ch),
            None => HttpResponse::NotFound().json(json!({ "message": "Unknown Channel", "code": 10003 })),
        },
        ("GET", ["guilds", g, "members", u]) => {
            match i.members.get(&(g.to_string(), u.to_string())) {
                Some(m) => HttpResponse::Ok().json(m),
                None => HttpResponse::NotFound().json(json!({ "message": "Unknown Member", "code": 10007 })),
            }
        }
        ("POST", ["channels", c, "typing"]) => {
            i.typing.push(c.to_string());
            HttpResponse::NoContent().finish()
        }
        _ => HttpResponse::NotFound().json(json!({ "message": "404: Not Found", "code": 0 })),
    }
}
