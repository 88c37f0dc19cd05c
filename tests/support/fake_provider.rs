//! A fake model provider on loopback that speaks OpenAI's chat-completions
//! wire format byte for byte: SSE `data:` chunks and `[DONE]`, or a JSON
//! body, or an HTTP error. Each request takes the next script; requests are
//! recorded; the time of each first chunk is kept so benchmarks can subtract
//! the provider's own latency; aborted streams are counted.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone)]
pub enum Script {
    /// SSE chunks (the JSON after `data: `), then `[DONE]` unless `cut`.
    Stream {
        chunks: Vec<String>,
        first_delay: Duration,
        delay: Duration,
        /// Close the connection after this many chunks, without `[DONE]`.
        cut_after: Option<usize>,
    },
    /// Named SSE events (`event: <name>` + `data: <json>`), Anthropic style;
    /// no `[DONE]`. Cut after `cut_after` events when set.
    Events {
        events: Vec<(String, String)>,
        cut_after: Option<usize>,
    },
    /// A plain HTTP response.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

impl Script {
    /// A streamed answer of `n` tokens (`w0 w1 ...`), one chunk each.
    pub fn words(n: usize) -> Script {
        let words: Vec<String> = (0..n).map(|i| format!("w{i} ")).collect();
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        Script::text(&refs)
    }

