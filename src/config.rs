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
mod tests {
    use super::*;

    #[test]
    fn defaults_alone_load_and_keep_camel_case_keys() {
        let loaded = load(&ConfigSources {
            path: PathBuf::from("/nonexistent/ferroclaw.json"),
            ..Default::default()
        })
        .unwrap();
        assert!(!loaded.exists);
        assert_eq!(loaded.settings.gateway.port, 18789);
        assert_eq!(loaded.settings.gateway.tick_interval_ms, 30000);
        assert_eq!(
            loaded.settings.agents.defaults.model.primary(),
            "offline/echo"
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }

    #[test]
    fn bad_values_name_the_file_key_path_and_expectation() {
        let check = |raw: &str, want_path: &str, want_msg: &str| {
            let err = check_user_raw(raw, "/x/ferroclaw.json")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("/x/ferroclaw.json: "), "{err}");
            assert!(err.contains(want_path), "{err}");
            assert!(err.contains(want_msg), "{err}");
        };
        check("{gateway:{port:'abc'}}", "gateway.port", "expected u16");
        check(
            "{gateway:{auth:{mode:'magic'}}}",
            "gateway.auth.mode",
            "expected one of",
        );
        check(
            "{gateway:{handshakeTimeoutMs: 5}}",
            "gateway.handshakeTimeoutMs",
            "1000",
        );
        check("{gateway:{port: 1,,}}", "", "");
        check("[1,2]", "", "expected a map");
        check(
            "{gateway:{bind:'lan', auth:{mode:'none'}}}",
            "gateway.auth.mode",
            "only allowed",
        );
        assert!(check_user_raw("{gateway:{bind:'127.0.0.2', auth:{mode:'none'}}}", "f").is_ok());
    }

