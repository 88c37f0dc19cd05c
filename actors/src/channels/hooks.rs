//! The `message_received` hook point: every channel message the access
//! rules let through is shown to the inbound hooks, with its route, before
//! it reaches its session. Hooks observe; they cannot change or hold the
//! message (a slow hook never delays a reply).
//!
//! Code hooks implement `InboundHook`. The built-in one is configured:
//! `hooks.messageReceived: { url, token? }` POSTs each message as JSON to
//! `url` (`Authorization: Bearer <token>` when set), fire and forget: at
//! most 64 in flight (more are dropped with a log line), 5 s each.

use crate::channels::error::ConfigError;
use crate::ids::SessionKey;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// One received message, as hooks see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedMessage {
    pub channel: String,
    pub account_id: String,
    pub chat_id: String,
    /// `direct | group | channel`.
    pub chat_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    pub message_id: String,
    pub text: String,
    pub session_key: SessionKey,
    pub agent_id: String,
    /// The routing tier that chose the agent.
    pub matched_by: String,
    pub timestamp: u64,
}

/// A hook on received messages.
pub trait InboundHook: Send + Sync {
    fn message_received(&self, msg: &ReceivedMessage);
}

/// The configured hooks (shared by every account; replaced on config apply).
#[derive(Clone, Default)]
pub struct InboundHooks(pub Vec<Arc<dyn InboundHook>>);

impl std::fmt::Debug for InboundHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InboundHooks({})", self.0.len())
    }
}

impl InboundHooks {
    pub fn received(&self, msg: &ReceivedMessage) {
        for h in &self.0 {
            h.message_received(msg);
        }
    }

    /// From `hooks.messageReceived`; an error names the key.
    pub fn from_settings(
        hooks: &crate::settings::HooksSettings,
    ) -> Result<InboundHooks, ConfigError> {
        let section = hooks
            .message_received
            .clone()
            .map(|m| serde_json::json!({ "messageReceived": m }));
        InboundHooks::from_config(&section.unwrap_or(Value::Null))
    }

    /// From `{ messageReceived: { url, token? } }` (the `hooks` section's part).
    pub fn from_config(hooks: &Value) -> Result<InboundHooks, ConfigError> {
        let Some(cfg) = hooks.get("messageReceived").filter(|v| !v.is_null()) else {
            return Ok(InboundHooks::default());
        };
        let url = cfg
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .ok_or("hooks.messageReceived.url: expected an http(s) URL")?;
        let token = match cfg.get("token") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => return Err("hooks.messageReceived.token: expected a string".into()),
        };
        let hook = WebhookHook {
            url: url.to_string(),
            token,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_default(),
            in_flight: Arc::default(),
        };
        Ok(InboundHooks(vec![Arc::new(hook)]))
    }
}

const MAX_IN_FLIGHT: usize = 64;

/// `hooks.messageReceived`: each message POSTed as JSON.
pub struct WebhookHook {
    url: String,
    token: Option<String>,
    http: reqwest::Client,
    in_flight: Arc<AtomicUsize>,
}

impl InboundHook for WebhookHook {
    fn message_received(&self, msg: &ReceivedMessage) {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= MAX_IN_FLIGHT {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            tracing::warn!(url = %self.url, "message_received hook busy: message not posted");
            return;
        }
        let mut req = self.http.post(&self.url).json(msg);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let (in_flight, url) = (self.in_flight.clone(), self.url.clone());
        actix::spawn(async move {
            match req.send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    tracing::warn!(%url, status = r.status().as_u16(), "message_received hook refused the message")
                }
                Err(e) => {
                    tracing::warn!(%url, timeout = e.is_timeout(), "message_received hook unreachable")
                }
            }
            in_flight.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<ReceivedMessage>>);

    impl InboundHook for Recorder {
        fn message_received(&self, msg: &ReceivedMessage) {
            if let Ok(mut v) = self.0.lock() {
                v.push(msg.clone());
            }
        }
    }

    #[test]
    fn every_hook_sees_the_message_and_config_is_checked() {
        let rec = Arc::new(Recorder::default());
        let hooks = InboundHooks(vec![rec.clone(), rec.clone()]);
        let msg = ReceivedMessage {
            channel: "telegram".into(),
            account_id: "default".into(),
            chat_id: "42".into(),
            chat_type: "direct".into(),
            thread_id: None,
            from: "42".into(),
            sender_name: Some("Ann".into()),
            message_id: "7".into(),
            text: "hi".into(),
            session_key: crate::ids::SessionKey::stored("agent:main:main"),
            agent_id: "main".into(),
            matched_by: "default".into(),
            timestamp: 1,
        };
        hooks.received(&msg);
        assert_eq!(rec.0.lock().unwrap().len(), 2);
        assert!(InboundHooks::from_config(&json!({})).unwrap().0.is_empty());
        assert_eq!(
            InboundHooks::from_config(
                &json!({ "messageReceived": { "url": "http://127.0.0.1:9/x" } })
            )
            .unwrap()
            .0
            .len(),
            1
        );
        let e = InboundHooks::from_config(&json!({ "messageReceived": { "url": "ftp://x" } }))
            .unwrap_err();
        assert!(
            e.to_string().starts_with("hooks.messageReceived.url"),
            "{e}"
        );
        let e = InboundHooks::from_config(
            &json!({ "messageReceived": { "url": "http://x", "token": 5 } }),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("hooks.messageReceived.token"),
            "{e}"
        );
    }
}
