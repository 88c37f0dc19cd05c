//! EventBus: fans broadcast events out to subscribed connections, filtered by
//! role and scope (fail closed: an event with no rule reaches nobody), and
//! emits `tick` every tick interval. It owns each connection's broadcast
//! `seq` and applies the slow-consumer rule at send time: a connection whose
//! unsent backlog (a counter it shares with the bus) is over its limit skips
//! droppable events (its seq still advances) and is closed 1008 "slow
//! consumer" on anything else. The rule must live here, in the sender: a
//! connection actor whose client stopped reading is not polled, so it cannot
//! judge itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::value::RawValue;

use crate::ids::ConnId;
use crate::metrics::Metrics;
use crate::scopes::{self, scope_allows, Role};

/// `{presence, health}` counters carried by presence/health events and snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct StateVersion {
    pub presence: u64,
    pub health: u64,
}

/// One event to fan out. The payload is serialised once, shared by every recipient.
#[derive(Debug)]
pub struct BusEvent {
    pub event: String,
    pub payload: Arc<RawValue>,
    /// Slow recipients skip it (their seq still advances) instead of being closed.
    pub drop_if_slow: bool,
    pub state_version: Option<StateVersion>,
}

impl BusEvent {
    pub fn new(event: &str, payload: &impl serde::Serialize, drop_if_slow: bool) -> BusEvent {
        let raw = serde_json::value::to_raw_value(payload).unwrap_or_else(|_| raw_null());
        BusEvent {
            event: event.to_string(),
            payload: Arc::from(raw),
            drop_if_slow,
            state_version: None,
        }
    }
}

fn raw_null() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| Box::<RawValue>::default())
}

/// What the bus asks of a subscribed connection.
#[derive(Debug, Message, Clone)]
#[rtype(result = "()")]
pub enum Outbound {
    /// Send this event with this seq (None for targeted events). `reserved`
    /// bytes were added to the connection's backlog counter for it.
    Event {
        event: Arc<BusEvent>,
        seq: Option<u64>,
        reserved: usize,
    },
    /// Close the socket with this code and reason (shutdown).
    Close { code: u16, reason: String },
}

/// Adds a connection after its handshake. Replaces any earlier entry of the id.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    pub conn_id: ConnId,
    pub recipient: Recipient<Outbound>,
    pub role: Role,
    pub scopes: Vec<String>,
    /// Bytes written for this connection and not yet taken by its socket.
    pub buffered: Arc<AtomicUsize>,
    /// Above this backlog the connection is a slow consumer.
    pub max_buffered: usize,
}

/// Removes a connection (socket closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    pub conn_id: ConnId,
}

/// Broadcasts to every connection allowed to see the event.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Publish {
    pub event: BusEvent,
}

/// Sends to the listed connections only, without seq (targeted events).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PublishTo {
    pub event: BusEvent,
    pub targets: Vec<ConnId>,
}

/// Sends `shutdown` to everyone, then asks every socket to close 1012.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct BroadcastShutdown {
    pub reason: String,
    pub restart_expected_ms: Option<u64>,
}

/// Number of subscribed connections.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct CountSubscribers;

struct Subscriber {
    recipient: Recipient<Outbound>,
    role: Role,
    scopes: Vec<String>,
    buffered: Arc<AtomicUsize>,
    max_buffered: usize,
    seq: u64,
}

/// Bytes reserved in a backlog for an event before its frame is built: the
/// payload plus the envelope (`type`, `event`, `seq`, `stateVersion`).
fn reserve_for(event: &BusEvent) -> usize {
    event.payload.get().len() + event.event.len() + 96
}

enum Verdict {
    Send,
    Drop,
    Close,
}

fn verdict(buffered: usize, max: usize, drop_if_slow: bool) -> Verdict {
    if buffered <= max {
        Verdict::Send
    } else if drop_if_slow {
        Verdict::Drop
    } else {
        Verdict::Close
    }
}

impl Subscriber {
    fn verdict(&self, event: &BusEvent) -> Verdict {
        verdict(
            self.buffered.load(Ordering::Relaxed),
            self.max_buffered,
            event.drop_if_slow,
        )
    }
}

pub struct EventBus {
    subscribers: HashMap<ConnId, Subscriber>,
    tick_interval: Duration,
    metrics: Arc<Metrics>,
}

impl EventBus {
    pub fn new(tick_interval: Duration, metrics: Arc<Metrics>) -> EventBus {
        EventBus {
            subscribers: HashMap::new(),
            tick_interval,
            metrics,
        }
    }

