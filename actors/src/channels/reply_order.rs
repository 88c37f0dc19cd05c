//! Replies from one session to one chat go out in the order of the
//! messages they answer. A session runs its turns one after another, but
//! each reply's delivery is its own future: after a batch of messages
//! (caught up after a stop) the short runs end together and their sends
//! raced, so a chat saw `[0, 3, 2, 1]` (issue 56). Each delivery takes a
//! ticket on its lane (session, chat, thread) and starts only once the one
//! before it on that lane has finished (sent, failed, or given up: a
//! dropped ticket releases the next). Lanes are forgotten when their last
//! delivery ends, so the map holds only lanes with a delivery under way.

use std::collections::HashMap;

use futures_util::future::{BoxFuture, FutureExt, Shared};
use tokio::sync::oneshot;

use super::ledger::Delivery;

type Turn = Shared<BoxFuture<'static, ()>>;

/// The lanes with deliveries under way: each lane's latest ticket.
#[derive(Default)]
pub struct ReplyOrder {
    lanes: HashMap<String, (u64, Turn)>,
    next: u64,
}

/// One delivery's place on its lane; dropping it lets the next one go.
pub struct Ticket {
    pub lane: String,
    pub seq: u64,
    before: Option<Turn>,
    _done: oneshot::Sender<()>,
}

impl Ticket {
    /// Waits until the delivery before this one on its lane has ended.
    pub async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            before.await;
        }
    }
}

impl ReplyOrder {
    /// A ticket for `d`, after every ticket given on its lane before.
    pub fn ticket(&mut self, d: &Delivery) -> Ticket {
        let lane = format!(
            "{}\u{1f}{}\u{1f}{}",
            d.session_key.as_str(),
            d.target,
            d.thread_id.as_deref().unwrap_or("")
        );
        let (done, ended) = oneshot::channel::<()>();
        let turn: Turn = ended.map(|_| ()).boxed().shared();
        self.next += 1;
        let before = self
            .lanes
            .insert(lane.clone(), (self.next, turn))
            .map(|(_, t)| t);
        Ticket {
            lane,
            seq: self.next,
            before,
            _done: done,
        }
    }

    /// The delivery with ticket `seq` on `lane` ended: the lane is
    /// forgotten when no later ticket was given on it.
    pub fn release(&mut self, lane: &str, seq: u64) {
        if self.lanes.get(lane).is_some_and(|(s, _)| *s == seq) {
            self.lanes.remove(lane);
        }
    }

    /// Lanes with a delivery under way.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn delivery(session: &str, chat: &str) -> Delivery {
        serde_json::from_value(serde_json::json!({
            "account": "default", "sessionKey": session, "runId": "r",
            "target": chat, "createdMs": 0,
        }))
        .unwrap()
    }

    #[actix::test]
    async fn a_lane_goes_in_ticket_order_other_lanes_do_not_wait_and_ended_lanes_are_forgotten() {
        let mut order = ReplyOrder::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Later tickets are polled first: they still wait their turn.
        let tickets: Vec<Ticket> = (0..4)
            .map(|_| order.ticket(&delivery("agent:main:main", "42")))
            .collect();
        for (i, mut t) in tickets.into_iter().enumerate().rev() {
            let seen = seen.clone();
            tasks.push(actix::spawn(async move {
                t.wait().await;
                seen.lock().unwrap().push(i);
            }));
        }
        let mut other = order.ticket(&delivery("agent:main:main", "43"));
        other.wait().await; // another chat: nothing before it
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2, 3]);
        order.release("agent:main:main\u{1f}42\u{1f}", 3);
        assert_eq!(order.lanes(), 2, "a later ticket keeps the lane");
        order.release("agent:main:main\u{1f}42\u{1f}", 4);
        order.release(&other.lane, other.seq);
        assert_eq!(order.lanes(), 0);
    }
}
