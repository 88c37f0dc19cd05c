//! `LspServer`: one language server process for one workspace root, over
//! stdio. It owns the process group (stopped with it), the requests in
//! flight (each with its deadline; a late one gets `$/cancelRequest`), the
//! files it opened (sent again whole when asked: the server sees the file
//! as it is on disk now) and the last diagnostics per file, with waiters.
//! When the process ends every request fails and the actor stops; the hub
//! starts a new one on the next call.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::messages::{Incoming, Initialized, Request, StopServer, SyncFile, WaitDiagnostics};
use super::{framing, wire, LspError};
use crate::settings::LspServerSettings;

type Reply = oneshot::Sender<Result<Value, LspError>>;

pub struct LspServer {
    name: String,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    child: Option<tokio::process::Child>,
    next_id: i64,
    pending: HashMap<i64, Reply>,
    /// Open files: URI -> version sent.
    opened: HashMap<String, i64>,
    /// URI -> (reports so far, the last diagnostics).
    diagnostics: HashMap<String, (u64, Vec<Value>)>,
    waiters: Vec<(String, u64, oneshot::Sender<Vec<Value>>)>,
    span: tracing::Span,
}

impl Actor for LspServer {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        for (_, reply) in self.pending.drain() {
            let _ = reply.send(Err(LspError::Exited(self.name.clone())));
        }
        if let Some(pid) = self.child.as_ref().and_then(|c| c.id()) {
            crate::child::stop_group(pid, Duration::from_millis(500));
        }
    }
}

/// `path` as a `file://` URI.
pub fn uri_of(path: &Path) -> String {
    let text = path.display().to_string();
    let encoded = percent_encoding::utf8_percent_encode(&text, PATH_SET);
    format!("file://{encoded}")
}

const PATH_SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'#')
    .add(b'%')
    .add(b'?')
    .add(b'"')
    .add(b'<')
    .add(b'>');

/// The server's process, its stdin fed from a queue, its stdout read as
/// frames into the actor.
fn spawn(
    name: &str,
    settings: &LspServerSettings,
    root: &Path,
) -> Result<Addr<LspServer>, LspError> {
    let mut cmd = tokio::process::Command::new(&settings.command);
    cmd.args(&settings.args)
        .envs(&settings.env)
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    crate::child::owned(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| LspError::Start(format!("{}: {e}", settings.command)))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(LspError::Start("no stdio".into()));
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    actix::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
        }
    });
    let frames = futures_util::stream::unfold(Some(BufReader::new(stdout)), |r| async move {
        let mut r = r?;
        match framing::read(&mut r).await {
            Ok(Some(v)) => Some((Incoming { message: Ok(v) }, Some(r))),
            Ok(None) => None,
            // One error, then the stream ends.
            Err(e) => Some((Incoming { message: Err(e) }, None)),
        }
    });
    let name = name.to_string();
    Ok(LspServer::create(|ctx| {
        ctx.add_stream(frames);
        LspServer {
            span: tracing::info_span!("lsp", server = %name),
            name,
            writer: tx,
            child: Some(child),
            next_id: 0,
            pending: HashMap::new(),
            opened: HashMap::new(),
            diagnostics: HashMap::new(),
            waiters: Vec::new(),
        }
    }))
}

/// Starts `settings`' server for `root` and initializes it.
pub async fn launch(
    name: &str,
    settings: &LspServerSettings,
    root: &Path,
    startup: Duration,
) -> Result<Addr<LspServer>, LspError> {
    let addr = spawn(name, settings, root)?;
    let options = settings.initialization_options.as_ref();
    let params = wire::initialize(&uri_of(root), name, options);
    let asked = addr.send(Request {
        method: "initialize",
        params,
        timeout: startup,
    });
    match asked.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            addr.do_send(StopServer);
            return Err(e);
        }
        Err(_) => return Err(LspError::Exited(name.to_string())),
    }
    addr.do_send(Initialized);
    Ok(addr)
}

impl LspServer {
    fn send(&self, message: &Value) {
        let _ = self.writer.send(framing::encode(message));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(&wire::notification(method, params));
    }

    fn diagnostics_came(&mut self, params: &Value) {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return;
        };
        let list = params
            .get("diagnostics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let entry = self.diagnostics.entry(uri.to_string()).or_default();
        entry.0 += 1;
        entry.1 = list;
        let (n, now) = (entry.0, entry.1.clone());
        let waiting = std::mem::take(&mut self.waiters);
        for (u, after, tx) in waiting {
            if u == uri && n > after {
                let _ = tx.send(now.clone());
            } else {
                self.waiters.push((u, after, tx));
            }
        }
    }
}

