//! `ferroclaw mcp serve`: the gateway's conversation tools
//! ([`ferroclaw::mcp::Bridge`]) over stdio, reaching the running gateway
//! through one WebSocket connection shared by the calls (one at a time).

use std::sync::Arc;

use ferroclaw::mcp::{Bridge, Calls};
use futures_util::future::BoxFuture;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::sync::Mutex;

use super::{Connection, Failure, Target};

pub use ferroclaw::mcp::allowlist;

struct OverWs(Mutex<Connection>);

impl Calls for OverWs {
    fn call<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let mut g = self.0.lock().await;
            g.call(method, params).await.map_err(|f| f.message)
        })
    }
}

/// Serves MCP on stdin/stdout until the client goes away.
pub async fn serve(t: &Target, allowed: Vec<String>) -> Result<(), Failure> {
    let mut conn = Connection::open(t).await?;
    conn.keep_events = false;
    let bridge = Bridge::new(Arc::new(OverWs(Mutex::new(conn))), allowed);
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
