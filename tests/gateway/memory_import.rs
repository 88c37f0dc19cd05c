//! `migrations.memory.plan` / `apply` (the Control UI's memory import):
//! the memory of the OpenClaw install at `OPENCLAW_STATE_DIR` planned for
//! the agent, copied under `memory/imports/openclaw/`, found by
//! `memory.search`; a second plan sees the copies as conflicts, a stale
//! plan is refused, replacing keeps what it replaced; a repeated
//! idempotency key gets the first answer; no install is `found: false`.
//! OpenClaw's own schemas accept the answers.

use serde_json::{json, Value};

use super::validators::Recorded;
use crate::support::{admin, Client, TestGateway};

fn openclaw_install() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = root.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("openclaw.json", "{ agents: { list: [ { id: 'main' } ] } }");
    write(
        "workspace/MEMORY.md",
        "# Memory\n\nOla keeps bees on the roof.\n",
    );
    write(
        "workspace/memory/2026-10-02.md",
        "Booked the kestrel survey for Thursday.\n",
    );
    write("workspace/AGENTS.md", "not memory");
    root
}

async fn plan(c: &mut Client, overwrite: bool) -> Value {
    let r = c
        .call(
            "migrations.memory.plan",
            json!({"agentId": "main", "overwrite": overwrite}),
        )
        .await;
    assert_eq!(r["ok"], true, "{r}");
    r["payload"].clone()
}

fn ids(provider: &Value) -> Vec<String> {
    provider["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

async fn apply(
    c: &mut Client,
    key: &str,
    provider: &Value,
    items: &[String],
    overwrite: bool,
) -> Value {
    c.call(
        "migrations.memory.apply",
        json!({"idempotencyKey": key, "agentId": "main", "providerId": "openclaw",
            "planFingerprint": provider["planFingerprint"], "itemIds": items, "overwrite": overwrite}),
    )
    .await
}

/// Whether `memory.search` finds `path` for `query` within 20 s (the
/// memory watcher indexes new files as they land).
async fn searched(c: &mut Client, query: &str, path: &str) -> Result<(), Value> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = c.call("memory.search", json!({"query": query})).await;
        let hits = r["payload"]["results"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if hits.iter().any(|h| h["path"] == path) {
            return Ok(());
        }
        if std::time::Instant::now() > end {
            return Err(r);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn openclaw_memory_is_planned_copied_indexed_and_never_copied_over_silently() {
    let install = openclaw_install();
    let root = install.path().to_str().unwrap();
    let gw = TestGateway::with_env(json!({}), &[], &[("OPENCLAW_STATE_DIR", root)]);
    let mut c = admin(&gw).await;
    let mut seen = Recorded::default();
    let schema = "MigrationProtocolSchemas.MigrationsMemoryPlanResult";

    let first = plan(&mut c, false).await;
    seen.add("plan", schema, &first);
    let p = &first["providers"][0];
    assert_eq!(
        (&p["providerId"], &p["found"]),
        (&json!("openclaw"), &json!(true)),
        "{p}"
    );
    assert_eq!(ids(p), ["memory:MEMORY.md", "memory:memory/2026-10-02.md"]);
    assert_eq!(p["summary"]["planned"], 2, "{p}");
    let workspace = gw.state_dir().join("workspace");
    assert_eq!(first["workspace"], workspace.display().to_string());

    let done = apply(&mut c, "imp-1", p, &ids(p), false).await;
    seen.add(
        "apply",
        "MigrationProtocolSchemas.MigrationsMemoryApplyResult",
        &done["payload"],
    );
    assert_eq!(done["payload"]["summary"]["migrated"], 2, "{done}");
    let copied = workspace.join("memory/imports/openclaw/memory/2026-10-02.md");
    assert_eq!(
        std::fs::read_to_string(&copied).unwrap(),
        "Booked the kestrel survey for Thursday.\n"
    );
    let indexed = "memory/imports/openclaw/MEMORY.md";
    if let Err(last) = searched(&mut c, "Ola bees roof", indexed).await {
        let status = c.call("doctor.memory.status", json!({})).await;
        panic!("the copy is not indexed: {last} {status}");
    }
    // The same key: the first answer, nothing copied again.
    let again = apply(&mut c, "imp-1", p, &ids(p), false).await;
    assert_eq!(again["payload"], done["payload"], "{again}");

    // Now there: conflicts; the old plan is stale; no silent overwrite.
    let second = plan(&mut c, false).await;
    let p2 = &second["providers"][0];
    assert_eq!(p2["summary"]["conflicts"], 2, "{p2}");
    assert_eq!(p2["items"][0]["reason"], "target exists");
    assert!(
        p2["warnings"][0].as_str().unwrap().contains("Conflicts"),
        "{p2}"
    );
    let stale = apply(&mut c, "imp-2", p, &ids(p), false).await;
    assert_eq!(
        stale["error"]["message"],
        "memory migration plan changed; refresh the plan before importing",
        "{stale}"
    );
    let refused = apply(&mut c, "imp-3", p2, &ids(p2), false).await;
    assert_eq!(
        refused["error"]["message"],
        "selected memory was already imported; enable replacement and refresh the plan"
    );

    // Replacing one: the old copy kept beside it.
    std::fs::write(
        install.path().join("workspace/MEMORY.md"),
        "Ola moved the bees.\n",
    )
    .unwrap();
    let third = plan(&mut c, true).await;
    seen.add("plan with overwrite", schema, &third);
    let p3 = &third["providers"][0];
    let one = vec!["memory:MEMORY.md".to_string()];
    let replaced = apply(&mut c, "imp-4", p3, &one, true).await;
    let item = &replaced["payload"]["items"][0];
    assert_eq!(item["status"], "migrated", "{replaced}");
    let kept = item["details"]["backupPath"].as_str().unwrap();
    assert!(std::fs::read_to_string(kept)
        .unwrap()
        .contains("bees on the roof"));
    let target = workspace.join("memory/imports/openclaw/MEMORY.md");
    assert_eq!(
        std::fs::read_to_string(target).unwrap(),
        "Ola moved the bees.\n"
    );

    let unknown = c
        .call("migrations.memory.plan", json!({"agentId": "nobody"}))
        .await;
    assert_eq!(unknown["error"]["message"], "unknown agent id", "{unknown}");
    let bad = apply(
        &mut c,
        "imp-5",
        &json!({"planFingerprint": "abc"}),
        &one,
        false,
    )
    .await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
    assert_eq!(seen.refused(), Vec::<Value>::new());
}

#[tokio::test]
async fn no_openclaw_install_is_not_found_and_says_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let gw = TestGateway::with_env(json!({}), &[], &[("HOME", home.path().to_str().unwrap())]);
    let mut c = admin(&gw).await;
    let r = plan(&mut c, false).await;
    let p = &r["providers"][0];
    assert_eq!(p["found"], false, "{p}");
    let looked = home.path().join(".openclaw").display().to_string();
    assert_eq!(p["source"], looked);
    assert!(p["message"].as_str().unwrap().contains(&looked), "{p}");
    assert_eq!(p["items"], json!([]));
    let mut seen = Recorded::default();
    seen.add(
        "plan",
        "MigrationProtocolSchemas.MigrationsMemoryPlanResult",
        &r,
    );
    assert_eq!(seen.refused(), Vec::<Value>::new());
}
