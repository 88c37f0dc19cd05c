//! `AuditLedger`: takes records from everywhere, keeps those the settings
//! ask for, and hands them to `AuditDb` in batches (at most one per
//! `BATCH_EVERY`, or at once when `BATCH_MAX` wait). A query first hands
//! over what waits, so it sees every record sent before it. At most
//! `MAX_PENDING` records wait; more are dropped and counted
//! (`audit_dropped`), never blocking a sender.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix::prelude::*;

use super::messages::{Append, ListAudit, Prune, Read, SetAuditSettings};
use super::{AuditDb, AuditLog, AuditSettings, DbError, Limits, Page, Record};
use crate::metrics::Metrics;

const BATCH_EVERY: Duration = Duration::from_millis(100);
const BATCH_MAX: usize = 256;
const MAX_PENDING: usize = 4096;
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

pub struct AuditLedger {
    db: Addr<AuditDb>,
    settings: AuditSettings,
    /// Shared with every `AuditLog`: message records are wanted.
    messages: Arc<AtomicBool>,
    pending: Vec<Record>,
    timer: Option<SpawnHandle>,
    metrics: Arc<Metrics>,
    span: tracing::Span,
}

impl AuditLedger {
    /// Opens `<dir>/audit.sqlite` on its own thread.
    pub fn start(
        dir: &Path,
        limits: Limits,
        settings: AuditSettings,
        metrics: Arc<Metrics>,
    ) -> Result<(Addr<AuditLedger>, AuditLog), DbError> {
        let path = dir.join("audit.sqlite");
        // Opened here so a failure stops the start, and handed to the
        // thread (once: a restarted one opens its own).
        let first = Mutex::new(Some(AuditDb::open(&path, limits)?));
        let db = SyncArbiter::start(1, move || {
            let opened = first.lock().unwrap_or_else(PoisonError::into_inner).take();
            opened.unwrap_or_else(|| open_retrying(&path, limits))
        });
        let messages = Arc::new(AtomicBool::new(settings.keeps_messages()));
        let addr = AuditLedger {
            db,
            settings,
            messages: messages.clone(),
            pending: Vec::new(),
            timer: None,
            metrics,
            span: tracing::info_span!("audit_ledger"),
        }
        .start();
        let log = AuditLog::new(addr.clone().recipient(), messages);
        Ok((addr, log))
    }

    fn hand_over(&mut self, ctx: &mut Context<Self>) {
        if let Some(t) = self.timer.take() {
            ctx.cancel_future(t);
        }
        if !self.pending.is_empty() {
            self.db.do_send(Append {
                records: std::mem::take(&mut self.pending),
            });
        }
    }
}

/// A restarted thread's connection. The file opened at start, so this
/// fails only if the disk went away since: it is tried again then.
fn open_retrying(path: &Path, limits: Limits) -> AuditDb {
    loop {
        match AuditDb::open(path, limits) {
            Ok(db) => return db,
            Err(e) => {
                tracing::error!(error = %e, "cannot open the audit ledger; retrying in 5 s");
                std::thread::sleep(Duration::from_secs(5));
            }
        }
    }
}

impl Actor for AuditLedger {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(PRUNE_EVERY, |act, _| act.db.do_send(Prune));
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        self.hand_over(ctx);
        Running::Stop
    }
}

impl Handler<Record> for AuditLedger {
    type Result = ();
    fn handle(&mut self, msg: Record, ctx: &mut Context<Self>) {
        if !self.settings.keeps(&msg.activity) {
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            if self.metrics.audit_dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(parent: &self.span, "audit records dropped: the ledger is behind");
            }
            return;
        }
        self.pending.push(msg);
        if self.pending.len() >= BATCH_MAX {
            self.hand_over(ctx);
        } else if self.timer.is_none() {
            self.timer = Some(ctx.run_later(BATCH_EVERY, |act, ctx| {
                act.timer = None;
                act.hand_over(ctx);
            }));
        }
    }
}

impl Handler<ListAudit> for AuditLedger {
    type Result = ResponseFuture<Result<Page, DbError>>;
    fn handle(&mut self, msg: ListAudit, ctx: &mut Context<Self>) -> Self::Result {
        self.hand_over(ctx);
        let read = self.db.send(Read { query: msg.query });
        Box::pin(async move { read.await.map_err(|_| DbError::Gone)? })
    }
}

impl Handler<SetAuditSettings> for AuditLedger {
    type Result = ();
    fn handle(&mut self, msg: SetAuditSettings, _: &mut Context<Self>) {
        if msg.settings != self.settings {
            tracing::info!(parent: &self.span, enabled = msg.settings.enabled, messages = ?msg.settings.messages, "audit settings changed");
        }
        self.settings = msg.settings;
        self.messages
            .store(self.settings.keeps_messages(), Ordering::Relaxed);
    }
}
