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

/// The deadline a test gives a CLI child that should end on its own.
pub const CHILD_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// `Command::output` and `Command::status`, at most `limit` long
/// ([`output_within`]).
pub trait Within {
    fn within(&mut self, limit: std::time::Duration) -> std::process::Output;
    fn status_within(&mut self, limit: std::time::Duration) -> std::process::ExitStatus;
}

impl Within for Command {
    fn within(&mut self, limit: std::time::Duration) -> std::process::Output {
        output_within(self, limit)
    }

    fn status_within(&mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let name = format!(
            "{:?} {:?}",
            self.get_program(),
            self.get_args().collect::<Vec<_>>()
        );
        let mut child = self
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        child.wait_within(limit)
    }
}

/// A started child's end, at most `limit` away: one still running then is
/// killed by its PID and the test fails, never hangs the suite.
pub trait WaitWithin {
    fn wait_within(&mut self, limit: std::time::Duration) -> std::process::ExitStatus;
    /// `wait_with_output` within `limit` (stdout and stderr piped).
    fn output_within(self, limit: std::time::Duration) -> std::process::Output;
}

impl WaitWithin for Child {
    fn wait_within(&mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let end = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.try_wait().unwrap() {
                return status;
            }
            if std::time::Instant::now() > end {
                let pid = self.id();
                let _ = self.kill();
                let _ = self.wait();
                panic!("a child still ran after {limit:?}: killed (pid {pid})");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn output_within(self, limit: std::time::Duration) -> std::process::Output {
        finish_within(self, limit, "a child")
    }
}

/// Runs `cmd` to its end, at most `limit`: a child still running then
/// (a hung CLI, a deadlock at exit under load) is killed by its PID and the
/// test fails with what it printed, never hangs the suite.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    let name = format!(
        "{:?} {:?}",
        cmd.get_program(),
        cmd.get_args().collect::<Vec<_>>()
    );
    finish_within(child, limit, &name)
}

/// Reads a started child's piped stdout and stderr to its end, at most
/// `limit` (then: killed by PID, the test fails with what it printed).
fn finish_within(mut child: Child, limit: std::time::Duration, name: &str) -> std::process::Output {
    use std::io::Read;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let end = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{name} still ran after {limit:?}: killed (pid {})\nstdout: {}\nstderr: {}",
                child.id(),
                String::from_utf8_lossy(&out.join().unwrap_or_default()),
                String::from_utf8_lossy(&err.join().unwrap_or_default()),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}
