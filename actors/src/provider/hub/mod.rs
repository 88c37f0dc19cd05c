//! ProviderHub: the one place that knows which providers exist. It starts a
//! provider actor per provider on first use (configured in
//! `models.providers`, or a built-in: `offline`, `openai`, `anthropic`,
//! `openrouter`, `ollama`), owns each provider's auth profiles and their
//! cooldowns, and answers `RouteRequest` with the actor and the profile (and
//! its key) a model call should use. Runs report each outcome back, which
//! drives the cooldown ladder. The failover walk itself (profiles, then
//! `model.fallbacks`) is `open_stream`, run by each run's own future so the
//! hub never waits on a provider.
//!
//! Profiles follow OpenClaw: secrets in
//! `<state dir>/agents/<agentId>/agent/auth-profiles.json`
//! (`{"profiles": {"openai:work": {"type": "api_key", "provider": "openai",
//! "key": "..."}}}`), order from `auth.order[provider]`, else `auth.profiles`
//! entries for the provider, else the stored ones. A provider with no
//! profile has one implicit `<provider>:default` whose key comes from
//! config, then the environment, then `<state dir>/credentials/<provider>`.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor and its
//! handlers); this file holds its pure state, with unit tests.

mod actor;
mod messages;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::watch;

use crate::provider::selection::{read_credentials, resolve_api_key, AuthProfiles, ModelRef};
use crate::provider::{
    CompletionRequest, CompletionStream, ProviderError, ProviderEvent, StreamCompletion,
};
use crate::settings::Settings;

pub use actor::*;
pub use messages::*;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Offline,
    OpenAiCompletions,
    AnthropicMessages,
}

/// How to reach one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSpec {
    pub api: Api,
    pub base_url: String,
    /// `apiKey` from config (`${VAR}` is read from the environment).
    pub api_key: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub model_compat: BTreeMap<String, Value>,
}

/// Providers usable without any `models.providers` entry.
pub fn builtin(provider: &str) -> Option<ProviderSpec> {
    let (api, base) = match provider {
        "offline" => (Api::Offline, ""),
        "openai" => (Api::OpenAiCompletions, "https://api.openai.com/v1"),
        "anthropic" => (Api::AnthropicMessages, "https://api.anthropic.com"),
        "openrouter" => (Api::OpenAiCompletions, "https://openrouter.ai/api/v1"),
        "ollama" => (Api::OpenAiCompletions, "http://127.0.0.1:11434/v1"),
        _ => return None,
    };
    Some(ProviderSpec {
        api,
        base_url: base.to_string(),
        api_key: None,
        headers: BTreeMap::new(),
        model_compat: BTreeMap::new(),
    })
}

pub use crate::host::EnvReader;

/// Everything the hub reads from config and the state dir.
#[derive(Clone)]
pub struct HubConfig {
    pub providers: BTreeMap<String, ProviderSpec>,
    /// `auth.order`: provider -> profile ids.
    pub order: BTreeMap<String, Vec<String>>,
    /// `auth.profiles`: profile id -> provider (metadata only, no secrets).
    pub configured_profiles: Vec<(String, String)>,
    /// Stored profiles: id -> (provider, key).
    pub stored_profiles: Vec<(String, String, String)>,
    /// Keys from `<state dir>/credentials/<provider>` files, read with the config.
    pub credentials: HashMap<String, String>,
    pub env: EnvReader,
    pub request_timeout: Duration,
    /// What could not be read or resolved (`secrets.reload` counts them):
    /// a profile file that is not JSON or a profile with no key, a
    /// provider key naming an unset `${VAR}`.
    pub warnings: Vec<String>,
}

impl ProviderSpec {
    /// A `models.providers` entry: its API, its base URL (else the built-in
    /// one, else the API's own), key, headers and per-model compat.
    fn of(id: &str, p: &crate::settings::ProviderSettings) -> ProviderSpec {
        let api = match p.api.as_deref() {
            Some("anthropic-messages") => Api::AnthropicMessages,
            Some("offline") => Api::Offline,
            _ => Api::OpenAiCompletions,
        };
        let base = p
            .base_url
            .clone()
            .filter(|b| !b.trim().is_empty())
            .or_else(|| builtin(id).map(|b| b.base_url))
            .unwrap_or_else(|| match api {
                Api::AnthropicMessages => "https://api.anthropic.com".into(),
                _ => "https://api.openai.com/v1".into(),
            });
        ProviderSpec {
            api,
            base_url: base,
            api_key: p.api_key.clone(),
            headers: p.headers.clone().unwrap_or_default(),
            model_compat: p
                .models
                .iter()
                .filter_map(|m| m.compat.clone().map(|c| (m.id.clone(), c)))
                .collect(),
        }
    }
}

