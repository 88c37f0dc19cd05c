//! `BrowserTools`: the `browser` tool's executor. It answers the tool
//! executor's `ExecuteTool` for `browser`, starts one `BrowserActor` per
//! profile when a call first names it (its directory
//! `<state>/browser/<profile>`, 0700, never the gateway's secrets), and
//! turns a call's answer into the model's: a screenshot stored in the
//! media store and given as an image (to a model that sees images; else
//! its media id). Trust: the browser holds the operator's logins and
//! reaches what the policy lets it, so a turn holding a stranger's message
//! never drives it (`tool::untrusted`: `Never`, refused here too).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::actor::{BrowserActor, Limits};
use super::launch::Launch;
use super::messages::{
    BrowserCall, BrowserReconfigure, BrowserRequest, BrowserState, GetBrowserState,
    GetBrowserStates, GetStatus, ReconfigureBrowser, RetireBrowser, StartBrowser, StopBrowser,
};
use super::policy::Policy;
use super::request::{self, Route};
use super::RequestError;
use crate::media::{MediaConfig, MediaStore, PutMedia};
use crate::provider::Image;
use crate::settings::BrowserSettings;
use crate::tool::{ExecuteTool, ToolOutcome, Workspace};

/// Chromium's names on PATH, in the order looked for.
const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// Why a profile's browser cannot be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("browser.executablePath {0} is not a file")]
    NotAFile(String),
    #[error("no Chromium on PATH (install chromium or set browser.executablePath)")]
    NoChromium,
    #[error("no browser profile {0:?} (action=profiles lists them)")]
    Unknown(String),
    #[error("profile {name}: driver {driver} is OpenClaw's attach driver; ferroclaw only drives its own browser")]
    Driver { name: String, driver: String },
    #[error("browser unavailable: {0}")]
    Unavailable(String),
}

/// The browser the settings name, else the first on PATH.
pub fn executable(
    settings: &BrowserSettings,
    profile: Option<&str>,
) -> Result<PathBuf, ProfileError> {
    let host = crate::host::env();
    let named = profile
        .and_then(|p| settings.profiles.get(p))
        .and_then(|p| p.executable_path.clone())
        .or_else(|| settings.executable_path.clone());
    match named {
        Some(path) => host.which(&path).ok_or(ProfileError::NotAFile(path)),
        None => CANDIDATES
            .iter()
            .find_map(|c| host.which(c))
            .ok_or(ProfileError::NoChromium),
    }
}

/// Why the tool is not offered (None: it is).
pub fn unavailable(settings: &BrowserSettings) -> Option<String> {
    if !settings.enabled {
        return Some("browser.enabled is false".into());
    }
    executable(settings, None).err().map(|e| e.to_string())
}

/// How `name`'s browser starts and what its calls may do under
/// `settings` (profiles under `dir`, downloads in `workspace`).
fn setup(
    s: &BrowserSettings,
    dir: &Path,
    workspace: &Path,
    name: &str,
) -> Result<(Launch, Limits), ProfileError> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let declared = s.profiles.get(name);
    if !valid || (declared.is_none() && name != s.default_profile) {
        return Err(ProfileError::Unknown(name.to_string()));
    }
    if let Some(d) = declared
        .and_then(|p| p.driver.as_deref())
        .filter(|d| !matches!(*d, "openclaw" | "clawd"))
    {
        return Err(ProfileError::Driver {
            name: name.to_string(),
            driver: d.to_string(),
        });
    }
    let launch = Launch {
        executable: executable(s, Some(name))?,
        headless: headless(s, name),
        no_sandbox: s.no_sandbox,
        user_data_dir: dir.join(name),
        extra_args: s.extra_args.clone(),
        deadline: Duration::from_millis(s.start_timeout_ms),
        proxy: None,
        cdp_port: declared.and_then(|p| p.cdp_port).unwrap_or(0),
    };
    let limits = Limits {
        action: Duration::from_millis(s.action_timeout_ms),
        evaluate: s.evaluate_enabled,
        max_response_bytes: s.max_response_mb.saturating_mul(1 << 20),
        screenshot_max_bytes: s.screenshot_max_bytes,
        max_tabs: s.max_tabs,
        downloads: workspace.join(super::downloads::DIR),
        snapshot_efficient: s.snapshot_defaults.mode.as_deref() == Some("efficient"),
    };
    Ok((launch, limits))
}