impl StreamHandler<Incoming> for LspServer {
    fn handle(&mut self, msg: Incoming, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let v = match msg.message {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "language server broke the protocol; stopping it");
                return ctx.stop();
            }
        };
        let method = v.get("method").and_then(Value::as_str);
        match (v.get("id"), method) {
            // A request of the server's own.
            (Some(id), Some(m)) => {
                let params = v.get("params").cloned().unwrap_or_default();
                self.send(&wire::answer(id, m, &params));
            }
            (Some(id), None) => {
                let Some(reply) = id.as_i64().and_then(|id| self.pending.remove(&id)) else {
                    return;
                };
                let result = match v.get("error") {
                    Some(e) => Err(LspError::Server(
                        e.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("error")
                            .to_string(),
                    )),
                    None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = reply.send(result);
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                self.diagnostics_came(v.get("params").unwrap_or(&Value::Null));
            }
            _ => {}
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        tracing::info!("language server exited");
        ctx.stop();
    }
}

impl Handler<Request> for LspServer {
    type Result = ResponseFuture<Result<Value, LspError>>;
    fn handle(&mut self, msg: Request, _: &mut Context<Self>) -> Self::Result {
        self.next_id += 1;
        let id = self.next_id;
        let (tx, rx) = oneshot::channel();
        self.pending.insert(id, tx);
        self.send(&wire::request(id, msg.method, &msg.params));
        let (writer, method) = (self.writer.clone(), msg.method);
        Box::pin(async move {
            match tokio::time::timeout(msg.timeout, rx).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err(LspError::Exited(String::new())),
                Err(_) => {
                    let cancel = wire::notification("$/cancelRequest", wire::cancel(id));
                    let _ = writer.send(framing::encode(&cancel));
                    Err(LspError::Timeout(method.to_string(), msg.timeout))
                }
            }
        })
    }
}

impl Handler<Initialized> for LspServer {
    type Result = ();
    fn handle(&mut self, _: Initialized, _: &mut Context<Self>) {
        self.notify("initialized", Value::Object(Default::default()));
    }
}

impl Handler<SyncFile> for LspServer {
    type Result = ResponseActFuture<Self, Result<(String, u64), LspError>>;
    fn handle(&mut self, msg: SyncFile, _: &mut Context<Self>) -> Self::Result {
        let path = msg.path.clone();
        let read = async move { tokio::fs::read_to_string(&path).await };
        Box::pin(read.into_actor(self).map(move |text, act, _| {
            let text = text.map_err(|e| LspError::File(format!("{}: {e}", msg.path.display())))?;
            let uri = uri_of(&msg.path);
            let seen = act.diagnostics.get(&uri).map_or(0, |d| d.0);
            match act.opened.get_mut(&uri) {
                Some(version) => {
                    *version += 1;
                    let v = *version;
                    act.notify("textDocument/didChange", wire::did_change(&uri, v, &text));
                }
                None => {
                    act.opened.insert(uri.clone(), 1);
                    act.notify(
                        "textDocument/didOpen",
                        wire::did_open(&uri, &msg.language, 1, &text),
                    );
                }
            }
            Ok((uri, seen))
        }))
    }
}

impl Handler<WaitDiagnostics> for LspServer {
    type Result = ResponseFuture<Vec<Value>>;
    fn handle(&mut self, msg: WaitDiagnostics, _: &mut Context<Self>) -> Self::Result {
        let known = self.diagnostics.get(&msg.uri).cloned().unwrap_or_default();
        if known.0 > msg.after {
            return Box::pin(async move { known.1 });
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.push((msg.uri, msg.after, tx));
        Box::pin(async move {
            match tokio::time::timeout(msg.wait, rx).await {
                Ok(Ok(list)) => list,
                _ => known.1,
            }
        })
    }
}

impl Handler<StopServer> for LspServer {
    type Result = ();
    fn handle(&mut self, _: StopServer, ctx: &mut Context<Self>) {
        self.next_id += 1;
        self.send(&wire::request(self.next_id, "shutdown", &Value::Null));
        self.notify("exit", Value::Null);
        ctx.stop();
    }
}
