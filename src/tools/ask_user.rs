//! `ask_user`: the run asks the human 1-3 structured questions and waits.
//! The question is the questions actor's (`question.*`): operator
//! clients hear `question.requested` (the Control UI's panel, the TUI,
//! `ferroclaw agent|chat`), and a turn from a chat also shows it there
//! (the numbered list; Telegram's buttons for one single-select question)
//! through the outbox, keyed by the question, so a run restarted from its
//! last step shows it once. The answer comes back as the tool's result;
//! no answer before the wait ends (or a cancel) is `no_answer`, and the
//! run goes on. An aborted run cancels its question.
//!
//! Trust: only the main session asks (a sub-agent reports back instead);
//! a stranger's turn, when its profile is widened to it, asks only its own
//! chat, and an answer from someone without the operator's standing is
//! wrapped outside data.

use std::time::Duration;

use ferroclaw_actors::channels::SendText;
use ferroclaw_actors::questions::{
    self, Ask, NewQuestion, Outcome, Question, QuestionError, QuestionOption, Resolution, Resolve,
    WaitAnswer,
};
use ferroclaw_actors::tool::{ExecuteTool, ToolOutcome};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Digest;

use super::{fail, ToolError};
use crate::state::SharedState;

/// The model's arguments (OpenClaw's schema).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    questions: Vec<AskedQuestion>,
    #[serde(default)]
    timeout_seconds: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AskedQuestion {
    id: String,
    header: String,
    question: String,
    options: Vec<QuestionOption>,
    #[serde(default)]
    multi_select: Option<bool>,
}

/// The questions as the protocol carries them (trimmed; headers cut to
/// 12 characters; free text always accepted) and the wait.
fn normalize(args: &Value, default_wait: u64) -> Result<(Vec<Question>, u64), ToolError> {
    let a: Args = serde_json::from_value(args.clone()).map_err(|e| {
        ToolError::Invalid(format!(
            "ask_user: the arguments do not match the question contract: {e}"
        ))
    })?;
    let wait = match &a.timeout_seconds {
        None | Some(Value::Null) => default_wait,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_i64().map(|n| n.max(0) as u64))
            .ok_or_else(|| {
                ToolError::Invalid("ask_user: timeoutSeconds must be an integer".into())
            })?,
    }
    .clamp(
        questions::MIN_TIMEOUT_SECONDS,
        questions::MAX_TIMEOUT_SECONDS,
    );
    let mut out = Vec::new();
    for q in a.questions {
        if !(2..=4).contains(&q.options.len()) {
            return Err(ToolError::Invalid(format!(
                "ask_user: question {:?} needs 2 to 4 options",
                q.id
            )));
        }
        if q.options
            .iter()
            .any(|o| o.label.trim().chars().count() > 64)
        {
            return Err(ToolError::Invalid(
                "ask_user: an option's label is longer than 64 characters".into(),
            ));
        }
        out.push(Question {
            question_id: q.id.trim().to_string(),
            header: q.header.trim().chars().take(12).collect(),
            question: q.question.trim().to_string(),
            url: None,
            options: q
                .options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label.trim().to_string(),
                    description: o
                        .description
                        .map(|d| d.trim().to_string())
                        .filter(|d| !d.is_empty()),
                })
                .collect(),
            multi_select: q.multi_select == Some(true),
            is_other: true,
            is_secret: false,
        });
    }
    questions::check_questions(&out).map_err(|e| ToolError::Invalid(format!("ask_user: {e}")))?;
    Ok((out, wait))
}

/// The question's id, from the run and the call (OpenClaw's `ask_<hex>`):
/// the same call repeated after a restart is the same question.
fn question_id(msg: &ExecuteTool) -> String {
    let who = match &msg.run_id {
        Some(r) => r.to_string(),
        None => format!("{}\0{}", msg.agent_id, msg.session_key.as_str()),
    };
    let digest = sha2::Sha256::digest(format!("{who}\0{}", msg.call.id));
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("ask_{hex}")
}

