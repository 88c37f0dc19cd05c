//! Client commands of the `ferroclaw` binary: they talk to a running gateway
//! over its WebSocket protocol, as OpenClaw's CLI does (client id `cli`,
//! operator role, token auth). Every command takes `--url`, `--token` and
//! `--json`; an error is one readable line on stderr and a non-zero exit
//! (1: the gateway said no or could not be reached; 2: bad input).

use std::process::ExitCode;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

pub mod args;
pub mod audit;
pub mod backup;
pub mod browser;
pub mod cron;
pub mod daemon;
mod disk;
pub mod dispatch;
mod doctor;
mod export;
pub mod gateway;
mod import;
pub mod mcp;
pub mod mcp_serve;
pub mod nodes;
pub mod onboard;
pub mod pairing;
pub mod plugins;
mod reply;

pub use doctor::doctor;
pub use export::export;
pub use import::{import, ImportArgs};
use reply::{before_send, stream_reply, Prompt};

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a call may take before the command gives up.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where and how to reach the gateway.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub token: Option<String>,
    pub json: bool,
}

/// A failed command: the line to print and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code,
        }
    }

    pub fn exit(self) -> ExitCode {
        eprintln!("error: {}", self.message);
        ExitCode::from(self.code)
    }
}

pub struct Connection {
    ws: Ws,
    next: u64,
    /// Events read while waiting for a response.
    pub events: std::collections::VecDeque<Value>,
    /// Whether events are kept for `event()` (commands that never read
    /// them turn this off, so a busy gateway's events do not pile up).
    pub keep_events: bool,
}

