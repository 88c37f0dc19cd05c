//! The durable state of the gateway. This is the only module that touches sled
//! (unmaintained since 2021; keeping it behind one door keeps a swap cheap).
//! Trees and key encoding live here; every value is JSON in a versioned envelope.
//! Invariant: a second process opening the same state dir gets
//! [`StoreError::AlreadyInUse`] within a quarter second (`take_lock`),
//! never a hang.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub mod faults;
pub mod schema;
pub mod snapshot;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Version written into every stored envelope; bump when a value's shape changes.
pub const VALUE_VERSION: u32 = 1;

/// sled's page cache budget. sled 0.34 counts a page by its size on disk
/// and applies evictions only when one of its 256 shards has queued 64
/// accesses, so what it really holds runs well past this figure. Measured
/// (`cargo bench --bench chat` with `FERROCLAW_BENCH_SMAPS=1`): 8 MB kept
/// 4-5 MB more resident after 10,000 runs than 1 MB, at the same runs/s;
/// reads that miss come from the OS page cache.
const CACHE_BYTES: u64 = 1024 * 1024;
/// How long a write no durability point covered waits for its flush: sled's
/// own flusher thread (off, see `open_sled`) had this same default period.
const BACKSTOP: std::time::Duration = std::time::Duration::from_millis(500);

/// The trees of the store. Each maps a string key to a versioned JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// deviceId -> paired device record (keys, approved roles/scopes, tokens).
    Devices,
    /// requestId -> pending pairing request.
    Pairing,
    /// `<method>:<idempotencyKey>` -> cached response.
    Idempotency,
    /// `<session key>\0<time-ordered id>` -> a system event queued for that
    /// session's next trusted turn (`session/system_events.rs`).
    SystemEvents,
    /// Small gateway-wide facts (first start, ...).
    Meta,
    /// `<sessionId>\0<time-ordered id>` -> transcript entry (OpenClaw JSONL line shape).
    Transcripts,
    /// session key -> session entry (sessionId, timestamps).
    Sessions,
    /// runId -> how the run ended (`agent.wait`, also after a restart).
    Runs,
    /// `<session key>\0<time-ordered id>` -> a message the session
    /// acknowledged and has not finished with (`inbox.rs`).
    Inbox,
    /// `<channel>/<account>/<peer>/<message id>` -> an accepted channel
    /// update (its dedupe key; `channels/ledger.rs`).
    ChannelInbound,
    /// `<channel>/<account>` -> the platform cursor to poll from next.
    ChannelCursors,
    /// `<account>\0<idempotency key>` -> a reply chunk to send or sent.
    Outbox,
    /// `<account>\0<platform message id>` -> the outbox key of the chunk
    /// sent as that message (status callbacks find it: `ledger::receipt`).
    OutboxSent,
    /// `<account>\0<dedupe key>` -> an accepted update not yet handed to
    /// its session (`channels/ledger.rs`).
    ChannelDispatch,
    /// `<account>\0<run id>` -> a run whose reply goes to a chat.
    ChannelDeliveries,
    /// `<channel>/<account>/...` -> pairing codes and approved senders
    /// (`channels/access.rs`).
    ChannelAccess,
    /// `<YYYY-MM-DD>\0<run id>` -> the tokens of one run (`usage.rs`).
    Usage,
    /// job id -> a cron job and its scheduler state (`cron/job.rs`).
    CronJobs,
    /// `<job id>\0<time-ordered id>` -> one run of a cron job, recorded
    /// before it starts (`cron/record.rs`).
    CronRuns,
    /// nodeId -> a node that connected with `role: node`: what it said
    /// about itself, its approved and pending command surfaces (`nodes/`).
    Nodes,
    /// `<nodeId>\0<idempotency key>` -> a `node.invoke` sent to the node,
    /// recorded before it is sent, and its answer once it came.
    NodeInvokes,
    /// `cache/<sha256 of a speech request>` -> the media id of its audio;
    /// `run/<run id>` -> the voice a `/tts audio` run owes (`tts/`).
    Speech,
}

