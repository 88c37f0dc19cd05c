//! `MemoryActor`: one agent's memory index kept in step with its files. A
//! file watcher (notify, debounced 1.5 s) on the workspace root, `memory/`
//! and the extra paths asks for a sweep when anything there changes, and a sweep runs every 5 minutes anyway as
//! a backstop for missed events. A sweep reads only files whose mtime
//! changed and re-chunks only those whose content changed; it runs on the
//! blocking pool, one at a time (a request during one runs once more
//! after it), and holds the index one file at a time so searches go on
//! meanwhile. With an embedding provider, chunks it has no vector for are
//! sent after each sweep, in batches. Searches run on the blocking pool
//! and never index; when the provider fails (or answers with other
//! dimensions) the search is keyword-only and the status says why.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::files;
use super::index::{IndexError, MemoryIndex, Query, VectorLeg};
use super::messages::*;
use super::provider::{Embedder, MemorySettings, BATCH};

/// The backstop sweep.
pub const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// File events closer than this become one sweep.
pub const DEBOUNCE: Duration = Duration::from_millis(1500);
/// How long a search waits for the provider to embed its query.
pub const QUERY_EMBED_TIMEOUT: Duration = Duration::from_secs(10);

pub struct MemoryActor {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    workspace: PathBuf,
    settings: MemorySettings,
    embedder: Option<Arc<dyn Embedder>>,
    index: Arc<Mutex<MemoryIndex>>,
    status: Arc<Mutex<MemoryStatus>>,
    sweeping: bool,
    again: bool,
    embedding: bool,
    watcher: Option<RecommendedWatcher>,
    /// A sweep is scheduled (file events closer than `DEBOUNCE` coalesce).
    pending: bool,
    /// Memory folders and extra paths being watched.
    watched: std::collections::HashSet<PathBuf>,
}

impl MemoryActor {
    pub fn new(
        workspace: PathBuf,
        settings: MemorySettings,
        index: MemoryIndex,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> MemoryActor {
        let (provider, mut model) = settings.names();
        let mut index = index;
        if let Some(e) = &embedder {
            model = e.model().to_string();
            if let Err(err) = index.use_remote(e.model()) {
                tracing::warn!(error = %err, "cached memory embeddings unreadable");
            }
        }
        let status = MemoryStatus {
            provider,
            model,
            workspace: workspace.display().to_string(),
            ..Default::default()
        };
        MemoryActor {
            span: tracing::info_span!("memory", workspace = %workspace.display()),
            workspace,
            settings,
            embedder,
            index: Arc::new(Mutex::new(index)),
            status: Arc::new(Mutex::new(status)),
            sweeping: false,
            again: false,
            embedding: false,
            watcher: None,
            pending: false,
            watched: Default::default(),
        }
    }

    fn watch(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address();
        let (ws, extra) = (self.workspace.clone(), self.settings.extra_paths.clone());
        let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                if changes_memory(&ev, &ws, &extra) {
                    me.do_send(FilesChanged);
                }
            }
        });
        match made {
            Ok(mut w) => match w.watch(&self.workspace, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watcher = Some(w);
                    self.watch_memory_paths();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "memory files not watched: the periodic sweep keeps the index current")
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "memory watcher unavailable: the periodic sweep keeps the index current")
            }
        }
    }

    /// Watches `memory/` and the extra paths (not the whole workspace: a
    /// big repository there would cost a watch per folder). The root is
    /// watched on its own, so a `memory/` made later is seen, and watched
    /// from the sweep that follows.
    fn watch_memory_paths(&mut self) {
        let Some(d) = self.watcher.as_mut() else {
            return;
        };
        let mut paths = vec![self.workspace.join("memory")];
        paths.extend(
            self.settings
                .extra_paths
                .iter()
                .map(|e| self.workspace.join(e.trim_start_matches('/'))),
        );
        for p in paths {
            if self.watched.contains(&p) || !p.exists() {
                continue;
            }
            let mode = if p.is_dir() {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            match d.watch(&p, mode) {
                Ok(()) => {
                    self.watched.insert(p);
                }
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "memory path not watched: the periodic sweep keeps it current")
                }
            }
        }
    }
}

