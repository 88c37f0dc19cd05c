//! Tool plumbing between the model and the executor (seed 000):
//! - name normalisation: provider-mangled names (`functions.exec`,
//!   `default_api:read`, `Bash`, `read_file`, `functions.exec:0` ids) map to
//!   the offered tool; when the name says nothing, the `toolCallId` may;
//! - allowlists: `tools.allow/deny`, `agents.list[].tools.allow/deny`,
//!   `channels.<id>.tools.allow/deny` of every channel the turn's messages
//!   came by (and a per-run list); a tool must pass every layer; groups
//!   `group:fs`, `group:runtime`, `group:web`, `group:sessions`,
//!   `group:automation`, `group:messaging`, `group:agents` and `*` (`cron`
//!   names `automations`, OpenClaw's alias);
//! - the untrusted profile: what a turn holding a stranger's message may
//!   have (`tools.untrusted`, widened per agent or channel);
//! - before-tool-call hooks: config rules (`tools.beforeToolCall`: block,
//!   or rewrite parameters) and an interface for code hooks;
//! - result truncation (head and tail kept, `tools.resultMaxChars`);
//! - transcript repair before a provider call: tool calls without a result
//!   get a placeholder result, results without a call are dropped.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::provider::{ChatMessage, MessageRole, Messages, ToolCall, ToolSpec};
use crate::settings::ToolLayer;

crate::reason_error! {
    /// What is wrong with a tool policy setting, or a tool name no tool answers to.
    pub struct PolicyError;
}

/// Result text a call without a stored result gets in the repaired history.
pub const MISSING_RESULT: &str =
    "[No result was recorded for this tool call (the run was interrupted); run it again if it is still needed.]";

fn group(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "group:fs" => &["read", "write", "edit", "apply_patch", "ls", "find", "grep"],
        "group:runtime" => &["exec", "process"],
        "group:web" => &["web_fetch", "web_search"],
        "group:memory" => &["memory_search", "memory_get"],
        "group:sessions" => &[
            "sessions_list",
            "sessions_history",
            "sessions_search",
            "sessions_send",
            "sessions_spawn",
            "sessions_yield",
            "subagents",
            "session_status",
        ],
        "group:automation" => &["heartbeat_respond", "automations", "gateway"],
        "group:messaging" => &["message"],
        "group:agents" => &["agents_list", "ask_user", "progress_card"],
        "group:media" => &["view_image", "pdf"],
        "group:nodes" => &["nodes"],
        "group:ui" => &["browser"],
        _ => return None,
    })
}

/// One allow/deny layer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AllowDeny {
    pub allow: Option<Vec<String>>,
    pub deny: Vec<String>,
}

fn expand(list: &[String]) -> HashSet<String> {
    let mut out = HashSet::new();
    for item in list {
        let item = item.trim().to_ascii_lowercase();
        match group(&item) {
            Some(g) => out.extend(g.iter().map(|s| s.to_string())),
            // OpenClaw's permanent alias of the scheduler tool.
            None if item == "cron" => {
                out.insert("automations".into());
            }
            None => {
                out.insert(item);
            }
        }
    }
    out
}

impl AllowDeny {
    /// A layer as the settings write it.
    fn of(allow: &Option<Vec<String>>, deny: &[String]) -> AllowDeny {
        AllowDeny {
            allow: allow.clone(),
            deny: deny.to_vec(),
        }
    }

    pub fn permits(&self, tool: &str) -> bool {
        !self.denies(tool) && self.allow.as_ref().is_none_or(|a| listed(a, tool))
    }

    fn denies(&self, tool: &str) -> bool {
        listed(&self.deny, tool)
    }

    /// Whether its allow list names `tool` (no list names nothing). An MCP
    /// tool must be named itself (`named`): `*` and groups do not reach
    /// a stranger's turn with a third party's tools.
    fn names(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_some_and(|a| match crate::tool::is_mcp(tool) {
                true => named(a, tool),
                false => listed(a, tool),
            })
    }
}

fn listed(list: &[String], tool: &str) -> bool {
    let set = expand(list);
    let mcp = crate::tool::is_mcp(tool);
    let tool = tool.to_ascii_lowercase();
    let lsp = crate::tool::is_lsp(&tool);
    set.contains("*")
        || set.contains(&tool)
        || (mcp && (set.contains("bundle-mcp") || set.contains("group:mcp")))
        || (lsp && set.contains("bundle-lsp"))
        || ((mcp || lsp) && set.contains("group:plugins"))
        || set
            .iter()
            .any(|p| p.contains('*') && crate::settings::glob(p, &tool))
}

