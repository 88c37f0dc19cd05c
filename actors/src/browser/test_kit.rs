//! What the browser's tests share: a site on 127.0.0.1 answering from a
//! route table, a `BrowserActor` on a real Chromium whose policy allows
//! 127.0.0.1 by name (`localhost` is not), a call, a ref read from a
//! snapshot.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::actor::{BrowserActor, Limits};
use super::launch::Launch;
use super::messages::{BrowserCall, Done};
use super::policy::Policy;
use super::BrowserError;

/// One answer of the test's site.
pub struct Reply {
    pub status: &'static str,
    /// Extra header lines, each ending in CRLF.
    pub headers: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn html(body: &str) -> Reply {
        Reply {
            status: "200 OK",
            headers: "content-type: text/html\r\n".into(),
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn not_found() -> Reply {
        Reply {
            status: "404 Not Found",
            headers: "content-type: text/html\r\n".into(),
            body: b"no".to_vec(),
        }
    }
}

/// Serves `routes` (path, the site's port) on 127.0.0.1; returns the port,
/// and sends the `host` header and path of each request to `seen`.
pub async fn serve(
    seen: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    routes: fn(&str, u16) -> Reply,
) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    actix::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let seen = seen.clone();
            actix::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")));
                if let (Some(tx), Some(h)) = (&seen, host) {
                    let _ = tx.send(format!("{h}{path}"));
                }
                let r = routes(&path, port);
                let head = format!(
                    "HTTP/1.1 {}\r\ncontent-length: {}\r\n{}connection: close\r\n\r\n",
                    r.status,
                    r.body.len(),
                    r.headers
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&r.body).await;
            });
        }
    });
    port
}

/// The `openclaw` profile's actor under `dir` (downloads in
/// `dir/downloads`, responses capped at 1 MiB).
pub fn browser(dir: &Path) -> Addr<BrowserActor> {
    let (launch, policy) = parts(dir);
    BrowserActor::new("openclaw", launch, policy, limits(dir)).start()
}

/// How the tests' browser starts, and its policy (127.0.0.1 allowed):
/// one `Arc` per call, so a `ReconfigureBrowser` with another is a new
/// policy.
pub fn parts(dir: &Path) -> (Launch, Arc<Policy>) {
    let launch = Launch {
        executable: "chromium".into(),
        headless: true,
        no_sandbox: true,
        user_data_dir: dir.join("openclaw"),
        extra_args: Vec::new(),
        deadline: Duration::from_secs(60),
        proxy: None,
        cdp_port: 0,
    };
    let policy = Policy::from_settings(&crate::settings::shipped_with(
        "browser.ssrfPolicy",
        json!({ "allowedHostnames": ["127.0.0.1"] }),
    ));
    (launch, Arc::new(policy))
}

/// The tests' bounds: 20 s an action, 1 MiB a response, downloads in
/// `dir/downloads`.
pub fn limits(dir: &Path) -> Limits {
    Limits {
        action: Duration::from_secs(20),
        evaluate: false,
        max_response_bytes: 1 << 20,
        screenshot_max_bytes: 5 << 20,
        max_tabs: 8,
        downloads: dir.join("downloads"),
        snapshot_efficient: false,
    }
}

pub async fn call(b: &Addr<BrowserActor>, action: &str, args: Value) -> Result<Done, BrowserError> {
    // Only `upload` reads the workspace (`call_in`).
    call_in(b, action, args, Path::new("/tmp")).await
}

/// A call from a turn whose workspace is `workspace` (confined to it).
pub async fn call_in(
    b: &Addr<BrowserActor>,
    action: &str,
    args: Value,
    workspace: &Path,
) -> Result<Done, BrowserError> {
    b.send(BrowserCall {
        action: action.into(),
        args,
        workspace: crate::tool::Workspace::from(workspace),
    })
    .await
    .unwrap()
}

/// The ref of the first snapshot line holding `role "name"`.
pub fn ref_of(text: &str, role_name: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(role_name))
        .unwrap_or_else(|| panic!("{role_name} not in {text}"));
    let at = line.find("[ref=").unwrap() + 5;
    line[at..].split(']').next().unwrap().to_string()
}
