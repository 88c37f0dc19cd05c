//! Road 6: a web page in the operator's own browser, against a gateway
//! that runs with `gateway.auth.mode: "none"` (loopback only, no secret).
//! Every route that acts is tried the three ways a page can reach it: by
//! DNS rebinding (`Host: evil.example`, its own origin), cross-site (a
//! foreign `Origin`), and as a "simple" POST a browser sends without a
//! preflight (`Content-Type: text/plain`). Each is refused and the operator
//! tool behind `/tools/invoke` writes nothing; the same request from this
//! machine (a loopback `Host`, no or the gateway's own `Origin`, JSON) is
//! served. With token auth nothing changes for a client with the bearer.

use std::net::SocketAddr;

use serde_json::{json, Value};

use crate::support::{TestGateway, TOKEN};

const HOOK_TOKEN: &str = "hook-token-0123456789abcdef";

/// One raw HTTP/1.1 request with exactly these headers; the status and
/// what came of the body (all of it when sized, else what arrived with the
/// head: a WebSocket's 101 and a streamed backup are not read to the end).
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
    {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let read = async {
        let mut chunk = [0u8; 8192];
        loop {
            let n = s.read(&mut chunk).await.unwrap_or(0);
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                let sized = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| v.parse::<usize>().ok());
                match sized {
                    Some(len) if rest.len() < len && n > 0 => continue,
                    _ => return,
                }
            }
            if n == 0 {
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read)
        .await
        .expect("an answer in time");
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

/// A route that acts, as a page would call it.
struct Route {
    name: &'static str,
    method: &'static str,
    path: String,
    /// Headers of its own (a hook's token, a WebSocket upgrade).
    headers: Vec<(&'static str, String)>,
    /// A JSON body (None: the route takes none).
    body: Option<Value>,
    /// What the operator's own request gets.
    served: u16,
}

fn routes() -> Vec<Route> {
    let r = |name, method, path: &str, body: Option<Value>| Route {
        name,
        method,
        path: path.to_string(),
        headers: vec![],
        body,
        served: 200,
    };
    let mut hook = r(
        "POST /hooks/wake",
        "POST",
        "/hooks/wake",
        Some(json!({"text": "ping", "mode": "next-heartbeat"})),
    );
    hook.headers
        .push(("Authorization", format!("Bearer {HOOK_TOKEN}")));
    let mut ws = r("WebSocket upgrade", "GET", "/", None);
    ws.served = 101;
    ws.headers.extend([
        ("Upgrade", "websocket".to_string()),
        ("Connection", "Upgrade".to_string()),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==".to_string()),
        ("Sec-WebSocket-Version", "13".to_string()),
    ]);
    let mut media = r(
        "GET /media/<id>",
        "GET",
        &format!("/media/{}", "a".repeat(64)),
        None,
    );
    media.served = 404;
    let mut ui = r("Control UI page", "GET", "/", None);
    ui.headers.push(("Accept", "text/html".to_string()));
    vec![
        r(
            "POST /tools/invoke",
            "POST",
            "/tools/invoke",
            Some(json!({"tool": "write", "args": {"path": "AGENTS.md", "content": "VARIANT"}})),
        ),
        r(
            "POST /v1/chat/completions",
            "POST",
            "/v1/chat/completions",
            Some(
                json!({"model": "ferroclaw:main", "messages": [{"role": "user", "content": "hi"}]}),
            ),
        ),
        r("GET /v1/models", "GET", "/v1/models", None),
        hook,
        r(
            "POST /mcp",
            "POST",
            "/mcp",
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}}),
            ),
        ),
        r("GET /backup/store", "GET", "/backup/store", None),
        media,
        r(
            "GET /control-ui-config.json",
            "GET",
            "/control-ui-config.json",
            None,
        ),
        ui,
        r("GET /chat (web chat)", "GET", "/chat", None),
        ws,
    ]
}

