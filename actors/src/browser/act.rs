//! `act`: what the model does on a page by the refs of its last snapshot
//! (OpenClaw's kinds: `click`, `clickCoords`, `type`, `press`,
//! `insertText`, `hover`, `scrollIntoView`, `drag`, `select`, `fill`,
//! `resize`, `wait`,
//! `evaluate` when `browser.evaluateEnabled`, `close`, `batch`), and
//! `upload` (workspace files into a file input). A dialog the action opens
//! ends it at once with the dialog named: answer it with `dialog`.

use std::time::{Duration, Instant};

use actix::prelude::*;
use chromiumoxide::cdp::browser_protocol::page::EventJavascriptDialogOpening;
use chromiumoxide::Page;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::actor::BrowserActor;
use super::calls::{failed, str_arg, timed, Answer, Guard};
use super::cdp;
use super::messages::Done;
use super::settle::Watch;
use super::BrowserError;

/// One act request with its refs resolved to elements.
#[derive(Debug, Clone)]
struct Step {
    kind: String,
    args: Value,
    node: Option<i64>,
    end: Option<i64>,
    fields: Vec<(i64, String)>,
}

impl BrowserActor {
    /// The refs a request names, resolved against the tab's last snapshot.
    fn step(&self, h: u32, req: &Value) -> Result<Step, BrowserError> {
        let refs = &self
            .tabs
            .get(h)
            .ok_or(BrowserError::NoTab(format!("t{h}")))?
            .refs;
        let lookup = |key: &str| -> Result<Option<i64>, BrowserError> {
            match str_arg(req, key) {
                None => Ok(None),
                Some(r) => refs
                    .node(r)
                    .map(Some)
                    .ok_or_else(|| BrowserError::StaleRef(r.to_string())),
            }
        };
        let kind = str_arg(req, "kind").unwrap_or_default().to_string();
        if kind == "evaluate" && !self.limits.evaluate {
            return Err(BrowserError::EvaluateOff);
        }
        let mut fields = Vec::new();
        for f in req
            .get("fields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = str_arg(f, "ref").unwrap_or_default();
            let node = refs
                .node(r)
                .ok_or_else(|| BrowserError::StaleRef(r.to_string()))?;
            let value = f
                .get("value")
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
            fields.push((node, value.unwrap_or_default()));
        }
        Ok(Step {
            node: lookup("ref")?.or(lookup("startRef")?),
            end: lookup("endRef")?,
            fields,
            args: req.clone(),
            kind,
        })
    }

