//! Every method OpenClaw's Control UI calls across its pages answers, in
//! OpenClaw's shape, with OpenClaw's scopes: real data where ferroclaw has
//! it (`models.authStatus`, `exec.approval.list`, `sessions.usage`,
//! `config.schema`), valid empty results where it does not; and
//! `hello-ok.features.methods` lists exactly what answers.

use serde_json::{json, Value};

use crate::support::{admin, connect_params, Client, TestGateway, TOKEN};

/// Methods that need more than `{}` to answer, with params that work.
fn params_for(method: &str) -> Value {
    match method {
        "chat.history" | "chat.startup" | "chat.inject" => json!({"sessionKey": "main"}),
        "sessions.describe"
        | "sessions.get"
        | "sessions.messages.subscribe"
        | "sessions.messages.unsubscribe" => {
            json!({"key": "main"})
        }
        "channels.logout" | "channels.start" | "channels.stop" => json!({"channel": "telegram"}),
        "wake" => json!({"mode": "next-heartbeat", "text": "checked by the method test"}),
        "memory.search" => json!({"query": "anything"}),
        "sessions.compact" => json!({"key": "main"}),
        "sessions.branches.list"
        | "progressCard.get"
        | "progressCard.put"
        | "tools.effective"
        | "sessions.companion.state"
        | "sessions.companion.reset" => json!({"sessionKey": "main"}),
        "sessions.companion.ask" => json!({"sessionKey": "main", "question": "anything new?"}),
        "set-heartbeats" => json!({"enabled": true}),
        "migrations.memory.plan" => json!({"agentId": "main"}),
        "config.schema.lookup" => json!({"path": "gateway"}),
        "exec.approval.grants.revoke" => json!({"grantId": "no-such-grant"}),
        "tts.setProvider" => json!({"provider": "tts-local-cli"}),
        "tts.setPersona" => json!({"persona": null}),
        "durable.deliveryAttempts.list" => json!({"wakeId": "default|no/such-run"}),
        "gateway.restore.status" => json!({"restoreOperationId": "restore-none"}),
        "cron.add" => {
            json!({"name": "method test", "schedule": {"kind": "every", "everyMs": 3_600_000},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "checked by the method test"}})
        }
        _ => json!({}),
    }
}

#[tokio::test]
async fn every_advertised_method_answers_and_nothing_else_is_advertised() {
    let gw = TestGateway::start();
    let mut c = Client::connect(&gw.ws_url()).await;
    let hello = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.admin"],
            Some(TOKEN),
        ))
        .await;
    let advertised: Vec<String> = hello["payload"]["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    for m in [
        "chat.startup",
        "sessions.subscribe",
        "models.authStatus",
        "exec.approval.list",
        "sessions.usage",
        "config.schema",
        "cron.list",
        "channels.status",
        "plugins.list",
        "update.status",
    ] {
        assert!(advertised.iter().any(|a| a == m), "{m} advertised");
    }
    let mut seen = std::collections::HashSet::new();
    for m in &advertised {
        assert!(seen.insert(m.clone()), "{m} advertised twice");
        // Methods with side effects or long waits are covered elsewhere.
        if matches!(
            m.as_str(),
            "chat.send"
                | "agent"
                | "agent.wait"
                | "chat.abort"
                | "chat.inject"
                | "config.set"
                | "config.apply"
                | "config.patch"
                | "exec.approval.request"
                | "exec.approval.waitDecision"
                | "exec.approval.resolve"
                | "exec.approvals.set"
                | "sessions.reset"
                | "sessions.delete"
                | "sessions.patch"
                | "sessions.export"
                | "system-event"
                | "device.pair.approve"
                | "device.pair.reject"
                | "device.pair.remove"
                | "device.pair.rename"
                // OpenClaw's refusal without user profiles: tests/gateway/methods.rs.
                | "users.self"
                | "device.token.rotate"
                | "device.token.revoke"
                | "channels.pairing.approve"
                | "channels.pairing.dismiss"
                // Needs a channel: tests/gateway/telegram.rs.
                | "send"
                // Refused on a loopback gateway, as OpenClaw refuses it, and
                // needs a chat: tests/gateway/commands.rs.
                | "device.pair.setupCode"
                | "message.action"
                // Need a node, or are the node's own: tests/gateway/nodes.rs.
                | "node.describe"
                | "node.pair.approve"
                | "node.pair.reject"
                | "node.pair.remove"
                | "node.rename"
                | "node.invoke"
                | "node.invoke.result"
                | "node.invoke.progress"
                | "node.event"
                | "node.skills.update"
                | "node.pluginTools.update"
                | "node.runnerInventory.update"
                | "exec.approvals.node.get"
                | "exec.approvals.node.set"
                // Ask and answer questions: tests/gateway/agent_tools/ask_user.rs.
                | "question.request"
                | "question.waitAnswer"
                | "question.resolve"
                | "question.get"
                // Needs Chromium: tests/gateway/agent_tools/browser_control.rs.
                | "browser.request"
                // Need a plugin: tests/gateway/plugins.rs.
                | "plugins.inspect"
                | "plugins.install"
                | "plugins.setEnabled"
                | "plugins.uninstall"
                // Needs a reply in the outbox: tests/gateway/durable.rs.
                | "durable.wakes.inspect"
                // Need a speech provider: tests/gateway/tts.rs.
                | "tts.convert"
                | "tts.speak"
                // Need a job: tests/gateway/cron.rs.
                | "cron.get"
                | "cron.update"
                | "cron.remove"
                | "cron.run"
                // Need a task: tests/gateway/tasks.rs.
                | "tasks.get"
                | "tasks.cancel"
                // Needs a transcript: tests/gateway/branches.rs.
                | "sessions.fork"
                // Needs a plan: tests/gateway/memory_import.rs.
                | "migrations.memory.apply"
        ) {
            continue;
        }
        let r = c.call(m, params_for(m)).await;
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(!msg.contains("unknown method"), "{m}: {r}");
        assert_eq!(r["ok"], true, "{m}: {r}");
    }
    let r = c.call("no.such.method", json!({})).await;
    assert_eq!(r["error"]["message"], "unknown method: no.such.method");
}

