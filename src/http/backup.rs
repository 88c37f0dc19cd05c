//! `GET /backup/store`: the store's consistent snapshot log
//! (`store/snapshot.rs`), streamed to `ferroclaw backup create` while the
//! gateway runs (the store is this process's alone). Gateway secret
//! required, loopback peers only; one snapshot at a time (409 for a
//! second). `X-Ferroclaw-State-Dir` names the state dir it comes from. A
//! client that goes away ends the snapshot; the gateway goes on.

use std::io::Write;

use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::json;

use ferroclaw_actors::gateway::SnapshotStore;

use crate::state::SharedState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/backup/store")
            .route(web::get().to(store))
            .default_service(web::to(|| async {
                HttpResponse::MethodNotAllowed()
                    .insert_header((actix_web::http::header::ALLOW, "GET"))
                    .finish()
            })),
    );
}

/// Chunks of the log to the response; fails once the client is gone.
/// `started` says the snapshot began (its first write: the journal runs).
struct ToResponse {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
    started: Option<tokio::sync::oneshot::Sender<()>>,
}

const CHUNK: usize = 64 * 1024;

impl Write for ToResponse {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if let Some(started) = self.started.take() {
            let _ = started.send(());
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::other("the client went away"))
    }
}

async fn store(req: HttpRequest, state: web::Data<SharedState>) -> HttpResponse {
    if let Err(refused) = super::auth::check_bearer(&req, &state, "/backup/store") {
        return refused.response();
    }
    if !req.peer_addr().is_some_and(|p| p.ip().is_loopback()) {
        return HttpResponse::Forbidden().json(json!({ "error": {
            "message": "backups are taken from this machine only", "type": "forbidden" } }));
    }
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let errors = tx.clone();
    let out = ToResponse {
        tx,
        buf: Vec::with_capacity(CHUNK),
        started: Some(started_tx),
    };
    let root = state.gateway.root.clone();
    let snapshot = actix_web::rt::spawn(async move {
        let done = match root.send(SnapshotStore { out: Box::new(out) }).await {
            Ok(Ok(summary)) => Ok(summary),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match &done {
            Ok(s) => tracing::info!(
                entries = s.entries,
                journaled = s.journaled,
                "store snapshot sent"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "store snapshot ended early");
                // The body ends in an error: the client sees it cut short.
                let _ = errors.send(Err(std::io::Error::other(e.to_string()))).await;
            }
        }
        done
    });
    if started.await.is_err() {
        // It failed before its first line (another backup runs, ...).
        let message = match snapshot.await {
            Ok(Err(e)) => e,
            _ => "the store snapshot did not start".into(),
        };
        return HttpResponse::Conflict()
            .json(json!({ "error": { "message": message, "type": "conflict" } }));
    }
    streamed(rx, &state.state_dir)
}

/// The snapshot's lines as they come, with the state directory they were
/// taken from (percent-encoded) for the client that restores them.
fn streamed(
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    state_dir: &std::path::Path,
) -> HttpResponse {
    let dir = std::fs::canonicalize(state_dir).unwrap_or(state_dir.to_path_buf());
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    HttpResponse::Ok()
        .content_type("application/x-ndjson")
        .insert_header((
            "x-ferroclaw-state-dir",
            percent_encoding::utf8_percent_encode(
                &dir.display().to_string(),
                percent_encoding::NON_ALPHANUMERIC,
            )
            .to_string(),
        ))
        .streaming(body)
}
