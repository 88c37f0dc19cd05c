//! One WebSocket to a platform as a task (Slack's Socket Mode, Discord's
//! gateway): connect within a time limit with frames capped, then pass
//! frames both ways until either side ends it. The owning actor gets
//! every step as a `Tagged` message carrying the socket's generation (an
//! actor with more than one socket in its life tells them apart by it),
//! and writes through the sender it is handed (`Opened`); a `Close` sent
//! there, or the sender dropped, closes the socket.

pub use super::messages::{SocketEvent, Tagged};
use std::time::Duration;

use actix::Recipient;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
pub use tokio_tungstenite::tungstenite::Message as Ws;

/// Runs socket number `generation` to `url`, every step sent to `to`.
pub async fn run(
    url: String,
    limit: Duration,
    max_frame: usize,
    generation: u64,
    to: Recipient<Tagged>,
) {
    let emit = |event| to.do_send(Tagged { generation, event });
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_frame))
        .max_frame_size(Some(max_frame));
    let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), true);
    let ws = match tokio::time::timeout(limit, connect).await {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(e)) => {
            let error = format!("socket: {e}");
            return emit(SocketEvent::Closed { code: None, error });
        }
        Err(_) => {
            let error = "socket: no answer".to_string();
            return emit(SocketEvent::Closed { code: None, error });
        }
    };
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    emit(SocketEvent::Opened(tx));
    let (code, error) = loop {
        tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Ws::Text(t))) => emit(SocketEvent::Frame(Some(t.to_string()))),
                Some(Ok(Ws::Close(f))) => {
                    let code = f.as_ref().map(|f| u16::from(f.code));
                    let why = f.map(|f| f.reason.to_string()).unwrap_or_default();
                    break (code, format!("closed by the platform ({why})"));
                }
                Some(Ok(_)) => emit(SocketEvent::Frame(None)),
                Some(Err(e)) => break (None, format!("socket: {e}")),
                None => break (None, "socket ended".to_string()),
            },
            out = rx.recv() => match out {
                Some(m @ Ws::Close(_)) => {
                    let _ = sink.send(m).await;
                    break (None, "replaced".to_string());
                }
                None => {
                    let _ = sink.send(Ws::Close(None)).await;
                    break (None, "replaced".to_string());
                }
                Some(m) => {
                    if let Err(e) = sink.send(m).await {
                        break (None, format!("socket: {e}"));
                    }
                }
            },
        }
    };
    emit(SocketEvent::Closed { code, error });
}