/// Whether a file event changes memory: a creation, removal, rename or
/// content change (not an open, a read or a metadata change: the sweep's
/// own reads must not ask for another sweep) of a memory path.
fn changes_memory(ev: &notify::Event, ws: &std::path::Path, extra: &[String]) -> bool {
    use notify::event::ModifyKind;
    let kind = matches!(
        ev.kind,
        EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
    );
    kind && ev.paths.iter().any(|p| {
        let Ok(rel) = p.strip_prefix(ws) else {
            return false;
        };
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy());
        let name = first.as_deref().unwrap_or("");
        ["MEMORY.md", "memory.md", "USER.md", "memory"].contains(&name)
            || extra
                .iter()
                .any(|e| rel.starts_with(e.trim_start_matches('/')))
    })
}

/// Records the provider's state; logs only when it changes.
fn set_degraded(status: &Mutex<MemoryStatus>, why: Option<String>) {
    let Ok(mut s) = status.lock() else { return };
    if s.degraded == why {
        return;
    }
    match &why {
        Some(w) => tracing::warn!(reason = %w, "memory search degraded to keywords"),
        None if s.degraded.is_some() => tracing::info!("memory embedding provider answers again"),
        None => {}
    }
    s.degraded = why;
}

/// One sweep (on the blocking pool).
fn sweep(
    workspace: &std::path::Path,
    extra: &[String],
    index: &Mutex<MemoryIndex>,
    status: &Mutex<MemoryStatus>,
) {
    let (found, skipped) = files::collect(workspace, extra);
    let indexed = match index.lock().map(|idx| idx.files()) {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "memory index unreadable");
            return;
        }
        Err(_) => return,
    };
    let (read, gone) = files::changes(&found, &indexed);
    for rel in gone {
        let Ok(mut idx) = index.lock() else { return };
        if let Err(e) = idx.remove_file(&rel) {
            tracing::warn!(file = %rel, error = %e, "memory file not removed from the index");
        }
    }
    for f in read {
        // Read outside the lock; a file gone or rewritten meanwhile is
        // picked up by the sweep its change triggers.
        let Some(text) = files::read_text(&f.abs) else {
            tracing::info!(file = %f.rel, "memory file skipped: not readable as text");
            continue;
        };
        let Ok(mut idx) = index.lock() else { return };
        if let Err(e) = idx.sync_file(&f.rel, &text, f.mtime_ms) {
            tracing::warn!(file = %f.rel, error = %e, "memory file not indexed");
        }
    }
    let Ok(mut idx) = index.lock() else { return };
    if let Err(e) = idx.prune_remote() {
        tracing::warn!(error = %e, "cached memory embeddings not pruned");
    }
    // The sweep's writes are done: the log goes back into the database.
    match idx.checkpoint() {
        Ok(true) => {}
        Ok(false) => tracing::debug!("memory index log kept: a reader holds a snapshot"),
        Err(e) => tracing::warn!(error = %e, "memory index log not checkpointed"),
    }
    if let Ok(mut s) = status.lock() {
        s.chunks = idx.len();
        s.files = found.len();
        s.sweeps += 1;
        s.skipped = skipped.into_iter().map(|k| (k.rel, k.why)).collect();
    }
}

/// Sends the chunks the provider has no vector for, a batch at a time,
/// until none is left or the provider fails.
async fn embed_missing(
    embedder: Arc<dyn Embedder>,
    index: Arc<Mutex<MemoryIndex>>,
    status: Arc<Mutex<MemoryStatus>>,
) {
    loop {
        let idx = index.clone();
        let missing = tokio::task::spawn_blocking(move || match idx.lock() {
            Ok(i) => i.missing_remote(BATCH),
            Err(_) => Ok(Vec::new()),
        })
        .await;
        let missing = match missing {
            Ok(Ok(m)) if !m.is_empty() => m,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "memory index unreadable");
                return;
            }
            _ => return,
        };
        let texts = missing.iter().map(|(_, t)| t.clone()).collect();
        let vectors = match embedder.embed(texts).await {
            Ok(v) => v,
            Err(e) => return set_degraded(&status, Some(e.to_string())),
        };
        let pairs = missing.into_iter().map(|(h, _)| h).zip(vectors).collect();
        let idx = index.clone();
        let stored = tokio::task::spawn_blocking(move || match idx.lock() {
            Ok(mut i) => Some(i.store_remote(pairs)),
            Err(_) => None,
        })
        .await;
        match stored {
            Ok(Some(Ok(()))) => set_degraded(&status, None),
            Ok(Some(Err(e))) => return set_degraded(&status, Some(e.to_string())),
            _ => return,
        }
    }
}

