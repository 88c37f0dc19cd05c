//! A fake WhatsApp Business Cloud API at the wire boundary, behaving like
//! Meta's: the Graph API (`GET /{version}/{phone-number-id}`, `POST
//! .../messages` for texts, templates, media, reactions and read receipts,
//! `POST .../media` uploads as multipart, `GET /{version}/{media-id}` and
//! the file behind it), bearer-checked (a wrong token is error 190), with
//! Meta's error bodies for what a test scripts (a throughput limit
//! 130429, a pair rate limit 131056, a 429) and a customer whose 24-hour
//! window is closed (free text refused with 131047, templates taken).
//! And Meta's webhook sender: bodies signed with the app secret
//! (`X-Hub-Signature-256`), posted to the gateway, and posted again while
//! the answer is not 2xx, as Meta retries.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::fake_server::{multipart, serve, NoSocket, Served};

pub const PHONE_ID: &str = "106540352242922";
pub const ACCESS_TOKEN: &str = "EAAG-test-token";
pub const APP_SECRET: &str = "app-secret-0123";
pub const VERIFY_TOKEN: &str = "verify-me-0123";
pub const VERSION: &str = "v21.0";

/// One `POST .../messages` the business sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub to: String,
    /// `text`, `template`, `image`, `document`, `reaction`, or `read`.
    pub kind: String,
    pub text: String,
    /// The message it quotes (`context.message_id`) or reacts to.
    pub about: Option<String>,
    pub body: Value,
    /// The wamid it was given (empty when refused or a read receipt).
    pub id: String,
    pub at: Instant,
}

/// A scripted failure of the next `POST .../messages`.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub status: u16,
    pub code: i64,
}

#[derive(Default)]
struct Inner {
    sent: Vec<Sent>,
    refused: Vec<(String, i64)>,
    faults: VecDeque<Fault>,
    closed: HashSet<String>,
    next_id: u64,
    media: HashMap<String, (Vec<u8>, String)>,
    uploads: Vec<(String, String, Vec<u8>)>,
    downloads: Vec<String>,
}

struct State {
    inner: Mutex<Inner>,
    base: String,
}

pub struct FakeWhatsApp {
    pub base: String,
    state: Arc<State>,
    _served: Served,
}

fn graph_error(status: u16, code: i64, message: &str) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).json(json!({
        "error": { "message": message, "type": "OAuthException", "code": code,
            "error_data": { "messaging_product": "whatsapp", "details": message },
            "fbtrace_id": "AbCdEf" } }))
}

fn authorized(req: &HttpRequest) -> bool {
    req.headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {ACCESS_TOKEN}"))
}

impl FakeWhatsApp {
    pub fn start() -> FakeWhatsApp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            inner: Mutex::new(Inner::default()),
            base: base.clone(),
        });
        let served = serve::<State, NoSocket<State>, _>(
            listener,
            state.clone(),
            |cfg| {
                cfg.route("/{v}/{pid}/messages", web::post().to(messages));
                cfg.route("/{v}/{pid}/media", web::post().to(upload));
                cfg.route("/files/{id}", web::get().to(file));
                cfg.route("/{v}/{id}", web::get().to(node));
            },
            None,
        );
        FakeWhatsApp {
            base,
            state,
            _served: served,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.state.inner.lock().unwrap())
    }

    /// Every `POST .../messages` that was taken, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.with(|i| i.sent.clone())
    }

    /// What was sent to `to` of kind `kind`.
    pub fn sent_to(&self, to: &str, kind: &str) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.to == to && s.kind == kind)
            .collect()
    }

    /// Messages refused: (to, Meta's code).
    pub fn refused(&self) -> Vec<(String, i64)> {
        self.with(|i| i.refused.clone())
    }

    /// The next sends fail so, in order.
    pub fn fault(&self, f: Fault) {
        self.with(|i| i.faults.push_back(f));
    }

    /// `number`'s 24-hour window is closed: free text is refused.
    pub fn close_window(&self, number: &str) {
        self.with(|i| i.closed.insert(number.to_string()));
    }

    /// A file a customer sent, by media id.
    pub fn add_media(&self, id: &str, bytes: Vec<u8>, mime: &str) {
        self.with(|i| i.media.insert(id.to_string(), (bytes, mime.to_string())));
    }

    /// Files the business uploaded: (name, type, bytes).
    pub fn uploads(&self) -> Vec<(String, String, Vec<u8>)> {
        self.with(|i| i.uploads.clone())
    }

    /// Media ids whose bytes were downloaded.
    pub fn downloads(&self) -> Vec<String> {
        self.with(|i| i.downloads.clone())
    }

    pub async fn until(&self, limit: Duration, mut f: impl FnMut(&FakeWhatsApp) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if f(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        f(self)
    }
}

