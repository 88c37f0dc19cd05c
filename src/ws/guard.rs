//! The frame guard: a stream in front of actix-http's WebSocket codec that
//! reads every frame header as it arrives.
//!
//! - **Size.** The codec checks a frame's length only once the whole frame
//!   is buffered, so a client could declare a 2^40-byte frame and stream
//!   into memory. The guard checks the declared length when the header
//!   arrives against the connection's current limit (`maxPreauthPayload`
//!   until hello-ok, then `maxPayload`) and ends the stream at once; the
//!   connection then closes 1009.
//! - **In flight.** It counts complete messages it has let through; once
//!   a connection has `gateway.maxInFlightRequests` of them unanswered it
//!   stops passing bytes (so the socket is no longer read and TCP pushes
//!   back on the client) until a [`Permit`] is dropped. One client can
//!   therefore not fill its worker with pending work.
//! - **Fair share.** Each message it lets through costs [`MESSAGE_COST`]
//!   units of tokio's cooperative budget (128 per task poll), so a socket
//!   whose client pipelines cheap requests hands its worker back to the
//!   other connections after 16 messages instead of reading for as long as
//!   its client keeps writing; and a token bucket (`gateway.maxRequestsPerSecond`
//!   per connection, the same number as burst) holds a client that keeps
//!   asking faster than that, so its share of the machine stays small.
//!
//! Invariant: every complete data message the guard passes is exactly one
//! `Text`, `Binary` or final `Continuation` item for the connection, which
//! takes one permit for it and drops it when the message is answered.
//! (A header the frame parser refuses ends the guard's reading: everything
//! after it passes, and the codec closes the socket with its own error.)

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_http::error::PayloadError;
use bytes::Bytes;
use futures_util::task::AtomicWaker;
use futures_util::Stream;
use tokio::task::coop::{self, RestoreOnPending};

/// Units of the task's cooperative budget one message costs (128 per poll:
/// at most 16 messages of one socket per turn of its worker).
pub const MESSAGE_COST: usize = 8;

/// Reserves `units` of the current task's budget, all or none: dropped
/// unused they go back; None means the budget is spent (the task is woken
/// to run again after the others).
fn reserve_budget(cx: &mut Context<'_>, units: usize) -> Option<Vec<RestoreOnPending>> {
    let mut taken = Vec::with_capacity(units);
    for _ in 0..units {
        match coop::poll_proceed(cx) {
            Poll::Ready(restore) => taken.push(restore),
            Poll::Pending => return None,
        }
    }
    Some(taken)
}

/// State shared by a connection and its guard.
#[derive(Debug)]
pub struct GuardShared {
    limit: AtomicUsize,
    tripped: AtomicBool,
    in_flight: AtomicUsize,
    max_in_flight: usize,
    /// Messages per second (and burst); 0: no rate bound.
    rate: u32,
    waker: AtomicWaker,
}

impl GuardShared {
    pub fn new(limit: usize, max_in_flight: usize, rate: u32) -> Arc<GuardShared> {
        Arc::new(GuardShared {
            limit: AtomicUsize::new(limit),
            tripped: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            max_in_flight: max_in_flight.max(1),
            rate,
            waker: AtomicWaker::new(),
        })
    }

    /// The largest frame payload accepted from now on.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Whether the stream ended because a frame declared more than the limit.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }

    /// Messages passed and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Takes the permit for one message the guard let through.
    pub fn permit(self: &Arc<Self>) -> Permit {
        Permit(self.clone())
    }
}

/// One message being handled; dropping it lets the guard read on.
#[derive(Debug)]
pub struct Permit(Arc<GuardShared>);

impl Drop for Permit {
    fn drop(&mut self) {
        let _ = self
            .0
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            });
        self.0.waker.wake();
    }
}

/// Where the parser is in the byte stream. Headers are read by
/// tungstenite's RFC 6455 frame parser; the guard only gathers their bytes
/// across reads and skips payloads.
#[derive(Debug, Default)]
struct Parser {
    header: [u8; 14],
    have: usize,
    /// Payload bytes of the current frame still to pass.
    left: u64,
    /// The current frame ends a data message (text, binary, or the last
    /// fragment of one).
    ends_message: bool,
    /// A header the frame parser refused: from here on everything passes
    /// and the codec behind reports the protocol error.
    broken: bool,
}

/// What one step of parsing found.
enum Found {
    /// Everything given was consumed.
    More,
    /// A complete data message ends at this offset of the input.
    MessageEnd(usize),
    /// A frame declared more than the limit.
    TooLarge,
}

