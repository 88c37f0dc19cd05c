//! Questions for the human (`ask_user`, `question.*`): OpenClaw's
//! question records, their answers and how they are shown and read back
//! in a chat. `QuestionsActor` (`actor.rs`) owns the pending ones: a run's
//! `ask_user` call waits on one until it is answered (from the Control UI
//! or the TUI by `question.resolve`, from the CLI, from the chat it was
//! asked in by a reply or a button), cancelled, or expired.
//!
//! Trust: a reply in a chat answers a question only in the conversation
//! the question was asked in, and only from a sender with the asking
//! turn's standing (an operator's question is not answered by a stranger
//! in the same group or sharing the main session). An answer from outside
//! is data for the run, never instructions to the gateway.
//!
//! Files: `messages.rs` (its inbox), `actor.rs` (the actor); this file
//! holds the pure parts, with unit tests.

mod actor;
mod messages;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use actor::QuestionsActor;
pub use messages::*;

/// Seconds a question waits without `timeoutSeconds` when the config does
/// not say (OpenClaw's 900), and the bounds a wait is clamped to.
pub const MIN_TIMEOUT_SECONDS: u64 = 30;
pub const MAX_TIMEOUT_SECONDS: u64 = 3600;
/// How long an ended question can still be read (`question.get`,
/// `question.waitAnswer` arriving late): OpenClaw's grace.
pub const RESOLVED_GRACE_MS: u64 = 15_000;

/// One choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question, as OpenClaw's protocol carries it (`questionId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Question {
    pub question_id: String,
    pub header: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
    /// Free text is accepted besides the options.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_other: bool,
    /// Not supported here (OpenClaw's masked credential prompt): refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_secret: bool,
}

/// Answers by question id.
pub type Answers = BTreeMap<String, Vec<String>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Answered,
    Cancelled,
    Expired,
}

/// OpenClaw's `QuestionRecord`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub questions: Vec<Question>,
    pub agent_id: Option<String>,
    pub session_key: Option<String>,
    pub run_id: Option<String>,
    pub created_at_ms: u64,
    pub expires_at_ms: u64,
    pub status: Status,
    pub answers: Option<Answers>,
    pub resolved_by: Option<String>,
}

impl Record {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "questions": self.questions,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
            "status": self.status,
        });
        let opt = [
            ("agentId", &self.agent_id),
            ("sessionKey", &self.session_key),
            ("runId", &self.run_id),
            ("resolvedBy", &self.resolved_by),
        ];
        for (k, val) in opt {
            if let Some(s) = val {
                v[k] = json!(s);
            }
        }
        if let Some(a) = &self.answers {
            v["answers"] = json!({ "answers": a });
        }
        v
    }
}

/// How a question ended, or that it has not (`question.waitAnswer`).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pending,
    Answered {
        answers: Answers,
        /// Answered by a sender without the operator's standing (a
        /// stranger answering the question their own turn asked).
        untrusted: bool,
    },
    Cancelled,
    Expired,
}

impl Outcome {
    /// OpenClaw's `question.waitAnswer` / `question.resolve` result.
    pub fn to_json(&self) -> Value {
        match self {
            Outcome::Pending => json!({ "status": "pending" }),
            Outcome::Answered { answers, .. } => {
                json!({ "status": "answered", "answers": { "answers": answers } })
            }
            Outcome::Cancelled => json!({ "status": "cancelled" }),
            Outcome::Expired => json!({ "status": "expired" }),
        }
    }
}

/// Why a question could not be asked, answered or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("question '{0}' was not found")]
    NotFound(String),
    #[error("question '{0}' is already {1}")]
    Terminal(String, &'static str),
    #[error("question '{0}' already exists")]
    IdInUse(String),
    #[error("a question is already pending for this session; wait for it to resolve before asking another")]
    Busy,
    #[error("question '{0}' {1}")]
    InvalidAnswer(String, &'static str),
    #[error("{0}")]
    Invalid(String),
    #[error("the questions actor stopped")]
    Stopped,
}

impl QuestionError {
    /// OpenClaw's `details.reason` for the error.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            QuestionError::NotFound(_) => Some("QUESTION_NOT_FOUND"),
            QuestionError::Terminal(..) => Some("QUESTION_ALREADY_TERMINAL"),
            QuestionError::IdInUse(_) => Some("QUESTION_ID_IN_USE"),
            QuestionError::InvalidAnswer(..) => Some("QUESTION_INVALID_ANSWER"),
            _ => None,
        }
    }
}

