//! Typed settings, deserialised by `src/config` from the layered JSON5 config
//! (embedded `config/default.json5` -> user file -> env). Key names are
//! OpenClaw's. `config/default.json5` is the single source of the defaults:
//! nothing here has a Rust-side default, so a key missing from it is a bug
//! caught by the config tests. What ferroclaw reads is typed (a bad value is
//! refused at load with its key path); inside a typed section, the keys it
//! does not read are kept as written (`other`). OpenClaw's sections that
//! ferroclaw accepts without reading are typed with OpenClaw's keys too
//! (`compat.rs`, `gateway.rs`), so no section is bare JSON and a typo is
//! named at every depth.

mod agents;
mod bad;
mod browser;
mod channels;
mod compat;
mod gateway;
mod hooks;
pub mod lookup;
mod lsp;
mod mcp;
mod media;
mod nodes;
pub mod schema;
mod session;
mod shapes;
mod skills;
mod tools;
mod tts;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use agents::*;
pub use bad::BadSetting;
pub use browser::*;
pub use channels::*;
pub use compat::*;
pub use gateway::*;
pub use hooks::*;
pub use lsp::*;
pub use mcp::*;
pub use media::*;
pub use nodes::*;
pub use session::*;
pub use skills::*;
pub use tools::*;
pub use tts::*;

/// The settings `config/default.json5` alone gives (tests build from them
/// instead of defaults written in Rust).
#[cfg(test)]
pub fn shipped() -> Settings {
    json5::from_str(include_str!("../../../config/default.json5")).expect("default.json5 reads")
}

