//! The sections of OpenClaw's config that ferroclaw accepts so an OpenClaw
//! config loads unchanged: `meta`, `env`, `wizard`, `update`, `ui`,
//! `commands`, `memory`, `talk`, `plugins` (`browser` is typed in
//! `browser.rs`). Typed with OpenClaw's
//! keys (its `zod-schema` root shape), so a typo in them is named like any
//! other; every key is optional (shipped: unset) but those read. Read here:
//! `ui.prefs` (the Control UI's theme, `themes.list`) and
//! `plugins.entries.<id>.config.webSearch` (`web_search`'s providers). The
//! rest is kept for OpenClaw's clients and the features that will read it
//! (voice). Values OpenClaw leaves free-form (a plugin's own
//! `config`, a talk provider's settings) stay JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `meta`: what OpenClaw's CLI last wrote into the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetaSettings {
    pub last_touched_version: Option<String>,
    pub migrations: Option<MetaMigrations>,
}

/// `meta.migrations`: OpenClaw doctor's one-time migrations already done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetaMigrations {
    pub model_policy_allowlist: Option<bool>,
    pub utility_model_separation: Option<bool>,
}

/// `env`: variables for the gateway (`vars`, or directly as string keys)
/// and OpenClaw's login-shell import. Every value is a secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvSettings {
    pub shell_env: Option<ShellEnv>,
    pub vars: Option<BTreeMap<String, String>>,
    /// `env.<NAME>: "value"` (OpenClaw's sugar for `vars`).
    #[serde(flatten)]
    pub inline: BTreeMap<String, String>,
}

/// `env.shellEnv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShellEnv {
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
}

/// `wizard`: what OpenClaw's onboarding last did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WizardSettings {
    /// `full` | `guarded`.
    pub access_mode: Option<String>,
    pub app_recommendations: Option<bool>,
    pub last_run_at: Option<String>,
    pub last_run_version: Option<String>,
    pub last_run_commit: Option<String>,
    pub last_run_command: Option<String>,
    /// `local` | `remote`.
    pub last_run_mode: Option<String>,
    pub security_acknowledged_at: Option<String>,
}

/// `update`: OpenClaw's update channel and checks (ferroclaw updates
/// through its package, not itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateSettings {
    /// `stable` | `extended-stable` | `beta` | `dev`.
    pub channel: Option<String>,
    pub check_on_start: Option<bool>,
    pub auto: Option<Toggle>,
}

/// `{ enabled }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Toggle {
    pub enabled: Option<bool>,
}

/// `ui`: the Control UI's look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiSettings {
    /// Accent colour of OpenClaw's UI chrome (hex).
    pub seam_color: Option<String>,
    pub prefs: UiPrefs,
}

/// `ui.prefs`: the operator's display preferences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiPrefs {
    /// A theme id (`themes.list`); one it does not know reads as `claw`.
    pub theme: String,
    /// `light` | `dark` | `system`.
    pub theme_mode: String,
    pub accent: Option<String>,
    pub locale: Option<String>,
    pub chat_show_thinking: Option<bool>,
    pub chat_show_tool_calls: Option<bool>,
    pub chat_persist_commentary: Option<bool>,
    /// `enter` | `modifier-enter`.
    pub chat_send_shortcut: Option<String>,
    /// `steer` | `queue`.
    pub chat_follow_up_mode: Option<String>,
    pub sidebar_entries: Option<Vec<String>>,
}

/// `commands`: OpenClaw's chat command switches (ferroclaw's slash
/// commands are always on; its `!` host commands follow `tools.exec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandsSettings {
    /// `raw` | `hash`.
    pub owner_display: Option<String>,
    #[schemars(extend("writeOnly" = true))]
    pub owner_display_secret: Option<String>,
    /// `auto`, true or false (and per provider in OpenClaw).
    #[schemars(schema_with = "super::shapes::auto_or_bool")]
    pub native: Option<Value>,
    #[schemars(schema_with = "super::shapes::auto_or_bool")]
    pub native_skills: Option<Value>,
    pub text: Option<bool>,
    pub bash: Option<bool>,
    pub bash_foreground_ms: Option<u64>,
    pub config: Option<bool>,
    pub mcp: Option<bool>,
    pub plugins: Option<bool>,
    pub debug: Option<bool>,
    pub restart: Option<bool>,
    #[schemars(with = "Option<Vec<super::channels::IdValue>>")]
    pub owner_allow_from: Option<Vec<Value>>,
    /// Who may run them: a list, or per channel.
    #[schemars(with = "Option<BTreeMap<String, Vec<super::channels::IdValue>>>")]
    pub allow_from: Option<Value>,
}

