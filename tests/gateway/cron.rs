//! Cron end to end (heartbeats: `heartbeat.rs`): the methods in OpenClaw's shapes, runs
//! through real sessions and the real provider client (a fake provider
//! or the offline one), announces through the Telegram adapter to the
//! fake Bot API, restarts, and a SIGKILL in the middle of a run.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::telegram::{telegram_config, BOT_TOKEN};
use crate::support::fake_provider::{last_text, FakeProvider, Script};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, Client, TestGateway};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// An ISO time `ms` from now.
fn in_ms(ms: u64) -> String {
    let secs = (now_ms() + ms) as f64 / 1000.0;
    let t = chrono::DateTime::from_timestamp_millis((secs * 1000.0) as i64).unwrap();
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn turn(name: &str, schedule: Value, message: &str) -> Value {
    json!({"name": name, "schedule": schedule, "sessionTarget": "isolated", "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": message}})
}

/// Polls `cron.runs` of a job until `n` finished runs are listed.
async fn runs_until(c: &mut Client, id: &str, n: usize) -> Vec<Value> {
    for _ in 0..1000 {
        let r = c.call("cron.runs", json!({"id": id})).await;
        let entries = r["payload"]["entries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if entries.len() >= n {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("job {id} never had {n} finished runs");
}

async fn runs_of(c: &mut Client, id: &str) -> Vec<Value> {
    let r = c.call("cron.runs", json!({"id": id})).await;
    r["payload"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn cron_methods_manage_jobs_in_openclaws_shapes() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let added = c
        .call(
            "cron.add",
            turn(
                "digest",
                json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"}),
                "sum up",
            ),
        )
        .await;
    let job = &added["payload"];
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(job["enabled"], true, "{added}");
    assert!(job["state"]["nextRunAtMs"].as_u64().unwrap() > now_ms());
    assert_eq!(
        job["deliveryPreview"]["detail"],
        "kept in the job's session"
    );
    let ev = c.event("cron").await;
    assert_eq!(
        (
            ev["payload"]["action"].as_str(),
            ev["payload"]["jobId"].as_str()
        ),
        (Some("added"), Some(id.as_str()))
    );

    let list = c.call("cron.list", json!({"includeDisabled": true})).await;
    let p = &list["payload"];
    assert_eq!(
        (p["total"].as_u64(), p["hasMore"].as_bool()),
        (Some(1), Some(false)),
        "{list}"
    );
    assert!(p["snapshotRevision"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert_eq!(p["jobs"][0]["id"], id.as_str());
    assert!(p["deliveryPreviews"][&id].is_object());
    let got = c.call("cron.get", json!({"id": id})).await;
    assert_eq!(got["payload"]["name"], "digest");

    let upd = c
        .call("cron.update", json!({"id": id, "patch": {"enabled": false, "payload": {"kind": "agentTurn", "message": "again"}}}))
        .await;
    assert_eq!(upd["payload"]["enabled"], false, "{upd}");
    assert_eq!(upd["payload"]["payload"]["message"], "again");
    assert!(upd["payload"]["state"]["nextRunAtMs"].is_null());
    let listed = c.call("cron.list", json!({})).await;
    assert_eq!(
        listed["payload"]["total"], 0,
        "disabled jobs are hidden by default"
    );

    // A manual run goes through the session: the offline provider answers.
    let run = c.call("cron.run", json!({"id": id})).await;
    assert_eq!(
        (
            run["payload"]["ok"].as_bool(),
            run["payload"]["enqueued"].as_bool()
        ),
        (Some(true), Some(true)),
        "{run}"
    );
    let entries = runs_until(&mut c, &id, 1).await;
    let e = &entries[0];
    assert_eq!(e["status"], "ok", "{e}");
    assert_eq!(e["runId"], run["payload"]["runId"]);
    assert_eq!(e["sessionKey"], format!("agent:main:cron:{id}"));
    assert!(e["summary"].as_str().unwrap().contains("again"), "{e}");
    assert_eq!(e["deliveryStatus"], "not-requested");
    let filtered = c
        .call("cron.runs", json!({"id": id, "runId": "nope"}))
        .await;
    assert_eq!(filtered["payload"]["total"], 0);
    let all = c.call("cron.runs", json!({"scope": "all"})).await;
    assert_eq!(all["payload"]["total"], 1);
    let status = c.call("cron.status", json!({})).await;
    assert_eq!(
        (
            status["payload"]["enabled"].as_bool(),
            status["payload"]["jobs"].as_u64()
        ),
        (Some(true), Some(1))
    );

    // A declaration converges: the same key again is the same job.
    let mut declared = turn(
        "backup",
        json!({"kind": "every", "everyMs": 86_400_000}),
        "back up",
    );
    declared["declarationKey"] = json!("nightly-backup");
    let first = c.call("cron.add", declared.clone()).await;
    assert_eq!(first["payload"]["created"], true, "{first}");
    let did = first["payload"]["job"]["id"].as_str().unwrap().to_string();
    let again = c.call("cron.add", declared.clone()).await;
    assert_eq!(
        (
            again["payload"]["created"].as_bool(),
            again["payload"]["updated"].as_bool()
        ),
        (Some(false), Some(false)),
        "{again}"
    );
    assert_eq!(again["payload"]["job"]["id"], did.as_str());
    declared["payload"]["message"] = json!("back up everything");
    let changed = c.call("cron.add", declared).await;
    assert_eq!(changed["payload"]["updated"], true, "{changed}");
    assert_eq!(
        changed["payload"]["job"]["payload"]["message"],
        "back up everything"
    );
    let all = c
        .call(
            "cron.list",
            json!({"includeDisabled": true, "query": "backup"}),
        )
        .await;
    assert_eq!(all["payload"]["total"], 1, "{all}");
    let rm = c.call("cron.remove", json!({"id": id})).await;
    assert_eq!(rm["payload"], json!({"ok": true, "removed": true}));
    let gone = c.call("cron.get", json!({"id": id})).await;
    assert_eq!(gone["error"]["code"], "INVALID_REQUEST");
    assert!(gone["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with(&format!("cron job not found: {id}")));
    assert_eq!(gone["error"]["details"]["code"], "CRON_JOB_NOT_FOUND");
}

#[tokio::test]
async fn bad_jobs_get_a_clear_error_at_add_and_update() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let bad = [
        (
            turn("x", json!({"kind": "cron", "expr": "* * *"}), "m"),
            "5 or 6 fields",
        ),
        (
            turn(
                "x",
                json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Nowhere/Land"}),
                "m",
            ),
            "unknown timezone",
        ),
        (
            turn("x", json!({"kind": "at", "at": "yesterday"}), "m"),
            "invalid `at` time",
        ),
        (
            json!({"name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "m"}, "delivery": {"mode": "announce", "channel": "telegram", "to": "1"}}),
            "unknown delivery channel",
        ),
        (
            json!({"name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "sessionTarget": "session:bad key", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "m"}}),
            "sessionTarget",
        ),
        (
            json!({"name": "x", "schedule": {"kind": "every", "everyMs": 1000}, "sessionTarget": "main", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "m"}}),
            "systemEvent",
        ),
        (json!("not an object"), "object"),
    ];
    for (params, why) in bad {
        let r = c.call("cron.add", params).await;
        assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("invalid cron.add params: ") && msg.contains(why),
            "{msg}"
        );
    }
    let ok = c
        .call(
            "cron.add",
            turn("fine", json!({"kind": "every", "everyMs": 3_600_000}), "m"),
        )
        .await;
    let id = ok["payload"]["id"].as_str().unwrap();
    let r = c
        .call(
            "cron.update",
            json!({"id": id, "patch": {"schedule": {"kind": "cron", "expr": "99 * * * *"}}}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cron expression"),
        "{r}"
    );
    let r = c
        .call("cron.run", json!({"id": id, "mode": "sometime"}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    let r = c.call("cron.runs", json!({"id": "a/b"})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    let r = c.call("cron.list", json!({"limit": 0})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    // The job survived all of that, unchanged.
    let got = c.call("cron.get", json!({"id": id})).await;
    assert_eq!(got["payload"]["schedule"]["everyMs"], 3_600_000);
}

#[tokio::test]
async fn an_announce_lands_once_on_telegram_and_is_reported_only_after() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    let mut c = admin(&gw).await;
    let mut params = turn(
        "remind",
        json!({"kind": "at", "at": in_ms(1200)}),
        "water the plants",
    );
    params["delivery"] = json!({"mode": "announce", "channel": "telegram", "to": "42"});
    let added = c.call("cron.add", params).await;
    let id = added["payload"]["id"].as_str().unwrap().to_string();
    // The finished event: by then Telegram has the message.
    let finished = loop {
        let e = c.event("cron").await;
        if e["payload"]["action"] == "finished" {
            break e;
        }
    };
    let sent = fake.sent_to(42);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].text.contains("water the plants"), "{sent:?}");
    let p = &finished["payload"];
    assert_eq!(
        (
            p["status"].as_str(),
            p["delivered"].as_bool(),
            p["deliveryStatus"].as_str()
        ),
        (Some("ok"), Some(true), Some("delivered")),
        "{finished}"
    );
    // A one-shot that succeeded is gone; its run is not, and nothing more is sent.
    crate::support::ledger::until_quiet(gw.store()).await;
    assert_eq!(fake.sent_to(42).len(), 1);
    let gone = c.call("cron.get", json!({"id": id})).await;
    assert_eq!(gone["error"]["details"]["code"], "CRON_JOB_NOT_FOUND");
}

/// A fake provider that answers heartbeat prompts with `beat` and anything
/// else with an echo.
pub(super) fn provider_config(fake: &FakeProvider) -> Value {
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k",
            "models": [{ "id": "m" }, { "id": "cheap" }] } } },
        "agents": { "defaults": { "model": { "primary": "fake/m", "fallbacks": [] } } },
    })
}

#[tokio::test]
async fn a_job_due_while_the_gateway_is_down_runs_once_after_restart() {
    for run_missed in [true, false] {
        let mut gw = TestGateway::with_config(json!({"cron": {"runMissedJobs": run_missed}}));
        let mut c = admin(&gw).await;
        let added = c
            .call(
                "cron.add",
                turn(
                    "missed",
                    json!({"kind": "at", "at": in_ms(1500)}),
                    "catch up",
                ),
            )
            .await;
        let id = added["payload"]["id"].as_str().unwrap().to_string();
        drop(c);
        gw.stop();
        // Time is what is tested: the job falls due while the gateway is down.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        gw.restart();
        let mut c = admin(&gw).await;
        if run_missed {
            let entries = runs_until(&mut c, &id, 1).await;
            assert_eq!(entries[0]["status"], "ok", "{:?}", entries);
        } else {
            // Answered by the cron actor after its start-up pass: a missed or
            // retried run is recorded by then.
            c.call("cron.status", json!({})).await;
            assert!(runs_of(&mut c, &id).await.is_empty());
        }
        // Another restart runs nothing more.
        drop(c);
        gw.restart();
        let mut c = admin(&gw).await;
        // Answered by the cron actor after its start-up pass: a missed or
        // retried run is recorded by then.
        c.call("cron.status", json!({})).await;
        let n = runs_of(&mut c, &id).await.len();
        assert_eq!(n, usize::from(run_missed), "run_missed={run_missed}");
    }
}

#[tokio::test]
async fn sigkill_during_a_cron_run_records_it_interrupted_and_does_not_repeat_it() {
    use crate::support::process::{sigkill, spawn_gateway};
    let provider = FakeProvider::start().await;
    // Every answer takes a minute: the run is cut short by the kill.
    provider.set_default(Script::text(&["slow ", "answer"]).with_delay(Duration::from_secs(30)));
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = provider_config(&provider);
    cfg["gateway"] = json!({"auth": {"mode": "token", "token": crate::support::TOKEN}});
    std::fs::write(dir.path().join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (mut child, addr, _) = spawn_gateway(dir.path());
    let mut c = crate::support::admin_at(&format!("ws://{addr}/"), crate::support::TOKEN).await;
    let added = c
        .call(
            "cron.add",
            turn(
                "slow",
                json!({"kind": "every", "everyMs": 3_600_000}),
                "think hard",
            ),
        )
        .await;
    let id = added["payload"]["id"].as_str().unwrap().to_string();
    c.call("cron.run", json!({"id": id})).await;
    for _ in 0..100 {
        if provider.request_count() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(provider.request_count(), 1);
    sigkill(&mut child);
    let (_child, addr, _) = spawn_gateway(dir.path());
    let mut c = crate::support::admin_at(&format!("ws://{addr}/"), crate::support::TOKEN).await;
    let entries = runs_until(&mut c, &id, 1).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (
            entries[0]["status"].as_str(),
            entries[0]["diagnostics"]["summary"].as_str()
        ),
        (Some("error"), Some("interrupted")),
        "{:?}",
        entries
    );
    // Answered by the cron actor after its start-up pass: a missed or
    // retried run is recorded by then.
    c.call("cron.status", json!({})).await;
    // The cron turn is not asked again (the session's own recovery of an
    // interrupted run may answer it, but the job does not run twice).
    assert_eq!(runs_of(&mut c, &id).await.len(), 1);
    let job = c.call("cron.get", json!({"id": id})).await;
    assert_eq!(job["payload"]["state"]["lastRunStatus"], "error");
    assert!(job["payload"]["state"]["runningAtMs"].is_null());
}

#[tokio::test]
async fn a_turn_that_fails_or_times_out_is_a_failed_run_with_its_reason() {
    let provider = FakeProvider::start().await;
    provider.respond_with(|body: &Value| {
        let text = last_text(body);
        if text.contains("slow") {
            Script::text(&["late ", "answer"]).with_delay(Duration::from_secs(4))
        } else if text.contains("fail") {
            Script::status(
                400,
                r#"{"error":{"message":"bad request: the model refuses"}}"#,
            )
        } else {
            Script::text(&["fine"])
        }
    });
    let mut cfg = provider_config(&provider);
    cfg["agents"]["defaults"]["runRestarts"] = json!({"max": 0, "backoffMs": 10});
    let gw = TestGateway::with_config(cfg);
    let mut c = admin(&gw).await;
    let r = c
        .call("cron.add", json!({"name": "ghost", "agentId": "ghost", "schedule": {"kind": "every", "everyMs": 60_000},
            "sessionTarget": "isolated", "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "x"}}))
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown agent"),
        "{r}"
    );
    let run_one = |message: &'static str, timeout: Option<u64>| {
        let mut params = turn(
            message,
            json!({"kind": "every", "everyMs": 3_600_000}),
            message,
        );
        if let Some(t) = timeout {
            params["payload"]["timeoutSeconds"] = json!(t);
        }
        params
    };
    let mut results = Vec::new();
    for (message, timeout) in [
        ("fail please", None),
        ("slow please", Some(1)),
        ("all good", None),
    ] {
        let added = c.call("cron.add", run_one(message, timeout)).await;
        let id = added["payload"]["id"].as_str().unwrap().to_string();
        c.call("cron.run", json!({"id": id})).await;
        let entries = runs_until(&mut c, &id, 1).await;
        results.push(entries[0].clone());
    }
    let (failed, slow, fine) = (&results[0], &results[1], &results[2]);
    assert_eq!(failed["status"], "error", "{failed}");
    assert!(
        failed["error"].as_str().unwrap().contains("refuses"),
        "{failed}"
    );
    assert_eq!(slow["status"], "error", "{slow}");
    assert!(
        slow["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("time"),
        "{slow}"
    );
    assert_eq!(fine["status"], "ok", "the scheduler goes on: {fine}");
    let status = c.call("cron.status", json!({})).await;
    assert_eq!(status["payload"]["jobs"], 3);
}

#[tokio::test]
async fn a_turn_in_a_named_session_runs_on_the_cron_lane() {
    let provider = FakeProvider::start().await;
    provider.set_default(
        Script::text(&["a ", "slow ", "report"]).with_delay(Duration::from_millis(700)),
    );
    let gw = TestGateway::with_config(provider_config(&provider));
    let mut c = admin(&gw).await;
    let mut params = turn(
        "report",
        json!({"kind": "every", "everyMs": 3_600_000}),
        "write the report",
    );
    params["sessionTarget"] = json!("session:reports");
    let added = c.call("cron.add", params).await;
    let id = added["payload"]["id"].as_str().unwrap().to_string();
    c.call("cron.run", json!({"id": id})).await;
    let mut seen = None;
    for _ in 0..100 {
        let l = c.call("diagnostics.lanes", json!({})).await;
        let lanes = l["payload"]["lanes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let active = |name: &str| {
            lanes
                .iter()
                .find(|r| r["lane"] == name)
                .map(|r| r["activeCount"].as_u64().unwrap_or(0))
        };
        if active("cron") == Some(1) {
            seen = Some(active("main"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        seen,
        Some(Some(0)),
        "the cron lane ran it, the main lane did not"
    );
    let entries = runs_until(&mut c, &id, 1).await;
    assert_eq!(
        entries[0]["sessionKey"], "agent:main:reports",
        "{entries:?}"
    );
    assert_eq!(entries[0]["status"], "ok");
}

#[tokio::test]
async fn a_jobs_tools_allow_is_all_its_turn_is_offered() {
    let provider = FakeProvider::start().await;
    provider.set_default(Script::text(&["done"]));
    let gw = TestGateway::with_config(provider_config(&provider));
    let mut c = admin(&gw).await;
    let mut offered = Vec::new();
    for (name, allow) in [
        ("none", json!([])),
        ("reader", json!(["read"])),
        ("any", Value::Null),
    ] {
        let mut params = turn(name, json!({"kind": "every", "everyMs": 3_600_000}), name);
        if !allow.is_null() {
            params["payload"]["toolsAllow"] = allow;
        }
        let id = c.call("cron.add", params).await["payload"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        c.call("cron.run", json!({"id": id})).await;
        runs_until(&mut c, &id, 1).await;
        let body = provider.requests.lock().unwrap().last().unwrap().0.clone();
        let tools: Vec<String> = body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        offered.push(tools);
    }
    assert!(offered[0].is_empty(), "{:?}", offered[0]);
    assert_eq!(offered[1], vec!["read".to_string()]);
    assert!(offered[2].len() > 5, "the usual tools: {:?}", offered[2]);
}

#[tokio::test]
async fn a_job_timeout_past_any_clock_runs_the_turn_instead_of_panicking() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let mut params = turn(
        "huge",
        json!({"kind": "every", "everyMs": 3_600_000}),
        "still fine",
    );
    params["payload"]["timeoutSeconds"] = json!(1e20);
    let added = c.call("cron.add", params).await;
    let id = added["payload"]["id"].as_str().unwrap().to_string();
    c.call("cron.run", json!({"id": id})).await;
    let entries = runs_until(&mut c, &id, 1).await;
    assert_eq!(entries[0]["status"], "ok", "{}", entries[0]);
    assert_eq!(c.call("health", json!({})).await["ok"], true);
}
