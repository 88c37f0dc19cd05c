//! The browser under pages that misbehave, end to end through
//! `/tools/invoke` on a real Chromium: a page that never answers ends at
//! `browser.actionTimeoutMs` with the action named, a 50 MB page is cut at
//! `browser.maxResponseMb` and said so, a dialog ends the click that opened
//! it and is answered; after each, the same browser goes on.

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::browser::browse;
use super::*;

const ALERT: &str = r#"<!doctype html><html><head><title>Alert</title></head><body>
<button onclick="document.title = confirm('Delete everything?') ? 'yes' : 'no'">Delete</button></body></html>"#;

/// Serves `/never` (read, never answered), `/huge` (50 MB of HTML) and
/// `/alert` on 127.0.0.1.
async fn faulty_site() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let body: Vec<u8> = match path.as_str() {
                    "/never" => {
                        // Held open, never answered, until the client goes.
                        let _ = s.read(&mut buf).await;
                        return;
                    }
                    "/huge" => {
                        let mut b = b"<!doctype html><html><body><p>".to_vec();
                        b.resize(50 << 20, b'x');
                        b
                    }
                    "/alert" => ALERT.as_bytes().to_vec(),
                    _ => b"no".to_vec(),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&body).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_that_hangs_one_too_big_and_a_dialog_each_end_cleanly_and_the_browser_goes_on() {
    let port = faulty_site().await;
    let mut browser = super::browser::browser_config();
    // Long enough that the 50 MB page reaches the 1 MB cap well before the
    // action ends on a loaded machine (CI once took longer than 1.5 s).
    browser["actionTimeoutMs"] = json!(5000);
    browser["maxResponseMb"] = json!(1);
    let gw = TestGateway::with_config(json!({ "browser": browser }));
    let addr = gw.addr.to_string();
    let at = |p: &str| format!("http://127.0.0.1:{port}{p}");

    let (_, hung) = browse(
        &addr,
        json!({ "action": "open", "targetUrl": at("/never") }),
    )
    .await;
    assert!(
        hung.contains("open did not finish within 5000 ms"),
        "{hung}"
    );

    // Cut at the cap, the page never finishes: the answer says why.
    let (_, huge) = browse(&addr, json!({ "action": "open", "targetUrl": at("/huge") })).await;
    assert!(
        huge.contains("bytes was cut (browser.maxResponseMb)"),
        "{huge}"
    );

    let (_, opened) = browse(
        &addr,
        json!({ "action": "open", "targetUrl": at("/alert") }),
    )
    .await;
    assert!(
        opened.contains("button \\\"Delete\\\" [ref=e1]")
            || opened.contains("button \"Delete\" [ref=e1]"),
        "{opened}"
    );
    let (_, blocked) = browse(
        &addr,
        json!({ "action": "act", "kind": "click", "ref": "e1" }),
    )
    .await;
    assert!(
        blocked.contains("a dialog opened: \\\"Delete everything?\\\"")
            || blocked.contains("a dialog opened: \"Delete everything?\""),
        "{blocked}"
    );
    let (_, answered) = browse(&addr, json!({ "action": "dialog", "accept": false })).await;
    assert!(answered.contains("\"accepted\":false"), "{answered}");
    let (_, tabs) = browse(&addr, json!({ "action": "tabs" })).await;
    assert!(
        tabs.contains("\"title\":\"no\""),
        "the page read the refusal: {tabs}"
    );
}
