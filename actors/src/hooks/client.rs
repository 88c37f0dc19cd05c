//! `HookClient`: how the runtime reaches its hooks. Which points have
//! hooks is one atomic word the hub keeps (a point without hooks costs a
//! load, no message); the hub is asked only when a point has some.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use actix::prelude::*;

use super::actor::HookHub;
use super::event::{HookCtx, HookEvent};
use super::messages::RunHooks;
use super::points::HookPoint;
use super::reply::HookReply;

/// A handle on the hooks in force (the default: none, no hub).
#[derive(Clone, Default)]
pub struct HookClient {
    /// `HookPoint::bit`s of the points with hooks (the hub writes it).
    pub(super) points: Arc<AtomicU32>,
    pub(super) hub: Option<Addr<HookHub>>,
}

impl std::fmt::Debug for HookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookClient")
            .field("hub", &self.hub.is_some())
            .finish()
    }
}

impl HookClient {
    /// Starts the hub with `table`; the client every caller shares.
    pub fn start(
        table: super::HookTable,
        workspace: std::path::PathBuf,
        audit: crate::audit::AuditLog,
    ) -> HookClient {
        let points = Arc::new(AtomicU32::new(0));
        let hub = HookHub::new(table, points.clone(), workspace, audit).start();
        HookClient {
            points,
            hub: Some(hub),
        }
    }

    /// Whether `point` has hooks (the hub filters them by tool).
    pub fn has(&self, point: HookPoint) -> bool {
        self.hub.is_some() && self.points.load(Ordering::Acquire) & point.bit() != 0
    }

    /// The merged answer of `point`'s hooks (none: the empty answer).
    pub async fn decide(&self, point: HookPoint, event: HookEvent, ctx: HookCtx) -> HookReply {
        let (Some(hub), true) = (&self.hub, self.has(point)) else {
            return HookReply::default();
        };
        hub.send(RunHooks { point, event, ctx })
            .await
            .unwrap_or_default()
    }

    /// Tells `point`'s hooks, waiting for nothing.
    pub fn notify(&self, point: HookPoint, event: HookEvent, ctx: HookCtx) {
        if let (Some(hub), true) = (&self.hub, self.has(point)) {
            hub.do_send(RunHooks { point, event, ctx });
        }
    }

    /// The hub, for status.
    pub fn hub(&self) -> Option<&Addr<HookHub>> {
        self.hub.as_ref()
    }
}

impl HookClient {
    /// `session_start` or `session_end` of `key`, with its reason.
    pub fn session(&self, point: HookPoint, key: &str, reason: &str) {
        let ctx = HookCtx {
            agent_id: crate::ids::key::agent(key).to_string(),
            session_key: key.to_string(),
            ..Default::default()
        };
        let event = HookEvent::Session {
            reason: reason.to_string(),
        };
        self.notify(point, event, ctx);
    }
}
