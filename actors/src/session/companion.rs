//! OpenClaw's side chat (the session "companion"): questions about a
//! session answered as `/btw` answers them (one model call over the recent
//! context, no tools; never in the transcript, never steering the run),
//! kept in memory as the session's last 24 exchanges for
//! `sessions.companion.state` until a reset or the session actor stops.

use std::collections::VecDeque;

use actix::prelude::*;

use super::*;

/// Exchanges kept per session (OpenClaw's).
pub const MAX_EXCHANGES: usize = 24;
/// Longest answer kept and returned (OpenClaw's).
pub const MAX_ANSWER_CHARS: usize = 1200;

/// A session's side-chat thread.
#[derive(Debug, Default)]
pub struct Companion {
    exchanges: VecDeque<CompanionExchange>,
}

impl Companion {
    fn push(&mut self, e: CompanionExchange) {
        if self.exchanges.len() == MAX_EXCHANGES {
            self.exchanges.pop_front();
        }
        self.exchanges.push_back(e);
    }
}

/// An answer cut to what an exchange keeps.
fn bounded(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(MAX_ANSWER_CHARS) {
        Some((i, _)) => format!("{}…", &t[..i.saturating_sub(3).max(1)].trim_end()),
        None => t.to_string(),
    }
}

impl Handler<CompanionAsk> for SessionActor {
    type Result = ResponseActFuture<Self, Result<CompanionExchange, CompanionError>>;
    fn handle(&mut self, msg: CompanionAsk, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.idle.touch();
        let answer = match super::btw::side_answer(self, &msg.question) {
            Ok(a) => a,
            Err(e) => return Box::pin(actix::fut::ready(Err(e))),
        };
        Box::pin(answer.into_actor(self).map(move |text, act, _| {
            let e = CompanionExchange {
                question: msg.question,
                answer: bounded(&text),
                ts: crate::now_ms(),
            };
            act.state.companion.push(e.clone());
            Ok(e)
        }))
    }
}

impl Handler<CompanionState> for SessionActor {
    type Result = MessageResult<CompanionState>;
    fn handle(&mut self, _: CompanionState, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.state.companion.exchanges.iter().cloned().collect())
    }
}

impl Handler<CompanionReset> for SessionActor {
    type Result = ();
    fn handle(&mut self, _: CompanionReset, _: &mut Context<Self>) {
        self.state.companion.exchanges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_the_last_exchanges_and_answers_are_bounded() {
        let mut c = Companion::default();
        for i in 0..30 {
            c.push(CompanionExchange {
                question: format!("q{i}"),
                answer: "a".into(),
                ts: i,
            });
        }
        assert_eq!(c.exchanges.len(), MAX_EXCHANGES);
        assert_eq!(c.exchanges[0].question, "q6");
        let long = "x".repeat(5000);
        assert_eq!(bounded(&long).chars().count(), MAX_ANSWER_CHARS - 2);
        assert_eq!(bounded("  short  "), "short");
    }
}
