//! The command hooks in force: the operator's (`hooks.commands.<hook
//! name>[]`) and those of enabled plugins (Claude `hooks/hooks.json`, plain
//! or `{description, hooks}`, and a manifest's inline `hooks`), each at its
//! point in priority order, with the gates OpenClaw puts on plugins
//! (`allowConversationAccess`, `allowPromptInjection`) applied when the
//! table is built: a hook they forbid is listed as blocked and never runs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::points::{claude_tool_name, HookPoint};
use crate::settings::{CommandHookSettings, PluginHookPolicy};

/// Claude Code's default command timeout.
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest budget an operator may give (OpenClaw's cap).
const MAX_TIMEOUT_MS: u64 = 600_000;

/// Whose hook it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOwner {
    Config,
    Plugin(String),
}

impl HookOwner {
    pub fn label(&self) -> String {
        match self {
            HookOwner::Config => "config".into(),
            HookOwner::Plugin(id) => format!("plugin:{id}"),
        }
    }
}

/// Which protocol the command speaks on stdin and stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `{hook, event, ctx}` in, OpenClaw's result object out.
    OpenClaw,
    /// Claude Code's hook input and output, for the named event.
    Claude(&'static str),
}

/// Which tool calls a tool hook sees.
#[derive(Debug, Clone)]
pub enum Matcher {
    Any,
    /// OpenClaw's: canonical tool ids.
    Tools(Vec<String>),
    /// Claude Code's: a regex over its tool names (ferroclaw's name also matches).
    Pattern(regex::Regex),
}

impl Matcher {
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let Some(tool) = tool else {
            return true;
        };
        match self {
            Matcher::Any => true,
            Matcher::Tools(list) => list.iter().any(|t| t == tool),
            Matcher::Pattern(re) => re.is_match(&claude_tool_name(tool)) || re.is_match(tool),
        }
    }
}

/// One command hook.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// Stable within the table: owner, event and position.
    pub id: String,
    pub owner: HookOwner,
    pub point: HookPoint,
    pub dialect: Dialect,
    /// A shell line (`sh -c`), as Claude Code runs them.
    pub command: String,
    pub matcher: Matcher,
    pub timeout: Duration,
    /// A failure or timeout blocks (else it is logged and skipped).
    pub fail_closed: bool,
    pub priority: i32,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
}

/// A hook that is declared and does not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub owner: String,
    pub what: String,
    pub why: String,
}

/// Every hook in force, by point.
#[derive(Debug, Default)]
pub struct HookTable {
    by_point: BTreeMap<HookPoint, Vec<Arc<CommandHook>>>,
    pub unavailable: Vec<Unavailable>,
}

impl HookTable {
    pub fn at(&self, point: HookPoint) -> &[Arc<CommandHook>] {
        self.by_point.get(&point).map_or(&[], Vec::as_slice)
    }

