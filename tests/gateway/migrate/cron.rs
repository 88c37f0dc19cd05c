//! OpenClaw's cron jobs through `ferroclaw import`.

use super::*;

/// OpenClaw's cron jobs come along: the same ids, schedules and targets,
/// and a job whose last run OpenClaw recorded does not run that slot again.
#[tokio::test]
async fn openclaw_cron_jobs_are_imported_and_scheduled() {
    let home = openclaw_home("http://127.0.0.1:9/v1");
    let oc = home.path().join(".openclaw");
    let now = ferroclaw_actors::now_ms();
    let jobs = serde_json::json!({"version": 1, "jobs": [
        {"id": "5f0c1d2e-daily", "name": "daily digest", "enabled": true, "createdAtMs": now - 86_400_000,
         "updatedAtMs": now - 86_400_000,
         "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"},
         "sessionTarget": "isolated", "wakeMode": "now",
         "payload": {"kind": "agentTurn", "message": "summarise my inbox"},
         "delivery": {"mode": "announce", "channel": "telegram", "to": "42"},
         "state": {"lastRunAtMs": now - 60_000, "lastStatus": "ok"}},
        {"id": "bad-tz", "name": "broken", "enabled": true, "createdAtMs": now,
         "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"},
         "sessionTarget": "isolated", "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "x"}},
    ]});
    std::fs::create_dir_all(oc.join("cron")).unwrap();
    std::fs::write(oc.join("cron/jobs.json"), jobs.to_string()).unwrap();
    let state = home.path().join("ferroclaw");
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let said = out(&o);
    assert!(said.contains("1 cron job(s) imported"), "{said}");
    assert!(
        said.contains("\"broken\"") && said.contains("unknown timezone"),
        "{said}"
    );
    let (_gw, addr, _) = spawn_gateway(&state);
    let mut c = client(&addr, FIXTURE_TOKEN).await;
    let job = c
        .call("cron.get", serde_json::json!({"id": "5f0c1d2e-daily"}))
        .await;
    let j = &job["payload"];
    assert_eq!(j["schedule"]["tz"], "Europe/Lisbon", "{job}");
    assert_eq!(j["delivery"]["to"], "42");
    assert_eq!(j["state"]["lastRunStatus"], "ok");
    assert!(j["state"]["nextRunAtMs"].as_u64().unwrap() > now);
    // Answered by the cron actor after its start-up pass: a missed run
    // would be recorded by then.
    c.call("cron.status", serde_json::json!({})).await;
    let runs = c
        .call("cron.runs", serde_json::json!({"id": "5f0c1d2e-daily"}))
        .await;
    assert_eq!(runs["payload"]["total"], 0, "nothing to catch up: {runs}");
}
