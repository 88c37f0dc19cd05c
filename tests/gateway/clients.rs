//! OpenClaw's interactive clients against ferroclaw, driven as a user
//! drives them: `openclaw tui` in a terminal (tmux, keys typed, the screen
//! read back) and `openclaw acp`, the Agent Client Protocol bridge an editor
//! spawns (JSON-RPC over its stdin and stdout).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::interop::openclaw_command;
use crate::support::{admin, TestGateway};

/// The session's transcript, as `chat.history` gives it.
fn history(gw: &TestGateway, key: &str) -> Vec<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = admin(gw).await;
        let h = c.call("chat.history", json!({"sessionKey": key})).await;
        h["payload"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    })
}

/// `cmd` as one shell line: its environment (and nothing else), then the
/// program and its arguments, each quoted.
fn shell_line(cmd: &Command) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec!["exec env -i".to_string()];
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            line.push(quote(&format!(
                "{}={}",
                k.to_string_lossy(),
                v.to_string_lossy()
            )));
        }
    }
    line.push(quote(&cmd.get_program().to_string_lossy()));
    for a in cmd.get_args() {
        line.push(quote(&a.to_string_lossy()));
    }
    line.join(" ")
}

/// A tmux server of its own (its own socket), so tests never touch a
/// user's sessions; killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(width: u16, height: u16, line: &str) -> Tmux {
        let socket = format!(
            "ferroclaw-test-{}-{}",
            std::process::id(),
            ulid::Ulid::generate()
        );
        let t = Tmux { socket };
        let (w, h) = (width.to_string(), height.to_string());
        let ok = t
            .tmux(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, line])
            .status
            .success();
        assert!(
            ok,
            "tmux new-session failed (is tmux installed? tests/run.sh installs it)"
        );
        t
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Types `text` and presses Enter.
    fn type_line(&self, text: &str) {
        assert!(self
            .tmux(&["send-keys", "-t", "t", "-l", text])
            .status
            .success());
        assert!(self
            .tmux(&["send-keys", "-t", "t", "Enter"])
            .status
            .success());
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// Waits until `done` holds for the screen; panics with the screen.
    fn until(&self, what: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if Instant::now() > end {
                panic!("the TUI never showed {what}; its screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The TUI's status line says the agent is idle (not a spinner).
fn idle(screen: &str) -> bool {
    screen
        .lines()
        .any(|l| l.trim().ends_with("connected | idle"))
}

/// Regression: with a model that answers at once (the offline one), 4 of 5
/// TUI turns kept the busy spinner after the reply and queued the next
/// input, because the turn's final reached the TUI in the same socket read
/// as its `chat.send` answer (`src/ws/ack_order.rs`). Every turn must end
/// idle with its reply shown, and the next line must go out.
#[test]
fn openclaw_tui_shows_each_reply_and_goes_idle_after_it() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let cmd = openclaw_command(&gw, home.path(), &["tui", "--session", "main"]);
    let tmux = Tmux::start(120, 40, &shell_line(&cmd));
    tmux.until("its connection", Duration::from_secs(60), |s| {
        s.contains("gateway connected") && idle(s)
    });
    for i in 1..=6 {
        let said = format!("turn number {i}");
        tmux.type_line(&said);
        let reply = format!("You said: {said}");
        tmux.until(
            &format!("`{reply}` and then idle"),
            Duration::from_secs(20),
            |s| s.contains(&reply) && idle(s),
        );
    }
    // The screen is the TUI's; the transcript is the gateway's: six turns.
    let history = history(&gw, "agent:main:main");
    let users = history.iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 6, "{history:?}");
}

/// A JSON-RPC peer on a child's stdin/stdout (one message per line).
struct Rpc {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    next: u64,
}

impl Rpc {
    fn spawn(mut cmd: Command) -> Rpc {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Rpc {
            child,
            lines,
            next: 0,
        }
    }

    /// Calls `method`; returns its result and the notifications before it.
    fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next += 1;
        let id = self.next;
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{req}").unwrap();
        stdin.flush().unwrap();
        let mut notes = Vec::new();
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}; saw {notes:?}"));
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg["id"] == id {
                assert!(msg["error"].is_null(), "{method}: {msg}");
                return (msg["result"].clone(), notes);
            }
            notes.push(msg);
        }
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `openclaw acp` unchanged: an editor's prompt becomes a turn on the
/// gateway, its reply streams back as `agent_message_chunk`s, the prompt
/// ends with `end_turn`, and the turn is in the session's transcript.
#[test]
fn openclaw_acp_bridge_runs_a_prompt_through_the_gateway() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let cmd = openclaw_command(&gw, home.path(), &["acp", "--session", "agent:main:acp"]);
    let mut acp = Rpc::spawn(cmd);
    let (init, _) = acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(init["protocolVersion"], 1, "{init}");
    let (session, _) = acp.call("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    let id = session["sessionId"].as_str().unwrap().to_string();
    let prompt =
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello from an editor"}]});
    let (done, notes) = acp.call("session/prompt", prompt);
    assert_eq!(done["stopReason"], "end_turn", "{done}");
    let streamed: String = notes
        .iter()
        .filter(|n| n["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|n| n["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert!(
        streamed.starts_with("You said:") && streamed.ends_with("hello from an editor"),
        "{streamed:?} from {notes:?}"
    );
    let history = history(&gw, "agent:main:acp");
    let last = history.last().unwrap();
    assert_eq!(last["role"], "assistant", "{history:?}");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("hello from an editor"),
        "{history:?}"
    );
}
