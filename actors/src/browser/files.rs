//! The browser's file actions, OpenClaw's names and arguments: `download`
//! (click `ref`, save what it downloads as `path`), `waitfordownload` (the
//! oldest download not read yet, or the next; saved as `path` when given)
//! and `pdf` (the tab printed to a PDF in the downloads directory). A
//! download waits up to `timeoutMs` (default `browser.actionTimeoutMs`,
//! at most two minutes, OpenClaw's download default). Files land in the
//! managed downloads directory (`downloads.rs`).

use std::time::Duration;

use actix::prelude::*;
use chromiumoxide::cdp::browser_protocol::page::PrintToPdfParams;
use serde_json::{json, Value};

use super::actor::BrowserActor;
use super::calls::{failed, str_arg, timed, Answer, Guard};
use super::downloads::{Downloads, Saved};
use super::messages::Done;
use super::BrowserError;

/// OpenClaw's download wait.
const MAX_DOWNLOAD_WAIT: Duration = Duration::from_secs(120);

impl BrowserActor {
    fn downloads(&self) -> Result<std::sync::Arc<Downloads>, BrowserError> {
        self.running
            .as_ref()
            .map(|r| r.downloads.clone())
            .ok_or(BrowserError::Stopping)
    }

    /// A download's bounds: `timeoutMs` when given, else the action's.
    fn download_guard(&self, args: &Value) -> Guard {
        let mut g = self.guard();
        if let Some(ms) = args.get("timeoutMs").and_then(Value::as_u64) {
            g.limit = Duration::from_millis(ms.max(1)).min(MAX_DOWNLOAD_WAIT);
        }
        g
    }

    /// `download`: clicks `ref` and saves the download it starts as `path`.
    pub(super) fn download(&mut self, args: &Value) -> Answer {
        let Some(path) = str_arg(args, "path").map(str::to_string) else {
            return failed(BrowserError::Args("download needs ref and path".into()));
        };
        let click = json!({ "kind": "click", "ref": args.get("ref").cloned().unwrap_or(Value::Null),
            "targetId": args.get("targetId").cloned().unwrap_or(Value::Null) });
        if str_arg(args, "ref").is_none() {
            return failed(BrowserError::Args("download needs ref and path".into()));
        }
        let downloads = match self.downloads() {
            Ok(d) => d,
            Err(e) => return failed(e),
        };
        if let Err(e) = downloads.inside(&path) {
            return failed(e);
        }
        let since = downloads.mark();
        let guard = self.download_guard(args);
        Box::pin(self.act(&click).then(move |clicked, act, _| {
            let fut = async move {
                let target = serde_json::from_str::<Value>(&clicked?.text)
                    .ok()
                    .and_then(|v| v["targetId"].as_str().map(str::to_string));
                let ended = timed(guard, "download", async {
                    Ok(downloads.next(Some(since)).await)
                })
                .await?;
                let saved = downloads.rename(ended.saved()?, &path).await?;
                Ok(saved_answer(target.as_deref(), saved))
            };
            Box::pin(fut.into_actor(act)) as Answer
        }))
    }

    /// `waitfordownload`: the oldest download not read yet, else the next,
    /// once it ended; moved to `path` when given.
    pub(super) fn wait_for_download(&mut self, args: &Value) -> Answer {
        let downloads = match self.downloads() {
            Ok(d) => d,
            Err(e) => return failed(e),
        };
        let path = str_arg(args, "path").map(str::to_string);
        if let Some(Err(e)) = path.as_deref().map(|p| downloads.inside(p)) {
            return failed(e);
        }
        let guard = self.download_guard(args);
        let target = self.tab(args).ok().map(|(h, _)| format!("t{h}"));
        let fut = async move {
            let ended = timed(guard, "waitfordownload", async {
                Ok(downloads.next(None).await)
            })
            .await?;
            let mut saved = ended.saved()?;
            if let Some(p) = path {
                saved = downloads.rename(saved, &p).await?;
            }
            Ok(saved_answer(target.as_deref(), saved))
        };
        Box::pin(fut.into_actor(self))
    }

    /// `pdf`: the tab printed (headless Chromium) into the downloads
    /// directory as `page-<tab>.pdf`.
    pub(super) fn pdf(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let downloads = match self.downloads() {
            Ok(d) => d,
            Err(e) => return failed(e),
        };
        let (guard, cap) = (self.guard(), self.limits.max_response_bytes);
        let fut = async move {
            let (bytes, title) = timed(guard, "pdf", async {
                let params = PrintToPdfParams {
                    print_background: Some(true),
                    ..Default::default()
                };
                let bytes = page.pdf(params).await?;
                let title = page.get_title().await?.unwrap_or_default();
                Ok((bytes, title))
            })
            .await?;
            if bytes.len() as u64 > cap {
                return Err(BrowserError::Downloads(format!(
                    "the PDF is {} bytes, over browser.maxResponseMb ({cap})",
                    bytes.len()
                )));
            }
            // Named by the tab, not the title: the head holds no page text.
            let path = downloads.store(&bytes, &format!("page-t{h}.pdf")).await?;
            let head = json!({ "ok": true, "targetId": format!("t{h}"),
                "path": path.to_string_lossy(), "bytes": bytes.len() });
            Ok(Done::new(head, Some(("the printed page's title", title))))
        };
        Box::pin(fut.into_actor(self))
    }
}

/// A saved download as the model reads it (OpenClaw's metadata; the URL
/// and name come from the page: outside data).
fn saved_answer(target: Option<&str>, saved: Saved) -> Done {
    let head = json!({ "ok": true, "targetId": target });
    let meta = json!({ "url": saved.url, "suggestedFilename": saved.suggested_filename, "path": saved.path });
    Done::new(head, Some(("the browser's download", meta.to_string())))
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
