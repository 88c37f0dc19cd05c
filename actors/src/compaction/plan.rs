//! Where a compaction cuts a session's stored transcript, planned without
//! the session: the part it replaces, the entry the kept part starts at,
//! and what must still hold when the job is done for its result to apply
//! (same transcript, no compaction since, the context not shorter).

use serde_json::Value;

use super::job::{self, Keep};
use super::stored;
use super::tokens::estimate;
use crate::provider::Messages;

/// The part a compaction replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The index of the first kept message of the context.
    pub cut: usize,
    /// The transcript entry id of that message.
    pub first_kept: String,
    /// The estimate of the context before.
    pub tokens_before: u64,
    history_len: usize,
    compactions: u32,
    session_id: String,
}

/// What the plan is made on: the session's transcript and its state now.
pub struct Planned<'a> {
    pub entries: &'a [Value],
    /// Messages in the session's context now.
    pub context_len: usize,
    pub session_id: &'a str,
    /// Compactions so far.
    pub compactions: u32,
}

/// The plan keeping `keep`, and the older part to summarise. None: nothing
/// to compact, or the context does not match the transcript (it would cut
/// elsewhere than the session sees).
pub fn plan(on: Planned, keep: Keep) -> Option<(Plan, Messages)> {
    let (history, ids) = stored::load_history(on.entries);
    let cut = job::cut(&history, keep)?;
    let first_kept = ids.get(cut).cloned().flatten()?;
    if history.len() != on.context_len {
        tracing::warn!(session_id = %on.session_id, "the context does not match the transcript: not compacted");
        return None;
    }
    let plan = Plan {
        cut,
        first_kept,
        tokens_before: history.iter().map(|m| estimate(m)).sum(),
        history_len: history.len(),
        compactions: on.compactions,
        session_id: on.session_id.to_string(),
    };
    Some((plan, history[..cut].to_vec()))
}

impl Plan {
    /// Whether a session now at `session_id`, after `compactions`, with
    /// `context_len` messages, is still the one this plan was made on (it
    /// only grew by appending since).
    pub fn holds(&self, session_id: &str, compactions: u32, context_len: usize) -> bool {
        self.session_id == session_id
            && self.compactions == compactions
            && context_len >= self.history_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript;
    use serde_json::json;

    fn message(role: &str, text: &str) -> Value {
        transcript::message_entry(None, json!({"role": role, "content": text}))
    }

    fn turns(n: usize) -> Vec<Value> {
        (0..n)
            .flat_map(|i| {
                [
                    message("user", &format!("question {i}")),
                    message("assistant", &format!("answer {i}")),
                ]
            })
            .collect()
    }

    #[test]
    fn the_last_two_turns_are_kept_and_the_rest_is_planned_away() {
        let entries = turns(4);
        let on = Planned {
            entries: &entries,
            context_len: 8,
            session_id: "s1",
            compactions: 0,
        };
        let (plan, older) = plan(on, Keep::LastTwoTurns).unwrap();
        assert_eq!(plan.cut, 4);
        assert_eq!(older.len(), 4);
        assert_eq!(
            Some(plan.first_kept.as_str()),
            transcript::id_of(&entries[4])
        );
        assert!(plan.tokens_before > 0);
        assert!(plan.holds("s1", 0, 8) && plan.holds("s1", 0, 10));
        assert!(!plan.holds("s2", 0, 8), "another transcript");
        assert!(!plan.holds("s1", 1, 8), "compacted meanwhile");
        assert!(!plan.holds("s1", 0, 7), "shorter than planned on");
    }

    fn on(entries: &[Value], context_len: usize) -> Planned<'_> {
        Planned {
            entries,
            context_len,
            session_id: "s1",
            compactions: 0,
        }
    }

    #[test]
    fn too_little_or_a_context_that_does_not_match_plans_nothing() {
        assert!(plan(on(&turns(2), 4), Keep::LastTwoTurns).is_none());
        let long = turns(4);
        assert!(plan(on(&long, 7), Keep::LastTwoTurns).is_none());
        assert!(plan(on(&long, 8), Keep::Last(2)).is_some());
    }
}
