//! `RouterActor`: the live session actors by key; one actor per key, ever.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;

use super::*;
use crate::lane::Lanes;
use crate::session::{
    CloseSession, SendAck, SessionActor, SessionDeps, SessionEntry, SessionIdle, StopIfIdle,
};
use crate::store::{StoreError, Tree};
use crate::transcript;

pub struct RouterActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    deps: Arc<SessionDeps>,
    lanes: Option<Lanes>,
    sessions: HashMap<String, Addr<SessionActor>>,
    /// Session maintenance (None: none runs).
    maintenance: Option<super::maintenance::Maintenance>,
}

impl RouterActor {
    pub fn new(deps: impl Into<Arc<SessionDeps>>) -> RouterActor {
        RouterActor {
            span: tracing::info_span!("router"),
            deps: deps.into(),
            lanes: None,
            sessions: HashMap::new(),
            maintenance: None,
        }
    }

    /// Runs `m` at start and hourly.
    pub fn with_maintenance(mut self, m: super::maintenance::Maintenance) -> RouterActor {
        self.maintenance = Some(m);
        self
    }

    /// Every stored session, with whether it has a live actor.
    fn rows(&self) -> Result<Vec<SessionRow>, StoreError> {
        Ok(self
            .deps
            .store
            .scan::<SessionEntry>(Tree::Sessions, "")?
            .into_iter()
            .map(|(key, entry)| SessionRow {
                live: self.sessions.get(&key).is_some_and(|a| a.connected()),
                key,
                entry,
            })
            .collect())
    }

    /// Sessions run in the lane their key names (else `deps.lane`).
    pub fn with_lanes(mut self, lanes: Lanes) -> RouterActor {
        self.lanes = Some(lanes);
        self
    }
}

impl RouterActor {
    /// The live actor of `key`, started (from its stored entry) when there
    /// is none. `created`: the entry was new (the caller flushes).
    fn session(
        &mut self,
        key: &str,
        ctx: &mut Context<Self>,
    ) -> Result<(Addr<SessionActor>, SessionEntry, bool), StoreError> {
        self.session_with(key, None, ctx)
    }

    /// Like `session`; a new row gets `fresh` (else a new entry).
    fn session_with(
        &mut self,
        key: &str,
        fresh: Option<SessionEntry>,
        ctx: &mut Context<Self>,
    ) -> Result<(Addr<SessionActor>, SessionEntry, bool), StoreError> {
        let store = &self.deps.store;
        let (entry, created) = match store.get::<SessionEntry>(Tree::Sessions, key)? {
            Some(e) => (e, false),
            None => {
                let e = fresh.unwrap_or_else(|| SessionEntry::new(crate::now_ms()));
                store.put(Tree::Sessions, key, &e)?;
                let hooks = &self.deps.tool_policy.lifecycle;
                hooks.session(crate::hooks::HookPoint::SessionStart, key, "startup");
                (e, true)
            }
        };
        let addr = match self.sessions.get(key).filter(|a| a.connected()) {
            Some(a) => a.clone(),
            None => {
                let a = SessionActor::new(key.to_string(), entry.clone(), self.deps.clone())
                    .placed(ctx.address().recipient(), self.lanes.as_ref())
                    .start();
                self.sessions.insert(key.to_string(), a.clone());
                a
            }
        };
        Ok((addr, entry, created))
    }
}

impl Actor for RouterActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.maintenance.is_some() {
            let maintain = |_: &mut Self, ctx: &mut Context<Self>| {
                ctx.notify(Maintain {
                    now: crate::now_ms(),
                })
            };
            ctx.run_later(std::time::Duration::from_secs(60), maintain);
            ctx.run_interval(std::time::Duration::from_secs(3600), maintain);
        }
        let keys = match crate::session::inbox::sessions(&self.deps.store) {
            Ok(keys) => keys,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the inboxes to recover");
                return;
            }
        };
        for key in keys {
            match self.session(&key, ctx) {
                Ok(_) => {
                    tracing::info!(session_key = %key, "session woken to recover its messages")
                }
                Err(e) => {
                    tracing::error!(session_key = %key, error = %e, "cannot wake a session to recover it")
                }
            }
        }
    }
}

impl Handler<GetSession> for RouterActor {
    type Result = Result<(Addr<SessionActor>, SessionEntry), StoreError>;
    fn handle(&mut self, msg: GetSession, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (addr, entry, _) = self.session(msg.key.as_str(), ctx)?;
        Ok((addr, entry))
    }
}

