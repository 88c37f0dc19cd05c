//! `tasks.list` / `tasks.get` / `tasks.cancel` answer from the work that
//! exists: a sub-agent spawned by a turn, a cron job's run and a command
//! `exec` moved to the background show up live, can be cancelled, and the
//! runs' records survive a restart; a chat turn is not a task.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{admin, say, Client, TestGateway};

/// `tasks.list` with `params` until `want` holds for its tasks (30 s).
async fn tasks_until(c: &mut Client, params: Value, want: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.call("tasks.list", params.clone()).await;
        let tasks = r["payload"]["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{r}"));
        if want(&tasks) {
            return tasks;
        }
        assert!(tokio::time::Instant::now() < until, "never: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The main session spawns a slow sub-agent (1000 tokens, `delay_ms`
/// apart); the active tasks once it runs.
async fn spawn_slow(c: &mut Client, delay_ms: u64) -> Vec<Value> {
    let spawn = json!({"task": format!("@tokens 1000\n@delay {delay_ms}"), "label": "slow helper"});
    say(c, "main", &format!("@tool sessions_spawn {spawn}"), "spawn").await;
    let active = json!({"status": ["queued", "running"]});
    tasks_until(c, active, |t| {
        of_kind(t, "subagent").is_some_and(|t| t["status"] == "running")
    })
    .await
}

fn of_kind<'a>(tasks: &'a [Value], kind: &str) -> Option<&'a Value> {
    tasks.iter().find(|t| t["kind"] == kind)
}

