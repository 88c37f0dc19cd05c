//! `tools`: every key ferroclaw reads, typed; OpenClaw's others are kept.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::secret_tools;

/// `tools`: the layers the tool policy is built from (`tool/policy.rs`)
/// and each tool's own section; OpenClaw's other keys are kept, not read.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = secret_tools)]
pub struct ToolsSettings {
    /// Only these tools and `group:` groups (unset: every tool).
    pub allow: Option<Vec<String>>,
    /// Never these; a deny in any layer wins.
    pub deny: Vec<String>,
    /// OpenClaw's base set before allow/deny: `minimal`, `coding`,
    /// `messaging` or `full` (unset: every tool).
    pub profile: Option<String>,
    /// Added to a limited profile.
    pub also_allow: Vec<String>,
    /// What a turn holding a stranger's message may use (unset: nothing).
    pub untrusted: Option<ToolList>,
    /// Rules run before every tool call.
    pub before_tool_call: Vec<ToolRule>,
    pub exec: ExecToolSettings,
    pub fs: FsToolSettings,
    /// `tools.askUser` (ferroclaw's: OpenClaw's wait is fixed at 900 s).
    pub ask_user: AskUserToolSettings,
    /// Characters of a tool result kept (head and tail), at least 1000.
    pub result_max_chars: u64,
    /// `tools.web`: `fetch` typed, `search` read by `web_search`.
    pub web: WebToolSettings,
    pub media: super::MediaSettings,
    pub links: super::LinksSettings,
    pub lsp: super::LspSettings,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.web`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebToolSettings {
    pub fetch: WebFetchSettings,
    pub search: WebSearchSettings,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.web.search` (OpenClaw's keys). Its providers' keys are in
/// `plugins.entries.<provider>.config.webSearch`; OpenClaw's other keys
/// here (its providers' own sections) are kept, not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchSettings {
    pub enabled: bool,
    /// brave | perplexity | tavily | searxng | duckduckgo (unset: the first
    /// with a key, in that order, DuckDuckGo only by name).
    pub provider: Option<String>,
    pub max_results: u64,
    pub timeout_seconds: u64,
    pub cache_ttl_minutes: u64,
    /// OpenClaw's legacy place for the Brave key (its doctor moves it to
    /// `plugins.entries.brave.config.webSearch.apiKey`): read as Brave's.
    #[serde(default)]
    #[schemars(extend("writeOnly" = true))]
    pub api_key: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.web.fetch` (OpenClaw's keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFetchSettings {
    pub enabled: bool,
    /// Characters a result keeps when the call names none.
    pub max_chars: u64,
    /// The most a call may ask for.
    pub max_chars_cap: u64,
    pub max_response_bytes: u64,
    /// At least 1.
    pub timeout_seconds: u64,
    pub max_redirects: u64,
    /// Main-content extraction (Mozilla Readability's algorithm) first.
    pub readability: bool,
    /// Results reused for this long (0: off).
    pub cache_ttl_minutes: u64,
    pub user_agent: String,
    pub ssrf_policy: SsrfPolicySettings,
    /// OpenClaw's keys ferroclaw does not use (`firecrawl`), kept as written.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.web.fetch.ssrfPolicy`: private ranges a fetch may reach anyway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsrfPolicySettings {
    /// 198.18.0.0/15.
    pub allow_rfc2544_benchmark_range: bool,
    /// fc00::/7.
    pub allow_ipv6_unique_local_range: bool,
    /// CIDRs.
    pub allow_cidrs: Vec<String>,
}

/// An allow/deny list of tool names and `group:` groups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolList {
    /// Only these (unset: every tool the other layers leave).
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `agents.list[].tools`, `channels.<id>.tools`: a layer of the policy and
/// its widening of the stranger's profile; OpenClaw's other keys are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolLayer {
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// Added to `tools.untrusted` for turns here (a deny in any layer wins).
    #[serde(default)]
    pub untrusted: Option<ToolList>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// One `tools.beforeToolCall[]` rule: `block` refuses a call, `set`
/// rewrites its parameters, when every `when` regex matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRule {
    /// A tool name, or `*`.
    pub tool: String,
    /// Parameter -> the regex its text must match for the rule to apply.
    #[serde(default)]
    pub when: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub block: Option<String>,
    #[serde(default)]
    pub set: serde_json::Map<String, Value>,
}

/// `tools.exec`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecToolSettings {
    /// `gateway` | `sandbox` | `node`; unset: from `agents.defaults.sandbox.mode`.
    #[serde(default)]
    pub host: Option<String>,
    /// With host `node`: the node (id or name) commands run on.
    #[serde(default)]
    pub node: Option<String>,
    /// `deny` | `allowlist` | `full`.
    pub security: String,
    /// `off` | `on-miss` | `always`.
    pub ask: String,
    /// Seconds an exec approval waits for an operator.
    pub approval_timeout_seconds: u64,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// `tools.askUser`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserToolSettings {
    /// The wait when the model gives no `timeoutSeconds` (30 to 3600).
    pub timeout_seconds: u64,
}

/// `tools.fs`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsToolSettings {
    /// File tools stay inside the agent workspace.
    pub workspace_only: bool,
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}
