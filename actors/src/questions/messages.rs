//! The questions actor's inbox: questions asked, waited on, answered,
//! cancelled, read; replies in chats that may answer one.

use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::tool::Route;

/// A new question (`question.request`, or a run's `ask_user`).
#[derive(Debug, Clone)]
pub struct NewQuestion {
    /// Given by the asker (a run's `ask_user`: from the run and the call,
    /// so a repeated call is the same question); else made here.
    pub id: Option<String>,
    pub questions: Vec<Question>,
    pub agent_id: Option<String>,
    pub session_key: Option<String>,
    pub run_id: Option<String>,
    pub timeout: Duration,
    /// The chat the question was asked in (a reply there may answer it).
    pub chat: Option<Route>,
    /// Asked by a turn holding a stranger's message: a reply from a sender
    /// without the operator's standing may answer it (and is data).
    pub untrusted: bool,
}

/// Opens a question. Reply: its record (pending).
#[derive(Debug, Message)]
#[rtype(result = "Result<Record, QuestionError>")]
pub struct Ask {
    pub question: NewQuestion,
}

/// `question.waitAnswer`: waits for the question to end, at most
/// `timeout` (None: until it ends). Reply: the outcome (`Pending` when the
/// wait ran out first).
#[derive(Debug, Message)]
#[rtype(result = "Result<Outcome, QuestionError>")]
pub struct WaitAnswer {
    pub id: String,
    pub timeout: Option<Duration>,
}

/// What resolving does.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    Answer(Answers),
    Cancel,
}

/// `question.resolve`: answers or cancels a pending question. `by`: who
/// (recorded as `resolvedBy`). Reply: the outcome.
#[derive(Debug, Message)]
#[rtype(result = "Result<Outcome, QuestionError>")]
pub struct Resolve {
    pub id: String,
    pub resolution: Resolution,
    pub by: Option<String>,
}

/// `question.get`: the record (pending, or ended in the last seconds).
#[derive(Debug, Message)]
#[rtype(result = "Option<Record>")]
pub struct GetQuestion {
    pub id: String,
}

/// `question.list`: the pending questions, oldest first.
#[derive(Debug, Message)]
#[rtype(result = "Vec<Record>")]
pub struct ListQuestions;

/// A message in a chat, before it goes to its session: it answers the
/// session's pending question when it was sent in the question's chat by
/// a sender who may answer it. Reply: None when it is not an answer (it
/// goes on to the session); else the outcome of answering (an error when
/// it named a question that is no longer pending, or answered badly).
#[derive(Debug, Message)]
#[rtype(result = "Option<Result<Outcome, QuestionError>>")]
pub struct ReplyInChat {
    pub chat: Route,
    pub session_key: String,
    /// The sender has the operator's standing (the channel's allowlist).
    pub authorized: bool,
    /// Who answered (`<channel>:<sender>`), recorded as `resolvedBy`.
    pub by: String,
    pub text: String,
    /// A button press: the question it answers (its text is the option's
    /// number). A press for a question no longer pending is never a
    /// message for the session.
    pub question: Option<String>,
}

/// What the questions actor tells the edge, which sends it to operator
/// clients as `question.requested` / `question.resolved`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum QuestionEvent {
    Requested(Record),
    Resolved { id: String, outcome: Outcome },
}