    fn received(&self) {
        self.metrics.bus_mailbox.fetch_sub(1, Ordering::Relaxed);
    }

    fn fan_out(&mut self, event: BusEvent) {
        let event = Arc::new(event);
        let reserve = reserve_for(&event);
        let mut slow = Vec::new();
        for (id, sub) in self.subscribers.iter_mut() {
            if !may_receive(&event.event, sub.role, &sub.scopes) {
                continue;
            }
            sub.seq += 1;
            match sub.verdict(&event) {
                Verdict::Send => {
                    sub.buffered.fetch_add(reserve, Ordering::Relaxed);
                    sub.recipient.do_send(Outbound::Event {
                        event: event.clone(),
                        seq: Some(sub.seq),
                        reserved: reserve,
                    });
                }
                Verdict::Drop => Metrics::inc(&self.metrics.events_dropped_slow),
                Verdict::Close => slow.push(id.clone()),
            }
        }
        for id in slow {
            self.close_slow(&id, &event.event);
        }
    }

    fn close_slow(&mut self, id: &ConnId, event: &str) {
        if let Some(sub) = self.subscribers.remove(id) {
            Metrics::inc(&self.metrics.slow_consumer_closes);
            tracing::warn!(conn_id = %id, event, "slow consumer closed");
            sub.recipient.do_send(Outbound::Close {
                code: 1008,
                reason: "slow consumer".to_string(),
            });
        }
    }
}

/// Which connections may see a broadcast event (protocol.md 6.2). Unknown
/// events reach nobody.
pub fn may_receive(event: &str, role: Role, granted: &[String]) -> bool {
    let required = match event {
        "health" | "heartbeat" | "presence" | "shutdown" | "tick" | "update.available" => {
            return true
        }
        "voicewake.changed" if role == Role::Node => return true,
        _ if role == Role::Node => return false,
        "agent" | "chat" | "chat.side_result" | "cron" | "voicewake.changed"
        | "sessions.changed" | "session.message" | "session.tool" => scopes::READ,
        "talk.mode" => scopes::WRITE,
        e if e.starts_with("exec.approval.") || e.starts_with("plugin.approval.") => {
            scopes::APPROVALS
        }
        e if e.starts_with("device.pair.") || e.starts_with("node.pair.") => scopes::PAIRING,
        e if e.starts_with("plugin.") => scopes::WRITE,
        _ => return false,
    };
    scope_allows(granted, required)
}

impl Actor for EventBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.tick_interval, |bus, _| {
            bus.fan_out(BusEvent::new(
                "tick",
                &serde_json::json!({ "ts": crate::now_ms() }),
                false,
            ));
        });
    }
}

impl Supervised for EventBus {}

/// Sends a message to the bus and counts it into the bus mailbox gauge.
pub fn send_to_bus<M>(bus: &Addr<EventBus>, metrics: &Metrics, msg: M)
where
    M: Message + Send + 'static,
    M::Result: Send,
    EventBus: Handler<M>,
{
    metrics.bus_mailbox.fetch_add(1, Ordering::Relaxed);
    bus.do_send(msg);
}

impl Handler<Subscribe> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        self.received();
        self.subscribers.insert(
            msg.conn_id,
            Subscriber {
                recipient: msg.recipient,
                role: msg.role,
                scopes: msg.scopes,
                buffered: msg.buffered,
                max_buffered: msg.max_buffered,
                seq: 0,
            },
        );
    }
}

impl Handler<Unsubscribe> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        self.received();
        self.subscribers.remove(&msg.conn_id);
    }
}

impl Handler<Publish> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Publish, _: &mut Context<Self>) {
        self.received();
        self.fan_out(msg.event);
    }
}

impl Handler<PublishTo> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: PublishTo, _: &mut Context<Self>) {
        self.received();
        let event = Arc::new(msg.event);
        let reserve = reserve_for(&event);
        for id in &msg.targets {
            let verdict = match self.subscribers.get(id) {
                Some(sub) => sub.verdict(&event),
                None => continue,
            };
            match verdict {
                Verdict::Send => {
                    if let Some(sub) = self.subscribers.get(id) {
                        sub.buffered.fetch_add(reserve, Ordering::Relaxed);
                        sub.recipient.do_send(Outbound::Event {
                            event: event.clone(),
                            seq: None,
                            reserved: reserve,
                        });
                    }
                }
                Verdict::Drop => Metrics::inc(&self.metrics.events_dropped_slow),
                Verdict::Close => self.close_slow(id, &event.event),
            }
        }
    }
}