impl HubConfig {
    /// From settings and the state dir (`agent_id` picks the profile file).
    pub fn from_settings(
        settings: &Settings,
        state_dir: &Path,
        agent_id: &str,
        env: EnvReader,
    ) -> HubConfig {
        let providers: BTreeMap<String, ProviderSpec> = settings
            .models
            .providers
            .iter()
            .map(|(id, p)| (id.to_ascii_lowercase(), ProviderSpec::of(id, p)))
            .collect();
        let order = settings
            .auth
            .order
            .iter()
            .map(|(p, ids)| (p.to_ascii_lowercase(), ids.clone()))
            .collect();
        let configured_profiles = settings
            .auth
            .profiles
            .iter()
            .filter_map(|(id, p)| Some((id.clone(), p.provider.as_ref()?.to_ascii_lowercase())))
            .collect();
        let file = state_dir
            .join("agents")
            .join(agent_id)
            .join("agent")
            .join("auth-profiles.json");
        let mut warnings = Vec::new();
        let stored_profiles = read_profile_file(&file, &mut warnings);
        for (id, spec) in &providers {
            let var = spec
                .api_key
                .as_deref()
                .map(str::trim)
                .and_then(|k| k.strip_prefix("${")?.strip_suffix('}'));
            if let Some(var) = var.filter(|v| env(v).is_none()) {
                warnings.push(format!(
                    "models.providers.{id}.apiKey names ${{{var}}}, which is not set"
                ));
            }
        }
        HubConfig {
            providers,
            order,
            configured_profiles,
            stored_profiles,
            credentials: read_credentials(&state_dir.join("credentials")),
            env,
            request_timeout: Duration::from_secs(settings.agents.defaults.timeout_seconds.max(1)),
            warnings,
        }
    }

    /// Whether a provider is configured or built in.
    pub fn knows(&self, provider: &str) -> bool {
        self.spec(provider).is_some()
    }

    fn spec(&self, provider: &str) -> Option<ProviderSpec> {
        self.providers
            .get(provider)
            .cloned()
            .or_else(|| builtin(provider))
    }

    /// The provider-level key: config (with `${VAR}`), env, credential file.
    fn provider_key(&self, provider: &str, spec: &ProviderSpec) -> Option<String> {
        let configured = spec.api_key.as_deref().and_then(|k| {
            let k = k.trim();
            match k.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
                Some(var) => (self.env)(var),
                None => Some(k.to_string()),
            }
        });
        let env = |name: &str| (self.env)(name);
        resolve_api_key(provider, configured.as_deref(), &env, &self.credentials).map(|(k, _)| k)
    }

    /// `models.authStatus`: providers and their profiles, without keys.
    pub(super) fn auth_status(&self, also: &[String]) -> Vec<(String, Option<ProviderSpec>)> {
        let mut names: Vec<String> = self.providers.keys().cloned().collect();
        let referenced = self
            .configured_profiles
            .iter()
            .map(|(_, p)| p)
            .chain(self.stored_profiles.iter().map(|(_, p, _)| p))
            .chain(also.iter());
        for p in referenced {
            let p = p.to_ascii_lowercase();
            if !names.contains(&p) {
                names.push(p);
            }
        }
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let spec = self.spec(&n);
                (n, spec)
            })
            .collect()
    }

    /// Profile ids and keys for a provider, in rotation order.
    pub(super) fn profiles(
        &self,
        provider: &str,
        spec: &ProviderSpec,
    ) -> Vec<(String, Option<String>)> {
        let stored: HashMap<&str, &str> = self
            .stored_profiles
            .iter()
            .filter(|(_, p, _)| p == provider)
            .map(|(id, _, k)| (id.as_str(), k.as_str()))
            .collect();
        let mut ids: Vec<String> = match self.order.get(provider) {
            Some(o) if !o.is_empty() => o.clone(),
            _ => {
                let mut ids: Vec<String> = self
                    .configured_profiles
                    .iter()
                    .filter(|(_, p)| p == provider)
                    .map(|(id, _)| id.clone())
                    .collect();
                for (id, p, _) in &self.stored_profiles {
                    if p == provider && !ids.contains(id) {
                        ids.push(id.clone());
                    }
                }
                ids
            }
        };
        if ids.is_empty() {
            ids.push(format!("{provider}:default"));
        }
        let fallback = self.provider_key(provider, spec);
        ids.into_iter()
            .map(|id| {
                let key = stored
                    .get(id.as_str())
                    .map(|k| k.to_string())
                    .or_else(|| fallback.clone());
                (id, key)
            })
            .collect()
    }
}

