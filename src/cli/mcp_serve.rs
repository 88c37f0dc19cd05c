//! `ferroclaw mcp serve`: the gateway's conversation tools
//! ([`ferroclaw::mcp::Bridge`]) over stdio, reaching the running gateway
//! through one WebSocket connection shared by the calls (one at a time),
//! and a second one subscribed to the sessions' news, which feeds the live
//! event queue (`events_poll`, `events_wait`) while the bridge runs.

use std::sync::Arc;

use ferroclaw::mcp::{Bridge, BridgeError, Calls, Events};
use futures_util::future::BoxFuture;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::sync::Mutex;

use super::{Connection, Failure, Target};

pub use ferroclaw::mcp::allowlist;

struct OverWs(Mutex<Connection>);

impl Calls for OverWs {
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, BridgeError>> {
        Box::pin(async move {
            let mut g = self.0.lock().await;
            g.call(method, params)
                .await
                .map_err(|f| BridgeError::Gateway(f.message))
        })
    }
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve(t: &Target, allowed: Vec<String>) -> Result<(), Failure> {
    let mut conn = Connection::open(t).await?;
    conn.keep_events = false;
    let mut feed = Connection::open(t).await?;
    feed.call("sessions.subscribe", serde_json::json!({}))
        .await?;
    let events = Events::new();
    let queue = events.clone();
    tokio::spawn(async move {
        while let Ok(e) = feed.next_event().await {
            if let (Some(name), Some(payload)) = (e["event"].as_str(), e.get("payload")) {
                queue.push(name, payload);
            }
        }
    });
    let bridge = Bridge::new(Arc::new(OverWs(Mutex::new(conn))), allowed, events);
    let service = bridge
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::new(1, format!("mcp: {e}")))?;
    service
        .waiting()
        .await
        .map_err(|e| Failure::new(1, format!("mcp: {e}")))?;
    Ok(())
}
