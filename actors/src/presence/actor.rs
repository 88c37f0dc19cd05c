//! `PresenceActor`: the presence table, its TTLs and cap, and the `presence` broadcasts.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::metrics::Metrics;

pub struct PresenceActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    table: PresenceTable,
    versions: Arc<StateVersions>,
    /// The edge, which sends each change as a `presence` event.
    edge: Recipient<PresenceChanged>,
    metrics: Arc<Metrics>,
}

impl PresenceActor {
    pub fn new(
        self_entry: PresenceEntry,
        versions: Arc<StateVersions>,
        edge: Recipient<PresenceChanged>,
        metrics: Arc<Metrics>,
    ) -> PresenceActor {
        let mut table = PresenceTable::default();
        let key = self_entry
            .instance_id
            .clone()
            .unwrap_or_else(|| "gateway".to_string());
        table.upsert(&key, self_entry, true, crate::now_ms());
        PresenceActor {
            span: tracing::info_span!("presence"),
            table,
            versions,
            edge,
            metrics,
        }
    }

    fn changed(&mut self) {
        self.versions.presence.fetch_add(1, Ordering::Relaxed);
        self.edge.do_send(PresenceChanged {
            entries: self.table.list(),
            version: self.versions.current(),
        });
    }

    fn received(&self) {
        self.metrics
            .presence_mailbox
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Actor for PresenceActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(Duration::from_secs(30), |this, _| {
            if this.table.expire(crate::now_ms()) {
                this.changed();
            }
        });
    }
}

impl Handler<UpsertPresence> for PresenceActor {
    type Result = ();
    fn handle(&mut self, msg: UpsertPresence, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.received();
        if self
            .table
            .upsert(&msg.key, msg.entry, msg.pinned, crate::now_ms())
        {
            self.changed();
        }
    }
}

impl Handler<RemovePresence> for PresenceActor {
    type Result = ();
    fn handle(&mut self, msg: RemovePresence, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.received();
        if self.table.remove(&msg.key) {
            self.changed();
        }
    }
}

impl Handler<ListPresence> for PresenceActor {
    type Result = MessageResult<ListPresence>;
    fn handle(&mut self, _: ListPresence, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        if self.table.expire(crate::now_ms()) {
            self.changed();
        }
        MessageResult(self.table.list())
    }
}
