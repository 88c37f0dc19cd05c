//! `durable.*` and `gateway.restore.status` against the real binary. A
//! reply whose send left and got no answer before a SIGKILL is, after the
//! restart, an open `delivery_unknown` fact, a `suspended` wake with an
//! `unknown` attempt and an obligation; the next reply is `acked`. Every
//! payload passes OpenClaw's schemas (vendored from its source into
//! tests/interop/openclaw-schemas/). A restored state dir reports its
//! restore until its first clean stop, and still after a crash.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::telegram::{answers, telegram_config, BOT_TOKEN, LONG};
use super::validators::Recorded;
use crate::support::fake_telegram::{FakeTelegram, Fault};
use crate::support::process::{ferroclaw, sigkill, spawn_gateway, Within, CHILD_LIMIT};
use crate::support::process::{Gateway, WaitWithin};
use crate::support::{admin_at, Client};

/// Calls `method` and records its payload for `schema`.
async fn call(
    c: &mut Client,
    rec: &mut Recorded,
    method: &str,
    p: Value,
    schema: &'static str,
) -> Value {
    let r = c.call(method, p).await;
    assert_eq!(r["ok"], true, "{method}: {r}");
    rec.add(method, schema, &r["payload"]);
    r["payload"].clone()
}

fn write_config(dir: &Path, fake: &FakeTelegram) {
    let mut cfg = telegram_config(fake, json!({ "streamMode": "off", "typingMode": "never" }));
    let root = super::control_ui::installed_ui().display().to_string();
    cfg["gateway"] = json!({ "controlUi": { "root": root } });
    std::fs::write(dir.join("ferroclaw.json"), cfg.to_string()).unwrap();
}

