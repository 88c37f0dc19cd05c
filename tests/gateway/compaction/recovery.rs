//! The summary call failing, timing out, overflowing or returning garbage
//! each ends in the deterministic summary with the session answering the
//! next message; a provider's context overflow compacts and runs the turn
//! once more, and when that cannot help the error is clear and the next
//! message works; pruning shortens what is sent, never the transcript.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::support::fake_provider::{last_text, FakeProvider, Script};
use crate::support::{admin, final_text, say, Client, TestGateway};

/// Builds a conversation of `turns` turns (compaction off), then asks
/// `sessions.compact`; returns its answer.
async fn grow_and_compact(c: &mut Client, turns: usize, chars: usize) -> Value {
    for n in 0..turns {
        let events = say(c, "main", &filler(n, chars), &format!("g{n}")).await;
        assert_eq!(final_text(&events), format!("ack turn-{n}"));
    }
    c.call("sessions.compact", json!({"key": "main"})).await["payload"].clone()
}

async fn the_fallback_is_used_when(
    summary: impl Fn(&Value) -> Script + Send + Sync + 'static,
    window: u64,
    extra: Value,
    turns: usize,
    want: &str,
) {
    let fake = FakeProvider::start().await;
    fake.respond_with(move |body: &Value| {
        if last_text(body).contains(SUMMARY_ASK) {
            summary(body)
        } else {
            answer(body, &format!("ack {}", turn_of(body)))
        }
    });
    let mut cfg_extra = json!({"agents": {"defaults": {"compaction": {"mode": "none"}}}});
    ferroclaw::config::merge_patch(&mut cfg_extra, &extra);
    let gw = TestGateway::with_config(config(&fake, window, cfg_extra));
    let mut c = admin(&gw).await;
    let r = grow_and_compact(&mut c, turns, 400).await;
    assert_eq!(r["compacted"], true, "{r}");
    assert_eq!(r["fallback"]["kind"], "deterministic", "{r}");
    let why = r["fallback"]["reason"].as_str().unwrap();
    assert!(why.contains(want), "{want}: {why}");
    let entries = transcript(&mut c).await;
    let comp = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    let summary = comp["summary"].as_str().unwrap();
    assert!(
        summary.contains("## Pending user asks") && summary.contains("turn-0"),
        "{summary}"
    );
    assert_eq!(comp["details"]["fallback"], "deterministic");
    // The session answers the next message, from the summary.
    let before = fake.request_count();
    let events = say(&mut c, "main", "turn-500 still there?", "next").await;
    assert_eq!(final_text(&events), "ack turn-500");
    let sent = fake.requests.lock().unwrap()[before..].to_vec();
    let body = &sent.last().unwrap().0;
    assert!(body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .starts_with("[Summary"));
}

