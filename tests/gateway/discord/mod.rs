//! The Discord adapter end to end against the fake Discord
//! (`support::fake_discord`): the gateway over a real WebSocket, REST over
//! real HTTP. `gateway.rs` the connection (resume after drops, replays,
//! zombies, invalid sessions, close codes), `replies.rs` what goes out and
//! who is answered (streaming, guilds, roles, 429 per route),
//! `catch_up.rs` what came while Discord kept no session; this file the
//! shared set-up.

mod catch_up;
mod gateway;
mod replies;

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_discord::{FakeDiscord, TOKEN};

pub const LONG: Duration = Duration::from_secs(20);
pub const USER: &str = "4242";

pub fn discord_config(fake: &FakeDiscord, extra: Value) -> Value {
    let mut d = json!({
        "token": TOKEN,
        "apiBaseUrl": fake.api,
        "gatewayUrl": fake.gateway,
        "dmPolicy": "allowlist",
        "allowFrom": [USER, "4343"],
        "editIntervalMs": 50,
        "typingIntervalSeconds": 1,
    });
    ferroclaw::config::merge_patch(&mut d, &extra);
    json!({ "channels": { "discord": d } })
}

pub fn answers(fake: &FakeDiscord, channel: &str, starts: &str) -> usize {
    fake.created_in(channel)
        .iter()
        .filter(|c| c.content.starts_with(starts))
        .count()
}

/// Waits until the shard identified and the fake has a socket up.
pub async fn ready(fake: &FakeDiscord) -> bool {
    fake.until(LONG, |f| {
        let (identifies, _, _, _, up) = f.gateway_stats();
        identifies >= 1 && up
    })
    .await
}
