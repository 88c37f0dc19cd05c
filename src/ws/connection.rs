//! WsConnection: one actor per socket. Sends `connect.challenge` at once,
//! enforces the handshake rules (first frame `connect`, pre-auth size,
//! timeout), then turns each `req` into a spawned dispatch future so a slow
//! method never blocks the socket. It shares its unsent-bytes counter with
//! the EventBus, which owns the broadcast `seq` and the slow-consumer rule.
//! A request that starts a run is answered before any event of that run
//! (`super::ack_order`); events held for it stay counted in the backlog,
//! so the slow-consumer rule still bounds them, and a valve releases them
//! if the answer takes longer than [`HOLD_MAX`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use actix::prelude::*;
use actix_web_actors::ws;
use ferroclaw_actors::bus::{send_to_bus, CloseReason, Outbound, Subscribe, Unsubscribe};
use ferroclaw_actors::gateway::HealthChanged;
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::metrics::Metrics;
use ferroclaw_actors::presence::{send_to_presence, RemovePresence};
use ferroclaw_actors::settings::Settings;
use serde_json::value::RawValue;

use super::ack_order::{AckOrder, After, Passed, Until};
use super::guard::{GuardShared, Permit};
use super::handshake::{self, Accepted, Rejected};
use super::methods::{self, Caller};
use super::window::{Drain, Window};
use super::{frame_len, Origin};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::protocol::errors::ErrorShape;
use crate::protocol::frames::{self, FrameError};
use crate::state::SharedState;

/// Frames that arrive while `connect` is being processed wait here.
const MAX_QUEUED_DURING_CONNECT: usize = 64;

/// Events held for a run's ack (or the pong behind it) go out after this
/// even if it never comes.
const HOLD_MAX: Duration = Duration::from_secs(2);

/// An event for the socket: (event, seq, bytes reserved in the backlog).
type Pending = (Arc<ferroclaw_actors::bus::BusEvent>, Option<u64>, usize);

enum Phase {
    AwaitConnect,
    /// Frames that came while `connect` is checked, each with its permit.
    Connecting(VecDeque<(String, Permit)>),
    Open(Arc<Caller>),
    Closing,
}

/// What a connection writes through: the backlog counter the bus reads and
/// the send window (made with the response stream that empties them).
pub(crate) struct Sink {
    pub buffered: Arc<AtomicUsize>,
    pub window: Arc<Window>,
    pub drains: Option<UnboundedReceiver<Drain>>,
}

pub struct WsConnection {
    /// `conn` span (conn_id); each request runs in a `request` span (method) under it.
    span: tracing::Span,
    state: SharedState,
    settings: Arc<Settings>,
    origin: Origin,
    conn_id: ConnId,
    nonce: String,
    challenge_ts: u64,
    phase: Phase,
    /// Bytes written for this socket not yet taken by it (the bus reads it).
    buffered: Arc<AtomicUsize>,
    /// The send window, the frames waiting for room in it, and where the
    /// socket says it has room (taken at start).
    window: Arc<Window>,
    waiting: VecDeque<String>,
    drains: Option<UnboundedReceiver<Drain>>,
    /// Shared with the frame guard in front of the codec: the frame size
    /// limit and the in-flight bound.
    guard: Arc<GuardShared>,
    /// Fragments of a message in progress.
    partial: Option<Vec<u8>>,
    presence_key: Option<String>,
    /// Set for a node's connection: the registry is told when it closes.
    node_id: Option<String>,
    /// Runs' acks before their events.
    order: AckOrder<Pending>,
}

impl WsConnection {
    pub fn new(
        state: SharedState,
        settings: Arc<Settings>,
        origin: Origin,
        sink: Sink,
        guard: Arc<GuardShared>,
    ) -> WsConnection {
        let conn_id = ConnId::new(uuid::Uuid::new_v4().to_string());
        WsConnection {
            span: tracing::info_span!("conn", conn_id = %conn_id),
            state,
            settings,
            origin,
            conn_id,
            nonce: uuid::Uuid::new_v4().to_string(),
            challenge_ts: ferroclaw_actors::now_ms(),
            phase: Phase::AwaitConnect,
            buffered: sink.buffered,
            window: sink.window,
            waiting: VecDeque::new(),
            drains: sink.drains,
            guard,
            partial: None,
            presence_key: None,
            node_id: None,
            order: AckOrder::default(),
        }
    }