/// Whether `list` names `tool` itself: exactly, or by a glob with a
/// prefix (`docs__*`); never by `*` or a group. What an MCP tool needs to
/// be offered to a turn holding a stranger's message.
fn named(list: &[String], tool: &str) -> bool {
    let tool = tool.to_ascii_lowercase();
    list.iter().map(|i| i.trim().to_ascii_lowercase()).any(|p| {
        p == tool || (p.contains('*') && !p.starts_with('*') && crate::settings::glob(&p, &tool))
    })
}

/// The tools a turn holding a stranger's message may be offered
/// (`tools.untrusted`), and where the operator widened it: an agent's
/// `agents.list[].tools.untrusted` (a binding that routes strangers to that
/// agent widens it for them) and a channel's `channels.<id>.tools.untrusted`
/// (widens only when every channel of the turn does). A deny anywhere wins.
/// Whatever is offered, `exec` runs only in the sandbox and file tools never
/// touch the protected files (`trust::protected`).
#[derive(Debug, Clone, Default)]
pub struct UntrustedProfile {
    pub base: AllowDeny,
    pub agents: HashMap<String, AllowDeny>,
    pub channels: HashMap<String, AllowDeny>,
}

impl UntrustedProfile {
    pub fn permits(&self, tool: &str, agent: &str, channels: &[String]) -> bool {
        if super::untrusted::never(tool) {
            return false;
        }
        let agent = self.agents.get(agent);
        let chans: Vec<Option<&AllowDeny>> =
            channels.iter().map(|c| self.channels.get(c)).collect();
        if self.base.denies(tool)
            || agent.is_some_and(|l| l.denies(tool))
            || chans.iter().flatten().any(|l| l.denies(tool))
        {
            return false;
        }
        self.base.names(tool)
            || agent.is_some_and(|l| l.names(tool))
            || (!chans.is_empty() && chans.iter().all(|l| l.is_some_and(|l| l.names(tool))))
    }
}

/// What a hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    Continue,
    Block(String),
}

/// A before-tool-call hook: may rewrite the call's arguments or block it.
pub trait ToolHook: Send + Sync {
    fn before_tool_call(&self, call: &mut ToolCall) -> HookDecision;
}

/// One rule: tool (or `*`), conditions (parameter, regex), block reason, parameters to set.
type Rule = (
    String,
    Vec<(String, Regex)>,
    Option<String>,
    serde_json::Map<String, Value>,
);

/// `tools.beforeToolCall` rules, in order; the first block wins.
#[derive(Debug, Default)]
pub struct ConfigRules {
    rules: Vec<Rule>,
}

impl ConfigRules {
    fn parse(list: &[crate::settings::ToolRule]) -> Result<ConfigRules, PolicyError> {
        let mut rules = Vec::new();
        for (i, r) in list.iter().cloned().enumerate() {
            if r.block.is_none() && r.set.is_empty() {
                return Err(PolicyError::from(format!(
                    "tools.beforeToolCall[{i}]: needs `block` or `set`"
                )));
            }
            let mut when = Vec::new();
            for (param, pattern) in r.when {
                let re = Regex::new(&pattern)
                    .map_err(|e| format!("tools.beforeToolCall[{i}].when.{param}: {e}"))?;
                when.push((param, re));
            }
            rules.push((r.tool.to_ascii_lowercase(), when, r.block, r.set));
        }
        Ok(ConfigRules { rules })
    }
}

impl ToolHook for ConfigRules {
    fn before_tool_call(&self, call: &mut ToolCall) -> HookDecision {
        for (tool, when, block, set) in &self.rules {
            if tool != "*" && *tool != call.name {
                continue;
            }
            let applies = when.iter().all(|(param, re)| {
                let text = match call.arguments.get(param) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => return false,
                };
                re.is_match(&text)
            });
            if !applies {
                continue;
            }
            if let Some(reason) = block {
                return HookDecision::Block(reason.clone());
            }
            if let Value::Object(args) = &mut call.arguments {
                for (k, v) in set {
                    args.insert(k.clone(), v.clone());
                }
            }
        }
        HookDecision::Continue
    }
}

/// `tools.exec` defaults (a session's `execHost/execSecurity/execAsk` win).
#[derive(Debug, Clone)]
pub struct ExecDefaults {
    /// None: from the sandbox mode per session.
    pub host: Option<crate::approvals::Host>,
    /// `tools.exec.node`: the node for host `node`.
    pub node: Option<String>,
    pub security: crate::approvals::Security,
    pub ask: crate::approvals::Ask,
    pub sandbox: super::sandbox::SandboxSettings,
}