impl Handler<BroadcastShutdown> for EventBus {
    type Result = usize;
    fn handle(&mut self, msg: BroadcastShutdown, _: &mut Context<Self>) -> usize {
        self.received();
        self.fan_out(BusEvent::new(
            "shutdown",
            &serde_json::json!({
                "reason": msg.reason,
                "restartExpectedMs": msg.restart_expected_ms,
            }),
            false,
        ));
        for sub in self.subscribers.values() {
            sub.recipient.do_send(Outbound::Close {
                code: 1012,
                reason: "service restart".to_string(),
            });
        }
        self.subscribers.len()
    }
}

impl Handler<CountSubscribers> for EventBus {
    type Result = usize;
    fn handle(&mut self, _: CountSubscribers, _: &mut Context<Self>) -> usize {
        self.received();
        self.subscribers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the bus sends it.
    struct Probe(std::sync::mpsc::Sender<Outbound>);
    impl Actor for Probe {
        type Context = Context<Self>;
    }
    impl Handler<Outbound> for Probe {
        type Result = ();
        fn handle(&mut self, msg: Outbound, _: &mut Context<Self>) {
            let _ = self.0.send(msg);
        }
    }

    #[actix::test]
    async fn over_the_limit_droppable_events_skip_with_a_seq_gap_and_others_close_1008() {
        let metrics = Arc::new(Metrics::default());
        let bus = EventBus::new(Duration::from_secs(3600), metrics.clone()).start();
        let (tx, rx) = std::sync::mpsc::channel();
        let buffered = Arc::new(AtomicUsize::new(0));
        bus.send(Subscribe {
            conn_id: ConnId::new("c1".into()),
            recipient: Probe(tx).start().recipient(),
            role: Role::Operator,
            scopes: vec![scopes::READ.to_string()],
            buffered: buffered.clone(),
            max_buffered: 1000,
        })
        .await
        .unwrap();
        let publish = |name: &str, droppable: bool| Publish {
            event: BusEvent::new(name, &serde_json::json!({"n": 1}), droppable),
        };
        let next = || rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let seq_of = |o: Outbound| match o {
            Outbound::Event { seq, .. } => seq,
            other => panic!("{other:?}"),
        };

        bus.send(publish("presence", true)).await.unwrap();
        assert_eq!(seq_of(next()), Some(1));
        buffered.store(5000, Ordering::Relaxed);
        bus.send(publish("presence", true)).await.unwrap(); // skipped: seq 2
        buffered.store(0, Ordering::Relaxed);
        bus.send(publish("presence", true)).await.unwrap();
        assert_eq!(seq_of(next()), Some(3), "the client sees the gap");
        assert_eq!(metrics.events_dropped_slow.load(Ordering::Relaxed), 1);

        buffered.store(5000, Ordering::Relaxed);
        bus.send(publish("tick", false)).await.unwrap();
        match next() {
            Outbound::Close { code, reason } => {
                assert_eq!((code, reason.as_str()), (1008, "slow consumer"))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(bus.send(CountSubscribers).await.unwrap(), 0, "unsubscribed");
        assert_eq!(metrics.slow_consumer_closes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn slow_subscribers_drop_droppable_events_and_close_on_others() {
        assert!(matches!(verdict(100, 100, false), Verdict::Send));
        assert!(matches!(verdict(101, 100, true), Verdict::Drop));
        assert!(matches!(verdict(101, 100, false), Verdict::Close));
    }

    #[test]
    fn events_are_filtered_by_scope_and_role_and_fail_closed() {
        let s = |x: &[&str]| x.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let check = |event: &str, role: Role, granted: &[&str], want: bool| {
            assert_eq!(
                may_receive(event, role, &s(granted)),
                want,
                "{event} {role:?} {granted:?}"
            );
        };
        check("tick", Role::Operator, &[], true);
        check("presence", Role::Node, &[], true);
        check("chat", Role::Operator, &[], false);
        check("chat", Role::Operator, &[scopes::READ], true);
        check("chat", Role::Operator, &[scopes::WRITE], true);
        check("chat", Role::Node, &[scopes::ADMIN], false);
        check(
            "device.pair.requested",
            Role::Operator,
            &[scopes::READ],
            false,
        );
        check(
            "device.pair.requested",
            Role::Operator,
            &[scopes::PAIRING],
            true,
        );
        check(
            "exec.approval.requested",
            Role::Operator,
            &[scopes::ADMIN],
            true,
        );
        check("talk.mode", Role::Operator, &[scopes::READ], false);
        check("made.up", Role::Operator, &[scopes::ADMIN], false);
        check("voicewake.changed", Role::Node, &[], true);
    }
}