    pub fn max_payload(&self) -> usize {
        self.settings.gateway.max_payload
    }

    fn metrics(&self) -> &Metrics {
        &self.state.gateway.metrics
    }

    /// Counts the frame in the backlog, then hands it to the context if
    /// the send window has room and nothing waits before it; else it waits.
    fn send(&mut self, ctx: &mut ws::WebsocketContext<Self>, text: String) {
        let n = frame_len(text.len());
        self.buffered.fetch_add(n, Ordering::Relaxed);
        if self.waiting.is_empty() && self.window.has_room() {
            self.window.put(n);
            ctx.text(text);
        } else {
            self.waiting.push_back(text);
            self.window.set_waiting(true);
        }
    }

    /// Drops the frames waiting for room (a slow consumer's: not kept for
    /// a socket that does not read).
    fn drop_waiting(&mut self) {
        let dropped: usize = self.waiting.drain(..).map(|t| frame_len(t.len())).sum();
        let _ = self
            .buffered
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(dropped))
            });
        self.window.set_waiting(false);
    }

    /// Hands waiting frames to the context while the window has room
    /// (`all`: every one, before a close frame).
    fn hand_over(&mut self, ctx: &mut ws::WebsocketContext<Self>, all: bool) {
        while all || self.window.has_room() {
            let Some(text) = self.waiting.pop_front() else {
                break;
            };
            self.window.put(frame_len(text.len()));
            ctx.text(text);
        }
        self.window.set_waiting(!self.waiting.is_empty());
    }

    fn send_res(&mut self, ctx: &mut ws::WebsocketContext<Self>, text: String) {
        Metrics::inc(&self.metrics().frames_out_res);
        self.send(ctx, text);
    }

    /// An answer to request `req_id`, then what the run order asks: the
    /// events it held, or a ping the client must answer first.
    fn answer(&mut self, ctx: &mut ws::WebsocketContext<Self>, req_id: &str, text: String) {
        self.send_res(ctx, text);
        match self.order.answered(req_id) {
            After::Release(held) => self.pass_all(ctx, held),
            After::Ping(token) => {
                ctx.ping(token.as_bytes());
                self.arm_valve(ctx, Until::Pong(token));
            }
        }
    }

    /// Events held for `until` go out after [`HOLD_MAX`] whatever happens.
    fn arm_valve(&mut self, ctx: &mut ws::WebsocketContext<Self>, until: Until) {
        ctx.run_later(HOLD_MAX, move |act, ctx| {
            let late = act.order.expire(&until);
            if !late.is_empty() {
                tracing::warn!(conn_id = %act.conn_id, ?until, "run events released unordered: no answer or pong in time");
                act.pass_all(ctx, late);
            }
        });
    }

    /// Events released from a hold, in order (one of another unanswered
    /// run holds the rest again).
    fn pass_all(&mut self, ctx: &mut ws::WebsocketContext<Self>, events: VecDeque<Pending>) {
        for (event, seq, reserved) in events {
            self.deliver(ctx, event, seq, reserved);
        }
    }

    fn close(&mut self, ctx: &mut ws::WebsocketContext<Self>, code: u16, reason: &str) {
        if matches!(self.phase, Phase::Closing) {
            return;
        }
        if code == 1009 {
            // A frame over the limit: the stability record keeps it.
            let limit = match self.phase {
                Phase::Open(_) => self.settings.gateway.max_payload,
                _ => self.settings.gateway.max_preauth_payload,
            };
            let fields =
                serde_json::json!({"surface": "ws", "action": "rejected", "limitBytes": limit});
            self.metrics().stability.record("payload.large", fields);
        }
        self.leave_preauth();
        self.phase = Phase::Closing;
        // Frames still waiting go out before the close frame (a slow
        // consumer's were dropped by `drop_waiting` first).
        self.hand_over(ctx, true);
        let description = (!reason.is_empty()).then(|| truncate_reason(reason));
        ctx.close(Some(ws::CloseReason {
            code: ws::CloseCode::from(code),
            description,
        }));
        ctx.stop();
    }

    /// Leaves the pre-auth count once (on hello-ok or on close before it).
    fn leave_preauth(&mut self) {
        if matches!(self.phase, Phase::AwaitConnect | Phase::Connecting(_)) {
            self.state.preauth_sockets.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// One complete message. Binary frames are decoded as UTF-8 text and
    /// parsed the same way as text frames.
    fn on_message(&mut self, ctx: &mut ws::WebsocketContext<Self>, bytes: &[u8], permit: Permit) {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => {
                Metrics::inc(&self.metrics().frames_in_invalid);
                return self.on_bad_frame(ctx, None, "frame is not valid UTF-8");
            }
        };
        match &mut self.phase {
            Phase::AwaitConnect => self.on_first_frame(ctx, text, permit),
            Phase::Connecting(queue) => {
                if queue.len() < MAX_QUEUED_DURING_CONNECT {
                    queue.push_back((text.to_string(), permit));
                } else {
                    tracing::warn!(conn_id = %self.conn_id, "frame dropped while connect is pending");
                }
            }
            Phase::Open(_) => self.on_request_text(ctx, text, permit),
            Phase::Closing => {}
        }
    }

    fn on_bad_frame(
        &mut self,
        ctx: &mut ws::WebsocketContext<Self>,
        id: Option<String>,
        errors: &str,
    ) {
        match self.phase {
            Phase::Open(_) => {
                tracing::info!(conn_id = %self.conn_id, error = errors, "invalid request frame");
                let err = ErrorShape::invalid(format!("invalid request frame: {errors}"));
                self.send_res(
                    ctx,
                    frames::res_err(id.as_deref().unwrap_or("invalid"), &err, None),
                );
            }
            _ => {
                tracing::info!(conn_id = %self.conn_id, error = errors, "handshake rejected: invalid request frame");
                self.close(ctx, 1008, "invalid request frame");
            }
        }
    }

    fn on_first_frame(&mut self, ctx: &mut ws::WebsocketContext<Self>, text: &str, permit: Permit) {
        if text.len() > self.settings.gateway.max_preauth_payload {
            Metrics::inc(&self.metrics().frames_in_invalid);
            tracing::info!(conn_id = %self.conn_id, bytes = text.len(), "handshake rejected: preauth payload too large");
            return self.close(ctx, 1009, "preauth payload too large");
        }
        let frame = match frames::parse_request(text) {
            Ok(f) => f,
            Err(FrameError::NotJson) => {
                // OpenClaw 2026.9.6 closes a non-JSON first frame with 1000 (Appendix A).
                Metrics::inc(&self.metrics().frames_in_invalid);
                tracing::info!(conn_id = %self.conn_id, "handshake rejected: first frame is not JSON");
                return self.close(ctx, 1000, "");
            }
            Err(FrameError::Invalid { errors, .. }) => {
                Metrics::inc(&self.metrics().frames_in_invalid);
                return self.on_bad_frame(ctx, None, &errors);
            }
        };
        Metrics::inc(&self.metrics().frames_in_req);
        if frame.method != "connect" {
            let msg = "invalid handshake: first request must be connect";
            tracing::info!(conn_id = %self.conn_id, method = %frame.method, "handshake rejected: first request not connect");
            self.send_res(
                ctx,
                frames::res_err(&frame.id, &ErrorShape::invalid(msg), None),
            );
            return self.close(ctx, 1008, msg);
        }
        self.phase = Phase::Connecting(VecDeque::new());
        let input = handshake::Input {
            state: self.state.clone(),
            settings: self.settings.clone(),
            origin: self.origin.clone(),
            conn_id: self.conn_id.clone(),
            nonce: self.nonce.clone(),
            params: frame.params,
        };
        let req_id = frame.id;
        ctx.spawn(
            handshake::connect(input)
                .instrument(self.span.clone())
                .into_actor(self)
                .map(move |outcome, act, ctx| {
                    drop(permit);
                    match outcome {
                        Ok(accepted) => act.on_accepted(ctx, &req_id, accepted),
                        Err(rejected) => act.on_rejected(ctx, &req_id, rejected),
                    }
                }),
        );
    }

    fn on_rejected(&mut self, ctx: &mut ws::WebsocketContext<Self>, req_id: &str, r: Rejected) {
        tracing::warn!(conn_id = %self.conn_id, ip = ?self.origin.ip, error = %r.error.message, "handshake rejected");
        self.send_res(ctx, frames::res_err(req_id, &r.error, None));
        self.close(ctx, r.close_code, &r.close_reason);
    }

    fn on_accepted(&mut self, ctx: &mut ws::WebsocketContext<Self>, req_id: &str, a: Accepted) {
        if matches!(self.phase, Phase::Closing) {
            return;
        }
        let queued = match std::mem::replace(&mut self.phase, Phase::Open(a.caller.clone())) {
            Phase::Connecting(q) => q,
            _ => VecDeque::new(),
        };
        self.state.preauth_sockets.fetch_sub(1, Ordering::Relaxed);
        self.guard.set_limit(self.settings.gateway.max_payload);
        self.presence_key = a.presence_key;
        self.send_res(ctx, frames::res_ok(req_id, &a.hello));
        let gw = &self.state.gateway;
        send_to_bus(
            &gw.bus,
            &gw.metrics,
            Subscribe {
                conn_id: self.conn_id.clone(),
                recipient: ctx.address().recipient(),
                role: a.caller.role,
                scopes: a.caller.scopes.clone(),
                buffered: self.buffered.clone(),
                max_buffered: self.settings.gateway.max_buffered_bytes,
            },
        );
        gw.root.do_send(HealthChanged);
        if let Some((node_id, declared)) = a.node {
            self.node_id = Some(node_id.clone());
            let registered = gw.nodes.send(ferroclaw_actors::nodes::NodeConnected {
                conn_id: self.conn_id.clone(),
                node_id,
                declared,
                sink: ctx.address().recipient(),
            });
            let conn_id = self.conn_id.clone();
            actix::spawn(async move {
                if !matches!(registered.await, Ok(Ok(()))) {
                    tracing::error!(conn_id = %conn_id, "node not registered");
                }
            });
        }
        tracing::info!(conn_id = %self.conn_id, client = %a.caller.client_id, role = a.caller.role.as_str(), "client connected");
        for (text, permit) in queued {
            self.on_request_text(ctx, &text, permit);
        }
    }

    /// A request: its dispatch future holds `permit` until it is answered.
    fn on_request_text(
        &mut self,
        ctx: &mut ws::WebsocketContext<Self>,
        text: &str,
        permit: Permit,
    ) {
        let Phase::Open(caller) = &self.phase else {
            return;
        };
        let caller = caller.clone();
        match frames::parse_request(text) {
            Ok(frame) => {
                Metrics::inc(&self.metrics().frames_in_req);
                let early = ctx.address().recipient();
                let span =
                    tracing::info_span!(parent: &self.span, "request", method = %frame.method);
                let req_id = frame.id.clone();
                self.order.request(&req_id, &frame.method, &frame.params);
                let fut = methods::dispatch(self.state.clone(), caller, frame, Some(early))
                    .instrument(span);
                ctx.spawn(fut.into_actor(self).map(move |reply, act, ctx| {
                    drop(permit);
                    act.answer(ctx, &req_id, reply)
                }));
            }
            Err(e) => {
                Metrics::inc(&self.metrics().frames_in_invalid);
                let id = match &e {
                    FrameError::Invalid { id, .. } => id.clone(),
                    FrameError::NotJson => None,
                };
                self.on_bad_frame(ctx, id, e.errors());
            }
        }
    }

    fn on_fragment(&mut self, ctx: &mut ws::WebsocketContext<Self>, item: actix_http::ws::Item) {
        let limit = match self.phase {
            Phase::Open(_) => self.settings.gateway.max_payload,
            _ => self.settings.gateway.max_preauth_payload,
        };
        let (first, bytes) = match item {
            actix_http::ws::Item::FirstText(b) | actix_http::ws::Item::FirstBinary(b) => (true, b),
            actix_http::ws::Item::Continue(b) | actix_http::ws::Item::Last(b) => (false, b),
        };
        match (first, self.partial.as_mut()) {
            (true, _) => self.partial = Some(bytes.to_vec()),
            (false, Some(buf)) => buf.extend_from_slice(&bytes),
            (false, None) => return self.close(ctx, 1002, "unexpected continuation frame"),
        }
        if self.partial.as_ref().is_some_and(|b| b.len() > limit) {
            self.partial = None;
            let reason = if matches!(self.phase, Phase::Open(_)) {
                "payload too large"
            } else {
                "preauth payload too large"
            };
            tracing::info!(conn_id = %self.conn_id, "message over size limit");
            self.close(ctx, 1009, reason);
        }
    }

    /// Writes a bus event. The bus already decided it may go (slow-consumer
    /// rule) and reserved its size in the backlog counter; swap that
    /// reservation for the frame's exact size.
    fn deliver(
        &mut self,
        ctx: &mut ws::WebsocketContext<Self>,
        event: Arc<ferroclaw_actors::bus::BusEvent>,
        seq: Option<u64>,
        reserved: usize,
    ) {
        let event = if self.order.idle() {
            event
        } else {
            let ev = event.clone();
            match self
                .order
                .event(&ev.event, ev.payload.get(), (event, seq, reserved))
            {
                Passed::Now((event, ..)) => event,
                Passed::Held => return,
                Passed::HoldStarted(until) => return self.arm_valve(ctx, until),
            }
        };
        let _ = self
            .buffered
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(reserved))
            });
        if !matches!(self.phase, Phase::Open(_)) {
            return;
        }
        Metrics::inc(&self.metrics().frames_out_event);
        let payload: &RawValue = &event.payload;
        self.send(
            ctx,
            frames::event(&event.event, payload, seq, event.state_version),
        );
    }
}

