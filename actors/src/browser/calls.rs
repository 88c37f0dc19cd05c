//! The `browser` tool's actions on one profile, OpenClaw's names and
//! arguments: `status`, `start`, `stop`, `tabs`, `open`, `focus`, `close`,
//! `navigate` (with the new page's compact snapshot), `snapshot`, `act`
//! (`act.rs`), `screenshot`, `text`, `console`, `errors`, `dialog`,
//! `upload`. Calls run one at a time per profile (`AtomicResponse`), the
//! browser started first when it is not running, every page action under
//! `browser.actionTimeoutMs`. What a page says (a snapshot, its text, its
//! console) reaches the model as outside data (`trust::wrap`).

use std::time::Duration;

use actix::prelude::*;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, EventFrameNavigated, EventJavascriptDialogOpening,
    HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{EventConsoleApiCalled, EventExceptionThrown};
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::Page;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::actor::BrowserActor;
use super::messages::{BrowserCall, Done, Shot, TabEvent};
use super::snapshot::{flatten, render, Options};
use super::tabs::{Dialog, Log};
use super::BrowserError;

/// OpenClaw's snapshot limits: the full one, the efficient one.
const FULL_MAX_CHARS: usize = 80_000;
const EFFICIENT_MAX_CHARS: usize = 8_000;
/// How long `tabs` waits for one tab's URL and title.
const TAB_READ: Duration = Duration::from_secs(2);
/// `text`'s default and ceiling.
const TEXT_MAX_CHARS: usize = 40_000;

pub(super) type Answer = ResponseActFuture<BrowserActor, Result<Done, BrowserError>>;

pub(super) fn done(d: Done) -> Answer {
    Box::pin(actix::fut::ready(Ok(d)))
}

pub(super) fn failed(e: BrowserError) -> Answer {
    Box::pin(actix::fut::ready(Err(e)))
}

pub(super) fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// What bounds a page action: its deadline, and the browser's end.
#[derive(Clone)]
pub(super) struct Guard {
    pub limit: Duration,
    gone: Option<tokio::sync::watch::Receiver<bool>>,
}