/// The shipped `section` (a dotted path: `session`, `tools.web.fetch`) with
/// `patch` laid over it (objects merged), read as the config loader reads
/// it, for unit tests.
#[cfg(test)]
pub fn shipped_with<T: serde::de::DeserializeOwned>(section: &str, patch: Value) -> T {
    fn lay(target: &mut Value, patch: &Value) {
        match (target, patch) {
            (Value::Object(t), Value::Object(p)) => {
                for (k, v) in p {
                    lay(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (t, p) => *t = p.clone(),
        }
    }
    let all: Value = json5::from_str(include_str!("../../../config/default.json5")).expect("reads");
    let mut v = section.split('.').fold(&all, |v, k| &v[k]).clone();
    lay(&mut v, &patch);
    serde_json::from_value(v).expect("the patched section reads")
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub gateway: GatewaySettings,
    pub agents: AgentsSettings,
    pub models: ModelsSettings,
    pub logging: LoggingSettings,
    pub meta: MetaSettings,
    pub auth: AuthSettings,
    pub channels: ChannelsSettings,
    pub bindings: Vec<Binding>,
    pub session: SessionSettings,
    pub messages: MessagesSettings,
    pub tools: ToolsSettings,
    #[schemars(transform = secret_hooks)]
    pub hooks: HooksSettings,
    pub cron: CronSettings,
    pub skills: SkillsSettings,
    pub mcp: McpSettings,
    pub attachments: AttachmentsSettings,
    pub plugins: PluginsSettings,
    pub commands: CommandsSettings,
    pub ui: UiSettings,
    /// Environment for the gateway: every value in it is a secret.
    #[schemars(extend("writeOnly" = true))]
    pub env: EnvSettings,
    pub wizard: WizardSettings,
    pub browser: BrowserSettings,
    pub talk: TalkSettings,
    pub tts: TtsSettings,
    pub memory: MemorySection,
    pub update: UpdateSettings,
}

/// `attachments`: how long stored media is kept (OpenClaw's `ttlHours`;
/// unset: no age limit) and how much of it (ferroclaw's `maxTotalMb`: the
/// least recently used go first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentsSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_hours: Option<f64>,
    pub max_total_mb: u64,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl AttachmentsSettings {
    pub fn ttl(&self) -> std::time::Duration {
        match self.ttl_hours.filter(|h| h.is_finite() && *h > 0.0) {
            Some(h) => std::time::Duration::from_secs_f64(h * 3600.0),
            None => std::time::Duration::from_secs(u64::MAX / 4_000),
        }
    }

    pub fn max_total_bytes(&self) -> u64 {
        self.max_total_mb.saturating_mul(1024 * 1024)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// A channel account with no successful platform round trip for this
    /// long is `degraded` (`gateway.channelStaleEventThresholdMinutes`).
    pub channel_stale_event_threshold_minutes: f64,
    pub trusted_proxies: Vec<String>,
    pub control_ui: ControlUi,
    pub http: HttpSettings,
    pub remote: RemoteSettings,
    pub tls: TlsSettings,
    pub reload: ReloadSettings,
    pub tailscale: TailscaleSettings,
    /// `gateway.nodes`: which commands nodes may be invoked with.
    pub nodes: NodesSettings,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayAuth {
    pub mode: AuthMode,
    #[schemars(extend("writeOnly" = true))]
    pub token: Option<String>,
    #[schemars(extend("writeOnly" = true))]
    pub password: Option<String>,
    pub allow_tailscale: Option<bool>,
    pub rate_limit: AuthRateLimit,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthRateLimit {
    pub max_attempts: u32,
    pub window_ms: u64,
    pub lockout_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ControlUi {
    pub enabled: bool,
    pub base_path: Option<String>,
    /// A built OpenClaw Control UI folder (its `index.html` and `assets/`)
    /// to serve; unset: not served.
    pub root: Option<String>,
    pub allowed_origins: Vec<String>,
    pub allow_insecure_auth: bool,
    pub dangerously_disable_device_auth: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsSettings {
    pub defaults: AgentDefaults,
    pub list: Vec<AgentEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefaults {
    pub model: ModelChoice,
    pub thinking_default: String,
    pub verbose_default: String,
    pub timeout_seconds: u64,
    pub run_restarts: RunRestarts,
    pub session_idle_seconds: u64,
    pub max_concurrent: u32,
    pub subagents: SubagentSettings,
    pub workspace: Option<String>,
    pub heartbeat: HeartbeatSettings,
    pub sandbox: SandboxConfig,
    pub compaction: CompactionConfig,
    pub context_pruning: ContextPruningConfig,
    pub bootstrap_max_chars: u64,
    pub bootstrap_total_max_chars: u64,
    /// Do not seed a new workspace with BOOTSTRAP.md.
    pub skip_bootstrap: bool,
    /// `on` | `off`: the time in front of each user message the model sees.
    pub envelope_timestamp: String,
    /// `local` | `utc` (an IANA zone falls back to local time).
    pub envelope_timezone: String,
    pub context_tokens: Option<u64>,
    /// `<provider/model>`: its alias and parameters (OpenClaw's model map).
    pub models: BTreeMap<String, AgentModelEntry>,
    pub typing_mode: Option<String>,
    pub memory_search: MemorySearchConfig,
}

/// `agents.defaults.subagents`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentSettings {
    /// Sub-agent runs at once (the `subagent` lane).
    pub max_concurrent: u32,
    /// How deep sub-agents may spawn sub-agents.
    pub max_spawn_depth: u32,
}

/// `agents.defaults.sandbox`: where and how sandboxed commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    pub scope: SandboxScope,
    pub workspace_access: WorkspaceAccess,
}

/// Which sessions run their commands in the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    Off,
    NonMain,
    All,
}

/// Which sessions share a scratch workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxScope {
    Session,
    Agent,
    Shared,
}

/// What a sandboxed command sees of the agent workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum WorkspaceAccess {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "ro")]
    ReadOnly,
    #[serde(rename = "rw")]
    ReadWrite,
}

/// `auth`: the api-key profiles configured for providers (keys live in
/// `auth-profiles.json` or the environment, never here) and the order a
/// provider's profiles are tried in.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthSettings {
    pub profiles: BTreeMap<String, AuthProfileSetting>,
    /// provider -> profile ids, in rotation order.
    pub order: BTreeMap<String, Vec<String>>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `auth.profiles.<id>` (OpenClaw's keys: `provider`, `mode`, ...).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthProfileSetting {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// One `bindings[]` entry: which agent answers what `match` selects
/// (seed 001's route tiers; `routing/` evaluates them).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    pub agent_id: String,
    #[serde(rename = "match")]
    pub match_: BindingMatch,
    /// Session scopes this binding's sessions use instead of `session.*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<BindingSession>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingMatch {
    pub channel: String,
    /// An account id, `*` for every account; unset: the default account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<BindingPeer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guild_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<String>>,
}

/// `{kind: direct | group | channel, id}`; `id: "*"` matches every peer of the kind.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BindingPeer {
    pub kind: String,
    pub id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingSession {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dm_scope: Option<DmScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_scope: Option<GroupScope>,
}

/// How direct messages map to sessions (seed 001).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DmScope {
    /// Every direct message in the agent's main session.
    Main,
    PerPeer,
    PerChannelPeer,
    PerAccountChannelPeer,
}

/// How groups map to sessions: one per group, or the agent's main session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GroupScope {
    PerGroup,
    Main,
}

/// `messages`: the queue is typed; the rest is kept as written.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = secret_messages)]
pub struct MessagesSettings {
    pub queue: QueueConfig,
    pub inbound: InboundSettings,
    /// A channel reply delivered this many minutes after the message it
    /// answers says how late it is (0: never).
    pub late_reply_notice_minutes: u64,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `messages.inbound`: rapid texts of one channel conversation within the
/// window become one message (0: off; at most a minute is used).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundSettings {
    pub debounce_ms: u64,
    /// Per channel id, over `debounceMs`.
    pub by_channel: BTreeMap<String, u64>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

impl InboundSettings {
    /// The window of `channel`'s conversations (ms).
    pub fn debounce_ms(&self, channel: &str) -> u64 {
        let ms = self.by_channel.get(channel).copied();
        ms.unwrap_or(self.debounce_ms).min(60_000)
    }
}

/// `messages.queue`: what a message does while a run is busy.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueConfig {
    /// steer | followup | collect | steer-backlog | interrupt.
    pub mode: String,
    pub debounce_ms: u64,
    pub cap: u64,
    /// old | new | summarize.
    pub drop: String,
}

/// `cron`: the lane size is typed; the rest is kept as written.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = secret_cron)]
pub struct CronSettings {
    /// Cron runs at once (the `cron` lane).
    pub max_concurrent_runs: u32,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// How failed runs are restarted (ferroclaw's supervision).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunRestarts {
    pub max: u32,
    pub backoff_ms: u64,
}

/// `agents.defaults.model`: a ref string or `{primary, fallbacks}`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[schemars(schema_with = "shapes::identity")]
    pub identity: Option<Value>,
    #[serde(default)]
    pub skill_filter: Option<Vec<String>>,
    #[serde(default)]
    pub tools: Option<ToolLayer>,
    #[serde(default)]
    #[schemars(schema_with = "shapes::object")]
    pub sandbox: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "shapes::object")]
    pub heartbeat: Option<Value>,
    /// Voices, persona or mode of this agent's spoken replies over `tts`.
    #[serde(default)]
    pub tts: Option<AgentTtsLayer>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelsSettings {
    pub mode: Option<String>,
    pub providers: BTreeMap<String, ProviderSettings>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSettings {
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api: Option<String>,
    #[serde(default)]
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    /// Extra request headers: every value is a secret, whatever its name.
    #[serde(default)]
    #[schemars(extend("writeOnly" = true))]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    #[serde(default)]
    #[schemars(schema_with = "shapes::object")]
    pub compat: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "shapes::provider_auth")]
    pub auth: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[schemars(schema_with = "shapes::cost")]
    pub cost: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "shapes::object")]
    pub compat: Option<Value>,
    #[serde(default)]
    pub api: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoggingSettings {
    pub level: String,
    pub file: Option<String>,
    pub redact_sensitive: Option<String>,
    /// The audit ledger's (the `audit` module reads them).
    pub audit: AuditLogSettings,
}

