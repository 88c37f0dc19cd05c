//! The fake signal-cli (`fake_signal_cli.py`, a real child process speaking
//! signal-cli's three HTTP endpoints, SSE replay by `Last-Event-ID`
//! included) and what tests do with it: recorded `receive` envelopes (a
//! text, a group message with a mention, an attachment, an edit, a
//! reaction), the JSON-RPC calls the gateway made, scripted faults, dropped
//! streams and garbage on them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const BOT: &str = "+15550009999";
pub const BOT_UUID: &str = "bot-aci-0001";

/// The fake script, as a `cliPath` or to run directly.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_signal_cli.py")
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fake daemon run by the test (an external-native account's).
pub struct FakeSignal {
    pub url: String,
    pub data_dir: PathBuf,
    child: Child,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for FakeSignal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl FakeSignal {
    /// On a free port. A port picked free can be taken before the fake
    /// binds it (the fake then exits: "Address already in use"): another
    /// port is tried.
    pub fn start() -> FakeSignal {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_path_buf();
        for _ in 0..5 {
            if let Some(mut f) = Self::try_start(free_port(), &data) {
                f._dir = Some(dir);
                return f;
            }
        }
        panic!("the fake signal-cli found no free port in 5 tries");
    }

    /// None: the fake exited before it answered (its port was taken).
    fn try_start(port: u16, data: &Path) -> Option<FakeSignal> {
        std::fs::create_dir_all(data.join("attachments")).unwrap();
        let child = Command::new("python3")
            .arg(script())
            .args([
                "--config",
                data.to_str().unwrap(),
                "-a",
                BOT,
                "daemon",
                "--http",
            ])
            .arg(format!("127.0.0.1:{port}"))
            .env("FAKE_SIGNAL_KEEPALIVE", "1")
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs the fake signal-cli");
        let url = format!("http://127.0.0.1:{port}");
        let mut f = FakeSignal {
            url,
            data_dir: data.to_path_buf(),
            child,
            _dir: None,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if super::http_blocking(&f.url, "GET", "/api/v1/check", &[], "")
                .is_some_and(|r| r.0 == 200)
            {
                return Some(f);
            }
            if f.child.try_wait().ok().flatten().is_some() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the fake signal-cli at {} never answered", f.url);
    }
}

/// A JSON POST from code that is not async (the crash test's pushes); the
/// answer's body.
pub fn post_sync(url: &str, path: &str, body: &str) -> String {
    let json = [("Content-Type", "application/json")];
    let (_, answer) =
        super::http_blocking(url, "POST", path, &json, body).expect("the fake answers");
    answer
}

/// The calls the fake recorded, from code that is not async (empty when
/// it does not answer).
pub fn calls_sync(url: &str) -> Vec<Value> {
    super::http_blocking(url, "GET", "/fake/calls", &[], "")
        .and_then(|(_, body)| serde_json::from_str(&body).ok())
        .unwrap_or_default()
}

async fn get(url: String) -> Option<Value> {
    let r = reqwest::get(url).await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    Some(r.json().await.unwrap_or(Value::Null))
}

async fn post(url: String, body: reqwest::Body) -> Value {
    let r = reqwest::Client::new()
        .post(url)
        .body(body)
        .send()
        .await
        .unwrap();
    r.json().await.unwrap_or(Value::Null)
}

/// An event the fake pushed.
pub struct Injected {
    pub id: String,
    pub at: f64,
}

/// What a test does with a daemon at `url` (the test's or the gateway's).
#[allow(async_fn_in_trait)]
pub trait Drive {
    fn url(&self) -> String;

    /// A `receive` event with `envelope`: its event id, and when the fake
    /// pushed it (its monotonic clock, s).
    async fn inject(&self, envelope: Value) -> Injected {
        let v = post(
            format!("{}/fake/inject", self.url()),
            envelope.to_string().into(),
        )
        .await;
        Injected {
            id: v["id"].as_str().unwrap().to_string(),
            at: v["at"].as_f64().unwrap(),
        }
    }

    /// Raw bytes on every open stream.
    async fn raw(&self, text: &str) {
        post(format!("{}/fake/raw", self.url()), text.to_string().into()).await;
    }

    async fn drop_streams(&self) {
        post(format!("{}/fake/drop", self.url()), "{}".into()).await;
    }

    /// The next call (of `method`, when it names one) fails as `fault` says:
    /// `{"error": {"code", "message"}}`, `{"status": 500}` or `{"noAnswer": true}`.
    async fn fault(&self, fault: Value) {
        post(
            format!("{}/fake/fault", self.url()),
            fault.to_string().into(),
        )
        .await;
    }

    async fn calls(&self) -> Vec<Value> {
        get(format!("{}/fake/calls", self.url()))
            .await
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    async fn stats(&self) -> Option<Value> {
        get(format!("{}/fake/stats", self.url())).await
    }

    /// The texts `send` delivered to `chat` (a number or `group:<id>`).
    async fn sent_to(&self, chat: &str) -> Vec<Value> {
        self.calls()
            .await
            .into_iter()
            .filter(|c| c["method"] == "send" && c.get("result").is_some())
            .filter(|c| match chat.strip_prefix("group:") {
                Some(g) => c["params"]["groupId"] == g,
                None => c["params"]["recipient"][0] == chat,
            })
            .collect()
    }

    /// Waits (at most `within`) until `chat` got `n` texts starting with `starts`.
    async fn until_sent(&self, within: Duration, chat: &str, starts: &str, n: usize) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let got = self
                .sent_to(chat)
                .await
                .iter()
                .filter(|c| {
                    c["params"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with(starts)
                })
                .count();
            if got >= n || Instant::now() > deadline {
                return got == n;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drive for FakeSignal {
    fn url(&self) -> String {
        self.url.clone()
    }
}

impl Drive for String {
    fn url(&self) -> String {
        self.clone()
    }
}

/// A config with one external-native account at `url`.
pub fn config(url: &str, extra: Value) -> Value {
    let mut s = json!({
        "account": BOT,
        "accountUuid": BOT_UUID,
        "transport": { "kind": "external-native", "url": url },
        "dmPolicy": "allowlist",
        "allowFrom": ["+15551230001", "+15551230002"],
    });
    ferroclaw::config::merge_patch(&mut s, &extra);
    json!({ "channels": { "signal": s } })
}

/// A direct text from `from` with Signal's id `ts` (the sender's clock),
/// received by Signal's server now.
pub fn text(from: &str, ts: u64, body: &str) -> Value {
    text_received(from, ts, body, super::unix_ms())
}

/// A direct text Signal's server received at `now` (unix ms).
pub fn text_received(from: &str, ts: u64, body: &str, now: u64) -> Value {
    json!({ "source": from, "sourceNumber": from, "sourceUuid": format!("aci-{from}"),
        "sourceName": "Sender", "sourceDevice": 1, "timestamp": ts,
        "serverReceivedTimestamp": now, "serverDeliveredTimestamp": now + 1,
        "dataMessage": { "timestamp": ts, "message": body, "expiresInSeconds": 0,
            "viewOnce": false, "mentions": [], "attachments": [], "contacts": [] } })
}

/// A group message from `from` in `group`, @mentioning the bot or not.
pub fn group_text(from: &str, group: &str, ts: u64, body: &str, mention: bool) -> Value {
    let mut e = text(from, ts, body);
    e["dataMessage"]["groupInfo"] =
        json!({ "groupId": group, "groupName": "Team", "type": "DELIVER" });
    if mention {
        e["dataMessage"]["message"] = json!(format!("\u{fffc} {body}"));
        e["dataMessage"]["mentions"] =
            json!([{ "name": BOT, "number": BOT, "uuid": BOT_UUID, "start": 0, "length": 1 }]);
    }
    e
}