    /// A streamed text answer, one chunk per token, then usage.
    pub fn text(tokens: &[&str]) -> Script {
        let mut chunks: Vec<String> = tokens
            .iter()
            .map(|t| json!({"choices":[{"index":0,"delta":{"content":t}}]}).to_string())
            .collect();
        chunks.push(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string());
        chunks.push(
            json!({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":tokens.len()}})
                .to_string(),
        );
        Script::Stream {
            chunks,
            first_delay: Duration::ZERO,
            delay: Duration::ZERO,
            cut_after: None,
        }
    }

    pub fn with_delay(self, per_chunk: Duration) -> Script {
        match self {
            Script::Stream {
                chunks,
                first_delay,
                cut_after,
                ..
            } => Script::Stream {
                chunks,
                first_delay,
                delay: per_chunk,
                cut_after,
            },
            other => other,
        }
    }

    pub fn cut_after(self, n: usize) -> Script {
        match self {
            Script::Stream {
                chunks,
                first_delay,
                delay,
                ..
            } => Script::Stream {
                chunks,
                first_delay,
                delay,
                cut_after: Some(n),
            },
            other => other,
        }
    }

    /// A native tool call whose arguments arrive in two fragments.
    pub fn tool_call(id: &str, name: &str, args: &Value) -> Script {
        let a = args.to_string();
        let (x, y) = a.split_at(a.len() / 2);
        let chunks = vec![
            json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":x}}]}}]}).to_string(),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":y}}]}}]}).to_string(),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        ];
        Script::Stream {
            chunks,
            first_delay: Duration::ZERO,
            delay: Duration::ZERO,
            cut_after: None,
        }
    }

    /// Raw SSE data payloads as given (for malformed chunks).
    pub fn raw(chunks: &[&str]) -> Script {
        Script::Stream {
            chunks: chunks.iter().map(|c| c.to_string()).collect(),
            first_delay: Duration::ZERO,
            delay: Duration::ZERO,
            cut_after: None,
        }
    }

    pub fn status(status: u16, body: &str) -> Script {
        Script::Http {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    pub fn rate_limited(retry_after_secs: u64) -> Script {
        Script::Http {
            status: 429,
            headers: vec![("retry-after".into(), retry_after_secs.to_string())],
            body: json!({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}).to_string(),
        }
    }

    /// An Anthropic Messages stream: optional thinking, text tokens, then
    /// an optional tool_use whose input arrives in two `input_json_delta`s.
    pub fn anthropic(
        thinking: Option<&str>,
        tokens: &[&str],
        tool: Option<(&str, &str, Value)>,
    ) -> Script {
        let mut ev = vec![(
            "message_start".to_string(),
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":20,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}).to_string(),
        )];
        let mut index = 0;
        let mut push = |name: &str, v: Value| ev.push((name.to_string(), v.to_string()));
        if let Some(t) = thinking {
            push(
                "content_block_start",
                json!({"type":"content_block_start","index":index,"content_block":{"type":"thinking","thinking":""}}),
            );
            push(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":{"type":"thinking_delta","thinking":t}}),
            );
            push(
                "content_block_stop",
                json!({"type":"content_block_stop","index":index}),
            );
            index += 1;
        }
        push("ping", json!({"type":"ping"}));
        push(
            "content_block_start",
            json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":""}}),
        );
        for t in tokens {
            push(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":t}}),
            );
        }
        push(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        );
        let stop = if let Some((id, name, input)) = &tool {
            index += 1;
            let raw = input.to_string();
            let (a, b) = raw.split_at(raw.len() / 2);
            push(
                "content_block_start",
                json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
            );
            push(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":a}}),
            );
            push(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":b}}),
            );
            push(
                "content_block_stop",
                json!({"type":"content_block_stop","index":index}),
            );
            "tool_use"
        } else {
            "end_turn"
        };
        push(
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":tokens.len() + 1}}),
        );
        push("message_stop", json!({"type":"message_stop"}));
        Script::Events {
            events: ev,
            cut_after: None,
        }
    }

    /// Keeps only the first `n` events of an `Events` script (a cut stream).
    pub fn cut_events(self, n: usize) -> Script {
        match self {
            Script::Events { events, .. } => Script::Events {
                events,
                cut_after: Some(n),
            },
            other => other,
        }
    }

    /// A non-streaming JSON answer (a proxy that ignored `stream: true`).
    pub fn json_answer(content: &str) -> Script {
        let body = json!({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":content},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}});
        Script::Http {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }
}

/// A request as received: JSON body and lowercased headers.
pub type Recorded = (Value, Vec<(String, String)>);

#[derive(Clone, Default)]
pub struct FakeProvider {
    pub addr: Option<SocketAddr>,
    scripts: Arc<Mutex<VecDeque<Script>>>,
    /// Served when no script is queued (benchmarks); else a 500.
    fallback: Arc<Mutex<Option<Script>>>,
    /// Keep request bodies (tests); benchmarks turn it off.
    pub record: Arc<std::sync::atomic::AtomicBool>,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    pub first_chunk_at: Arc<Mutex<Vec<Instant>>>,
    pub aborted: Arc<AtomicUsize>,
    /// Request body bytes received, in all (benchmarks).
    pub request_bytes: Arc<AtomicUsize>,
    /// Completions served, for the rate-limit headers.
    pub served: Arc<AtomicUsize>,
    /// Answers from the request body when no script is queued.
    responder: Arc<Mutex<Option<Responder>>>,
}

/// A script chosen by looking at the request body.
pub type Responder = Arc<dyn Fn(&Value) -> Script + Send + Sync>;

/// The text of the last message of a chat-completions request.
#[allow(dead_code)]
pub fn last_text(body: &Value) -> String {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

impl FakeProvider {
    /// Starts on 127.0.0.1:0 on the current tokio runtime.
    pub async fn start() -> FakeProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = FakeProvider {
            addr: Some(listener.local_addr().unwrap()),
            record: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            ..Default::default()
        };
        let shared = fake.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                // Like real API servers: each SSE chunk leaves at once.
                let _ = sock.set_nodelay(true);
                let me = shared.clone();
                tokio::spawn(async move { me.serve(sock).await });
            }
        });
        fake
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr.unwrap())
    }

    /// The script for every request that finds the queue empty (bench/chat.rs).
    #[allow(dead_code)]
    pub fn set_default(&self, s: Script) {
        *self.fallback.lock().unwrap() = Some(s);
    }

    /// Answers every request that finds the queue empty with `f(body)`.
    #[allow(dead_code)]
    pub fn respond_with(&self, f: impl Fn(&Value) -> Script + Send + Sync + 'static) {
        *self.responder.lock().unwrap() = Some(Arc::new(f));
    }

    pub fn push(&self, s: Script) {
        self.scripts.lock().unwrap().push_back(s);
    }

    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    async fn serve(&self, mut sock: tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut tmp = [0u8; 8192];
        let head_end = loop {
            let Ok(n) = sock.read(&mut tmp).await else {
                return;
            };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&tmp[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        let mut headers: Vec<(String, String)> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let Ok(n) = sock.read(&mut tmp).await else {
                return;
            };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        self.request_bytes.fetch_add(len, Ordering::Relaxed);
        headers.push((":path".to_string(), path));
        let body: Value =
            serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
        let responder = self.responder.lock().unwrap().clone();
        let answered = responder.map(|r| r(&body));
        if self.record.load(Ordering::Relaxed) {
            self.requests.lock().unwrap().push((body, headers));
        }
        let script = self.scripts.lock().unwrap().pop_front();
        let script = script
            .or(answered)
            .or_else(|| self.fallback.lock().unwrap().clone())
            .unwrap_or_else(|| Script::status(500, "{\"error\":{\"message\":\"no script\"}}"));
        match script {
            Script::Http {
                status,
                headers,
                body,
            } => {
                let mut res = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    res.push_str(&format!("{k}: {v}\r\n"));
                }
                res.push_str("\r\n");
                res.push_str(&body);
                let _ = sock.write_all(res.as_bytes()).await;
            }
            Script::Events { events, cut_after } => {
                // Anthropic's rate-limit headers, as its API sends them.
                let n = self.served.fetch_add(1, Ordering::Relaxed) + 1;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\
                     anthropic-ratelimit-requests-limit: 50\r\nanthropic-ratelimit-requests-remaining: {}\r\n\
                     anthropic-ratelimit-requests-reset: 2030-01-01T00:00:00Z\r\n\r\n",
                    50usize.saturating_sub(n)
                );
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                self.first_chunk_at.lock().unwrap().push(Instant::now());
                for (i, (name, data)) in events.iter().enumerate() {
                    if cut_after == Some(i) {
                        return;
                    }
                    let frame = format!("event: {name}\ndata: {data}\n\n");
                    if sock.write_all(frame.as_bytes()).await.is_err() {
                        self.aborted.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
            }
            Script::Stream {
                chunks,
                first_delay,
                delay,
                cut_after,
            } => {
                // OpenAI's rate-limit headers, as its API sends them.
                let n = self.served.fetch_add(1, Ordering::Relaxed) + 1;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\
                     x-ratelimit-limit-requests: 500\r\nx-ratelimit-remaining-requests: {}\r\n\
                     x-ratelimit-reset-requests: 120ms\r\nx-ratelimit-limit-tokens: 30000\r\n\
                     x-ratelimit-remaining-tokens: {}\r\nx-ratelimit-reset-tokens: 6s\r\n\r\n",
                    500usize.saturating_sub(n),
                    30000usize.saturating_sub(1500 * n)
                );
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                // A zero sleep still waits for the timer wheel's next tick
                // (up to a millisecond): none is taken when none is asked.
                if !first_delay.is_zero() {
                    tokio::time::sleep(first_delay).await;
                }
                for (i, c) in chunks.iter().enumerate() {
                    if cut_after == Some(i) {
                        return;
                    }
                    if i > 0 && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    if i == 0 {
                        self.first_chunk_at.lock().unwrap().push(Instant::now());
                    }
                    let frame = format!("data: {c}\n\n");
                    if sock.write_all(frame.as_bytes()).await.is_err()
                        || sock.flush().await.is_err()
                    {
                        self.aborted.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
                let _ = sock.write_all(b"data: [DONE]\n\n").await;
            }
        }
    }
}