fn is_snake_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Checks a request's questions (OpenClaw's shape rules).
pub fn check_questions(questions: &[Question]) -> Result<(), QuestionError> {
    let bad = |s: String| Err(QuestionError::Invalid(s));
    if questions.is_empty() || questions.len() > 3 {
        return bad("questions: 1 to 3 questions".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for q in questions {
        let id = &q.question_id;
        if !is_snake_id(id) {
            return bad(format!(
                "questionId {id:?}: snake_case, starting with a letter"
            ));
        }
        if !seen.insert(id.as_str()) {
            return bad(format!("questionId {id:?} appears twice"));
        }
        if q.is_secret {
            return bad(format!(
                "question {id:?}: secret questions are not supported by this gateway; never ask for a credential in chat"
            ));
        }
        if q.header.trim().is_empty() || q.header.chars().count() > 12 {
            return bad(format!("question {id:?}: header of 1 to 12 characters"));
        }
        if q.question.trim().is_empty() {
            return bad(format!("question {id:?}: question text is empty"));
        }
        if q.options.len() > 4 {
            return bad(format!("question {id:?}: at most 4 options"));
        }
        let mut labels = std::collections::BTreeSet::new();
        for o in &q.options {
            let l = o.label.trim().to_lowercase();
            if l.is_empty() {
                return bad(format!("question {id:?}: an option's label is empty"));
            }
            if !labels.insert(l) {
                return bad(format!(
                    "question {id:?}: option {:?} appears twice",
                    o.label
                ));
            }
        }
        if q.options.is_empty() && !q.is_other {
            return bad(format!("question {id:?}: no options and no free text"));
        }
        if let Some(u) = &q.url {
            if !(u.starts_with("https://") || u.starts_with("http://")) {
                return bad(format!("question {id:?}: url must be http(s)"));
            }
        }
    }
    Ok(())
}

/// Checks answers against the questions; the canonical answers (an
/// option's label as written in the question).
pub fn validate_answers(questions: &[Question], given: &Answers) -> Result<Answers, QuestionError> {
    if let Some(unknown) = given
        .keys()
        .find(|k| !questions.iter().any(|q| &q.question_id == *k))
    {
        return Err(QuestionError::InvalidAnswer(
            unknown.clone(),
            "is not part of this request",
        ));
    }
    let mut out = Answers::new();
    for q in questions {
        let id = &q.question_id;
        let invalid = |why| Err(QuestionError::InvalidAnswer(id.clone(), why));
        let values = match given.get(id) {
            Some(v) if !v.is_empty() => v,
            _ => return invalid("requires an answer"),
        };
        if values.iter().any(|v| v.trim().is_empty()) {
            return invalid("contains an empty answer");
        }
        if !q.multi_select && values.len() > 1 {
            return invalid("does not allow multiple answers");
        }
        let canonical: Vec<String> = values
            .iter()
            .map(|v| {
                q.options
                    .iter()
                    .find(|o| o.label.trim() == v.trim())
                    .map_or_else(|| v.trim().to_string(), |o| o.label.clone())
            })
            .collect();
        let unknown = canonical
            .iter()
            .any(|v| !q.options.iter().any(|o| &o.label == v));
        if !q.options.is_empty() && !q.is_other && unknown {
            return invalid("contains an unknown option");
        }
        out.insert(id.clone(), canonical);
    }
    Ok(out)
}

/// An option named by its number or its label (any case).
fn declared(answer: &str, q: &Question) -> Option<String> {
    let t = answer.trim();
    if let Ok(n) = t.parse::<usize>() {
        if let Some(o) = n.checked_sub(1).and_then(|i| q.options.get(i)) {
            return Some(o.label.clone());
        }
    }
    q.options
        .iter()
        .find(|o| o.label.to_lowercase() == t.to_lowercase())
        .map(|o| o.label.clone())
}

fn one_answer(answer: &str, q: &Question) -> Option<String> {
    if let Some(d) = declared(answer, q) {
        return Some(d);
    }
    let t = answer.trim();
    (q.is_other || q.options.is_empty())
        .then(|| t.to_string())
        .filter(|t| !t.is_empty())
}

fn answers_to(answer: &str, q: &Question) -> Vec<String> {
    if !q.multi_select {
        return one_answer(answer, q).into_iter().collect();
    }
    if let Some(d) = declared(answer, q) {
        return vec![d];
    }
    let mut out: Vec<String> = Vec::new();
    for part in answer.split([',', ';', '\n']) {
        if let Some(a) = one_answer(part, q) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// A chat reply read as answers (OpenClaw's reading): one question takes
/// the whole reply (a number, an option, or free text; several separated
/// by commas when it is multi-select); several take `key: answer` lines
/// (the question's id, header, text or number) or one line each in order.
pub fn answers_from_text(questions: &[Question], text: &str) -> Answers {
    let mut out = Answers::new();
    if let [q] = questions {
        out.insert(q.question_id.clone(), answers_to(text, q));
        return out;
    }
    let keyed: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once([':', '=', '-'])?;
            let (k, v) = (k.trim().to_lowercase(), v.trim().to_string());
            (!k.is_empty() && !v.is_empty()).then_some((k, v))
        })
        .collect();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for (i, q) in questions.iter().enumerate() {
        let answer = [
            q.question_id.to_lowercase(),
            q.header.to_lowercase(),
            q.question.to_lowercase(),
            (i + 1).to_string(),
        ]
        .iter()
        .find_map(|k| keyed.get(k).cloned())
        .or_else(|| lines.get(i).map(|l| l.to_string()))
        .unwrap_or_default();
        let values = match answer.is_empty() {
            true => Vec::new(),
            false => answers_to(&answer, q),
        };
        out.insert(q.question_id.clone(), values);
    }
    out
}

/// The prompt a chat is sent (OpenClaw's text, "Question for you:").
pub fn prompt_text(questions: &[Question]) -> String {
    let mut lines = vec!["Question for you:".to_string()];
    for (i, q) in questions.iter().enumerate() {
        lines.push(String::new());
        match questions.len() {
            1 => lines.push(q.header.clone()),
            _ => lines.push(format!("{}. {}", i + 1, q.header)),
        }
        lines.push(q.question.clone());
        if let Some(u) = &q.url {
            lines.push(u.clone());
        }
        for (n, o) in q.options.iter().enumerate() {
            match &o.description {
                Some(d) => lines.push(format!("{}. {} - {d}", n + 1, o.label)),
                None => lines.push(format!("{}. {}", n + 1, o.label)),
            }
        }
        if q.is_other {
            lines.push("Other: reply with your own answer.".into());
        }
    }
    format!("{}\n\n{}", lines.join("\n"), guidance(questions))
}

fn guidance(questions: &[Question]) -> &'static str {
    match questions {
        [q] if q.options.is_empty() => "Reply with your answer.",
        [q] if q.multi_select => {
            "Reply with comma-separated option numbers or text, or your own answer."
        }
        [q] if q.is_other => "Reply with the number, the option text, or your own answer.",
        [_] => "Reply with the number or option text.",
        _ => "Reply by number or question id. Use a declared option where choices are fixed.",
    }
}

/// One button under a prompt: its label, and what pressing it sends back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub data: String,
}

