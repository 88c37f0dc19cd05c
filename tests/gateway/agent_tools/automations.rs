//! `automations` (alias `cron`) end to end: a reminder the owner asks for
//! on the fake Telegram is a real job of the scheduler, announced back to
//! that chat exactly once, also across a gateway restart between asking
//! and firing; OpenClaw's own CLI lists the job the tool made.

use serde_json::{json, Value};

use super::*;
use crate::support::process::{Within, CHILD_LIMIT};

/// The reminder's text, and how many chat messages to `OWNER` carry it
/// (the tool's own result, which quotes the job, excluded).
const REMINDER: &str = "Call mum about Sunday";

fn reminders(fake: &FakeTelegram) -> usize {
    fake.sent_to(OWNER)
        .iter()
        .filter(|s| s.text.contains(REMINDER) && !s.text.contains("Tool automations returned"))
        .count()
}

/// The id of the one job there is (the tool's result, as the offline
/// model quotes it, is cut short).
async fn only_job(gw: &TestGateway, reply: &str) -> String {
    assert!(reply.contains("returned: {"), "the tool failed: {reply}");
    let mut c = admin(gw).await;
    let list = c
        .call("cron.list", json!({ "includeDisabled": true }))
        .await;
    let jobs = list["payload"]["jobs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(jobs.len(), 1, "{list}");
    jobs[0]["id"].as_str().unwrap().to_string()
}

/// The runs of `id` (`cron.runs`), newest first.
async fn runs(gw: &TestGateway, id: &str) -> Vec<Value> {
    let mut c = admin(gw).await;
    let r = c.call("cron.runs", json!({ "id": id })).await;
    r["payload"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn ask_reminder(delay: &str) -> String {
    tool(
        "automations",
        json!({"action": "add", "job": {
            "schedule": {"kind": "at", "at": delay},
            "payload": {"kind": "agentTurn", "message": REMINDER},
        }}),
    )
}

#[tokio::test]
async fn a_reminder_asked_on_telegram_arrives_there_exactly_once() {
    let (fake, gw) = start(json!({}));
    let reply = ask(&fake, OWNER, 1, &ask_reminder("in 2 seconds")).await;
    let id = only_job(&gw, &reply).await;
    // The job carries the route it was asked from.
    let mut c = admin(&gw).await;
    let job = c.call("cron.get", json!({ "id": id })).await["payload"].clone();
    assert_eq!(job["delivery"]["channel"], "telegram", "{job}");
    assert_eq!(job["delivery"]["to"], OWNER.to_string(), "{job}");
    assert_eq!(job["sessionTarget"], "current", "{job}");
    assert!(
        job["schedule"]["at"].as_str().unwrap().ends_with('Z'),
        "{job}"
    );
    assert!(
        fake.until(LONG, |f| reminders(f) >= 1).await,
        "the reminder never came: {:?}",
        fake.sent()
    );
    // Barrier: the run is recorded as delivered; nothing more can follow.
    let done = crate::support::wait_for(LONG, || async {
        runs(&gw, &id)
            .await
            .iter()
            .any(|r| r["deliveryStatus"] == "delivered")
    })
    .await;
    assert!(done, "{:?}", runs(&gw, &id).await);
    assert_eq!(reminders(&fake), 1, "{:?}", fake.sent());
    // A one-shot: gone once it ran.
    let list = c
        .call("cron.list", json!({ "includeDisabled": true }))
        .await;
    assert_eq!(list["payload"]["jobs"], json!([]), "{list}");
}

#[tokio::test]
async fn a_reminder_survives_a_restart_between_asking_and_firing() {
    let (fake, mut gw) = start(json!({}));
    let reply = ask(&fake, OWNER, 1, &ask_reminder("in 3s")).await;
    let id = only_job(&gw, &reply).await;
    gw.restart();
    assert!(
        fake.until(LONG, |f| reminders(f) >= 1).await,
        "the reminder never came after the restart: {:?}",
        fake.sent()
    );
    let done = crate::support::wait_for(LONG, || async {
        runs(&gw, &id)
            .await
            .iter()
            .any(|r| r["deliveryStatus"] == "delivered")
    })
    .await;
    assert!(done, "{:?}", runs(&gw, &id).await);
    assert_eq!(reminders(&fake), 1, "{:?}", fake.sent());
}

#[tokio::test]
async fn the_job_the_tool_made_is_the_one_openclaws_cli_lists() {
    let (fake, gw) = start(json!({}));
    // By its alias, as older skills and transcripts call it.
    let reply = ask(
        &fake,
        OWNER,
        1,
        &tool(
            "cron",
            json!({"action": "add", "job": {
                "name": "standup",
                "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Lisbon"},
                "payload": {"kind": "agentTurn", "message": "Standup notes"},
            }}),
        ),
    )
    .await;
    let id = only_job(&gw, &reply).await;
    let home = tempfile::tempdir().unwrap();
    let cmd =
        super::super::interop::openclaw_command(&gw, home.path(), &["cron", "list", "--json"]);
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = cmd;
        cmd.within(CHILD_LIMIT)
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    let job = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
        .clone();
    assert_eq!(job["name"], "standup");
    assert_eq!(job["schedule"]["expr"], "0 9 * * 1-5");
    assert_eq!(job["delivery"]["channel"], "telegram");
    assert_eq!(job["delivery"]["to"], OWNER.to_string());
    // And the tool reads it back, then removes it.
    let got = ask(
        &fake,
        OWNER,
        2,
        &tool("automations", json!({"action": "get", "jobId": id})),
    )
    .await;
    assert!(got.contains("standup"), "{got}");
    let gone = ask(
        &fake,
        OWNER,
        3,
        &tool("automations", json!({"action": "remove", "jobId": id})),
    )
    .await;
    assert!(gone.contains("removed"), "{gone}");
    let mut c = admin(&gw).await;
    let list = c
        .call("cron.list", json!({ "includeDisabled": true }))
        .await;
    assert_eq!(list["payload"]["jobs"], json!([]), "{list}");
}
