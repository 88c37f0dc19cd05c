//! Downloads: Chromium saves every download under the profile's staging
//! directory by its guid (`Browser.setDownloadBehavior` `allowAndName`,
//! set before the browser takes any call), and a task of the running
//! browser follows them (`Browser.downloadWillBegin`/`downloadProgress`):
//! a download whose URL the SSRF policy refuses, one past
//! `browser.maxResponseMb`, or one past `MAX_PENDING` not yet read is
//! cancelled; a finished one is moved into the managed downloads directory
//! (`<workspace>/downloads`) under its suggested name made safe and unique.
//! Calls read the book (`Downloads`) without the actor's mailbox (a call
//! holds it): `download` waits for what its click started,
//! `waitfordownload` for the oldest not yet read (`act` only says how many
//! it started: a download begins after the page answered the click). What the model gets is
//! OpenClaw's `{url, suggestedFilename, path}`. Trust: a download is a
//! stranger's bytes; `read` wraps what it reads under the downloads
//! directory as outside data.

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use chromiumoxide::cdp::browser_protocol::browser::{
    CancelDownloadParams, DownloadProgressState, EventDownloadProgress, EventDownloadWillBegin,
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::Browser;
use futures_util::StreamExt;
use serde::Serialize;

use super::policy::Policy;
use super::BrowserError;

/// The managed downloads directory, inside the workspace (`read` wraps
/// what is under it).
pub use crate::tool::read::DOWNLOADS as DIR;

/// Downloads begun and not yet read by the model that a browser may hold;
/// the next one is cancelled.
pub(super) const MAX_PENDING: usize = 20;
/// Downloads remembered (read ones are forgotten first).
const KEEP: usize = 100;
/// A saved file's name is cut to this many characters.
const MAX_NAME: usize = 120;

/// A saved download, as OpenClaw reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    pub url: String,
    pub suggested_filename: String,
    /// Where it is now (inside the managed downloads directory).
    pub path: String,
}

/// How a download ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ended {
    Saved(Saved),
    Failed {
        url: String,
        suggested_filename: String,
        why: String,
    },
}

impl Ended {
    /// The download as the model reads it in a list.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Ended::Saved(s) => serde_json::to_value(s).unwrap_or_default(),
            Ended::Failed {
                url,
                suggested_filename,
                why,
            } => {
                serde_json::json!({ "url": url, "suggestedFilename": suggested_filename, "error": why })
            }
        }
    }

    pub fn saved(self) -> Result<Saved, BrowserError> {
        match self {
            Ended::Saved(s) => Ok(s),
            Ended::Failed { url, why, .. } => Err(BrowserError::Download { url, why }),
        }
    }
}

struct Entry {
    seq: u64,
    guid: String,
    url: String,
    suggested: String,
    ended: Option<Ended>,
    read: bool,
}

#[derive(Default)]
struct Book {
    seq: u64,
    entries: VecDeque<Entry>,
}

impl Book {
    fn get(&mut self, guid: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.guid == guid)
    }

    fn pending(&self) -> usize {
        self.entries.iter().filter(|e| !e.read).count()
    }

    /// Forgets the oldest entries past `KEEP`, read ones first.
    fn trim(&mut self) {
        while self.entries.len() > KEEP {
            let at = self.entries.iter().position(|e| e.read).unwrap_or(0);
            self.entries.remove(at);
        }
    }
}

/// One running browser's downloads (shared by its watch task and calls).
pub(super) struct Downloads {
    book: Mutex<Book>,
    changed: tokio::sync::watch::Sender<()>,
    /// The managed downloads directory.
    dir: PathBuf,
    staging: PathBuf,
    policy: Arc<Policy>,
    max_bytes: u64,
}

/// Where downloads go and what bounds them.
#[derive(Debug, Clone)]
pub struct DownloadRules {
    /// The managed downloads directory (`<workspace>/downloads`).
    pub dir: PathBuf,
    /// Where Chromium writes them first (in the profile directory).
    pub staging: PathBuf,
    pub max_bytes: u64,
}