/// What a button press carries: `q:<question id>:<option number>`.
pub fn button_data(id: &str, option: usize) -> String {
    format!("q:{id}:{option}")
}

/// A button press read back: the question id and the option's number.
pub fn parse_button(data: &str) -> Option<(String, usize)> {
    let rest = data.strip_prefix("q:")?;
    let (id, n) = rest.rsplit_once(':')?;
    Some((id.to_string(), n.parse().ok().filter(|n| *n >= 1)?))
}

/// Native buttons, for one single-select question with 2 to 4 options
/// (others are answered by replying to the numbered list), one per row.
pub fn buttons(id: &str, questions: &[Question]) -> Vec<Vec<Button>> {
    match questions {
        [q] if !q.multi_select && (2..=4).contains(&q.options.len()) => q
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                vec![Button {
                    label: o.label.clone(),
                    data: button_data(id, i + 1),
                }]
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: &str, options: &[&str], multi: bool) -> Question {
        Question {
            question_id: id.into(),
            header: "Pick".into(),
            question: format!("Which {id}?"),
            url: None,
            options: options
                .iter()
                .map(|l| QuestionOption {
                    label: l.to_string(),
                    description: None,
                })
                .collect(),
            multi_select: multi,
            is_other: true,
            is_secret: false,
        }
    }

    #[test]
    fn a_reply_names_an_option_by_number_or_label_or_says_its_own() {
        let qs = [q("color", &["Red (Recommended)", "Blue"], false)];
        let one = |t: &str| answers_from_text(&qs, t)["color"].clone();
        assert_eq!(one("2"), ["Blue"]);
        assert_eq!(one(" blue "), ["Blue"]);
        assert_eq!(one("1"), ["Red (Recommended)"]);
        assert_eq!(one("green please"), ["green please"]);
        assert_eq!(one("7"), ["7"], "no such option: free text");
        let multi = [q("sizes", &["S", "M", "L"], true)];
        assert_eq!(answers_from_text(&multi, "1, 3, l")["sizes"], ["S", "L"]);
    }

    #[test]
    fn several_questions_take_keyed_lines_or_lines_in_order() {
        let qs = [
            q("color", &["Red", "Blue"], false),
            q("size", &["S", "M"], false),
        ];
        let a = answers_from_text(&qs, "size: 2\ncolor = red");
        assert_eq!(a["color"], ["Red"]);
        assert_eq!(a["size"], ["M"]);
        let b = answers_from_text(&qs, "Blue\nS");
        assert_eq!(
            (b["color"][0].as_str(), b["size"][0].as_str()),
            ("Blue", "S")
        );
        let c = answers_from_text(&qs, "Blue");
        assert!(c["size"].is_empty());
        assert!(validate_answers(&qs, &c).is_err(), "an unanswered question");
    }

    #[test]
    fn answers_are_checked_and_made_canonical() {
        let mut fixed = q("color", &["Red", "Blue"], false);
        fixed.is_other = false;
        let qs = [fixed];
        let a = |v: &[&str]| {
            Answers::from([(
                "color".to_string(),
                v.iter().map(|s| s.to_string()).collect(),
            )])
        };
        assert_eq!(
            validate_answers(&qs, &a(&[" Blue "])).unwrap()["color"],
            ["Blue"]
        );
        assert!(matches!(
            validate_answers(&qs, &a(&["Green"])),
            Err(QuestionError::InvalidAnswer(
                _,
                "contains an unknown option"
            ))
        ));
        assert!(validate_answers(&qs, &a(&["Red", "Blue"])).is_err());
        assert!(validate_answers(&qs, &a(&[" "])).is_err());
        let mut other = a(&["Red"]);
        other.insert("nope".into(), vec!["x".into()]);
        assert!(matches!(
            validate_answers(&qs, &other),
            Err(QuestionError::InvalidAnswer(id, _)) if id == "nope"
        ));
    }

    #[test]
    fn the_prompt_numbers_the_options_and_buttons_carry_the_question() {
        let qs = [q("color", &["Red", "Blue"], false)];
        let text = prompt_text(&qs);
        assert!(
            text.starts_with("Question for you:\n\nPick\nWhich color?\n1. Red\n2. Blue\nOther:"),
            "{text}"
        );
        assert!(text.ends_with("Reply with the number, the option text, or your own answer."));
        let b = buttons("ask_1", &qs);
        assert_eq!(b.len(), 2);
        assert_eq!(parse_button(&b[1][0].data), Some(("ask_1".into(), 2)));
        assert!(buttons("ask_1", &[q("s", &["S", "M"], true)]).is_empty());
        assert_eq!(parse_button("q:x:0"), None);
        assert_eq!(parse_button("other"), None);
    }

    #[test]
    fn bad_requests_are_refused_with_the_reason() {
        let mut bad = q("Color", &["a", "b"], false);
        assert!(check_questions(std::slice::from_ref(&bad)).is_err());
        bad.question_id = "color".into();
        bad.is_secret = true;
        let e = check_questions(&[bad]).unwrap_err().to_string();
        assert!(e.contains("secret questions are not supported"), "{e}");
        let dup = [q("a", &["x", "X"], false)];
        assert!(check_questions(&dup).is_err());
        assert!(check_questions(&[]).is_err());
        assert!(check_questions(&[q("ok", &["a", "b"], false)]).is_ok());
    }
}