impl Tree {
    fn name(self) -> &'static str {
        match self {
            Tree::Devices => "devices",
            Tree::Pairing => "pairing",
            Tree::Idempotency => "idempotency",
            Tree::SystemEvents => "system_events",
            Tree::Meta => "meta",
            Tree::Transcripts => "transcripts",
            Tree::Sessions => "sessions",
            Tree::Runs => "runs",
            Tree::Inbox => "inbox",
            Tree::ChannelInbound => "channel_inbound",
            Tree::ChannelCursors => "channel_cursors",
            Tree::Outbox => "outbox",
            Tree::OutboxSent => "outbox_sent",
            Tree::ChannelDispatch => "channel_dispatch",
            Tree::ChannelDeliveries => "channel_deliveries",
            Tree::ChannelAccess => "channel_access",
            Tree::Usage => "usage",
            Tree::CronJobs => "cron_jobs",
            Tree::CronRuns => "cron_runs",
            Tree::Nodes => "nodes",
            Tree::NodeInvokes => "node_invokes",
            Tree::Speech => "speech",
        }
    }
    const ALL: [Tree; 22] = [
        Tree::Devices,
        Tree::Pairing,
        Tree::Idempotency,
        Tree::SystemEvents,
        Tree::Meta,
        Tree::Transcripts,
        Tree::Sessions,
        Tree::Runs,
        Tree::Inbox,
        Tree::ChannelInbound,
        Tree::ChannelCursors,
        Tree::Outbox,
        Tree::OutboxSent,
        Tree::ChannelDispatch,
        Tree::ChannelDeliveries,
        Tree::ChannelAccess,
        Tree::Usage,
        Tree::CronJobs,
        Tree::CronRuns,
        Tree::Nodes,
        Tree::NodeInvokes,
        Tree::Speech,
    ];
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state dir {dir} is already in use by another ferroclaw process")]
    AlreadyInUse { dir: PathBuf },
    #[error("cannot open state dir {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("store error: {0}")]
    Sled(#[from] sled::Error),
    #[error("stored value at {tree}/{key} is unreadable: {message}")]
    Corrupt {
        tree: &'static str,
        key: String,
        message: String,
    },
    #[error(
        "stored value at {tree}/{key} has version {found}, newer than this build ({VALUE_VERSION})"
    )]
    TooNew {
        tree: &'static str,
        key: String,
        found: u32,
    },
    #[error("cannot encode value: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("state dir {dir} was written by ferroclaw {by} (store schema {found}); this build reads schema {supported} and older: run that version or newer, or restore a backup made for this one (nothing in it was changed)", supported = schema::SCHEMA_VERSION)]
    NewerState {
        dir: PathBuf,
        found: u32,
        by: String,
    },
}

#[derive(Serialize)]
struct EnvelopeOut<'a, T> {
    v: u32,
    data: &'a T,
}

#[derive(Deserialize)]
struct EnvelopeIn<T> {
    v: u32,
    data: T,
}

/// A page of `scan_page`: entries in key order, and the key to continue after.
pub type Page<T> = (Vec<(String, T)>, Option<String>);

/// One write of a `Store::commit`: a key of a tree and its new value (None: removed).
pub type StoreWrite = (Tree, String, Option<serde_json::Value>);

/// Handle to the store. Cheap to clone; all clones share one sled database
/// and the lock on the state dir, which is released when the last clone drops.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// What the store did since it opened (`/metrics`, the turn bench).
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Write operations: puts, batches, removes and transactions.
    pub writes: AtomicU64,
    /// Bytes of values encoded for those writes.
    pub bytes_written: AtomicU64,
    /// Flushes sled did, and the bytes it wrote out for them.
    pub flushes: AtomicU64,
    pub bytes_flushed: AtomicU64,
    /// Durability points answered without a flush of their own: covered by
    /// a flush that began after their writes (group commit), or with
    /// nothing written since the last flush.
    pub flushes_shared: AtomicU64,
}

