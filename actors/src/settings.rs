//! Typed settings, deserialised by `src/config` from the layered JSON5 config
//! (embedded `config/default.json5` -> user file -> env). Key names are
//! OpenClaw's. `config/default.json5` is the single source of the defaults:
//! nothing here has a Rust-side default, so a key missing from it is a bug
//! caught by the config tests. Sections later issues use are kept as JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub gateway: GatewaySettings,
    pub agents: AgentsSettings,
    pub models: ModelsSettings,
    pub logging: LoggingSettings,
    pub meta: Value,
    pub auth: Value,
    pub channels: Value,
    pub bindings: Value,
    pub session: Value,
    pub messages: Value,
    pub tools: Value,
    pub hooks: Value,
    pub cron: Value,
    pub skills: Value,
    pub plugins: Value,
    pub commands: Value,
    pub ui: Value,
    pub env: Value,
    pub wizard: Value,
    pub browser: Value,
    pub talk: Value,
    pub memory: Value,
    pub update: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMode {
    Token,
    Password,
    None,
}

impl AuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::Token => "token",
            AuthMode::Password => "password",
            AuthMode::None => "none",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySettings {
    pub port: u16,
    /// `loopback` | `lan` | `custom` (uses `host`) | an IP address.
    pub bind: String,
    pub host: Option<String>,
    pub mode: Option<String>,
    pub auth: GatewayAuth,
    pub handshake_timeout_ms: u64,
    pub tick_interval_ms: u64,
    pub health_refresh_interval_ms: u64,
    pub max_payload: usize,
    pub max_buffered_bytes: usize,
    pub max_preauth_payload: usize,
    pub max_unauthenticated_sockets: usize,
    /// Requests one connection may have unanswered before its socket is
    /// no longer read (`gateway.maxInFlightRequests`).
    pub max_in_flight_requests: usize,
    /// Requests one connection may send per second (and in a burst) before
    /// the gateway reads its socket slower (`gateway.maxRequestsPerSecond`;
    /// 0: no bound).
    pub max_requests_per_second: u32,
    pub trusted_proxies: Vec<String>,
    pub control_ui: ControlUi,
    pub http: Value,
    pub remote: Value,
    pub tls: Value,
    pub reload: Value,
    pub tailscale: Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayAuth {
    pub mode: AuthMode,
    pub token: Option<String>,
    pub password: Option<String>,
    pub allow_tailscale: Option<bool>,
    pub rate_limit: AuthRateLimit,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthRateLimit {
    pub max_attempts: u32,
    pub window_ms: u64,
    pub lockout_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlUi {
    pub enabled: bool,
    pub base_path: Option<String>,
    pub allowed_origins: Vec<String>,
    pub allow_insecure_auth: bool,
    pub dangerously_disable_device_auth: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsSettings {
    pub defaults: AgentDefaults,
    pub list: Vec<AgentEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefaults {
    pub model: ModelChoice,
    pub thinking_default: String,
    pub verbose_default: String,
    pub timeout_seconds: u64,
    pub run_restarts: RunRestarts,
    pub session_idle_seconds: u64,
    pub max_concurrent: u32,
    pub subagents: Value,
    pub workspace: Option<String>,
    pub heartbeat: Value,
    pub sandbox: Value,
    pub compaction: Value,
    pub context_pruning: Value,
    pub bootstrap_max_chars: u64,
    pub bootstrap_total_max_chars: u64,
    /// Do not seed a new workspace with BOOTSTRAP.md.
    pub skip_bootstrap: bool,
    /// `on` | `off`: the time in front of each user message the model sees.
    pub envelope_timestamp: String,
    /// `local` | `utc` (an IANA zone falls back to local time).
    pub envelope_timezone: String,
    pub context_tokens: Option<u64>,
    pub models: Value,
    pub typing_mode: Option<String>,
    pub memory_search: Value,
}

/// How failed runs are restarted (ferroclaw's supervision).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRestarts {
    pub max: u32,
    pub backoff_ms: u64,
}

/// `agents.defaults.model`: a ref string or `{primary, fallbacks}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelChoice {
    Ref(String),
    Full {
        primary: String,
        #[serde(default)]
        fallbacks: Vec<String>,
    },
}

impl ModelChoice {
    pub fn primary(&self) -> &str {
        match self {
            ModelChoice::Ref(s) => s,
            ModelChoice::Full { primary, .. } => primary,
        }
    }

    pub fn fallbacks(&self) -> &[String] {
        match self {
            ModelChoice::Ref(_) => &[],
            ModelChoice::Full { fallbacks, .. } => fallbacks,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEntry {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub default: Option<bool>,
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub model: Option<ModelChoice>,
    #[serde(default)]
    pub identity: Option<Value>,
    #[serde(default)]
    pub skill_filter: Option<Vec<String>>,
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub sandbox: Option<Value>,
    #[serde(default)]
    pub heartbeat: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsSettings {
    pub mode: Option<String>,
    pub providers: BTreeMap<String, ProviderSettings>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSettings {
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    #[serde(default)]
    pub compat: Option<Value>,
    #[serde(default)]
    pub auth: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub context_window: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning: Option<bool>,
    #[serde(default)]
    pub input: Option<Vec<String>>,
    #[serde(default)]
    pub cost: Option<Value>,
    #[serde(default)]
    pub compat: Option<Value>,
    #[serde(default)]
    pub api: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingSettings {
    pub level: String,
    pub file: Option<String>,
    pub redact_sensitive: Option<String>,
}

impl Settings {
    /// The default agent id: the `default: true` entry, else the first, else `main`.
    pub fn default_agent_id(&self) -> &str {
        self.agents
            .list
            .iter()
            .find(|a| a.default == Some(true))
            .or_else(|| self.agents.list.first())
            .map(|a| a.id.as_str())
            .unwrap_or("main")
    }
}
