//! The SSRF proxy over real loopback sockets: a plain request and a tunnel
//! to an allowed host go through, a refused host gets 403 and a report, a
//! response over the cap is cut.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// A proxy with the shipped policy and `patch` over it, and its reports.
fn proxy(patch: serde_json::Value, max: u64) -> (Proxy, Arc<Reports>) {
    let policy = Policy::from_settings(&crate::settings::shipped_with("browser.ssrfPolicy", patch));
    let reports = Arc::new(Reports::default());
    let rules = Rules {
        policy: Arc::new(policy),
        max_response_bytes: max,
        reports: reports.clone(),
    };
    (start(rules).unwrap(), reports)
}

/// The reports once there are `n`, failing after 10 s.
async fn reported(r: &Reports, n: u64) -> Vec<String> {
    let mut rx = r.subscribe();
    let wait = rx.wait_for(|seen| *seen >= n);
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the reports within 10 s")
        .unwrap();
    r.since(0)
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
    let (open_proxy, _) = proxy(
        serde_json::json!({ "allowedHostnames": ["127.0.0.1"] }),
        1 << 20,
    );
    let (strict_proxy, reports) = proxy(serde_json::json!({}), 1 << 20);
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
    let lines = reported(&reports, 2).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    for r in lines {
        assert!(r.starts_with("refused: ") && r.contains("loopback"), "{r}");
    }
}

#[actix::test]
async fn a_response_over_the_cap_is_cut_and_reported() {
    let (the_proxy, reports) = proxy(
        serde_json::json!({ "allowedHostnames": ["127.0.0.1"] }),
        64 * 1024,
    );
    let port_of_proxy = the_proxy.port;
    let port = origin(vec![b'x'; 4 << 20]).await;
    let get = format!("GET http://127.0.0.1:{port}/big HTTP/1.1\r\n\r\n");
    let got = through(port_of_proxy, &get).await;
    assert!(got.len() <= 64 * 1024, "{} bytes came through", got.len());
    let lines = reported(&reports, 1).await;
    assert!(
        lines[0].contains("was cut (browser.maxResponseMb)"),
        "{lines:?}"
    );
}

#[actix::test]
async fn what_is_not_a_proxy_request_gets_400() {
    let (the_proxy, _) = proxy(serde_json::json!({}), 1 << 20);
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
