//! Discord's catch-up after a session it no longer knows: a resumed
//! session gets what it missed replayed, but a new one (`READY` after an
//! identify: the process was down longer than Discord keeps a session, or
//! Discord invalidated it) starts from now. So after such a `READY` each
//! channel the account has taken a message in is read from its mark (the
//! newest id taken: `ledger::conversation_mark`) with
//! `GET /channels/{id}/messages?after=`, one page, oldest first. A history
//! message lacks what the gateway's event carries for routing and access,
//! so the channel (its guild, a thread's parent) and each author's guild
//! member (nick, roles) are read too. Each message is recorded as the event
//! is (the same ledger key: a message Discord also sends live is answered
//! once), the store is flushed, and the new ones go to the desk as one
//! batch, which `channels.discord.catchUp` bounds (`channels/catch_up.rs`).

use std::collections::HashMap;

use serde_json::Value;

use super::api::DiscordError;
use super::inbound::{record, snowflake, Received};
use super::outlet::DiscordOutlet;
use crate::channels::dispatch::Incoming;
use crate::channels::ledger;
use crate::store::Store;

/// One page of history per channel (Discord's largest).
const PAGE: usize = 100;

/// What one catch-up reads with: the account, the bot's id, the threads
/// known so far (id -> parent).
pub struct Reader {
    pub rest: DiscordOutlet,
    pub store: Store,
    pub account: String,
    pub bot: String,
    pub threads: HashMap<String, String>,
    /// Guild members read so far: (guild, user) -> member.
    members: HashMap<(String, String), Value>,
}

impl Reader {
    pub fn new(
        rest: DiscordOutlet,
        store: Store,
        account: String,
        bot: String,
        threads: HashMap<String, String>,
    ) -> Reader {
        Reader {
            rest,
            store,
            account,
            bot,
            threads,
            members: HashMap::new(),
        }
    }

    /// The messages new since the marks, recorded and flushed, oldest
    /// first per channel. A channel whose history cannot be read is skipped
    /// (logged); a store that cannot flush hands nothing over now (the
    /// records are handed over at the next start).
    pub async fn read(mut self) -> Vec<Incoming> {
        let marks = match ledger::conversation_marks(&self.store, "discord", &self.account) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(account = %self.account, error = %e, "discord catch-up: cannot read the marks");
                return Vec::new();
            }
        };
        let mut fresh = Vec::new();
        for (channel, after) in marks {
            match self.channel(&channel, &after).await {
                Ok(mut got) => fresh.append(&mut got),
                Err(e) => {
                    tracing::warn!(account = %self.account, %channel, error = %e, "discord catch-up: history not read");
                }
            }
        }
        if fresh.is_empty() {
            return fresh;
        }
        if let Err(e) = self.store.flush().await {
            tracing::error!(account = %self.account, error = %e, "discord catch-up: not flushed; handed over at the next start");
            return Vec::new();
        }
        tracing::info!(account = %self.account, count = fresh.len(), "discord catch-up: messages from while the session was gone");
        fresh
    }

    /// One channel's messages after `after`, recorded (oldest first).
    async fn channel(&mut self, channel: &str, after: &str) -> Result<Vec<Incoming>, DiscordError> {
        let api = self.rest.api.clone();
        let route = format!("GET /channels/{channel}/messages");
        let mut page = self
            .rest
            .call(&route, true, || api.messages_after(channel, after, PAGE))
            .await?;
        if page.is_empty() {
            return Ok(Vec::new());
        }
        page.sort_by_key(|m| snowflake(m["id"].as_str().unwrap_or_default()));
        let route = format!("GET /channels/{channel}");
        let info = self
            .rest
            .call(&route, true, || api.channel(channel))
            .await?;
        let guild = info["guild_id"].as_str().map(str::to_string);
        if let Some(parent) = info["parent_id"].as_str().filter(|_| is_thread(&info)) {
            self.threads.insert(channel.to_string(), parent.to_string());
        }
        let mut fresh = Vec::new();
        for mut d in page {
            d["channel_id"] = Value::String(channel.to_string());
            if let Some(g) = &guild {
                d["guild_id"] = Value::String(g.clone());
                d["member"] = self
                    .member(g, d["author"]["id"].as_str().unwrap_or(""))
                    .await;
            }
            let now = crate::now_ms();
            match record(
                &self.store,
                &self.account,
                &self.bot,
                &self.threads,
                &d,
                now,
            ) {
                Ok(Received::New(inc)) => fresh.push(*inc),
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(account = %self.account, error = %e, "discord catch-up: cannot record a message");
                    break;
                }
            }
        }
        Ok(fresh)
    }

    /// The author's guild member (roles, nick), read once per catch-up;
    /// `null` when Discord does not give it (the author left the guild):
    /// then only rules without roles can let the message in.
    async fn member(&mut self, guild: &str, user: &str) -> Value {
        if user.is_empty() || user == self.bot {
            return Value::Null;
        }
        let key = (guild.to_string(), user.to_string());
        if let Some(m) = self.members.get(&key) {
            return m.clone();
        }
        let api = self.rest.api.clone();
        let route = format!("GET /guilds/{guild}/members");
        let member = match self
            .rest
            .call(&route, true, || api.member(guild, user))
            .await
        {
            Ok(m) => m,
            Err(e) => {
                tracing::info!(account = %self.account, %guild, error = %e, "discord catch-up: member not read");
                Value::Null
            }
        };
        self.members.insert(key, member.clone());
        member
    }
}

/// Whether a channel object is a thread (types 10, 11, 12).
fn is_thread(channel: &Value) -> bool {
    matches!(channel["type"].as_u64(), Some(10..=12))
}