impl StoreStats {
    fn wrote(&self, bytes: usize) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

struct Inner {
    db: sled::Db,
    faults: faults::Faults,
    stats: Arc<StoreStats>,
    /// One flush at a time (see `flush`).
    flush_lock: tokio::sync::Mutex<()>,
    /// Writes landed so far, and how many of them the last finished flush
    /// covered: a caller whose writes are covered needs no flush.
    landed: AtomicU64,
    durable: AtomicU64,
    /// A backstop flush is on its way (see `flush_soon`).
    backstop: AtomicBool,
    trees: Vec<sled::Tree>,
    /// The gate writes hold, and a running snapshot's journal.
    journal: snapshot::Journal,
    dir: PathBuf,
    _lock: File,
}

/// A write ready for sled: (tree index, key, its enveloped bytes or None:
/// remove).
type Encoded<'a> = (usize, &'a [u8], Option<Vec<u8>>);

fn encoded(writes: &[StoreWrite]) -> Result<Vec<Encoded<'_>>, StoreError> {
    let mut out = Vec::with_capacity(writes.len());
    for (tree, key, value) in writes {
        let bytes = match value {
            Some(v) => Some(serde_json::to_vec(&EnvelopeOut {
                v: VALUE_VERSION,
                data: v,
            })?),
            None => None,
        };
        out.push((*tree as usize, key.as_bytes(), bytes));
    }
    Ok(out)
}

