//! `/btw <question>` (issue 32, OpenClaw's side questions): answered from
//! the session's context by one model call without tools, sent as
//! `chat.side_result` (kind `btw`), never in `chat.history`, and it does
//! not interrupt a running run.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, Client, TestGateway};

fn config(provider: &FakeProvider) -> Value {
    provider.respond_with(|body| match body.to_string().contains("side question") {
        true => Script::text(&["3", "23"]),
        // The main turns: slow enough that a side question arrives mid-run.
        false => Script::words(30).with_delay(Duration::from_millis(30)),
    });
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0" } } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
    })
}

/// Frames until a `chat.side_result` and the `chat` final of `run_id`
/// have both come; the side result.
async fn side_result(c: &mut Client, run_id: &str) -> Value {
    let (mut side, mut done) = (None, false);
    while side.is_none() || !done {
        let f = c.recv().await.expect("the gateway closed the socket");
        if f["event"] == "chat.side_result" && f["payload"]["runId"] == run_id {
            side = Some(f["payload"].clone());
        }
        if f["event"] == "chat"
            && f["payload"]["runId"] == run_id
            && f["payload"]["state"] == "final"
        {
            done = true;
        }
    }
    side.unwrap()
}

#[tokio::test]
async fn a_side_question_is_answered_from_context_without_touching_the_run_or_history() {
    let provider = FakeProvider::start().await;
    let gw = TestGateway::with_config(config(&provider));
    let mut c = admin(&gw).await;
    let send =
        |msg: &str, key: &str| json!({"sessionKey": "main", "message": msg, "idempotencyKey": key});
    c.call("chat.send", send("main thread context", "m1")).await;
    chat_until_done(&mut c, "m1").await;

    // A second main turn, and a side question while it runs.
    let r = c
        .call("chat.send", send("now write the long report", "m2"))
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    let r = c
        .call("chat.send", send("/btw what is 17 * 19?", "btw-1"))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let side = side_result(&mut c, "btw-1").await;
    assert_eq!(side["kind"], "btw");
    assert_eq!(side["sessionKey"], "agent:main:main");
    assert_eq!(side["question"], "what is 17 * 19?");
    assert_eq!(side["text"], "323");
    // The main run was not interrupted: it ends with its own answer.
    let main = chat_until_done(&mut c, "m2").await;
    assert_eq!(
        main.last().unwrap()["payload"]["state"],
        "final",
        "{main:?}"
    );

    // The side request: the conversation as background, the question, no tools.
    let asked = provider.requests.lock().unwrap().clone();
    let side_req = asked
        .iter()
        .map(|(b, _)| b)
        .find(|b| b.to_string().contains("side question"))
        .expect("the side request");
    assert!(side_req.to_string().contains("main thread context"));
    assert!(side_req.to_string().contains("what is 17 * 19?"));
    assert!(side_req
        .get("tools")
        .is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty())));

    // Never in the transcript.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    // The messages' words (an entry id such as "00000323" is not one).
    let text: String = h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(!text.contains("17 * 19") && !text.contains("323"), "{text}");
    let bad = c.call("chat.send", send("/btw", "btw-2")).await;
    let events = chat_until_done(&mut c, "btw-2").await;
    assert_eq!(bad["ok"], true);
    assert!(
        events.last().unwrap()["payload"]["message"]
            .to_string()
            .contains("Usage: /btw <question>"),
        "{events:?}"
    );
}

/// OpenClaw's side chat (`sessions.companion.*`): a question about the
/// session answered as `/btw` answers it, kept as the session's side
/// thread (not its transcript) until a reset; a question over 400
/// characters is refused.
#[tokio::test]
async fn the_side_chat_answers_from_the_session_and_keeps_its_own_thread() {
    let provider = FakeProvider::start().await;
    let gw = TestGateway::with_config(config(&provider));
    let mut c = admin(&gw).await;
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "count the sheep", "idempotencyKey": "t1"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    chat_until_done(&mut c, "t1").await;
    let before = c.call("chat.history", json!({"sessionKey": "main"})).await;

    let asked = c
        .call(
            "sessions.companion.ask",
            json!({"sessionKey": "main", "question": "how many so far?"}),
        )
        .await;
    assert_eq!(asked["payload"]["answer"], "323", "{asked}");
    // The model was asked the side question over the session's context.
    let body = provider
        .requests
        .lock()
        .unwrap()
        .last()
        .unwrap()
        .0
        .to_string();
    assert!(
        body.contains("count the sheep") && body.contains("how many so far?"),
        "{body}"
    );
    let thread = c
        .call("sessions.companion.state", json!({"sessionKey": "main"}))
        .await;
    let ex = &thread["payload"]["exchanges"];
    assert_eq!(ex.as_array().unwrap().len(), 1, "{thread}");
    assert_eq!(
        (&ex[0]["question"], &ex[0]["answer"]),
        (&json!("how many so far?"), &json!("323"))
    );
    let after = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        after["payload"]["messages"], before["payload"]["messages"],
        "not in the transcript"
    );

    let long = "x".repeat(401);
    let refused = c
        .call(
            "sessions.companion.ask",
            json!({"sessionKey": "main", "question": long}),
        )
        .await;
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
    let reset = c
        .call("sessions.companion.reset", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(reset["payload"], json!({"ok": true}), "{reset}");
    let thread = c
        .call("sessions.companion.state", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(thread["payload"]["exchanges"], json!([]), "{thread}");
}
