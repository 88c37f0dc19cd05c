//! `agents.list`, `agent.identity.get`, `system.info`, `diagnostics.lanes`
//! and `last-heartbeat` (issue 14, part of 4). Identities: the
//! agents of the config, each identity from the config, then the
//! workspace's IDENTITY.md, then the default.

use serde_json::json;

use crate::support::{admin, TestGateway};

#[tokio::test]
async fn without_agents_in_the_config_main_is_listed_with_the_default_identity() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("agents.list", json!({})).await;
    assert_eq!(r["ok"], true, "{r}");
    let p = &r["payload"];
    assert_eq!(
        (
            p["defaultId"].as_str(),
            p["mainKey"].as_str(),
            p["scope"].as_str()
        ),
        (Some("main"), Some("main"), Some("per-sender"))
    );
    let agents = p["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0]["id"], "main");
    assert_eq!(
        agents[0]["identity"],
        json!({"name": "Assistant", "avatar": "A"})
    );
    assert!(agents[0]["workspace"]
        .as_str()
        .is_some_and(|w| w.ends_with("workspace")));
    let r = c.call("agent.identity.get", json!({})).await;
    assert_eq!(
        r["payload"],
        json!({"agentId": "main", "name": "Assistant", "nameSource": "default", "avatar": "A"})
    );
    let bad = c.call("agents.list", json!({"x": 1})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
    let bad = c.call("agent.identity.get", json!({"who": "me"})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
}

#[tokio::test]
async fn identities_come_from_the_config_then_identity_md() {
    let gw = TestGateway::with_files(
        json!({ "agents": { "list": [
            { "id": "main", "default": true },
            { "id": "ops", "name": "Operations", "identity": { "name": "Opsy", "emoji": "🛠" },
              "model": { "primary": "offline/echo", "fallbacks": [] } },
        ] } }),
        &[(
            "workspace/IDENTITY.md",
            "# IDENTITY.md\n\n- **Name:** Molty\n- **Emoji:** 🦞\n- **Avatar:** _(workspace-relative path, http(s) URL, or data URI)_\n",
        )],
    );
    let mut c = admin(&gw).await;
    let r = c.call("agents.list", json!({})).await;
    let agents = r["payload"]["agents"].as_array().unwrap().clone();
    assert_eq!(
        agents[0]["identity"],
        json!({"name": "Molty", "avatar": "🦞", "emoji": "🦞"})
    );
    assert_eq!(agents[1]["name"], "Operations");
    assert_eq!(agents[1]["identity"]["name"], "Opsy");
    assert_eq!(agents[1]["model"]["primary"], "offline/echo");
    let r = c
        .call(
            "agent.identity.get",
            json!({"sessionKey": "agent:ops:main"}),
        )
        .await;
    assert_eq!(
        (
            r["payload"]["agentId"].as_str(),
            r["payload"]["nameSource"].as_str()
        ),
        (Some("ops"), Some("agent"))
    );
    let r = c
        .call("agent.identity.get", json!({"agentId": "main"}))
        .await;
    assert_eq!(
        (
            r["payload"]["name"].as_str(),
            r["payload"]["nameSource"].as_str()
        ),
        (Some("Molty"), Some("workspace"))
    );
    // The hello-ok discovery list names them.
    let mut fresh = crate::support::Client::connect(&gw.ws_url()).await;
    let hello = fresh
        .handshake(crate::support::connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(crate::support::TOKEN),
        ))
        .await;
    let methods = hello["payload"]["features"]["methods"]
        .as_array()
        .unwrap()
        .clone();
    for m in ["agents.list", "agent.identity.get"] {
        assert!(methods.iter().any(|x| x == m), "{m}");
    }
}

#[tokio::test]
async fn system_info_describes_the_gateway_host() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("system.info", json!({})).await;
    assert_eq!(r["ok"], true, "{r}");
    let p = &r["payload"];
    assert_eq!(p["pid"], std::process::id(), "the in-process gateway");
    assert!(p["hostname"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(p["platform"], std::env::consts::OS);
    assert!(p["cpuCount"].as_u64().is_some_and(|n| n >= 1));
    assert!(p["memoryTotalBytes"].as_u64().is_some_and(|n| n > 0));
    assert!(p["uptimeMs"].is_u64() && p["processInstanceId"].is_string());
    assert!(p["osLabel"]
        .as_str()
        .is_some_and(|l| l.starts_with("Linux")));
    let bad = c.call("system.info", json!({"x": 1})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
}

#[tokio::test]
async fn lane_diagnostics_come_from_the_lanes_and_there_is_no_heartbeat_yet() {
    let gw = TestGateway::with_config(json!({ "agents": { "defaults": { "maxConcurrent": 3 } } }));
    let mut c = admin(&gw).await;
    let r = c.call("diagnostics.lanes", json!({})).await;
    assert_eq!(r["ok"], true, "{r}");
    let lanes = r["payload"]["lanes"].as_array().unwrap();
    let names: Vec<&str> = lanes.iter().map(|l| l["lane"].as_str().unwrap()).collect();
    assert_eq!(names, ["cron", "main", "nested", "subagent"]);
    let main = &lanes[1];
    assert_eq!(
        (
            main["maxConcurrent"].as_u64(),
            main["activeCount"].as_u64(),
            main["queuedCount"].as_u64()
        ),
        (Some(3), Some(0), Some(0))
    );
    assert!(r["payload"]["ts"].is_u64() && r["payload"]["dynamic"].is_null());
    let hb = c.call("last-heartbeat", json!({})).await;
    assert_eq!(
        (hb["ok"].clone(), hb["payload"].clone()),
        (json!(true), json!(null)),
        "{hb}"
    );
    let bad = c.call("diagnostics.lanes", json!({"x": 1})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
}