#[tokio::test]
async fn a_running_subagent_is_a_task_that_can_be_cancelled_and_its_record_outlives_a_restart() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    // A chat turn is not a task.
    say(&mut c, "main", "@tokens 2", "plain").await;
    let r = c.call("tasks.list", json!({})).await;
    assert_eq!(r["payload"]["tasks"], json!([]), "{r}");
    let tasks = spawn_slow(&mut c, 20).await;
    let task = of_kind(&tasks, "subagent").unwrap().clone();
    let child = task["childSessionKey"].as_str().unwrap().to_string();
    assert!(child.starts_with("agent:main:subagent:"), "{task}");
    assert_eq!(
        (
            &task["runtime"],
            &task["sessionKey"],
            &task["agentId"],
            &task["title"]
        ),
        (
            &json!("subagent"),
            &json!("agent:main:main"),
            &json!("main"),
            &json!("@tokens 1000")
        ),
        "{task}"
    );
    // Filters: the requester's session and the child's find it; another agent's does not.
    for key in ["main", child.as_str()] {
        let r = c.call("tasks.list", json!({"sessionKey": key})).await;
        assert_eq!(r["payload"]["tasks"][0]["id"], task["id"], "{key}: {r}");
    }
    let r = c.call("tasks.list", json!({"agentId": "other"})).await;
    assert_eq!(r["payload"]["tasks"], json!([]), "{r}");
    let r = c.call("tasks.list", json!({"status": "completed"})).await;
    assert_eq!(r["payload"]["tasks"], json!([]), "{r}");

    let r = c
        .call(
            "tasks.cancel",
            json!({"taskId": task["id"], "reason": "enough"}),
        )
        .await;
    assert_eq!(
        (&r["payload"]["found"], &r["payload"]["cancelled"]),
        (&json!(true), &json!(true)),
        "{r}"
    );
    assert_eq!(r["payload"]["task"]["status"], "cancelled", "{r}");
    let r = c.call("tasks.get", json!({"taskId": task["id"]})).await;
    let got = &r["payload"]["task"];
    assert_eq!(got["status"], "cancelled", "{r}");
    assert!(
        got["endedAt"].as_u64().unwrap() >= got["startedAt"].as_u64().unwrap(),
        "{r}"
    );
    // Cancelling again says why not; an unknown id is not found.
    let r = c.call("tasks.cancel", json!({"taskId": task["id"]})).await;
    assert_eq!(
        (&r["payload"]["found"], &r["payload"]["cancelled"]),
        (&json!(true), &json!(false)),
        "{r}"
    );
    let r = c
        .call("tasks.cancel", json!({"taskId": "no-such-task"}))
        .await;
    assert_eq!(r["payload"]["found"], false, "{r}");
    let r = c.call("tasks.get", json!({"taskId": "no-such-task"})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");

    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let r = c.call("tasks.list", json!({"status": ["cancelled"]})).await;
    let after = &r["payload"]["tasks"];
    assert_eq!(after.as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(
        (&after[0]["id"], &after[0]["childSessionKey"]),
        (&task["id"], &json!(child)),
        "{r}"
    );
}

#[tokio::test]
async fn a_background_command_and_a_cron_run_are_tasks_too() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let exec = json!({"command": "sleep 60", "background": true});
    say(&mut c, "main", &format!("@tool exec {exec}"), "bg").await;
    let tasks = tasks_until(&mut c, json!({}), |t| of_kind(t, "exec").is_some()).await;
    let task = of_kind(&tasks, "exec").unwrap().clone();
    assert_eq!(
        (
            &task["status"],
            &task["runtime"],
            &task["title"],
            &task["sessionKey"]
        ),
        (
            &json!("running"),
            &json!("cli"),
            &json!("sleep 60"),
            &json!("agent:main:main")
        ),
        "{task}"
    );
    let r = c.call("tasks.cancel", json!({"taskId": task["id"]})).await;
    assert_eq!(r["payload"]["cancelled"], true, "{r}");
    assert_eq!(r["payload"]["task"]["status"], "cancelled", "{r}");
    // The process tool sees the same command ended.
    let r = c
        .call("tasks.list", json!({"status": ["queued", "running"]}))
        .await;
    assert_eq!(r["payload"]["tasks"], json!([]), "{r}");

    let job = json!({"name": "tea", "schedule": {"kind": "every", "everyMs": 3_600_000},
        "sessionTarget": "isolated", "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "@tokens 3\nremind me of tea"}});
    let r = c.call("cron.add", job).await;
    let id = r["payload"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let r = c.call("cron.run", json!({"id": id})).await;
    assert_eq!(r["ok"], true, "{r}");
    let tasks = tasks_until(
        &mut c,
        json!({"status": "completed", "sortBy": "endedAt"}),
        |t| of_kind(t, "cron").is_some(),
    )
    .await;
    let cron = of_kind(&tasks, "cron").unwrap();
    assert_eq!(cron["runtime"], "cron", "{cron}");
    assert_eq!(
        cron["sessionKey"],
        format!("agent:main:cron:{id}"),
        "{cron}"
    );
    assert_eq!(cron["title"], "@tokens 3", "{cron}");
    // A message another session's turn sends is a turn, not a task.
    let sent = json!({"sessionKey": "agent:main:other", "message": "@tokens 2"});
    say(
        &mut c,
        "main",
        &format!("@tool sessions_send {sent}"),
        "send",
    )
    .await;
    let r = c
        .call("tasks.list", json!({"sessionKey": "agent:main:other"}))
        .await;
    assert_eq!(r["payload"]["tasks"], json!([]), "{r}");
    // Pages: one at a time, then the next.
    let r = c.call("tasks.list", json!({"limit": 1})).await;
    assert_eq!(
        r["payload"]["tasks"].as_array().map(Vec::len),
        Some(1),
        "{r}"
    );
    let next = r["payload"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    let r2 = c
        .call("tasks.list", json!({"limit": 1, "cursor": next}))
        .await;
    assert_ne!(
        r2["payload"]["tasks"][0]["id"], r["payload"]["tasks"][0]["id"],
        "{r2}"
    );
    let r = c
        .call("tasks.list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

/// OpenClaw's own Control UI lists a running sub-agent on its Tasks page
/// and cancels it from there (`tests/browser/control_ui_tasks.test.mjs`);
/// the gateway's own list then says it was cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn the_control_ui_lists_a_running_subagent_and_cancels_it() {
    let root = super::control_ui::installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({ "gateway": { "controlUi": { "root": root } } }));
    let mut c = admin(&gw).await;
    let tasks = spawn_slow(&mut c, 50).await;
    let id = of_kind(&tasks, "subagent").unwrap()["id"].clone();

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-tasks");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_tasks.test.mjs",
        &[
            base.as_ref(),
            crate::support::TOKEN.as_ref(),
            "@tokens 1000".as_ref(),
        ],
        &shots,
    )
    .await;
    assert_eq!(report["cancelSent"]["taskId"], id, "{report}");
    assert_eq!(report["cancelAnswer"]["ok"], true, "{report}");
    for list in ["failedCalls", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
    let all = tasks_until(&mut c, json!({}), |t| {
        t.iter()
            .any(|t| t["id"] == id && t["status"] == "cancelled")
    })
    .await;
    assert!(!all.is_empty());
}