impl Parser {
    /// Walks `input` from `from`; stops after the first message end.
    fn scan(&mut self, input: &[u8], mut from: usize, limit: usize) -> Found {
        use tokio_tungstenite::tungstenite::protocol::frame::coding::OpCode;
        use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
        while from < input.len() && !self.broken {
            if self.left > 0 {
                let n = (input.len() - from).min(self.left.min(usize::MAX as u64) as usize);
                from += n;
                self.left -= n as u64;
                if self.left == 0 && self.ends_message {
                    return Found::MessageEnd(from);
                }
                continue;
            }
            // In a header: one more byte, then see whether it is whole.
            self.header[self.have] = input[from];
            self.have += 1;
            from += 1;
            let parsed = FrameHeader::parse(&mut std::io::Cursor::new(&self.header[..self.have]));
            let (header, len) = match parsed {
                Ok(Some(h)) => h,
                Ok(None) if self.have < self.header.len() => continue,
                Ok(None) | Err(_) => {
                    self.broken = true;
                    break;
                }
            };
            self.have = 0;
            if len > limit as u64 {
                return Found::TooLarge;
            }
            self.ends_message = header.is_final && matches!(header.opcode, OpCode::Data(_));
            self.left = len;
            if len == 0 && self.ends_message {
                return Found::MessageEnd(from);
            }
        }
        Found::More
    }
}

/// A token bucket of messages: `rate` per second, as many in a burst.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: std::time::Instant,
}

impl Bucket {
    /// Takes a token; Err(wait) until the next one when there is none.
    fn take(&mut self, rate: u32) -> Result<(), std::time::Duration> {
        if rate == 0 {
            return Ok(());
        }
        let now = std::time::Instant::now();
        let rate = f64::from(rate);
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * rate).min(rate);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(std::time::Duration::from_secs_f64(
                (1.0 - self.tokens) / rate,
            ))
        }
    }

    fn give_back(&mut self, rate: u32) {
        if rate > 0 {
            self.tokens = (self.tokens + 1.0).min(f64::from(rate));
        }
    }
}

/// The guarded inbound byte stream of one WebSocket.
pub struct FrameGuard<S> {
    inner: S,
    shared: Arc<GuardShared>,
    parser: Parser,
    bucket: Bucket,
    /// Set while the bucket is empty: when it may give a token again.
    refill: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Bytes read but held back (the in-flight bound was reached), and
    /// how far into them the parser has looked.
    held: Option<(Bytes, usize)>,
    done: bool,
}

impl<S> FrameGuard<S> {
    pub fn new(inner: S, shared: Arc<GuardShared>) -> FrameGuard<S> {
        let tokens = f64::from(shared.rate);
        FrameGuard {
            inner,
            shared,
            parser: Parser::default(),
            bucket: Bucket {
                tokens,
                at: std::time::Instant::now(),
            },
            refill: None,
            held: None,
            done: false,
        }
    }

    /// Passes as much of `chunk` (parsed up to `from`) as the bounds allow;
    /// keeps the rest.
    fn admit(
        &mut self,
        cx: &mut Context<'_>,
        chunk: Bytes,
        mut from: usize,
    ) -> Poll<Option<Result<Bytes, PayloadError>>> {
        loop {
            let budget = if self.shared.in_flight() >= self.shared.max_in_flight {
                None
            } else {
                reserve_budget(cx, MESSAGE_COST)
            };
            // The next message needs a token too (given back if none ends here).
            let budget = budget.filter(|_| match self.bucket.take(self.shared.rate) {
                Ok(()) => true,
                Err(wait) => {
                    self.refill = Some(Box::pin(tokio::time::sleep(wait)));
                    false
                }
            });
            let Some(budget) = budget else {
                if from == 0 {
                    self.held = Some((chunk, from));
                    return Poll::Pending;
                }
                let rest = chunk.slice(from..);
                let out = chunk.slice(..from);
                self.held = (!rest.is_empty()).then_some((rest, 0));
                return Poll::Ready(Some(Ok(out)));
            };
            let limit = self.shared.limit.load(Ordering::Relaxed);
            match self.parser.scan(&chunk, from, limit) {
                // No message ends in it: budget and token go back unused.
                Found::More => {
                    self.bucket.give_back(self.shared.rate);
                    return Poll::Ready(Some(Ok(chunk)));
                }
                Found::MessageEnd(at) => {
                    for b in &budget {
                        b.made_progress();
                    }
                    self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
                    from = at;
                }
                Found::TooLarge => {
                    self.shared.tripped.store(true, Ordering::Relaxed);
                    self.done = true;
                    return Poll::Ready(Some(Err(PayloadError::Overflow)));
                }
            }
        }
    }
}