/// `memory`: OpenClaw's memory plugin settings (ferroclaw's memory search
/// is `agents.defaults.memorySearch`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemorySection {
    /// `auto` | `on` | `off`.
    pub citations: Option<String>,
    #[schemars(schema_with = "super::shapes::object")]
    pub search: Option<Value>,
}

/// `talk`: voice mode (OpenClaw's; read by the voice feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TalkSettings {
    pub agent_id: Option<String>,
    pub provider: Option<String>,
    /// `<provider>`: its settings (OpenClaw leaves them free-form; `apiKey`
    /// is a secret).
    pub providers: Option<BTreeMap<String, TalkProvider>>,
    #[schemars(schema_with = "super::shapes::object")]
    pub realtime: Option<Value>,
    pub consult_thinking_level: Option<String>,
    pub consult_fast_mode: Option<bool>,
    pub speech_locale: Option<String>,
    pub interrupt_on_speech: Option<bool>,
    pub silence_timeout_ms: Option<u64>,
    /// OpenClaw's older place for the speech key.
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
}

/// `talk.providers.<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TalkProvider {
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `plugins`: OpenClaw's plugin registry. ferroclaw runs bundles (skills,
/// MCP and LSP servers, command hooks) installed under
/// `<state>/extensions`, enabled by `entries.<id>.enabled`, their hooks
/// gated by `entries.<id>.hooks`; it runs no native (JavaScript) plugin,
/// and reads the web search providers' keys from their entries' `config`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginsSettings {
    pub enabled: Option<bool>,
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    #[schemars(schema_with = "super::shapes::object")]
    pub load: Option<Value>,
    #[schemars(schema_with = "super::shapes::object")]
    pub slots: Option<Value>,
    pub entries: Option<BTreeMap<String, PluginEntry>>,
}

impl PluginsSettings {
    /// `plugins.entries.<id>.config.webSearch`, if set.
    pub fn web_search(&self, id: &str) -> Option<&WebSearchPlugin> {
        self.entries
            .as_ref()?
            .get(id)?
            .config
            .as_ref()?
            .web_search
            .as_ref()
    }
}

/// `plugins.entries.<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginEntry {
    pub enabled: Option<bool>,
    pub hooks: Option<PluginHookPolicy>,
    #[schemars(schema_with = "super::shapes::object")]
    pub subagent: Option<Value>,
    #[schemars(schema_with = "super::shapes::object")]
    pub llm: Option<Value>,
    pub config: Option<PluginConfig>,
    /// OpenClaw's older places for a plugin's key and environment.
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[schemars(extend("writeOnly" = true))]
    pub env: Option<BTreeMap<String, String>>,
}

/// `plugins.entries.<id>.hooks`: OpenClaw's hook gates and budgets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginHookPolicy {
    /// true: the plugin's hooks reach the conversation points
    /// (`before_prompt_build`, `before_agent_reply`, `agent_end`...).
    pub allow_conversation_access: Option<bool>,
    /// false: no `before_prompt_build` context from this plugin.
    pub allow_prompt_injection: Option<bool>,
    /// Every hook's budget (ms, at most 600000).
    pub timeout_ms: Option<u64>,
    /// Per hook name, over `timeoutMs`.
    pub timeouts: Option<BTreeMap<String, u64>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl PluginHookPolicy {
    /// The operator's budget for hook `name`, if any.
    pub fn budget(&self, name: &str) -> Option<std::time::Duration> {
        self.timeouts
            .as_ref()
            .and_then(|t| t.get(name).copied())
            .or(self.timeout_ms)
            .filter(|ms| *ms > 0)
            .map(|ms| std::time::Duration::from_millis(ms.min(600_000)))
    }
}

impl PluginsSettings {
    /// The entry of plugin `id`.
    pub fn entry(&self, id: &str) -> Option<&PluginEntry> {
        self.entries.as_ref()?.get(id)
    }

    /// Whether plugin `id` is on: plugins on, not denied, allowed when
    /// there is an allowlist, and its entry enabled.
    pub fn is_enabled(&self, id: &str) -> bool {
        self.enabled != Some(false)
            && !self
                .deny
                .as_ref()
                .is_some_and(|d| d.iter().any(|x| x == id))
            && self
                .allow
                .as_ref()
                .is_none_or(|a| a.iter().any(|x| x == id))
            && self.entry(id).and_then(|e| e.enabled) == Some(true)
    }
}

/// `plugins.entries.<id>.config`: the plugin's own; `webSearch` is the
/// part ferroclaw reads, the rest is the plugin's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginConfig {
    pub web_search: Option<WebSearchPlugin>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `plugins.entries.<provider>.config.webSearch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchPlugin {
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}