impl Actor for MemoryActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.watch(ctx);
        ctx.notify(Sweep);
        ctx.run_interval(SWEEP_EVERY, |_, ctx| ctx.notify(Sweep));
    }
}

impl MemoryActor {
    fn embed_after_sweep(&mut self, ctx: &mut Context<Self>) {
        let Some(embedder) = self.embedder.clone() else {
            return;
        };
        if std::mem::replace(&mut self.embedding, true) {
            return;
        }
        let job = embed_missing(embedder, self.index.clone(), self.status.clone());
        ctx.spawn(job.into_actor(self).map(|_, act, _| act.embedding = false));
    }
}

impl Handler<FilesChanged> for MemoryActor {
    type Result = ();
    fn handle(&mut self, _: FilesChanged, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        if std::mem::replace(&mut self.pending, true) {
            return;
        }
        ctx.run_later(DEBOUNCE, |act, ctx| {
            act.pending = false;
            ctx.notify(Sweep);
        });
    }
}

impl Handler<Sweep> for MemoryActor {
    type Result = ();
    fn handle(&mut self, _: Sweep, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        if self.sweeping {
            self.again = true;
            return;
        }
        self.sweeping = true;
        let (ws, extra, index, status) = (
            self.workspace.clone(),
            self.settings.extra_paths.clone(),
            self.index.clone(),
            self.status.clone(),
        );
        let job = tokio::task::spawn_blocking(move || sweep(&ws, &extra, &index, &status));
        ctx.spawn(job.into_actor(self).map(|_, act, ctx| {
            act.sweeping = false;
            act.watch_memory_paths();
            act.embed_after_sweep(ctx);
            if std::mem::take(&mut act.again) {
                ctx.notify(Sweep);
            }
        }));
    }
}

/// Which vectors a search can use: the provider's vector of the query, or
/// keywords alone when the provider fails (recorded in the status).
async fn query_leg(
    embedder: Option<Arc<dyn Embedder>>,
    index: &Arc<Mutex<MemoryIndex>>,
    status: &Arc<Mutex<MemoryStatus>>,
    text: &str,
) -> VectorLeg {
    let Some(e) = embedder else {
        return VectorLeg::Local;
    };
    let dims = index.lock().ok().and_then(|i| i.remote_dims());
    let Some(dims) = dims else {
        // Nothing embedded by the provider yet.
        return VectorLeg::None;
    };
    let asked = tokio::time::timeout(QUERY_EMBED_TIMEOUT, e.embed(vec![text.to_string()])).await;
    let why = match asked {
        Ok(Ok(mut v)) if v.len() == 1 && v[0].len() == dims => {
            set_degraded(status, None);
            return VectorLeg::Remote(v.remove(0));
        }
        Ok(Ok(v)) => IndexError::Dimensions {
            want: dims,
            got: v.first().map_or(0, Vec::len),
        }
        .to_string(),
        Ok(Err(err)) => err.to_string(),
        Err(_) => "the embedding provider did not answer in time".to_string(),
    };
    set_degraded(status, Some(why));
    VectorLeg::None
}

impl Handler<SearchMemory> for MemoryActor {
    type Result = ResponseFuture<Result<SearchResult, IndexError>>;
    fn handle(&mut self, msg: SearchMemory, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (index, status) = (self.index.clone(), self.status.clone());
        let embedder = self.embedder.clone();
        let max = msg.max.unwrap_or(self.settings.max_results).clamp(1, 50);
        let min_score = msg.min_score.unwrap_or(self.settings.min_score);
        Box::pin(async move {
            let leg = query_leg(embedder, &index, &status, &msg.query).await;
            let mode = match leg {
                VectorLeg::None => "fts-only",
                _ => "hybrid",
            };
            let now = crate::now_ms();
            let job = tokio::task::spawn_blocking(move || match index.lock() {
                Ok(idx) => {
                    let mut q = Query::new(&msg.query, now);
                    (q.max, q.min_score, q.private, q.leg) = (max, min_score, msg.private, leg);
                    idx.search(&q)
                }
                Err(_) => Ok(Vec::new()),
            });
            let hits = job.await.unwrap_or_else(|_| Ok(Vec::new()))?;
            let s = status.lock().map(|s| s.clone()).unwrap_or_default();
            Ok(SearchResult {
                hits,
                mode,
                provider: s.provider,
                model: s.model,
                degraded: s.degraded,
            })
        })
    }
}

