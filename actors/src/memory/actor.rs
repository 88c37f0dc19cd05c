//! `MemoryActor`: one agent's memory index kept in step with its files. A
//! file watcher (notify, debounced 1.5 s) asks for a sweep when anything
//! under the workspace changes, and a sweep runs every 5 minutes anyway as
//! a backstop for missed events. A sweep reads only files whose mtime
//! changed and re-chunks only those whose content changed; it runs on the
//! blocking pool, one at a time (a request during one runs once more
//! after it). Searches run on the blocking pool too and never index.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, Debouncer};

use super::files;
use super::index::{Hit, IndexError, MemoryIndex};
use super::messages::*;

/// The backstop sweep.
pub const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// File events closer than this become one sweep.
pub const DEBOUNCE: Duration = Duration::from_millis(1500);

pub struct MemoryActor {
    workspace: PathBuf,
    extra: Vec<String>,
    index: Arc<Mutex<MemoryIndex>>,
    status: Arc<Mutex<MemoryStatus>>,
    sweeping: bool,
    again: bool,
    watcher: Option<Debouncer<RecommendedWatcher>>,
}

impl MemoryActor {
    pub fn new(workspace: PathBuf, extra: Vec<String>, index: MemoryIndex) -> MemoryActor {
        MemoryActor {
            workspace,
            extra,
            index: Arc::new(Mutex::new(index)),
            status: Arc::default(),
            sweeping: false,
            again: false,
            watcher: None,
        }
    }

    fn watch(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address();
        let made = new_debouncer(
            DEBOUNCE,
            move |res: notify_debouncer_mini::DebounceEventResult| {
                if res.is_ok_and(|events| !events.is_empty()) {
                    me.do_send(Sweep);
                }
            },
        );
        match made {
            Ok(mut d) => match d.watcher().watch(&self.workspace, RecursiveMode::Recursive) {
                Ok(()) => self.watcher = Some(d),
                Err(e) => {
                    tracing::warn!(error = %e, "memory files not watched: the periodic sweep keeps the index current")
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "memory watcher unavailable: the periodic sweep keeps the index current")
            }
        }
    }
}

/// One sweep (on the blocking pool).
fn sweep(
    workspace: &std::path::Path,
    extra: &[String],
    index: &Mutex<MemoryIndex>,
    status: &Mutex<MemoryStatus>,
) {
    let (found, skipped) = files::collect(workspace, extra);
    let Ok(mut idx) = index.lock() else { return };
    let indexed = match idx.files() {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(error = %e, "memory index unreadable");
            return;
        }
    };
    let (read, gone) = files::changes(&found, &indexed);
    for rel in gone {
        if let Err(e) = idx.remove_file(&rel) {
            tracing::warn!(file = %rel, error = %e, "memory file not removed from the index");
        }
    }
    for f in read {
        match files::read_text(&f.abs) {
            Some(text) => {
                if let Err(e) = idx.sync_file(&f.rel, &text, f.mtime_ms) {
                    tracing::warn!(file = %f.rel, error = %e, "memory file not indexed");
                }
            }
            None => tracing::info!(file = %f.rel, "memory file skipped: not text"),
        }
    }
    if let Ok(mut s) = status.lock() {
        s.chunks = idx.len();
        s.files = found.len();
        s.sweeps += 1;
        s.skipped = skipped.into_iter().map(|k| (k.rel, k.why)).collect();
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

impl Handler<Sweep> for MemoryActor {
    type Result = ();
    fn handle(&mut self, _: Sweep, ctx: &mut Context<Self>) {
        if self.sweeping {
            self.again = true;
            return;
        }
        self.sweeping = true;
        let (ws, extra, index, status) = (
            self.workspace.clone(),
            self.extra.clone(),
            self.index.clone(),
            self.status.clone(),
        );
        let job = tokio::task::spawn_blocking(move || sweep(&ws, &extra, &index, &status));
        ctx.spawn(job.into_actor(self).map(|_, act, ctx| {
            act.sweeping = false;
            if std::mem::take(&mut act.again) {
                ctx.notify(Sweep);
            }
        }));
    }
}

impl Handler<SearchMemory> for MemoryActor {
    type Result = ResponseFuture<Result<Vec<Hit>, IndexError>>;
    fn handle(&mut self, msg: SearchMemory, _: &mut Context<Self>) -> Self::Result {
        let index = self.index.clone();
        Box::pin(async move {
            let now = crate::now_ms();
            let job = tokio::task::spawn_blocking(move || match index.lock() {
                Ok(idx) => {
                    let mut q = super::index::Query::new(&msg.query, now);
                    q.max = msg.max;
                    idx.search(&q)
                }
                Err(_) => Ok(Vec::new()),
            });
            job.await.unwrap_or_else(|_| Ok(Vec::new()))
        })
    }
}

impl Handler<GetMemoryStatus> for MemoryActor {
    type Result = MessageResult<GetMemoryStatus>;
    fn handle(&mut self, _: GetMemoryStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.status.lock().map(|s| s.clone()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn until_found(addr: &Addr<MemoryActor>, query: &str, path: &str, want: bool) -> bool {
        for _ in 0..100 {
            let hits = addr
                .send(SearchMemory {
                    query: query.into(),
                    max: 6,
                })
                .await
                .unwrap()
                .unwrap();
            if hits.iter().any(|h| h.path == path) == want {
                return true;
            }
            actix::clock::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    #[actix::test]
    async fn the_watcher_picks_up_new_edited_and_deleted_files() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("memory")).unwrap();
        std::fs::write(ws.join("MEMORY.md"), "Ann prefers green tea.\n").unwrap();
        let index = MemoryIndex::open(&dir.path().join("main.sqlite")).unwrap();
        let addr = MemoryActor::new(ws.clone(), Vec::new(), index).start();
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
        let status = addr.send(GetMemoryStatus).await.unwrap();
        assert_eq!(status.files, 1);
        assert!(status.sweeps >= 2);
    }
}
