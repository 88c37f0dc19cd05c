//! LaneActor: one per lane (`main`, `cron`, `subagent`, `nested`). Runs ask
//! for a slot with `AcquireSlot` and get a `SlotPermit` when one of
//! `maxConcurrent` slots is free, strictly FIFO. The permit releases its slot
//! when dropped, so every exit path of a run (done, failed, aborted, panicked,
//! cancelled while still queued) gives the slot back.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod messages;

use std::collections::VecDeque;

use actix::prelude::*;
use tokio::sync::oneshot;

pub use actor::*;
pub use messages::*;

/// The four lanes of OpenClaw's command queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaneKind {
    Main,
    Cron,
    Subagent,
    Nested,
}

impl LaneKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LaneKind::Main => "main",
            LaneKind::Cron => "cron",
            LaneKind::Subagent => "subagent",
            LaneKind::Nested => "nested",
        }
    }
}

/// Pure FIFO permit accounting: no actix.
#[derive(Debug)]
pub struct LaneQueue<W> {
    max: usize,
    active: usize,
    waiting: VecDeque<W>,
}

impl<W> LaneQueue<W> {
    pub fn new(max: usize) -> LaneQueue<W> {
        LaneQueue {
            max: max.max(1),
            active: 0,
            waiting: VecDeque::new(),
        }
    }

    /// Takes a slot now (Some(waiter) back) or queues the waiter (None).
    pub fn acquire(&mut self, waiter: W) -> Option<W> {
        if self.active < self.max && self.waiting.is_empty() {
            self.active += 1;
            Some(waiter)
        } else {
            self.waiting.push_back(waiter);
            None
        }
    }

    /// Gives a slot back; returns the next waiter, which now holds it.
    pub fn release(&mut self) -> Option<W> {
        self.active = self.active.saturating_sub(1);
        self.grant_next()
    }

    fn grant_next(&mut self) -> Option<W> {
        if self.active < self.max {
            let next = self.waiting.pop_front()?;
            self.active += 1;
            Some(next)
        } else {
            None
        }
    }

    /// Changes the limit; returns the waiters granted by a raise.
    pub fn set_max(&mut self, max: usize) -> Vec<W> {
        self.max = max.max(1);
        std::iter::from_fn(|| self.grant_next()).collect()
    }

    pub fn active(&self) -> usize {
        self.active
    }

