//! `QuestionsActor`: the pending questions, their waiters and timers.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::*;
use crate::tool::Route;

struct Entry {
    record: Record,
    outcome: Outcome,
    waiters: Vec<oneshot::Sender<Outcome>>,
    chat: Option<Route>,
    untrusted: bool,
    expiry: Option<SpawnHandle>,
}

pub struct QuestionsActor {
    span: tracing::Span,
    /// The edge, which tells operator clients.
    edge: Option<Recipient<QuestionEvent>>,
    entries: HashMap<String, Entry>,
}

impl QuestionsActor {
    pub fn new(edge: Option<Recipient<QuestionEvent>>) -> QuestionsActor {
        QuestionsActor {
            span: tracing::info_span!("questions"),
            edge,
            entries: HashMap::new(),
        }
    }

    fn tell(&self, event: QuestionEvent) {
        if let Some(edge) = &self.edge {
            edge.do_send(event);
        }
    }

    fn pending_for_session(&self, key: &str) -> Option<&Entry> {
        self.entries.values().find(|e| {
            e.record.status == Status::Pending && e.record.session_key.as_deref() == Some(key)
        })
    }

    /// Ends a pending question: its waiters get the outcome, operators
    /// hear of it, and it is forgotten after the grace.
    fn finish(&mut self, id: &str, outcome: Outcome, by: Option<String>, ctx: &mut Context<Self>) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if e.record.status != Status::Pending {
            return;
        }
        e.record.status = match &outcome {
            Outcome::Answered { .. } => Status::Answered,
            Outcome::Cancelled => Status::Cancelled,
            Outcome::Expired | Outcome::Pending => Status::Expired,
        };
        if let Outcome::Answered { answers, .. } = &outcome {
            e.record.answers = Some(answers.clone());
        }
        e.record.resolved_by = by;
        e.outcome = outcome.clone();
        if let Some(h) = e.expiry.take() {
            ctx.cancel_future(h);
        }
        for w in e.waiters.drain(..) {
            let _ = w.send(outcome.clone());
        }
        tracing::info!(question = %id, status = ?e.record.status, "question ended");
        self.tell(QuestionEvent::Resolved {
            id: id.to_string(),
            outcome,
        });
        let id = id.to_string();
        ctx.run_later(Duration::from_millis(RESOLVED_GRACE_MS), move |a, _| {
            if a.entries
                .get(&id)
                .is_some_and(|e| e.record.status != Status::Pending)
            {
                a.entries.remove(&id);
            }
        });
    }

    fn resolve(
        &mut self,
        id: &str,
        resolution: Resolution,
        by: Option<String>,
        untrusted: bool,
        ctx: &mut Context<Self>,
    ) -> Result<Outcome, QuestionError> {
        let e = self
            .entries
            .get(id)
            .ok_or_else(|| QuestionError::NotFound(id.to_string()))?;
        if e.record.status != Status::Pending {
            let word = match e.record.status {
                Status::Answered => "answered",
                Status::Cancelled => "cancelled",
                _ => "expired",
            };
            return Err(QuestionError::Terminal(id.to_string(), word));
        }
        let outcome = match resolution {
            Resolution::Cancel => Outcome::Cancelled,
            Resolution::Answer(given) => Outcome::Answered {
                answers: validate_answers(&e.record.questions, &given)?,
                untrusted,
            },
        };
        self.finish(id, outcome.clone(), by, ctx);
        Ok(outcome)
    }
}

impl Actor for QuestionsActor {
    type Context = Context<Self>;
}

impl Handler<Ask> for QuestionsActor {
    type Result = Result<Record, QuestionError>;
    fn handle(&mut self, msg: Ask, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let q = msg.question;
        check_questions(&q.questions)?;
        let id =
            q.id.unwrap_or_else(|| ulid::Ulid::generate().to_string().to_lowercase());
        if self.entries.contains_key(&id) {
            return Err(QuestionError::IdInUse(id));
        }
        if let Some(key) = q.session_key.as_deref() {
            if q.run_id.is_some() && self.pending_for_session(key).is_some() {
                return Err(QuestionError::Busy);
            }
        }
        let now = crate::now_ms();
        let record = Record {
            id: id.clone(),
            questions: q.questions,
            agent_id: q.agent_id,
            session_key: q.session_key,
            run_id: q.run_id,
            created_at_ms: now,
            expires_at_ms: now + q.timeout.as_millis() as u64,
            status: Status::Pending,
            answers: None,
            resolved_by: None,
        };
        let expiry_id = id.clone();
        let expiry = ctx.run_later(q.timeout, move |a, ctx| {
            a.finish(&expiry_id, Outcome::Expired, None, ctx);
        });
        self.entries.insert(
            id.clone(),
            Entry {
                record: record.clone(),
                outcome: Outcome::Pending,
                waiters: Vec::new(),
                chat: q.chat,
                untrusted: q.untrusted,
                expiry: Some(expiry),
            },
        );
        tracing::info!(question = %id, session_key = ?record.session_key, "question asked");
        self.tell(QuestionEvent::Requested(record.clone()));
        Ok(record)
    }
}

