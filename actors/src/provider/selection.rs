//! Which model and which credentials a run uses (seeds 000 and 002):
//! `provider/model` refs; the five-level resolution chain (heartbeat ->
//! session -> channel -> agent -> global); API keys from config, then the
//! environment, then `<state dir>/credentials/<provider>`; and auth-profile
//! rotation with the cooldown ladder (1, 5, 25, 60 min; billing 5 h doubling
//! to 24 h), the chosen profile sticking to its session. Pure logic: callers
//! pass the environment and clock in.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use super::ProviderError;

/// `provider/model`; the model part may itself contain `/`
/// (`openrouter/anthropic/claude-3.5-sonnet`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

/// Why no model could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelRefError {
    #[error("model {0:?} is not provider/model")]
    NotProviderModel(String),
    #[error("no model configured")]
    NoneConfigured,
}

impl ModelRef {
    pub fn parse(s: &str) -> Result<ModelRef, ModelRefError> {
        let s = s.trim();
        match s.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(ModelRef {
                provider: p.to_ascii_lowercase(),
                model: m.to_string(),
            }),
            _ => Err(ModelRefError::NotProviderModel(s.to_string())),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Where the chosen model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    Heartbeat,
    Session,
    Channel,
    Agent,
    Global,
}

/// The candidates, highest priority first; `heartbeat` only counts for heartbeat runs.
#[derive(Debug, Clone, Default)]
pub struct ModelChain<'a> {
    pub heartbeat: Option<&'a str>,
    pub session: Option<&'a str>,
    pub channel: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub global: &'a str,
}

/// First match wins; blank entries are skipped.
pub fn resolve_model(
    chain: &ModelChain<'_>,
    is_heartbeat: bool,
) -> Result<(ModelRef, ModelSource), ModelRefError> {
    let candidates = [
        (
            if is_heartbeat { chain.heartbeat } else { None },
            ModelSource::Heartbeat,
        ),
        (chain.session, ModelSource::Session),
        (chain.channel, ModelSource::Channel),
        (chain.agent, ModelSource::Agent),
        (Some(chain.global), ModelSource::Global),
    ];
    let (value, source) = candidates
        .into_iter()
        .find_map(|(v, s)| v.filter(|v| !v.trim().is_empty()).map(|v| (v, s)))
        .ok_or(ModelRefError::NoneConfigured)?;
    Ok((ModelRef::parse(value)?, source))
}

/// Where an API key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Config,
    Env,
    CredentialFile,
}

/// The environment variable for a provider's key: the well-known names,
/// else `<PROVIDER>_API_KEY`.
pub fn env_var_for(provider: &str) -> String {
    match provider {
        "openai" => "OPENAI_API_KEY".into(),
        "anthropic" => "ANTHROPIC_API_KEY".into(),
        "openrouter" => "OPENROUTER_API_KEY".into(),
        "google" | "gemini" => "GEMINI_API_KEY".into(),
        other => format!(
            "{}_API_KEY",
            other.to_ascii_uppercase().replace(['-', '.'], "_")
        ),
    }
}

/// Credential files larger than this are not keys and are skipped.
const MAX_CREDENTIAL_FILE: u64 = 64 * 1024;

/// The keys of `<credentials_dir>/<provider>` files (the key, or JSON
/// `{"apiKey": ...}`), by provider. Blocking: read when the hub's config is
/// built (at start, and off the actors' threads on a config change).
pub fn read_credentials(dir: &Path) -> HashMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            if !meta.is_file() || meta.len() > MAX_CREDENTIAL_FILE {
                return None;
            }
            let provider = e.file_name().into_string().ok()?;
            let text = std::fs::read_to_string(e.path()).ok()?;
            let text = text.trim();
            let key = match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v) => v.get("apiKey")?.as_str()?.to_string(),
                Err(_) => text.to_string(),
            };
            (!key.is_empty()).then_some((provider, key))
        })
        .collect()
}

/// Config, then env, then the provider's credential file (`credentials`,
/// from [`read_credentials`]).
pub fn resolve_api_key(
    provider: &str,
    configured: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    credentials: &HashMap<String, String>,
) -> Option<(String, KeySource)> {
    if let Some(k) = configured.map(str::trim).filter(|k| !k.is_empty()) {
        return Some((k.to_string(), KeySource::Config));
    }
    if let Some(k) = env(&env_var_for(provider)).filter(|k| !k.trim().is_empty()) {
        return Some((k.trim().to_string(), KeySource::Env));
    }
    let key = credentials.get(provider)?;
    Some((key.clone(), KeySource::CredentialFile))
}

