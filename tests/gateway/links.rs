//! Link understanding (issue 32, OpenClaw's `tools.links`): a link in an
//! operator's message is fetched through the SSRF guard (a loopback page,
//! allowlisted by the test's `ssrfPolicy`) and its text reaches the model
//! inside an outside-data block; a redirect to a private address is
//! refused silently; a stranger's link is never fetched.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::attachments::user_text;
use super::trust::{ask, start as open_telegram, OWNER, STRANGER};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, TestGateway};

const ARTICLE: &str = "<!doctype html><html><head><title>Tide tables</title></head><body>\
    <nav>Home Shop</nav><article><h1>Tide tables</h1><p>High tide at the harbour is at 06:42 \
    and again at 19:05. The spring tide this week reaches 4.8 metres, the highest of the year, \
    so the lower quay will be closed on Thursday morning.</p></article></body></html>";

/// A loopback web server: `/article` (a page), `/away` (a redirect to a
/// private address); counts the requests it gets.
async fn site() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let reply = if head.starts_with("GET /away") {
                    "HTTP/1.1 302 Found\r\nLocation: http://10.255.255.1/secret\r\nContent-Length: 0\r\n\r\n".to_string()
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{ARTICLE}",
                        ARTICLE.len()
                    )
                };
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    (base, hits)
}

fn links_config(provider: &FakeProvider) -> Value {
    provider.set_default(Script::text(&["ok"]));
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0" } } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
        "tools": {
            "links": { "enabled": true, "maxLinks": 2 },
            "web": { "fetch": { "ssrfPolicy": { "allowCidrs": ["127.0.0.0/8"] } } },
        },
    })
}

#[tokio::test]
async fn an_operators_link_is_fetched_and_given_to_the_model_as_outside_data() {
    let provider = FakeProvider::start().await;
    let (base, hits) = site().await;
    let gw = TestGateway::with_config(links_config(&provider));
    let mut c = admin(&gw).await;
    let msg = format!("when is high tide? {base}/article and also {base}/away");
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": msg, "idempotencyKey": "l1"}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    chat_until_done(&mut c, "l1").await;
    let user = user_text(&provider.requests.lock().unwrap()[0].0);
    let block = user
        .find(&format!("[Link]\\nURL: {base}/article"))
        .expect("the link block");
    let wrapped = user[block..]
        .find("<<<EXTERNAL_UNTRUSTED_CONTENT")
        .expect("wrapped");
    let fact = user[block..]
        .find("High tide at the harbour is at 06:42")
        .expect("the page text");
    assert!(wrapped < fact, "{user}");
    // The redirect to a private address: refused, silently.
    assert_eq!(user.matches("[Link]").count(), 1, "{user}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "the article and the redirect, nothing past it"
    );
}

#[tokio::test]
async fn a_strangers_link_is_not_fetched() {
    let provider = FakeProvider::start().await;
    let (base, hits) = site().await;
    let (fake, _gw) = open_telegram(links_config(&provider), &[]);
    let reply = ask(&fake, STRANGER, 1, &format!("read this {base}/article")).await;
    assert!(!reply.is_empty());
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a stranger cannot make the gateway fetch"
    );
    // The owner's link, in the same gateway, is fetched.
    ask(&fake, OWNER, 2, &format!("read this {base}/article")).await;
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