/// Runs `fut` under the action deadline; fails at once if the browser
/// goes away meanwhile.
pub(super) async fn timed<T>(
    guard: Guard,
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    let gone = async move {
        match guard.gone {
            Some(mut rx) => {
                let _ = rx.wait_for(|g| *g).await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        r = tokio::time::timeout(guard.limit, fut) => r.unwrap_or(Err(BrowserError::Timeout {
            action: what,
            ms: guard.limit.as_millis() as u64,
        })),
        _ = gone => Err(BrowserError::Gone),
    }
}

impl BrowserActor {
    pub(super) fn dispatch(
        &mut self,
        action: &str,
        msg: BrowserCall,
        ctx: &mut Context<Self>,
    ) -> Answer {
        let args = &msg.args;
        match action {
            "status" | "start" => {
                self.want();
                done(Done::new(
                    serde_json::to_value(self.state()).unwrap_or_default(),
                    None,
                ))
            }
            "stop" => {
                ctx.address().do_send(super::messages::StopBrowser);
                done(Done::new(
                    json!({ "ok": true, "profile": self.profile, "stopped": true }),
                    None,
                ))
            }
            "tabs" => self.list_tabs(ctx),
            "open" => self.open(str_arg(args, "targetUrl").or(str_arg(args, "url")), ctx),
            "focus" | "close" | "console" | "errors" | "requests" | "dialog" => {
                self.tab_action(action, args)
            }
            "navigate" => self.navigate(args),
            "snapshot" => self.snapshot(args),
            "screenshot" => self.screenshot(args),
            "text" => self.text(args),
            "act" => self.act(args),
            "upload" => self.upload(args, &msg.workspace),
            "download" => self.download(args),
            "waitfordownload" => self.wait_for_download(args),
            "pdf" => self.pdf(args),
            "emulate" => self.emulate(args),
            other => failed(BrowserError::Unsupported(other.to_string())),
        }
    }

    /// The tab a call names (`targetId`), else the current one.
    pub(super) fn tab(&self, args: &Value) -> Result<(u32, Page), BrowserError> {
        let wanted = str_arg(args, "targetId");
        let h = self.tabs.find(wanted).ok_or_else(|| {
            BrowserError::NoTab(
                wanted
                    .unwrap_or("(no tab open: use action=open)")
                    .to_string(),
            )
        })?;
        let page = self
            .tabs
            .get(h)
            .map(|t| t.page.clone())
            .ok_or(BrowserError::NoTab(format!("t{h}")))?;
        Ok((h, page))
    }

    /// The bounds of a page action now.
    pub(super) fn guard(&self) -> Guard {
        Guard {
            limit: self.limits.action,
            gone: self.running.as_ref().map(|r| r.gone.clone()),
        }
    }

    fn cdp(&self) -> Result<std::sync::Arc<chromiumoxide::Browser>, BrowserError> {
        self.running
            .as_ref()
            .map(|r| r.cdp.clone())
            .ok_or(BrowserError::Stopping)
    }

    /// Knows `page` as a tab (listening to its dialogs, console, errors
    /// and navigations) and returns its handle.
    pub(super) fn register(&mut self, page: Page, ctx: &mut Context<Self>) -> u32 {
        let (h, new) = self.tabs.add(page.clone());
        if new {
            listen(h, page, ctx.address());
        }
        h
    }

    fn list_tabs(&mut self, _: &mut Context<Self>) -> Answer {
        let cdp = match self.cdp() {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let limit = self.guard();
        let pages = async move { timed(limit, "tabs", async { Ok(cdp.pages().await?) }).await };
        Box::pin(pages.into_actor(self).then(|pages, act, ctx| {
            let pages = match pages {
                Ok(p) => p,
                Err(e) => return failed(e),
            };
            for p in pages {
                act.register(p, ctx);
            }
            let tabs: Vec<(u32, Page)> = act.tabs.iter().map(|(h, t)| (*h, t.page.clone())).collect();
            let current = act.tabs.current;
            let profile = act.profile.clone();
            // A tab busy with a page that never answers (or a dialog) is
            // listed without its title, not waited for.
            let each = act.guard().limit.min(TAB_READ);
            Box::pin(
                async move {
                    let mut out = Vec::new();
                    for (h, p) in tabs {
                        let read = async {
                            let url = p.url().await.ok().flatten().unwrap_or_default();
                            (url, p.get_title().await.ok().flatten())
                        };
                        let (url, title) = tokio::time::timeout(each, read).await.unwrap_or_default();
                        out.push(json!({ "targetId": format!("t{h}"), "tabId": format!("t{h}"),
                            "cdpTargetId": p.target_id().inner(), "url": url, "busy": title.is_none(),
                            "title": crate::trust::sanitize_markers(&title.unwrap_or_default()), "current": current == Some(h) }));
                    }
                    Ok(Done::new(json!({ "ok": true, "running": true, "profile": profile, "tabs": out }), None))
                }
                .into_actor(act),
            )
        }))
    }

    fn open(&mut self, url: Option<&str>, _: &mut Context<Self>) -> Answer {
        let url = url.unwrap_or("about:blank").to_string();
        if let Err(e) = self.policy.check_url(&url) {
            return failed(e.into());
        }
        let cdp = match self.cdp() {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let limit = self.guard();
        let opening = async move {
            timed(limit, "open", async {
                Ok(cdp.new_page("about:blank").await?)
            })
            .await
        };
        Box::pin(opening.into_actor(self).then(move |page, act, ctx| {
            let page = match page {
                Ok(p) => p,
                Err(e) => return failed(e),
            };
            let h = act.register(page.clone(), ctx);
            act.tabs.current = Some(h);
            act.trim_tabs(h);
            if url == "about:blank" {
                let seen = act.reports.seq();
                return act.loaded(h, page, "open", seen);
            }
            act.go(h, page, url, "open")
        }))
    }

    /// Closes the oldest tabs past `browser.maxTabs` (never `keep`).
    fn trim_tabs(&mut self, keep: u32) {
        while self.tabs.len() > self.limits.max_tabs.max(1) {
            let Some(oldest) = self.tabs.iter().map(|(h, _)| *h).find(|h| *h != keep) else {
                return;
            };
            if let Some(t) = self.tabs.remove(oldest) {
                actix::spawn(async move {
                    let _ = t.page.close().await;
                });
            }
        }
    }

    /// After a page loaded: its final URL checked again (a redirect the
    /// proxy refused shows as the refused URL), then its compact snapshot,
    /// with what the proxy refused or cut since report `seen`.
    fn loaded(&mut self, h: u32, page: Page, what: &'static str, seen: u64) -> Answer {
        let limit = self.guard();
        let policy = self.policy.clone();
        let looked = async move {
            timed(limit, what, async {
                let url = page.url().await?.unwrap_or_default();
                // The page that loaded may be the proxy's refusal (or a
                // redirect's target): its URL is judged as a navigation is.
                if let Ok(u) = reqwest::Url::parse(&url) {
                    if let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default()) {
                        policy.resolve(host, port).await?;
                    }
                }
                let doc = super::cdp::ax_tree(&page, None).await?;
                Ok((url, doc))
            })
            .await
        };
        Box::pin(looked.into_actor(self).map(move |got, act, _| {
            let (url, (loader, nodes)) = got?;
            let proxy = act.reports.since(seen);
            if url.starts_with("chrome-error:") {
                return Err(BrowserError::Refused(if proxy.is_empty() {
                    "the page did not load".into()
                } else {
                    proxy.join("; ")
                }));
            }
            if let Some(host) = reqwest::Url::parse(&url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
            {
                act.policy.check_name(&host)?;
            }
            let o = Options {
                interactive: true,
                compact: true,
                max_chars: EFFICIENT_MAX_CHARS,
                ..Options::default()
            };
            let tab = act
                .tabs
                .get_mut(h)
                .ok_or(BrowserError::NoTab(format!("t{h}")))?;
            tab.refs.reset();
            tab.loader = Some(loader);
            let s = render(&flatten(&nodes), &mut tab.refs, &o);
            let head = json!({ "ok": true, "targetId": format!("t{h}"), "url": url,
                "stats": { "lines": s.lines, "refs": s.refs, "interactive": s.interactive } });
            Ok(Done::new(
                head,
                Some((&format!("browser snapshot of {url}"), s.text)),
            ))
        }))
    }

    fn tab_action(&mut self, action: &str, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let id = format!("t{h}");
        match action {
            "focus" => {
                self.tabs.current = Some(h);
                actix::spawn(async move {
                    let _ = page.bring_to_front().await;
                });
                done(Done::new(json!({ "ok": true, "targetId": id }), None))
            }
            "close" => {
                self.tabs.remove(h);
                actix::spawn(async move {
                    let _ = page.close().await;
                });
                done(Done::new(json!({ "ok": true, "closed": id }), None))
            }
            "console" => self.logs(h, Log::Console, args),
            "errors" => self.logs(h, Log::Errors, args),
            "requests" => self.logs(h, Log::Requests, args),
            _ => self.dialog(h, page, args),
        }
    }

    /// A tab's console, errors or requests (`filter`: lines holding it;
    /// `clear`: emptied after the read).
    fn logs(&mut self, h: u32, log: Log, args: &Value) -> Answer {
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(50) as usize;
        let filter = str_arg(args, "filter").unwrap_or_default().to_lowercase();
        let Some(tab) = self.tabs.get_mut(h) else {
            return failed(BrowserError::NoTab(format!("t{h}")));
        };
        let list = tab.list(log);
        let total = list.len();
        let matching: Vec<&String> = list
            .iter()
            .filter(|l| l.to_lowercase().contains(&filter))
            .collect();
        let mut lines: Vec<String> = matching
            .iter()
            .skip(matching.len().saturating_sub(limit))
            .map(|l| l.to_string())
            .collect();
        if args.get("clear").and_then(Value::as_bool) == Some(true) {
            list.clear();
        }
        if log == Log::Errors {
            lines.extend(self.reports.since(0));
        }
        let head = json!({ "ok": true, "targetId": format!("t{h}"), "total": total, "returned": lines.len() });
        let what = match log {
            Log::Console => "console",
            Log::Errors => "page errors",
            Log::Requests => "requests",
        };
        done(Done::new(
            head,
            Some((&format!("browser {what} of t{h}"), lines.join("\n"))),
        ))
    }

    fn dialog(&mut self, h: u32, page: Page, args: &Value) -> Answer {
        let Some(open) = self.tabs.get_mut(h).and_then(|t| t.dialog.take()) else {
            return failed(BrowserError::NoDialog);
        };
        let mut answer = HandleJavaScriptDialogParams::new(
            args.get("accept").and_then(Value::as_bool).unwrap_or(true),
        );
        answer.prompt_text = str_arg(args, "promptText").map(str::to_string);
        let accepted = answer.accept;
        let limit = self.guard();
        let fut = async move {
            timed(limit, "dialog", async {
                Ok(page.execute(answer).await.map(|_| ())?)
            })
            .await
        };
        Box::pin(fut.into_actor(self).map(move |r, _, _| {
            r?;
            let head = json!({ "ok": true, "targetId": format!("t{h}"), "type": open.kind, "accepted": accepted });
            Ok(Done::new(head, Some(("the page's dialog", open.message))))
        }))
    }

    fn navigate(&mut self, args: &Value) -> Answer {
        let Some(url) = str_arg(args, "targetUrl")
            .or(str_arg(args, "url"))
            .map(str::to_string)
        else {
            return failed(BrowserError::Args("navigate needs targetUrl".into()));
        };
        if let Err(e) = self.policy.check_url(&url) {
            return failed(e.into());
        }
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        self.go(h, page, url, "navigate")
    }

    /// Sends tab `h` to `url`: the loaded page's compact snapshot, or, when
    /// the navigation turned into a download, the saved file (OpenClaw:
    /// such a navigation skips the snapshot).
    fn go(&mut self, h: u32, page: Page, url: String, what: &'static str) -> Answer {
        let downloads = match self.running.as_ref() {
            Some(r) => r.downloads.clone(),
            None => return failed(BrowserError::Stopping),
        };
        let (since, seen) = (downloads.mark(), self.reports.seq());
        let limit = self.guard();
        let p = page.clone();
        let going = async move {
            timed(limit, what, async {
                tokio::select! {
                    r = super::cdp::go(&p, &url) => r.map(|_| None).map_err(BrowserError::from),
                    d = downloads.next(Some(since)) => Ok(Some(d)),
                }
            })
            .await
        };
        Box::pin(going.into_actor(self).then(move |r, act, _| match r {
            Ok(None) => act.loaded(h, page, what, seen),
            // A page the proxy cut never fires its load: say why it stalled.
            // (Every report since: Chromium's own calls home are refused too.)
            Err(BrowserError::Timeout { action, ms }) => match act.reports.since(seen) {
                r if r.is_empty() => failed(BrowserError::Timeout { action, ms }),
                r => failed(BrowserError::Stalled {
                    action,
                    ms,
                    proxy: r.join("; "),
                }),
            },
            Ok(Some(d)) => {
                let head = json!({ "ok": true, "targetId": format!("t{h}"), "download": true });
                done(Done::new(
                    head,
                    Some(("the browser's download", d.json().to_string())),
                ))
            }
            Err(e) => failed(e),
        }))
    }

    fn snapshot(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let o = options(args, self.limits.snapshot_efficient);
        let scope = super::scope::Scope::from_args(args);
        let (limit, labels) = (self.guard(), scope.labels);
        let read = {
            let (page, limit) = (page.clone(), limit.clone());
            async move {
                timed(limit, "snapshot", async {
                    let url = page.url().await?.unwrap_or_default();
                    Ok((url, super::scope::tree(&page, &scope).await?))
                })
                .await
            }
        };
        let rendered = read.into_actor(self).map(move |got, act, _| {
            let (url, (loader, nodes)) = got?;
            let tab = act.tabs.get_mut(h).ok_or(BrowserError::NoTab(format!("t{h}")))?;
            if tab.loader.as_ref() != Some(&loader) {
                tab.refs.reset();
                tab.loader = Some(loader);
            }
            let s = render(&flatten(&nodes), &mut tab.refs, &o);
            let shown = tab.refs.last_shown();
            let head = json!({ "ok": true, "format": if o.aria { "aria" } else { "ai" }, "targetId": format!("t{h}"),
                "url": url, "truncated": s.truncated, "matches": s.matches, "newElements": s.new_elements,
                "stats": { "lines": s.lines, "chars": s.text.chars().count(), "refs": s.refs, "interactive": s.interactive } });
            Ok((Done::new(head, Some((&format!("browser snapshot of {url}"), s.text))), shown))
        });
        Box::pin(rendered.then(
            move |r: Result<(Done, Vec<(u32, i64)>), BrowserError>, act, _| {
                async move {
                    let (mut done, shown) = r?;
                    if labels {
                        let pic = timed(
                            limit,
                            "snapshot labels",
                            super::scope::labelled(&page, &shown),
                        );
                        let (bytes, mime) = pic.await?;
                        done.image = Some(Shot {
                            bytes,
                            mime: mime.to_string(),
                        });
                    }
                    Ok(done)
                }
                .into_actor(act)
            },
        ))
    }

    fn screenshot(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let jpeg = str_arg(args, "type") == Some("jpeg");
        let full = args
            .get("fullPage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let (limit, cap) = (self.guard(), self.limits.screenshot_max_bytes);
        // `labels`: the refs of the tab's last snapshot drawn over the viewport.
        let labels = (args.get("labels").and_then(Value::as_bool) == Some(true)).then(|| {
            self.tabs
                .get(h)
                .map(|t| t.refs.last_shown())
                .unwrap_or_default()
        });
        let fut = async move {
            timed(limit, "screenshot", async {
                let mut shot = match &labels {
                    Some(refs) => super::scope::labelled(&page, refs).await?,
                    None => capture(&page, jpeg, full, 90).await?,
                };
                // Over the cap: JPEG at falling quality, then refused.
                for quality in [70, 40] {
                    if (shot.0.len() as u64) <= cap {
                        break;
                    }
                    shot = capture(&page, true, full, quality).await?;
                }
                if shot.0.len() as u64 > cap {
                    return Err(BrowserError::TooLarge {
                        bytes: shot.0.len() as u64,
                        cap,
                    });
                }
                // The page the picture is of (OpenClaw's `url`).
                let url = page.url().await.ok().flatten().unwrap_or_default();
                Ok((shot, url))
            })
            .await
        };
        Box::pin(fut.into_actor(self).map(move |r, _, _| {
            let ((bytes, mime), url) = r?;
            let url = crate::trust::sanitize_markers(&url);
            let head = json!({ "ok": true, "targetId": format!("t{h}"), "url": url, "type": mime, "bytes": bytes.len() });
            let mut d = Done::new(head, None);
            d.image = Some(Shot { bytes, mime: mime.to_string() });
            Ok(d)
        }))
    }

    fn text(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let max = args
            .get("maxChars")
            .and_then(Value::as_u64)
            .map_or(TEXT_MAX_CHARS, |m| (m as usize).clamp(1, TEXT_MAX_CHARS));
        let selector = str_arg(args, "selector").unwrap_or("").to_string();
        let limit = self.guard();
        let script = format!(
            "(() => {{ const s = {}; const el = (s && document.querySelector(s)) || document.querySelector('article') || document.querySelector('main') || document.body; return {{ url: location.href, text: el ? el.innerText : '' }}; }})()",
            serde_json::to_string(&selector).unwrap_or_default()
        );
        let fut = async move {
            timed(limit, "text", async {
                Ok(super::cdp::evaluate(&page, &script).await?)
            })
            .await
        };
        Box::pin(fut.into_actor(self).map(move |r, _, _| {
            let v = r?;
            let url = v["url"].as_str().unwrap_or_default().to_string();
            let all = v["text"].as_str().unwrap_or_default();
            let text: String = all.chars().take(max).collect();
            let head = json!({ "ok": true, "targetId": format!("t{h}"), "url": url,
                "chars": text.chars().count(), "truncated": all.chars().count() > max });
            Ok(Done::new(head, Some((&format!("the text of {url}"), text))))
        }))
    }
}

/// One capture: PNG or JPEG, the viewport or the whole page.
async fn capture(
    page: &Page,
    jpeg: bool,
    full: bool,
    quality: i64,
) -> Result<(Vec<u8>, &'static str), BrowserError> {
    let mut p = ScreenshotParams::builder().full_page(full);
    p = if jpeg {
        p.format(CaptureScreenshotFormat::Jpeg).quality(quality)
    } else {
        p.format(CaptureScreenshotFormat::Png)
    };
    let bytes = page.screenshot(p.build()).await?;
    Ok((bytes, if jpeg { "image/jpeg" } else { "image/png" }))
}

/// The snapshot options a call asks for (OpenClaw's `snapshotFormat`,
/// `mode`, `interactive`, `compact`, `depth`, `query`, `maxChars`, `urls`).
/// A snapshot's options from the call (`efficient_default`:
/// `browser.snapshotDefaults.mode` is `efficient`, for a call that names
/// no mode and no format).
fn options(args: &Value, efficient_default: bool) -> Options {
    let named = str_arg(args, "mode").is_some() || str_arg(args, "snapshotFormat").is_some();
    let efficient = str_arg(args, "mode") == Some("efficient") || (efficient_default && !named);
    let flag = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
    let default_max = if efficient {
        EFFICIENT_MAX_CHARS
    } else {
        FULL_MAX_CHARS
    };
    Options {
        aria: str_arg(args, "snapshotFormat") == Some("aria"),
        interactive: efficient || flag("interactive"),
        compact: efficient || flag("compact"),
        depth: args
            .get("depth")
            .and_then(Value::as_u64)
            .map(|d| d as usize),
        query: str_arg(args, "query").map(str::to_string),
        max_chars: args
            .get("maxChars")
            .and_then(Value::as_u64)
            .filter(|m| *m > 0)
            .map_or(default_max, |m| (m as usize).min(FULL_MAX_CHARS)),
        urls: flag("urls"),
    }
}

/// The page's dialogs, console, errors and navigations, told to the actor.
fn listen(tab: u32, page: Page, me: Addr<BrowserActor>) {
    let (p, m) = (page.clone(), me.clone());
    actix::spawn(async move {
        let Ok(mut s) = p.event_listener::<EventJavascriptDialogOpening>().await else {
            return;
        };
        while let Some(ev) = s.next().await {
            let dialog = Dialog {
                kind: format!("{:?}", ev.r#type).to_lowercase(),
                message: ev.message.clone(),
            };
            m.do_send(TabEvent::Dialog { tab, dialog });
        }
    });
    listen_logs(tab, &page, &me);
    super::network::listen(tab, &page, &me);
    actix::spawn(async move {
        let Ok(mut s) = page.event_listener::<EventFrameNavigated>().await else {
            return;
        };
        while let Some(ev) = s.next().await {
            if ev.frame.parent_id.is_none() {
                let loader = ev.frame.loader_id.inner().clone();
                me.do_send(TabEvent::Navigated { tab, loader });
            }
        }
    });
}

/// The page's console lines and uncaught errors, told to the actor.
fn listen_logs(tab: u32, page: &Page, me: &Addr<BrowserActor>) {
    let (p, m) = (page.clone(), me.clone());
    actix::spawn(async move {
        let Ok(mut s) = p.event_listener::<EventConsoleApiCalled>().await else {
            return;
        };
        while let Some(ev) = s.next().await {
            let parts: Vec<String> = ev
                .args
                .iter()
                .map(|a| {
                    a.value.as_ref().map_or_else(
                        || a.description.clone().unwrap_or_default(),
                        |v| v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect();
            let line = format!("[{:?}] {}", ev.r#type, parts.join(" ")).to_lowercase();
            m.do_send(TabEvent::Log {
                tab,
                log: Log::Console,
                line,
            });
        }
    });
    let (p, m) = (page.clone(), me.clone());
    actix::spawn(async move {
        let Ok(mut s) = p.event_listener::<EventExceptionThrown>().await else {
            return;
        };
        while let Some(ev) = s.next().await {
            let d = &ev.exception_details;
            let line = d
                .exception
                .as_ref()
                .and_then(|e| e.description.clone())
                .unwrap_or_else(|| d.text.clone());
            m.do_send(TabEvent::Log {
                tab,
                log: Log::Errors,
                line,
            });
        }
    });
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