impl Handler<WaitAnswer> for QuestionsActor {
    type Result = ResponseFuture<Result<Outcome, QuestionError>>;
    fn handle(&mut self, msg: WaitAnswer, _: &mut Context<Self>) -> Self::Result {
        let entry = self.entries.get_mut(&msg.id);
        let Some(e) = entry else {
            return Box::pin(async move { Err(QuestionError::NotFound(msg.id)) });
        };
        if e.record.status != Status::Pending {
            let done = e.outcome.clone();
            return Box::pin(async move { Ok(done) });
        }
        let (tx, rx) = oneshot::channel();
        e.waiters.push(tx);
        Box::pin(async move {
            let got = match msg.timeout {
                Some(t) => match tokio::time::timeout(t, rx).await {
                    Ok(got) => got,
                    Err(_) => return Ok(Outcome::Pending),
                },
                None => rx.await,
            };
            got.map_err(|_| QuestionError::Stopped)
        })
    }
}

impl Handler<Resolve> for QuestionsActor {
    type Result = Result<Outcome, QuestionError>;
    fn handle(&mut self, msg: Resolve, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.resolve(&msg.id, msg.resolution, msg.by, false, ctx)
    }
}

impl Handler<GetQuestion> for QuestionsActor {
    type Result = Option<Record>;
    fn handle(&mut self, msg: GetQuestion, _: &mut Context<Self>) -> Self::Result {
        self.entries.get(&msg.id).map(|e| e.record.clone())
    }
}

impl Handler<ListQuestions> for QuestionsActor {
    type Result = Vec<Record>;
    fn handle(&mut self, _: ListQuestions, _: &mut Context<Self>) -> Self::Result {
        let mut out: Vec<Record> = self
            .entries
            .values()
            .filter(|e| e.record.status == Status::Pending)
            .map(|e| e.record.clone())
            .collect();
        out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        out
    }
}

/// The chat a reply came from is the question's: same channel, account
/// and chat (and thread, when the question was asked in one).
fn same_chat(asked: &Route, reply: &Route) -> bool {
    asked.channel == reply.channel
        && asked.account_id == reply.account_id
        && asked.to == reply.to
        && (asked.thread_id.is_none() || asked.thread_id == reply.thread_id)
}

impl Handler<ReplyInChat> for QuestionsActor {
    type Result = Option<Result<Outcome, QuestionError>>;
    fn handle(&mut self, msg: ReplyInChat, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let may_answer = |e: &Entry| {
            e.chat.as_ref().is_some_and(|c| same_chat(c, &msg.chat))
                && (msg.authorized || e.untrusted)
        };
        let id = match &msg.question {
            // A press: its question, pending or not, never a message.
            Some(id) => match self.entries.get(id) {
                Some(e) if may_answer(e) => id.clone(),
                Some(_) => {
                    tracing::warn!(question = %id, by = %msg.by, "a button press from someone who may not answer the question: ignored");
                    return Some(Err(QuestionError::NotFound(id.clone())));
                }
                None => return Some(Err(QuestionError::NotFound(id.clone()))),
            },
            None => {
                let e = self.pending_for_session(&msg.session_key)?;
                if !may_answer(e) {
                    return None;
                }
                e.record.id.clone()
            }
        };
        let e = self.entries.get(&id)?;
        let answers = answers_from_text(&e.record.questions, &msg.text);
        if msg.question.is_none() && validate_answers(&e.record.questions, &answers).is_err() {
            // Not readable as the answers: an ordinary message.
            return None;
        }
        let untrusted = !msg.authorized;
        Some(self.resolve(
            &id,
            Resolution::Answer(answers),
            Some(msg.by),
            untrusted,
            ctx,
        ))
    }
}
