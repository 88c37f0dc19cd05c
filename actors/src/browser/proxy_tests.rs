//! The SSRF proxy over real loopback sockets: a plain request and a tunnel
//! to an allowed host go through, a refused host gets 403 and a report, a
//! response over the cap is cut.

use std::time::Duration;

use actix::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::browser::messages::ProxyReport;

/// Hands the proxy's reports to the test.
struct Host {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
}

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<ProxyReport> for Host {
    type Result = ();
    fn handle(&mut self, msg: ProxyReport, _: &mut Context<Self>) {
        let _ = self.tx.send(format!("{msg:?}"));
    }
}

/// A proxy with the shipped policy and `patch` over it: its actor, its
/// port, its reports.
fn proxy(
    patch: serde_json::Value,
    max: u64,
) -> (
    Addr<Host>,
    Proxy,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut port = None;
    let addr = Host::create(|ctx| {
        let policy =
            Policy::from_settings(&crate::settings::shipped_with("browser.ssrfPolicy", patch));
        let rules = Rules {
            policy: Arc::new(policy),
            max_response_bytes: max,
            reports: ctx.address().recipient(),
        };
        port = Some(start(rules).unwrap());
        Host { tx }
    });
    (addr, port.unwrap(), rx)
}

/// A loopback HTTP server answering every request with `body`.
async fn origin(body: Vec<u8>) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    actix::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let body = body.clone();
            actix::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&body).await;
            });
        }
    });
    port
}

async fn through(proxy: u16, request: &str) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", proxy))
        .await
        .unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    out
}

#[actix::test]
async fn allowed_hosts_go_through_and_others_are_refused_before_any_byte_is_sent() {
    let (_a, open_proxy, _) = proxy(
        serde_json::json!({ "allowedHostnames": ["127.0.0.1"] }),
        1 << 20,
    );
    let (_b, strict_proxy, mut reports) = proxy(serde_json::json!({}), 1 << 20);
    let (open, strict) = (open_proxy.port, strict_proxy.port);
    let port = origin(b"hello from the origin".to_vec()).await;
    let get = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
    let ok = String::from_utf8(through(open, &get).await).unwrap();
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("hello from the origin"),
        "{ok}"
    );
    let tunnel = format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    );
    let ok = String::from_utf8(through(open, &tunnel).await).unwrap();
    assert!(
        ok.starts_with("HTTP/1.1 200 Connection Established")
            && ok.contains("hello from the origin"),
        "{ok}"
    );
    for req in [&get, &tunnel] {
        let refused = String::from_utf8(through(strict, req).await).unwrap();
        assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
        assert!(refused.contains("a loopback address"), "{refused}");
    }
    for _ in 0..2 {
        let r = reports.recv().await.unwrap();
        assert!(r.contains("Refused") && r.contains("loopback"), "{r}");
    }
}

#[actix::test]
async fn a_response_over_the_cap_is_cut_and_reported() {
    let (_a, the_proxy, mut reports) = proxy(
        serde_json::json!({ "allowedHostnames": ["127.0.0.1"] }),
        64 * 1024,
    );
    let port_of_proxy = the_proxy.port;
    let port = origin(vec![b'x'; 4 << 20]).await;
    let get = format!("GET http://127.0.0.1:{port}/big HTTP/1.1\r\n\r\n");
    let got = through(port_of_proxy, &get).await;
    assert!(got.len() <= 64 * 1024, "{} bytes came through", got.len());
    let r = reports.recv().await.unwrap();
    assert!(r.contains("Cut"), "{r}");
}

#[actix::test]
async fn what_is_not_a_proxy_request_gets_400() {
    let (_a, the_proxy, _) = proxy(serde_json::json!({}), 1 << 20);
    let port_of_proxy = the_proxy.port;
    for req in [
        "GET /relative HTTP/1.1\r\n\r\n",
        "GET ftp://x/ HTTP/1.1\r\n\r\n",
        "\x00\x01garbage\r\n\r\n",
    ] {
        let got = String::from_utf8_lossy(&through(port_of_proxy, req).await).to_string();
        assert!(got.starts_with("HTTP/1.1 400"), "{req:?}: {got}");
    }
}