impl Default for ExecDefaults {
    fn default() -> Self {
        ExecDefaults {
            host: None,
            node: None,
            security: crate::approvals::Security::Allowlist,
            ask: crate::approvals::Ask::OnMiss,
            sandbox: Default::default(),
        }
    }
}

impl ExecDefaults {
    /// From `tools.exec.{host, security, ask}` and the sandbox settings.
    pub fn from_config(
        exec: &crate::settings::ExecToolSettings,
        sandbox: super::sandbox::SandboxSettings,
    ) -> Result<ExecDefaults, PolicyError> {
        use crate::approvals::{Ask, Host, Security};
        let host = match exec.host.as_deref() {
            Some(h) => Some(Host::parse(h).map_err(|e| format!("tools.exec.host: {e}"))?),
            None => None,
        };
        Ok(ExecDefaults {
            host,
            node: exec.node.clone(),
            security: Security::parse(&exec.security)
                .map_err(|e| format!("tools.exec.security: {e}"))?,
            ask: Ask::parse(&exec.ask).map_err(|e| format!("tools.exec.ask: {e}"))?,
            sandbox,
        })
    }
}

/// `tools.profile` (OpenClaw's): the base set of tools before the allow
/// and deny layers; `minimal`, `coding`, `messaging`, or `full` (and unset:
/// no filter). `tools.alsoAllow` adds to a limited profile. OpenClaw's
/// limited profiles keep `gateway`'s update action only; ferroclaw's
/// `gateway` has no update action, so they leave it out unless
/// `alsoAllow` names it.
fn profile(name: Option<&str>, also: &[String]) -> Result<Option<AllowDeny>, ProfileError> {
    let base: &[&str] = match name {
        None | Some("full") => return Ok(None),
        Some("minimal") => &["session_status"],
        Some("coding") => &[
            "group:fs",
            "group:runtime",
            "group:web",
            "group:sessions",
            "group:memory",
            "automations",
            "view_image",
            "ask_user",
            "progress_card",
            "bundle-mcp",
        ],
        Some("messaging") => &[
            "group:messaging",
            "sessions_list",
            "sessions_history",
            "sessions_search",
            "sessions_send",
            "sessions_spawn",
            "subagents",
            "session_status",
            "ask_user",
            "bundle-mcp",
        ],
        Some(other) => return Err(ProfileError(other.to_string())),
    };
    let mut allow: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    allow.extend(also.iter().cloned());
    Ok(Some(AllowDeny {
        allow: Some(allow),
        deny: Vec::new(),
    }))
}

/// A `tools.profile` that is none of OpenClaw's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tools.profile: {0:?} is not a profile (minimal, coding, messaging, full)")]
pub struct ProfileError(String);

/// The tool settings every run starts from.
#[derive(Default)]
pub struct ToolPolicy {
    /// `tools.profile` with `tools.alsoAllow` (None: every tool).
    pub profile: Option<AllowDeny>,
    pub global: AllowDeny,
    pub agents: HashMap<String, AllowDeny>,
    pub channels: HashMap<String, AllowDeny>,
    pub untrusted: UntrustedProfile,
    /// Characters of a tool result kept (head and tail).
    pub result_max_chars: usize,
    pub hooks: Vec<Arc<dyn ToolHook>>,
    pub exec: ExecDefaults,
    /// Command hooks at the lifecycle points (none until the tree starts
    /// its `HookHub`).
    pub lifecycle: crate::hooks::HookClient,
}

impl std::fmt::Debug for ToolPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolPolicy")
            .field("global", &self.global)
            .field("agents", &self.agents)
            .field("channels", &self.channels)
            .field("untrusted", &self.untrusted)
            .field("result_max_chars", &self.result_max_chars)
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