/// How long a profile rests after its `failures`-th consecutive failure.
pub fn cooldown(error: &ProviderError, failures: u32) -> Option<Duration> {
    let n = failures.max(1);
    match error {
        ProviderError::Billing(_) => {
            let hours = 5u64.saturating_mul(1u64 << (n - 1).min(10));
            Some(Duration::from_secs(hours.min(24) * 3600))
        }
        ProviderError::RateLimited { .. } | ProviderError::Auth(_) => {
            let minutes = [1u64, 5, 25, 60][(n as usize - 1).min(3)];
            Some(Duration::from_secs(minutes * 60))
        }
        // A bad request or an overflow is about the request, not the
        // profile; an outage or a garbled answer is about the server (the
        // next try fails over or retries, the key stays usable).
        ProviderError::BadRequest(_)
        | ProviderError::ContextOverflow(_)
        | ProviderError::Unavailable(_)
        | ProviderError::Malformed(_) => None,
    }
}

#[derive(Debug, Clone, Default)]
struct ProfileState {
    failures: u32,
    until_ms: u64,
    last_used_ms: u64,
}

/// Auth profiles of one provider, in configured order.
#[derive(Debug, Clone, Default)]
pub struct AuthProfiles {
    order: Vec<String>,
    state: HashMap<String, ProfileState>,
}

impl AuthProfiles {
    pub fn new(order: Vec<String>) -> AuthProfiles {
        AuthProfiles {
            order,
            state: HashMap::new(),
        }
    }

    /// When a cooling-down profile is available again (None: it is now).
    pub fn cooling_until(&self, id: &str, now_ms: u64) -> Option<u64> {
        self.state
            .get(id)
            .map(|s| s.until_ms)
            .filter(|until| *until > now_ms)
    }

    fn available(&self, id: &str, now_ms: u64) -> bool {
        self.state.get(id).is_none_or(|s| s.until_ms <= now_ms)
    }

    /// The session's sticky profile when it is not cooling down, else the
    /// available profile used least recently (configured order breaks ties).
    /// Profiles in `exclude` (already tried by this request) are skipped.
    pub fn pick(
        &mut self,
        sticky: Option<&str>,
        exclude: &[String],
        now_ms: u64,
    ) -> Option<String> {
        let usable = |id: &str| self.available(id, now_ms) && !exclude.iter().any(|e| e == id);
        let chosen = match sticky.filter(|s| self.order.iter().any(|o| o == s) && usable(s)) {
            Some(s) => s.to_string(),
            None => self
                .order
                .iter()
                .filter(|id| usable(id))
                .min_by_key(|id| self.state.get(*id).map(|s| s.last_used_ms).unwrap_or(0))?
                .clone(),
        };
        self.state.entry(chosen.clone()).or_default().last_used_ms = now_ms;
        Some(chosen)
    }

    /// Records a failure; returns the cooldown applied, if any.
    pub fn failed(&mut self, id: &str, error: &ProviderError, now_ms: u64) -> Option<Duration> {
        let st = self.state.entry(id.to_string()).or_default();
        st.failures += 1;
        let d = cooldown(error, st.failures)?;
        st.until_ms = now_ms + d.as_millis() as u64;
        Some(d)
    }

    /// Profiles other than `exclude` that could serve now.
    pub fn available_count(&self, exclude: &[String], now_ms: u64) -> usize {
        self.order
            .iter()
            .filter(|id| self.available(id, now_ms) && !exclude.iter().any(|e| e == *id))
            .count()
    }

    /// When the first cooling profile becomes available again.
    pub fn soonest_back_ms(&self) -> Option<u64> {
        self.order
            .iter()
            .filter_map(|id| self.state.get(id).map(|s| s.until_ms))
            .filter(|t| *t > 0)
            .min()
    }

    pub fn order(&self) -> &[String] {
        &self.order
    }