    pub(super) fn act(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let req = args
            .get("request")
            .filter(|r| r.is_object())
            .unwrap_or(args);
        let list: Vec<Value> = match str_arg(req, "kind") {
            Some("batch") => req
                .get("actions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            _ => vec![req.clone()],
        };
        let steps: Result<Vec<Step>, BrowserError> = list.iter().map(|r| self.step(h, r)).collect();
        let steps = match steps {
            Ok(s) if !s.is_empty() => s,
            Ok(_) => {
                return failed(BrowserError::Args(
                    "act needs kind (or batch with actions)".into(),
                ))
            }
            Err(e) => return failed(e),
        };
        let stop_on_error = req
            .get("stopOnError")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let single = steps.len() == 1 && str_arg(req, "kind") != Some("batch");
        let downloads = self.running.as_ref().map(|r| r.downloads.clone());
        let fut = perform(page, steps, stop_on_error, self.guard(), downloads);
        Box::pin(fut.into_actor(self).map(move |r, act, _| {
            let done = r?;
            if done.results.iter().any(|r| r["kind"] == "close") {
                act.tabs.remove(h);
            }
            Ok(done.done(h, single))
        }))
    }

    pub(super) fn upload(&mut self, args: &Value, workspace: &crate::tool::Workspace) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let files = match workspace_files(args, workspace) {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let input = str_arg(args, "inputRef")
            .or(str_arg(args, "ref"))
            .or(str_arg(args, "element"));
        let node = match (
            files.is_empty(),
            input.map(|r| self.tabs.get(h).and_then(|t| t.refs.node(r))),
        ) {
            (true, _) => {
                return failed(BrowserError::Args(
                    "upload needs paths (workspace files)".into(),
                ))
            }
            (_, Some(Some(n))) => n,
            (_, Some(None)) => {
                return failed(BrowserError::StaleRef(input.unwrap_or_default().into()))
            }
            (_, None) => {
                return failed(BrowserError::Args(
                    "upload needs inputRef (the file input's ref)".into(),
                ))
            }
        };
        let limit = self.guard();
        let count = files.len();
        let fut = async move {
            timed(limit, "upload", async {
                Ok(cdp::set_files(&page, node, files).await?)
            })
            .await
        };
        Box::pin(fut.into_actor(self).map(move |r, _, _| {
            r?;
            Ok(Done::new(
                json!({ "ok": true, "targetId": format!("t{h}"), "files": count }),
                None,
            ))
        }))
    }
}

/// What an `act` did.
struct Acted {
    results: Vec<Value>,
    /// Downloads it started (read with waitfordownload: one that begins
    /// after the answer is there too).
    begun: u64,
    /// Where the tab is now, after a navigation the action started.
    url: Option<String>,
}

impl Acted {
    /// The answer: `head` as it is (the operator's routes), and for the
    /// model the same with each script result wrapped as outside data.
    fn done(self, h: u32, single: bool) -> Done {
        let head = self.head(h, single);
        let mut shown = head.clone();
        let wrap = |v: &mut Value| {
            *v = json!(crate::trust::wrap(
                "the page's script result",
                &v.to_string()
            ));
        };
        for r in shown["results"].as_array_mut().into_iter().flatten() {
            if r["kind"] == "evaluate" && r["ok"] == true {
                wrap(&mut r["result"]);
            }
        }
        if let Some(v) = shown.get_mut("result") {
            wrap(v);
        }
        let mut done = Done::new(head, None);
        done.text = shown.to_string();
        done
    }

