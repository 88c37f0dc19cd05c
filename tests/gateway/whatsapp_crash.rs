//! WhatsApp's delivery contract under crashes, against the real binary,
//! the fake Graph API and Meta's webhook sender (which posts each message
//! again while it gets no 2xx, following the gateway to its new port after
//! a restart): messages from several customers arrive while the gateway is
//! SIGKILLed at random points (proptest draws the schedule) and restarted.
//! At the end every webhook was answered 2xx, every message was handed to
//! its session once, every reply is settled in the outbox, and nothing
//! reached WhatsApp twice (`channel_crash::check`).

use serde_json::json;

use super::channel_crash::{check, drive_with, quiet, schedule, tail_answered, Landed, Pushed};
use crate::support::fake_whatsapp::{config, text_body, FakeWhatsApp, Sender};
use crate::support::process::{sigkill, spawn_gateway, Gateway};

#[tokio::test]
async fn sigkill_under_load_never_sends_twice_nor_loses_a_message() {
    let fake = FakeWhatsApp::start();
    let dir = tempfile::tempdir().unwrap();
    let customers: Vec<String> = (0..6).map(|n| format!("155512300{n}")).collect();
    let mut cfg = config(
        &fake,
        json!({ "allowFrom": customers, "sendReadReceipts": false }),
    );
    cfg["messages"] = json!({ "queue": { "mode": "followup", "debounceMs": 0, "cap": 100 } });
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, addr, _): (Gateway, _, _) = spawn_gateway(dir.path());
    let meta = Sender::start(&format!("http://{addr}"));
    let steps = schedule("whatsapp_crash", 6, 30);
    let push = |i: usize, c: u8, text: &str| {
        let from = format!("155512300{c}");
        let id = format!("C{i}");
        meta.send(&text_body(&from, &id, text));
        Pushed {
            key: format!("whatsapp/default/{from}/wamid.{id}"),
            chat: from,
            answer: String::new(),
        }
    };
    let (pushed, crashes) = drive_with(dir.path(), &mut child, &steps, push, |addr| {
        meta.retarget(&format!("http://{addr}"))
    })
    .await;
    quiet(&child, async || meta.unanswered() == 0).await;
    sigkill(&mut child);
    assert!(
        crashes >= 2,
        "the schedule crashed {crashes} times (two at least by construction)"
    );
    assert_eq!(meta.unanswered(), 0, "every webhook was answered 2xx");
    let landed: Vec<Landed> = fake
        .sent()
        .into_iter()
        .filter(|s| s.kind == "text")
        .map(|s| Landed {
            chat: s.to,
            id: s.id,
            text: s.text,
        })
        .collect();
    let outcomes = check(
        dir.path(),
        "whatsapp",
        "whatsapp",
        crashes,
        &landed,
        &pushed,
    );
    let answered = outcomes.values().filter(|o| **o == "answered").count();
    eprintln!(
        "whatsapp crash: {crashes} crashes, {} messages: {answered} answered, {outcomes:?}",
        pushed.len()
    );
    tail_answered(&steps, &outcomes);
}
