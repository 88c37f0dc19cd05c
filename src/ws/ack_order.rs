//! A run's ack before its events, per connection. OpenClaw answers
//! `chat.send` (and `agent`'s accepted ack) before the run it starts sends
//! anything, and a second passes before that run ends; its clients count on
//! it. The TUI handles a socket read's frames first and a request's answer
//! after them: a run whose final it read together with (or before) its
//! `chat.send` answer is never taken off its "waiting" state, and it stays
//! busy for good. ferroclaw acknowledges after the store's flush, and the
//! offline model answers in a few milliseconds, so both happen.
//!
//! [`AckOrder`] restores the order by construction:
//! - from the first event of a run whose request is unanswered, every event
//!   waits, in order (the bus's `seq` order is kept), for that answer;
//! - after a `chat.send` answer, every event waits until the client answers
//!   a ping sent right behind it. A client's pong proves it has read the
//!   answer; the run's events then come in a later read, after the client
//!   handled the answer. (`agent`'s accepted ack needs no barrier: its
//!   callers wait for the final answer.)
//!
//! Pure state (no actor, no I/O): the connection feeds it requests,
//! events, answers and pongs, and writes what it hands back.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::Value;

/// Methods whose `idempotencyKey` names the run they start; `barrier`:
/// whether their answer is followed by a ping the client must answer.
const STARTERS: [(&str, bool); 2] = [("chat.send", true), ("agent", false)];

/// An unanswered request that starts a run.
struct Awaited {
    req_id: String,
    run_id: String,
    barrier: bool,
}

/// What a hold waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Until {
    /// The answer to this request.
    Answer(String),
    /// The pong carrying this ping payload.
    Pong(String),
}

/// The events waiting for one answer or pong.
struct Hold<E> {
    until: Until,
    events: VecDeque<E>,
}

pub struct AckOrder<E> {
    awaiting: Vec<Awaited>,
    hold: Option<Hold<E>>,
    pings: u64,
}

impl<E> Default for AckOrder<E> {
    fn default() -> Self {
        AckOrder {
            awaiting: Vec::new(),
            hold: None,
            pings: 0,
        }
    }
}

/// The run an event is about.
#[derive(Deserialize)]
struct OfRun<'a> {
    #[serde(rename = "runId", borrow)]
    run_id: Option<Cow<'a, str>>,
}

/// What became of an event handed in.
#[derive(Debug, PartialEq, Eq)]
pub enum Passed<E> {
    /// Write it now.
    Now(E),
    /// Held: a hold started with it (arm the valve for it).
    HoldStarted(Until),
    /// Held behind an earlier one.
    Held,
}

/// What to do after writing an answer.
#[derive(Debug, PartialEq, Eq)]
pub enum After<E> {
    /// Write these held events (pass each to [`AckOrder::event`] again: one
    /// of another unanswered run holds the rest anew).
    Release(VecDeque<E>),
    /// Send a ping with this payload; events wait for its pong (arm the
    /// valve for `Until::Pong` of it).
    Ping(String),
}

impl<E> AckOrder<E> {
    /// A request came: one that starts a run is awaited until answered.
    pub fn request(&mut self, req_id: &str, method: &str, params: &Value) {
        let Some((_, barrier)) = STARTERS.iter().find(|(m, _)| *m == method) else {
            return;
        };
        if let Some(run) = params.get("idempotencyKey").and_then(Value::as_str) {
            self.awaiting.push(Awaited {
                req_id: req_id.to_string(),
                run_id: run.to_string(),
                barrier: *barrier,
            });
        }
    }

    /// Nothing awaited and nothing held: every event goes out as it comes
    /// (the per-token path checks this first).
    pub fn idle(&self) -> bool {
        self.awaiting.is_empty() && self.hold.is_none()
    }

    /// An event (named `name`, payload `payload`) for the connection.
    pub fn event(&mut self, name: &str, payload: &str, event: E) -> Passed<E> {
        if let Some(hold) = self.hold.as_mut() {
            hold.events.push_back(event);
            return Passed::Held;
        }
        if self.awaiting.is_empty() || !matches!(name, "chat" | "agent") {
            return Passed::Now(event);
        }
        let Ok(of) = serde_json::from_str::<OfRun>(payload) else {
            return Passed::Now(event);
        };
        let Some(awaited) = self
            .awaiting
            .iter()
            .find(|a| Some(a.run_id.as_str()) == of.run_id.as_deref())
        else {
            return Passed::Now(event);
        };
        let until = Until::Answer(awaited.req_id.clone());
        self.hold = Some(Hold {
            until: until.clone(),
            events: VecDeque::from([event]),
        });
        Passed::HoldStarted(until)
    }

    /// The (first) answer to `req_id` was written: what comes next.
    pub fn answered(&mut self, req_id: &str) -> After<E> {
        let Some(at) = self.awaiting.iter().position(|a| a.req_id == req_id) else {
            return After::Release(VecDeque::new());
        };
        let awaited = self.awaiting.remove(at);
        let mine = matches!(&self.hold, Some(h) if h.until == Until::Answer(req_id.to_string()));
        if awaited.barrier {
            self.pings += 1;
            let token = format!("ack-{}", self.pings);
            match self.hold.as_mut() {
                // Held for this answer: now held for its pong.
                Some(h) if mine => h.until = Until::Pong(token.clone()),
                // Held for another answer: that one releases them later.
                Some(_) => return After::Release(VecDeque::new()),
                None => {
                    self.hold = Some(Hold {
                        until: Until::Pong(token.clone()),
                        events: VecDeque::new(),
                    })
                }
            }
            return After::Ping(token);
        }
        match self.hold.take() {
            Some(h) if mine => After::Release(h.events),
            other => {
                self.hold = other;
                After::Release(VecDeque::new())
            }
        }
    }

