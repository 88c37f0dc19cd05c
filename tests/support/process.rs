//! The real `ferroclaw` binary as a child process: a command on a state
//! dir (HOME there too, so nothing reads the developer's), and a gateway
//! started on port 0 that is killed when the test ends however it ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_ferroclaw");

pub fn ferroclaw(state: &std::path::Path) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("OPENCLAW_GATEWAY_TOKEN")
        .env_remove("FERROCLAW_STATE_DIR")
        .env("HOME", state)
        .arg("--state-dir")
        .arg(state);
    c
}

/// A gateway child process, killed when the test ends however it ends,
/// and its address (`host:port`; empty when the test did not read it).
pub struct Gateway(pub Child, pub String);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Gateway {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Gateway {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// SIGKILL (no shutdown of any kind), and the wait for the process to go.
pub fn sigkill(child: &mut Gateway) {
    Command::new("kill")
        .arg("-KILL")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    child.wait().unwrap();
}

/// Starts `ferroclaw gateway --port 0`; returns it, its address and the
/// gateway token it generated in the state dir.
pub fn spawn_gateway(state: &std::path::Path) -> (Gateway, String, String) {
    let mut child = ferroclaw(state)
        .args(["gateway", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("gateway printed its address").unwrap();
        if let Some(rest) = line.split("listening on ws://").nth(1) {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    // The token the gateway generated ("" when the config has one).
    let token = std::fs::read_to_string(state.join("gateway.token"))
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    (Gateway(child, addr.clone()), addr, token)
}

/// A finished command's stdout then stderr, as text (for messages).
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
