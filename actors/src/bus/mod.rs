//! EventBus: fans broadcast events out to subscribed connections, filtered by
//! role and scope (fail closed: an event with no rule reaches nobody), and
//! emits `tick` every tick interval. It owns each connection's broadcast
//! `seq` and applies the slow-consumer rule at send time: a connection whose
//! unsent backlog (a counter it shares with the bus) is over its limit skips
//! droppable events (its seq still advances) and is closed 1008 "slow
//! consumer" on anything else. The rule must live here, in the sender: a
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

use crate::scopes::{self, scope_allows, Role};

pub use actor::*;
pub use messages::*;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ConnId;
    use crate::metrics::Metrics;
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
