//! The managed browser's only way out: an HTTP proxy on 127.0.0.1 that
//! Chromium is started behind (`--proxy-server`, loopback included), which
//! resolves each host itself, checks every address against the SSRF
//! policy (`policy.rs`) and connects to exactly those addresses. So a
//! navigation, a redirect, a new tab, `window.open`, a frame, a fetch and a
//! WebSocket obey the policy alike, and a name that resolves differently
//! the second time cannot slip past it. `CONNECT` tunnels TLS as is; a
//! plain request is sent on with `Connection: close` (one request per
//! connection, so a kept-alive socket cannot be reused for another host).
//! A response may bring `browser.maxResponseMb` at most: past it both
//! sides are closed. Refusals and cuts go in `Reports` (the newest
//! `KEEP_REPORTS`: a flood drops the oldest, never grows memory), which a
//! call reads in place: the call holds its actor's mailbox meanwhile.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::policy::Policy;

/// Reports kept (for `errors` and the answer of the call they happened in).
const KEEP_REPORTS: usize = 50;

/// What the proxy refused or cut, newest last.
#[derive(Default)]
pub struct Reports {
    /// (reports ever made, the newest of them).
    lines: Mutex<(u64, VecDeque<String>)>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Reports {
    fn push(&self, line: String) {
        let mut l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if l.1.len() == KEEP_REPORTS {
            l.1.pop_front();
        }
        l.1.push_back(line);
        l.0 += 1;
        let n = l.0;
        drop(l);
        self.changed.send_replace(n);
    }

    /// How many reports were made so far.
    pub fn seq(&self) -> u64 {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// The reports made after the first `seq` (those still kept).
    pub fn since(&self, seq: u64) -> Vec<String> {
        let l = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let new = (l.0.saturating_sub(seq) as usize).min(l.1.len());
        l.1.iter().skip(l.1.len() - new).cloned().collect()
    }

    /// Ticks with the number of reports made.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// A request head larger than this is refused.
const MAX_HEAD: usize = 64 * 1024;
const HEAD_DEADLINE: Duration = Duration::from_secs(30);
const CONNECT_DEADLINE: Duration = Duration::from_secs(15);

/// A running proxy: where it listens. It serves until dropped (its
/// owner's `stopped`); connections already open end with their sockets.
/// Its own task, not a future of the owner's context: a call the owner
/// waits on in place (`ctx.wait`) must not stop the proxy it goes through.
pub struct Proxy {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the proxy works with, shared by its connections.
#[derive(Clone)]
pub struct Rules {
    pub policy: Arc<Policy>,
    pub max_response_bytes: u64,
    pub reports: Arc<Reports>,
}

/// Binds 127.0.0.1:0 and serves (on the current arbiter).
pub fn start(rules: Rules) -> std::io::Result<Proxy> {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    std_listener.set_nonblocking(true)?;
    let port = std_listener.local_addr()?.port();
    let listener = TcpListener::from_std(std_listener)?;
    let serve = async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                continue;
            };
            let rules = rules.clone();
            actix::spawn(async move { serve(socket, rules).await });
        }
    };
    let task = actix::spawn(serve);
    Ok(Proxy { port, task })
}

/// One request as the client sent it.
struct Head {
    method: String,
    target: String,
    /// The head's length in the buffer (what follows is body or tunnel).
    len: usize,
    headers: Vec<(String, Vec<u8>)>,
}

async fn read_head(client: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Head> {
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 96];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(len)) => {
                return Some(Head {
                    method: req.method?.to_string(),
                    target: req.path?.to_string(),
                    len,
                    headers: req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_string(), h.value.to_vec()))
                        .collect(),
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => return None,
        }
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Where a request goes: host, port, and for a plain request the path to
/// send on (None: a tunnel).
fn destination(head: &Head) -> Option<(String, u16, Option<String>)> {
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = head.target.rsplit_once(':')?;
        return Some((host.to_string(), port.parse().ok()?, None));
    }
    let url = reqwest::Url::parse(&head.target).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let host = url.host_str()?.to_string();
    let port = url.port_or_known_default()?;
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    Some((host, port, Some(path)))
}

async fn answer(client: &mut TcpStream, status: &str, why: &str) {
    let body = format!("ferroclaw's browser policy: {why}\n");
    let text = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn connect(addrs: &[SocketAddr]) -> Option<TcpStream> {
    for a in addrs {
        if let Ok(Ok(s)) = tokio::time::timeout(CONNECT_DEADLINE, TcpStream::connect(a)).await {
            return Some(s);
        }
    }
    None
}

/// The head sent on for a plain request: origin-form, hop-by-hop headers
/// dropped, one request per connection.
fn forwarded_head(head: &Head, path: &str) -> Vec<u8> {
    let mut out = format!("{} {path} HTTP/1.1\r\n", head.method).into_bytes();
    for (name, value) in &head.headers {
        let n = name.to_ascii_lowercase();
        if matches!(
            n.as_str(),
            "proxy-connection" | "connection" | "keep-alive" | "proxy-authorization"
        ) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    out
}

async fn serve(mut client: TcpStream, rules: Rules) {
    let mut buf = Vec::with_capacity(4096);
    let Ok(Some(head)) =
        tokio::time::timeout(HEAD_DEADLINE, read_head(&mut client, &mut buf)).await
    else {
        return answer(&mut client, "400 Bad Request", "not a proxy request").await;
    };
    let Some((host, port, path)) = destination(&head) else {
        return answer(
            &mut client,
            "400 Bad Request",
            "only http and CONNECT are proxied",
        )
        .await;
    };
    let addrs = match rules.policy.resolve(&host, port).await {
        Ok(a) => a,
        Err(e) => {
            tracing::info!(%host, why = %e, "browser request refused");
            rules.reports.push(format!("refused: {e}"));
            return answer(&mut client, "403 Forbidden", &e.to_string()).await;
        }
    };
    let Some(mut server) = connect(&addrs).await else {
        return answer(
            &mut client,
            "502 Bad Gateway",
            &format!("cannot reach {host}:{port}"),
        )
        .await;
    };
    let sent = match &path {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
        }
        Some(p) => server.write_all(&forwarded_head(&head, p)).await,
    };
    if sent.is_err() || server.write_all(&buf[head.len..]).await.is_err() {
        return;
    }
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let up = tokio::io::copy(&mut cr, &mut sw);
    let down = copy_capped(&mut sr, &mut cw, rules.max_response_bytes);
    let capped = tokio::select! {
        _ = up => false,
        r = down => r,
    };
    if capped {
        let limit = rules.max_response_bytes;
        tracing::warn!(%host, limit, "browser response cut");
        rules.reports.push(format!(
            "{host}: a response over {limit} bytes was cut (browser.maxResponseMb)"
        ));
    }
}

/// Copies until the end or `cap` bytes; true when the cap cut it.
async fn copy_capped<R, W>(r: &mut R, w: &mut W, cap: u64) -> bool
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut chunk = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let Ok(n) = r.read(&mut chunk).await else {
            return false;
        };
        if n == 0 {
            let _ = w.shutdown().await;
            return false;
        }
        total += n as u64;
        if total > cap {
            return true;
        }
        if w.write_all(&chunk[..n]).await.is_err() {
            return false;
        }
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