/// Close reasons are limited to 123 bytes on the wire.
fn truncate_reason(reason: &str) -> String {
    if reason.len() <= 123 {
        return reason.to_string();
    }
    let mut end = 123;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_string()
}

impl Actor for WsConnection {
    type Context = ws::WebsocketContext<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(mut rx) = self.drains.take() {
            ctx.add_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        }
        let m = self.metrics();
        m.connections_open.fetch_add(1, Ordering::Relaxed);
        Metrics::inc(&m.connections_total);
        let challenge = serde_json::json!({ "nonce": self.nonce, "ts": self.challenge_ts });
        let raw = serde_json::value::to_raw_value(&challenge).unwrap_or_default();
        let text = frames::event("connect.challenge", &raw, None, None);
        Metrics::inc(&self.metrics().frames_out_event);
        self.send(ctx, text);
        let timeout = Duration::from_millis(self.settings.gateway.handshake_timeout_ms);
        ctx.run_later(timeout, |act, ctx| {
            if matches!(act.phase, Phase::AwaitConnect | Phase::Connecting(_)) {
                tracing::info!(conn_id = %act.conn_id, "handshake timeout");
                act.close(ctx, 1000, "");
            }
        });
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.leave_preauth();
        let gw = &self.state.gateway;
        gw.metrics.connections_open.fetch_sub(1, Ordering::Relaxed);
        if matches!(self.phase, Phase::Open(_) | Phase::Closing) {
            send_to_bus(
                &gw.bus,
                &gw.metrics,
                Unsubscribe {
                    conn_id: self.conn_id.clone(),
                },
            );
        }
        if let Some(key) = self.presence_key.take() {
            send_to_presence(&gw.presence, &gw.metrics, RemovePresence { key });
        }
        if let Some(node_id) = self.node_id.take() {
            gw.nodes.do_send(ferroclaw_actors::nodes::NodeDisconnected {
                conn_id: self.conn_id.clone(),
                node_id,
            });
        }
        self.phase = Phase::Closing;
    }
}

