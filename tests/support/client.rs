//! A protocol-speaking WebSocket test client over tokio-tungstenite.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const WAIT: Duration = Duration::from_secs(15);

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub challenge: Value,
    next_id: u64,
    /// Events read while waiting for something else.
    pub backlog: Vec<Value>,
}

/// What ended a connection.
#[derive(Debug, PartialEq)]
pub struct Closed {
    pub code: u16,
    pub reason: String,
}

impl Client {
    pub async fn connect(url: &str) -> Client {
        Self::connect_with(url, &[]).await
    }

    /// Connects with extra request headers; reads the challenge.
    pub async fn connect_with(url: &str, headers: &[(&str, &str)]) -> Client {
        let mut req = url.into_client_request().unwrap();
        for (k, v) in headers {
            req.headers_mut().insert(
                tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        // Nagle off, as browsers and OpenClaw's clients do: small frames go out at once.
        let (ws, _) = tokio::time::timeout(
            WAIT,
            tokio_tungstenite::connect_async_with_config(req, None, true),
        )
        .await
        .unwrap()
        .unwrap();
        Self::from_ws(ws).await
    }

    /// Connects with a small socket receive buffer (no kernel autotuning), so
    /// a client that stops reading backs up into the gateway quickly.
    pub async fn connect_small_rcvbuf(url: &str) -> Client {
        let addr = url.trim_start_matches("ws://").trim_end_matches('/');
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let stream = sock.connect(addr.parse().unwrap()).await.unwrap();
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
            .await
            .unwrap();
        Self::from_ws(ws).await
    }

    async fn from_ws(ws: WebSocketStream<MaybeTlsStream<TcpStream>>) -> Client {
        let mut c = Client {
            ws,
            challenge: Value::Null,
            next_id: 0,
            backlog: Vec::new(),
        };
        let first = c.recv().await.expect("challenge");
        assert_eq!(first["event"], "connect.challenge", "{first}");
        c.challenge = first;
        c
    }

    pub fn nonce(&self) -> String {
        self.challenge["payload"]["nonce"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    pub async fn send_raw(&mut self, msg: Message) {
        let _ = self.ws.send(msg).await;
    }

    /// Next JSON frame, or None when the socket closed.
    pub async fn recv(&mut self) -> Option<Value> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("frame within timeout")?;
            match msg {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => continue,
            }
        }
    }

    /// Reads until the close frame; returns it (frames before it are kept in the backlog).
    pub async fn closed(&mut self) -> Closed {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("close within timeout");
            match msg {
                Some(Ok(Message::Close(Some(f)))) => {
                    return Closed {
                        code: u16::from(f.code),
                        reason: f.reason.to_string(),
                    }
                }
                Some(Ok(Message::Close(None))) => {
                    return Closed {
                        code: u16::from(CloseCode::Status),
                        reason: String::new(),
                    }
                }
                Some(Ok(Message::Text(t))) => {
                    self.backlog.push(serde_json::from_str(t.as_str()).unwrap())
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("socket error before close: {e}"),
                None => panic!("socket ended without a close frame"),
            }
        }
    }

    pub async fn send_req(&mut self, method: &str, params: Value) -> String {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        let frame = json!({ "type": "req", "id": id, "method": method, "params": params });
        self.send_text(&frame.to_string()).await;
        id
    }

    /// Waits for the `res` with this id (from the backlog first), keeping
    /// other frames in the backlog.
    pub async fn res(&mut self, id: &str) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|f| f["type"] == "res" && f["id"] == id)
        {
            return self.backlog.remove(i);
        }
        loop {
            let f = self
                .recv()
                .await
                .unwrap_or_else(|| panic!("closed while waiting for res {id}"));
            if f["type"] == "res" && f["id"] == id {
                return f;
            }
            self.backlog.push(f);
        }
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_req(method, params).await;
        self.res(&id).await
    }

    /// Sends connect and returns its response.
    pub async fn handshake(&mut self, params: Value) -> Value {
        self.call("connect", params).await
    }

    /// Next event with this name (from the backlog first).
    /// Takes every already received event named `name` out of the backlog.
    pub fn backlog_events(&mut self, name: &str) -> Vec<Value> {
        let (hit, keep): (Vec<Value>, Vec<Value>) = std::mem::take(&mut self.backlog)
            .into_iter()
            .partition(|f| f["type"] == "event" && f["event"] == name);
        self.backlog = keep;
        hit
    }

    /// Every frame received and not yet taken, in order.
    pub fn take_backlog(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.backlog)
    }

    pub async fn event(&mut self, name: &str) -> Value {
        if let Some(i) = self.backlog.iter().position(|f| f["event"] == name) {
            return self.backlog.remove(i);
        }
        loop {
            let f = self
                .recv()
                .await
                .unwrap_or_else(|| panic!("closed while waiting for event {name}"));
            if f["type"] == "event" && f["event"] == name {
                return f;
            }
            self.backlog.push(f);
        }
    }
}

/// True when `text` happens to be a valid request frame (generated garbage
/// that is not garbage is skipped).
pub fn is_valid_request(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .is_some_and(|v| v["type"] == "req" && v["id"].is_string() && v["method"].is_string())
}

impl Client {
    /// Next `res` frame (events go to the backlog).
    pub async fn recv_res(&mut self) -> Value {
        loop {
            let f = self.recv().await.expect("socket open");
            if f["type"] == "res" {
                return f;
            }
            self.backlog.push(f);
        }
    }
}
