//! Memory over the gateway: the index built from the workspace's markdown
//! files at start, `memory.search` and `doctor.memory.status`, the
//! `memory_search` and `memory_get` tools in a real run, `MEMORY.md` kept
//! out of group chats, and an embeddings endpoint that fails (keyword
//! search goes on, the status says why).

use serde_json::{json, Value};

use crate::support::{admin, say, Client, TestGateway};

const FILES: &[(&str, &str)] = &[
    (
        "workspace/MEMORY.md",
        "# Memory\n\nAnn prefers green tea in the morning, never coffee.\n",
    ),
    (
        "workspace/memory/projects.md",
        "Project Falcon: bridge retrofit, budget 2.4M EUR.\nDeadline March 2027.\n",
    ),
    (
        "workspace/notes/ideas.md",
        "Build a greenhouse for the tomatoes.\n",
    ),
];

/// Searches until `path` is among the hits (the first sweep runs at start).
async fn search_until(c: &mut Client, params: Value, path: &str) -> Value {
    for _ in 0..100 {
        let r = c.call("memory.search", params.clone()).await;
        let payload = r["payload"].clone();
        if payload["results"]
            .as_array()
            .is_some_and(|a| a.iter().any(|h| h["path"] == path))
        {
            return payload;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{path} never found with {params}");
}

#[tokio::test]
async fn memory_search_finds_files_and_keeps_long_term_memory_private() {
    let cfg = json!({"agents": {"defaults": {"memorySearch": {"extraPaths": ["notes"]}}}});
    let gw = TestGateway::with_files(cfg, FILES);
    let mut c = admin(&gw).await;
    let r = search_until(
        &mut c,
        json!({"query": "Falcon budget"}),
        "memory/projects.md",
    )
    .await;
    let hit = &r["results"][0];
    assert_eq!(hit["path"], "memory/projects.md");
    assert_eq!(
        (hit["startLine"].as_u64(), hit["endLine"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(hit["snippet"].as_str().unwrap().contains("2.4M EUR"));
    assert_eq!(
        (r["provider"].as_str(), r["mode"].as_str()),
        (Some("local"), Some("hybrid"))
    );
    search_until(
        &mut c,
        json!({"query": "greenhouse tomatoes"}),
        "notes/ideas.md",
    )
    .await;
    // A paraphrase (no shared phrase) from a private session finds MEMORY.md...
    let private =
        json!({"query": "what does Ann drink in the mornings", "sessionKey": "agent:main:main"});
    search_until(&mut c, private, "MEMORY.md").await;
    // ...and never from a group.
    let group = json!({"query": "green tea morning", "sessionKey": "agent:main:telegram:group:42"});
    let r = c.call("memory.search", group).await;
    let hits = r["payload"]["results"].as_array().unwrap().clone();
    assert!(hits.iter().all(|h| h["path"] != "MEMORY.md"), "{hits:?}");
    let s = c.call("doctor.memory.status", json!({})).await["payload"].clone();
    assert_eq!(
        (s["agentId"].as_str(), s["provider"].as_str()),
        (Some("main"), Some("local"))
    );
    assert_eq!(s["embedding"]["ok"], true);
    assert_eq!(s["files"], 3);
    let bad = c.call("memory.search", json!({"query": " "})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
    let bad = c
        .call("memory.search", json!({"query": "x", "agentId": "nobody"}))
        .await;
    assert!(bad["error"]["message"].as_str().unwrap().contains("nobody"));
}

/// The text of the tool result of the run's one tool call.
async fn tool_result(c: &mut Client, key: &str) -> String {
    let h = c.call("chat.history", json!({"sessionKey": key})).await["payload"].clone();
    let m = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "toolResult")
        .cloned()
        .expect("a tool result");
    m["content"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_memory_tools_search_and_read_excerpts_in_a_run() {
    let gw = TestGateway::with_files(json!({}), FILES);
    let mut c = admin(&gw).await;
    search_until(&mut c, json!({"query": "Falcon"}), "memory/projects.md").await;
    say(
        &mut c,
        "main",
        "@tool memory_search {\"query\":\"Falcon deadline\"}",
        "s1",
    )
    .await;
    let r: Value = serde_json::from_str(&tool_result(&mut c, "main").await).unwrap();
    assert_eq!(r["results"][0]["path"], "memory/projects.md");
    // A private chat gets citations.
    assert_eq!(r["results"][0]["citation"], "memory/projects.md#L1-L2");
    say(
        &mut c,
        "main",
        "@tool memory_get {\"path\":\"memory/projects.md\",\"from\":2,\"lines\":1}",
        "g1",
    )
    .await;
    let r: Value = serde_json::from_str(&tool_result(&mut c, "main").await).unwrap();
    assert_eq!(
        (r["status"].as_str(), r["text"].as_str()),
        (Some("ok"), Some("Deadline March 2027."))
    );
    assert_eq!(
        (r["from"].as_u64(), r["totalLines"].as_u64()),
        (Some(2), Some(2))
    );
    // Only memory files: nothing else in the workspace, nothing outside it.
    for path in ["AGENTS.md", "../ferroclaw.json", "/etc/passwd"] {
        let call = format!("@tool memory_get {}", json!({ "path": path }));
        say(&mut c, "main", &call, &format!("x-{path}")).await;
        let r: Value = serde_json::from_str(&tool_result(&mut c, "main").await).unwrap();
        assert_eq!(r["status"], "not_found", "{path}: {r}");
    }
    // A group session neither finds nor reads MEMORY.md.
    let group = "agent:main:telegram:group:42";
    say(
        &mut c,
        group,
        "@tool memory_get {\"path\":\"MEMORY.md\"}",
        "grp1",
    )
    .await;
    let r: Value = serde_json::from_str(&tool_result(&mut c, group).await).unwrap();
    assert_eq!(r["status"], "not_found");
    say(
        &mut c,
        group,
        "@tool memory_search {\"query\":\"green tea\"}",
        "grp2",
    )
    .await;
    let r: Value = serde_json::from_str(&tool_result(&mut c, group).await).unwrap();
    assert!(r["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["path"] != "MEMORY.md"));
    assert!(
        r["results"][0].get("citation").is_none(),
        "no citations in groups"
    );
}

#[tokio::test]
async fn a_failing_embeddings_endpoint_degrades_to_keywords_with_a_flag() {
    // A local endpoint that refuses every request, as a provider out of quota.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
            let _ = write!(s, "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        }
    });
    let cfg = json!({"agents": {"defaults": {"memorySearch": {
        "provider": "openai", "model": "text-embedding-3-small",
        "remote": {"baseUrl": format!("http://127.0.0.1:{port}/v1"), "apiKey": "sk-test"}}}}});
    let gw = TestGateway::with_files(cfg, FILES);
    let mut c = admin(&gw).await;
    let r = search_until(
        &mut c,
        json!({"query": "Falcon budget"}),
        "memory/projects.md",
    )
    .await;
    assert_eq!(r["mode"], "fts-only");
    let mut status = Value::Null;
    for _ in 0..100 {
        status = c.call("doctor.memory.status", json!({})).await["payload"].clone();
        if status["embedding"]["ok"] == false {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status["provider"], "openai");
    assert!(
        status["embedding"]["error"]
            .as_str()
            .unwrap()
            .contains("429"),
        "{status}"
    );
    // Chat goes on.
    let events = say(&mut c, "main", "hello", "h1").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "final");
}

/// A local OpenAI-style `/v1/embeddings`: one dimension per topic word
/// (so paraphrases without shared words still meet); records every input.
fn embeddings_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(s) = stream else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            let _ = r.read_exact(&mut body);
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let inputs: Vec<String> = req["input"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let topics = ["tea", "bridge", "structure", "greenhouse", "deadline"];
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let lower = t.to_lowercase();
                    let mut v: Vec<f32> = topics
                        .iter()
                        .map(|w| if lower.contains(w) { 1.0 } else { 0.0 })
                        .collect();
                    // "structure" and "bridge" are the same topic here.
                    v[1] = v[1].max(v[2]);
                    v.push(0.05);
                    json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            log.lock().unwrap().extend(inputs);
            let out = json!({"object": "list", "data": data, "model": req["model"]}).to_string();
            let mut s = s;
            let _ = write!(s, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}", out.len());
        }
    });
    (port, seen)
}

#[tokio::test]
async fn an_embeddings_endpoint_is_used_and_unchanged_chunks_are_never_embedded_again() {
    let (port, seen) = embeddings_server();
    let cfg = json!({"agents": {"defaults": {"memorySearch": {
        "provider": "openai", "model": "text-embedding-3-small",
        "remote": {"baseUrl": format!("http://127.0.0.1:{port}/v1"), "apiKey": "sk-test"}}}}});
    let gw = TestGateway::with_files(cfg, FILES);
    let mut c = admin(&gw).await;
    // No word of the query is in the note: only the provider's vectors find it.
    let q = json!({"query": "which structure", "minScore": 0.3});
    let r = search_until(&mut c, q.clone(), "memory/projects.md").await;
    assert_eq!(
        (r["provider"].as_str(), r["mode"].as_str()),
        (Some("openai"), Some("hybrid"))
    );
    assert!(r.get("fallback").is_none(), "{r}");
    let count = |needle: &str| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|t| t.contains(needle))
            .count()
    };
    assert_eq!(
        count("Ann prefers green tea"),
        1,
        "each chunk embedded once"
    );
    // An edit: only the changed file's chunk goes to the provider again.
    let ws = gw.state_dir().join("workspace");
    std::fs::write(
        ws.join("memory/projects.md"),
        "Project Falcon: bridge retrofit, budget 3.1M EUR.\n",
    )
    .unwrap();
    search_until(&mut c, json!({"query": "3.1M"}), "memory/projects.md").await;
    for _ in 0..100 {
        if count("budget 3.1M") == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(count("budget 3.1M"), 1);
    assert_eq!(
        count("Ann prefers green tea"),
        1,
        "unchanged chunks come from the cache"
    );
    assert_eq!(
        count("greenhouse"),
        0,
        "notes/ is not memory without extraPaths"
    );
}
