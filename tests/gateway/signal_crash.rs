//! Signal's delivery contract under crashes, against the real binary and
//! the fake signal-cli daemon, which keeps running (and keeping its last
//! 1000 events) while the gateway is SIGKILLed at random points (proptest
//! draws the schedule) and restarted: messages from several senders are
//! pushed throughout, some while no gateway reads the stream. The
//! restarted gateway reads on from its stored event id. At the end every
//! message was handed to its session once, every reply is settled in the
//! outbox, and nothing reached Signal twice (`channel_crash::check`).

use serde_json::json;

use super::channel_crash::{
    after_last_crash, check, drive, quiet, schedule, tail_answered, Landed, Pushed,
};
use crate::support::fake_signal::{calls_sync, config, post_sync, text, Drive, FakeSignal};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_loses_a_message() {
    let fake = FakeSignal::start();
    let dir = tempfile::tempdir().unwrap();
    let senders: Vec<String> = (0..6).map(|n| format!("+155512300{n}")).collect();
    let mut cfg = config(&fake.url, json!({ "allowFrom": senders }));
    cfg["messages"] = json!({ "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let steps = schedule("signal_crash", 6, 30);
    let url = fake.url.clone();
    let push = |i: usize, c: u8, body: &str| {
        let from = format!("+155512300{c}");
        let ts = 1_700_000_000_000u64 + i as u64;
        post_sync(&url, "/fake/inject", &text(&from, ts, body).to_string());
        Pushed {
            key: format!("signal/default/{from}/{ts}"),
            chat: from,
            answer: String::new(),
        }
    };
    let (pushed, crashes) = drive(dir.path(), &mut child, &steps, push).await;
    // signal-cli confirms nothing: the messages pushed after the last restart
    // answered (the test requires it below) say the gateway took every
    // message, since one replayed after a restart comes before them.
    quiet(&child, async || {
        let calls = calls_sync(&url);
        after_last_crash(&steps).map(|i| &pushed[i]).all(|p| {
            calls.iter().any(|c| {
                c["method"] == "send"
                    && c["params"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(&p.answer))
            })
        })
    })
    .await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    let landed: Vec<Landed> = fake
        .calls()
        .await
        .into_iter()
        .filter(|c| c["method"] == "send" && c.get("result").is_some())
        .map(|c| Landed {
            chat: c["params"]["recipient"][0]
                .as_str()
                .unwrap_or("")
                .to_string(),
            id: c["result"]["timestamp"].to_string(),
            text: c["params"]["message"].as_str().unwrap_or("").to_string(),
        })
        .collect();
    let outcomes = check(dir.path(), "signal", "signal", crashes, &landed, &pushed);
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "signal crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    tail_answered(&steps, &outcomes);
}
