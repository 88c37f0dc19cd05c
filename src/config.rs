//! Configuration loading, validation and writing. Layers, via the `config`
//! crate: the embedded `config/default.json5` -> the user JSON5 file ->
//! `FERROCLAW_*` env (`__` between levels). Errors name the file (or the env),
//! the key path and what was expected; unknown keys become warnings.
//! Only `main.rs` gathers the env and paths; everything here takes them as
//! arguments so tests build configs directly.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use config::{Config, Environment, File, FileFormat};
use ferroclaw_actors::settings::Settings;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The built-in defaults (the single source of every default).
pub const DEFAULT_JSON5: &str = include_str!("../config/default.json5");

/// The value put in place of secrets in `config.get`; `config.set` restores it.
pub use ferroclaw_actors::secrets::REDACTED;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {message}")]
    Syntax { file: String, message: String },
    #[error("{file}: {path}: {message}")]
    Invalid {
        file: String,
        path: String,
        message: String,
    },
    #[error("cannot read {file}: {message}")]
    Io { file: String, message: String },
}

/// Where the layers come from.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// The user file; it may not exist.
    pub path: PathBuf,
    /// `FERROCLAW_*` variables (already filtered by the caller).
    pub env: Vec<(String, String)>,
    /// `OPENCLAW_GATEWAY_TOKEN`, honoured over the file.
    pub gateway_token: Option<String>,
    /// `OPENCLAW_GATEWAY_PASSWORD`, honoured over the file.
    pub gateway_password: Option<String>,
    /// The token the gateway made in its state dir (`gateway.token`), used
    /// when neither the environment nor the file sets one: a reload after
    /// `config.set` keeps it.
    pub generated_token: Option<String>,
}

/// A loaded, validated configuration and what `config.get` reports about it.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub settings: Arc<Settings>,
    pub sources: ConfigSources,
    pub exists: bool,
    /// The user file's text.
    pub raw: Option<String>,
    /// The user file parsed (no defaults).
    pub parsed: Value,
    /// Effective merged config.
    pub effective: Value,
    /// sha256 hex of the user file's bytes (of "" when it does not exist).
    pub hash: String,
    pub warnings: Vec<String>,
}

