//! Cron's exactly-once claim under crashes, against the real binary: eight
//! jobs fire every second while the gateway is SIGKILLed at points
//! proptest draws and restarted (some at once, some after a pause long
//! enough to miss slots). At the end no job ran any slot twice, nothing is
//! left running, and each job's session holds no more turns than the job
//! ran and no fewer than it finished. (That a restart makes up at most one
//! missed slot per job is the property test of `tests/actors/cron.rs`.)

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};

use crate::support::process::{sigkill, spawn_gateway};
use crate::support::{admin_at, Client, TOKEN};

async fn connect(addr: &str) -> Client {
    admin_at(&format!("ws://{addr}/"), TOKEN).await
}

/// (run for ms, then down for ms) per crash.
fn schedule() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((700u64..2500, prop_oneof![Just(0u64), 1200u64..2600]), 4)
}

#[tokio::test]
async fn sigkill_while_jobs_fire_never_runs_a_slot_twice() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = json!({"gateway": {"auth": {"mode": "token", "token": TOKEN}}});
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, addr, _) = spawn_gateway(dir.path());
    let mut c = connect(&addr).await;
    let mut ids = Vec::new();
    for i in 0..8 {
        let r = c
            .call(
                "cron.add",
                json!({"name": format!("tick {i}"), "schedule": {"kind": "every", "everyMs": 1000},
                "sessionTarget": "isolated", "wakeMode": "now",
                "payload": {"kind": "agentTurn", "message": format!("tick {i}")}}),
            )
            .await;
        ids.push(r["payload"]["id"].as_str().unwrap().to_string());
    }
    drop(c);
    let mut runner = crate::support::seeded_runner(crate::support::test_seed("cron_crash"), 1);
    let steps = schedule().new_tree(&mut runner).unwrap().current();
    let mut addr = addr;
    for (up, down) in &steps {
        tokio::time::sleep(Duration::from_millis(*up)).await;
        sigkill(&mut child);
        tokio::time::sleep(Duration::from_millis(*down)).await;
        let (next, next_addr, _) = spawn_gateway(dir.path());
        child = next;
        addr = next_addr;
    }
    // Time is what is tested: the last gateway runs its jobs' slots for
    // 2.5 s. Then quiet: the jobs off, the runs in flight end.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut c = connect(&addr).await;
    for id in &ids {
        c.call(
            "cron.update",
            json!({"id": id, "patch": {"enabled": false}}),
        )
        .await;
    }
    for _ in 0..500 {
        let s = c.call("cron.status", json!({})).await;
        if s["payload"]["running"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut total = 0;
    for id in &ids {
        let runs = c
            .call(
                "cron.runs",
                json!({"id": id, "limit": 200, "sortDir": "asc"}),
            )
            .await;
        let entries: Vec<Value> = runs["payload"]["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut slots = BTreeSet::new();
        for e in &entries {
            // The run id names the slot (`cron:<job>:<slot>`), by
            // construction: a slot run twice repeats its run id.
            let slot = e["runId"].as_str().unwrap();
            assert!(
                slots.insert(slot),
                "job {id} ran slot {slot} twice: {entries:?}"
            );
        }
        let ran = entries.iter().filter(|e| e["status"] != "skipped").count();
        let ok = entries.iter().filter(|e| e["status"] == "ok").count();
        total += entries.len();
        let history = c
            .call(
                "chat.history",
                json!({"sessionKey": format!("agent:main:cron:{id}"), "limit": 1000}),
            )
            .await;
        let asked = history["payload"]["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "user").count())
            .unwrap_or(0);
        assert!(
            asked <= ran && asked >= ok,
            "job {id}: {asked} turns for {ran} runs ({ok} ok)"
        );
        let job = c.call("cron.get", json!({"id": id})).await;
        assert!(job["payload"]["state"]["runningAtMs"].is_null(), "{job}");
    }
    assert!(
        total >= ids.len() * 4,
        "the jobs ran: {total} runs over {} restarts",
        steps.len()
    );
    drop(child);
}