impl Store {
    /// Opens (creating if needed) the store under `state_dir/store`.
    pub fn open(state_dir: &Path) -> Result<Store, StoreError> {
        let io = |source| StoreError::Io {
            dir: state_dir.to_path_buf(),
            source,
        };
        crate::fsutil::private_dir(state_dir).map_err(io)?;
        let lock = crate::fsutil::private_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(state_dir.join("ferroclaw.lock"))
            .map_err(io)?;
        take_lock(&lock, state_dir).map_err(|e| match e {
            None => StoreError::AlreadyInUse {
                dir: state_dir.to_path_buf(),
            },
            Some(e) => io(e),
        })?;
        let db = open_sled(&state_dir.join("store"))?;
        // sled creates its files with the process's umask: made private
        // here (the state dir around them is 0700 from its creation).
        crate::fsutil::make_private(&state_dir.join("store")).map_err(io)?;
        let trees = Tree::ALL
            .iter()
            .map(|t| db.open_tree(t.name()))
            .collect::<Result<Vec<_>, _>>()?;
        let store = Store {
            inner: Arc::new(Inner {
                db,
                faults: faults::Faults::default(),
                stats: Arc::default(),
                flush_lock: tokio::sync::Mutex::new(()),
                landed: AtomicU64::new(0),
                durable: AtomicU64::new(0),
                backstop: AtomicBool::new(false),
                trees,
                journal: Default::default(),
                dir: state_dir.to_path_buf(),
                _lock: lock,
            }),
        };
        schema::check(&store)?;
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The store's counters (shared: they go on counting).
    pub fn stats(&self) -> Arc<StoreStats> {
        self.inner.stats.clone()
    }

    /// Faults a test injects (the next writes or flushes fail).
    pub fn faults(&self) -> &faults::Faults {
        &self.inner.faults
    }

    fn writable(&self) -> Result<(), StoreError> {
        match self.inner.faults.write_fails() {
            true => Err(StoreError::Io {
                dir: self.inner.dir.clone(),
                source: faults::injected("write"),
            }),
            false => Ok(()),
        }
    }

    fn tree(&self, tree: Tree) -> &sled::Tree {
        // Tree::ALL order is the index order; the vector is built from it.
        &self.inner.trees[tree as usize]
    }

    pub fn get<T: DeserializeOwned>(&self, tree: Tree, key: &str) -> Result<Option<T>, StoreError> {
        match self.tree(tree).get(key.as_bytes())? {
            None => Ok(None),
            Some(bytes) => decode(tree, key, &bytes).map(Some),
        }
    }

    pub fn put<T: Serialize>(&self, tree: Tree, key: &str, value: &T) -> Result<(), StoreError> {
        self.writable()?;
        let bytes = serde_json::to_vec(&EnvelopeOut {
            v: VALUE_VERSION,
            data: value,
        })?;
        self.inner.stats.wrote(bytes.len());
        let write = self.inner.journal.enter();
        self.tree(tree).insert(key.as_bytes(), bytes.as_slice())?;
        write.note(tree, key, Some(&bytes));
        self.landed();
        Ok(())
    }

    /// Writes several entries of one tree atomically (all or none).
    pub fn put_batch<T: Serialize>(
        &self,
        tree: Tree,
        items: &[(String, T)],
    ) -> Result<(), StoreError> {
        self.writable()?;
        let mut batch = sled::Batch::default();
        let mut encoded = Vec::with_capacity(items.len());
        for (key, value) in items {
            let bytes = serde_json::to_vec(&EnvelopeOut {
                v: VALUE_VERSION,
                data: value,
            })?;
            batch.insert(key.as_bytes(), bytes.as_slice());
            encoded.push((key, bytes));
        }
        self.inner
            .stats
            .wrote(encoded.iter().map(|(_, b)| b.len()).sum());
        let write = self.inner.journal.enter();
        self.tree(tree).apply_batch(batch)?;
        for (key, bytes) in &encoded {
            write.note(tree, key, Some(bytes));
        }
        self.landed();
        Ok(())
    }

    /// Removes a key; true when it existed.
    pub fn remove(&self, tree: Tree, key: &str) -> Result<bool, StoreError> {
        self.writable()?;
        self.inner.stats.wrote(0);
        let write = self.inner.journal.enter();
        let existed = self.tree(tree).remove(key.as_bytes())?.is_some();
        write.note(tree, key, None);
        self.landed();
        Ok(existed)
    }

    /// Every entry of a tree whose key starts with `prefix`, in key order.
    pub fn scan<T: DeserializeOwned>(
        &self,
        tree: Tree,
        prefix: &str,
    ) -> Result<Vec<(String, T)>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(tree).scan_prefix(prefix.as_bytes()) {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let value = decode(tree, &key, &v)?;
            out.push((key, value));
        }
        Ok(out)
    }