#[tokio::test]
async fn a_failing_summary_call_falls_back() {
    let fail = |_: &Value| Script::status(400, r#"{"error":{"message":"bad request: nope"}}"#);
    the_fallback_is_used_when(fail, 100_000, json!({}), 6, "nope").await;
}

#[tokio::test]
async fn a_summary_call_that_hangs_falls_back_at_the_timeout() {
    let hang = |body: &Value| delayed(answer(body, "never in time"), Duration::from_secs(30));
    let extra = json!({"agents": {"defaults": {"compaction": {"timeoutSeconds": 1}}}});
    the_fallback_is_used_when(hang, 100_000, extra, 6, "in time").await;
}

#[tokio::test]
async fn a_summary_call_that_would_overflow_falls_back_without_being_sent() {
    let never = |_: &Value| panic!("an overflowing summary request was sent");
    // 12 turns of ~400 characters against a 1,500-token window: the
    // older part alone is over it.
    the_fallback_is_used_when(never, 1_500, json!({}), 12, "overflow").await;
}

#[tokio::test]
async fn an_empty_or_garbage_summary_falls_back() {
    let garbage = |body: &Value| answer(body, "Sure! Here is a summary: things happened.");
    the_fallback_is_used_when(garbage, 100_000, json!({}), 6, "heading").await;
}

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;

#[tokio::test]
async fn a_context_overflow_compacts_and_runs_the_turn_again_once() {
    let fake = FakeProvider::start().await;
    // Overflows while the request holds more than 8 messages.
    let always = Arc::new(AtomicBool::new(false));
    let a = always.clone();
    fake.respond_with(move |body: &Value| {
        let last = last_text(body);
        if last.contains(SUMMARY_ASK) {
            return answer(body, &good_summary(body));
        }
        let n = body["messages"].as_array().map_or(0, Vec::len);
        if a.load(Ordering::Relaxed) || n > 8 {
            return Script::status(400, OVERFLOW);
        }
        answer(body, &format!("ack {}", turn_of(body)))
    });
    let extra = json!({"agents": {"defaults": {"compaction": {"mode": "none"}}}});
    let gw = TestGateway::with_config(config(&fake, 100_000, extra));
    let mut c = admin(&gw).await;
    for n in 0..4 {
        let events = say(&mut c, "main", &filler(n, 200), &format!("o{n}")).await;
        assert_eq!(final_text(&events), format!("ack turn-{n}"));
    }
    // The 5th turn overflows (system + 9 messages): compacted, retried, answered.
    let events = say(&mut c, "main", &filler(4, 200), "o4").await;
    assert_eq!(final_text(&events), "ack turn-4");
    assert_eq!(main_row(&mut c).await["compactionCount"], 1);
    // A provider that overflows whatever is sent: one compaction, then a
    // clear error; the session is not reset and not wedged.
    always.store(true, Ordering::Relaxed);
    let events = say(&mut c, "main", &filler(5, 200), "o5").await;
    let end = &events.last().unwrap()["payload"];
    assert_eq!(end["state"], "error", "{end}");
    let msg = end["errorMessage"].as_str().unwrap();
    assert!(
        msg.contains("does not fit the model's context window"),
        "{msg}"
    );
    let row = main_row(&mut c).await;
    always.store(false, Ordering::Relaxed);
    let events = say(&mut c, "main", "turn-6 ok?", "o6").await;
    assert_eq!(final_text(&events), "ack turn-6");
    let after = main_row(&mut c).await;
    assert_eq!(
        after["sessionId"], row["sessionId"],
        "never silently a new session"
    );
}

#[tokio::test]
async fn pruning_trims_old_tool_results_in_requests_and_never_the_transcript() {
    let fake = FakeProvider::start().await;
    let big = "x".repeat(9_000);
    fake.respond_with(move |body: &Value| {
        let last = last_text(body);
        let msgs = body["messages"].as_array().unwrap();
        let after_tool = msgs.last().is_some_and(|m| m["role"] == "tool");
        if last.contains("please read") && !after_tool {
            let id = format!("call-{}", msgs.len());
            return Script::tool_call(&id, "exec", &json!({"command": format!("printf '{big}'")}));
        }
        answer(body, &format!("ack {}", turn_of(body)))
    });
    // Compaction off: only pruning shortens the context here.
    let extra = json!({"agents": {"defaults": {"contextPruning": {"mode": "sliding"},
        "compaction": {"mode": "none"}}}});
    let gw = TestGateway::with_config(config(&fake, 20_000, extra));
    let mut c = admin(&gw).await;
    for n in 0..6 {
        say(
            &mut c,
            "main",
            &format!("turn-{n} please read"),
            &format!("p{n}"),
        )
        .await;
    }
    let before = transcript(&mut c).await;
    let reqs = fake.requests.lock().unwrap().clone();
    let last = &reqs.last().unwrap().0;
    let tool_texts: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        tool_texts.iter().any(|t| t.contains("[Tool result trimmed") || t == "[Old tool result content cleared]"),
        "old results pruned in what was sent"
    );
    assert!(
        tool_texts.last().unwrap().len() >= 9_000,
        "the recent result is whole"
    );
    // The stored transcript still has every result whole, byte for byte.
    let results: Vec<&Value> = before
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 6);
    assert!(results
        .iter()
        .all(|e| e["message"]["content"][0]["text"].as_str().unwrap().len() >= 9_000));
    say(&mut c, "main", "turn-9 thanks", "p9").await;
    let after = transcript(&mut c).await;
    assert_eq!(
        after[..before.len()],
        before[..],
        "the transcript is byte-identical"
    );
}