impl<S> Stream for FrameGuard<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(refill) = this.refill.as_mut() {
            if refill.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.refill = None;
        }
        if let Some((chunk, from)) = this.held.take() {
            this.shared.waker.register(cx.waker());
            let polled = this.admit(cx, chunk, from);
            if polled.is_ready() {
                return polled;
            }
            // Still at the bound: a dropped permit wakes us.
            return Poll::Pending;
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                this.shared.waker.register(cx.waker());
                this.admit(cx, chunk, 0)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// A masked client frame header (payload not included).
    fn header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
        let mut h = vec![(if fin { 0x80 } else { 0 }) | opcode];
        match len {
            0..=125 => h.push(0x80 | len as u8),
            126..=65535 => {
                h.push(0x80 | 126);
                h.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                h.push(0x80 | 127);
                h.extend_from_slice(&len.to_be_bytes());
            }
        }
        h.extend_from_slice(&[1, 2, 3, 4]);
        h
    }

    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = header(fin, opcode, payload.len() as u64);
        f.extend_from_slice(payload);
        f
    }

    fn guard(
        chunks: Vec<Vec<u8>>,
        limit: usize,
        max: usize,
    ) -> (
        FrameGuard<impl Stream<Item = Result<Bytes, PayloadError>> + Unpin>,
        Arc<GuardShared>,
    ) {
        let shared = GuardShared::new(limit, max, 0);
        let inner = futures_util::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))));
        (FrameGuard::new(inner, shared.clone()), shared)
    }

    #[actix_rt::test]
    async fn a_declared_length_over_the_limit_ends_the_stream_at_the_header() {
        // Only the header of a 2^40-byte frame arrives: refused at once.
        let (mut g, shared) = guard(vec![header(true, 1, 1 << 40)], 65536, 8);
        assert!(matches!(g.next().await, Some(Err(PayloadError::Overflow))));
        assert!(shared.tripped());
        assert!(g.next().await.is_none());
        // A header split across reads is still seen.
        let h = header(true, 2, 70_000);
        let (mut g, shared) = guard(
            vec![h[..1].to_vec(), h[1..3].to_vec(), h[3..].to_vec()],
            65536,
            8,
        );
        let mut out = Vec::new();
        while let Some(item) = g.next().await {
            match item {
                Ok(b) => out.push(b),
                Err(_) => break,
            }
        }
        assert!(shared.tripped(), "{out:?}");
        // Under the limit passes whole.
        let f = frame(true, 1, &[b'x'; 300]);
        let (mut g, shared) = guard(vec![f.clone()], 65536, 8);
        assert_eq!(g.next().await.unwrap().unwrap(), Bytes::from(f));
        assert!(!shared.tripped());
        // The limit can be raised (hello-ok).
        let f = frame(true, 1, &vec![b'y'; 70_000]);
        let (mut g, shared) = guard(vec![f.clone()], 65536, 8);
        shared.set_limit(1 << 20);
        assert_eq!(g.next().await.unwrap().unwrap().len(), f.len());
    }

    #[actix_rt::test]
    async fn a_client_faster_than_its_rate_is_read_slower() {
        let mut bytes = Vec::new();
        for _ in 0..15 {
            bytes.extend(frame(true, 1, b"x"));
        }
        let shared = GuardShared::new(65536, 1000, 10);
        let inner = futures_util::stream::iter(vec![Ok(Bytes::from(bytes.clone()))]);
        let mut g = FrameGuard::new(inner, shared.clone());
        let mut got = 0;
        // The burst: ten messages (the budget may split them into turns).
        while got < 10 * 7 {
            got += g.next().await.unwrap().unwrap().len();
        }
        assert_eq!(got, 10 * 7, "ten messages of 7 bytes, then it holds");
        assert!(futures_util::poll!(g.next()).is_pending());
        // The rest comes as tokens come back (10 per second).
        while got < bytes.len() {
            got += tokio::time::timeout(std::time::Duration::from_secs(5), g.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
                .len();
        }
        assert_eq!(shared.in_flight(), 15);
    }

    #[actix_rt::test]
    async fn at_the_in_flight_bound_bytes_wait_for_a_permit() {
        let mut bytes = Vec::new();
        for i in 0..5u8 {
            bytes.extend(frame(true, 1, &[b'a' + i; 10]));
        }
        // A fragmented message counts once, at its last fragment.
        bytes.extend(frame(false, 1, b"part1"));
        bytes.extend(frame(true, 9, b"")); // a ping in between does not count
        bytes.extend(frame(true, 0, b"part2"));
        let (mut g, shared) = guard(vec![bytes.clone()], 65536, 2);
        let first = g.next().await.unwrap().unwrap();
        assert_eq!(first.len(), 2 * 16, "two messages, then it holds");
        assert_eq!(shared.in_flight(), 2);
        let pending = futures_util::poll!(g.next());
        assert!(pending.is_pending());
        let p1 = shared.permit();
        drop(p1);
        let next = g.next().await.unwrap().unwrap();
        assert_eq!(next.len(), 16, "one permit freed: one message");
        drop(shared.permit());
        drop(shared.permit());
        let next = g.next().await.unwrap().unwrap();
        assert_eq!(next.len(), 2 * 16);
        drop(shared.permit());
        drop(shared.permit());
        let rest = g.next().await.unwrap().unwrap();
        assert_eq!(
            rest.len(),
            bytes.len() - 5 * 16,
            "the fragments and the ping"
        );
        assert_eq!(shared.in_flight(), 1, "the fragmented message is one");
        assert!(g.next().await.is_none());
    }
}