/// What one variant of a request sends.
async fn send(
    addr: SocketAddr,
    route: &Route,
    host: &str,
    origin: Option<&str>,
    content_type: &str,
    variant: &str,
) -> (u16, String) {
    let mut headers: Vec<(&str, String)> = vec![("Host", host.to_string())];
    if let Some(o) = origin {
        headers.push(("Origin", o.to_string()));
    }
    headers.extend(route.headers.iter().cloned());
    let body = match &route.body {
        Some(b) => {
            headers.push(("Content-Type", content_type.to_string()));
            if route.path == "/mcp" {
                headers.push(("Accept", "application/json, text/event-stream".to_string()));
            }
            b.to_string().replace("VARIANT", variant)
        }
        None => String::new(),
    };
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    raw(addr, route.method, &route.path, &headers, &body).await
}

fn none_auth_gateway() -> TestGateway {
    let ui = super::super::control_ui::installed_ui()
        .display()
        .to_string();
    TestGateway::with_config(json!({
        "gateway": {
            "auth": { "mode": "none" },
            "controlUi": { "root": ui },
            "http": { "endpoints": { "chatCompletions": { "enabled": true }, "mcp": { "enabled": true } } },
        },
        "hooks": { "enabled": true, "token": HOOK_TOKEN },
    }))
}

#[tokio::test]
async fn with_auth_none_a_web_page_drives_no_route_by_rebinding_cross_site_or_a_simple_post() {
    let gw = none_auth_gateway();
    let agents = gw.state_dir().join("workspace/AGENTS.md");
    let before = std::fs::read_to_string(&agents).unwrap_or_default();
    let own_host = gw.addr.to_string();
    let own_origin = format!("http://{own_host}");
    let evil_host = format!("evil.example:{}", gw.addr.port());
    let evil_origin = format!("http://{evil_host}");
    let json_ct = "application/json";
    let mut table = vec![format!(
        "{:<28} {:>9} {:>14} {:>11}  (served from this machine)",
        "route", "rebinding", "foreign Origin", "text/plain"
    )];
    for route in routes() {
        let rebinding = send(
            gw.addr,
            &route,
            &evil_host,
            Some(&evil_origin),
            json_ct,
            "rebinding",
        )
        .await;
        let rebinding_plain = send(
            gw.addr,
            &route,
            &evil_host,
            None,
            json_ct,
            "rebinding-no-origin",
        )
        .await;
        let cross = send(
            gw.addr,
            &route,
            &own_host,
            Some("http://evil.example"),
            json_ct,
            "cross-site",
        )
        .await;
        let cross_simple = send(
            gw.addr,
            &route,
            &own_host,
            Some("http://evil.example"),
            "text/plain",
            "cross-site-simple",
        )
        .await;
        let plain = route.body.is_some().then_some(());
        let plain = match plain {
            Some(()) => Some(
                send(
                    gw.addr,
                    &route,
                    &own_host,
                    None,
                    "text/plain;charset=UTF-8",
                    "text-plain",
                )
                .await,
            ),
            None => None,
        };
        for (what, (status, body)) in [
            ("rebinding", &rebinding),
            ("rebinding without Origin", &rebinding_plain),
            ("cross-site", &cross),
            ("cross-site simple POST", &cross_simple),
        ] {
            assert_eq!(
                *status, 403,
                "{}: {what} must be refused: {body}",
                route.name
            );
            assert!(
                body.contains("not allowed"),
                "{}: {what}: a clear error: {body}",
                route.name
            );
        }
        if let Some((status, body)) = &plain {
            assert_eq!(
                *status, 415,
                "{}: a text/plain body must be refused: {body}",
                route.name
            );
        }
        // The same request from this machine, as the gateway's own page sends it.
        let ok = send(
            gw.addr,
            &route,
            &own_host,
            Some(own_origin.as_str())
                .filter(|_| route.method == "POST" || route.name.contains("WebSocket")),
            json_ct,
            "own-page",
        )
        .await;
        assert_eq!(
            ok.0, route.served,
            "{}: the operator's own request is served: {ok:?}",
            route.name
        );
        table.push(format!(
            "{:<28} {:>9} {:>14} {:>11}  {}",
            route.name,
            rebinding.0,
            cross.0,
            plain.map(|p| p.0.to_string()).unwrap_or_else(|| "-".into()),
            ok.0
        ));
    }
    println!("{}", table.join("\n"));
    let after = std::fs::read_to_string(&agents).unwrap();
    assert_eq!(
        after, "own-page",
        "only the operator's own call wrote AGENTS.md (before: {before:?})"
    );
}

