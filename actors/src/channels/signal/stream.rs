//! signal-cli's event stream (`GET /api/v1/events`) as a task: opened with
//! `Last-Event-ID` (the stored cursor; "0" when there is none, which
//! signal-cli answers with every event it keeps), read line by line, each
//! step sent to the owning actor tagged with the stream's generation. The
//! reader is written here rather than taken from `sse-stream`, which ends
//! a stream at the first line it cannot read: this one skips garbage and
//! oversized events with a report, passes keep-alive comments on (the
//! daemon is alive) and ends a stream silent for `IDLE` (signal-cli sends a
//! comment every 15 s).

use std::time::Duration;

use actix::Recipient;
use futures_util::StreamExt;

pub use super::messages::Streamed;

/// The longest event kept; a longer one is skipped.
pub const MAX_EVENT: usize = 1 << 20;
/// A stream with nothing (not even a keep-alive) for this long is dead.
const IDLE: Duration = Duration::from_secs(45);

#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Opened,
    /// A comment (signal-cli's keep-alive).
    Alive,
    Event {
        id: Option<String>,
        kind: Option<String>,
        data: String,
    },
    /// Bytes that are not an event, skipped.
    Garbage(String),
    Closed(String),
}

/// An incremental reader of the SSE format (WHATWG's rules: fields `id`,
/// `event`, `data`, comments; a blank line ends an event).
#[derive(Debug, Default)]
pub struct SseReader {
    line: Vec<u8>,
    /// The current line went past `MAX_EVENT`: skip to its end.
    skipping: bool,
    id: Option<String>,
    kind: Option<String>,
    data: Option<String>,
    oversized: bool,
}

impl SseReader {
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                if std::mem::take(&mut self.skipping) {
                    self.oversized = true;
                } else {
                    self.line_done(&line, out);
                }
            } else if !self.skipping {
                self.line.push(b);
                if self.line.len() > MAX_EVENT {
                    self.line.clear();
                    self.skipping = true;
                }
            }
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<StreamEvent>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            let (id, kind, data) = (self.id.take(), self.kind.take(), self.data.take());
            if std::mem::take(&mut self.oversized) {
                out.push(StreamEvent::Garbage(format!(
                    "an event over {MAX_EVENT} bytes"
                )));
            } else if let Some(data) = data {
                out.push(StreamEvent::Event { id, kind, data });
            }
            return;
        }
        if line[0] == b':' {
            out.push(StreamEvent::Alive);
            return;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            out.push(StreamEvent::Garbage("a line that is not UTF-8".into()));
            return;
        };
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text, ""),
        };
        match field {
            "id" => self.id = Some(value.to_string()),
            "event" => self.kind = Some(value.to_string()),
            "data" => {
                let d = self.data.get_or_insert_with(String::new);
                if !d.is_empty() {
                    d.push('\n');
                }
                if d.len() + value.len() > MAX_EVENT {
                    self.oversized = true;
                } else {
                    d.push_str(value);
                }
            }
            "retry" => {}
            _ => out.push(StreamEvent::Garbage(format!(
                "an unknown field {:?}",
                field.chars().take(40).collect::<String>()
            ))),
        }
    }
}

/// Runs stream number `generation` from `url`, every step sent to `to`.
pub async fn run(
    http: reqwest::Client,
    url: String,
    last_id: String,
    limit: Duration,
    generation: u64,
    to: Recipient<Streamed>,
) {
    let emit = |event| to.do_send(Streamed { generation, event });
    let req = http
        .get(&url)
        .header("Accept", "text/event-stream")
        .header("Last-Event-ID", last_id);
    let resp = match tokio::time::timeout(limit, req.send()).await {
        Ok(Ok(r)) if r.status().is_success() => r,
        Ok(Ok(r)) => {
            return emit(StreamEvent::Closed(format!(
                "events: status {}",
                r.status()
            )))
        }
        Ok(Err(e)) => {
            let why = format!("events: {}", crate::channels::sender::transport_error(&e));
            return emit(StreamEvent::Closed(why));
        }
        Err(_) => return emit(StreamEvent::Closed("events: no answer".into())),
    };
    emit(StreamEvent::Opened);
    let mut body = resp.bytes_stream();
    let mut reader = SseReader::default();
    let why = loop {
        match tokio::time::timeout(IDLE, body.next()).await {
            Ok(Some(Ok(chunk))) => {
                let mut out = Vec::new();
                reader.feed(&chunk, &mut out);
                for e in out {
                    emit(e);
                }
            }
            Ok(Some(Err(e))) => {
                break format!("events: {}", crate::channels::sender::transport_error(&e))
            }
            Ok(None) => break "events: the daemon ended the stream".to_string(),
            Err(_) => break format!("events: silent for {} s", IDLE.as_secs()),
        }
    };
    emit(StreamEvent::Closed(why));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]]) -> Vec<StreamEvent> {
        let mut r = SseReader::default();
        let mut out = Vec::new();
        for c in chunks {
            r.feed(c, &mut out);
        }
        out
    }

    #[test]
    fn signal_clis_events_and_keepalives_read_across_chunk_boundaries() {
        let out = read(&[b"id:17-1\nevent:rec", b"eive\ndata:{\"a\":1}\n", b"\n:\n"]);
        assert_eq!(
            out,
            [
                StreamEvent::Event {
                    id: Some("17-1".into()),
                    kind: Some("receive".into()),
                    data: "{\"a\":1}".into()
                },
                StreamEvent::Alive
            ]
        );
    }

    #[test]
    fn garbage_and_an_oversized_event_are_skipped_and_the_next_event_still_reads() {
        let big = vec![b'x'; MAX_EVENT + 10];
        let mut input = b"\x00\x01 nonsense\ndata:".to_vec();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\n\n\xff\xfe\n\nid:1-2\ndata:ok\n\n");
        let out = read(&[&input]);
        assert!(matches!(&out[0], StreamEvent::Garbage(_)), "{:?}", out[0]);
        assert!(out
            .iter()
            .any(|e| matches!(e, StreamEvent::Garbage(w) if w.contains("over"))));
        assert_eq!(
            out.last(),
            Some(&StreamEvent::Event {
                id: Some("1-2".into()),
                kind: None,
                data: "ok".into()
            })
        );
    }
}