async fn wait_cancel(cancel: &mut tokio::sync::watch::Receiver<bool>) {
    while !*cancel.borrow() {
        if cancel.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

pub(super) async fn run(state: &SharedState, msg: &ExecuteTool) -> ToolOutcome {
    if msg.session_key.as_str().contains(":subagent:") {
        return fail("ask_user: only the main session asks the user; report back to it instead");
    }
    let default_wait = state.live.settings().tools.ask_user.timeout_seconds;
    let (asked, wait) = match normalize(&msg.call.arguments, default_wait) {
        Ok(n) => n,
        Err(e) => return fail(e.to_string()),
    };
    let id = question_id(msg);
    let q = &state.gateway.questions;
    let opened = q
        .send(Ask {
            question: NewQuestion {
                id: Some(id.clone()),
                questions: asked.clone(),
                agent_id: Some(msg.agent_id.clone()),
                session_key: Some(msg.session_key.as_str().to_string()),
                run_id: msg.run_id.as_ref().map(|r| r.to_string()),
                timeout: Duration::from_secs(wait),
                chat: msg.origin.clone(),
                untrusted: msg.trust.untrusted,
            },
        })
        .await;
    match opened {
        Err(_) => return fail("ask_user: the questions service is unavailable"),
        // The same call again (a restarted step): wait on the question it opened.
        Ok(Err(QuestionError::IdInUse(_))) => {}
        Ok(Err(e)) => return fail(format!("ask_user: {e}")),
        Ok(Ok(_)) => {
            if let Err(e) = show_in_chat(state, msg, &id, &asked).await {
                let _ = q
                    .send(Resolve {
                        id: id.clone(),
                        resolution: Resolution::Cancel,
                        by: Some("prompt-delivery-failed".into()),
                    })
                    .await;
                return fail(format!("ask_user: the question could not be shown: {e}"));
            }
        }
    }
    let mut cancel = msg.cancel.clone();
    let waited = tokio::select! {
        r = q.send(WaitAnswer { id: id.clone(), timeout: None }) => r,
        _ = wait_cancel(&mut cancel) => {
            q.do_send(Resolve { id, resolution: Resolution::Cancel, by: Some("run-abort".into()) });
            return fail("ask_user: the run was aborted; the question is cancelled");
        }
    };
    match waited {
        Ok(Ok(outcome)) => result(&asked, &outcome),
        Ok(Err(e)) => fail(format!("ask_user: {e}")),
        Err(_) => fail("ask_user: the questions service is unavailable"),
    }
}

/// The prompt in the chat the turn came from (none for a WebSocket turn:
/// its clients have the `question.requested` event).
async fn show_in_chat(
    state: &SharedState,
    msg: &ExecuteTool,
    id: &str,
    asked: &[Question],
) -> Result<(), ToolError> {
    let Some(route) = &msg.origin else {
        return Ok(());
    };
    state
        .gateway
        .channels
        .send(SendText {
            channel: route.channel.clone(),
            account: Some(route.account_id.clone()),
            to: route.to.clone(),
            thread_id: route.thread_id.clone(),
            reply_to: None,
            text: questions::prompt_text(asked),
            media: Vec::new(),
            key: format!("ask/{id}"),
            buttons: questions::buttons(id, asked),
            voice: false,
        })
        .await
        .map_err(|_| ToolError::Undelivered("the channels are stopping".into()))?
        .map(|_| ())
        .map_err(|e| ToolError::Undelivered(e.to_string()))
}

/// OpenClaw's result text: `header: answers` lines and the payload, or
/// `no_answer`. An outsider's answer is wrapped outside data.
fn result(asked: &[Question], outcome: &Outcome) -> ToolOutcome {
    let text = match outcome {
        Outcome::Answered { answers, untrusted } => {
            let lines: Vec<String> = asked
                .iter()
                .map(|q| {
                    let v = answers.get(&q.question_id).cloned().unwrap_or_default();
                    match v.is_empty() {
                        true => format!("{}: (no answer)", q.header),
                        false => format!("{}: {}", q.header, v.join(", ")),
                    }
                })
                .collect();
            let payload = json!({ "status": "answered", "answers": { "answers": answers } });
            let body = format!(
                "{}\n\n{}",
                lines.join("\n"),
                serde_json::to_string_pretty(&payload).unwrap_or_default()
            );
            match untrusted {
                true => ferroclaw_actors::trust::wrap(
                    "ask_user answer from a sender who is not the operator",
                    &body,
                ),
                false => body,
            }
        }
        Outcome::Cancelled => format!(
            "The question was cancelled; proceed with best judgment.\n\n{}",
            json!({ "status": "no_answer" })
        ),
        Outcome::Expired | Outcome::Pending => format!(
            "No answer arrived; proceed with best judgment.\n\n{}",
            json!({ "status": "no_answer" })
        ),
    };
    ToolOutcome::ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(timeout: Value) -> Value {
        json!({
            "questions": [{ "id": "target", "header": "Deploy target now", "question": " Where? ",
                "options": [{ "label": "Staging (Recommended)" }, { "label": "Prod", "description": " live " }] }],
            "timeoutSeconds": timeout,
        })
    }

    #[test]
    fn arguments_become_protocol_questions_with_a_clamped_wait() {
        let (qs, wait) = normalize(&args(json!(5)), 900).unwrap();
        assert_eq!(wait, 30);
        assert_eq!(qs[0].header, "Deploy targe");
        assert_eq!(qs[0].question, "Where?");
        assert!(qs[0].is_other);
        assert_eq!(qs[0].options[1].description.as_deref(), Some("live"));
        assert_eq!(normalize(&args(json!(99999)), 900).unwrap().1, 3600);
        assert_eq!(normalize(&args(Value::Null), 120).unwrap().1, 120);
        assert!(normalize(&args(json!(1.5)), 900).is_err());
        let mut extra = args(Value::Null);
        extra["questions"][0]["secret"] = json!(true);
        assert!(normalize(&extra, 900).is_err());
        let mut one = args(Value::Null);
        one["questions"][0]["options"] = json!([{ "label": "only" }]);
        assert!(normalize(&one, 900).is_err());
    }

    #[test]
    fn the_result_says_the_answers_or_no_answer() {
        let (qs, _) = normalize(&args(Value::Null), 900).unwrap();
        let answers = questions::Answers::from([("target".to_string(), vec!["Prod".to_string()])]);
        let ok = result(
            &qs,
            &Outcome::Answered {
                answers: answers.clone(),
                untrusted: false,
            },
        );
        assert!(ok.text.starts_with("Deploy targe: Prod\n\n"), "{}", ok.text);
        assert!(ok.text.contains("\"status\": \"answered\""));
        let outside = result(
            &qs,
            &Outcome::Answered {
                answers,
                untrusted: true,
            },
        );
        assert!(
            outside.text.contains("EXTERNAL_UNTRUSTED_CONTENT"),
            "{}",
            outside.text
        );
        let none = result(&qs, &Outcome::Expired);
        assert!(
            none.text.ends_with("{\"status\":\"no_answer\"}"),
            "{}",
            none.text
        );
    }
}