impl ToolPolicy {
    /// From `tools`, `agents.list[].tools` and `channels.<id>.tools`.
    pub fn from_config(
        settings: &crate::settings::ToolsSettings,
        agents: &[(String, Option<ToolLayer>)],
        channels: &[(String, Option<ToolLayer>)],
    ) -> Result<ToolPolicy, PolicyError> {
        if settings.result_max_chars < 1000 {
            return Err("tools.resultMaxChars: an integer of at least 1000".into());
        }
        let mut p = ToolPolicy {
            profile: profile(settings.profile.as_deref(), &settings.also_allow)
                .map_err(|e| e.to_string())?,
            global: AllowDeny::of(&settings.allow, &settings.deny),
            result_max_chars: settings.result_max_chars as usize,
            ..Default::default()
        };
        // No list: nothing beyond what is named (never "everything").
        p.untrusted.base = settings
            .untrusted
            .as_ref()
            .map(|u| AllowDeny::of(&u.allow, &u.deny))
            .unwrap_or_default();
        p.untrusted.base.allow.get_or_insert_with(Vec::new);
        if !settings.before_tool_call.is_empty() {
            p.hooks
                .push(Arc::new(ConfigRules::parse(&settings.before_tool_call)?));
        }
        for (id, t) in agents {
            if let Some(t) = t {
                let id = id.to_ascii_lowercase();
                p.agents
                    .insert(id.clone(), AllowDeny::of(&t.allow, &t.deny));
                if let Some(u) = &t.untrusted {
                    p.untrusted
                        .agents
                        .insert(id, AllowDeny::of(&u.allow, &u.deny));
                }
            }
        }
        for (id, t) in channels {
            if let Some(t) = t {
                p.channels
                    .insert(id.clone(), AllowDeny::of(&t.allow, &t.deny));
                if let Some(u) = &t.untrusted {
                    let l = AllowDeny::of(&u.allow, &u.deny);
                    p.untrusted.channels.insert(id.clone(), l);
                }
            }
        }
        Ok(p)
    }

    /// The tools a turn of `agent` is offered: every layer must permit it
    /// (the layer of each channel the turn's messages came by: the strictest
    /// wins), the run's own list when it has one, and the untrusted profile
    /// when the turn holds a stranger's message.
    pub fn offered(
        &self,
        all: &[ToolSpec],
        agent: &str,
        trust: &crate::trust::Trust,
        run: Option<&AllowDeny>,
    ) -> Vec<ToolSpec> {
        all.iter()
            .filter(|t| self.offers(&t.name, agent, trust, run))
            .cloned()
            .collect()
    }

    /// `offered`, sharing `all` when every tool is offered (a trusted turn
    /// under the default policy): no tool, schema included, is copied.
    pub fn offered_shared(
        &self,
        all: &Arc<[ToolSpec]>,
        agent: &str,
        trust: &crate::trust::Trust,
        run: Option<&AllowDeny>,
    ) -> Arc<[ToolSpec]> {
        if all.iter().all(|t| self.offers(&t.name, agent, trust, run)) {
            return all.clone();
        }
        self.offered(all, agent, trust, run).into()
    }

    /// Whether every layer permits tool `name` to this turn.
    fn offers(
        &self,
        name: &str,
        agent: &str,
        trust: &crate::trust::Trust,
        run: Option<&AllowDeny>,
    ) -> bool {
        self.profile.as_ref().is_none_or(|l| l.permits(name))
            && self.global.permits(name)
            && self.agents.get(agent).is_none_or(|l| l.permits(name))
            && trust
                .channels
                .iter()
                .all(|c| self.channels.get(c).is_none_or(|l| l.permits(name)))
            && run.is_none_or(|l| l.permits(name))
            && (!trust.untrusted || self.untrusted.permits(name, agent, &trust.channels))
    }
}

/// A tool name as models mangle it, made plain: lowercased, `-` as `_`,
/// without a namespace (`functions.`, `default_api:`...) or an index
/// suffix (`exec:0`), and other runtimes' names for the same tool
/// (`bash`, `read_file`...) mapped to ours.
fn clean(raw: &str) -> String {
    let mut n = raw.trim().to_ascii_lowercase().replace('-', "_");
    for prefix in [
        "functions.",
        "function.",
        "tools.",
        "tool.",
        "default_api:",
        "default_api.",
    ] {
        if let Some(rest) = n.strip_prefix(prefix) {
            n = rest.to_string();
        }
    }
    // `exec:0` (an index suffix some providers add).
    if let Some((base, idx)) = n.rsplit_once(':') {
        if idx.chars().all(|c| c.is_ascii_digit()) {
            n = base.to_string();
        }
    }
    let alias = match n.as_str() {
        "bash" | "shell" | "sh" | "run" | "run_command" | "execute" | "terminal" => "exec",
        "read_file" | "cat" | "view" => "read",
        "write_file" | "create_file" => "write",
        "edit_file" | "str_replace" | "str_replace_editor" | "replace" => "edit",
        "list" | "list_dir" | "list_directory" | "ls_dir" => "ls",
        "glob" | "find_files" => "find",
        "search" | "rg" | "ripgrep" | "search_files" => "grep",
        "fetch" | "webfetch" | "fetch_url" => "web_fetch",
        "patch" | "applypatch" => "apply_patch",
        // OpenClaw's permanent alias (old transcripts, skills).
        "cron" => "automations",
        other => return other.to_string(),
    };
    alias.to_string()
}

