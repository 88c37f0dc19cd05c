//! A state dir written by a newer ferroclaw: the real binary refuses to
//! start on it with a clear error and an exit code, and leaves it as it
//! was (a second start is refused the same way; the newer build's mark and
//! data are still there).

use std::process::Stdio;

use serde_json::json;

use ferroclaw_actors::store::schema::{stored_mark, SchemaMark, SCHEMA_KEY, SCHEMA_VERSION};
use ferroclaw_actors::store::{Store, Tree};

use crate::support::process::ferroclaw;
use crate::support::process::{Within, CHILD_LIMIT};

#[test]
fn a_newer_state_dir_is_refused_and_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let newer = SchemaMark {
        schema: SCHEMA_VERSION + 1,
        written_by: "2099.1.0".into(),
    };
    {
        let store = Store::open(dir.path()).unwrap();
        store.put(Tree::Meta, SCHEMA_KEY, &newer).unwrap();
        store.put(Tree::Meta, "from-the-future", &"kept").unwrap();
    }
    for _ in 0..2 {
        let out = ferroclaw(dir.path())
            .args(["gateway", "--port", "0"])
            .stdout(Stdio::null())
            .within(CHILD_LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("written by ferroclaw 2099.1.0")
                && err.contains("nothing in it was changed"),
            "{err}"
        );
    }
    // The refused starts wrote nothing: the newer build's mark is there.
    let mark = stored_mark(dir.path()).unwrap();
    assert_eq!(mark, Some(newer));
}

pub(super) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every state dir a release wrote (`tests/fixtures/state-<version>/`, made
/// by `tests/fixtures/make-state.sh`) opens in this build with what it held.
#[tokio::test(flavor = "multi_thread")]
async fn every_released_state_dir_opens_with_what_it_held() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut seen = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("state-") {
            continue;
        }
        seen += 1;
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&path, dir.path());
        let (_gw, addr, _) = crate::support::process::spawn_gateway(dir.path());
        let mut op = crate::support::admin_at(&format!("ws://{addr}"), FIXTURE_TOKEN).await;
        let h = op
            .call("chat.history", json!({ "sessionKey": "main" }))
            .await;
        assert!(
            h.to_string().contains("a turn kept by the fixture"),
            "{name}: {h}"
        );
        let jobs = op.call("cron.list", json!({})).await;
        assert!(jobs.to_string().contains("fixture job"), "{name}: {jobs}");
        let devices = op.call("device.pair.list", json!({})).await;
        let paired = devices["payload"]["paired"].as_array().unwrap();
        let device = paired.iter().find(|d| d["displayName"] == "fixture-node");
        let device = device.unwrap_or_else(|| panic!("{name}: {devices}"));
        assert_eq!(device["roles"], json!(["node"]), "{name}: {device}");
        assert_eq!(device["tokens"][0]["role"], "node", "its token: {device}");
        let nodes = op.call("node.list", json!({})).await;
        let node = &nodes["payload"]["nodes"][0];
        assert_eq!(node["displayName"], "fixture-node", "{name}: {nodes}");
        assert_eq!(node["approvalState"], "approved", "{name}: {nodes}");
        assert!(node["commands"]
            .as_array()
            .unwrap()
            .contains(&json!("system.run")));
    }
    assert!(seen >= 1, "no state fixture in {}", fixtures.display());
}

const FIXTURE_TOKEN: &str = "fixture-token-0123456789abcdef";
