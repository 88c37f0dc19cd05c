//! `sessions.fork` copies a session up to one of its user messages into a
//! new session that lives on by itself (also across a restart), leaving
//! the parent unchanged; `sessions.branches.list` answers the session's
//! active path from its transcript.

use serde_json::{json, Value};

use crate::support::{admin, chat_send, say, Client, TestGateway};

async fn history(c: &mut Client, key: &str) -> Vec<Value> {
    let r = c.call("chat.history", json!({"sessionKey": key})).await;
    r["payload"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{r}"))
}

fn text(m: &Value) -> &str {
    m["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_fork_copies_the_session_before_a_message_and_lives_on_its_own() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call("sessions.branches.list", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(r["payload"], json!({"branches": []}), "{r}");
    say(&mut c, "main", "first question", "q1").await;
    say(&mut c, "main", "second question", "q2").await;
    let parent = history(&mut c, "main").await;
    assert_eq!(parent.len(), 4, "{parent:?}");

    let r = c
        .call("sessions.branches.list", json!({"sessionKey": "main"}))
        .await;
    let branches = r["payload"]["branches"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(branches.len(), 1, "{r}");
    assert_eq!(
        (
            &branches[0]["leafEntryId"],
            &branches[0]["messageCount"],
            &branches[0]["active"]
        ),
        (&parent[3]["__openclaw"]["id"], &json!(4), &json!(true)),
        "{r}"
    );
    assert!(
        branches[0]["headline"]
            .as_str()
            .unwrap()
            .contains("second question"),
        "{r}"
    );

    let second = parent[2]["__openclaw"]["id"].clone();
    let r = c
        .call(
            "sessions.fork",
            json!({"sessionKey": "main", "entryId": second}),
        )
        .await;
    let fork = r["payload"]["sessionKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    assert!(fork.starts_with("agent:main:fork:"), "{r}");
    assert_eq!(
        r["payload"]["editorText"], "second question",
        "what was typed, no envelope: {r}"
    );
    let copied = history(&mut c, &fork).await;
    assert_eq!(copied.len(), 2, "{copied:?}");
    assert_eq!(
        (text(&copied[0]), text(&copied[1])),
        (text(&parent[0]), text(&parent[1]))
    );

    // The fork goes its own way; the parent does not change.
    say(&mut c, &fork, "another question", "f1").await;
    assert_eq!(history(&mut c, &fork).await.len(), 4);
    assert_eq!(history(&mut c, "main").await.len(), 4);

    // Only before a user message of this session.
    let reply = parent[1]["__openclaw"]["id"].clone();
    let r = c
        .call(
            "sessions.fork",
            json!({"sessionKey": "main", "entryId": reply}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a user message"),
        "{r}"
    );
    let r = c
        .call(
            "sessions.fork",
            json!({"sessionKey": "main", "entryId": "nope"}),
        )
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    // Not while the agent works in it.
    chat_send(&mut c, "main", "@tokens 1000\n@delay 20", "long").await;
    let r = c
        .call(
            "sessions.fork",
            json!({"sessionKey": "main", "entryId": second}),
        )
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("working"),
        "{r}"
    );
    c.call("chat.abort", json!({"sessionKey": "main"})).await;

    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let after = history(&mut c, &fork).await;
    assert_eq!(after.len(), 4, "the fork is durable: {after:?}");
    let r = c.call("sessions.list", json!({})).await;
    let keys: Vec<&str> = r["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["key"].as_str())
        .collect();
    assert!(keys.contains(&fork.as_str()), "{keys:?}");
}

/// OpenClaw's own Control UI forks a session from a user message ("Fork
/// from here", `tests/browser/control_ui_fork.test.mjs`): the fork holds
/// what came before that message, the parent is unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn the_control_ui_forks_a_session_from_a_message() {
    let root = super::control_ui::installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({ "gateway": { "controlUi": { "root": root } } }));
    let mut c = admin(&gw).await;
    say(&mut c, "main", "the first question", "q1").await;
    say(&mut c, "main", "the second question", "q2").await;
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-fork");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_fork.test.mjs",
        &[
            base.as_ref(),
            crate::support::TOKEN.as_ref(),
            "the second question".as_ref(),
        ],
        &shots,
    )
    .await;
    let answer = &report["forkAnswer"];
    assert_eq!(answer["ok"], true, "{report}");
    for list in ["failedCalls", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
    let fork = answer["payload"]["sessionKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    let forked: Vec<String> = history(&mut c, fork)
        .await
        .iter()
        .map(|m| text(m).to_string())
        .collect();
    assert_eq!(
        forked,
        ["the first question", "You said: the first question"],
        "{forked:?}"
    );
    assert_eq!(
        history(&mut c, "main").await.len(),
        4,
        "the parent is unchanged"
    );
}