async fn node(
    state: web::Data<State>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> HttpResponse {
    if !authorized(&req) {
        return graph_error(401, 190, "Error validating access token");
    }
    let id = path.into_inner().1;
    if id == PHONE_ID {
        return HttpResponse::Ok().json(json!({ "display_phone_number": "+1 555-000-1111",
            "verified_name": "Ferro Test", "id": PHONE_ID }));
    }
    let found = state.inner.lock().unwrap().media.get(&id).cloned();
    match found {
        Some((bytes, mime)) => HttpResponse::Ok().json(json!({ "messaging_product": "whatsapp",
            "url": format!("{}/files/{id}", state.base), "mime_type": mime,
            "sha256": "x", "file_size": bytes.len(), "id": id })),
        None => graph_error(400, 100, "Unsupported get request"),
    }
}

async fn file(state: web::Data<State>, req: HttpRequest, id: web::Path<String>) -> HttpResponse {
    if !authorized(&req) {
        return HttpResponse::Unauthorized().finish();
    }
    let mut i = state.inner.lock().unwrap();
    let Some((bytes, mime)) = i.media.get(id.as_str()).cloned() else {
        return HttpResponse::NotFound().finish();
    };
    i.downloads.push(id.into_inner());
    HttpResponse::Ok().content_type(mime).body(bytes)
}

async fn upload(state: web::Data<State>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    if !authorized(&req) {
        return graph_error(401, 190, "Error validating access token");
    }
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(parts) = multipart(ct, &body) else {
        return graph_error(400, 100, "not multipart");
    };
    let Some(file) = parts.iter().find(|p| p.name == "file") else {
        return graph_error(400, 100, "no file part");
    };
    let mut i = state.inner.lock().unwrap();
    i.next_id += 1;
    let id = format!("UPLOAD{}", i.next_id);
    let name = file.filename.clone().unwrap_or_default();
    let mime = file.content_type.clone().unwrap_or_default();
    i.uploads.push((name, mime, file.data.clone()));
    HttpResponse::Ok().json(json!({ "id": id }))
}

async fn messages(
    state: web::Data<State>,
    req: HttpRequest,
    body: web::Json<Value>,
) -> HttpResponse {
    if !authorized(&req) {
        return graph_error(401, 190, "Error validating access token");
    }
    let b = body.into_inner();
    let mut i = state.inner.lock().unwrap();
    let read = b["status"] == "read";
    let to = b["to"].as_str().unwrap_or("").to_string();
    let kind = if read {
        "read".to_string()
    } else {
        b["type"].as_str().unwrap_or("text").to_string()
    };
    if !read {
        if let Some(f) = i.faults.pop_front() {
            i.refused.push((to, f.code));
            return graph_error(f.status, f.code, "scripted");
        }
        if kind == "text" && i.closed.contains(&to) {
            i.refused.push((to, 131047));
            return graph_error(400, 131047, "Re-engagement message");
        }
    }
    let text = match kind.as_str() {
        "text" => b["text"]["body"].as_str().unwrap_or("").to_string(),
        "template" => b["template"]["name"].as_str().unwrap_or("").to_string(),
        "reaction" => b["reaction"]["emoji"].as_str().unwrap_or("").to_string(),
        k => b[k]["caption"].as_str().unwrap_or("").to_string(),
    };
    let about = b["context"]["message_id"]
        .as_str()
        .or(b["reaction"]["message_id"].as_str())
        .or(b["message_id"].as_str())
        .map(str::to_string);
    let id = if read {
        String::new()
    } else {
        i.next_id += 1;
        format!("wamid.OUT{}", i.next_id)
    };
    i.sent.push(Sent {
        to: to.clone(),
        kind,
        text,
        about,
        body: b,
        id: id.clone(),
        at: Instant::now(),
    });
    if read {
        return HttpResponse::Ok().json(json!({ "success": true }));
    }
    HttpResponse::Ok().json(json!({ "messaging_product": "whatsapp",
        "contacts": [{ "input": to, "wa_id": to }], "messages": [{ "id": id }] }))
}

/// The `channels.whatsapp` section for a gateway talking to `fake`.
pub fn config(fake: &FakeWhatsApp, extra: Value) -> Value {
    let mut wa = json!({
        "mode": "cloud",
        "phoneNumberId": PHONE_ID,
        "accessToken": ACCESS_TOKEN,
        "appSecret": APP_SECRET,
        "verifyToken": VERIFY_TOKEN,
        "apiBaseUrl": fake.base,
        "apiVersion": VERSION,
        "dmPolicy": "allowlist",
        "allowFrom": ["+15551230001", "+15551230002"],
    });
    ferroclaw::config::merge_patch(&mut wa, &extra);
    json!({ "channels": { "whatsapp": wa } })
}

/// A webhook body carrying one text from `from` (`wamid.<id>`), sent now.
pub fn text_body(from: &str, id: &str, text: &str) -> Value {
    text_body_at(from, id, text, super::unix_s())
}

/// A webhook body carrying one text from `from` sent at `unix_s`.
pub fn text_body_at(from: &str, id: &str, text: &str, unix_s: i64) -> Value {
    value_body(json!({
        "contacts": [{ "profile": { "name": "Customer" }, "wa_id": from }],
        "messages": [{ "from": from, "id": format!("wamid.{id}"), "timestamp": unix_s.to_string(),
            "type": "text", "text": { "body": text } }],
    }))
}

/// A webhook body with these statuses of sent messages.
pub fn status_body(statuses: Value) -> Value {
    value_body(json!({ "statuses": statuses }))
}

/// A webhook body around a change's `value` (for the fake's number).
pub fn value_body(mut value: Value) -> Value {
    value["messaging_product"] = json!("whatsapp");
    value["metadata"] =
        json!({ "display_phone_number": "15550001111", "phone_number_id": PHONE_ID });
    json!({ "object": "whatsapp_business_account", "entry": [{ "id": "WABA1",
        "changes": [{ "field": "messages", "value": value }] }] })
}

/// Meta's webhook sender: posts `body` signed to the gateway's path once.
/// Returns the status.
pub async fn post_signed(gateway: &str, body: &[u8], signature: Option<String>) -> u16 {
    let mut r = reqwest::Client::new()
        .post(format!("{gateway}/whatsapp/webhook"))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(s) = signature {
        r = r.header("x-hub-signature-256", s);
    }
    r.send().await.map(|r| r.status().as_u16()).unwrap_or(0)
}

/// As Meta does: signs `body` with the app secret and posts it until the
/// answer is 2xx (at most `tries`, 100 ms apart). Returns each status.
pub async fn deliver(gateway: &str, body: &Value, tries: usize) -> Vec<u16> {
    let bytes = serde_json::to_vec(body).unwrap();
    let sig = ferroclaw_actors::channels::whatsapp::signature::sign(APP_SECRET, &bytes);
    let mut statuses = Vec::new();
    for _ in 0..tries {
        let s = post_signed(gateway, &bytes, Some(sig.clone())).await;
        statuses.push(s);
        if (200..300).contains(&s) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    statuses
}

/// Meta's webhook sender as a background task: bodies handed to it are
/// signed and posted to the gateway's current address, each again 100 ms
/// later while the answer is not 2xx (the gateway may be down), in order.
pub struct Sender {
    queue: Arc<Mutex<VecDeque<Vec<u8>>>>,
    gateway: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sender {
    pub fn start(gateway: &str) -> Sender {
        let queue: Arc<Mutex<VecDeque<Vec<u8>>>> = Arc::default();
        let gateway = Arc::new(Mutex::new(gateway.to_string()));
        let (q, g) = (queue.clone(), gateway.clone());
        let task = tokio::spawn(async move {
            loop {
                let next = q.lock().unwrap().front().cloned();
                let Some(body) = next else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let url = g.lock().unwrap().clone();
                let sig = ferroclaw_actors::channels::whatsapp::signature::sign(APP_SECRET, &body);
                let status = post_signed(&url, &body, Some(sig)).await;
                if (200..300).contains(&status) {
                    q.lock().unwrap().pop_front();
                } else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Sender {
            queue,
            gateway,
            task,
        }
    }

    pub fn send(&self, body: &Value) {
        self.queue
            .lock()
            .unwrap()
            .push_back(serde_json::to_vec(body).unwrap());
    }

    /// The gateway moved (a restart on a new port).
    pub fn retarget(&self, gateway: &str) {
        *self.gateway.lock().unwrap() = gateway.to_string();
    }

    /// Bodies not yet answered 2xx.
    pub fn unanswered(&self) -> usize {
        self.queue.lock().unwrap().len()
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.task.abort();
    }
}