/// `logging.audit.messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuditMessages {
    Off,
    /// Direct chats only.
    Direct,
    All,
}

/// `logging.audit`: OpenClaw's keys. Applies without a restart.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditLogSettings {
    /// New records are written (existing ones stay until they expire).
    pub enabled: bool,
    /// Channel message records: `off`, `direct` chats only, or `all`.
    pub messages: AuditMessages,
    /// The keys ferroclaw does not read (`executionIdentity`).
    #[serde(flatten)]
    pub other: Map<String, Value>,
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

// The secrets of the parts kept as JSON, declared on their types'
// schemas (`writeOnly`; `secrets.rs` redacts by it). OpenClaw's key names.

/// Marks each of `paths` (keys between dots, `*` for every key of a map)
/// under `schema` as secret.
fn mark(schema: &mut schemars::Schema, paths: &[&str]) {
    for path in paths {
        let segs: Vec<&str> = path.split('.').collect();
        mark_in(schema.ensure_object(), &segs);
    }
}

fn mark_in(node: &mut Map<String, Value>, segs: &[&str]) {
    let Some((first, rest)) = segs.split_first() else {
        node.insert("writeOnly".into(), Value::Bool(true));
        // A place only marked here is a string (OpenClaw's Control UI
        // renders no node without a type).
        if !node.contains_key("type") && !node.contains_key("$ref") {
            node.insert("type".into(), Value::String("string".into()));
        }
        return;
    };
    if !node.contains_key("type") && !node.contains_key("$ref") {
        node.insert("type".into(), Value::String("object".into()));
    }
    let slot = if *first == "*" {
        node.entry("additionalProperties")
    } else {
        let props = node
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if !props.is_object() {
            *props = Value::Object(Map::new());
        }
        match props {
            Value::Object(p) => p.entry(first.to_string()),
            _ => return,
        }
    };
    let child = slot.or_insert_with(|| Value::Object(Map::new()));
    if !child.is_object() {
        *child = Value::Object(Map::new());
    }
    if let Value::Object(c) = child {
        mark_in(c, rest);
    }
}