/// `auth-profiles.json` api-key profiles: (id, provider, key). OAuth
/// profiles are skipped (ferroclaw has no OAuth flows).
fn read_profile_file(path: &Path, warnings: &mut Vec<String>) -> Vec<(String, String, String)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let v: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "auth profiles file is not JSON; ignored");
            warnings.push(format!("{} is not JSON: {e}", path.display()));
            return Vec::new();
        }
    };
    let Some(profiles) = v.get("profiles").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (id, p) in profiles {
        let provider = p.get("provider").and_then(Value::as_str);
        let key = p
            .get("key")
            .or_else(|| p.get("apiKey"))
            .and_then(Value::as_str);
        match (provider, key) {
            (Some(provider), Some(key)) => {
                out.push((id.clone(), provider.to_ascii_lowercase(), key.to_string()))
            }
            // OAuth and token profiles are not api keys: not ferroclaw's to read.
            _ if p.get("type").and_then(Value::as_str) != Some("api_key") => {}
            _ => warnings.push(format!("auth profile {id} has no provider or key")),
        }
    }
    out
}

struct Slot {
    actor: Recipient<StreamCompletion>,
    profiles: AuthProfiles,
    keys: HashMap<String, Option<String>>,
}

#[derive(Clone)]
pub struct Route {
    pub actor: Recipient<StreamCompletion>,
    pub profile: String,
    pub api_key: Option<String>,
    /// Other profiles of this provider that could serve now.
    pub alternatives: usize,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("profile", &self.profile)
            .field("alternatives", &self.alternatives)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error("provider {0:?} is not configured (add models.providers.{0})")]
    Unconfigured(String),
    #[error("provider {0:?} is unavailable")]
    Unavailable(String),
    #[error("every auth profile of {provider} is cooling down (next back in {back_in_s}s)")]
    Cooling { provider: String, back_in_s: u64 },
}

/// A model stream opened by `open_stream`: the first event already read.
pub struct Opened {
    pub model: ModelRef,
    pub profile: String,
    pub first: ProviderEvent,
    pub rest: CompletionStream,
    /// Failed attempts before this one (`model (profile): error`).
    pub failed_attempts: Vec<String>,
}

/// Why no candidate could serve.
#[derive(Debug, Clone, PartialEq)]
pub struct FailoverError {
    pub message: String,
    /// The last provider error, when one was seen.
    pub last: Option<ProviderError>,
}

pub enum OpenOutcome {
    Opened(Box<Opened>),
    Failed(FailoverError),
    Aborted,
}

