//! `LaneActor`: FIFO permits up to `maxConcurrent`.

use actix::prelude::*;
use tokio::sync::oneshot;

use super::*;

pub struct LaneActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    kind: LaneKind,
    queue: LaneQueue<Waiter>,
}

impl LaneActor {
    pub fn new(kind: LaneKind, max: usize) -> LaneActor {
        LaneActor {
            span: tracing::info_span!("lane", lane = kind.as_str()),
            kind,
            queue: LaneQueue::new(max),
        }
    }

    /// Hands a slot to a waiter; one that gave up meanwhile (its run was
    /// aborted while queued) passes the slot straight on.
    fn grant(&mut self, waiter: Waiter, ctx: &mut Context<Self>) {
        let mut next = Some(waiter);
        while let Some(w) = next.take() {
            // Armed from the start: a permit dropped unread in the channel
            // (the run went away) still gives its slot back.
            let permit = SlotPermit {
                lane: ctx.address(),
                released: false,
            };
            match w.send(permit) {
                Ok(()) => {}
                Err(mut unused) => {
                    unused.released = true;
                    next = self.queue.release();
                }
            }
        }
    }
}

impl Actor for LaneActor {
    type Context = Context<Self>;
}

impl Handler<AcquireSlot> for LaneActor {
    type Result = ResponseFuture<Result<SlotPermit, LaneError>>;
    fn handle(&mut self, _: AcquireSlot, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (tx, rx) = oneshot::channel();
        if let Some(w) = self.queue.acquire(tx) {
            self.grant(w, ctx);
        }
        let kind = self.kind.as_str();
        Box::pin(async move { rx.await.map_err(|_| LaneError::Stopped(kind)) })
    }
}

impl Handler<ReleaseSlot> for LaneActor {
    type Result = ();
    fn handle(&mut self, _: ReleaseSlot, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        if let Some(w) = self.queue.release() {
            self.grant(w, ctx);
        }
    }
}

impl Handler<SetMaxConcurrent> for LaneActor {
    type Result = ();
    fn handle(&mut self, msg: SetMaxConcurrent, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        for w in self.queue.set_max(msg.max) {
            self.grant(w, ctx);
        }
    }
}

impl Handler<GetLaneStatus> for LaneActor {
    type Result = MessageResult<GetLaneStatus>;
    fn handle(&mut self, _: GetLaneStatus, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult(LaneStatus {
            active: self.queue.active(),
            queued: self.queue.queued(),
            max: self.queue.max(),
        })
    }
}