/// The secret keys of a channel section and of each of its accounts, for
/// every channel OpenClaw has (Telegram `botToken`, Slack `appToken` and
/// `signingSecret`, Discord `token`, WhatsApp `accessToken`, `appSecret`,
/// `verifyToken`, Matrix `accessToken` and `password`, ...).
const CHANNEL_SECRETS: &[&str] = &[
    "botToken",
    "token",
    "appToken",
    "userToken",
    "signingSecret",
    "webhookSecret",
    "accessToken",
    "appSecret",
    "verifyToken",
    "password",
    "apiKey",
    "privateKey",
    "clientSecret",
];

pub(crate) fn secret_channel(schema: &mut schemars::Schema) {
    for key in CHANNEL_SECRETS {
        mark(schema, &[key, &format!("accounts.*.{key}")]);
    }
}

fn secret_hooks(schema: &mut schemars::Schema) {
    // `token` is marked on the type; these live in untyped parts.
    mark(schema, &["messageReceived.token", "gmail.pushToken"]);
}

fn secret_tools(schema: &mut schemars::Schema) {
    mark(schema, &["web.fetch.firecrawl.apiKey"]);
}

fn secret_messages(schema: &mut schemars::Schema) {
    mark(schema, &["tts.*.apiKey"]);
}

fn secret_cron(schema: &mut schemars::Schema) {
    mark(schema, &["webhookToken"]);
}

/// The JSON Schema of the config file (OpenClaw's key names; the doc
/// comments as descriptions), generated from these types once, when the
/// config methods first need it.
pub fn json_schema() -> &'static Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(built_json_schema)
}

/// `json_schema()` generated afresh and owned: what a start reads once
/// (the unknown-key check) and then drops, where the cached one would stay
/// resident in every idle gateway (about 1 MB of heap).
pub fn built_json_schema() -> Value {
    let schema = schemars::schema_for!(Settings);
    serde_json::to_value(schema).unwrap_or(Value::Bool(true))
}

/// `500`, `500ms`, `2s`, `5m`, `1h`, `1d` (OpenClaw's duration strings).
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(
        s.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len()),
    );
    let n: f64 = num.parse().ok()?;
    let ms = match unit {
        "" | "ms" => n,
        "s" => n * 1000.0,
        "m" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        "d" => n * 86_400_000.0,
        _ => return None,
    };
    (ms >= 0.0).then(|| std::time::Duration::from_millis(ms as u64))
}

/// A duration in the largest unit that divides it (`30m`, `1h`, `5s`,
/// `250ms`): what [`parse_duration`] reads back.
pub fn format_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis() as u64;
    match ms {
        0 => "0m".into(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn durations_print_as_they_are_read() {
        for s in ["30m", "1h", "5s", "250ms"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
        assert_eq!(format_duration(parse_duration("90m").unwrap()), "90m");
    }
}