async fn recv_json(ws: &mut Ws) -> Result<Value, Failure> {
    loop {
        let msg = tokio::time::timeout(CALL_TIMEOUT, ws.next())
            .await
            .map_err(|_| Failure::new(1, "the gateway did not answer in time"))?;
        match msg {
            Some(Ok(Message::Text(t))) => {
                return serde_json::from_str(&t)
                    .map_err(|e| Failure::new(1, format!("the gateway sent bad JSON: {e}")))
            }
            Some(Ok(Message::Close(frame))) => {
                let reason = frame
                    .map(|f| format!("{} ({})", f.reason, u16::from(f.code)))
                    .unwrap_or_else(|| "no reason".into());
                return Err(Failure::new(
                    1,
                    format!("the gateway closed the connection: {reason}"),
                ));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(Failure::new(1, format!("connection lost: {e}"))),
            None => return Err(Failure::new(1, "the gateway closed the connection")),
        }
    }
}

impl Connection {
    /// Connects and completes the handshake.
    pub async fn open(t: &Target) -> Result<Connection, Failure> {
        let connect = tokio_tungstenite::connect_async_with_config(t.url.as_str(), None, true);
        let (ws, _) = tokio::time::timeout(Duration::from_secs(10), connect)
            .await
            .map_err(|_| Failure::new(1, format!("cannot reach the gateway at {} (timed out); is it running? start it with `ferroclaw gateway`", t.url)))?
            .map_err(|e| Failure::new(1, format!("cannot reach the gateway at {}: {e}; is it running? start it with `ferroclaw gateway`", t.url)))?;
        let mut c = Connection {
            ws,
            next: 0,
            events: Default::default(),
            keep_events: true,
        };
        // connect.challenge first.
        let challenge = recv_json(&mut c.ws).await?;
        if challenge.get("event").and_then(Value::as_str) != Some("connect.challenge") {
            return Err(Failure::new(
                1,
                "the server at that URL is not a ferroclaw/OpenClaw gateway",
            ));
        }
        let mut params = json!({
            "minProtocol": 3, "maxProtocol": 4,
            "client": { "id": "cli", "version": ferroclaw::VERSION, "platform": std::env::consts::OS, "mode": "cli" },
            "caps": [], "role": "operator",
            "scopes": ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"],
        });
        if let Some(tok) = &t.token {
            params["auth"] = json!({ "token": tok });
        }
        let hello = c.call_raw("connect", params).await?;
        if hello.get("ok") != Some(&Value::Bool(true)) {
            let msg = hello["error"]["message"]
                .as_str()
                .unwrap_or("refused")
                .to_string();
            let hint = if msg.contains("token") || msg.contains("unauthorized") {
                "; pass --token or set OPENCLAW_GATEWAY_TOKEN (the token is in <state dir>/gateway.token)"
            } else {
                ""
            };
            return Err(Failure::new(
                1,
                format!("the gateway refused the connection: {msg}{hint}"),
            ));
        }
        Ok(c)
    }

    async fn call_raw(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        self.next += 1;
        let id = format!("cli-{}", self.next);
        let frame = json!({ "type": "req", "id": id, "method": method, "params": params });
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .map_err(|e| Failure::new(1, format!("connection lost: {e}")))?;
        loop {
            let v = recv_json(&mut self.ws).await?;
            match v.get("type").and_then(Value::as_str) {
                Some("res") if v.get("id").and_then(Value::as_str) == Some(id.as_str()) => {
                    return Ok(v)
                }
                Some("event") if self.keep_events => self.events.push_back(v),
                _ => {}
            }
        }
    }

    /// Calls a method; Ok(payload) or the gateway's error as a Failure.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        let res = self.call_raw(method, params).await?;
        if res.get("ok") == Some(&Value::Bool(true)) {
            Ok(res.get("payload").cloned().unwrap_or(Value::Null))
        } else {
            let msg = res["error"]["message"].as_str().unwrap_or("failed");
            Err(Failure::new(1, format!("{method}: {msg}")))
        }
    }

    /// The next event, however long it takes (buffered first); Err when
    /// the connection ends.
    pub async fn next_event(&mut self) -> Result<Value, Failure> {
        if let Some(e) = self.events.pop_front() {
            return Ok(e);
        }
        loop {
            let v = match self.ws.next().await {
                Some(Ok(Message::Text(t))) => serde_json::from_str::<Value>(&t).unwrap_or_default(),
                Some(Ok(Message::Close(_))) | None => {
                    return Err(Failure::new(1, "the gateway closed the connection"))
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(Failure::new(1, format!("connection lost: {e}"))),
            };
            if v.get("type").and_then(Value::as_str) == Some("event") {
                return Ok(v);
            }
        }
    }

    /// The next event (buffered first).
    pub async fn event(&mut self) -> Result<Value, Failure> {
        if let Some(e) = self.events.pop_front() {
            return Ok(e);
        }
        loop {
            let v = recv_json(&mut self.ws).await?;
            if v.get("type").and_then(Value::as_str) == Some("event") {
                return Ok(v);
            }
        }
    }
}

pub(crate) fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// `health`.
pub async fn health(t: &Target) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let h = c.call("health", json!({})).await?;
    if t.json {
        print_json(&h);
    } else {
        let ok = h.get("ok").and_then(Value::as_bool).unwrap_or(false);
        println!(
            "gateway {} ({})",
            if ok { "healthy" } else { "unhealthy" },
            t.url
        );
        if let Some(n) = h.pointer("/sessions/count").and_then(Value::as_u64) {
            println!("sessions: {n}");
        }
    }
    Ok(())
}

