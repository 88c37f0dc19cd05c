//! The hook points ferroclaw's runtime emits, with OpenClaw's names, kinds,
//! default budgets and failure policies (its hook reference), and the
//! Claude Code events that map onto them.

use std::time::Duration;

/// Where a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookPoint {
    BeforeModelResolve,
    BeforePromptBuild,
    BeforeAgentReply,
    BeforeToolCall,
    AfterToolCall,
    MessageReceived,
    MessageSending,
    MessageSent,
    AgentEnd,
    SessionStart,
    SessionEnd,
    GatewayStart,
    GatewayStop,
    ModelCallStarted,
    ModelCallEnded,
    /// ferroclaw's: an operator is asked something (an exec approval, an
    /// `ask_user` question): Claude Code's `Notification`.
    Notification,
}

/// How a point's hooks run and merge (OpenClaw's execution contracts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// In priority order; results merge.
    Modify,
    /// In priority order; the first that handles it wins.
    Claim,
    /// In priority order; a block stops the rest.
    Gate,
    /// All at once; nothing waits for their answers.
    Observe,
}

impl HookPoint {
    pub const ALL: [HookPoint; 16] = [
        HookPoint::BeforeModelResolve,
        HookPoint::BeforePromptBuild,
        HookPoint::BeforeAgentReply,
        HookPoint::BeforeToolCall,
        HookPoint::AfterToolCall,
        HookPoint::MessageReceived,
        HookPoint::MessageSending,
        HookPoint::MessageSent,
        HookPoint::AgentEnd,
        HookPoint::SessionStart,
        HookPoint::SessionEnd,
        HookPoint::GatewayStart,
        HookPoint::GatewayStop,
        HookPoint::ModelCallStarted,
        HookPoint::ModelCallEnded,
        HookPoint::Notification,
    ];

    /// OpenClaw's name.
    pub fn name(self) -> &'static str {
        match self {
            HookPoint::BeforeModelResolve => "before_model_resolve",
            HookPoint::BeforePromptBuild => "before_prompt_build",
            HookPoint::BeforeAgentReply => "before_agent_reply",
            HookPoint::BeforeToolCall => "before_tool_call",
            HookPoint::AfterToolCall => "after_tool_call",
            HookPoint::MessageReceived => "message_received",
            HookPoint::MessageSending => "message_sending",
            HookPoint::MessageSent => "message_sent",
            HookPoint::AgentEnd => "agent_end",
            HookPoint::SessionStart => "session_start",
            HookPoint::SessionEnd => "session_end",
            HookPoint::GatewayStart => "gateway_start",
            HookPoint::GatewayStop => "gateway_stop",
            HookPoint::ModelCallStarted => "model_call_started",
            HookPoint::ModelCallEnded => "model_call_ended",
            HookPoint::Notification => "notification",
        }
    }

    /// Its bit in a set of points.
    pub fn bit(self) -> u32 {
        1 << HookPoint::ALL.iter().position(|p| *p == self).unwrap_or(31)
    }

    pub fn from_name(name: &str) -> Option<HookPoint> {
        HookPoint::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The point a Claude Code hook event runs at.
    pub fn from_claude(event: &str) -> Option<HookPoint> {
        Some(match event {
            "PreToolUse" => HookPoint::BeforeToolCall,
            "PostToolUse" => HookPoint::AfterToolCall,
            "UserPromptSubmit" => HookPoint::BeforePromptBuild,
            "Stop" => HookPoint::AgentEnd,
            "SessionStart" => HookPoint::SessionStart,
            "SessionEnd" => HookPoint::SessionEnd,
            "Notification" => HookPoint::Notification,
            _ => return None,
        })
    }

    pub fn kind(self) -> HookKind {
        match self {
            HookPoint::BeforeModelResolve
            | HookPoint::BeforePromptBuild
            | HookPoint::MessageSending
            | HookPoint::AfterToolCall => HookKind::Modify,
            HookPoint::BeforeAgentReply => HookKind::Claim,
            HookPoint::BeforeToolCall => HookKind::Gate,
            _ => HookKind::Observe,
        }
    }

    /// OpenClaw's runner default per handler.
    pub fn default_timeout(self) -> Duration {
        Duration::from_secs(match self {
            HookPoint::AgentEnd => 30,
            HookPoint::GatewayStop => 5,
            _ => 15,
        })
    }

    /// Whether a hook that fails or times out blocks (OpenClaw's
    /// `before_tool_call`); the others are logged and skipped.
    pub fn fails_closed(self) -> bool {
        self == HookPoint::BeforeToolCall
    }

    /// Points a plugin reaches only with `allowConversationAccess: true`.
    pub fn needs_conversation_access(self) -> bool {
        matches!(
            self,
            HookPoint::BeforeModelResolve
                | HookPoint::BeforePromptBuild
                | HookPoint::BeforeAgentReply
                | HookPoint::AgentEnd
        )
    }

    /// Points `allowPromptInjection: false` closes.
    pub fn injects_prompt(self) -> bool {
        self == HookPoint::BeforePromptBuild
    }
}

/// ferroclaw's tool names as Claude Code's hooks match them.
pub fn claude_tool_name(tool: &str) -> String {
    let known = match tool {
        "exec" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "apply_patch" => "MultiEdit",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "sessions_spawn" => "Task",
        _ => "",
    };
    if !known.is_empty() {
        return known.into();
    }
    match tool.split_once("__") {
        Some((server, name)) => format!("mcp__{server}__{name}"),
        None => tool.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_has_one_name_and_claude_events_map_to_points() {
        for p in HookPoint::ALL {
            assert_eq!(HookPoint::from_name(p.name()), Some(p));
        }
        assert_eq!(
            HookPoint::from_claude("UserPromptSubmit"),
            Some(HookPoint::BeforePromptBuild)
        );
        assert_eq!(HookPoint::from_claude("PreCompact"), None);
        assert_eq!(claude_tool_name("exec"), "Bash");
        assert_eq!(claude_tool_name("docs__search"), "mcp__docs__search");
    }
}