async fn connect(addr: &str, dir: &Path) -> Client {
    let token = std::fs::read_to_string(dir.join("gateway.token")).unwrap();
    admin_at(&format!("ws://{addr}"), token.trim()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_cut_off_by_a_crash_is_shown_as_uncertain_and_the_next_reply_as_delivered() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &fake);
    // The first send is taken by Telegram and its answer never comes.
    fake.fault(
        "sendMessage",
        Fault::AppliedNoAnswer(Duration::from_secs(300)),
    );
    let (mut gw, _, _): (Gateway, _, _) = spawn_gateway(dir.path());
    fake.dm(42, 1, "cut off");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: cut off") == 1)
            .await
    );
    sigkill(&mut gw);
    let (_gw, addr, _) = spawn_gateway(dir.path());
    fake.dm(42, 2, "after");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: after") == 1)
            .await
    );
    let mut c = connect(&addr, dir.path()).await;
    let mut rec = Recorded::default();
    // The delivery record of "after" is gone once its chunk settled.
    let mut wakes = Value::Null;
    for _ in 0..200 {
        wakes = call(
            &mut c,
            &mut rec,
            "durable.wakes.list",
            json!({}),
            "durable/WakeObligationListResultSchema",
        )
        .await;
        if wakes["wakes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["status"] != "pending")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let list = wakes["wakes"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{wakes}");
    let (after, cut) = (&list[0], &list[1]);
    assert_eq!(
        (&after["status"], &after["reason"]),
        (&json!("acked"), &json!("child_terminal")),
        "{after}"
    );
    assert_eq!(
        (&cut["status"], &cut["reason"]),
        (&json!("suspended"), &json!("delivery_unknown")),
        "{cut}"
    );
    assert_eq!(cut["targetRef"], "default:42");
    let cut_id = cut["wakeId"].as_str().unwrap();
    let attempts = call(
        &mut c,
        &mut rec,
        "durable.deliveryAttempts.list",
        json!({ "wakeId": cut_id }),
        "durable/DeliveryAttemptEvidenceListResultSchema",
    )
    .await;
    let attempts = attempts["deliveryAttemptEvidence"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["status"], "unknown");
    let sent = call(
        &mut c,
        &mut rec,
        "durable.deliveryAttempts.list",
        json!({ "wakeId": after["wakeId"], "limit": 5 }),
        "durable/DeliveryAttemptEvidenceListResultSchema",
    )
    .await;
    assert_eq!(
        sent["deliveryAttemptEvidence"][0]["status"], "handoff_accepted",
        "{sent}"
    );
    let facts = call(
        &mut c,
        &mut rec,
        "durable.uncertainty.list",
        json!({ "limit": 10 }),
        "durable/UncertaintyFactListResultSchema",
    )
    .await;
    let facts = facts["uncertaintyFacts"].as_array().unwrap().clone();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(
        (&facts[0]["kind"], &facts[0]["status"]),
        (&json!("delivery_unknown"), &json!("open"))
    );
    let seen = call(
        &mut c,
        &mut rec,
        "durable.wakes.inspect",
        json!({ "wakeId": cut_id }),
        "durable/WakeObligationInspectResultSchema",
    )
    .await;
    assert_eq!(
        seen["inspection"]["unresolvedUncertainty"][0]["factId"],
        facts[0]["factId"]
    );
    let owed = call(
        &mut c,
        &mut rec,
        "durable.obligations.list",
        json!({}),
        "durable/DurableObligationsListResultSchema",
    )
    .await;
    let kinds: Vec<&Value> = owed["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(kinds, [&json!("unresolved_uncertainty")], "{owed}");
    let health = call(
        &mut c,
        &mut rec,
        "durable.health.get",
        json!({}),
        "durable/DurableHealthResultSchema",
    )
    .await;
    assert_eq!(health["store"]["unresolvedUncertaintyFacts"], 1, "{health}");
    assert_eq!(
        (&health["ready"], &health["store"]["steps"]),
        (&json!(true), &json!(2))
    );
    // Nothing the chat said is on the wire.
    let wire = serde_json::to_string(&rec.0.iter().map(|r| &r.2).collect::<Vec<_>>()).unwrap();
    assert!(
        !wire.contains("cut off") && !wire.contains("You said"),
        "{wire}"
    );
    let refused = rec.refused();
    assert!(refused.is_empty(), "{refused:#?}");
    // Bad params get OpenClaw's errors; the connection goes on.
    for (method, p, message) in [
        (
            "durable.wakes.list",
            json!({ "limit": 0 }),
            "Invalid durable limit.",
        ),
        (
            "durable.uncertainty.list",
            json!({ "limit": 501 }),
            "Invalid durable limit.",
        ),
        (
            "durable.obligations.list",
            json!({ "cursor": "x" }),
            "Invalid durable limit.",
        ),
        (
            "durable.deliveryAttempts.list",
            json!({}),
            "wakeId is required.",
        ),
        (
            "durable.health.get",
            json!({ "x": 1 }),
            "Invalid health request.",
        ),
        (
            "durable.wakes.inspect",
            json!({ "wakeId": "default|none/none" }),
            "wake obligation not found: default|none/none",
        ),
    ] {
        let r = c.call(method, p).await;
        assert_eq!(
            (&r["error"]["code"], &r["error"]["message"]),
            (&json!("INVALID_REQUEST"), &json!(message)),
            "{method}: {r}"
        );
    }
    // `doctor` warns of it; the Control UI's Debug page shows it in `status`.
    let token = std::fs::read_to_string(dir.path().join("gateway.token")).unwrap();
    let doctor = ferroclaw(dir.path())
        .args([
            "--url",
            &format!("ws://{addr}"),
            "--token",
            token.trim(),
            "doctor",
            "--json",
        ])
        .within(CHILD_LIMIT);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "delivery")
        .unwrap()
        .clone();
    assert_eq!(check["verdict"], "warn", "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("1 uncertain"),
        "{check}"
    );
    debug_page_shows(&addr, token.trim()).await;
    let r = c
        .call("durable.coordination.get", json!({ "runtimeRunId": "x" }))
        .await;
    assert_eq!(
        r["error"]["message"], "unknown method: durable.coordination.get",
        "{r}"
    );
    assert_eq!(c.call("health", json!({})).await["ok"], true);
}