impl Handler<SendToSession> for RouterActor {
    type Result = ResponseFuture<Result<SendAck, DeliverError>>;
    fn handle(&mut self, msg: SendToSession, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.forward(&msg.key, msg.message, ctx)
    }
}

impl Handler<EventToSession> for RouterActor {
    type Result = ResponseFuture<Result<(), DeliverError>>;
    fn handle(&mut self, msg: EventToSession, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.forward(&msg.key, msg.event, ctx)
    }
}

impl RouterActor {
    /// `msg` to the session of `key` (made when new), queued now, before
    /// the router serves anything else; its answer once the session gives it.
    fn forward<M, T>(
        &mut self,
        key: &crate::ids::SessionKey,
        msg: M,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<T, DeliverError>>
    where
        M: Message<Result = Result<T, crate::transcript::TranscriptError>> + Send + 'static,
        M::Result: Send,
        SessionActor: Handler<M>,
        T: 'static,
    {
        let addr = match self.session(key.as_str(), ctx) {
            Ok((addr, _, _)) => addr,
            Err(e) => return Box::pin(async move { Err(DeliverError::Store(e)) }),
        };
        let reply = addr.send(msg);
        Box::pin(async move {
            match reply.await {
                Ok(answer) => answer.map_err(DeliverError::Transcript),
                Err(_) => Err(DeliverError::Gone),
            }
        })
    }
}

impl Handler<CreateSession> for RouterActor {
    type Result = ResponseFuture<Result<(Addr<SessionActor>, SessionEntry), StoreError>>;
    fn handle(&mut self, msg: CreateSession, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.deps.store.clone();
        let result = self.session_with(msg.key.as_str(), Some(msg.entry), ctx);
        Box::pin(async move {
            let (addr, entry, _) = result?;
            store.flush().await?;
            Ok((addr, entry))
        })
    }
}

impl Handler<ForkSession> for RouterActor {
    type Result = ResponseFuture<Result<fork::Forked, fork::ForkError>>;
    fn handle(&mut self, msg: ForkSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.deps.store.clone();
        Box::pin(async move {
            let s = store.clone();
            let copy = move || fork::fork(&s, &msg.from, &msg.entry_id, msg.key, crate::now_ms());
            let forked = tokio::task::spawn_blocking(copy).await.map_err(|_| {
                fork::ForkError::Transcript(crate::transcript::TranscriptError::Stopped)
            })??;
            store.flush().await?;
            Ok(forked)
        })
    }
}

impl Handler<ExportTranscript> for RouterActor {
    type Result = ResponseFuture<Result<Option<ExportPage>, crate::transcript::TranscriptError>>;
    fn handle(&mut self, msg: ExportTranscript, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let store = self.deps.store.clone();
        Box::pin(async move {
            let read = move || -> Result<Option<ExportPage>, crate::transcript::TranscriptError> {
                let Some(entry) = store.get::<SessionEntry>(Tree::Sessions, msg.key.as_str())?
                else {
                    return Ok(None);
                };
                let (entries, next) = crate::transcript::page(
                    &store,
                    &entry.session_id,
                    msg.cursor.as_deref(),
                    msg.max_bytes,
                )?;
                Ok(Some(ExportPage {
                    entry,
                    entries,
                    next,
                }))
            };
            tokio::task::spawn_blocking(read)
                .await
                .map_err(|_| crate::transcript::TranscriptError::Stopped)?
        })
    }
}

impl Handler<QueuedSystemEvents> for RouterActor {
    type Result = ResponseFuture<Vec<String>>;
    fn handle(&mut self, msg: QueuedSystemEvents, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let key = msg.key.as_str().to_string();
        let live = self.sessions.get(&key).filter(|a| a.connected()).cloned();
        let store = self.deps.store.clone();
        Box::pin(async move {
            use crate::session::system_events::{load, PendingSystemEvents};
            if let Some(session) = live {
                return session.send(PendingSystemEvents).await.unwrap_or_default();
            }
            let read = move || load(&store, &key).unwrap_or_default();
            let events = tokio::task::spawn_blocking(read).await.unwrap_or_default();
            events.into_iter().map(|(_, e)| e.text).collect()
        })
    }
}

impl Handler<LookupSession> for RouterActor {
    type Result = Result<Option<SessionEntry>, StoreError>;
    fn handle(&mut self, msg: LookupSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.deps.store.get(Tree::Sessions, msg.key.as_str())
    }
}

impl Handler<ListSessions> for RouterActor {
    type Result = Result<Vec<SessionRow>, StoreError>;
    fn handle(&mut self, _: ListSessions, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let mut rows = self.rows()?;
        rows.sort_by_key(|r| std::cmp::Reverse(r.entry.updated_at));
        Ok(rows)
    }
}

impl Handler<DeleteSession> for RouterActor {
    type Result = ResponseFuture<Result<bool, StoreError>>;
    fn handle(&mut self, msg: DeleteSession, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let key = msg.key.as_str().to_string();
        if let Some(a) = self.sessions.remove(&key) {
            a.do_send(CloseSession);
        }
        let hooks = &self.deps.tool_policy.lifecycle;
        hooks.session(crate::hooks::HookPoint::SessionEnd, &key, "deleted");
        let store = self.deps.store.clone();
        let result = remove_session(&store, &key, msg.keep_transcript);
        Box::pin(async move {
            let existed = result?;
            store.flush().await?;
            Ok(existed)
        })
    }
}

/// Removes a stored session's entry and (unless kept) its transcript;
/// whether it existed. The caller flushes.
fn remove_session(
    store: &crate::store::Store,
    key: &str,
    keep_transcript: bool,
) -> Result<bool, StoreError> {
    let Some(entry) = store.get::<SessionEntry>(Tree::Sessions, key)? else {
        return Ok(false);
    };
    store.remove(Tree::Sessions, key)?;
    if !keep_transcript {
        transcript::delete(store, &entry.session_id).map_err(|e| match e {
            transcript::TranscriptError::Store(s) => s,
            other => StoreError::Corrupt {
                tree: "transcripts",
                key: entry.session_id.clone(),
                message: other.to_string(),
            },
        })?;
    }
    Ok(true)
}

impl Handler<Maintain> for RouterActor {
    type Result = ResponseFuture<Result<Vec<String>, StoreError>>;
    fn handle(&mut self, msg: Maintain, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let Some(m) = self.maintenance.clone() else {
            return Box::pin(async { Ok(Vec::new()) });
        };
        let store = self.deps.store.clone();
        // Synchronous, inside the handler: no session is woken meanwhile.
        let pass: Result<Vec<String>, StoreError> = (|| {
            let busy = crate::session::inbox::sessions(&store)?;
            let doomed = m.select(&self.rows()?, &|k| busy.contains(k), msg.now);
            if !m.enforce {
                if !doomed.is_empty() {
                    tracing::warn!(
                        sessions = doomed.len(),
                        "session maintenance (mode warn): these sessions would be removed"
                    );
                }
                return Ok(doomed);
            }
            for key in &doomed {
                remove_session(&store, key, false)?;
            }
            let keep_from =
                crate::usage::day_of(msg.now.saturating_sub(super::maintenance::USAGE_KEEP_MS));
            let usage = crate::usage::prune(&store, &keep_from)?;
            if !doomed.is_empty() || usage > 0 {
                tracing::info!(
                    sessions = doomed.len(),
                    usage_rows = usage,
                    "session maintenance removed stale sessions and old usage rows"
                );
            }
            Ok(doomed)
        })();
        Box::pin(async move {
            let doomed = pass?;
            store.flush().await?;
            Ok(doomed)
        })
    }
}

impl Handler<SessionIdle> for RouterActor {
    type Result = ();
    fn handle(&mut self, msg: SessionIdle, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let current = self
            .sessions
            .get(&msg.key)
            .is_some_and(|a| *a == msg.session);
        if !current {
            return;
        }
        // `wait`: no GetSession is served until the session answered, so a
        // key never has two actors.
        let session = msg.session.clone();
        ctx.wait(
            async move { session.send(StopIfIdle).await.unwrap_or(true) }
                .into_actor(self)
                .map(move |stopped, act, _| {
                    if stopped {
                        act.sessions.remove(&msg.key);
                        tracing::debug!(session_key = %msg.key, "idle session stopped");
                    }
                }),
        );
    }
}

impl Handler<CountLive> for RouterActor {
    type Result = usize;
    fn handle(&mut self, _: CountLive, _: &mut Context<Self>) -> usize {
        let _span = self.span.clone().entered();
        self.sessions.values().filter(|a| a.connected()).count()
    }
}
