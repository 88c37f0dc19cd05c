//! The agent's own tools end to end (issue 50): `automations` (alias
//! `cron`) on the real scheduler, `message` through the channels' outbox,
//! `web_search` against wire fakes of its providers, the session and agent
//! readers, and each schema against OpenClaw's.

mod ask_user;
mod automations;
mod browser;
mod browser_control;
mod browser_faults;
mod browser_panel;
mod browser_reload;
mod gateway;
mod media;
mod message;
mod message_crash;
mod schemas;
mod sessions;
mod turn_end;
mod web_search;

use crate::support::fake_telegram::FakeTelegram;
use crate::support::{admin, TestGateway};

pub(crate) use super::trust::{ask, tool, widened, OWNER, STRANGER};

pub const LONG: std::time::Duration = std::time::Duration::from_secs(20);

/// `POST /tools/invoke` at `addr` with `token` and `body` (`tool`, `args`,
/// `sessionKey`): the HTTP status, and the result's text or the error's
/// message.
pub async fn invoke_tool(addr: &str, token: &str, body: serde_json::Value) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/tools/invoke"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.unwrap();
    let text = body["result"]["content"][0]["text"]
        .as_str()
        .or(body["error"]["message"].as_str())
        .unwrap_or_default()
        .to_string();
    (status, text)
}

/// A fake Telegram (the owner allowlisted, a stranger let in) and a gateway
/// polling it; `extra` merged over the config.
pub fn start(extra: serde_json::Value) -> (FakeTelegram, TestGateway) {
    super::trust::start(extra, &[])
}