impl WsConnection {
    /// A frame the codec refused: over the size limit (1009), the peer gone
    /// mid-frame (a disconnect, not bad input), or malformed (1002).
    fn on_protocol_error(
        &mut self,
        ctx: &mut ws::WebsocketContext<Self>,
        error: ws::ProtocolError,
    ) {
        let too_large = if matches!(self.phase, Phase::Open(_)) {
            "payload too large"
        } else {
            "preauth payload too large"
        };
        match error {
            ws::ProtocolError::Overflow => {
                tracing::info!(conn_id = %self.conn_id, "frame over maxPayload");
                self.close(ctx, 1009, too_large);
            }
            _ if self.guard.tripped() => {
                // The guard saw a frame header declaring more than the limit.
                Metrics::inc(&self.metrics().frames_in_invalid);
                tracing::info!(conn_id = %self.conn_id, "declared frame length over the limit");
                self.close(ctx, 1009, too_large);
            }
            // A text frame that is not UTF-8 (actix-web-actors reports it
            // as an I/O error): RFC 6455 fails the connection with 1007.
            ws::ProtocolError::Io(error) if invalid_utf8(&error) => {
                Metrics::inc(&self.metrics().frames_in_invalid);
                tracing::info!(conn_id = %self.conn_id, "text frame is not valid UTF-8");
                self.close(ctx, 1007, "invalid UTF-8 sequence");
            }
            ws::ProtocolError::Io(error) => {
                tracing::debug!(conn_id = %self.conn_id, %error, "connection dropped by the peer");
                self.leave_preauth();
                self.phase = Phase::Closing;
                ctx.stop();
            }
            error => {
                tracing::info!(conn_id = %self.conn_id, %error, "websocket protocol error");
                self.close(ctx, 1002, "protocol error");
            }
        }
    }
}

