//! A lane's inbox: acquire and release slots, resize, status.

use actix::prelude::*;

use super::*;

/// Waits for a slot. Reply: the permit (resolves when granted, FIFO).
#[derive(Debug, Message)]
#[rtype(result = "Result<SlotPermit, LaneError>")]
pub struct AcquireSlot;

/// A permit was dropped: its slot is free.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReleaseSlot;

/// Changes `maxConcurrent` (config hot apply).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetMaxConcurrent {
    pub max: usize,
}

#[derive(Debug, Message)]
#[rtype(result = "LaneStatus")]
pub struct GetLaneStatus;