impl Handler<GetMemoryStatus> for MemoryActor {
    type Result = MessageResult<GetMemoryStatus>;
    fn handle(&mut self, _: GetMemoryStatus, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let mut s = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        if let Ok(idx) = self.index.try_lock() {
            s.chunks = idx.len();
        }
        MessageResult(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env() -> crate::provider::hub::EnvReader {
        Arc::new(|_| None)
    }

    /// A provider that embeds by topic words, or fails, or answers with
    /// other dimensions, as the test says.
    struct Toy {
        mode: Arc<Mutex<&'static str>>,
        calls: Arc<Mutex<usize>>,
    }

    impl Embedder for Toy {
        fn model(&self) -> &str {
            "toy"
        }
        fn embed(
            &self,
            texts: Vec<String>,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<Vec<Vec<f32>>, super::super::provider::EmbedError>,
        > {
            *self.calls.lock().unwrap() += 1;
            let mode = *self.mode.lock().unwrap();
            Box::pin(async move {
                match mode {
                    "fail" => Err(super::super::provider::EmbedError::Http {
                        status: 429,
                        body: "quota".into(),
                    }),
                    "wide" => Ok(texts.iter().map(|_| vec![1.0; 9]).collect()),
                    _ => Ok(texts
                        .iter()
                        .map(|t| {
                            ["tea", "bridge", "plumber"]
                                .iter()
                                .map(|w| if t.contains(w) { 1.0 } else { 0.0 })
                                .chain([0.1])
                                .collect()
                        })
                        .collect()),
                }
            })
        }
    }

    async fn search(addr: &Addr<MemoryActor>, query: &str) -> SearchResult {
        addr.send(SearchMemory {
            query: query.into(),
            max: None,
            min_score: None,
            private: true,
        })
        .await
        .unwrap()
        .unwrap()
    }

    #[actix::test]
    async fn a_failing_provider_degrades_to_keywords_and_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("MEMORY.md"),
            "Project Falcon is a bridge retrofit.\n",
        )
        .unwrap();
        let index = MemoryIndex::open(&dir.path().join("main.sqlite")).unwrap();
        let mode = Arc::new(Mutex::new("ok"));
        let calls = Arc::new(Mutex::new(0));
        let toy = Toy {
            mode: mode.clone(),
            calls: calls.clone(),
        };
        let cfg =
            serde_json::json!({"provider": "toy", "remote": {"baseUrl": "http://127.0.0.1:9"}});
        let settings = MemorySettings::patched(cfg, &no_env());
        let addr = MemoryActor::new(ws, settings, index, Some(Arc::new(toy))).start();
        let mut found = None;
        for _ in 0..100 {
            let r = search(&addr, "which bridge structure").await;
            if r.mode == "hybrid" && !r.hits.is_empty() {
                found = Some(r);
                break;
            }
            actix::clock::sleep(Duration::from_millis(50)).await;
        }
        let r = found.expect("the provider's vectors find a paraphrase");
        assert_eq!((r.provider.as_str(), r.model.as_str()), ("toy", "toy"));
        *mode.lock().unwrap() = "fail";
        let r = search(&addr, "Falcon").await;
        assert_eq!(r.mode, "fts-only");
        assert_eq!(r.hits[0].path, "MEMORY.md", "keywords still answer");
        assert!(r.degraded.unwrap().contains("429"));
        assert!(addr.send(GetMemoryStatus).await.unwrap().degraded.is_some());
        *mode.lock().unwrap() = "wide";
        let r = search(&addr, "Falcon").await;
        assert!(
            r.degraded.unwrap().contains("dimensions"),
            "wrong dimensions"
        );
        *mode.lock().unwrap() = "ok";
        let r = search(&addr, "which bridge structure").await;
        assert_eq!((r.mode, r.degraded), ("hybrid", None));
        assert!(*calls.lock().unwrap() >= 4);
    }

    /// A memory actor on `ws` with the local embedder, its index in `dir`.
    fn local_actor(dir: &std::path::Path, ws: &std::path::Path) -> Addr<MemoryActor> {
        let index = MemoryIndex::open(&dir.join("main.sqlite")).unwrap();
        let settings = MemorySettings::patched(serde_json::Value::Null, &no_env());
        MemoryActor::new(ws.to_path_buf(), settings, index, None).start()
    }

    async fn until_found(addr: &Addr<MemoryActor>, query: &str, path: &str, want: bool) -> bool {
        for _ in 0..500 {
            let hits = search(addr, query).await.hits;
            if hits.iter().any(|h| h.path == path) == want {
                return true;
            }
            actix::clock::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[actix::test]
    async fn the_watcher_picks_up_new_edited_and_deleted_files() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("memory")).unwrap();
        std::fs::write(ws.join("MEMORY.md"), "Ann prefers green tea.\n").unwrap();
        let addr = local_actor(dir.path(), &ws);
        assert!(
            until_found(&addr, "green tea", "MEMORY.md", true).await,
            "the first sweep indexed it"
        );
        std::fs::write(
            ws.join("memory/2026-11-24.md"),
            "The plumber comes on Friday.\n",
        )
        .unwrap();
        assert!(
            until_found(&addr, "plumber Friday", "memory/2026-11-24.md", true).await,
            "a new file"
        );
        std::fs::write(ws.join("MEMORY.md"), "Ann switched to rooibos.\n").unwrap();
        assert!(
            until_found(&addr, "rooibos", "MEMORY.md", true).await,
            "an edit"
        );
        assert!(
            until_found(&addr, "green tea", "MEMORY.md", false).await,
            "the old text is gone"
        );
        std::fs::remove_file(ws.join("memory/2026-11-24.md")).unwrap();
        assert!(
            until_found(&addr, "plumber Friday", "memory/2026-11-24.md", false).await,
            "a deletion"
        );
        let status = until_files(&addr, 1).await;
        assert_eq!(status.files, 1);
        assert!(status.sweeps >= 2);
    }

    /// The status once the last finished sweep saw `files` files: a file is
    /// searchable as soon as it is stored, a moment before its sweep ends.
    async fn until_files(addr: &Addr<MemoryActor>, files: usize) -> MemoryStatus {
        let mut status = addr.send(GetMemoryStatus).await.unwrap();
        for _ in 0..500 {
            if status.files == files {
                break;
            }
            actix::clock::sleep(Duration::from_millis(20)).await;
            status = addr.send(GetMemoryStatus).await.unwrap();
        }
        status
    }

    #[actix::test]
    async fn a_memory_folder_made_later_is_watched_and_the_rest_of_the_workspace_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("repo/src")).unwrap();
        let addr = local_actor(dir.path(), &ws);
        std::fs::create_dir_all(ws.join("memory")).unwrap();
        std::fs::write(ws.join("memory/first.md"), "The boiler code is 4471.\n").unwrap();
        assert!(until_found(&addr, "boiler code", "memory/first.md", true).await);
        // The new folder is watched from the sweep that found it.
        std::fs::write(ws.join("memory/second.md"), "The gate code is 9902.\n").unwrap();
        assert!(until_found(&addr, "gate code", "memory/second.md", true).await);
        // Counted once that sweep has ended, not while it still runs.
        let status = until_files(&addr, 2).await;
        assert_eq!(status.files, 2);
        let sweeps = status.sweeps;
        // Churn elsewhere in the workspace asks for no sweep.
        for i in 0..5 {
            std::fs::write(ws.join(format!("repo/src/f{i}.rs")), "fn main() {}").unwrap();
        }
        actix::clock::sleep(DEBOUNCE * 2).await;
        assert_eq!(addr.send(GetMemoryStatus).await.unwrap().sweeps, sweeps);
    }
}