/// Whether the codec's I/O error is its report of a text frame that is not
/// UTF-8 (`ByteString::try_from` failing), not a broken socket.
fn invalid_utf8(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Other && e.to_string().contains("utf-8")
}

impl StreamHandler<Result<ws::Message, ws::ProtocolError>> for WsConnection {
    fn handle(&mut self, msg: Result<ws::Message, ws::ProtocolError>, ctx: &mut Self::Context) {
        let _span = self.span.clone().entered();
        match msg {
            // One permit per complete message (the guard counted it).
            Ok(ws::Message::Text(text)) => {
                let permit = self.guard.permit();
                self.on_message(ctx, text.as_bytes(), permit)
            }
            Ok(ws::Message::Binary(bytes)) => {
                let permit = self.guard.permit();
                self.on_message(ctx, &bytes, permit)
            }
            Ok(ws::Message::Continuation(item)) => {
                let done = matches!(item, actix_http::ws::Item::Last(_));
                let permit = done.then(|| self.guard.permit());
                self.on_fragment(ctx, item);
                if let Some(permit) = permit {
                    if let Some(bytes) = self.partial.take() {
                        self.on_message(ctx, &bytes, permit);
                    }
                }
            }
            Ok(ws::Message::Ping(p)) => ctx.pong(&p),
            Ok(ws::Message::Pong(token)) => {
                let held = self.order.pong(&token);
                self.pass_all(ctx, held);
            }
            Ok(ws::Message::Nop) => {}
            Ok(ws::Message::Close(reason)) => {
                self.leave_preauth();
                self.phase = Phase::Closing;
                ctx.close(reason);
                ctx.stop();
            }
            Err(error) => self.on_protocol_error(ctx, error),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

impl Handler<methods::EarlyFrame> for WsConnection {
    type Result = ();
    fn handle(&mut self, msg: methods::EarlyFrame, ctx: &mut Self::Context) {
        if matches!(self.phase, Phase::Open(_)) {
            self.answer(ctx, &msg.req_id, msg.text);
        }
    }
}

impl StreamHandler<Drain> for WsConnection {
    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) {
        self.window.drain_taken();
        self.hand_over(ctx, false);
    }

    /// The window's channel ends with the connection: nothing to do.
    fn finished(&mut self, _: &mut Self::Context) {}
}

impl Handler<ferroclaw_actors::nodes::ToNode> for WsConnection {
    type Result = ();
    fn handle(&mut self, msg: ferroclaw_actors::nodes::ToNode, ctx: &mut Self::Context) {
        match crate::protocol::nodes::to_node_frame(&msg) {
            Some(text) => {
                Metrics::inc(&self.metrics().frames_out_event);
                self.send(ctx, text);
            }
            None => {
                if let ferroclaw_actors::nodes::ToNode::Close { reason } = msg {
                    self.close(ctx, 1008, reason);
                }
            }
        }
    }
}

impl Handler<Outbound> for WsConnection {
    type Result = ();
    fn handle(&mut self, msg: Outbound, ctx: &mut Self::Context) {
        match msg {
            Outbound::Event {
                event,
                seq,
                reserved,
            } => self.deliver(ctx, event, seq, reserved),
            Outbound::Close(why) => {
                if why == CloseReason::SlowConsumer {
                    self.drop_waiting();
                }
                let (code, reason) = crate::protocol::events::close_frame(why);
                self.close(ctx, code, reason);
            }
        }
    }
}