async fn aborted(abort: &mut watch::Receiver<bool>) {
    while !*abort.borrow() {
        if abort.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Opens a completion: each candidate model in order (primary, then
/// fallbacks), each of its provider's profiles in rotation order, until one
/// produces a first event that is not an error. Errors that are about the
/// request (bad request, context overflow) end the walk at once. Every
/// outcome is reported to the hub so cooldowns apply to other sessions too.
pub async fn open_stream(
    hub: &Addr<ProviderHub>,
    candidates: &[ModelRef],
    sticky: Option<&str>,
    request: &CompletionRequest,
    abort: &mut watch::Receiver<bool>,
) -> OpenOutcome {
    let mut failed = Vec::new();
    let mut last = None;
    for (i, model) in candidates.iter().enumerate() {
        let more_models = i + 1 < candidates.len();
        let mut tried: Vec<String> = Vec::new();
        loop {
            let route = match route_for(hub, model, sticky, &tried).await {
                Ok(r) => r,
                Err(why) => {
                    failed.extend(why);
                    break;
                }
            };
            let error = match attempt(model, &route, request, more_models, abort).await {
                Attempt::First(first, rest) => {
                    report(hub, model, &route, None);
                    return OpenOutcome::Opened(Box::new(Opened {
                        model: model.clone(),
                        profile: route.profile,
                        first,
                        rest,
                        failed_attempts: failed,
                    }));
                }
                Attempt::Aborted => return OpenOutcome::Aborted,
                Attempt::ActorDown => {
                    failed.push(format!("{model}: provider actor unavailable"));
                    break;
                }
                Attempt::Error(e) => e,
            };
            report(hub, model, &route, Some(error.clone()));
            failed.push(format!("{model} ({}): {error}", route.profile));
            let fails_over = error.fails_over();
            last = Some(error);
            if !fails_over {
                let message = failed.join("; ");
                return OpenOutcome::Failed(FailoverError { message, last });
            }
            tried.push(route.profile);
            if route.alternatives == 0 {
                break;
            }
        }
    }
    let message = match failed.len() {
        1 => failed.remove(0),
        _ => format!("all models failed: {}", failed.join("; ")),
    };
    OpenOutcome::Failed(FailoverError { message, last })
}

/// The next profile of `model`'s provider (not one `tried`). Err: why
/// not, when it is news (no profile left after trying some is not).
async fn route_for(
    hub: &Addr<ProviderHub>,
    model: &ModelRef,
    sticky: Option<&str>,
    tried: &[String],
) -> Result<Route, Option<String>> {
    let asked = RouteRequest {
        provider: model.provider.clone(),
        sticky: sticky.map(str::to_string),
        exclude: tried.to_vec(),
    };
    match hub.send(asked).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(tried.is_empty().then(|| format!("{model}: {e}"))),
        Err(_) => Err(Some(format!("{model}: provider hub unavailable"))),
    }
}

/// How one profile's stream began.
enum Attempt {
    /// Its first event, and the rest of the stream.
    First(ProviderEvent, CompletionStream),
    /// The run was aborted while waiting.
    Aborted,
    /// The provider's actor is gone.
    ActorDown,
    /// Its first event was an error (or the stream closed at once).
    Error(ProviderError),
}

/// The request on `route`'s profile, up to its first event.
async fn attempt(
    model: &ModelRef,
    route: &Route,
    request: &CompletionRequest,
    more_models: bool,
    abort: &mut watch::Receiver<bool>,
) -> Attempt {
    let mut req = request.clone();
    req.model = model.model.clone();
    req.api_key = route.api_key.clone();
    // Someone else can take over at once: do not wait out retries here.
    req.max_attempts = (route.alternatives > 0 || more_models).then_some(1);
    let Ok(mut stream) = route.actor.send(StreamCompletion { request: req }).await else {
        return Attempt::ActorDown;
    };
    let first = tokio::select! {
        e = stream.recv() => e,
        _ = aborted(abort) => return Attempt::Aborted,
    };
    match first {
        Some(ProviderEvent::Error(e)) => Attempt::Error(e),
        None => Attempt::Error(ProviderError::Unavailable(
            "the provider closed the stream at once".into(),
        )),
        Some(first) => Attempt::First(first, stream),
    }
}

/// A profile's outcome to the hub: cooldowns apply to every session.
fn report(hub: &Addr<ProviderHub>, model: &ModelRef, route: &Route, error: Option<ProviderError>) {
    hub.do_send(ReportOutcome {
        provider: model.provider.clone(),
        profile: route.profile.clone(),
        error,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ChatMessage;

    fn cfg(env: &[(&str, &str)], stored: &[(&str, &str, &str)]) -> HubConfig {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HubConfig {
            env: std::sync::Arc::new(move |n: &str| env.get(n).cloned()),
            stored_profiles: stored
                .iter()
                .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
                .collect(),
            ..ProviderHub::builtins().config
        }
    }

    #[test]
    fn profiles_come_from_order_then_stored_and_keys_fall_back_to_env() {
        let mut c = cfg(
            &[("OPENAI_API_KEY", "env-key")],
            &[
                ("openai:work", "openai", "k-work"),
                ("openai:home", "openai", "k-home"),
            ],
        );
        let spec = builtin("openai").unwrap();
        assert_eq!(
            c.profiles("openai", &spec),
            [
                ("openai:work".to_string(), Some("k-work".to_string())),
                ("openai:home".to_string(), Some("k-home".to_string()))
            ]
        );
        c.order.insert(
            "openai".into(),
            vec!["openai:home".into(), "openai:env".into()],
        );
        assert_eq!(
            c.profiles("openai", &spec),
            [
                ("openai:home".to_string(), Some("k-home".to_string())),
                ("openai:env".to_string(), Some("env-key".to_string()))
            ],
            "explicit order; a profile without a stored key uses the provider key"
        );
        assert_eq!(
            c.profiles("anthropic", &builtin("anthropic").unwrap()),
            [("anthropic:default".to_string(), None)]
        );
        let with_var = ProviderSpec {
            api_key: Some("${MY_KEY}".into()),
            ..builtin("openai").unwrap()
        };
        let c = cfg(&[("MY_KEY", "from-var")], &[]);
        assert_eq!(
            c.provider_key("openai", &with_var).as_deref(),
            Some("from-var")
        );
    }

    #[test]
    fn the_profile_file_reads_openclaw_api_key_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("auth-profiles.json");
        std::fs::write(
            &f,
            r#"{"version":1,"profiles":{
                "anthropic:default":{"type":"api_key","provider":"anthropic","key":"sk-ant"},
                "google:me@x":{"type":"oauth","provider":"google","access":"a","refresh":"r"}}}"#,
        )
        .unwrap();
        let mut warnings = Vec::new();
        assert_eq!(
            read_profile_file(&f, &mut warnings),
            [(
                "anthropic:default".to_string(),
                "anthropic".to_string(),
                "sk-ant".to_string()
            )]
        );
        // An OAuth profile is not an api key: skipped, not a warning.
        assert!(warnings.is_empty(), "{warnings:?}");
        std::fs::write(
            &f,
            r#"{"profiles":{"x":{"type":"api_key","provider":"openai"}}}"#,
        )
        .unwrap();
        assert!(read_profile_file(&f, &mut warnings).is_empty());
        assert_eq!(warnings, ["auth profile x has no provider or key"]);
        std::fs::write(&f, "not json").unwrap();
        assert!(read_profile_file(&f, &mut warnings).is_empty());
        assert_eq!(warnings.len(), 2);
        assert!(warnings[1].contains("is not JSON"), "{warnings:?}");
    }

    #[actix::test]
    async fn an_unknown_provider_fails_clearly_and_offline_streams() {
        let hub = ProviderHub::builtins().start();
        let (_tx, mut abort) = watch::channel(false);
        let req = CompletionRequest {
            messages: vec![ChatMessage::user("hi").into()],
            ..Default::default()
        };
        let nowhere = [ModelRef::parse("nowhere/x").unwrap()];
        match open_stream(&hub, &nowhere, None, &req, &mut abort).await {
            OpenOutcome::Failed(e) => {
                assert!(e.message.contains("\"nowhere\" is not configured"), "{e:?}")
            }
            _ => panic!("expected a failure"),
        }
        let chain = [
            ModelRef::parse("nowhere/x").unwrap(),
            ModelRef::parse("offline/echo").unwrap(),
        ];
        match open_stream(&hub, &chain, None, &req, &mut abort).await {
            OpenOutcome::Opened(o) => {
                assert_eq!(o.model.to_string(), "offline/echo");
                assert_eq!(o.profile, "offline:default");
                assert_eq!(o.failed_attempts.len(), 1);
                assert!(matches!(o.first, ProviderEvent::TextDelta(_)));
            }
            _ => panic!("the fallback should serve"),
        }
    }

    #[actix::test]
    async fn failing_profiles_cool_down_and_the_fallback_model_serves() {
        let hub = ProviderHub::new(cfg(
            &[],
            &[
                ("offline:a", "offline", "ka"),
                ("offline:b", "offline", "kb"),
            ],
        ))
        .start();
        let (_tx, mut abort) = watch::channel(false);
        let req = CompletionRequest {
            messages: vec![ChatMessage::user("@error rate_limit").into()],
            ..Default::default()
        };
        let chain = [ModelRef::parse("offline/echo").unwrap()];
        match open_stream(&hub, &chain, None, &req, &mut abort).await {
            OpenOutcome::Failed(e) => {
                assert!(
                    e.message.contains("offline:a") && e.message.contains("offline:b"),
                    "{e:?}"
                );
                assert!(matches!(e.last, Some(ProviderError::RateLimited { .. })));
            }
            _ => panic!("both profiles fail"),
        }
        // Both profiles now cool down: the route says so.
        let r = hub
            .send(RouteRequest {
                provider: "offline".into(),
                sticky: None,
                exclude: Vec::new(),
            })
            .await
            .unwrap();
        assert!(
            matches!(r, Err(RouteError::Cooling { back_in_s: 60, .. })),
            "{r:?}"
        );
        // A request error does not fail over.
        let bad = CompletionRequest {
            messages: vec![ChatMessage::user("@error bad_request").into()],
            ..Default::default()
        };
        let hub = ProviderHub::builtins().start();
        let chain = [
            ModelRef::parse("offline/echo").unwrap(),
            ModelRef::parse("offline/other").unwrap(),
        ];
        match open_stream(&hub, &chain, None, &bad, &mut abort).await {
            OpenOutcome::Failed(e) => assert!(!e.message.contains("offline/other"), "{e:?}"),
            _ => panic!("a bad request is final"),
        }
    }
}
