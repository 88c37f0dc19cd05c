//! What a run did besides spending tokens, kept in its `usage` row: the
//! channel its messages came by, its messages by role, its tool calls by
//! name, the errors it met, and each reply's latency (the time from the
//! turn's input to each assistant message, as OpenClaw measures it). The
//! session tallies it while the run goes ([`Activity::note`]) and writes it
//! with the run's end; `sessions.usage` sums it over a range
//! ([`Summary`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::provider::{ChatMessage, MessageRole};

/// Latencies kept per run (a run of many tool rounds keeps its first).
const LATENCIES_PER_RUN: usize = 64;

/// OpenClaw drops latencies above this (a reply hours after its input is
/// not a latency).
const MAX_LATENCY_MS: u64 = 12 * 3_600_000;

/// One run's activity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Activity {
    /// The channel its messages came by (`webchat` for gateway clients).
    pub channel: String,
    pub user: u64,
    pub assistant: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    /// Tool results that were errors, and the run's own failure.
    pub errors: u64,
    /// Calls by tool name.
    pub tools: BTreeMap<String, u64>,
    /// Each assistant message's time since the turn's input (ms).
    pub latencies_ms: Vec<u64>,
}

impl Activity {
    /// A message of the run, added at `now` to a run whose input came at
    /// `input_at`.
    pub fn note(&mut self, m: &ChatMessage, input_at: u64, now: u64) {
        match m.role {
            MessageRole::User => self.user += 1,
            MessageRole::Assistant => {
                self.assistant += 1;
                self.tool_calls += m.tool_calls.len() as u64;
                for c in &m.tool_calls {
                    *self.tools.entry(c.name.clone()).or_default() += 1;
                }
                let latency = now.saturating_sub(input_at);
                if latency <= MAX_LATENCY_MS && self.latencies_ms.len() < LATENCIES_PER_RUN {
                    self.latencies_ms.push(latency);
                }
            }
            MessageRole::Tool => {
                self.tool_results += 1;
                self.errors += u64::from(m.is_error);
            }
        }
    }

    /// Adds another run's activity (the channel is not summed).
    pub fn merge(&mut self, o: &Activity) {
        self.user += o.user;
        self.assistant += o.assistant;
        self.tool_calls += o.tool_calls;
        self.tool_results += o.tool_results;
        self.errors += o.errors;
        for (t, n) in &o.tools {
            *self.tools.entry(t.clone()).or_default() += n;
        }
        self.latencies_ms.extend(&o.latencies_ms);
    }

    /// OpenClaw's `SessionMessageCounts`.
    pub fn messages_json(&self) -> Value {
        json!({ "total": self.user + self.assistant, "user": self.user,
                "assistant": self.assistant, "toolCalls": self.tool_calls,
                "toolResults": self.tool_results, "errors": self.errors })
    }

    /// OpenClaw's `SessionToolUsage`: most called first, ties by name.
    pub fn tools_json(&self) -> Value {
        let mut tools: Vec<(&String, &u64)> = self.tools.iter().collect();
        tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let list: Vec<Value> = tools
            .iter()
            .map(|(name, count)| json!({ "name": name, "count": count }))
            .collect();
        json!({ "totalCalls": self.tool_calls, "uniqueTools": self.tools.len(), "tools": list })
    }

    /// OpenClaw's `SessionLatencyStats` (`count`, `avgMs`, `p95Ms`,
    /// `minMs`, `maxMs`); None without a reply.
    pub fn latency_json(&self) -> Option<Value> {
        latency(&self.latencies_ms)
    }
}

/// Latency statistics of `values` (p95: the smallest value at or above
/// 95 % of them, as OpenClaw's).
pub fn latency(values: &[u64]) -> Option<Value> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    let p95 = v[(n * 95).div_ceil(100).clamp(1, n) - 1];
    let sum: u64 = v.iter().sum();
    Some(
        json!({ "count": n, "avgMs": sum as f64 / n as f64, "p95Ms": p95,
                 "minMs": v[0], "maxMs": v[n - 1] }),
    )
}

/// Activity summed over runs: in all, per day and per channel.
#[derive(Debug, Default)]
pub struct Summary {
    pub all: Activity,
    pub by_day: BTreeMap<String, Activity>,
}

impl Summary {
    pub fn add(&mut self, day: String, a: &Activity) {
        self.all.merge(a);
        self.by_day.entry(day).or_default().merge(a);
    }

    /// `[{date, count, avgMs, p95Ms, minMs, maxMs}]`, oldest first.
    pub fn daily_latency(&self) -> Vec<Value> {
        self.by_day
            .iter()
            .filter_map(|(date, a)| {
                let mut v = a.latency_json()?;
                v["date"] = json!(date);
                Some(v)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn assistant(tools: &[&str]) -> ChatMessage {
        let mut m = ChatMessage::assistant("ok");
        m.tool_calls = tools
            .iter()
            .enumerate()
            .map(|(i, t)| ToolCall {
                id: format!("c{i}"),
                name: t.to_string(),
                arguments: json!({}),
            })
            .collect();
        m
    }

    #[test]
    fn a_run_counts_its_messages_tools_errors_and_latencies() {
        let mut a = Activity::default();
        a.note(&ChatMessage::user("hi"), 1_000, 1_000);
        a.note(&assistant(&["exec", "read", "exec"]), 1_000, 1_400);
        a.note(&ChatMessage::tool_result("c0", "boom", true), 1_000, 1_500);
        a.note(&ChatMessage::tool_result("c1", "fine", false), 1_000, 1_500);
        a.note(&assistant(&[]), 1_000, 2_000);
        assert_eq!(
            a.messages_json(),
            json!({"total": 3, "user": 1, "assistant": 2, "toolCalls": 3, "toolResults": 2, "errors": 1})
        );
        assert_eq!(
            a.tools_json(),
            json!({"totalCalls": 3, "uniqueTools": 2,
                   "tools": [{"name": "exec", "count": 2}, {"name": "read", "count": 1}]})
        );
        assert_eq!(a.latencies_ms, vec![400, 1_000]);
    }

    #[test]
    fn latency_statistics_take_the_95th_percentile_of_what_was_seen() {
        let values: Vec<u64> = (1..=100).collect();
        let v = latency(&values).unwrap();
        assert_eq!(
            (&v["count"], &v["p95Ms"], &v["minMs"], &v["maxMs"]),
            (&json!(100), &json!(95), &json!(1), &json!(100))
        );
        assert_eq!(v["avgMs"], 50.5);
        assert_eq!(latency(&[7]).unwrap()["p95Ms"], 7);
        assert!(latency(&[]).is_none());
    }

    #[test]
    fn a_summary_keeps_days_apart() {
        let mut s = Summary::default();
        let day = |ms: u64| Activity {
            latencies_ms: vec![ms],
            assistant: 1,
            ..Default::default()
        };
        s.add("2026-11-29".into(), &day(100));
        s.add("2026-11-30".into(), &day(300));
        s.add("2026-11-30".into(), &day(500));
        let daily = s.daily_latency();
        assert_eq!(daily.len(), 2);
        assert_eq!(daily[1]["date"], "2026-11-30");
        assert_eq!(daily[1]["avgMs"], 400.0);
        assert_eq!(s.all.assistant, 3);
    }
}
