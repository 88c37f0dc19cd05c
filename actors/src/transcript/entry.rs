//! The typed view of one transcript line. The stored form stays the JSON
//! object (so fields this build does not know, and kinds it does not know,
//! survive an import/export round trip verbatim); everything that asks what
//! an entry is asks here, through [`Entry::of`], and the `delivery` flag of
//! a queued message is read and written only here.

use serde_json::Value;

/// Who wrote a message line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    /// A role this build does not know (kept, never given to the model).
    Other,
}

/// One transcript line, by its `type`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Entry<'a> {
    /// The `session` header line.
    Session,
    Message {
        role: Role,
        /// Stored while a run was busy and not yet delivered to the model.
        pending: bool,
        /// Written by a version that tracks delivery in the inbox
        /// (`messageId`); earlier versions' lines are recovered from the
        /// transcript itself.
        tracked: bool,
        /// The `message` object (`role`, `content`, ...).
        message: &'a Value,
    },
    ModelChange {
        provider: Option<&'a str>,
        model_id: Option<&'a str>,
    },
    /// The older context was summarised; the model sees the summary, then
    /// the lines from `first_kept` on.
    Compaction {
        summary: &'a str,
        first_kept: Option<&'a str>,
    },
    /// Any other kind (`thinking_level_change`, `custom`, later OpenClaw
    /// kinds): kept verbatim, never interpreted.
    Other { kind: &'a str },
}

const PENDING: &str = "pending";

impl<'a> Entry<'a> {
    pub fn of(v: &'a Value) -> Entry<'a> {
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        match text("type").unwrap_or("") {
            "session" => Entry::Session,
            "message" => {
                let message = v.get("message").unwrap_or(&Value::Null);
                let role = match message.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    Some("toolResult") => Role::ToolResult,
                    _ => Role::Other,
                };
                Entry::Message {
                    role,
                    pending: text("delivery") == Some(PENDING),
                    tracked: v.get("messageId").is_some(),
                    message,
                }
            }
            "model_change" => Entry::ModelChange {
                provider: text("provider"),
                model_id: text("modelId"),
            },
            "compaction" => Entry::Compaction {
                summary: text("summary").unwrap_or(""),
                first_kept: text("firstKeptEntryId"),
            },
            kind => Entry::Other { kind },
        }
    }

    /// A message line already delivered to the model (or never queued).
    pub fn is_delivered_message(&self) -> bool {
        matches!(self, Entry::Message { pending: false, .. })
    }

    pub fn is_pending(&self) -> bool {
        matches!(self, Entry::Message { pending: true, .. })
    }
}

/// The line's id.
pub fn id_of(v: &Value) -> Option<&str> {
    v.get("id").and_then(Value::as_str)
}

/// Marks a message line as stored while a run was busy (not yet given to
/// the model).
pub fn mark_pending(entry: &mut Value) {
    entry["delivery"] = Value::String(PENDING.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_read_by_kind_and_unknown_kinds_are_other() {
        let mut m = json!({"type": "message", "id": "a", "messageId": "m",
                           "message": {"role": "user", "content": []}});
        assert!(matches!(
            Entry::of(&m),
            Entry::Message {
                role: Role::User,
                pending: false,
                tracked: true,
                ..
            }
        ));
        mark_pending(&mut m);
        assert!(Entry::of(&m).is_pending() && !Entry::of(&m).is_delivered_message());
        let c = json!({"type": "compaction", "summary": "s", "firstKeptEntryId": "k"});
        assert_eq!(
            Entry::of(&c),
            Entry::Compaction {
                summary: "s",
                first_kept: Some("k")
            }
        );
        let later = json!({"type": "branch_summary", "x": 1});
        assert_eq!(
            Entry::of(&later),
            Entry::Other {
                kind: "branch_summary"
            }
        );
        assert_eq!(Entry::of(&json!({"no": "type"})), Entry::Other { kind: "" });
        assert_eq!(id_of(&m), Some("a"));
    }
}