pub fn hash_raw(raw: Option<&str>) -> String {
    let digest = Sha256::digest(raw.unwrap_or("").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn syntax(file: &str, e: config::ConfigError) -> ConfigError {
    ConfigError::Syntax {
        file: file.to_string(),
        message: e.to_string(),
    }
}

/// A user's JSON5 text that does not parse: one message with one line and
/// column (the `config` crate's reads "... at line 3 column 3 at line 1
/// column 1").
fn json5_syntax(raw: &str, file: &str) -> Result<(), ConfigError> {
    json5::from_str::<Value>(raw)
        .map(|_| ())
        .map_err(|e| ConfigError::Syntax {
            file: file.to_string(),
            message: e.to_string(),
        })
}

/// Parses one JSON5 text into JSON.
pub fn parse_json5(raw: &str, file: &str) -> Result<Value, ConfigError> {
    json5_syntax(raw, file)?;
    Config::builder()
        .add_source(File::from_str(raw, FileFormat::Json5))
        .build()
        .and_then(|c| c.try_deserialize::<Value>())
        .map_err(|e| syntax(file, e))
}

fn merged(user: Option<&str>, env: &[(String, String)], file: &str) -> Result<Value, ConfigError> {
    let mut builder =
        Config::builder().add_source(File::from_str(DEFAULT_JSON5, FileFormat::Json5));
    if let Some(raw) = user {
        json5_syntax(raw, file)?;
        builder = match crate::config_legacy::tts(raw) {
            Some(json) => builder.add_source(File::from_str(&json, FileFormat::Json5)),
            None => builder.add_source(File::from_str(raw, FileFormat::Json5)),
        };
    }
    if !env.is_empty() {
        let map = env.iter().cloned().collect();
        builder = builder.add_source(
            Environment::with_prefix("FERROCLAW")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .source(Some(map)),
        );
    }
    builder
        .build()
        .and_then(|c| c.try_deserialize::<Value>())
        .map_err(|e| syntax(file, e))
}

/// Deserialises merged JSON into typed settings, with key paths in errors
/// and the unknown keys collected (each with the key it likely meant; an
/// error about a key a typo stands in for names the typo too).
pub fn typed(value: &Value, file: &str) -> Result<(Settings, Vec<String>), ConfigError> {
    let unknown = crate::config_keys::unknown_keys(value);
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(value, &mut track);
    let result: Result<Settings, _> = serde::Deserialize::deserialize(de);
    match result {
        Ok(s) => Ok((s, unknown.iter().map(ToString::to_string).collect())),
        Err(e) => {
            let path = track.path().to_string();
            let mut message = e.to_string();
            // A typo's stand-in: an unknown key beside (or above) the key the
            // error is about, whose likely meaning the error names.
            let hints: Vec<String> = unknown
                .iter()
                .filter(|u| {
                    let parent = u.path.rsplit_once('.').map_or("", |(p, _)| p);
                    parent.is_empty() || path == parent || path.starts_with(&format!("{parent}."))
                })
                .filter_map(|u| {
                    let meant = u.suggestion.as_deref()?;
                    (message.contains(meant) || path.ends_with(meant))
                        .then(|| format!(" ({} is set: did you mean {meant}?)", u.path))
                })
                .collect();
            message.extend(hints);
            Err(ConfigError::Invalid {
                file: file.to_string(),
                path,
                message,
            })
        }
    }
}

/// Checks a user file's text on its own (defaults underneath, no env):
/// the validation `config.set` runs before writing and `config validate` runs.
pub fn check_user_raw(
    raw: &str,
    file: &str,
) -> Result<(Value, Settings, Vec<String>), ConfigError> {
    let (parsed, _, settings, warnings) = check_user(raw, file)?;
    Ok((parsed, settings, warnings))
}

/// `check_user_raw`, with the file merged over the defaults as well.
fn check_user(raw: &str, file: &str) -> Result<(Value, Value, Settings, Vec<String>), ConfigError> {
    let parsed = parse_json5(raw, file)?;
    if !parsed.is_object() {
        return Err(ConfigError::Invalid {
            file: file.to_string(),
            path: ".".to_string(),
            message: "expected a JSON5 object at the top level".to_string(),
        });
    }
    let value = merged(Some(raw), &[], file)?;
    let (settings, warnings) = typed(&value, file)?;
    check_semantics(&settings, file)?;
    Ok((parsed, value, settings, warnings))
}

/// The shortest gateway token or password a start accepts.
pub const MIN_SECRET_CHARS: usize = 16;

/// Why a gateway secret protects nothing, if it does not: a placeholder
/// left by a template (`undefined`, `null`, an unfilled `${VAR}`; OpenClaw
/// #139494), empty, or short enough to guess.
pub fn weak_secret(secret: &str) -> Option<String> {
    let t = secret.trim();
    let placeholder = ["undefined", "null", "none", "changeme", "your-token-here"]
        .iter()
        .any(|p| t.eq_ignore_ascii_case(p))
        || (t.starts_with("${") && t.ends_with('}'));
    if placeholder {
        Some(format!(
            "{t:?} is a placeholder, not a secret (an unset variable?)"
        ))
    } else if t.is_empty() {
        Some("it is empty".into())
    } else if t.chars().count() < MIN_SECRET_CHARS {
        Some(format!("it has {} characters", t.chars().count()))
    } else {
        None
    }
}

fn check_semantics(s: &Settings, file: &str) -> Result<(), ConfigError> {
    let problem = gateway_problem(s)
        .or_else(|| automation_problem(s))
        .or_else(|| {
            ferroclaw_actors::settings::mcp_problems(&s.mcp)
                .into_iter()
                .next()
        })
        .or_else(|| provider_problem(s));
    match problem {
        Some((path, message)) => Err(ConfigError::Invalid {
            file: file.to_string(),
            path,
            message,
        }),
        None => Ok(()),
    }
}

/// A problem: the setting's dotted path, and what is wrong with it.
type Problem = (String, String);

fn problem(path: &str, message: &str) -> Option<Problem> {
    Some((path.to_string(), message.to_string()))
}

/// `gateway.*`: the handshake, tick, payload and in-flight bounds, the
/// shared secrets' strength, auth `none` only on loopback.
fn gateway_problem(s: &Settings) -> Option<Problem> {
    let g = &s.gateway;
    if !(1000..=120_000).contains(&g.handshake_timeout_ms) {
        return problem("gateway.handshakeTimeoutMs", "expected 1000..=120000 ms");
    }
    if g.tick_interval_ms == 0 {
        return problem("gateway.tickIntervalMs", "expected a positive number of ms");
    }
    if g.max_preauth_payload == 0 || g.max_payload < g.max_preauth_payload {
        return problem(
            "gateway.maxPayload",
            "expected maxPayload >= maxPreauthPayload > 0",
        );
    }
    if g.max_in_flight_requests == 0 {
        return problem("gateway.maxInFlightRequests", "expected a positive number");
    }
    for (path, secret) in [
        ("gateway.auth.token", &g.auth.token),
        ("gateway.auth.password", &g.auth.password),
    ] {
        if let Some(why) = secret.as_deref().and_then(weak_secret) {
            return problem(path, &format!(
                "{why}: set at least {MIN_SECRET_CHARS} random characters (`openssl rand -hex 32` makes one), or leave gateway.auth.token unset and ferroclaw makes one in <state dir>/gateway.token"
            ));
        }
    }
    if g.auth.mode == ferroclaw_actors::settings::AuthMode::None && !binds_loopback(s) {
        return problem(
            "gateway.auth.mode",
            "\"none\" is only allowed with gateway.bind \"loopback\" (set gateway.auth.token or bind loopback)",
        );
    }
    None
}

/// The heartbeat, context pruning and the channels' keys, as their own
/// checks word it (`path: message`).
fn automation_problem(s: &Settings) -> Option<Problem> {
    use ferroclaw_actors::{compaction::PruneSettings, cron::beat::HeartbeatConfig};
    let defaults = &s.agents.defaults;
    let bad = HeartbeatConfig::from_settings(&defaults.heartbeat)
        .err()
        .or_else(|| PruneSettings::from_settings(&defaults.context_pruning).err());
    if let Some(b) = bad {
        return problem(&b.key, &b.problem);
    }
    let e = ferroclaw_actors::channels::check_keys(s).err()?.to_string();
    let path = e.split(':').next().unwrap_or("channels");
    let message = e.split_once(": ").map_or(e.as_str(), |(_, m)| m);
    problem(path, message)
}

/// Each provider's `api` is one ferroclaw speaks.
fn provider_problem(s: &Settings) -> Option<Problem> {
    s.models.providers.iter().find_map(|(id, p)| {
        let api = p.api.as_ref()?;
        if matches!(
            api.as_str(),
            "openai-completions" | "anthropic-messages" | "offline" | "openai-responses"
        ) {
            return None;
        }
        problem(
            &format!("models.providers.{id}.api"),
            &format!("expected \"openai-completions\" or \"anthropic-messages\", got {api:?}"),
        )
    })
}

/// True when the configured bind address is a loopback address.
pub fn binds_loopback(s: &Settings) -> bool {
    let host = match s.gateway.bind.as_str() {
        "loopback" | "localhost" => return true,
        "custom" => s.gateway.host.as_deref().unwrap_or(""),
        other => other,
    };
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Loads every layer. Errors name the layer at fault.
pub fn load(sources: &ConfigSources) -> Result<LoadedConfig, ConfigError> {
    let file = sources.path.display().to_string();
    let raw = match std::fs::read_to_string(&sources.path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(ConfigError::Io {
                file,
                message: e.to_string(),
            })
        }
    };
    let (parsed, mut warnings, checked) = match &raw {
        Some(r) => {
            let (parsed, value, settings, w) = check_user(r, &file)?;
            (parsed, w, Some((value, settings)))
        }
        None => (Value::Object(Default::default()), Vec::new(), None),
    };
    // Nothing over the file: the file's own check is the effective config
    // (read and typed once, not again as the environment's layer).
    let nothing_over = sources.env.is_empty()
        && sources.gateway_token.is_none()
        && sources.gateway_password.is_none();
    let (effective, mut settings, env_warnings) = match checked {
        Some((value, settings)) if nothing_over => (value, settings, Vec::new()),
        _ => effective(raw.as_deref(), sources)?,
    };
    if settings.gateway.auth.token.is_none() {
        settings.gateway.auth.token = sources.generated_token.clone();
    }
    for w in env_warnings {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    Ok(LoadedConfig {
        settings: Arc::new(settings),
        sources: sources.clone(),
        exists: raw.is_some(),
        hash: hash_raw(raw.as_deref()),
        raw,
        parsed,
        effective,
        warnings,
    })
}

/// The defaults, the file, the environment's `FERROCLAW_*` and the token
/// variables merged and typed.
fn effective(
    raw: Option<&str>,
    sources: &ConfigSources,
) -> Result<(Value, Settings, Vec<String>), ConfigError> {
    let env_label = "environment (FERROCLAW_*)";
    let mut effective = merged(raw, &sources.env, env_label)?;
    if let Some(t) = &sources.gateway_token {
        set_path(
            &mut effective,
            &["gateway", "auth", "token"],
            Value::String(t.clone()),
        );
    }
    if let Some(p) = &sources.gateway_password {
        set_path(
            &mut effective,
            &["gateway", "auth", "password"],
            Value::String(p.clone()),
        );
    }
    let (settings, warnings) = typed(&effective, env_label)?;
    check_semantics(&settings, env_label)?;
    Ok((effective, settings, warnings))
}

fn set_path(v: &mut Value, path: &[&str], new: Value) {
    let mut cur = v;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let Value::Object(map) = cur else { return };
        if i + 1 == path.len() {
            map.insert(key.to_string(), new);
            return;
        }
        cur = map
            .entry(key.to_string())
            .or_insert(Value::Object(Default::default()));
    }
}

/// Secrets redacted by what the settings declare (`ferroclaw_actors::secrets`).
pub use ferroclaw_actors::secrets::{redact, restore as restore_redacted};

/// RFC 7396 merge patch (`config.patch`).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// Sets `a.b.c` in a JSON object (`config.set {key, value}`).
pub fn set_dotted(target: &mut Value, key: &str, value: Value) {
    let parts: Vec<&str> = key.split('.').collect();
    set_path(target, &parts, value);
}

/// Writes the file atomically: temp file, fsync, rename, fsync the directory.
pub use ferroclaw_actors::fsutil::write_atomic;

/// The live configuration, swapped whole on a successful `config.set`.
#[derive(Debug)]
pub struct LiveConfig {
    inner: RwLock<Arc<LoadedConfig>>,
}

impl LiveConfig {
    pub fn new(c: LoadedConfig) -> LiveConfig {
        LiveConfig {
            inner: RwLock::new(Arc::new(c)),
        }
    }
    pub fn get(&self) -> Arc<LoadedConfig> {
        match self.inner.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
    pub fn settings(&self) -> Arc<Settings> {
        self.get().settings.clone()
    }
    pub fn replace(&self, c: LoadedConfig) {
        match self.inner.write() {
            Ok(mut g) => *g = Arc::new(c),
            Err(p) => *p.into_inner() = Arc::new(c),
        }
    }
}

/// Keys whose change needs a restart (everything else applies live).
pub fn restart_required(old: &Settings, new: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    if old.gateway.port != new.gateway.port {
        out.push("gateway.port".to_string());
    }
    if old.gateway.bind != new.gateway.bind || old.gateway.host != new.gateway.host {
        out.push("gateway.bind".to_string());
    }
    if old.gateway.tick_interval_ms != new.gateway.tick_interval_ms {
        out.push("gateway.tickIntervalMs".to_string());
    }
    if old.gateway.tls != new.gateway.tls {
        out.push("gateway.tls".to_string());
    }
    let ui = |s: &Settings| {
        let c = &s.gateway.control_ui;
        (c.enabled, c.root.clone(), c.base_path.clone())
    };
    if ui(old) != ui(new) {
        out.push("gateway.controlUi".to_string());
    }
    if old.logging.file != new.logging.file || old.logging.level != new.logging.level {
        out.push("logging".to_string());
    }
    // Sessions read models, lanes and queue defaults when the tree starts;
    // providers and auth profiles apply live.
    // The heartbeat applies live.
    let agents = |s: &Settings| {
        let mut v = serde_json::to_value(&s.agents).ok();
        if let Some(d) = v.as_mut().and_then(|v| v["defaults"].as_object_mut()) {
            d.remove("heartbeat");
        }
        v
    };
    if agents(old) != agents(new) {
        out.push("agents".to_string());
    }
    if serde_json::to_value(&old.messages).ok() != serde_json::to_value(&new.messages).ok() {
        out.push("messages".to_string());
    }
    // The browser applies live, but the tools offered to the model are
    // fixed at start: the tool itself, and `act`'s `evaluate` kind in it.
    if old.browser.enabled != new.browser.enabled {
        out.push("browser.enabled".to_string());
    }
    if old.browser.evaluate_enabled != new.browser.evaluate_enabled {
        out.push("browser.evaluateEnabled".to_string());
    }
    out
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