/// Sets the browser's download behaviour and starts following its
/// downloads (the task ends with the browser's event streams).
pub(super) async fn follow(
    cdp: Arc<Browser>,
    rules: DownloadRules,
    policy: Arc<Policy>,
) -> Result<Arc<Downloads>, BrowserError> {
    let staging = rules.staging.clone();
    let fresh = async {
        // What a browser killed mid-download left behind.
        let _ = tokio::fs::remove_dir_all(&staging).await;
        crate::fsutil::private_dir(&staging)
    };
    fresh
        .await
        .map_err(|e| BrowserError::Downloads(e.to_string()))?;
    let mut behavior = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::AllowAndName);
    behavior.download_path = Some(staging.to_string_lossy().into_owned());
    behavior.events_enabled = Some(true);
    cdp.execute(behavior).await?;
    let mut begins = cdp.event_listener::<EventDownloadWillBegin>().await?;
    let mut progress = cdp.event_listener::<EventDownloadProgress>().await?;
    let d = Arc::new(Downloads {
        book: Mutex::new(Book::default()),
        changed: tokio::sync::watch::channel(()).0,
        dir: rules.dir,
        staging,
        policy,
        max_bytes: rules.max_bytes,
    });
    let me = d.clone();
    actix::spawn(async move {
        loop {
            // Begins first: the handler hands a download's begin to its
            // listener before its progress, but an unbiased select may
            // take a small download's `Completed` first, find no entry,
            // and drop it (the download then never ended: seen under load).
            let cancel = tokio::select! {
                biased;
                Some(ev) = begins.next() => me.begin(&ev),
                Some(ev) = progress.next() => me.progress(&ev).await,
                else => break,
            };
            if let Some(guid) = cancel {
                let _ = cdp.execute(CancelDownloadParams::new(guid)).await;
            }
        }
    });
    Ok(d)
}

impl Downloads {
    /// Records a download that begins; its guid when it is to be cancelled.
    fn begin(&self, ev: &EventDownloadWillBegin) -> Option<String> {
        let refused = match ev.url.split(':').next().unwrap_or_default() {
            "blob" | "data" => None,
            _ => self.policy.check_url(&ev.url).err().map(|e| e.to_string()),
        };
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let why = refused.map(|r| format!("refused by browser.ssrfPolicy: {r}")).or_else(|| {
            (book.pending() >= MAX_PENDING).then(|| {
                format!("{MAX_PENDING} downloads are waiting to be read: read them with waitfordownload first")
            })
        });
        book.seq += 1;
        let entry = Entry {
            seq: book.seq,
            guid: ev.guid.clone(),
            url: ev.url.clone(),
            suggested: ev.suggested_filename.clone(),
            ended: why.as_ref().map(|why| Ended::Failed {
                url: ev.url.clone(),
                suggested_filename: ev.suggested_filename.clone(),
                why: why.clone(),
            }),
            read: false,
        };
        tracing::info!(url = %entry.url, refused = why.is_some(), "browser download");
        book.entries.push_back(entry);
        book.trim();
        drop(book);
        self.changed.send_replace(());
        why.map(|_| ev.guid.clone())
    }

    /// Follows a download's progress: saves it when it completes; its
    /// guid when it grew past the cap.
    async fn progress(&self, ev: &EventDownloadProgress) -> Option<String> {
        let over = ev.received_bytes > self.max_bytes as f64;
        let (url, suggested) = {
            let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
            let e = book.get(&ev.guid)?;
            if e.ended.is_some() {
                return None;
            }
            (e.url.clone(), e.suggested.clone())
        };
        let failed = |why: String| Ended::Failed {
            url: url.clone(),
            suggested_filename: suggested.clone(),
            why,
        };
        let (ended, cancel) = match ev.state {
            DownloadProgressState::InProgress if over => (
                failed(format!("over browser.maxResponseMb ({} bytes)", self.max_bytes)),
                true,
            ),
            DownloadProgressState::InProgress => return None,
            DownloadProgressState::Canceled => (
                failed("cancelled by the browser (or cut: a response over browser.maxResponseMb is cut)".into()),
                false,
            ),
            DownloadProgressState::Completed => match self.keep(&ev.guid, &suggested).await {
                Ok(path) => (
                    Ended::Saved(Saved {
                        url: url.clone(),
                        suggested_filename: suggested.clone(),
                        path: path.to_string_lossy().into_owned(),
                    }),
                    false,
                ),
                Err(e) => (failed(format!("cannot save it: {e}")), false),
            },
        };
        if !matches!(ended, Ended::Saved(_)) {
            let _ = tokio::fs::remove_file(self.staging.join(&ev.guid)).await;
        }
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = book.get(&ev.guid) {
            e.ended = Some(ended);
        }
        drop(book);
        self.changed.send_replace(());
        cancel.then(|| ev.guid.clone())
    }

    /// Moves a finished download from staging into the downloads directory.
    async fn keep(&self, guid: &str, suggested: &str) -> std::io::Result<PathBuf> {
        let from = self.staging.join(guid);
        let size = tokio::fs::metadata(&from).await?.len();
        if size > self.max_bytes {
            return Err(std::io::Error::other(format!(
                "{size} bytes, over browser.maxResponseMb"
            )));
        }
        tokio::fs::create_dir_all(&self.dir).await?;
        let to = unique(&self.dir, &safe_name(suggested, "download")).await;
        move_file(&from, &to).await?;
        Ok(to)
    }