/// Whether `name`'s browser runs headless: its setting, else
/// `browser.headless`, else when there is no display.
fn headless(s: &BrowserSettings, name: &str) -> bool {
    s.profiles
        .get(name)
        .and_then(|p| p.headless)
        .or(s.headless)
        .unwrap_or_else(|| {
            let host = crate::host::env();
            host.var("DISPLAY").is_none() && host.var("WAYLAND_DISPLAY").is_none()
        })
}

pub struct BrowserTools {
    settings: Arc<BrowserSettings>,
    dir: PathBuf,
    workspace: PathBuf,
    media: Addr<MediaStore>,
    media_config: Arc<MediaConfig>,
    policy: Arc<Policy>,
    profiles: BTreeMap<String, Addr<BrowserActor>>,
}

impl BrowserTools {
    pub fn new(
        settings: &BrowserSettings,
        state_dir: &Path,
        workspace: &Path,
        media: Addr<MediaStore>,
        media_config: Arc<MediaConfig>,
    ) -> BrowserTools {
        BrowserTools {
            policy: Arc::new(Policy::from_settings(&settings.ssrf_policy)),
            settings: Arc::new(settings.clone()),
            dir: state_dir.join("browser"),
            workspace: workspace.to_path_buf(),
            media,
            media_config,
            profiles: BTreeMap::new(),
        }
    }

    /// The profile's actor, started on first use.
    fn profile(&mut self, name: &str) -> Result<Addr<BrowserActor>, ProfileError> {
        if let Some(why) = unavailable(&self.settings) {
            return Err(ProfileError::Unavailable(why));
        }
        if let Some(a) = self.profiles.get(name) {
            return Ok(a.clone());
        }
        let (launch, limits) = setup(&self.settings, &self.dir, &self.workspace, name)?;
        let addr = BrowserActor::new(name, launch, self.policy.clone(), limits).start();
        self.profiles.insert(name.to_string(), addr.clone());
        Ok(addr)
    }

    fn headless(&self, name: &str) -> bool {
        headless(&self.settings, name)
    }

    /// The declared profiles and the default.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.settings.profiles.keys().cloned().collect();
        if !names.contains(&self.settings.default_profile) {
            names.insert(0, self.settings.default_profile.clone());
        }
        names
    }

    /// Every profile's state: a started one asked, the others idle.
    fn states(&self) -> ResponseFuture<Vec<BrowserState>> {
        let names = self.names();
        let started: BTreeMap<String, Addr<BrowserActor>> = self.profiles.clone();
        Box::pin(async move {
            let mut out = Vec::new();
            for n in names
                .iter()
                .chain(started.keys().filter(|k| !names.contains(k)))
            {
                let s = match started.get(n) {
                    Some(a) => a.send(GetBrowserState).await.ok(),
                    None => None,
                };
                out.push(s.unwrap_or_else(|| BrowserState::idle(n)));
            }
            out
        })
    }

    /// `profiles`: the declared profiles and the default, with what runs.
    fn profiles_answer(&self) -> ResponseFuture<Value> {
        let (states, default) = (self.states(), self.settings.default_profile.clone());
        Box::pin(async move { super::reply::profiles_reply(&states.await, &default) })
    }
}

impl BrowserTools {
    /// Where a call's `upload` reads from: the workspace, confined.
    fn call_workspace(&self) -> Workspace {
        Workspace {
            root: self.workspace.clone(),
            only: true,
            untrusted: false,
        }
    }

    /// `GET /`: the profile's state as OpenClaw's status reports it.
    fn status_answer(&self, name: &str) -> ResponseFuture<Result<Value, RequestError>> {
        let addr = self.profiles.get(name).cloned();
        let (enabled, headless) = (self.settings.enabled, self.headless(name));
        let exe = executable(&self.settings, Some(name)).ok();
        let name = name.to_string();
        Box::pin(async move {
            let state = match addr {
                Some(a) => a
                    .send(GetBrowserState)
                    .await
                    .map_err(|_| RequestError::Stopped)?,
                None => BrowserState::idle(&name),
            };
            Ok(request::status(&state, enabled, headless, exe.as_deref()))
        })
    }
}

