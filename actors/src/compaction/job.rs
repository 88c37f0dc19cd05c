//! One compaction, decided and done without the session: whether a turn
//! needs room first (`room`), where a compaction cuts (`cut`), and the job
//! itself (`run`: the silent memory flush, then the summary of the older
//! part, or the deterministic one when the model's cannot be had). The
//! session plans it from its history, runs the job off its mailbox and
//! applies the result only if nothing changed meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;

use super::tokens::{message_chars, Budget};
use super::{fallback, flush, split, stored, summary, CompactionSettings, Mode};
use crate::provider::hub::ProviderHub;
use crate::provider::selection::ModelRef;
use crate::provider::{ChatMessage, Messages};

/// Where a compaction cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// About this many recent tokens (automatic).
    Recent(u64),
    /// The last two user turns (`/compact`, `sessions.compact`).
    LastTwoTurns,
    /// At most this many messages (`sessions.compact maxLines`).
    Last(usize),
}

/// The index of the first kept message of `history` (None: nothing to
/// compact).
pub fn cut(history: &[Arc<ChatMessage>], keep: Keep) -> Option<usize> {
    match keep {
        Keep::Recent(tokens) => split::cut_point(history, tokens),
        Keep::LastTwoTurns => stored::cut_point(history),
        Keep::Last(n) => split::cut_last(history, n),
    }
}

/// What a turn about to start needs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Run the silent memory flush.
    pub flush: bool,
    /// Compact, keeping this.
    pub keep: Option<Keep>,
}

/// Whether a turn whose context holds `used` tokens needs room first, by
/// the budget of a `window`-token model (`flush_due`: a memory flush may
/// run this compaction cycle). None: it starts as it is.
pub fn room(s: &CompactionSettings, window: u64, used: u64, flush_due: bool) -> Option<Room> {
    if s.mode == Mode::None {
        return None;
    }
    let budget = Budget::new(window, s);
    let flush = used >= budget.flush_at && flush_due;
    let compact = used >= budget.compact_at;
    (flush || compact).then(|| Room {
        flush,
        keep: compact.then_some(Keep::Recent(budget.keep_recent)),
    })
}

/// A compaction to run: what it may ask and what it works on.
pub struct Job {
    pub hub: Addr<ProviderHub>,
    pub models: Vec<ModelRef>,
    pub sticky: Option<String>,
    pub window: u64,
    pub timeout: Duration,
    /// The memory flush, when it runs: its prompt, the run's system prompt
    /// and the whole context.
    pub flush: Option<Flush>,
    /// The older part to summarise (None: flush only).
    pub older: Option<Messages>,
    /// `/compact <instructions>`.
    pub instructions: Option<String>,
}

pub struct Flush {
    pub prompt: String,
    pub system: Arc<str>,
    pub history: Messages,
    pub workspace: PathBuf,
}

/// What the job did.
#[derive(Debug, Default)]
pub struct Done {
    /// The memory flush ran (whatever it appended).
    pub flushed: bool,
    /// The summary and, when it is the deterministic one, why.
    pub summary: Option<(String, Option<String>)>,
}

/// Runs the flush and the summary. Never fails: a flush that cannot run is
/// logged and skipped; a summary that cannot be had is the deterministic one.
pub async fn run(job: Job) -> Done {
    let Job {
        hub,
        models,
        sticky,
        window,
        timeout,
        flush,
        older,
        instructions,
    } = job;
    let flushed = flush.is_some();
    if let Some(f) = flush {
        flush_memory(&hub, &models, &sticky, window, timeout, f).await;
    }
    let Some(older) = older else {
        return Done {
            flushed,
            summary: None,
        };
    };
    let input_chars: usize = older.iter().map(|m| message_chars(m)).sum();
    let mut msgs = older.clone();
    let ask = summary::instruction(instructions.as_deref());
    msgs.push(Arc::new(ChatMessage::user(&ask)));
    let asked = summary::ask(hub, models, sticky, summary::SYSTEM, msgs, window, timeout).await;
    let checked = match asked {
        Ok(s) => summary::check(&s, input_chars)
            .map(|()| s)
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let summary = match checked {
        Ok(s) => (s, None),
        Err(why) => (fallback::summarize(&older), Some(why)),
    };
    Done {
        flushed,
        summary: Some(summary),
    }
}

/// The silent memory flush: the model is asked what to keep, and what it
/// says is appended to today's memory file (logged and skipped on error).
async fn flush_memory(
    hub: &Addr<ProviderHub>,
    models: &[ModelRef],
    sticky: &Option<String>,
    window: u64,
    timeout: Duration,
    f: Flush,
) {
    let day = flush::today();
    let mut msgs = f.history;
    msgs.push(Arc::new(ChatMessage::user(&flush::request(
        &f.prompt, &day,
    ))));
    let asked = summary::ask(
        hub.clone(),
        models.to_vec(),
        sticky.clone(),
        &f.system,
        msgs,
        window,
        timeout,
    )
    .await;
    match asked.map(|a| flush::to_append(&a)) {
        Ok(Some(text)) => {
            let workspace = f.workspace;
            let write = move || flush::append_daily(&workspace, &day, &text);
            if let Ok(Err(e)) = tokio::task::spawn_blocking(write).await {
                tracing::warn!(error = %e, "memory flush not written");
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "memory flush skipped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: Mode) -> CompactionSettings {
        CompactionSettings {
            mode,
            ..crate::compaction::shipped().0
        }
    }

    #[test]
    fn room_is_made_above_the_thresholds_only_and_never_when_off() {
        let s = settings(Mode::Safeguard);
        let b = Budget::new(100_000, &s);
        assert!(b.flush_at < b.compact_at);
        assert_eq!(room(&s, 100_000, b.flush_at - 1, true), None);
        let flush_only = Room {
            flush: true,
            keep: None,
        };
        assert_eq!(room(&s, 100_000, b.flush_at, true), Some(flush_only));
        // A flush already done this cycle: nothing until compaction is due.
        assert_eq!(room(&s, 100_000, b.flush_at, false), None);
        let both = Room {
            flush: true,
            keep: Some(Keep::Recent(b.keep_recent)),
        };
        assert_eq!(room(&s, 100_000, b.compact_at, true), Some(both));
        assert_eq!(room(&settings(Mode::None), 100_000, u64::MAX, true), None);
    }

    #[test]
    fn the_manual_cut_keeps_the_last_two_user_turns() {
        let h: Vec<Arc<ChatMessage>> = ["a", "b", "c", "d"]
            .iter()
            .flat_map(|t| [ChatMessage::user(t), ChatMessage::assistant(t)])
            .map(Arc::new)
            .collect();
        assert_eq!(cut(&h, Keep::LastTwoTurns), Some(4));
        assert_eq!(cut(&h[..4], Keep::LastTwoTurns), None);
    }
}
