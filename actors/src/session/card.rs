//! A session's progress card (OpenClaw's `progress_card` tool and
//! `progressCard.*`): the one durable status surface shown next to the
//! session, replaced whole on each put, kept in the session's row. Its
//! checks are OpenClaw's: markdown at most 8 KB, at most 50 steps of at
//! most 512 bytes, at most one `in_progress`; both parts empty clears it.

use serde::{Deserialize, Serialize};

/// Markdown at most this many UTF-8 bytes.
pub const MAX_MARKDOWN: usize = 8192;
/// At most this many steps.
pub const MAX_STEPS: usize = 50;
/// A step at most this many UTF-8 bytes.
pub const MAX_STEP: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardStep {
    pub step: String,
    pub status: StepStatus,
}

/// The card as stored (the edge adds the session key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressCard {
    pub revision: u64,
    pub updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<CardStep>>,
}

/// A put: the new card's parts, and the revision the writer saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CardPut {
    pub markdown: Option<String>,
    pub plan: Option<Vec<CardStep>>,
    pub expected_revision: Option<u64>,
}

/// Why a put changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    #[error("progress card markdown exceeds {MAX_MARKDOWN} UTF-8 bytes")]
    Markdown,
    #[error("plan can contain at most {MAX_STEPS} steps")]
    Steps,
    #[error("plan[{0}].step exceeds {MAX_STEP} UTF-8 bytes")]
    StepTooLong(usize),
    #[error("plan[{0}].step must not be empty")]
    EmptyStep(usize),
    #[error("plan can contain at most one in_progress step")]
    InProgress,
    #[error("the progress card is at revision {current}, not {expected}: read it again")]
    Stale { expected: u64, current: u64 },
}

/// Invisible format characters OpenClaw strips from card text.
fn visible(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'))
        .collect()
}

fn steps(plan: Vec<CardStep>) -> Result<Option<Vec<CardStep>>, CardError> {
    if plan.len() > MAX_STEPS {
        return Err(CardError::Steps);
    }
    let mut out = Vec::with_capacity(plan.len());
    for (i, s) in plan.into_iter().enumerate() {
        if s.step.len() > MAX_STEP {
            return Err(CardError::StepTooLong(i));
        }
        let step = visible(&s.step);
        if step.trim().is_empty() {
            return Err(CardError::EmptyStep(i));
        }
        out.push(CardStep {
            step,
            status: s.status,
        });
    }
    if out
        .iter()
        .filter(|s| s.status == StepStatus::InProgress)
        .count()
        > 1
    {
        return Err(CardError::InProgress);
    }
    Ok((!out.is_empty()).then_some(out))
}

/// The card after `put` over `current` (None: cleared).
pub fn apply(
    current: Option<&ProgressCard>,
    put: CardPut,
    now: u64,
) -> Result<Option<ProgressCard>, CardError> {
    let revision = current.map_or(0, |c| c.revision);
    if let Some(expected) = put.expected_revision.filter(|e| *e != revision) {
        return Err(CardError::Stale {
            expected,
            current: revision,
        });
    }
    let markdown = match put.markdown {
        Some(m) if m.len() > MAX_MARKDOWN => return Err(CardError::Markdown),
        Some(m) => Some(visible(&m)).filter(|m| !m.trim().is_empty()),
        None => None,
    };
    let steps = match put.plan {
        Some(plan) => steps(plan)?,
        None => None,
    };
    if markdown.is_none() && steps.is_none() {
        return Ok(None);
    }
    Ok(Some(ProgressCard {
        revision: revision + 1,
        updated_at: now,
        markdown,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(s: &str, status: StepStatus) -> CardStep {
        CardStep {
            step: s.into(),
            status,
        }
    }

    #[test]
    fn puts_replace_the_card_count_revisions_and_clear_when_empty() {
        let put = CardPut {
            markdown: Some("12/30 reviewed\u{200B}".into()),
            plan: Some(vec![
                step("read", StepStatus::Completed),
                step("write", StepStatus::InProgress),
            ]),
            expected_revision: None,
        };
        let one = apply(None, put, 5).unwrap().unwrap();
        assert_eq!(
            (one.revision, one.updated_at, one.markdown.as_deref()),
            (1, 5, Some("12/30 reviewed"))
        );
        let two = apply(
            Some(&one),
            CardPut {
                markdown: Some("done".into()),
                ..Default::default()
            },
            6,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (two.revision, two.steps.clone()),
            (2, None),
            "replaced whole"
        );
        let stale = CardPut {
            markdown: Some("x".into()),
            expected_revision: Some(1),
            ..Default::default()
        };
        assert_eq!(
            apply(Some(&two), stale, 7),
            Err(CardError::Stale {
                expected: 1,
                current: 2
            })
        );
        assert_eq!(apply(Some(&two), CardPut::default(), 8), Ok(None));
    }

    #[test]
    fn openclaws_limits_hold() {
        let long = CardPut {
            markdown: Some("x".repeat(MAX_MARKDOWN + 1)),
            ..Default::default()
        };
        assert_eq!(apply(None, long, 1), Err(CardError::Markdown));
        let many = CardPut {
            plan: Some(vec![step("a", StepStatus::Pending); MAX_STEPS + 1]),
            ..Default::default()
        };
        assert_eq!(apply(None, many, 1), Err(CardError::Steps));
        let two = CardPut {
            plan: Some(vec![
                step("a", StepStatus::InProgress),
                step("b", StepStatus::InProgress),
            ]),
            ..Default::default()
        };
        assert_eq!(apply(None, two, 1), Err(CardError::InProgress));
        let blank = CardPut {
            plan: Some(vec![step(" \u{200B}", StepStatus::Pending)]),
            ..Default::default()
        };
        assert_eq!(apply(None, blank, 1), Err(CardError::EmptyStep(0)));
    }
}
