//! EventBus: fans broadcast events out to subscribed connections, each to
//! the audience the edge gave it (role and scope; the edge's table fails
//! closed: an event with no rule reaches nobody), and sends the edge's
//! `tick` every tick interval. It knows no event names or payload shapes:
//! events arrive encoded, with their audience. It owns each connection's broadcast
//! `seq` and applies the slow-consumer rule at send time: a connection whose
//! unsent backlog (a counter it shares with the bus) is over its limit skips
//! droppable events (its seq still advances) and is closed as a slow consumer
//! on anything else. The rule must live here, in the sender: a
//! connection actor whose client stopped reading is not polled, so it cannot
//! judge itself.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod messages;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use serde_json::value::RawValue;

use crate::scopes::{scope_allows, Role};

pub use actor::*;
pub use messages::*;

/// `{presence, health}` counters carried by presence/health events and snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct StateVersion {
    pub presence: u64,
    pub health: u64,
}

/// Who may see a broadcast event (decided by the edge's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Every connection, operators and nodes.
    Everyone,
    /// Operators granted `scope`; nodes too when `nodes`.
    Scope { scope: &'static str, nodes: bool },
    /// Operators granted `scope` that watch the event's session: all
    /// sessions (`sessions.subscribe`) or its key
    /// (`sessions.messages.subscribe`). Nodes never.
    Watchers { scope: &'static str },
    /// Nobody (an event with no rule).
    Nobody,
}

impl Audience {
    pub fn admits(self, role: Role, granted: &[String]) -> bool {
        match self {
            Audience::Everyone => true,
            Audience::Nobody => false,
            Audience::Scope { nodes, .. } if role == Role::Node => nodes,
            Audience::Watchers { .. } if role == Role::Node => false,
            Audience::Scope { scope, .. } | Audience::Watchers { scope } => {
                scope_allows(granted, scope)
            }
        }
    }
}

/// Why the bus asks a connection to close (the edge picks the close code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Its backlog was over the limit for an event it may not skip.
    SlowConsumer,
    /// The gateway is stopping.
    ServiceRestart,
}

/// One event to fan out, encoded by the edge. The payload is serialised
/// once, shared by every recipient.
#[derive(Debug)]
pub struct BusEvent {
    pub event: String,
    pub payload: Arc<RawValue>,
    /// Slow recipients skip it (their seq still advances) instead of being closed.
    pub drop_if_slow: bool,
    pub state_version: Option<StateVersion>,
    pub audience: Audience,
    /// The session the event is about (for [`Audience::Watchers`]).
    pub topic: Option<Arc<str>>,
}

impl BusEvent {
    pub fn new(
        event: &str,
        payload: &impl serde::Serialize,
        drop_if_slow: bool,
        audience: Audience,
    ) -> BusEvent {
        let raw = serde_json::value::to_raw_value(payload).unwrap_or_else(|_| raw_null());
        BusEvent {
            event: event.to_string(),
            payload: Arc::from(raw),
            drop_if_slow,
            state_version: None,
            audience,
            topic: None,
        }
    }

    /// The event is about this session.
    pub fn about(mut self, session_key: &str) -> BusEvent {
        self.topic = Some(Arc::from(session_key));
        self
    }
}

/// The edge's `tick` event for a time in ms.
pub type TickEvent = fn(u64) -> BusEvent;

fn raw_null() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| Box::<RawValue>::default())
}

struct Subscriber {
    recipient: Recipient<Outbound>,
    role: Role,
    scopes: Vec<String>,
    buffered: Arc<AtomicUsize>,
    max_buffered: usize,
    seq: u64,
    watch: Watching,
}

/// The sessions a connection watches (OpenClaw's session subscriptions).
#[derive(Default)]
struct Watching {
    all: bool,
    keys: std::collections::HashSet<Arc<str>>,
}

/// At most this many `sessions.messages.subscribe` keys per connection.
pub const MAX_WATCHED_KEYS: usize = 256;

impl Watching {
    fn any(&self) -> bool {
        self.all || !self.keys.is_empty()
    }

    fn sees(&self, event: &BusEvent) -> bool {
        if !matches!(event.audience, Audience::Watchers { .. }) {
            return true;
        }
        self.all || event.topic.as_ref().is_some_and(|t| self.keys.contains(t))
    }

