//! Road 1: untrusted travels. What a stranger's turn causes (a message to
//! another session, a sub-agent) is untrusted in turn, so it never runs a
//! command on the host, whatever the target session's own policy is; the
//! shipped profile does not even offer those tools. A stranger's message
//! never becomes "the last chat" that heartbeats and hooks answer to.

use serde_json::json;

use super::*;
use crate::support::admin;

const PER_PEER: &str = "per-channel-peer";

#[tokio::test]
async fn the_shipped_profile_offers_a_stranger_no_tool_that_reaches_another_session() {
    let (fake, gw) = start(json!({}), &[]);
    let inner = tool("exec", json!({"command": "touch pwned-by-send"}));
    for (i, (name, args)) in [
        (
            "sessions_send",
            json!({"sessionKey": "agent:main:ops", "message": inner}),
        ),
        ("sessions_spawn", json!({"task": inner})),
        ("subagents", json!({"action": "list"})),
        ("sessions_list", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = ask(&fake, STRANGER, i as i64 + 1, &tool(name, args)).await;
        assert!(
            reply.contains("Unknown tool") && reply.contains(name),
            "{name}: {reply}"
        );
        assert!(!reply.contains("sessions_send,"), "{reply}");
    }
    assert!(!workspace(&gw).join("pwned-by-send").exists());
}

#[tokio::test]
async fn a_message_a_strangers_turn_sends_runs_untrusted_in_the_target_session() {
    // The owner widened the profile (by mistake, or to let strangers leave
    // notes): the message still carries the stranger's trust.
    let mut extra = widened(&["sessions_send", "sessions_spawn"]);
    extra["session"] = json!({ "dmScope": PER_PEER });
    let (fake, gw) = start(extra, &[]);
    let ws = workspace(&gw);
    for (i, target) in ["main", "agent:main:ops"].into_iter().enumerate() {
        let file = format!("pwned-by-send-{i}");
        let inner = tool("exec", json!({ "command": format!("touch {file}") }));
        let send = tool(
            "sessions_send",
            json!({"sessionKey": target, "message": inner, "timeoutSeconds": 20}),
        );
        let reply = ask(&fake, STRANGER, i as i64 + 1, &send).await;
        // The target's turn ran (its reply came back) and refused the command.
        assert!(reply.contains("not run"), "{target}: {reply}");
        assert!(!ws.join(&file).exists(), "{target}");
        let mut c = admin(&gw).await;
        let key = if target == "main" {
            "agent:main:main"
        } else {
            target
        };
        let h = history_until(&mut c, key, |m| !tool_results(m).is_empty()).await;
        let results = tool_results(&h);
        assert!(
            !results.is_empty() && results.iter().all(|r| r.contains("not run")),
            "{results:?}"
        );
    }
    // The owner's own turn in the main session still runs commands.
    let mut c = admin(&gw).await;
    let events = crate::support::say(
        &mut c,
        "main",
        &tool("exec", json!({"command": "touch made-by-owner"})),
        "owner-1",
    )
    .await;
    assert!(
        crate::support::final_text(&events).contains("Tool exec returned"),
        "{events:?}"
    );
    assert!(ws.join("made-by-owner").exists());
}

#[tokio::test]
async fn a_sub_agent_a_strangers_turn_spawns_is_untrusted_and_so_is_its_result() {
    let mut extra = widened(&["sessions_spawn"]);
    extra["session"] = json!({ "dmScope": PER_PEER });
    let (fake, gw) = start(extra, &[]);
    let task = tool("exec", json!({"command": "touch pwned-by-spawn"}));
    let reply = ask(
        &fake,
        STRANGER,
        1,
        &tool("sessions_spawn", json!({"task": task})),
    )
    .await;
    assert!(reply.contains("accepted"), "{reply}");
    let mut c = admin(&gw).await;
    let child = child_session(&mut c).await;
    let h = history_until(&mut c, &child, |m| !tool_results(m).is_empty()).await;
    let results = tool_results(&h);
    assert!(results.iter().all(|r| r.contains("not run")), "{results:?}");
    assert!(!workspace(&gw).join("pwned-by-spawn").exists());
    // The sub-agent's result comes back to the stranger's session as a
    // message from outside, not as the operator's words.
    let parent = format!("agent:main:telegram:direct:{STRANGER}");
    let parent_h = history_until(&mut c, &parent, |m| {
        m.iter().any(|x| {
            x["role"] == "user"
                && x["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("[Sub-agent"))
        })
    })
    .await;
    assert!(!parent_h.is_empty());
    let announce = stored_user(&mut c, &parent, "[Sub-agent").await;
    assert!(
        announce["message"]["bodyForAgent"]
            .as_str()
            .is_some_and(|b| b.contains("<<<EXTERNAL_UNTRUSTED_CONTENT id=\"")),
        "{announce}"
    );
}

#[tokio::test]
async fn a_strangers_message_never_becomes_the_last_chat() {
    let (fake, gw) = start(json!({}), &[]);
    ask(&fake, OWNER, 1, "hello from the owner").await;
    ask(&fake, STRANGER, 2, "hello from a stranger").await;
    let mut c = admin(&gw).await;
    let list = c.call("sessions.list", json!({})).await;
    let main = list["payload"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "agent:main:main")
        .cloned()
        .unwrap();
    assert_eq!(main["lastChannel"], "telegram", "{main}");
    assert_eq!(main["lastTo"], OWNER.to_string(), "{main}");
}

#[tokio::test]
async fn a_webhook_payload_is_a_stranger_too_and_so_is_what_its_turn_sends() {
    // The owner widened the profile; the hook's turn still acts as a stranger.
    let mut extra = widened(&["sessions_send"]);
    extra["hooks"] = json!({ "enabled": true, "token": "hook-secret-0123456789" });
    let (_fake, gw) = start(extra, &[]);
    let send = |text: String| async move {
        let r = reqwest::Client::new()
            .post(format!("http://{}/hooks/agent", gw.addr))
            .header("authorization", "Bearer hook-secret-0123456789")
            .json(&json!({ "message": text, "deliver": false }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: serde_json::Value = r.json().await.unwrap();
        body["runId"].as_str().unwrap().to_string()
    };
    let direct = tool("exec", json!({"command": "touch pwned-by-hook"}));
    let run = send(direct).await;
    let mut c = admin(&gw).await;
    let waited = c
        .call("agent.wait", json!({ "runId": run, "timeoutMs": 20_000 }))
        .await;
    assert_eq!(waited["payload"]["status"], "ok", "{waited}");
    let inner = tool("exec", json!({"command": "touch pwned-by-hook-send"}));
    let relay = tool(
        "sessions_send",
        json!({"sessionKey": "main", "message": inner, "timeoutSeconds": 20}),
    );
    send(relay).await;
    let h = history_until(&mut c, "agent:main:main", |m| !tool_results(m).is_empty()).await;
    let results = tool_results(&h);
    assert!(
        !results.is_empty() && results.iter().all(|r| r.contains("not run")),
        "{results:?}"
    );
    let ws = workspace(&gw);
    assert!(!ws.join("pwned-by-hook").exists() && !ws.join("pwned-by-hook-send").exists());
}