    pub fn succeeded(&mut self, id: &str) {
        if let Some(st) = self.state.get_mut(id) {
            st.failures = 0;
            st.until_ms = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_refs_keep_slashes_in_the_model_part() {
        let r = ModelRef::parse("openrouter/anthropic/claude-3.5-sonnet").unwrap();
        assert_eq!(
            (r.provider.as_str(), r.model.as_str()),
            ("openrouter", "anthropic/claude-3.5-sonnet")
        );
        assert_eq!(r.to_string(), "openrouter/anthropic/claude-3.5-sonnet");
        assert!(ModelRef::parse("gpt-4o").is_err());
        assert!(ModelRef::parse("/x").is_err());
    }

    #[test]
    fn the_chain_takes_the_first_match_and_heartbeat_only_for_heartbeats() {
        let chain = ModelChain {
            heartbeat: Some("anthropic/claude-haiku"),
            session: None,
            channel: Some("openai/gpt-4o"),
            agent: Some("ollama/llama3"),
            global: "offline/echo",
        };
        let check = |chain: &ModelChain<'_>, hb: bool, want: &str, src: ModelSource| {
            let (r, s) = resolve_model(chain, hb).unwrap();
            assert_eq!((r.to_string().as_str(), s), (want, src));
        };
        check(
            &chain,
            true,
            "anthropic/claude-haiku",
            ModelSource::Heartbeat,
        );
        check(&chain, false, "openai/gpt-4o", ModelSource::Channel);
        let session = ModelChain {
            session: Some("openai/o3"),
            ..chain.clone()
        };
        check(&session, false, "openai/o3", ModelSource::Session);
        let blank = ModelChain {
            channel: Some("  "),
            ..chain.clone()
        };
        check(&blank, false, "ollama/llama3", ModelSource::Agent);
        check(
            &ModelChain {
                global: "offline/echo",
                ..Default::default()
            },
            false,
            "offline/echo",
            ModelSource::Global,
        );
    }

    #[test]
    fn api_keys_come_from_config_then_env_then_the_credential_file() {
        let dir = tempfile::tempdir().unwrap();
        let env = |name: &str| (name == "OPENROUTER_API_KEY").then(|| "env-key".to_string());
        let check = |provider: &str, configured: Option<&str>, want: Option<(&str, KeySource)>| {
            let got = resolve_api_key(provider, configured, &env, &read_credentials(dir.path()));
            assert_eq!(
                got.as_ref().map(|(k, s)| (k.as_str(), *s)),
                want,
                "{provider}"
            );
        };
        check(
            "openrouter",
            Some("cfg-key"),
            Some(("cfg-key", KeySource::Config)),
        );
        check("openrouter", None, Some(("env-key", KeySource::Env)));
        check("anthropic", None, None);
        std::fs::write(dir.path().join("anthropic"), "{\"apiKey\":\"file-key\"}").unwrap();
        std::fs::write(dir.path().join("my-llm"), "plain-key\n").unwrap();
        check(
            "anthropic",
            None,
            Some(("file-key", KeySource::CredentialFile)),
        );
        check(
            "my-llm",
            None,
            Some(("plain-key", KeySource::CredentialFile)),
        );
        assert_eq!(env_var_for("my-llm"), "MY_LLM_API_KEY");
    }

    #[test]
    fn the_cooldown_ladder_matches_openclaw() {
        let rl = ProviderError::RateLimited {
            retry_after_ms: None,
        };
        let mins: Vec<u64> = (1..=5)
            .map(|n| cooldown(&rl, n).unwrap().as_secs() / 60)
            .collect();
        assert_eq!(mins, [1, 5, 25, 60, 60]);
        let billing = ProviderError::Billing("x".into());
        let hours: Vec<u64> = (1..=5)
            .map(|n| cooldown(&billing, n).unwrap().as_secs() / 3600)
            .collect();
        assert_eq!(hours, [5, 10, 20, 24, 24]);
        assert_eq!(cooldown(&ProviderError::BadRequest("x".into()), 1), None);
        assert_eq!(cooldown(&ProviderError::Unavailable("502".into()), 1), None);
    }

    #[test]
    fn profiles_rotate_past_cooling_ones_and_stick_to_the_session() {
        let mut p = AuthProfiles::new(vec!["a".into(), "b".into()]);
        assert_eq!(p.pick(None, &[], 1000).as_deref(), Some("a"));
        assert_eq!(p.pick(Some("a"), &[], 2000).as_deref(), Some("a"), "sticky");
        let rl = ProviderError::RateLimited {
            retry_after_ms: None,
        };
        assert_eq!(p.failed("a", &rl, 3000), Some(Duration::from_secs(60)));
        assert_eq!(
            p.pick(Some("a"), &[], 4000).as_deref(),
            Some("b"),
            "a cools down"
        );
        p.failed("b", &rl, 5000);
        assert_eq!(
            p.pick(None, &[], 6000),
            None,
            "all cooling: fall back to the next model"
        );
        assert_eq!(
            p.pick(Some("a"), &[], 3000 + 60_000).as_deref(),
            Some("a"),
            "a is back"
        );
        assert_eq!(
            p.failed("a", &rl, 70_000),
            Some(Duration::from_secs(300)),
            "second failure: 5 min"
        );
        p.succeeded("a");
        assert_eq!(p.pick(Some("a"), &[], 70_001).as_deref(), Some("a"));
        assert_eq!(
            p.pick(Some("a"), &["a".to_string()], 70_002).as_deref(),
            Some("b"),
            "a was tried by this request; b is back"
        );
        assert_eq!(p.available_count(&["b".to_string()], 70_003), 1);
    }
}