/// `status`.
pub async fn status(t: &Target) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let s = c.call("status", json!({})).await?;
    if t.json {
        print_json(&s);
        return Ok(());
    }
    println!("gateway: {}", t.url);
    for (label, ptr) in [
        ("version", "/version"),
        ("uptime ms", "/uptimeMs"),
        ("default model", "/defaults/model"),
    ] {
        if let Some(v) = s.pointer(ptr) {
            println!(
                "{label}: {}",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            );
        }
    }
    let list = c.call("sessions.list", json!({ "limit": 5 })).await?;
    let n = list.get("count").and_then(Value::as_u64).unwrap_or(0);
    println!("sessions: {n}");
    for row in list
        .get("sessions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        println!("  {}", row["key"].as_str().unwrap_or(""));
    }
    // What blocks a session: the exec approvals waiting for an operator.
    let waiting = c.call("exec.approval.list", json!({})).await?;
    for a in waiting.as_array().into_iter().flatten() {
        let r = &a["request"];
        let key = r["sessionKey"].as_str().unwrap_or("?");
        println!(
            "waiting for approval {}: session {key} wants to run {} (answer it with `ferroclaw chat --session {key}`, the web chat or the Control UI)",
            a["id"].as_str().unwrap_or("?"),
            r["command"].as_str().unwrap_or("?"),
        );
    }
    Ok(())
}

/// `sessions list|show|reset|delete`.
pub async fn sessions(t: &Target, action: &str, key: Option<&str>) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let need_key =
        || key.ok_or_else(|| Failure::new(2, format!("sessions {action} needs a session key")));
    let out = match action {
        "list" => {
            c.call("sessions.list", json!({ "includeLastMessage": true }))
                .await?
        }
        "show" => {
            c.call("chat.history", json!({ "sessionKey": need_key()? }))
                .await?
        }
        "reset" => {
            c.call("sessions.reset", json!({ "key": need_key()? }))
                .await?
        }
        "delete" => {
            c.call("sessions.delete", json!({ "key": need_key()? }))
                .await?
        }
        other => {
            return Err(Failure::new(
                2,
                format!("unknown sessions action {other:?} (list, show, reset, delete)"),
            ))
        }
    };
    if t.json {
        print_json(&out);
        return Ok(());
    }
    match action {
        "list" => print_sessions(&out),
        "show" => print_history(&out),
        "reset" => println!("session {} reset", key.unwrap_or("")),
        _ => println!("session {} deleted", key.unwrap_or("")),
    }
    Ok(())
}

/// `sessions list`: key, age, last message.
fn print_sessions(out: &Value) {
    let rows = out.get("sessions").and_then(Value::as_array);
    for row in rows.into_iter().flatten() {
        let preview = row
            .get("lastMessagePreview")
            .and_then(Value::as_str)
            .unwrap_or("");
        println!(
            "{}  {}  {}",
            row["key"].as_str().unwrap_or(""),
            cron::ago(row["updatedAt"].as_u64()),
            preview
        );
    }
    if out.get("count").and_then(Value::as_u64) == Some(0) {
        println!("no sessions");
    }
}

/// `sessions show`: each message's role and text.
fn print_history(out: &Value) {
    let messages = out.get("messages").and_then(Value::as_array);
    for m in messages.into_iter().flatten() {
        // OpenClaw writes content as blocks, or (older lines) one string.
        let text: Vec<&str> = match &m["content"] {
            Value::String(s) => vec![s.as_str()],
            blocks => blocks
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
        };
        println!("{}: {}", m["role"].as_str().unwrap_or("?"), text.join(" "));
    }
}

/// `agent --message`: sends and streams the reply; a spinner on stderr
/// until the first token when stderr is a terminal.
pub async fn agent(
    t: &Target,
    message: &str,
    session: &str,
    thinking: Option<&str>,
) -> Result<(), Failure> {
    if message.trim().is_empty() {
        return Err(Failure::new(2, "--message must not be empty"));
    }
    let mut c = Connection::open(t).await?;
    let run_id = ulid::Ulid::generate().to_string();
    let mut params = json!({ "sessionKey": session, "message": message, "idempotencyKey": run_id });
    if let Some(l) = thinking {
        params["thinking"] = json!(l);
    }
    let mut prompt = Prompt::stdin();
    let key = before_send(&mut c, t, session, prompt.as_mut()).await?;
    c.call("chat.send", params).await?;
    let target = (session, key);
    stream_reply(&mut c, t, &run_id, target, None, prompt.as_mut()).await
}