/// OpenClaw's Control UI, its Debug page: `status` printed, with the fact.
async fn debug_page_shows(addr: &str, token: &str) {
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-durable");
    let base = format!("http://{addr}");
    let report = crate::support::browser::browser_script(
        "control_ui_debug.test.mjs",
        &[base.as_ref(), token.as_ref()],
        &shots,
    )
    .await;
    let shown = report["shown"].as_str().unwrap_or("");
    assert!(
        shown.contains("\"unresolvedUncertaintyFacts\": 1") && shown.contains("delivery_unknown"),
        "{report}"
    );
    for list in ["failedCalls", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
}

fn restore(archive: &Path, into: &Path) -> String {
    let out = ferroclaw(into)
        .args(["backup", "restore", "--json"])
        .arg(archive)
        .within(CHILD_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        crate::support::process::output_text(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["restoreOperationId"].as_str().unwrap().to_string()
}

async fn restore_status(addr: &str, dir: &Path, op: &str, rec: &mut Recorded) -> Value {
    let mut c = connect(addr, dir).await;
    call(
        &mut c,
        rec,
        "gateway.restore.status",
        json!({ "restoreOperationId": op }),
        "gateway-restore/GatewayRestoreStatusResultSchema",
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restored_state_dir_reports_its_restore_until_its_first_clean_stop() {
    let source = tempfile::tempdir().unwrap();
    let (gw, addr, token) = spawn_gateway(source.path());
    let target = tempfile::tempdir().unwrap();
    let archive = target.path().join("b.tar.gz");
    let made = ferroclaw(source.path())
        .args([
            "--url",
            &format!("ws://{addr}"),
            "--token",
            &token,
            "backup",
            "create",
            "--output",
        ])
        .arg(&archive)
        .within(CHILD_LIMIT);
    assert!(
        made.status.success(),
        "{}",
        crate::support::process::output_text(&made)
    );
    drop(gw);
    let mut rec = Recorded::default();
    let dir = target.path().join("restored");
    let op = restore(&archive, &dir);
    // A crash keeps the restore reported; the first clean stop ends it.
    let (mut gw, addr, _) = spawn_gateway(&dir);
    let ready = restore_status(&addr, &dir, &op, &mut rec).await;
    assert_eq!(
        (&ready["status"], &ready["restoreOperationId"]),
        (&json!("ready"), &json!(op)),
        "{ready}"
    );
    let other = restore_status(&addr, &dir, "restore-someone-else", &mut rec).await;
    assert_eq!(other, json!({ "status": "not-restored" }));
    let mut c = connect(&addr, &dir).await;
    let r = c
        .call(
            "gateway.restore.status",
            json!({ "restoreOperationId": "../x" }),
        )
        .await;
    assert_eq!(
        r["error"]["message"], "invalid gateway.restore.status params",
        "{r}"
    );
    sigkill(&mut gw);
    let (gw, addr, _) = spawn_gateway(&dir);
    let again = restore_status(&addr, &dir, &op, &mut rec).await;
    assert_eq!(again["status"], "ready", "{again}");
    assert_eq!(again["recoveryPointId"], ready["recoveryPointId"]);
    assert_ne!(
        again["lifecycleOwnerGeneration"],
        ready["lifecycleOwnerGeneration"]
    );
    let mut gw = gw;
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &gw.id().to_string()])
        .status_within(CHILD_LIMIT)
        .success());
    gw.wait_within(CHILD_LIMIT);
    let (_gw, addr, _) = spawn_gateway(&dir);
    let after = restore_status(&addr, &dir, &op, &mut rec).await;
    assert_eq!(after, json!({ "status": "not-restored" }));
    assert!(dir.join("restore.done.json").exists());
    let refused = rec.refused();
    assert!(refused.is_empty(), "{refused:#?}");
}