    pub fn queued(&self) -> usize {
        self.waiting.len()
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

/// Holds one slot of a lane until dropped.
#[derive(Debug)]
pub struct SlotPermit {
    lane: Addr<LaneActor>,
    released: bool,
}

impl SlotPermit {
    /// Gives the slot back now (dropping does the same).
    pub fn release(mut self) {
        self.give_back();
    }

    fn give_back(&mut self) {
        if !self.released {
            self.released = true;
            self.lane.do_send(ReleaseSlot);
        }
    }
}

impl Drop for SlotPermit {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    #[error("lane {0} stopped")]
    Stopped(&'static str),
}

/// Active slots, queued waiters and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneStatus {
    pub active: usize,
    pub queued: usize,
    pub max: usize,
}

type Waiter = oneshot::Sender<SlotPermit>;

/// The four lanes (seed 002): `main` for chat runs, `cron` for scheduled
/// jobs, `subagent` for spawned agents, `nested` for runs started from
/// inside a run. Each bounds how many runs hold a slot at once.
#[derive(Clone)]
pub struct Lanes {
    pub main: Addr<LaneActor>,
    pub cron: Addr<LaneActor>,
    pub subagent: Addr<LaneActor>,
    pub nested: Addr<LaneActor>,
}

impl Lanes {
    pub fn start(settings: &crate::settings::Settings) -> Lanes {
        let d = &settings.agents.defaults;
        let main = d.max_concurrent.max(1) as usize;
        let sub = d.subagents.max_concurrent.max(1) as usize;
        let cron = settings.cron.max_concurrent_runs.max(1) as usize;
        Lanes {
            main: LaneActor::new(LaneKind::Main, main).start(),
            cron: LaneActor::new(LaneKind::Cron, cron).start(),
            subagent: LaneActor::new(LaneKind::Subagent, sub).start(),
            nested: LaneActor::new(LaneKind::Nested, main).start(),
        }
    }
}

impl Lanes {
    /// A lane by its name (`main`, `cron`, `subagent`, `nested`).
    pub fn named(&self, name: &str) -> Option<&Addr<LaneActor>> {
        match name {
            "main" => Some(&self.main),
            "cron" => Some(&self.cron),
            "subagent" => Some(&self.subagent),
            "nested" => Some(&self.nested),
            _ => None,
        }
    }

    /// The lane for a session key: `...:cron:...` keys run in `cron`,
    /// `...:subagent:...` in `subagent`, `...:nested:...` in `nested`,
    /// everything else in `main`.
    pub fn for_key(&self, key: &str) -> &Addr<LaneActor> {
        match crate::ids::key::first(key) {
            "cron" => &self.cron,
            "subagent" => &self.subagent,
            "nested" => &self.nested,
            _ => &self.main,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn queue_is_fifo_and_bounded() {
        let mut q = LaneQueue::new(2);
        assert_eq!(q.acquire(1), Some(1));
        assert_eq!(q.acquire(2), Some(2));
        assert_eq!(q.acquire(3), None);
        assert_eq!(q.acquire(4), None);
        assert_eq!((q.active(), q.queued()), (2, 2));
        assert_eq!(q.release(), Some(3));
        assert_eq!(q.release(), Some(4));
        assert_eq!(q.release(), None);
        assert_eq!(q.release(), None);
        assert_eq!((q.active(), q.queued()), (0, 0));
        assert_eq!(q.release(), None, "never below zero");
        assert_eq!(q.active(), 0);
    }

    #[test]
    fn raising_the_limit_grants_waiters_in_order() {
        let mut q = LaneQueue::new(1);
        q.acquire('a');
        q.acquire('b');
        q.acquire('c');
        assert_eq!(q.set_max(3), vec!['b', 'c']);
        assert_eq!(q.active(), 3);
    }

    #[actix::test]
    async fn permits_are_released_on_drop_and_given_fifo() {
        let lane = LaneActor::new(LaneKind::Main, 2).start();
        let a = lane.send(AcquireSlot).await.unwrap().unwrap();
        let b = lane.send(AcquireSlot).await.unwrap().unwrap();
        let third = actix::spawn({
            let lane = lane.clone();
            async move { lane.send(AcquireSlot).await.unwrap().unwrap() }
        });
        let fourth = actix::spawn({
            let lane = lane.clone();
            async move {
                actix::clock::sleep(Duration::from_millis(20)).await;
                lane.send(AcquireSlot).await.unwrap().unwrap()
            }
        });
        actix::clock::sleep(Duration::from_millis(50)).await;
        let st = lane.send(GetLaneStatus).await.unwrap();
        assert_eq!((st.active, st.queued, st.max), (2, 2, 2));
        drop(a); // a run that ends any way drops its permit
        let c = third.await.unwrap();
        assert!(!fourth.is_finished(), "FIFO: the fourth still waits");
        b.release();
        let d = fourth.await.unwrap();
        drop((c, d));
        actix::clock::sleep(Duration::from_millis(20)).await;
        let st = lane.send(GetLaneStatus).await.unwrap();
        assert_eq!((st.active, st.queued), (0, 0));
    }

    #[actix::test]
    async fn a_waiter_that_gives_up_passes_its_slot_on() {
        let lane = LaneActor::new(LaneKind::Subagent, 1).start();
        let held = lane.send(AcquireSlot).await.unwrap().unwrap();
        // Queued, then cancelled (its run aborted before it got a slot).
        let cancelled = actix::spawn({
            let lane = lane.clone();
            async move { lane.send(AcquireSlot).await }
        });
        actix::clock::sleep(Duration::from_millis(20)).await;
        cancelled.abort();
        let waiting = actix::spawn({
            let lane = lane.clone();
            async move { lane.send(AcquireSlot).await.unwrap().unwrap() }
        });
        actix::clock::sleep(Duration::from_millis(20)).await;
        drop(held);
        let got = actix::clock::timeout(Duration::from_secs(5), waiting).await;
        assert!(got.is_ok(), "the live waiter got the slot");
        actix::clock::sleep(Duration::from_millis(20)).await;
        let st = lane.send(GetLaneStatus).await.unwrap();
        assert_eq!(st.active, 1);
    }
}