    /// How many downloads began so far (what begins after is new).
    pub fn mark(&self) -> u64 {
        self.book.lock().unwrap_or_else(|p| p.into_inner()).seq
    }

    /// The first download begun after `since` (None: the oldest not read
    /// yet, else the next to begin), once it ended (now read). Waits until
    /// one ends: the caller bounds it.
    pub async fn next(&self, since: Option<u64>) -> Ended {
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            {
                let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
                let first = book.entries.iter_mut().find(|e| match since {
                    Some(s) => e.seq > s,
                    None => !e.read,
                });
                if let Some(e) = first {
                    if let Some(ended) = e.ended.clone() {
                        e.read = true;
                        return ended;
                    }
                }
            }
            // The sender lives as long as `self`: this only waits.
            let _ = rx.changed().await;
        }
    }

    /// Moves a saved download to `wanted` (a path inside the downloads
    /// directory, as the model names it).
    pub async fn rename(&self, saved: Saved, wanted: &str) -> Result<Saved, BrowserError> {
        let to = self.inside(wanted)?;
        if let Some(parent) = to.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| BrowserError::Downloads(e.to_string()))?;
        }
        move_file(Path::new(&saved.path), &to)
            .await
            .map_err(|e| BrowserError::Downloads(format!("cannot move it to {wanted}: {e}")))?;
        Ok(Saved {
            path: to.to_string_lossy().into_owned(),
            ..saved
        })
    }

    /// Writes `bytes` (a page the browser printed) as a new file named
    /// after `name`.
    pub async fn store(&self, bytes: &[u8], name: &str) -> Result<PathBuf, BrowserError> {
        let write = async {
            tokio::fs::create_dir_all(&self.dir).await?;
            let to = unique(&self.dir, &safe_name(name, "page.pdf")).await;
            tokio::fs::write(&to, bytes).await?;
            Ok::<_, std::io::Error>(to)
        };
        write
            .await
            .map_err(|e| BrowserError::Downloads(e.to_string()))
    }

    /// `wanted` inside the downloads directory: relative (or absolute
    /// under it), no `..`, nothing hidden.
    pub fn inside(&self, wanted: &str) -> Result<PathBuf, BrowserError> {
        let bad = || {
            BrowserError::Args(format!(
                "path {wanted:?}: name a file inside the downloads directory {}",
                self.dir.display()
            ))
        };
        let p = Path::new(wanted.trim());
        let rel = if p.is_absolute() {
            p.strip_prefix(&self.dir).map_err(|_| bad())?
        } else {
            p.strip_prefix("downloads").unwrap_or(p)
        };
        let parts: Vec<&std::ffi::OsStr> = rel
            .components()
            .map(|c| match c {
                Component::Normal(n) if !n.to_string_lossy().starts_with('.') => Ok(n),
                _ => Err(bad()),
            })
            .collect::<Result<_, _>>()?;
        if parts.is_empty() {
            return Err(bad());
        }
        Ok(parts.iter().fold(self.dir.clone(), |p, c| p.join(c)))
    }
}

/// A file name from what a page suggests: its last component, no control
/// characters, not hidden, cut to `MAX_NAME`; `fallback` when nothing is
/// left.
pub(super) fn safe_name(suggested: &str, fallback: &str) -> String {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last
        .chars()
        .map(|c| if c.is_control() || c == ':' { '_' } else { c })
        .collect();
    let clean = clean.trim().trim_start_matches('.').trim();
    let mut out: String = clean.chars().take(MAX_NAME).collect();
    if out.is_empty() {
        out = fallback.to_string();
    }
    out
}

/// `dir/name`, or `dir/stem-N.ext` when that is taken.
async fn unique(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if tokio::fs::symlink_metadata(&first).await.is_err() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, format!(".{e}")),
        _ => (name, String::new()),
    };
    for n in 1.. {
        let p = dir.join(format!("{stem}-{n}{ext}"));
        if tokio::fs::symlink_metadata(&p).await.is_err() {
            return p;
        }
    }
    first
}

/// Renames, or copies and removes across file systems.
async fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if tokio::fs::rename(from, to).await.is_ok() {
        return Ok(());
    }
    tokio::fs::copy(from, to).await?;
    tokio::fs::remove_file(from).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggested_name_is_made_safe() {
        assert_eq!(safe_name("../../etc/passwd", "d"), "passwd");
        assert_eq!(safe_name("..\\evil.exe", "d"), "evil.exe");
        assert_eq!(safe_name(".bashrc", "d"), "bashrc");
        assert_eq!(safe_name("a\nb:c.txt", "d"), "a_b_c.txt");
        assert_eq!(safe_name("  ", "d"), "d");
        assert_eq!(safe_name(&"x".repeat(300), "d").len(), MAX_NAME);
    }
}
