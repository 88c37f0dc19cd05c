//! The readers: `sessions_history` (a session's messages, newest page
//! first, tool lines on request), `sessions_search` (words over every
//! transcript, best first) and `agents_list`, for the owner; a stranger's
//! turn, when the owner widened its profile to them, reads only its own
//! session.

use serde_json::{json, Value};

use super::*;
use crate::support::{say, TOKEN};

async fn invoke(gw: &TestGateway, tool: &str, args: Value) -> (u16, Value) {
    let body = json!({"tool": tool, "args": args, "sessionKey": "agent:main:desk"});
    let (status, text) = invoke_tool(&gw.addr.to_string(), TOKEN, body).await;
    (status, serde_json::from_str(&text).unwrap_or(json!(text)))
}

#[tokio::test]
async fn the_owner_reads_and_searches_transcripts_and_lists_agents() {
    let gw = TestGateway::with_config(json!({"agents": {"list": [
        {"id": "main", "default": true},
        {"id": "research", "name": "Researcher", "model": "offline/echo-2"},
    ]}}));
    let mut c = admin(&gw).await;
    for (i, text) in ["apple pie recipe", "banana bread tips", "banana split"]
        .iter()
        .enumerate()
    {
        say(&mut c, "agent:main:alpha", text, &format!("a{i}")).await;
    }
    say(&mut c, "agent:main:beta", "banana smoothie", "b0").await;
    say(
        &mut c,
        "agent:main:alpha",
        &tool("session_status", json!({})),
        "a3",
    )
    .await;

    let (status, h) = invoke(
        &gw,
        "sessions_history",
        json!({"sessionKey": "alpha", "limit": 2}),
    )
    .await;
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["sessionKey"], "agent:main:alpha");
    let texts: Vec<&str> = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(h["messages"].as_array().unwrap().len(), 2, "{h}");
    assert!(
        texts[1].contains("Tool session_status returned"),
        "{texts:?}"
    );
    assert_eq!(h["hasMore"], true);
    // Paging back, and the tool lines only on request.
    let (_, older) = invoke(
        &gw,
        "sessions_history",
        json!({"sessionKey": "agent:main:alpha", "limit": 2, "offset": 2}),
    )
    .await;
    let older: Vec<&str> = older["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        older,
        ["banana split", "You said: banana split"],
        "{older:?}"
    );
    let (_, with_tools) = invoke(
        &gw,
        "sessions_history",
        json!({"sessionKey": "alpha", "includeTools": true, "limit": 3}),
    )
    .await;
    assert!(
        with_tools["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "toolResult"),
        "{with_tools}"
    );
    let (status, none) = invoke(&gw, "sessions_history", json!({"sessionKey": "nowhere"})).await;
    assert_eq!(status, 400, "{none}");

    let (_, found) = invoke(&gw, "sessions_search", json!({"query": "banana bread"})).await;
    let first = &found["results"][0];
    assert_eq!(first["sessionKey"], "agent:main:alpha", "{found}");
    assert!(
        first["snippet"].as_str().unwrap().contains("banana bread"),
        "{found}"
    );
    let keys: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sessionKey"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"agent:main:beta"), "{keys:?}");
    let (_, only_beta) = invoke(
        &gw,
        "sessions_search",
        json!({"query": "banana", "sessionKey": "beta", "limit": 25}),
    )
    .await;
    assert!(
        only_beta["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["sessionKey"] == "agent:main:beta"),
        "{only_beta}"
    );

    let (_, agents) = invoke(&gw, "agents_list", json!({})).await;
    assert_eq!(agents["count"], 2, "{agents}");
    assert_eq!(agents["agents"][1]["id"], "research");
    assert_eq!(agents["agents"][1]["name"], "Researcher");
    assert_eq!(agents["agents"][1]["model"], "offline/echo-2");
    assert_eq!(agents["agents"][0]["default"], true);
}

#[tokio::test]
async fn a_strangers_turn_reads_only_its_own_session() {
    // Each sender its own session (with the default "main" scope a
    // stranger shares the owner's, and its own session is that one).
    let (tg, gw) = start(json!({
        "session": {"dmScope": "per-channel-peer"},
        "tools": {"untrusted": {"allow": ["sessions_history", "sessions_search", "agents_list"]}},
    }));
    let mut c = admin(&gw).await;
    say(&mut c, "agent:main:main", "my bank pin is 4321", "o1").await;
    ask(&tg, STRANGER, 1, "hello there").await;
    let lines = [
        tool("sessions_history", json!({"sessionKey": "agent:main:main"})),
        tool(
            "sessions_search",
            json!({"query": "bank pin", "sessionKey": "agent:main:main"}),
        ),
    ];
    let reply = ask(&tg, STRANGER, 2, &lines.join("\n")).await;
    assert_eq!(
        reply.matches("it may read only its own session").count(),
        2,
        "{reply}"
    );
    // Searching without a key searches its own session only.
    let reply = ask(
        &tg,
        STRANGER,
        3,
        &tool("sessions_search", json!({"query": "bank pin hello"})),
    )
    .await;
    // No row of the owner's session (the stranger's own messages may
    // name its key: they are quoted back whole).
    let rows = reply.replace("&quot;", "\"");
    let owners = ["user", "assistant", "toolResult"].iter().any(|r| {
        rows.contains(&format!(
            "\"role\":\"{r}\",\"sessionKey\":\"agent:main:main\""
        ))
    });
    assert!(!rows.contains("4321") && !owners, "{reply}");
    assert!(
        reply.contains(&format!("telegram:direct:{STRANGER}")),
        "{reply}"
    );
    let reply = ask(&tg, STRANGER, 4, &tool("agents_list", json!({}))).await;
    assert!(reply.contains("main"), "{reply}");
}
