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
