//! What the ledger records and answers. Stored as JSON in the row's body
//! (this crate's own shape; `src/protocol/audit.rs` renders OpenClaw's v1
//! records from it).

use serde::{Deserialize, Serialize};

pub use crate::settings::AuditMessages as MessageMode;

/// One recorded activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Activity {
    AgentRun(RunActivity),
    ToolAction(ToolActivity),
    Message(MessageActivity),
    Control(ControlActivity),
}

/// A run started (`end: None`) or finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunActivity {
    pub agent_id: String,
    pub session_key: String,
    pub run_id: String,
    /// Its place among its run's records (1 = started).
    pub source_sequence: u64,
    pub end: Option<End>,
}

/// A tool call started (`end: None`) or finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolActivity {
    pub agent_id: String,
    pub session_key: String,
    pub run_id: String,
    pub source_sequence: u64,
    /// `sha256:<hex>` of the model's call id (never the id itself).
    pub tool_call_id: Option<String>,
    pub tool_name: String,
    pub end: Option<End>,
}

/// How a run or a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    /// Refused by a policy, the operator or the trust boundary.
    Blocked,
    /// Its outcome is not known (a tool cut off by a failure).
    Unknown,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Succeeded => "succeeded",
            End::Failed => "failed",
            End::Cancelled => "cancelled",
            End::TimedOut => "timed_out",
            End::Blocked => "blocked",
            End::Unknown => "unknown",
        }
    }
}

/// A channel message handled (inbound) or delivered (outbound).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageActivity {
    pub channel: String,
    pub conversation: Conversation,
    /// The account, chat, message and (outbound) target ids: raw when
    /// recorded, keyed references once stored.
    pub account: Option<String>,
    pub chat: Option<String>,
    pub message: Option<String>,
    pub target: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Platform messages a delivery took (outbound).
    pub result_count: Option<u64>,
    pub duration_ms: Option<u64>,
    pub flow: Flow,
}

/// Which way a message went, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "direction", rename_all = "snake_case")]
pub enum Flow {
    /// From `sender` (raw when recorded, a keyed reference once stored).
    Inbound { sender: String, outcome: Inbound },
    /// Sent by `agent` (None: the gateway itself, a notice).
    Outbound {
        agent: Option<String>,
        outcome: Outbound,
        media: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inbound {
    /// Handed to its session.
    Completed,
    /// Not handed over: the sender or chat is not allowed (a stranger), or
    /// waits for pairing.
    Refused,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outbound {
    Sent,
    /// Nothing to send (a silent or empty reply).
    Suppressed,
    /// Refused by the platform; `partial`: some chunks landed.
    Failed {
        partial: bool,
    },
    /// Cut off mid-send: whether it landed is not known.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conversation {
    Direct,
    Group,
    Channel,
    Unknown,
}

impl Conversation {
    pub fn as_str(self) -> &'static str {
        match self {
            Conversation::Direct => "direct",
            Conversation::Group => "group",
            Conversation::Channel => "channel",
            Conversation::Unknown => "unknown",
        }
    }
}

/// A change to what the gateway allows or who may use it (ferroclaw's
/// `control` family).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlActivity {
    /// `approval.resolved`, `config.changed`, `device.pairing.requested`,
    /// `device.pairing.approved` (by an operator, or by the gateway's own
    /// rule for local clients), `device.pairing.rejected`,
    /// `device.removed`, `device.token.rotated`,
    /// `device.token.revoked`, `channel.pairing.requested`,
    /// `channel.pairing.approved`, `secrets.reloaded`, `exec.grant.revoked`.
    pub action: String,
    pub outcome: End,
    /// Who did it: `operator` (a client id), `channel_sender` (a keyed
    /// reference) or `system`.
    pub actor: Who,
    /// What it was about: a device id, a channel, a tool, an approval id.
    pub subject: Option<String>,
    /// `allow-once`, `allow-always` or `deny` (approvals).
    pub decision: Option<String>,
    /// Changed config paths (at most 8, then `+N more`), never values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum Who {
    Operator(String),
    /// Raw when recorded, a keyed reference once stored.
    ChannelSender(String),
    System(String),
}

impl Activity {
    pub fn kind(&self) -> &'static str {
        match self {
            Activity::AgentRun(_) => "agent_run",
            Activity::ToolAction(_) => "tool_action",
            Activity::Message(_) => "message",
            Activity::Control(_) => "control",
        }
    }