#[tokio::test]
async fn empty_features_answer_openclaws_empty_shapes_and_check_their_params() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let cases = [
        ("plugin.approval.list", json!([])),
        ("openclaw.approval.list", json!([])),
        ("sessions.companion.state", json!({"exchanges": []})),
        ("sessions.observer.visibility", json!({"ok": true})),
    ];
    for (m, want) in cases {
        let r = c.call(m, json!({"sessionKey": "main"})).await;
        assert_eq!(r["payload"], want, "{m}: {r}");
    }
    // No update check: nothing known, never "up to date".
    let r = c.call("update.status", json!({})).await;
    assert_eq!(r["payload"]["updateAvailable"], Value::Null, "{r}");
    assert_eq!(
        r["payload"]["schedule"]["install"]["kind"], "unknown",
        "{r}"
    );
    // No registry: the catalog and the search say so.
    let r = c.call("plugins.catalog.browse", json!({})).await;
    assert_eq!(r["payload"]["items"], json!([]), "{r}");
    assert!(
        r["payload"]["remoteError"]
            .as_str()
            .unwrap()
            .contains("no remote plugin catalog"),
        "{r}"
    );
    let r = c.call("cron.list", json!({"limit": 20, "offset": 0})).await;
    let p = &r["payload"];
    assert_eq!(
        (&p["jobs"], &p["total"], &p["limit"], &p["hasMore"]),
        (&json!([]), &json!(0), &json!(20), &json!(false)),
        "{r}"
    );
    let r = c.call("cron.status", json!({})).await;
    assert_eq!(
        (&r["payload"]["enabled"], &r["payload"]["jobs"]),
        (&json!(true), &json!(0)),
        "{r}"
    );
    let r = c.call("channels.status", json!({"probe": false})).await;
    assert_eq!(r["payload"]["channelOrder"], json!([]), "{r}");
    assert_eq!(r["payload"]["channels"], json!({}));
    let r = c.call("node.list", json!({})).await;
    assert_eq!(r["payload"]["nodes"], json!([]));
    // No node paired: the gateway's own host only.
    let r = c.call("environments.list", json!({})).await;
    let env = &r["payload"]["environments"];
    assert_eq!(env.as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        (&env[0]["id"], &env[0]["type"]),
        (&json!("gateway"), &json!("local"))
    );
    let r = c.call("talk.catalog", json!({})).await;
    assert_eq!(r["payload"]["realtime"]["ready"], false, "{r}");
    assert_eq!(r["payload"]["realtime"]["providers"], json!([]));
    // Params must be an object.
    let r = c.call("tasks.list", json!([1, 2])).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
    let r = c.call("cron.list", json!("x")).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

