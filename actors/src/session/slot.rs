//! What ties a session to the rest of the tree besides its deps: the lane
//! its runs take a slot of, the running run's actor and slot, and when it
//! was last busy (the router stops an idle session).

use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::lane::{LaneActor, Lanes, SlotPermit};
use crate::run::{AbortRun, RunActor};
use crate::session::SessionIdle;

/// The lane of the session's key, or the one a run names.
pub(super) struct LanePick {
    own: Addr<LaneActor>,
    all: Option<Lanes>,
}

impl LanePick {
    pub fn only(own: Addr<LaneActor>) -> LanePick {
        LanePick { own, all: None }
    }

    /// `key`'s lane among `lanes`, and each of them for a run that names one.
    pub fn of(lanes: &Lanes, key: &str) -> LanePick {
        LanePick {
            own: lanes.for_key(key).clone(),
            all: Some(lanes.clone()),
        }
    }

    /// The lane of a run that names `named` (an unknown name: the session's).
    pub fn for_run(&self, named: Option<&str>) -> Addr<LaneActor> {
        match (named, &self.all) {
            (Some(name), Some(all)) => all.named(name).unwrap_or(&self.own).clone(),
            _ => self.own.clone(),
        }
    }
}

/// The active run's actor and lane slot, once it has them.
#[derive(Default)]
pub(super) struct RunSlot {
    pub permit: Option<SlotPermit>,
    pub run: Option<Addr<RunActor>>,
}

impl RunSlot {
    /// Lets go of the actor and the slot (the run ended, or restarts).
    pub fn clear(&mut self) {
        self.run = None;
        self.permit = None;
    }

    /// Tells the running `RunActor` to stop (its end comes back as an event).
    pub fn abort(&self) {
        if let Some(run) = &self.run {
            run.do_send(AbortRun);
        }
    }
}

/// When the session was last busy, and whom to tell once it idles.
pub(super) struct IdleWatch {
    last: Instant,
    pub to: Option<Recipient<SessionIdle>>,
}

impl IdleWatch {
    pub fn new() -> IdleWatch {
        IdleWatch {
            last: Instant::now(),
            to: None,
        }
    }

    pub fn touch(&mut self) {
        self.last = Instant::now();
    }

    /// Nothing happened for `stop`.
    pub fn expired(&self, stop: Duration) -> bool {
        self.last.elapsed() >= stop
    }
}
