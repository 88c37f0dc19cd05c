//! What the fake platforms share: an actix-web server on loopback in its
//! own thread (one worker), with their state as app data, optionally a
//! WebSocket listener beside it, and a stop that waits for the thread.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::{web, App, HttpServer};

/// A running fake server.
pub struct Served {
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Serves `routes` on `listener` with `state` as app data. When `ws` is
/// given, each connection on it is handed to `on_socket` (in the server's
/// thread).
pub fn serve<T, F, Fut>(
    listener: TcpListener,
    state: Arc<T>,
    routes: fn(&mut web::ServiceConfig),
    ws: Option<(TcpListener, F)>,
) -> Served
where
    T: Send + Sync + 'static,
    F: Fn(Arc<T>, tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            if let Some((l, on_socket)) = ws {
                let st = state.clone();
                l.set_nonblocking(true).unwrap();
                actix_rt::spawn(async move {
                    let l = tokio::net::TcpListener::from_std(l).unwrap();
                    while let Ok((stream, _)) = l.accept().await {
                        actix_rt::spawn(on_socket(st.clone(), stream));
                    }
                });
            }
            let data = web::Data::from(state);
            let server =
                HttpServer::new(move || App::new().app_data(data.clone()).configure(routes))
                    .workers(1)
                    .disable_signals()
                    .listen(listener)
                    .unwrap()
                    .run();
            tx.send(server.handle()).unwrap();
            let _ = server.await;
        });
    });
    Served {
        handle: rx.recv().unwrap(),
        thread: Some(thread),
    }
}

/// For a fake without a WebSocket side.
pub type NoSocket<T> = fn(Arc<T>, tokio::net::TcpStream) -> std::future::Ready<()>;

impl Drop for Served {
    fn drop(&mut self) {
        let h = self.handle.clone();
        std::thread::spawn(move || actix_rt::System::new().block_on(h.stop(false)));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// The parts of a `multipart/form-data` body (as the platforms read
/// uploads); None when the body is not one.
pub fn multipart(content_type: &str, body: &[u8]) -> Option<Vec<Part>> {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let delim = format!("--{boundary}").into_bytes();
    let find = |hay: &[u8], from: usize, needle: &[u8]| {
        hay.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|i| i + from)
    };
    let mut parts = Vec::new();
    let mut at = find(body, 0, &delim)? + delim.len();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            return Some(parts);
        }
        let head_start = at + 2;
        let head_end = find(body, head_start, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&body[head_start..head_end]).to_string();
        let next = find(body, head_end + 4, &delim)?;
        let data = body[head_end + 4..next - 2].to_vec();
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .unwrap_or_default()
            .to_string();
        let field = |key: &str| {
            disposition.split(';').find_map(|p| {
                p.trim()
                    .strip_prefix(&format!("{key}="))
                    .map(|v| v.trim_matches('"').to_string())
            })
        };
        let content_type = head.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_string())
        });
        parts.push(Part {
            name: field("name")?,
            filename: field("filename"),
            content_type,
            data,
        });
        at = next + delim.len();
    }
}
