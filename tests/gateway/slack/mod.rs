//! The Slack adapter end to end against the fake Slack
//! (`support::fake_slack`): Socket Mode over a real WebSocket, the Web API
//! over real HTTP. `socket.rs` the connection (drops, `disconnect`,
//! zombies, replays, one connection per app), `replies.rs` what goes out
//! (streaming, threads, 429), `events.rs` the Events API over HTTP
//! (signatures, challenge, retries); this file the shared set-up.

mod catch_up;
pub mod events;
mod replies;
mod socket;

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_slack::{FakeSlack, APP_TOKEN, BOT_TOKEN};

pub const LONG: Duration = Duration::from_secs(20);
pub const USER: &str = "U42";

pub fn slack_config(fake: &FakeSlack, extra: Value) -> Value {
    let mut s = json!({
        "botToken": BOT_TOKEN,
        "appToken": APP_TOKEN,
        "apiBaseUrl": fake.api,
        "dmPolicy": "allowlist",
        "allowFrom": [USER, "U43"],
        "editIntervalMs": 50,
        "pingIntervalSeconds": 0.3,
    });
    ferroclaw::config::merge_patch(&mut s, &extra);
    json!({ "channels": { "slack": s } })
}

/// Messages in `channel` whose text starts with `starts`.
pub fn answers(fake: &FakeSlack, channel: &str, starts: &str) -> usize {
    fake.posted_in(channel)
        .iter()
        .filter(|p| p.text.starts_with(starts))
        .count()
}

/// Waits until the adapter's socket is up (hello seen by the fake).
pub async fn connected(fake: &FakeSlack) -> bool {
    fake.until(LONG, |f| f.sockets().0 == 1).await
}