    /// Every entry of a tree with a key in `from..to`, in key order.
    pub fn scan_range<T: DeserializeOwned>(
        &self,
        tree: Tree,
        from: &str,
        to: &str,
    ) -> Result<Vec<(String, T)>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(tree).range(from.as_bytes()..to.as_bytes()) {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            out.push((key.clone(), decode(tree, &key, &v)?));
        }
        Ok(out)
    }

    /// One page of `scan`: the entries after `after` (a key a previous page
    /// ended on; None: from the start), until about `max_bytes` of stored
    /// values (always at least one entry). Returns the page and, when more
    /// entries follow, the key to continue after.
    pub fn scan_page<T: DeserializeOwned>(
        &self,
        tree: Tree,
        prefix: &str,
        after: Option<&str>,
        max_bytes: usize,
    ) -> Result<Page<T>, StoreError> {
        use std::ops::Bound;
        let start = match after {
            Some(k) if k.starts_with(prefix) => Bound::Excluded(k.as_bytes().to_vec()),
            _ => Bound::Included(prefix.as_bytes().to_vec()),
        };
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for item in self
            .tree(tree)
            .range::<Vec<u8>, _>((start, Bound::Unbounded))
        {
            let (k, v) = item?;
            if !k.starts_with(prefix.as_bytes()) {
                return Ok((out, None));
            }
            let key = String::from_utf8_lossy(&k).into_owned();
            if !out.is_empty() && bytes + v.len() > max_bytes {
                let last = out.last().map(|(k, _): &(String, T)| k.clone());
                return Ok((out, last));
            }
            bytes += v.len();
            let value = decode(tree, &key, &v)?;
            out.push((key, value));
        }
        Ok((out, None))
    }

    /// Applies writes to several trees in one transaction: every write
    /// lands or none does (a `None` value removes the key).
    pub fn commit(&self, writes: &[StoreWrite]) -> Result<(), StoreError> {
        use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
        if writes.is_empty() {
            return Ok(());
        }
        self.writable()?;
        let encoded = encoded(writes)?;
        let total = encoded
            .iter()
            .map(|(_, _, b)| b.as_ref().map_or(0, Vec::len))
            .sum();
        self.inner.stats.wrote(total);
        // Only the trees written take part (a transaction over all of them
        // costs every tree's lock).
        let mut used: Vec<usize> = encoded.iter().map(|(t, _, _)| *t).collect();
        used.sort_unstable();
        used.dedup();
        let trees: Vec<sled::Tree> = used.iter().map(|t| self.inner.trees[*t].clone()).collect();
        let encoded: Vec<_> = encoded
            .into_iter()
            .map(|(t, k, v)| (used.iter().position(|u| *u == t).unwrap_or(0), k, v))
            .collect();
        let write = self.inner.journal.enter();
        let done = trees
            .as_slice()
            .transaction(|views| {
                for (tree, key, bytes) in &encoded {
                    match bytes {
                        Some(b) => {
                            views[*tree].insert(*key, b.as_slice())?;
                        }
                        None => {
                            views[*tree].remove(*key)?;
                        }
                    }
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            })
            .map_err(|e| match e {
                TransactionError::Storage(e) => StoreError::Sled(e),
                TransactionError::Abort(()) => {
                    StoreError::Sled(sled::Error::Unsupported("transaction aborted".into()))
                }
            });
        if done.is_ok() {
            for ((tree, key, _), (_, _, bytes)) in writes.iter().zip(&encoded) {
                write.note(*tree, key, bytes.as_deref());
            }
        }
        self.landed();
        done
    }

    /// A write has landed in sled (counted after it, so a flush that reads
    /// the count covers every write it counts).
    fn landed(&self) {
        self.inner.landed.fetch_add(1, Ordering::SeqCst);
        self.flush_soon();
    }

    /// The backstop for writes no durability point follows (settings,
    /// counters): a flush `BACKSTOP` after the first write of a burst, a
    /// timer task on the writer's runtime, so an idle gateway has no flusher
    /// thread waking it. It costs nothing when a turn's own flush already
    /// covered the writes (group commit). Without a runtime (a CLI command)
    /// the store is flushed when it is dropped.
    fn flush_soon(&self) {
        let inner = &self.inner;
        if inner.backstop.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            inner.backstop.store(false, Ordering::SeqCst);
            return;
        };
        let weak = Arc::downgrade(inner);
        rt.spawn(async move {
            tokio::time::sleep(BACKSTOP).await;
            let Some(inner) = weak.upgrade() else {
                return;
            };
            inner.backstop.store(false, Ordering::SeqCst);
            // Not `flush`: a test's injected flush faults are for the
            // durability points it drives, not for this timer to take.
            if let Err(e) = (Store { inner }).flush_now().await {
                tracing::warn!(error = %e, "store backstop flush failed");
            }
        });
    }

    /// Durability point: resolves once everything written so far is on disk.
    ///
    /// Group commit: one flush at a time, and a caller whose writes a flush
    /// has covered (one that began after them, finished while the caller
    /// waited its turn) returns without its own; so concurrent turns share
    /// flushes, and a caller with nothing written since the last flush
    /// costs none.
    ///
    /// Not sled's `flush_async`: it parks sled's own IO threads until the log
    /// is stable, and the buffer writes that make it stable need those same
    /// threads, so concurrent flushes deadlocked the store (seen with 50
    /// parallel chats; stack dump in the issue notes). The synchronous flush
    /// runs on tokio's blocking pool instead.
    pub async fn flush(&self) -> Result<(), StoreError> {
        if self.inner.faults.flush_fails() {
            return Err(StoreError::Io {
                dir: self.inner.dir.clone(),
                source: faults::injected("flush"),
            });
        }
        self.flush_now().await
    }

    /// `flush` without the injected faults.
    async fn flush_now(&self) -> Result<(), StoreError> {
        let inner = &self.inner;
        let dir = inner.dir.clone();
        let mine = inner.landed.load(Ordering::SeqCst);
        let covered = || inner.durable.load(Ordering::SeqCst) >= mine;
        if covered() {
            inner.stats.flushes_shared.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let _one_at_a_time = inner.flush_lock.lock().await;
        if covered() {
            inner.stats.flushes_shared.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // Every write counted now has landed, so this flush covers it.
        let covers = inner.landed.load(Ordering::SeqCst);
        let db = inner.db.clone();
        let flushed = tokio::task::spawn_blocking(move || db.flush())
            .await
            .map_err(|e| StoreError::Io {
                dir,
                source: std::io::Error::other(e.to_string()),
            })??;
        inner.durable.fetch_max(covers, Ordering::SeqCst);
        let stats = &inner.stats;
        stats.flushes.fetch_add(1, Ordering::Relaxed);
        stats
            .bytes_flushed
            .fetch_add(flushed as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Whether a live store (a running gateway) holds the state dir's lock.
pub fn in_use(state_dir: &Path) -> bool {
    std::fs::File::open(state_dir.join("ferroclaw.lock"))
        .is_ok_and(|lock| matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// Opens sled, waiting out a dying handle of this same process.
///
/// Holding `ferroclaw.lock` means no other live store owns the directory,
/// so a refused sled file lock can only be a dropped `Db` of this process
/// whose background threads have not let go yet (sled's own tests block on
/// the same race). It is retried for up to five seconds.
/// Takes the state dir's lock (`Err(None)`: another holder kept it).
/// A process that forks (a tool, a channel's helper) lends the child its
/// descriptors until the child execs, and a lock on a descriptor lives
/// while any copy is open: a lock this process just let go can look held
/// for that moment, so a holder is asked again for a quarter second before
/// it counts (a second gateway still fails at once, by human measure).
fn take_lock(lock: &File, state_dir: &Path) -> Result<(), Option<std::io::Error>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(250);
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::debug!(dir = %state_dir.display(), "state dir lock held");
                return Err(None);
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Some(e)),
        }
    }
}

fn open_sled(path: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let opened = sled::Config::new()
            .path(path)
            .mode(sled::Mode::LowSpace)
            .cache_capacity(CACHE_BYTES)
            // No flusher thread waking every 500 ms: durability points
            // flush explicitly (`Store::flush`), the rest by `flush_soon`.
            .flush_every_ms(None)
            .open();
        match opened {
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return Ok(other?),
        }
    }
}

/// A key part that sorts by creation time within this process and across
/// restarts: milliseconds then a process-wide counter, both fixed-width hex.
pub fn time_ordered_id() -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:016x}{:016x}", crate::now_ms(), seq)
}

/// `<prefix>\0<rest>`: composite keys whose first part is scanned as a prefix.
pub fn composite_key(prefix: &str, rest: &str) -> String {
    format!("{prefix}\0{rest}")
}

fn decode<T: DeserializeOwned>(tree: Tree, key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let env: EnvelopeIn<serde_json::Value> =
        serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
            tree: tree.name(),
            key: key.to_string(),
            message: e.to_string(),
        })?;
    if env.v > VALUE_VERSION {
        return Err(StoreError::TooNew {
            tree: tree.name(),
            key: key.to_string(),
            found: env.v,
        });
    }
    serde_json::from_value(env.data).map_err(|e| StoreError::Corrupt {
        tree: tree.name(),
        key: key.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests;