    pub fn has(&self, point: HookPoint) -> bool {
        !self.at(point).is_empty()
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<CommandHook>> {
        self.by_point.values().flatten()
    }

    /// Adds `hook` unless the plugin's policy forbids its point.
    pub fn add(&mut self, hook: CommandHook, policy: Option<&PluginHookPolicy>) {
        if let (HookOwner::Plugin(id), Some(why)) = (&hook.owner, forbidden(hook.point, policy)) {
            self.unavailable.push(Unavailable {
                owner: format!("plugin:{id}"),
                what: format!("{} ({})", hook.id, hook.point.name()),
                why,
            });
            return;
        }
        let list = self.by_point.entry(hook.point).or_default();
        list.push(Arc::new(hook));
        // Higher priority first; the order they were declared breaks ties.
        list.sort_by_key(|h| std::cmp::Reverse(h.priority));
    }

    /// The operator's `hooks.commands`.
    pub fn add_config(&mut self, commands: &BTreeMap<String, Vec<CommandHookSettings>>) {
        for (name, list) in commands {
            let Some(point) = HookPoint::from_name(name) else {
                continue;
            };
            for (i, s) in list.iter().enumerate() {
                if s.enabled == Some(false) {
                    continue;
                }
                let matcher = match s.matcher.is_empty() {
                    true => Matcher::Any,
                    false => Matcher::Tools(s.matcher.clone()),
                };
                self.add(
                    CommandHook {
                        id: format!("config:{name}#{i}"),
                        owner: HookOwner::Config,
                        point,
                        dialect: Dialect::OpenClaw,
                        command: s.command.clone(),
                        matcher,
                        timeout: budget(point, s.timeout_ms, None),
                        fail_closed: s
                            .on_error
                            .as_deref()
                            .map_or(point.fails_closed(), |e| e == "block"),
                        priority: s.priority.unwrap_or(0),
                        cwd: s.cwd.as_ref().map(PathBuf::from),
                        env: Vec::new(),
                    },
                    None,
                );
            }
        }
    }

    /// A Claude hooks file of plugin `id` (plain or wrapped); what it
    /// declares that cannot run is listed.
    pub fn add_claude(
        &mut self,
        id: &str,
        raw: &Value,
        plugin: &PluginEnv,
        policy: Option<&PluginHookPolicy>,
    ) {
        let events = match (raw.get("hooks"), raw) {
            (Some(Value::Object(m)), _) | (_, Value::Object(m)) => m,
            _ => return,
        };
        for (event, groups) in events {
            if event == "description" {
                continue;
            }
            let Some(point) = HookPoint::from_claude(event) else {
                self.refuse(id, event.clone(), "no such point in ferroclaw");
                continue;
            };
            let groups = groups.as_array().into_iter().flatten().enumerate();
            for (g, group) in groups {
                let at = Claude {
                    id,
                    event,
                    point,
                    plugin,
                    policy,
                };
                self.add_claude_group(&at, g, group);
            }
        }
    }

    fn refuse(&mut self, id: &str, what: String, why: &str) {
        self.unavailable.push(Unavailable {
            owner: format!("plugin:{id}"),
            what,
            why: why.to_string(),
        });
    }

    /// One `{matcher, hooks: [...]}` group of a Claude event.
    fn add_claude_group(&mut self, at: &Claude<'_>, g: usize, group: &Value) {
        let Ok(matcher) = claude_matcher(group.get("matcher").and_then(Value::as_str)) else {
            return self.refuse(at.id, format!("{} matcher", at.event), "not a valid regex");
        };
        let hooks = group.get("hooks").and_then(Value::as_array);
        for (h, hook) in hooks.into_iter().flatten().enumerate() {
            let what = format!("plugin:{}:{}#{g}.{h}", at.id, at.event);
            let command = hook.get("command").and_then(Value::as_str);
            let kind = hook
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("command");
            let (Some(command), "command") = (command, kind) else {
                let why = format!("type {kind} hooks are not run (only command)");
                self.refuse(at.id, what, &why);
                continue;
            };
            let secs = hook.get("timeout").and_then(Value::as_u64);
            let own = secs.map_or(CLAUDE_TIMEOUT, Duration::from_secs);
            let timeout = at
                .policy
                .and_then(|p| p.budget(at.point.name()))
                .unwrap_or(own);
            let hook = CommandHook {
                id: what,
                owner: HookOwner::Plugin(at.id.to_string()),
                point: at.point,
                dialect: Dialect::Claude(claude_name(at.event)),
                command: at.plugin.expand(command),
                matcher: matcher.clone(),
                timeout: timeout.min(Duration::from_millis(MAX_TIMEOUT_MS)),
                fail_closed: false,
                priority: 0,
                cwd: None,
                env: at.plugin.env(),
            };
            self.add(hook, at.policy);
        }
    }
}

/// Where a Claude hook group is declared.
struct Claude<'a> {
    id: &'a str,
    event: &'a str,
    point: HookPoint,
    plugin: &'a PluginEnv,
    policy: Option<&'a PluginHookPolicy>,
}

/// Where a plugin lives, for its commands' `${...}` and env.
#[derive(Debug, Clone)]
pub struct PluginEnv {
    pub root: PathBuf,
    pub data: PathBuf,
}

impl PluginEnv {
    pub fn env(&self) -> Vec<(String, String)> {
        let (root, data) = (
            self.root.display().to_string(),
            self.data.display().to_string(),
        );
        vec![
            ("PLUGIN_ROOT".into(), root.clone()),
            ("PLUGIN_DATA".into(), data.clone()),
            ("CLAUDE_PLUGIN_ROOT".into(), root),
            ("CLAUDE_PLUGIN_DATA".into(), data),
        ]
    }