    /// A pong came: the events its ping held, if it is the one awaited.
    pub fn pong(&mut self, payload: &[u8]) -> VecDeque<E> {
        match self.hold.take() {
            Some(h) if matches!(&h.until, Until::Pong(t) if t.as_bytes() == payload) => h.events,
            other => {
                self.hold = other;
                VecDeque::new()
            }
        }
    }

    /// The valve: the hold for `until` is still waiting after its time;
    /// its events go out (an unanswered request is no longer awaited).
    pub fn expire(&mut self, until: &Until) -> VecDeque<E> {
        match self.hold.take() {
            Some(h) if &h.until == until => {
                if let Until::Answer(req_id) = until {
                    self.awaiting.retain(|a| &a.req_id != req_id);
                }
                h.events
            }
            other => {
                self.hold = other;
                VecDeque::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pass(o: &mut AckOrder<usize>, n: usize, name: &str, payload: Value) -> Passed<usize> {
        o.event(name, &payload.to_string(), n)
    }

    fn ping(after: After<usize>) -> String {
        match after {
            After::Ping(t) => t,
            other => panic!("expected a ping, got {other:?}"),
        }
    }

    #[test]
    fn a_chat_sends_run_events_wait_for_its_answer_and_then_for_the_pong() {
        let mut o = AckOrder::default();
        o.request("r1", "chat.send", &json!({"idempotencyKey": "k1"}));
        let news = json!({"key": "main"});
        assert_eq!(
            pass(&mut o, 0, "sessions.changed", news.clone()),
            Passed::Now(0)
        );
        assert_eq!(
            pass(
                &mut o,
                1,
                "agent",
                json!({"runId": "k1", "stream": "lifecycle"})
            ),
            Passed::HoldStarted(Until::Answer("r1".into()))
        );
        // Everything after waits too: the bus's seq order is kept.
        assert_eq!(pass(&mut o, 2, "sessions.changed", news), Passed::Held);
        let token = ping(o.answered("r1"));
        let fin = json!({"runId": "k1", "state": "final"});
        assert_eq!(pass(&mut o, 3, "chat", fin.clone()), Passed::Held);
        // A pong of another ping releases nothing.
        assert!(o.pong(b"ack-0").is_empty());
        assert_eq!(o.pong(token.as_bytes()), VecDeque::from([1, 2, 3]));
        assert_eq!(pass(&mut o, 4, "chat", fin), Passed::Now(4));
        assert!(o.idle());
    }

    #[test]
    fn a_chat_send_answered_before_any_event_still_waits_for_the_pong() {
        let mut o = AckOrder::default();
        o.request("r1", "chat.send", &json!({"idempotencyKey": "k1"}));
        let token = ping(o.answered("r1"));
        assert_eq!(
            pass(&mut o, 1, "agent", json!({"runId": "k1"})),
            Passed::Held
        );
        assert_eq!(o.pong(token.as_bytes()), VecDeque::from([1]));
    }

    #[test]
    fn agents_accepted_ack_releases_at_once() {
        let mut o = AckOrder::default();
        o.request("a1", "agent", &json!({"idempotencyKey": "k2"}));
        pass(&mut o, 1, "agent", json!({"runId": "k2"}));
        pass(&mut o, 2, "chat", json!({"runId": "k2", "state": "final"}));
        assert_eq!(o.answered("a1"), After::Release(VecDeque::from([1, 2])));
        // Its final answer (a second one) changes nothing.
        assert_eq!(o.answered("a1"), After::Release(VecDeque::new()));
    }

    #[test]
    fn other_runs_and_requests_pass_and_a_valve_releases() {
        let mut o = AckOrder::default();
        o.request("h", "health", &json!({}));
        o.request("r1", "chat.send", &json!({"idempotencyKey": "k1"}));
        let other = json!({"runId": "someone-else", "state": "delta"});
        assert_eq!(pass(&mut o, 0, "chat", other), Passed::Now(0));
        assert_eq!(
            pass(&mut o, 1, "chat", json!("not an object")),
            Passed::Now(1)
        );
        assert_eq!(o.answered("h"), After::Release(VecDeque::new()));
        pass(&mut o, 2, "agent", json!({"runId": "k1"}));
        assert!(o.expire(&Until::Answer("other".into())).is_empty());
        assert_eq!(o.expire(&Until::Answer("r1".into())), VecDeque::from([2]));
        // Expired: the request is no longer awaited.
        assert_eq!(
            pass(&mut o, 3, "agent", json!({"runId": "k1"})),
            Passed::Now(3)
        );
        // A pong that never comes: the valve lets its events go.
        o.request("r2", "chat.send", &json!({"idempotencyKey": "k2"}));
        let token = ping(o.answered("r2"));
        pass(&mut o, 4, "agent", json!({"runId": "k2"}));
        assert_eq!(o.expire(&Until::Pong(token)), VecDeque::from([4]));
    }

    #[test]
    fn events_held_for_one_answer_wait_while_another_is_answered() {
        let mut o = AckOrder::default();
        o.request("r1", "chat.send", &json!({"idempotencyKey": "k1"}));
        o.request("r2", "chat.send", &json!({"idempotencyKey": "k2"}));
        pass(&mut o, 1, "agent", json!({"runId": "k1"}));
        pass(&mut o, 2, "agent", json!({"runId": "k2"}));
        // r2 answered first: r1's hold stays as it is.
        assert_eq!(o.answered("r2"), After::Release(VecDeque::new()));
        let token = ping(o.answered("r1"));
        assert_eq!(o.pong(token.as_bytes()), VecDeque::from([1, 2]));
    }
}