    /// Applies a change; false when it would watch too many keys.
    fn apply(&mut self, change: WatchChange) -> bool {
        match change {
            WatchChange::AllSessions(on) => self.all = on,
            WatchChange::Session { key, on: false } => {
                self.keys.remove(key.as_str());
            }
            WatchChange::Session { key, on: true } => {
                if self.keys.len() >= MAX_WATCHED_KEYS && !self.keys.contains(key.as_str()) {
                    return false;
                }
                self.keys.insert(Arc::from(key));
            }
        }
        true
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ConnId;
    use crate::metrics::Metrics;
    use crate::scopes;
    use std::time::Duration;

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

    /// A bus whose tick never comes during a test.
    fn quiet_bus(metrics: Arc<Metrics>) -> Addr<EventBus> {
        let tick: TickEvent = |ts| {
            BusEvent::new(
                "tick",
                &serde_json::json!({ "ts": ts }),
                false,
                Audience::Everyone,
            )
        };
        EventBus::new(Duration::from_secs(3600), tick, metrics).start()
    }

    #[actix::test]
    async fn over_the_limit_droppable_events_skip_with_a_seq_gap_and_others_close_1008() {
        let metrics = Arc::new(Metrics::default());
        let bus = quiet_bus(metrics.clone());
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
            event: BusEvent::new(
                name,
                &serde_json::json!({"n": 1}),
                droppable,
                Audience::Everyone,
            ),
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
            Outbound::Close(reason) => assert_eq!(reason, CloseReason::SlowConsumer),
            other => panic!("{other:?}"),
        }
        assert_eq!(bus.send(CountSubscribers).await.unwrap(), 0, "unsubscribed");
        assert_eq!(metrics.slow_consumer_closes.load(Ordering::Relaxed), 1);
    }

    #[actix::test]
    async fn the_watcher_gauge_counts_connections_watching_sessions() {
        let metrics = Arc::new(Metrics::default());
        let bus = quiet_bus(metrics.clone());
        let (tx, _rx) = std::sync::mpsc::channel();
        let sub = |id: &str| Subscribe {
            conn_id: ConnId::new(id.into()),
            recipient: Probe(tx.clone()).start().recipient(),
            role: Role::Operator,
            scopes: vec![scopes::READ.to_string()],
            buffered: Arc::new(AtomicUsize::new(0)),
            max_buffered: 1000,
        };
        let watch = |id: &str, change| Watch {
            conn_id: ConnId::new(id.into()),
            change,
        };
        let gauge = || metrics.session_watchers.load(Ordering::Relaxed);
        bus.send(sub("a")).await.unwrap();
        bus.send(sub("b")).await.unwrap();
        assert_eq!(gauge(), 0);
        assert!(bus
            .send(watch("a", WatchChange::AllSessions(true)))
            .await
            .unwrap());
        let key = |k: &str, on| WatchChange::Session { key: k.into(), on };
        assert!(bus.send(watch("a", key("x", true))).await.unwrap());
        assert!(bus.send(watch("b", key("y", true))).await.unwrap());
        assert_eq!(gauge(), 2, "one per connection");
        assert!(bus
            .send(watch("a", WatchChange::AllSessions(false)))
            .await
            .unwrap());
        assert_eq!(gauge(), 2, "a still watches x");
        assert!(bus.send(watch("a", key("x", false))).await.unwrap());
        assert_eq!(gauge(), 1);
        bus.send(Unsubscribe {
            conn_id: ConnId::new("b".into()),
        })
        .await
        .unwrap();
        assert_eq!(gauge(), 0);
        assert!(!bus.send(watch("gone", key("z", true))).await.unwrap());
        assert_eq!(gauge(), 0);
    }

    #[test]
    fn slow_subscribers_drop_droppable_events_and_close_on_others() {
        assert!(matches!(verdict(100, 100, false), Verdict::Send));
        assert!(matches!(verdict(101, 100, true), Verdict::Drop));
        assert!(matches!(verdict(101, 100, false), Verdict::Close));
    }

    #[test]
    fn audiences_admit_by_role_and_scope() {
        let s = |x: &[&str]| x.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let read = Audience::Scope {
            scope: scopes::READ,
            nodes: false,
        };
        assert!(Audience::Everyone.admits(Role::Node, &[]));
        assert!(!Audience::Nobody.admits(Role::Operator, &s(&[scopes::ADMIN])));
        assert!(read.admits(Role::Operator, &s(&[scopes::WRITE])));
        assert!(!read.admits(Role::Operator, &[]));
        assert!(!read.admits(Role::Node, &s(&[scopes::ADMIN])));
        let both = Audience::Scope {
            scope: scopes::READ,
            nodes: true,
        };
        assert!(both.admits(Role::Node, &[]));
    }
}