    fn head(self, h: u32, single: bool) -> Value {
        // One action's value where OpenClaw answers it (`result`).
        let value = self.results[0]["result"].clone();
        let mut head = json!({ "ok": true, "targetId": format!("t{h}"), "results": self.results });
        if single && !value.is_null() {
            head["result"] = value;
        }
        if let Some(url) = self.url {
            head["url"] = json!(crate::trust::sanitize_markers(&url));
        }
        if self.begun > 0 {
            head["downloadsBegun"] = json!(self.begun);
            head["hint"] = json!("waitfordownload saves and reads each");
        }
        head
    }
}

/// The steps, then the navigation they started (`settle.rs`), within the
/// action's deadline.
async fn perform(
    page: Page,
    steps: Vec<Step>,
    stop_on_error: bool,
    limit: Guard,
    downloads: Option<std::sync::Arc<super::downloads::Downloads>>,
) -> Result<Acted, BrowserError> {
    let closes = steps.iter().any(|s| s.kind == "close");
    let since = downloads.as_ref().map(|d| d.mark());
    let began = Instant::now();
    let watch = Watch::new(&page).await.ok();
    let results = run_steps(&page, steps, stop_on_error, limit.clone()).await?;
    let url = match (watch, closes) {
        (Some(w), false) => {
            let left = limit.limit.saturating_sub(began.elapsed());
            let _ = tokio::time::timeout(left, w.settled(&page)).await;
            page.url().await.ok().flatten()
        }
        _ => None,
    };
    let begun = match (downloads, since) {
        (Some(d), Some(since)) => d.mark() - since,
        _ => 0,
    };
    Ok(Acted {
        results,
        begun,
        url,
    })
}

/// `paths` as files inside the turn's workspace.
fn workspace_files(
    args: &Value,
    workspace: &crate::tool::Workspace,
) -> Result<Vec<String>, BrowserError> {
    let paths = args
        .get("paths")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let mut files = Vec::new();
    for p in paths.filter_map(Value::as_str) {
        match crate::tool::confine(workspace, p) {
            Ok(full) if full.is_file() => files.push(full.display().to_string()),
            Ok(_) => {
                return Err(BrowserError::Args(format!(
                    "{p}: not a file in the workspace"
                )))
            }
            Err(e) => return Err(BrowserError::Args(format!("{p}: {e}"))),
        }
    }
    Ok(files)
}

/// Runs the steps in order, each under the deadline and against a dialog.
async fn run_steps(
    page: &Page,
    steps: Vec<Step>,
    stop_on_error: bool,
    limit: Guard,
) -> Result<Vec<Value>, BrowserError> {
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .map_err(|e| BrowserError::Cdp(e.to_string()))?;
    let mut results = Vec::new();
    for s in steps {
        let kind = s.kind.clone();
        let one = timed(limit.clone(), "act", run(page, &s, limit.limit));
        let r = tokio::select! {
            r = one => r,
            Some(d) = dialogs.next() => Err(BrowserError::DialogOpen { message: d.message.clone() }),
        };
        match r {
            Ok(v) => results.push(json!({ "kind": kind, "ok": true, "result": v })),
            Err(e @ BrowserError::DialogOpen { .. }) => return Err(e),
            Err(e) if stop_on_error => return Err(e),
            Err(e) => results.push(json!({ "kind": kind, "ok": false, "error": e.to_string() })),
        }
    }
    Ok(results)
}

fn need(node: Option<i64>) -> Result<i64, BrowserError> {
    node.ok_or_else(|| BrowserError::Args("this act kind needs ref (from a snapshot)".into()))
}

/// One step.
async fn run(page: &Page, s: &Step, limit: Duration) -> Result<Value, BrowserError> {
    let a = &s.args;
    let text = str_arg(a, "text").unwrap_or_default();
    match s.kind.as_str() {
        "click" => {
            let (x, y) = cdp::center(page, need(s.node)?).await?;
            let count = if a.get("doubleClick").and_then(Value::as_bool) == Some(true) {
                2
            } else {
                1
            };
            cdp::click_at(page, x, y, str_arg(a, "button").unwrap_or("left"), count).await?;
        }
        "clickCoords" => {
            let (x, y) = (
                a["x"].as_f64().unwrap_or(0.0),
                a["y"].as_f64().unwrap_or(0.0),
            );
            cdp::click_at(page, x, y, str_arg(a, "button").unwrap_or("left"), 1).await?;
        }
        "hover" => {
            let (x, y) = cdp::center(page, need(s.node)?).await?;
            cdp::move_to(page, x, y).await?;
        }
        "scrollIntoView" => {
            cdp::center(page, need(s.node)?).await?;
        }
        "type" => {
            let node = need(s.node)?;
            cdp::focus(page, node).await?;
            cdp::insert_text(page, text).await?;
            if a.get("submit").and_then(Value::as_bool) == Some(true) {
                cdp::press(page, "Enter").await?;
            }
        }
        "fill" => {
            for (node, value) in &s.fields {
                fill(page, *node, value).await?;
            }
            if let (Some(node), false) = (s.node, text.is_empty()) {
                fill(page, node, text).await?;
            }
        }
        "press" => cdp::press(page, str_arg(a, "key").unwrap_or_default()).await?,
        // Text at the focused element (the Control UI's paste).
        "insertText" => cdp::insert_text(page, text).await?,
        "drag" => {
            let from = cdp::center(page, need(s.node)?).await?;
            let to = cdp::center(page, need(s.end)?).await?;
            cdp::drag(page, from, to).await?;
        }
        "select" => return select(page, need(s.node)?, a).await,
        "wait" => return wait(page, a, limit).await,
        "evaluate" => return evaluate(page, s.node, a).await,
        "resize" => resize(page, a).await?,
        "close" => page.clone().close().await?,
        other => return Err(BrowserError::Unsupported(format!("act kind {other}"))),
    }
    Ok(Value::Null)
}

/// The viewport set to `width` x `height` (at most 4000 each).
async fn resize(page: &Page, a: &Value) -> Result<(), BrowserError> {
    let side = |k: &str, d: i64| a[k].as_i64().unwrap_or(d).clamp(1, 4000);
    let p = chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams::new(
        side("width", 1280),
        side("height", 800),
        1.0,
        false,
    );
    page.execute(p).await?;
    Ok(())
}

/// A field's value replaced as a user would: focus, select all, type.
async fn fill(page: &Page, node: i64, value: &str) -> Result<(), BrowserError> {
    cdp::focus(page, node).await?;
    cdp::call_on(page, node, "function() { if (this.select) this.select(); else if (this.isContentEditable) document.execCommand('selectAll'); }", vec![]).await?;
    if value.is_empty() {
        cdp::press(page, "Backspace").await?;
    } else {
        cdp::insert_text(page, value).await?;
    }
    Ok(())
}

async fn select(page: &Page, node: i64, a: &Value) -> Result<Value, BrowserError> {
    let values: Vec<Value> = a
        .get("values")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let f = "function(wanted) { if (!(this instanceof HTMLSelectElement)) throw new Error('not a select element'); const picked = []; for (const o of this.options) { o.selected = wanted.includes(o.value) || wanted.includes(o.label); if (o.selected) picked.push(o.value); } this.dispatchEvent(new Event('input', { bubbles: true })); this.dispatchEvent(new Event('change', { bubbles: true })); return picked; }";
    Ok(cdp::call_on(page, node, f, vec![Value::Array(values)]).await?)
}

/// `wait`: a time, text to appear or go, a selector, a URL part, a load
/// state; polled until it holds or the deadline passes.
async fn wait(page: &Page, a: &Value, limit: Duration) -> Result<Value, BrowserError> {
    if let Some(ms) = a.get("timeMs").and_then(Value::as_u64) {
        // Waiting is what was asked (bounded by the action's deadline).
        tokio::time::sleep(Duration::from_millis(ms).min(limit)).await;
        return Ok(json!({ "waitedMs": ms }));
    }
    let arg = |k| serde_json::to_string(str_arg(a, k).unwrap_or("")).unwrap_or_default();
    let check = format!(
        "(() => {{ const t = {}, gone = {}, sel = {}, url = {}, load = {}; const body = document.body ? document.body.innerText : ''; return (!t || body.includes(t)) && (!gone || !body.includes(gone)) && (!sel || !!document.querySelector(sel)) && (!url || location.href.includes(url)) && (!load || document.readyState === 'complete' || (load === 'domcontentloaded' && document.readyState !== 'loading')); }})()",
        arg("text"), arg("textGone"), arg("selector"), arg("url"), arg("loadState")
    );
    let started = Instant::now();
    loop {
        if cdp::evaluate(page, &check).await? == json!(true) {
            return Ok(json!({ "waitedMs": started.elapsed().as_millis() as u64 }));
        }
        // A page condition has no event to wait on: polled.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn evaluate(page: &Page, node: Option<i64>, a: &Value) -> Result<Value, BrowserError> {
    let f = str_arg(a, "fn").ok_or_else(|| BrowserError::Args("evaluate needs fn".into()))?;
    let v = match node {
        Some(n) => {
            cdp::call_on(
                page,
                n,
                &format!("function() {{ return ({f})(this); }}"),
                vec![],
            )
            .await?
        }
        None => cdp::evaluate(page, &format!("({f})()")).await?,
    };
    // As it is: the model sees it wrapped (`Acted::done`), the operator not.
    Ok(v)
}
