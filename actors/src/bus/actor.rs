//! `EventBus`: subscribers, their seq and backlog rule, the tick.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::ids::ConnId;
use crate::metrics::Metrics;

pub struct EventBus {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    subscribers: HashMap<ConnId, Subscriber>,
    tick_interval: Duration,
    tick: TickEvent,
    metrics: Arc<Metrics>,
}

impl EventBus {
    pub fn new(tick_interval: Duration, tick: TickEvent, metrics: Arc<Metrics>) -> EventBus {
        EventBus {
            span: tracing::info_span!("bus"),
            subscribers: HashMap::new(),
            tick_interval,
            tick,
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
            if !event.audience.admits(sub.role, &sub.scopes) || !sub.watch.sees(&event) {
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

    /// Drops a subscriber, and its count among the session watchers.
    fn remove(&mut self, id: &ConnId) -> Option<Subscriber> {
        let sub = self.subscribers.remove(id)?;
        if sub.watch.any() {
            self.metrics
                .session_watchers
                .fetch_sub(1, Ordering::Relaxed);
        }
        Some(sub)
    }

    fn close_slow(&mut self, id: &ConnId, event: &str) {
        if let Some(sub) = self.remove(id) {
            Metrics::inc(&self.metrics.slow_consumer_closes);
            tracing::warn!(conn_id = %id, event, "slow consumer closed");
            self.metrics.stability.slow_consumer_closed();
            sub.recipient
                .do_send(Outbound::Close(CloseReason::SlowConsumer));
        }
    }
}

impl Actor for EventBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.tick_interval, |bus, _| {
            let tick = (bus.tick)(crate::now_ms());
            bus.fan_out(tick);
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
    crate::metrics::counted_do_send(bus, &metrics.bus_mailbox, msg);
}

impl Handler<Subscribe> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.received();
        self.remove(&msg.conn_id);
        self.subscribers.insert(
            msg.conn_id,
            Subscriber {
                recipient: msg.recipient,
                role: msg.role,
                scopes: msg.scopes,
                buffered: msg.buffered,
                max_buffered: msg.max_buffered,
                seq: 0,
                watch: Watching::default(),
            },
        );
    }
}

impl Handler<Unsubscribe> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.received();
        self.remove(&msg.conn_id);
    }
}

impl Handler<Watch> for EventBus {
    type Result = bool;
    fn handle(&mut self, msg: Watch, _: &mut Context<Self>) -> bool {
        self.received();
        let Some(sub) = self.subscribers.get_mut(&msg.conn_id) else {
            return false;
        };
        let before = sub.watch.any();
        let done = sub.watch.apply(msg.change);
        match (before, sub.watch.any()) {
            (false, true) => self
                .metrics
                .session_watchers
                .fetch_add(1, Ordering::Relaxed),
            (true, false) => self
                .metrics
                .session_watchers
                .fetch_sub(1, Ordering::Relaxed),
            _ => 0,
        };
        done
    }
}

impl Handler<Publish> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: Publish, _: &mut Context<Self>) {
        // One per event: not in the `bus` span (its one log line, a slow
        // consumer closed, names the connection).
        self.received();
        self.fan_out(msg.event);
    }
}

impl Handler<PublishTo> for EventBus {
    type Result = ();
    fn handle(&mut self, msg: PublishTo, _: &mut Context<Self>) {
        // One per event: not in the `bus` span (its one log line, a slow
        // consumer closed, names the connection).
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
        let _span = self.span.clone().entered();
        self.received();
        self.fan_out(msg.event);
        for sub in self.subscribers.values() {
            sub.recipient
                .do_send(Outbound::Close(CloseReason::ServiceRestart));
        }
        self.subscribers.len()
    }
}

impl Handler<CountSubscribers> for EventBus {
    type Result = usize;
    fn handle(&mut self, _: CountSubscribers, _: &mut Context<Self>) -> usize {
        let _span = self.span.clone().entered();
        self.received();
        self.subscribers.len()
    }
}