#[tokio::test]
async fn with_auth_none_the_configured_origin_gets_through_and_nothing_else_does() {
    let gw = TestGateway::with_config(json!({
        "gateway": { "auth": { "mode": "none" }, "controlUi": { "allowedOrigins": ["https://gw.tailnet.ts.net"] } },
    }));
    let invoke = Route {
        name: "POST /tools/invoke",
        method: "POST",
        path: "/tools/invoke".into(),
        headers: vec![],
        body: Some(json!({"tool": "write", "args": {"path": "notes.md", "content": "VARIANT"}})),
        served: 200,
    };
    let own = gw.addr.to_string();
    for (host, origin, variant, want) in [
        (
            "gw.tailnet.ts.net",
            "https://gw.tailnet.ts.net",
            "proxied",
            200,
        ),
        ("other.ts.net", "https://other.ts.net", "other", 403),
        // Another local origin (a dev server) is not the gateway's own.
        (own.as_str(), "http://localhost:3000", "dev-server", 403),
    ] {
        let got = send(
            gw.addr,
            &invoke,
            host,
            Some(origin),
            "application/json",
            variant,
        )
        .await;
        assert_eq!(got.0, want, "{host} {origin}: {got:?}");
    }
    let written = std::fs::read_to_string(gw.state_dir().join("workspace/notes.md")).unwrap();
    assert_eq!(written, "proxied");
}

#[tokio::test]
async fn with_token_auth_a_client_with_the_bearer_is_served_as_before() {
    let gw = TestGateway::start();
    let bearer = format!("Bearer {TOKEN}");
    let body =
        json!({"tool": "write", "args": {"path": "notes.md", "content": "by-bearer"}}).to_string();
    // A proxy's Host and a text/plain body: the bearer is the check.
    let (status, answer) = raw(
        gw.addr,
        "POST",
        "/tools/invoke",
        &[
            ("Host", "gateway.behind.proxy"),
            ("Authorization", &bearer),
            ("Content-Type", "text/plain"),
        ],
        &body,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        std::fs::read_to_string(gw.state_dir().join("workspace/notes.md")).unwrap(),
        "by-bearer"
    );
    let (status, answer) = raw(
        gw.addr,
        "POST",
        "/tools/invoke",
        &[
            ("Host", &gw.addr.to_string()),
            ("Origin", "http://evil.example"),
            ("Content-Type", "text/plain"),
        ],
        &body.replace("by-bearer", "by-page"),
    )
    .await;
    assert_eq!(
        status, 401,
        "without the bearer a page gets nothing: {answer}"
    );
    assert_eq!(
        std::fs::read_to_string(gw.state_dir().join("workspace/notes.md")).unwrap(),
        "by-bearer"
    );
}

#[tokio::test]
async fn chromium_on_an_attackers_page_gets_nothing_from_a_gateway_without_auth() {
    let gw = TestGateway::with_config(json!({ "gateway": { "auth": { "mode": "none" } } }));
    let agents = gw.state_dir().join("workspace/AGENTS.md");
    let before = std::fs::read_to_string(&agents).unwrap_or_default();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("attacker-screenshots");
    let addr = gw.addr.to_string();
    let report =
        crate::support::browser::browser_script("attacker.test.mjs", &[addr.as_ref()], &shots)
            .await;
    let said = |page: &str, what: &str| report[page][what].as_str().unwrap_or("").to_string();
    // The rebinding page reads what the gateway answered it: refused.
    assert!(said("rebinding", "invoke").starts_with("403"), "{report}");
    assert!(
        said("rebinding", "invoke").contains("host not allowed"),
        "{report}"
    );
    assert!(said("rebinding", "backup").starts_with("403"), "{report}");
    // No socket opened for either page.
    for page in ["crossSite", "rebinding"] {
        let ws = said(page, "ws");
        assert!(
            !ws.contains("open") && !ws.contains("message"),
            "{page}: {ws}"
        );
    }
    assert_eq!(
        said("crossSite", "invoke"),
        "sent",
        "the browser sent the simple POST: {report}"
    );
    assert_eq!(
        std::fs::read_to_string(&agents).unwrap_or_default(),
        before,
        "nothing a page sent wrote AGENTS.md"
    );
}
