//! A real Matrix homeserver for the tests: Synapse (`matrix-synapse` from
//! PyPI, installed by `tests/matrix/setup.sh` into `tests/matrix/.venv`),
//! one per test binary run, on loopback with SQLite, the client API only
//! (no federation listener, no key servers) and rate limits raised for
//! tests. It is started on first use from a thread that lives as long as
//! the test binary, with the parent-death signal set, so it goes when the
//! binary does. Users are registered with its shared secret
//! (`register_new_matrix_user`, Synapse's own tool) and log in with a
//! password; `Human` is such a user talking through the Client-Server API.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const SERVER: &str = "localhost";
const SECRET: &str = "ferroclaw-test-shared-secret";

pub struct Synapse {
    pub url: String,
    dir: PathBuf,
}

fn venv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/matrix/.venv/bin")
}

fn config(dir: &Path, port: u16) -> String {
    let d = dir.display();
    let limit = "{ per_second: 10000, burst_count: 10000 }";
    format!(
        r#"server_name: "{SERVER}"
pid_file: {d}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {d}/homeserver.db
log_config: {d}/log.yaml
media_store_path: {d}/media_store
registration_shared_secret: "{SECRET}"
report_stats: false
macaroon_secret_key: "macaroon-{SECRET}"
form_secret: "form-{SECRET}"
signing_key_path: {d}/signing.key
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []
enable_registration: false
url_preview_enabled: false
presence:
  enabled: false
rc_message: {limit}
rc_registration: {limit}
rc_login:
  address: {limit}
  account: {limit}
  failed_attempts: {limit}
rc_joins:
  local: {limit}
  remote: {limit}
rc_joins_per_room: {limit}
rc_invites:
  per_room: {limit}
  per_user: {limit}
  per_issuer: {limit}
rc_3pid_validation: {limit}
rc_admin_redaction: {limit}
rc_room_creation: {limit}
rc_presence:
  per_user: {limit}
rc_delayed_event_mgmt: {limit}
"#
    )
}

const LOG: &str = "version: 1
formatters:
  plain:
    format: '%(asctime)s %(levelname)s %(name)s %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: plain
    filename: LOGFILE
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn versions_ok(url: &str) -> bool {
    super::http_blocking(url, "GET", "/_matrix/client/versions", &[], "")
        .is_some_and(|r| r.0 == 200)
}

