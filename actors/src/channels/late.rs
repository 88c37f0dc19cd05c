//! A reply delivered long after the message it answers says how late it is
//! (`messages.lateReplyNoticeMinutes`, default 10): one line before the
//! reply's first chunk, "(Replying to your message from 3 h ago.)". Its age
//! is the platform's time of the message (sent while the gateway was down,
//! caught up after a restart, or answered after a long queue) to the moment
//! the reply goes into the outbox. Only the text carries it: a spoken reply
//! speaks the agent's words alone. In English, as every gateway notice is.

use super::ledger::Delivery;

/// "12 min", "3 h", "2 days": the age in its largest whole unit.
pub fn age_words(ms: u64) -> String {
    let min = ms / 60_000;
    match min {
        0..=1 => "a minute".to_string(),
        2..=59 => format!("{min} min"),
        60..=2879 => format!("{} h", min / 60),
        _ => format!("{} days", min / 1440),
    }
}

/// The reply's text with the note, when `d` is late at `now_ms`.
pub fn noted(d: &Delivery, text: Option<String>, now_ms: u64) -> Option<String> {
    let text = text?;
    let Some(late) = d.late.filter(|l| l.message_ms > 0) else {
        return Some(text);
    };
    let age = now_ms.saturating_sub(late.message_ms);
    if age < late.after_ms || text.trim().is_empty() {
        return Some(text);
    }
    let note = format!("(Replying to your message from {} ago.)", age_words(age));
    tracing::info!(account = %d.account, run_id = %d.run_id, age_ms = age, "late reply: its age noted");
    Some(format!("{note}\n\n{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::ledger::{DeliveryOf, Late};

    fn delivery(late: Option<Late>) -> Delivery {
        Delivery {
            account: "default".into(),
            session_key: DeliveryOf::Send,
            run_id: "r".into(),
            target: "42".into(),
            thread_id: None,
            reply_to: None,
            answers: None,
            created_ms: 0,
            finalized: false,
            chat_type: None,
            untrusted: false,
            kind: Default::default(),
            voice_in: false,
            late,
        }
    }

    #[test]
    fn ages_read_in_their_largest_whole_unit() {
        let min = 60_000;
        assert_eq!(age_words(30_000), "a minute");
        assert_eq!(age_words(12 * min), "12 min");
        assert_eq!(age_words(3 * 60 * min + 59 * min), "3 h");
        assert_eq!(age_words(47 * 60 * min), "47 h");
        assert_eq!(age_words(3 * 24 * 60 * min), "3 days");
    }

    #[test]
    fn only_a_reply_past_the_bound_carries_the_note() {
        let late = Some(Late {
            message_ms: 1_000,
            after_ms: 600_000,
        });
        let reply = || Some("the answer".to_string());
        let d = delivery(late);
        assert_eq!(
            noted(&d, reply(), 1_000 + 599_999).as_deref(),
            Some("the answer")
        );
        assert_eq!(
            noted(&d, reply(), 1_000 + 3 * 3_600_000).as_deref(),
            Some("(Replying to your message from 3 h ago.)\n\nthe answer")
        );
        assert_eq!(noted(&d, None, 10_000_000), None, "nothing to say: no note");
        assert_eq!(
            noted(&delivery(None), reply(), u64::MAX).as_deref(),
            Some("the answer")
        );
    }
}
