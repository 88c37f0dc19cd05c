//! OpenClaw's interactive clients against ferroclaw, driven as a user
//! drives them: `openclaw tui` in a terminal (tmux, keys typed, the screen
//! read back) and `openclaw acp`, the Agent Client Protocol bridge an editor
//! spawns (JSON-RPC over its stdin and stdout).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::tmux::{shell_line, Tmux};

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