    /// `${PLUGIN_ROOT}`, `${PLUGIN_DATA}` and Claude's `${CLAUDE_PLUGIN_ROOT}`
    /// expanded once.
    pub fn expand(&self, text: &str) -> String {
        let (root, data) = (
            self.root.display().to_string(),
            self.data.display().to_string(),
        );
        text.replace("${CLAUDE_PLUGIN_ROOT}", &root)
            .replace("${CLAUDE_PLUGIN_DATA}", &data)
            .replace("${PLUGIN_ROOT}", &root)
            .replace("${PLUGIN_DATA}", &data)
    }
}

fn claude_name(event: &str) -> &'static str {
    match event {
        "PreToolUse" => "PreToolUse",
        "PostToolUse" => "PostToolUse",
        "UserPromptSubmit" => "UserPromptSubmit",
        "Stop" => "Stop",
        "SessionStart" => "SessionStart",
        "SessionEnd" => "SessionEnd",
        _ => "Notification",
    }
}

fn claude_matcher(m: Option<&str>) -> Result<Matcher, regex::Error> {
    match m.map(str::trim) {
        None | Some("") | Some("*") => Ok(Matcher::Any),
        Some(p) => Ok(Matcher::Pattern(regex::Regex::new(&format!("^(?:{p})$"))?)),
    }
}

/// A hook's budget: the operator's per-hook value, else its own, else the
/// point's default, at most ten minutes.
fn budget(point: HookPoint, own_ms: Option<u64>, policy: Option<&PluginHookPolicy>) -> Duration {
    let ms = policy
        .and_then(|p| p.budget(point.name()))
        .map(|d| d.as_millis() as u64)
        .or(own_ms)
        .unwrap_or(point.default_timeout().as_millis() as u64);
    Duration::from_millis(ms.clamp(1, MAX_TIMEOUT_MS))
}

/// Why a plugin's policy keeps its hook from `point`, if it does.
fn forbidden(point: HookPoint, policy: Option<&PluginHookPolicy>) -> Option<String> {
    let access = policy.and_then(|p| p.allow_conversation_access) == Some(true);
    if point.needs_conversation_access() && !access {
        return Some("needs plugins.entries.<id>.hooks.allowConversationAccess: true".into());
    }
    let injection = policy.and_then(|p| p.allow_prompt_injection) != Some(false);
    if point.injects_prompt() && !injection {
        return Some("plugins.entries.<id>.hooks.allowPromptInjection is false".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> PluginEnv {
        PluginEnv {
            root: "/p".into(),
            data: "/d".into(),
        }
    }

    #[test]
    fn both_claude_forms_load_and_gates_keep_conversation_hooks_out() {
        let plain = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/check.py", "timeout": 5}]}]});
        let wrapped = json!({"description": "d", "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "ctx.sh"}]}],
            "PreCompact": [{"hooks": [{"type": "command", "command": "x"}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]
        }});
        let mut t = HookTable::default();
        t.add_claude("a", &plain, &env(), None);
        t.add_claude("b", &wrapped, &env(), None);
        let pre = t.at(HookPoint::BeforeToolCall);
        assert_eq!(pre.len(), 1);
        assert_eq!(pre[0].command, "/p/check.py");
        assert_eq!(pre[0].timeout, Duration::from_secs(5));
        assert!(pre[0].matcher.matches(Some("exec")));
        assert!(!pre[0].matcher.matches(Some("read")));
        assert!(
            !t.has(HookPoint::BeforePromptBuild),
            "no conversation access: not run"
        );
        assert_eq!(t.unavailable.len(), 3, "{:?}", t.unavailable);
        let allowed = PluginHookPolicy {
            allow_conversation_access: Some(true),
            ..Default::default()
        };
        let mut t = HookTable::default();
        t.add_claude("b", &wrapped, &env(), Some(&allowed));
        assert!(t.has(HookPoint::BeforePromptBuild));
        let closed = PluginHookPolicy {
            allow_conversation_access: Some(true),
            allow_prompt_injection: Some(false),
            ..Default::default()
        };
        let mut t = HookTable::default();
        t.add_claude("b", &wrapped, &env(), Some(&closed));
        assert!(!t.has(HookPoint::BeforePromptBuild));
    }
}