    /// OpenClaw's status of the record.
    pub fn status(&self) -> &'static str {
        match self {
            Activity::AgentRun(r) => r.end.map(End::as_str).unwrap_or("started"),
            Activity::ToolAction(t) => t.end.map(End::as_str).unwrap_or("started"),
            Activity::Message(m) => match &m.flow {
                Flow::Inbound { outcome, .. } => match outcome {
                    Inbound::Completed => "succeeded",
                    Inbound::Refused => "blocked",
                    Inbound::Failed => "failed",
                },
                Flow::Outbound { outcome, .. } => match outcome {
                    Outbound::Sent => "succeeded",
                    Outbound::Suppressed => "blocked",
                    Outbound::Failed { .. } => "failed",
                    Outbound::Unknown => "unknown",
                },
            },
            Activity::Control(c) => c.outcome.as_str(),
        }
    }

    pub fn agent_id(&self) -> Option<&str> {
        match self {
            Activity::AgentRun(r) => Some(&r.agent_id),
            Activity::ToolAction(t) => Some(&t.agent_id),
            Activity::Message(m) => m.agent_id.as_deref(),
            Activity::Control(_) => None,
        }
    }

    pub fn session_key(&self) -> Option<&str> {
        match self {
            Activity::AgentRun(r) => Some(&r.session_key),
            Activity::ToolAction(t) => Some(&t.session_key),
            Activity::Message(_) | Activity::Control(_) => None,
        }
    }

    pub fn run_id(&self) -> Option<&str> {
        match self {
            Activity::AgentRun(r) => Some(&r.run_id),
            Activity::ToolAction(t) => Some(&t.run_id),
            Activity::Message(m) => m.run_id.as_deref(),
            Activity::Control(_) => None,
        }
    }

    pub fn direction(&self) -> Option<&'static str> {
        match self {
            Activity::Message(m) => Some(match m.flow {
                Flow::Inbound { .. } => "inbound",
                Flow::Outbound { .. } => "outbound",
            }),
            _ => None,
        }
    }

    pub fn channel(&self) -> Option<&str> {
        match self {
            Activity::Message(m) => Some(&m.channel),
            _ => None,
        }
    }
}

/// A stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The ledger's order (1, 2, ...): the cursor pages by it.
    pub sequence: u64,
    /// A unique id (ULID).
    pub event_id: String,
    pub occurred_at: u64,
    pub activity: Activity,
}

impl Entry {
    /// The record's place in its source: a run's own count for run and
    /// tool records, else the ledger's sequence.
    pub fn source_sequence(&self) -> u64 {
        match &self.activity {
            Activity::AgentRun(r) => r.source_sequence.max(1),
            Activity::ToolAction(t) => t.source_sequence.max(1),
            _ => self.sequence,
        }
    }
}

/// What to list. Newest first; every filter is exact.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    pub agent_id: Option<String>,
    pub session_key: Option<String>,
    pub run_id: Option<String>,
    /// None: runs, tools and messages (never `control` unless asked).
    pub kind: Option<String>,
    pub status: Option<String>,
    pub direction: Option<String>,
    pub channel: Option<String>,
    /// Inclusive bounds on `occurred_at`.
    pub after: Option<u64>,
    pub before: Option<u64>,
    /// 1..=500.
    pub limit: usize,
    /// Records below this sequence (a previous page's `next`).
    pub cursor: Option<u64>,
    /// Message records included (false: `audit.list`, runs and tools only).
    pub messages: bool,
}

/// One page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub entries: Vec<Entry>,
    /// The cursor of the next page, when there is one.
    pub next: Option<u64>,
}

/// `logging.audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditSettings {
    /// `enabled` (default true): new records are written.
    pub enabled: bool,
    /// `messages`: `off` (default), `direct` (direct chats) or `all`.
    pub messages: MessageMode,
}

impl AuditSettings {
    pub fn from_settings(s: &crate::settings::AuditLogSettings) -> AuditSettings {
        AuditSettings {
            enabled: s.enabled,
            messages: s.messages,
        }
    }

    /// Whether channel message records are kept.
    pub fn keeps_messages(&self) -> bool {
        self.enabled && self.messages != MessageMode::Off
    }

    /// Whether this activity is recorded under these settings.
    pub fn keeps(&self, a: &Activity) -> bool {
        if !self.enabled {
            return false;
        }
        match a {
            Activity::Message(m) => match self.messages {
                MessageMode::Off => false,
                MessageMode::Direct => m.conversation == Conversation::Direct,
                MessageMode::All => true,
            },
            _ => true,
        }
    }
}
