//! `message` sends under crashes, against the real binary and the fake
//! Bot API: the owner's messages each ask the agent to send a note to
//! another chat while the gateway is SIGKILLed at random points (proptest
//! draws the schedule; replay with `FERROCLAW_TEST_SEED`) and restarted.
//! At the end the outbox holds nothing unfinished and each platform
//! message is one chunk it knows (`channel_crash::check`); no note
//! reached its chat twice; a note whose send the agent was told of (its
//! reply quotes the result) is there once (or its send had no answer);
//! and every message after the last restart got its note and its reply.

use ferroclaw_actors::channels::ledger::OutState;
use ferroclaw_actors::store::Store;
use serde_json::json;

use super::super::channel_crash::{
    after_last_crash, check, drive, outbox_items, quiet, schedule, Landed, Pushed,
};
use super::*;
use crate::support::process::{sigkill, spawn_gateway, Gateway};

/// Telegram HTML's escapes undone (the model's text has no markup here).
fn unescape(html: &str) -> String {
    html.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The chat message `i`'s note goes to.
fn target(i: usize) -> i64 {
    700_000 + i as i64
}

#[tokio::test]
async fn sigkill_under_load_never_sends_a_tool_message_twice() {
    let tg = FakeTelegram::start(super::super::telegram::BOT_TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = super::super::trust::open_config(
        &tg,
        json!({ "messages": { "queue": { "mode": "followup", "debounceMs": 0 } } }),
    );
    cfg["channels"]["telegram"]["pollTimeoutSeconds"] = json!(1);
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let steps = schedule("message_crash", 1, 24);
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, |i, _, text| {
        let id = i as i64 + 1;
        let note = tool(
            "message",
            json!({"action": "send", "channel": "telegram", "target": target(i).to_string(), "message": format!("note {i}")}),
        );
        tg.dm(OWNER, id, &format!("{text}\n{note}"));
        Pushed {
            chat: OWNER.to_string(),
            key: format!("telegram/default/{OWNER}/{id}"),
            answer: String::new(),
        }
    })
    .await;
    quiet(&child, async || {
        tg.unconfirmed() == 0 && tg.sent_to(target(pushed.len() - 1)).len() == 1
    })
    .await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "{crashes} crashes (two at least by construction)"
    );
    let landed: Vec<Landed> = tg
        .sent()
        .into_iter()
        .map(|s| Landed {
            chat: s.chat_id.to_string(),
            id: s.message_id.to_string(),
            // The chunk's text as sent: HTML when Telegram took it so.
            text: match s.html {
                true => unescape(&s.text),
                false => s.text,
            },
        })
        .collect();
    // The outbox's own invariants (replies are checked here, below).
    check(
        dir.path(),
        "telegram",
        "message tool",
        crashes,
        &landed,
        &[],
    );
    let chunks = outbox_items(&Store::open(dir.path()).unwrap());
    let replies: Vec<String> = tg.sent_to(OWNER).into_iter().map(|s| s.text).collect();
    let tail = after_last_crash(&steps);
    let mut told = 0;
    for i in 0..pushed.len() {
        let to = target(i).to_string();
        let notes = tg
            .sent_to(target(i))
            .iter()
            .filter(|s| s.text == format!("note {i}"))
            .count();
        assert!(notes <= 1, "note {i} reached {to} {notes} times");
        let unknown = chunks
            .iter()
            .any(|c| c.target == to && matches!(c.state, OutState::Unknown { .. }));
        let acked = replies
            .iter()
            .any(|r| r.contains("Tool message returned") && r.contains(&to));
        if acked {
            told += 1;
            assert!(
                notes == 1 || unknown,
                "note {i}: the agent was told it went, it never did"
            );
        }
        if tail.contains(&i) {
            assert!(
                acked && notes == 1,
                "note {i} after the last restart: {replies:?}"
            );
        }
    }
    eprintln!(
        "message crash: {crashes} crashes, {} messages, {told} notes acknowledged to the agent",
        pushed.len()
    );
}