impl Actor for BrowserTools {
    type Context = Context<Self>;
}

/// New `browser.*` (hot apply), as OpenClaw applies them: a profile no
/// longer configured, or every profile when the browser is disabled, is
/// retired; a changed SSRF policy, `evaluateEnabled` or launch setting
/// closes that profile's Chromium (the next call starts one under the new
/// settings); bounds apply to the next call; the default profile to the
/// next request.
impl Handler<BrowserReconfigure> for BrowserTools {
    type Result = ();
    fn handle(&mut self, msg: BrowserReconfigure, _: &mut Context<Self>) {
        let old = std::mem::replace(&mut self.settings, msg.settings);
        let policy = old.ssrf_policy != self.settings.ssrf_policy;
        if policy {
            self.policy = Arc::new(Policy::from_settings(&self.settings.ssrf_policy));
        }
        let off = unavailable(&self.settings);
        let names: Vec<String> = self.profiles.keys().cloned().collect();
        for name in names {
            let now = setup(&self.settings, &self.dir, &self.workspace, &name);
            let before = setup(&old, &self.dir, &self.workspace, &name).ok();
            let (launch, limits) = match (now, &off) {
                (Ok(now), None) => now,
                (now, _) => {
                    let why = off.clone().or(now.err().map(|e| e.to_string()));
                    tracing::info!(profile = %name, why = ?why, "browser profile retired by new settings");
                    if let Some(a) = self.profiles.remove(&name) {
                        a.do_send(RetireBrowser);
                    }
                    continue;
                }
            };
            let relaunch = policy
                || before.as_ref().is_none_or(|(l, b)| {
                    *l != launch
                        || b.evaluate != limits.evaluate
                        || b.max_response_bytes != limits.max_response_bytes
                });
            if !relaunch && before.as_ref().is_some_and(|(_, b)| *b == limits) {
                continue;
            }
            self.profiles[&name].do_send(ReconfigureBrowser {
                launch,
                limits,
                policy: self.policy.clone(),
                relaunch,
            });
        }
    }
}

impl Handler<GetBrowserStates> for BrowserTools {
    type Result = ResponseFuture<Vec<BrowserState>>;
    fn handle(&mut self, _: GetBrowserStates, _: &mut Context<Self>) -> Self::Result {
        self.states()
    }
}

/// OpenClaw's browser control routes, for the operator (`browser.request`).
impl Handler<BrowserRequest> for BrowserTools {
    type Result = ResponseFuture<Result<Value, RequestError>>;
    fn handle(&mut self, msg: BrowserRequest, ctx: &mut Context<Self>) -> Self::Result {
        let route = match request::route(&msg.method, &msg.path, &msg.query, &msg.body) {
            Ok(r) => r,
            Err(e) => return Box::pin(async move { Err(e.into()) }),
        };
        let name = [&msg.query, &msg.body]
            .iter()
            .find_map(|v| v["profile"].as_str().filter(|p| !p.trim().is_empty()))
            .map_or_else(|| self.settings.default_profile.clone(), str::to_string);
        let addr = match route {
            Route::Status => return self.status_answer(&name),
            Route::Profiles => {
                let listed = self.profiles_answer();
                return Box::pin(async move { Ok(listed.await) });
            }
            Route::Stop if !self.profiles.contains_key(&name) => return self.status_answer(&name),
            _ => match self.profile(&name) {
                Ok(a) => a,
                Err(e) => return Box::pin(async move { Err(e.into()) }),
            },
        };
        let (media, workspace, me) = (self.media.clone(), self.call_workspace(), ctx.address());
        Box::pin(async move {
            let (action, args) = match route {
                Route::Call { action, args } => (action, args),
                Route::Start => {
                    addr.send(StartBrowser)
                        .await
                        .map_err(|_| RequestError::Stopped)??;
                    return me
                        .send(GetStatus { profile: name })
                        .await
                        .map_err(|_| RequestError::Stopped)?;
                }
                _ => {
                    addr.send(StopBrowser)
                        .await
                        .map_err(|_| RequestError::Stopped)?;
                    return me
                        .send(GetStatus { profile: name })
                        .await
                        .map_err(|_| RequestError::Stopped)?;
                }
            };
            let call = BrowserCall {
                action: action.into(),
                args,
                workspace,
            };
            let mut done = addr.send(call).await.map_err(|_| RequestError::Stopped)??;
            let stored = match done.image.take() {
                Some(shot) => Some(store(&media, shot).await?),
                None => None,
            };
            Ok(request::shape(action, done, stored))
        })
    }
}