/// `chat`: an interactive session. Lines go to the agent (directives like
/// `/think high` included); Ctrl-C aborts the running reply, not the
/// program; Ctrl-D or `/quit` ends it.
pub async fn chat(t: &Target, session: &str) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Failure::new(1, format!("cannot handle Ctrl-C: {e}")))?;
    if !t.json {
        eprintln!(
            "chatting in session {session} on {} (Ctrl-C stops a reply, Ctrl-D or /quit ends)",
            t.url
        );
    }
    let mut prompt = terminal_prompt();
    loop {
        if prompt.want.send("> ".into()).is_err() {
            break;
        }
        let line = tokio::select! {
            l = prompt.lines.recv() => l.flatten(),
            // Ctrl-C at the prompt (no terminal editing): ignored.
            _ = sigint.recv() => { continue; }
        };
        let Some(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/quit" || line == "/exit" {
            break;
        }
        let run_id = ulid::Ulid::generate().to_string();
        let key = before_send(&mut c, t, session, Some(&mut prompt)).await?;
        let ack = c
            .call(
                "chat.send",
                json!({ "sessionKey": session, "message": line, "idempotencyKey": run_id }),
            )
            .await?;
        if line == "/stop" || line == "/abort" {
            // Answered at once (OpenClaw's shape), with no run of its own.
            match ack.get("aborted").and_then(Value::as_bool) {
                Some(true) => println!("[stopped]"),
                _ => println!("[nothing to stop]"),
            }
            continue;
        }
        let reply = stream_reply(
            &mut c,
            t,
            &run_id,
            (session, key),
            Some(&mut sigint),
            Some(&mut prompt),
        );
        if let Err(f) = reply.await {
            // A failed reply is reported; the conversation goes on.
            eprintln!("error: {}", f.message);
        }
    }
    Ok(())
}

/// Lines from the terminal: rustyline blocks, so it reads them on its own
/// thread, one when asked (with the prompt it is asked with: the chat's,
/// or an approval's). None: the input ended.
fn terminal_prompt() -> Prompt {
    let (line_tx, line_rx) = tokio::sync::mpsc::channel::<Option<String>>(1);
    let (want_tx, want_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let Ok(mut editor) = rustyline::DefaultEditor::new() else {
            let _ = line_tx.blocking_send(None);
            return;
        };
        while let Ok(prompt) = want_rx.recv() {
            let line = match editor.readline(&prompt) {
                Ok(line) => {
                    if prompt == "> " {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    Some(line)
                }
                Err(rustyline::error::ReadlineError::Interrupted) => Some(String::new()),
                Err(_) => None,
            };
            let ended = line.is_none();
            if line_tx.blocking_send(line).is_err() || ended {
                return;
            }
        }
    });
    Prompt {
        want: want_tx,
        lines: line_rx,
    }
}

/// `config get [KEY]`.
pub async fn config_get(t: &Target, key: Option<&str>) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let snap = c.call("config.get", json!({})).await?;
    let config = snap.get("config").cloned().unwrap_or(Value::Null);
    let value = match key {
        None => config,
        Some(k) => {
            let ptr = format!("/{}", k.replace('.', "/"));
            config
                .pointer(&ptr)
                .cloned()
                .ok_or_else(|| Failure::new(1, format!("config key {k} is not set")))?
        }
    };
    if t.json || !value.is_string() {
        print_json(&value);
    } else {
        println!("{}", value.as_str().unwrap_or_default());
    }
    Ok(())
}

/// `config set KEY VALUE` (VALUE is JSON, or taken as a string).
pub async fn config_set(t: &Target, key: &str, raw: &str) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
    let mut c = Connection::open(t).await?;
    let snap = c.call("config.get", json!({})).await?;
    let hash = snap.get("hash").cloned().unwrap_or(Value::Null);
    let res = c
        .call(
            "config.set",
            json!({ "key": key, "value": value, "baseHash": hash }),
        )
        .await?;
    if t.json {
        print_json(&res);
    } else {
        println!("{key} set");
    }
    Ok(())
}