/// Maps a model's tool name to an offered one. Err: the message for the model.
pub fn normalize_name(name: &str, call_id: &str, offered: &[&str]) -> Result<String, PolicyError> {
    if offered.contains(&name) {
        return Ok(name.to_string());
    }
    let n = clean(name);
    if offered.contains(&n.as_str()) {
        return Ok(n);
    }
    // The name says nothing useful: maybe the call id does (`functions.read:3`).
    if name.trim().is_empty() || !offered.iter().any(|o| *o == n) {
        let id =
            clean(
                call_id
                    .split_once('_')
                    .map_or(call_id, |(p, r)| if p == "call" { r } else { call_id }),
            );
        // `exec_7`: a trailing `_<n>` counter.
        let id = match id.rsplit_once('_') {
            Some((base, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                base.to_string()
            }
            _ => id,
        };
        let hits: Vec<&&str> = offered.iter().filter(|o| id == **o).collect();
        if let [one] = hits.as_slice() {
            return Ok(one.to_string());
        }
    }
    Err(PolicyError(if name.trim().is_empty() {
        format!(
            "Tool call without a name. Available tools: {}.",
            offered.join(", ")
        )
    } else {
        format!(
            "Unknown tool {name:?}. Available tools: {}.",
            offered.join(", ")
        )
    }))
}

/// Keeps `max` characters of a result: the head and the tail with a marker.
pub fn truncate_result(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head = max * 3 / 4;
    let tail = max / 4;
    let h: String = text.chars().take(head).collect();
    let t: String = text.chars().skip(n - tail).collect();
    format!(
        "{h}\n\n[... {} characters cut from this tool result ...]\n\n{t}",
        n - head - tail
    )
}

/// Makes a history safe to send: a tool call whose result is missing gets
/// a placeholder result right after the results that exist; a result with
/// no preceding call is dropped. Unchanged histories are returned as is.
pub fn repair(messages: &Messages) -> Messages {
    let mut out: Messages = Vec::with_capacity(messages.len());
    let mut changed = false;
    let mut i = 0;
    let mut seen_calls: HashSet<String> = HashSet::new();
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            MessageRole::Assistant if !m.tool_calls.is_empty() => {
                out.push(m.clone());
                let mut answered = HashSet::new();
                let mut j = i + 1;
                while j < messages.len() && messages[j].role == MessageRole::Tool {
                    let r = &messages[j];
                    let id = r.tool_call_id.clone().unwrap_or_default();
                    if m.tool_calls.iter().any(|c| c.id == id) && answered.insert(id) {
                        out.push(r.clone());
                    } else {
                        changed = true; // orphan or duplicate
                    }
                    j += 1;
                }
                for c in &m.tool_calls {
                    seen_calls.insert(c.id.clone());
                    if !answered.contains(&c.id) {
                        changed = true;
                        out.push(Arc::new(ChatMessage::tool_result(
                            &c.id,
                            MISSING_RESULT,
                            true,
                        )));
                    }
                }
                i = j;
                continue;
            }
            MessageRole::Tool => {
                // A result not right after its call.
                changed = true;
            }
            _ => out.push(m.clone()),
        }
        i += 1;
    }
    if changed {
        out
    } else {
        messages.clone()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod profile_tests {
    use super::*;

    #[test]
    fn profiles_are_openclaws_and_also_allow_widens_them() {
        let messaging = profile(Some("messaging"), &["automations".into()])
            .unwrap()
            .unwrap();
        assert!(messaging.permits("message") && messaging.permits("sessions_history"));
        assert!(messaging.permits("automations") && messaging.permits("docs__search"));
        assert!(!messaging.permits("exec") && !messaging.permits("gateway"));
        let coding = profile(Some("coding"), &[]).unwrap().unwrap();
        assert!(coding.permits("exec") && coding.permits("read") && coding.permits("web_search"));
        assert!(!coding.permits("message"));
        let minimal = profile(Some("minimal"), &[]).unwrap().unwrap();
        assert!(minimal.permits("session_status") && !minimal.permits("read"));
        assert_eq!(profile(Some("full"), &[]).unwrap(), None);
        assert_eq!(profile(None, &[]).unwrap(), None);
        assert!(profile(Some("everything"), &[]).is_err());
    }
}