impl Handler<GetStatus> for BrowserTools {
    type Result = ResponseFuture<Result<Value, RequestError>>;
    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.status_answer(&msg.profile)
    }
}

/// A screenshot the operator asked for, stored; where it is.
async fn store(media: &Addr<MediaStore>, shot: super::Shot) -> Result<String, RequestError> {
    let put = PutMedia {
        bytes: shot.bytes.into(),
        content_type: Some(shot.mime),
        file_name: Some("screenshot".into()),
    };
    match media.send(put).await {
        Ok(Ok(r)) => Ok(r.path.display().to_string()),
        Ok(Err(e)) => Err(RequestError::Media(e.to_string())),
        Err(_) => Err(RequestError::Media("the media store is unavailable".into())),
    }
}

impl Handler<ExecuteTool> for BrowserTools {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        if msg.trust.untrusted {
            return Box::pin(async {
                ToolOutcome::refused(
                    "browser: not available to a turn that holds a stranger's message",
                )
            });
        }
        let args = msg.call.arguments.clone();
        let action = args
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if action == "profiles" {
            let listed = self.profiles_answer();
            return Box::pin(async move { ToolOutcome::ok(listed.await.to_string()) });
        }
        let name = args
            .get("profile")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .map_or_else(|| self.settings.default_profile.clone(), str::to_string);
        let addr = match self.profile(&name) {
            Ok(a) => a,
            Err(e) => return Box::pin(async move { ToolOutcome::error(format!("browser: {e}")) }),
        };
        let workspace = self.call_workspace();
        let span =
            tracing::info_span!("browser_tools", profile = %name, session_key = %msg.session_key);
        let (media, vision) = (
            self.media.clone(),
            self.media_config
                .reply
                .vision(msg.model.as_deref(), &msg.agent_id),
        );
        Box::pin(tracing::Instrument::instrument(
            async move {
                let call = BrowserCall {
                    action: action.clone(),
                    args,
                    workspace,
                };
                match addr.send(call).await {
                    Ok(Ok(done)) => answer(done, &media, vision).await,
                    Ok(Err(e)) => ToolOutcome::error(format!("browser {action}: {e}")),
                    Err(_) => ToolOutcome::error(format!(
                        "browser {action}: the profile's browser stopped"
                    )),
                }
            },
            span,
        ))
    }
}

/// The model's answer: the text, and a screenshot stored and attached.
async fn answer(done: super::Done, media: &Addr<MediaStore>, vision: bool) -> ToolOutcome {
    let Some(shot) = done.image else {
        return ToolOutcome::ok(done.text);
    };
    let put = PutMedia {
        bytes: shot.bytes.into(),
        content_type: Some(shot.mime.clone()),
        file_name: Some("screenshot".into()),
    };
    let stored = match media.send(put).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return ToolOutcome::error(format!("browser screenshot: cannot store it: {e}"))
        }
        Err(_) => return ToolOutcome::error("browser screenshot: the media store is unavailable"),
    };
    let mut out = ToolOutcome::ok(format!("{}\nThe screenshot is media:{} (the user does not see it: send it with message to show it).", done.text, stored.id));
    if vision {
        out.images.push(Image {
            mime_type: stored.content_type.clone(),
            data: String::new(),
            media_id: Some(stored.id.clone()),
        });
    }
    out
}