    #[test]
    fn typed_sections_name_the_key_that_is_wrong() {
        let err = |raw: &str| check_user_raw(raw, "f").unwrap_err().to_string();
        let e = err("{agents:{defaults:{sandbox:{mode:'sometimes'}}}}");
        assert!(e.contains("agents.defaults.sandbox.mode"), "{e}");
        let e = err("{tools:{fs:{workspaceOnly:'yes'}}}");
        assert!(e.contains("tools.fs.workspaceOnly"), "{e}");
        let e = err("{session:{dmScope:'per-moon'}}");
        assert!(e.contains("session.dmScope"), "{e}");
        let e = err("{skills:{entries:{weather:{enabled:'yes'}}}}");
        assert!(e.contains("skills.entries.weather.enabled"), "{e}");
        // OpenClaw's loader keys and a skill's own config are kept as written.
        let openclaw =
            "{skills:{allowBundled:['x'], load:{watch:false}, entries:{w:{config:{a:1}}}}}";
        assert!(check_user_raw(openclaw, "f").is_ok());
        let e = err("{bindings:[{agentId:'ops'}]}");
        assert!(e.contains("bindings[0]") && e.contains("match"), "{e}");
        let e =
            err("{bindings:[{agentId:'ops', match:{channel:'telegram', peer:{kind:'direct'}}}]}");
        assert!(e.contains("bindings[0].match.peer"), "{e}");
        assert!(check_user_raw(
            "{session:{dmScope:'per-channel-peer', identityLinks:{alice:['telegram:1']}, reset:{atHour:4}}, bindings:[{agentId:'ops', match:{channel:'telegram', accountId:'*'}, comment:'ok'}]}",
            "f"
        )
        .is_ok());
        let e = err("{agents:{defaults:{subagents:{maxSpawnDepth:-1}}}}");
        assert!(e.contains("agents.defaults.subagents.maxSpawnDepth"), "{e}");
        // The agent sections read from raw JSON before are typed now: an
        // unknown mode is refused (it silently became `safeguard` before).
        let e = err("{agents:{defaults:{compaction:{mode:'turbo'}}}}");
        assert!(e.contains("agents.defaults.compaction.mode"), "{e}");
        let e = err("{agents:{defaults:{contextPruning:{mode:'sometimes'}}}}");
        assert!(e.contains("agents.defaults.contextPruning.mode"), "{e}");
        let e = err("{agents:{defaults:{contextPruning:{softTrimRatio:3}}}}");
        assert!(
            e.contains("agents.defaults.contextPruning.softTrimRatio"),
            "{e}"
        );
        let e = err("{agents:{defaults:{heartbeat:{ackMaxChars:'lots'}}}}");
        assert!(e.contains("agents.defaults.heartbeat.ackMaxChars"), "{e}");
        let e = err("{agents:{defaults:{memorySearch:{query:{minScore:'high'}}}}}");
        assert!(
            e.contains("agents.defaults.memorySearch.query.minScore"),
            "{e}"
        );
        let (_, s, warnings) = check_user_raw(
            "{agents:{defaults:{compaction:{mode:'default', keepRecent:5}, heartbeat:{every:'1h'}}}, hooks:{presets:['gmail']}}",
            "f",
        )
        .unwrap();
        assert_eq!(s.hooks.path, "/hooks");
        assert_eq!(
            s.hooks.other["presets"][0], "gmail",
            "OpenClaw's other keys kept"
        );
        assert_eq!(
            s.agents.defaults.compaction.mode,
            ferroclaw_actors::settings::CompactionMode::Safeguard
        );
        assert_eq!(
            s.agents.defaults.heartbeat.ack_max_chars, 300,
            "the shipped default"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("agents.defaults.compaction.keepRecent")),
            "a typo is named: {warnings:?}"
        );
        // A user's keys over the shipped ones, at every depth.
        let (_, s, warnings) =
            check_user_raw("{tools:{allow:['read'], exec:{security:'allowlist'}}}", "f").unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(s.tools.allow, Some(vec!["read".to_string()]));
        assert_eq!(s.tools.exec.security, "allowlist");
        assert_eq!(s.tools.exec.approval_timeout_seconds, 120, "the default");
        assert_eq!(s.messages.queue.mode, "collect");
    }

    #[test]
    fn channel_sections_are_typed_over_their_shipped_defaults() {
        let err = |raw: &str| check_user_raw(raw, "f").unwrap_err().to_string();
        // A wrong value is refused at load, named by its key, in a section
        // and in an account (it stopped only the start before).
        let e = err("{channels:{telegram:{botToken:'1:a', dmPolicy:'sometimes'}}}");
        assert!(e.contains("channels.telegram.dmPolicy"), "{e}");
        let e = err("{channels:{slack:{accounts:{work:{mode:'carrier-pigeon'}}}}}");
        assert!(e.contains("channels.slack.accounts.work.mode"), "{e}");
        let e = err("{channels:{discord:{guilds:{G1:{requireMention:'yes'}}}}}");
        assert!(
            e.contains("channels.discord.guilds.G1.requireMention"),
            "{e}"
        );
        let e = err("{channels:{defaults:{telegram:{textChunkLimit:'long'}}}}");
        assert!(
            e.contains("channels.defaults.telegram.textChunkLimit"),
            "{e}"
        );
        let e = err("{channels:{defaults:{groupPolicy:'sometimes'}}}");
        assert!(e.contains("channels.defaults.groupPolicy"), "{e}");
        // The defaults are the shipped file's, and a user's channels.defaults
        // changes them without starting a channel.
        let (_, s, warnings) = check_user_raw(
            "{channels:{defaults:{groupPolicy:'disabled', discord:{typingIntervalSeconds:3}}, whatsapp:{allowFrom:['+1']}}}",
            "f",
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let d = &s.channels.defaults;
        assert_eq!(d.telegram.send_interval_ms, 35);
        assert_eq!(d.slack.webhook_path, "/slack/events");
        assert_eq!(d.discord.typing_interval_seconds, 3);
        assert_eq!(d.discord.text_chunk_limit, 2000, "the shipped default kept");
        assert_eq!(s.channels.keys().collect::<Vec<_>>(), ["whatsapp"]);
        assert_eq!(d.layer("slack")["groupPolicy"], "disabled");
        // messages.inbound is typed too: the window per channel, bounded.
        let e = err("{messages:{inbound:{byChannel:{telegram:'soon'}}}}");
        assert!(e.contains("messages.inbound.byChannel.telegram"), "{e}");
        let (_, s, _) = check_user_raw(
            "{messages:{inbound:{debounceMs:400, byChannel:{slack:90000}}}}",
            "f",
        )
        .unwrap();
        let inbound = &s.messages.inbound;
        assert_eq!(
            (
                inbound.debounce_ms("telegram"),
                inbound.debounce_ms("slack")
            ),
            (400, 60_000)
        );
        // config.schema shows the typed sections, their secrets write-only.
        let schema = ferroclaw_actors::settings::json_schema().to_string();
        for key in [
            "typingIntervalSeconds",
            "pingIntervalSeconds",
            "webhookPath",
            "intents",
        ] {
            assert!(schema.contains(key), "{key}");
        }
    }

    #[test]
    fn a_new_control_ui_folder_needs_a_restart() {
        let (_, old, _) = check_user_raw("{}", "f").unwrap();
        let (_, new, _) = check_user_raw("{gateway:{controlUi:{root:'/opt/ui'}}}", "f").unwrap();
        assert_eq!(restart_required(&old, &new), ["gateway.controlUi"]);
        assert!(restart_required(&old, &old).is_empty());
    }

    #[test]
    fn unknown_keys_are_warned_not_fatal() {
        let (_, s, warnings) =
            check_user_raw("{gateway:{port:1234, bogus:1}, extra:{a:1}}", "f").unwrap();
        assert_eq!(s.gateway.port, 1234);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("gateway.bogus")));
        assert!(warnings.iter().any(|w| w.contains("extra")));
    }

    #[test]
    fn env_layer_overrides_file_and_openclaw_token_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ferroclaw.json");
        std::fs::write(
            &path,
            "{gateway:{port:1111, auth:{token:'file-token-0123456789'}}}",
        )
        .unwrap();
        let loaded = load(&ConfigSources {
            path: path.clone(),
            env: vec![("FERROCLAW_GATEWAY__PORT".into(), "2222".into())],
            gateway_token: Some("env-token-0123456789".into()),
            gateway_password: None,
            generated_token: None,
        })
        .unwrap();
        assert_eq!(loaded.settings.gateway.port, 2222);
        assert_eq!(
            loaded.settings.gateway.auth.token.as_deref(),
            Some("env-token-0123456789")
        );
        assert_eq!(
            loaded.hash,
            hash_raw(Some(
                "{gateway:{port:1111, auth:{token:'file-token-0123456789'}}}"
            ))
        );
        let bad = load(&ConfigSources {
            path,
            env: vec![("FERROCLAW_GATEWAY__PORT".into(), "notaport".into())],
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("environment") && bad.contains("gateway.port"),
            "{bad}"
        );
    }

    #[test]
    fn redaction_hides_secrets_and_restores_them() {
        let cfg = serde_json::json!({"gateway":{"auth":{"token":"s3cret","mode":"token"}},
            "models":{"providers":{"x":{"apiKey":"k","models":[{"id":"m","maxTokens":5}]}}}});
        let red = redact(&cfg);
        assert_eq!(red["gateway"]["auth"]["token"], REDACTED);
        assert_eq!(red["models"]["providers"]["x"]["apiKey"], REDACTED);
        assert_eq!(red["models"]["providers"]["x"]["models"][0]["maxTokens"], 5);
        let skills = serde_json::json!({"skills":{"entries":{"w":{"apiKey":"k","env":{"T":"v"},"enabled":true}}}});
        let red = redact(&skills);
        assert_eq!(red["skills"]["entries"]["w"]["apiKey"], REDACTED);
        assert_eq!(red["skills"]["entries"]["w"]["env"]["T"], REDACTED);
        assert_eq!(red["skills"]["entries"]["w"]["enabled"], true);
        let red = redact(&cfg);
        let mut back = red.clone();
        restore_redacted(&mut back, &cfg);
        assert_eq!(back, cfg);
    }

    #[test]
    fn merge_patch_follows_rfc7396() {
        let mut t = serde_json::json!({"a":{"b":1,"c":2},"d":3});
        merge_patch(&mut t, &serde_json::json!({"a":{"b":null,"e":4},"d":[1]}));
        assert_eq!(t, serde_json::json!({"a":{"c":2,"e":4},"d":[1]}));
        set_dotted(&mut t, "agents.defaults.model", serde_json::json!("x/y"));
        assert_eq!(t["agents"]["defaults"]["model"], "x/y");
    }
}