#[tokio::test]
async fn new_methods_take_openclaws_scopes() {
    let gw = TestGateway::start();
    let mut read = Client::connect(&gw.ws_url()).await;
    read.handshake(connect_params(
        "cli",
        "cli",
        &["operator.read"],
        Some(TOKEN),
    ))
    .await;
    for m in [
        "models.authStatus",
        "sessions.usage",
        "config.schema",
        "tasks.list",
        "talk.catalog",
        "plugins.list",
        "cron.list",
        "channels.status",
        "node.list",
        "usage.status",
        "artifacts.list",
        "environments.list",
        "skills.library.list",
    ] {
        let r = read.call(m, json!({})).await;
        assert_eq!(r["ok"], true, "{m} is operator.read: {r}");
    }
    for (m, scope) in [
        ("exec.approval.list", "operator.approvals"),
        ("plugin.approval.list", "operator.approvals"),
        ("openclaw.approval.list", "operator.approvals"),
        ("question.list", "operator.questions"),
        ("channels.pairing.list", "operator.pairing"),
        ("update.status", "operator.admin"),
        ("migrations.memory.plan", "operator.admin"),
    ] {
        let r = read.call(m, json!({})).await;
        assert_eq!(
            r["error"]["message"],
            format!("missing scope: {scope}"),
            "{m}: {r}"
        );
    }
}