/// The homeserver's directory lives as long as its test binary (a static
/// is never dropped): the directories of earlier runs whose process is
/// gone are removed here instead.
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("ferroclaw-synapse-") else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn start() -> Synapse {
    let python = venv().join("python");
    assert!(
        python.exists(),
        "Synapse is not installed: run bash tests/matrix/setup.sh"
    );
    remove_stale_dirs();
    let dir = std::env::temp_dir().join(format!("ferroclaw-synapse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let cfg = dir.join("hs.yaml");
    std::fs::write(&cfg, config(&dir, port)).unwrap();
    let log = dir.join("homeserver.log");
    std::fs::write(
        dir.join("log.yaml"),
        LOG.replace("LOGFILE", &log.display().to_string()),
    )
    .unwrap();
    let keys = Command::new(&python)
        .args(["-m", "synapse.app.homeserver", "--generate-keys", "-c"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(keys.success(), "synapse --generate-keys");
    let (py, c) = (python.clone(), cfg.clone());
    // The spawning thread lives as long as the binary: the parent-death
    // signal (tied to it) fires only when the test binary ends.
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(py);
        cmd.args(["-m", "synapse.app.homeserver", "-c"])
            .arg(c)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("synapse starts");
        let _ = child.wait();
        loop {
            std::thread::park();
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(90);
    while !versions_ok(&url) {
        assert!(
            Instant::now() < deadline,
            "synapse never answered: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Synapse { url, dir }
}

/// The homeserver of this test binary run (started on first use).
pub fn synapse() -> &'static Synapse {
    static S: OnceLock<Synapse> = OnceLock::new();
    S.get_or_init(start)
}

/// A user name no other test of this run uses.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}{}", N.fetch_add(1, Ordering::Relaxed))
}

impl Synapse {
    /// Registers `name` with the shared secret; its user id.
    pub fn register(&self, name: &str, password: &str) -> String {
        let out = Command::new(venv().join("register_new_matrix_user"))
            .args(["-u", name, "-p", password, "--no-admin", "-c"])
            .arg(self.dir.join("hs.yaml"))
            .arg(&self.url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "register {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        format!("@{name}:{SERVER}")
    }

    /// A registered user, logged in.
    pub async fn human(&self, name: &str) -> Human {
        let user_id = self.register(name, "pass-0123456789");
        let token = login(&self.url, &user_id, "pass-0123456789").await;
        Human {
            url: self.url.clone(),
            user_id,
            token,
            http: reqwest::Client::new(),
        }
    }
}

pub async fn login(url: &str, user_id: &str, password: &str) -> String {
    let v: Value = reqwest::Client::new()
        .post(format!("{url}/_matrix/client/v3/login"))
        .json(&json!({ "type": "m.login.password",
            "identifier": { "type": "m.id.user", "user": user_id }, "password": password }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["access_token"].as_str().expect("a token").to_string()
}

/// A person on the homeserver.
pub struct Human {
    pub url: String,
    pub user_id: String,
    pub token: String,
    http: reqwest::Client,
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Human {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self
            .http
            .request(method, format!("{}/_matrix/client/v3{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    /// A direct chat with `bot` (invited).
    pub async fn dm(&self, bot: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/createRoom",
                Some(
                    json!({ "preset": "trusted_private_chat", "is_direct": true, "invite": [bot] }),
                ),
            )
            .await;
        v["room_id"].as_str().unwrap().to_string()
    }

    /// A room named `name` with `bot` invited.
    pub async fn room(&self, name: &str, invite: &[&str]) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/createRoom",
                Some(json!({ "preset": "private_chat", "name": name, "invite": invite })),
            )
            .await;
        v["room_id"].as_str().unwrap().to_string()
    }

    pub async fn join(&self, room: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/join/{}", enc(room)),
            Some(json!({})),
        )
        .await;
    }

    /// Sends `content` as an `m.room.message`; its event id.
    pub async fn send(&self, room: &str, txn: &str, content: Value) -> String {
        let path = format!("/rooms/{}/send/m.room.message/{}", enc(room), enc(txn));
        let v = self.call(reqwest::Method::PUT, &path, Some(content)).await;
        v["event_id"].as_str().unwrap().to_string()
    }

    pub async fn say(&self, room: &str, txn: &str, text: &str) -> String {
        self.send(room, txn, json!({ "msgtype": "m.text", "body": text }))
            .await
    }

    /// `say` over a plain socket (for code that is not async: the crash
    /// test's pushes); the event id.
    pub fn say_sync(&self, room: &str, txn: &str, text: &str) -> String {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            enc(room),
            enc(txn)
        );
        let body = json!({ "msgtype": "m.text", "body": text }).to_string();
        let auth = format!("Bearer {}", self.token);
        let headers = [
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ];
        let (status, answer) = super::http_blocking(&self.url, "PUT", &path, &headers, &body)
            .expect("synapse answers");
        assert_eq!(status, 200, "{answer}");
        let v: Value = serde_json::from_str(&answer).unwrap();
        v["event_id"].as_str().expect("sent").to_string()
    }

    /// Uploads a file to the media repository: its `mxc://` URL.
    pub async fn upload(&self, bytes: Vec<u8>, content_type: &str, name: &str) -> String {
        let r = self
            .http
            .post(format!(
                "{}/_matrix/media/v3/upload?filename={}",
                self.url,
                enc(name)
            ))
            .bearer_auth(&self.token)
            .header("Content-Type", content_type)
            .body(bytes)
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        v["content_uri"].as_str().expect("uploaded").to_string()
    }

    /// An `mxc://` file's bytes (the authenticated media API).
    pub async fn download(&self, mxc: &str) -> Vec<u8> {
        let rest = mxc.trim_start_matches("mxc://");
        let url = format!("{}/_matrix/client/v1/media/download/{rest}", self.url);
        let r = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "download {mxc}: {}", r.status());
        r.bytes().await.unwrap().to_vec()
    }

    /// The room's timeline as the homeserver keeps it (oldest first), at
    /// most `limit` events.
    pub async fn timeline(&self, room: &str, limit: usize) -> Vec<Value> {
        let path = format!("/rooms/{}/messages?dir=b&limit={limit}", enc(room));
        let v = self.call(reqwest::Method::GET, &path, None).await;
        let mut events = v["chunk"].as_array().cloned().unwrap_or_default();
        events.reverse();
        events
    }

    /// The `m.room.message` events `sender` sent (edits included), oldest first.
    pub async fn messages_from(&self, room: &str, sender: &str) -> Vec<Value> {
        self.timeline(room, 1000)
            .await
            .into_iter()
            .filter(|e| e["type"] == "m.room.message" && e["sender"] == sender)
            .collect()
    }

    /// The event `user`'s read receipt is on in `room`, as this person's
    /// sync shows it.
    pub async fn read_by(&self, room: &str, user: &str) -> Option<String> {
        let filter = json!({ "room": { "rooms": [room], "timeline": { "limit": 1 },
            "ephemeral": { "types": ["m.receipt"] } } });
        let path = format!("/sync?filter={}", enc(&filter.to_string()));
        let v = self.call(reqwest::Method::GET, &path, None).await;
        let events = v["rooms"]["join"][room]["ephemeral"]["events"]
            .as_array()?
            .clone();
        events
            .iter()
            .filter(|e| e["type"] == "m.receipt")
            .filter_map(|e| e["content"].as_object())
            .flat_map(|c| c.iter())
            .find(|(_, r)| r["m.read"].get(user).is_some())
            .map(|(id, _)| id.clone())
    }

    /// The id of the last message `sender` sent in `room`.
    pub async fn last_from(&self, room: &str, sender: &str) -> Option<String> {
        let last = self.messages_from(room, sender).await.pop()?;
        last["event_id"].as_str().map(str::to_string)
    }

    /// Whether `user` has joined `room`.
    pub async fn joined(&self, room: &str, user: &str) -> bool {
        let path = format!("/rooms/{}/joined_members", enc(room));
        let v = self.call(reqwest::Method::GET, &path, None).await;
        v["joined"].get(user).is_some()
    }
}

/// A proxy in front of the homeserver that loses the answer to the next
/// message send once armed: the send reaches Synapse (the event exists),
/// the answer comes only after the client gave up, as on a network that
/// dropped it. Everything else passes through.
pub struct LossyProxy {
    pub url: String,
    state: std::sync::Arc<ProxyState>,
    _served: super::fake_server::Served,
}

struct ProxyState {
    upstream: String,
    armed: std::sync::atomic::AtomicBool,
    /// The txnIds of the message sends seen, in order.
    sends: std::sync::Mutex<Vec<String>>,
    /// Every request, as `METHOD path`, in order.
    requests: std::sync::Mutex<Vec<String>>,
    hold: Duration,
}

async fn forward(
    req: actix_web::HttpRequest,
    body: actix_web::web::Bytes,
    state: actix_web::web::Data<ProxyState>,
) -> actix_web::HttpResponse {
    use std::sync::atomic::Ordering;
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .to_string();
    let send =
        req.method() == actix_web::http::Method::PUT && path.contains("/send/m.room.message/");
    let line = format!("{} {path}", req.method());
    state.requests.lock().unwrap().push(line);
    if send {
        let txn = path.rsplit('/').next().unwrap_or("").to_string();
        state.sends.lock().unwrap().push(txn);
    }
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).unwrap();
    let mut up = reqwest::Client::new().request(method, format!("{}{path}", state.upstream));
    for h in ["authorization", "content-type"] {
        if let Some(v) = req.headers().get(h) {
            up = up.header(h, v.as_bytes());
        }
    }
    let Ok(r) = up.body(body.to_vec()).send().await else {
        return actix_web::HttpResponse::BadGateway().finish();
    };
    let status = r.status().as_u16();
    let bytes = r.bytes().await.unwrap_or_default();
    if send && state.armed.swap(false, Ordering::SeqCst) {
        tokio::time::sleep(state.hold).await;
    }
    actix_web::HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .content_type("application/json")
        .body(bytes)
}

impl LossyProxy {
    /// `hold`: how long the lost answer is held (past the client's limit).
    pub fn start(upstream: &str, hold: Duration) -> LossyProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = std::sync::Arc::new(ProxyState {
            upstream: upstream.to_string(),
            armed: std::sync::atomic::AtomicBool::new(false),
            sends: std::sync::Mutex::new(Vec::new()),
            requests: std::sync::Mutex::new(Vec::new()),
            hold,
        });
        let served =
            super::fake_server::serve::<ProxyState, super::fake_server::NoSocket<ProxyState>, _>(
                listener,
                state.clone(),
                |cfg| {
                    cfg.default_service(actix_web::web::to(forward));
                },
                None,
            );
        LossyProxy {
            url,
            state,
            _served: served,
        }
    }

    pub fn arm(&self) {
        self.state
            .armed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn sends(&self) -> Vec<String> {
        self.state.sends.lock().unwrap().clone()
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}
