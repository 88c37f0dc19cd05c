//! A long conversation against a small window: it crosses the compaction
//! threshold several times and stays usable, with one memory flush per
//! cycle, a consistent history, and the same context after a restart.

use serde_json::{json, Value};

use super::*;
use crate::support::fake_provider::{last_text, FakeProvider};
use crate::support::{admin, final_text, say, TestGateway};

const WINDOW: u64 = 12_000;

fn responder(fake: &FakeProvider) {
    fake.respond_with(|body: &Value| {
        let last = last_text(body);
        if last.contains(SUMMARY_ASK) {
            answer(body, &good_summary(body))
        } else if last.contains(FLUSH_ASK) {
            answer(body, &format!("- the user is counting; last seen {}", turn_of(&json!({"messages": body["messages"].as_array().unwrap()[..body["messages"].as_array().unwrap().len() - 1]}))))
        } else {
            answer(body, &format!("ack {}", turn_of(body)))
        }
    });
}

fn kinds(fake: &FakeProvider) -> (Vec<Value>, usize, usize) {
    let reqs: Vec<Value> = fake
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| b.clone())
        .collect();
    let summaries = reqs
        .iter()
        .filter(|b| last_text(b).contains(SUMMARY_ASK))
        .count();
    let flushes = reqs
        .iter()
        .filter(|b| last_text(b).contains(FLUSH_ASK))
        .count();
    (reqs, summaries, flushes)
}

#[tokio::test]
async fn a_long_conversation_compacts_again_and_again_and_stays_usable() {
    let fake = FakeProvider::start().await;
    responder(&fake);
    let mut gw = TestGateway::with_config(config(&fake, WINDOW, json!({})));
    let mut c = admin(&gw).await;
    for n in 0..45 {
        let events = say(&mut c, "main", &filler(n, 1_200), &format!("t{n}")).await;
        assert_eq!(
            final_text(&events),
            format!("ack turn-{n}"),
            "turn {n} answered by its own reply"
        );
    }
    let (reqs, summaries, flushes) = kinds(&fake);
    let entries = transcript(&mut c).await;
    let compactions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert!(
        compactions.len() >= 2,
        "crossed the threshold several times: {}",
        compactions.len()
    );
    assert_eq!(
        summaries,
        compactions.len(),
        "one summary call per compaction"
    );
    assert!(
        compactions.iter().all(|e| e.get("details").is_none()),
        "the model's summaries passed the check"
    );
    let row = main_row(&mut c).await;
    assert_eq!(row["compactionCount"], compactions.len());
    assert_eq!(row["contextTokens"], WINDOW);
    assert!(row["totalTokens"].as_u64().unwrap() < WINDOW, "{row}");
    assert_eq!(row["totalTokensFresh"], true);
    // Every request fit the window; after a compaction the context starts
    // with the summary, which names turns it summarised.
    for b in &reqs {
        assert!(
            ((body_chars(b) / 4) as u64) < WINDOW,
            "a request over the window"
        );
    }
    let last = reqs.last().unwrap();
    let first_user = last["messages"][1]["content"].as_str().unwrap_or("");
    assert!(
        first_user.starts_with("[Summary of the earlier conversation]"),
        "{first_user}"
    );
    assert!(
        first_user.contains("turn-"),
        "the summary carries identifiers"
    );
    // The transcript keeps every message (45 user turns, 45 replies).
    let messages = entries.iter().filter(|e| e["type"] == "message").count();
    assert!(messages >= 90, "{messages}");
    // One memory flush per compaction cycle, appended to today's note, unseen.
    assert!(
        flushes >= 1 && flushes <= compactions.len() + 1,
        "flushes {flushes}"
    );
    let day = chrono::Local::now().format("%Y-%m-%d").to_string();
    let note =
        std::fs::read_to_string(gw.state_dir().join(format!("workspace/memory/{day}.md"))).unwrap();
    assert_eq!(note.matches("## Memory flush").count(), flushes);
    assert!(note.contains("the user is counting"));
    let h = c
        .call("chat.history", json!({"sessionKey": "main", "limit": 1000}))
        .await;
    let shown = h["payload"]["messages"].as_array().unwrap();
    assert!(
        shown
            .iter()
            .all(|m| !m.to_string().contains("the user is counting")),
        "the flush is silent"
    );

    // After a restart the context is rebuilt the same: summary first.
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let before = fake.request_count();
    let events = say(&mut c, "main", &filler(99, 100), "after").await;
    assert_eq!(final_text(&events), "ack turn-99");
    let reqs = fake.requests.lock().unwrap()[before..].to_vec();
    let turn = reqs
        .iter()
        .map(|(b, _)| b)
        .find(|b| last_text(b).contains("turn-99"))
        .unwrap();
    let first_user = turn["messages"][1]["content"].as_str().unwrap_or("");
    assert!(
        first_user.starts_with("[Summary of the earlier conversation]"),
        "{first_user}"
    );
}