#[tokio::test]
async fn models_auth_status_shows_each_provider_and_whether_it_has_a_key_never_the_key() {
    let gw = TestGateway::with_config(json!({
        "models": { "providers": {
            "local": { "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-local-secret-123",
                        "models": [{ "id": "m1" }] },
            "bare": { "baseUrl": "http://127.0.0.1:9/v1", "models": [{ "id": "m2" }] },
        } },
        "agents": { "defaults": { "model": { "primary": "offline/echo", "fallbacks": ["local/m1"] } } },
    }));
    let mut c = admin(&gw).await;
    let r = c
        .call("models.authStatus", json!({"agentId": "main"}))
        .await;
    let text = r.to_string();
    assert!(!text.contains("sk-local-secret-123"), "{text}");
    let providers = r["payload"]["providers"].as_array().unwrap();
    let find = |id: &str| {
        providers
            .iter()
            .find(|p| p["provider"] == id)
            .unwrap_or_else(|| panic!("{id} in {r}"))
            .clone()
    };
    assert_eq!(find("offline")["status"], "ok");
    let local = find("local");
    assert_eq!(local["status"], "static", "{local}");
    assert_eq!(local["profiles"][0]["profileId"], "local:default");
    assert_eq!(local["profiles"][0]["status"], "ok");
    assert_eq!(find("bare")["status"], "missing");
    assert!(r["payload"]["ts"].is_u64());
    let r = c.call("models.authStatus", json!({"bogus": true})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

#[tokio::test]
async fn exec_approval_list_shows_what_waits_for_an_operator() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("exec.approval.list", json!({})).await;
    assert_eq!(r["payload"], json!([]));
    // A request that waits (the caller does not wait for the decision).
    let id = c
        .send_req(
            "exec.approval.request",
            json!({"id": "ap-1", "command": "rm -rf build", "cwd": "/tmp", "timeoutMs": 60000}),
        )
        .await;
    let listed = loop {
        let r = c.call("exec.approval.list", json!({})).await;
        if r["payload"].as_array().is_some_and(|a| !a.is_empty()) {
            break r;
        }
    };
    let a = &listed["payload"][0];
    assert_eq!(a["id"], "ap-1");
    assert_eq!(a["request"]["command"], "rm -rf build");
    assert!(a["expiresAtMs"].as_u64() > a["createdAtMs"].as_u64());
    let r = c
        .call(
            "exec.approval.resolve",
            json!({"id": "ap-1", "decision": "deny"}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    let decided = c.res(&id).await;
    assert_eq!(decided["payload"]["decision"], "deny", "{decided}");
    let r = c.call("exec.approval.list", json!({})).await;
    assert_eq!(r["payload"], json!([]), "decided: no longer listed");
    let r = c.call("exec.approval.list", json!({"x": 1})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
}

#[tokio::test]
async fn sessions_usage_sums_the_counters_sessions_keep() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    for (key, id) in [("main", "u-1"), ("work", "u-2"), ("work", "u-3")] {
        c.call(
            "chat.send",
            json!({"sessionKey": key, "message": "count me", "idempotencyKey": id}),
        )
        .await;
        loop {
            let e = c.event("chat").await;
            if e["payload"]["runId"] == id && e["payload"]["state"] == "final" {
                break;
            }
        }
    }
    let list = c.call("sessions.list", json!({})).await;
    let rows = list["payload"]["sessions"].as_array().unwrap().clone();
    let sum = |f: &str| rows.iter().map(|r| r[f].as_u64().unwrap()).sum::<u64>();
    let r = c.call("sessions.usage", json!({})).await;
    let p = &r["payload"];
    assert_eq!(p["totals"]["input"], sum("inputTokens"), "{r}");
    assert_eq!(p["totals"]["output"], sum("outputTokens"));
    // A row's totalTokens is its context now (OpenClaw's meaning); usage
    // totals count every token of every call.
    let all = sum("inputTokens") + sum("outputTokens") + sum("cacheRead") + sum("cacheWrite");
    assert_eq!(p["totals"]["totalTokens"], all);
    assert!(p["totals"]["input"].as_u64().unwrap() > 0);
    assert_eq!(p["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(p["aggregates"]["sessionCount"], 2);
    let by_model = p["aggregates"]["byModel"].as_array().unwrap();
    assert_eq!(by_model[0]["provider"], "offline");
    assert_eq!(by_model[0]["model"], "echo");
    assert_eq!(by_model[0]["count"], 3, "three runs");
    assert_eq!(p["aggregates"]["byAgent"][0]["agentId"], "main");
    let today = p["endDate"].as_str().unwrap().to_string();
    assert_eq!(today.len(), 10, "{today}");
    // One session, by key; a range with nothing in it.
    let r = c
        .call("sessions.usage", json!({"key": "agent:main:work"}))
        .await;
    assert_eq!(r["payload"]["sessions"].as_array().unwrap().len(), 1, "{r}");
    let r = c
        .call(
            "sessions.usage",
            json!({"startDate": "2001-01-01", "endDate": "2001-01-31"}),
        )
        .await;
    assert_eq!(r["payload"]["sessions"], json!([]), "{r}");
    assert_eq!(r["payload"]["totals"]["totalTokens"], 0);
    let r = c
        .call("sessions.usage", json!({"startDate": "yesterday"}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

#[tokio::test]
async fn config_schema_is_generated_from_the_settings_with_openclaws_key_names() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("config.schema", json!({})).await;
    let p = &r["payload"];
    assert!(p["version"].is_string(), "{r}");
    assert!(p["generatedAt"].as_str().unwrap().ends_with('Z'));
    let schema = &p["schema"];
    let text = schema.to_string();
    for key in [
        "\"gateway\"",
        "\"controlUi\"",
        "\"basePath\"",
        "\"agents\"",
        "\"defaults\"",
        "\"maxConcurrent\"",
        "\"tools\"",
        "\"exec\"",
    ] {
        assert!(text.contains(key), "{key} in the schema");
    }
    assert!(!text.contains("control_ui"), "serde names, not Rust names");
    assert_eq!(schema["type"], "object");
    let r = c.call("config.schema", json!({"x": 1})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
}

#[tokio::test]
async fn the_skill_library_lists_the_skills_ferroclaw_discovers() {
    let gw = TestGateway::with_files(
        json!({}),
        &[(
            "workspace/skills/weather/SKILL.md",
            "---\nname: weather\ndescription: Looks up the weather.\n---\nbody\n",
        )],
    );
    let mut c = admin(&gw).await;
    let r = c.call("skills.library.list", json!({})).await;
    let entries = r["payload"]["entries"].as_array().unwrap();
    let weather = entries
        .iter()
        .find(|e| e["slug"] == "weather")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(weather["description"], "Looks up the weather.");
    assert_eq!(weather["ownerLabel"], "Team");
    assert_eq!(weather["canEdit"], false);
    assert_eq!(weather["enabled"], true);
    assert!(
        weather["updatedAt"].as_u64().unwrap() > 1_700_000_000_000,
        "{weather}"
    );
    assert!(
        weather["createdAt"].as_u64().unwrap() > 1_700_000_000_000,
        "{weather}"
    );
    // The revision follows the file.
    let before = weather["revision"].clone();
    let file = gw.state_dir().join("workspace/skills/weather/SKILL.md");
    std::fs::write(
        &file,
        "---\nname: weather\ndescription: Looks up the weather for a city.\n---\nbody\n",
    )
    .unwrap();
    let r = c.call("skills.library.list", json!({})).await;
    let after = &r["payload"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["slug"] == "weather")
        .unwrap()["revision"];
    assert_ne!(after, &before, "{r}");
    // The search looks through the skills ferroclaw has (it reaches no registry).
    let r = c
        .call("skills.search", json!({"query": "weather city"}))
        .await;
    let hits = r["payload"]["results"].as_array().unwrap();
    assert_eq!(
        (hits.len(), &hits[0]["slug"], &hits[0]["registry"]),
        (1, &json!("weather"), &json!("local")),
        "{r}"
    );
    let r = c
        .call("skills.search", json!({"query": "stock prices"}))
        .await;
    assert_eq!(r["payload"]["results"], json!([]), "{r}");
    let r = c
        .call("skills.library.list", json!({"scope": "mine"}))
        .await;
    assert_eq!(r["payload"]["entries"], json!([]), "{r}");
    let r = c.call("skills.library.list", json!({"agentId": 5})).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}
