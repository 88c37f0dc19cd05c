//! The `ferroclaw` binary's client commands against a gateway started by
//! the test: exit codes and output of health, status, agent, sessions and
//! config, and one-line errors for a wrong token, an unreachable gateway
//! and bad flags.

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{TestGateway, TOKEN};

const BIN: &str = env!("CARGO_BIN_EXE_ferroclaw");

async fn run(gw: Option<&TestGateway>, args: &[&str]) -> Output {
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args)
        .arg("--state-dir")
        .arg(empty.path())
        .env_remove("OPENCLAW_GATEWAY_TOKEN");
    if let Some(gw) = gw {
        cmd.args(["--url", &gw.ws_url(), "--token", TOKEN]);
    }
    let out = tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT));
    let out = out.await.unwrap();
    drop(empty);
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[tokio::test]
async fn client_commands_work_against_a_running_gateway() {
    let gw = TestGateway::start();
    let g = Some(&gw);
    let o = run(g, &["health"]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("gateway healthy"), "{}", stdout(&o));
    let o = run(g, &["health", "--json"]).await;
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(h["ok"], true);

    let o = run(g, &["agent", "--message", "hello cli"]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "You said: hello cli\n");
    let o = run(
        g,
        &[
            "agent",
            "-m",
            "@tokens 3",
            "--session",
            "work",
            "--thinking",
            "low",
            "--json",
        ],
    )
    .await;
    let fin: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(fin["state"], "final");
    assert_eq!(fin["sessionKey"], "agent:main:work");

    let o = run(g, &["status"]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("sessions: 2"), "{}", stdout(&o));

    let o = run(g, &["sessions", "list"]).await;
    assert!(
        stdout(&o).contains("agent:main:main") && stdout(&o).contains("agent:main:work"),
        "{}",
        stdout(&o)
    );
    // When, as a person reads it (not epoch milliseconds).
    assert!(
        stdout(&o)
            .lines()
            .all(|l| l.split("  ").nth(1).is_some_and(|t| t.ends_with("s ago"))),
        "{}",
        stdout(&o)
    );
    let o = run(g, &["sessions", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list["count"], 2);
    let o = run(g, &["sessions", "show", "main"]).await;
    assert_eq!(
        stdout(&o),
        "user: hello cli\nassistant: You said: hello cli\n"
    );
    let o = run(g, &["sessions", "reset", "main"]).await;
    assert_eq!(stdout(&o), "session main reset\n");
    assert_eq!(stdout(&run(g, &["sessions", "show", "main"]).await), "");
    let o = run(g, &["sessions", "delete", "work"]).await;
    assert_eq!(stdout(&o), "session work deleted\n", "{}", stderr(&o));

    let o = run(g, &["config", "get", "gateway.auth.mode"]).await;
    assert_eq!(stdout(&o), "token\n", "{}", stderr(&o));
    let o = run(
        g,
        &["config", "set", "agents.defaults.thinkingDefault", "low"],
    )
    .await;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&run(g, &["config", "get", "agents.defaults.thinkingDefault"]).await),
        "low\n"
    );
    let o = run(g, &["config", "get", "no.such.key"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "error: config key no.such.key is not set\n");
}

#[tokio::test]
async fn errors_are_one_line_with_a_non_zero_exit() {
    let gw = TestGateway::start();
    let o = run(None, &["health", "--url", &gw.ws_url(), "--token", "wrong"]).await;
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: the gateway refused the connection: ") && err.contains("--token"),
        "{err}"
    );

    // Nothing listens on this port.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let o = run(
        None,
        &["status", "--url", &format!("ws://127.0.0.1:{port}")],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach the gateway") && err.contains("ferroclaw gateway"),
        "{err}"
    );

    let o = run(Some(&gw), &["agent"]).await;
    assert_eq!(
        o.status.code(),
        Some(2),
        "a missing --message is a usage error"
    );
    let o = run(Some(&gw), &["agent", "--message", "  "]).await;
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "error: --message must not be empty\n");
    let o = run(Some(&gw), &["health", "--bogus"]).await;
    assert_eq!(o.status.code(), Some(2));
    let o = run(Some(&gw), &["sessions", "show"]).await;
    assert_eq!(o.status.code(), Some(2));
}

#[tokio::test]
async fn interactive_chat_streams_handles_directives_and_ctrl_c_stops_only_the_reply() {
    use crate::support::fake_provider::{FakeProvider, Script};
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["hi", " there"]));
    fake.push(Script::text(&["slow "; 200]).with_delay(std::time::Duration::from_millis(50)));
    let gw = TestGateway::with_config(serde_json::json!({
        "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k" } } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
    }));
    let empty = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(BIN)
        .args([
            "chat",
            "--url",
            &gw.ws_url(),
            "--token",
            TOKEN,
            "--state-dir",
        ])
        .arg(empty.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = child.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf).await {
            if n == 0 {
                break;
            }
            s2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |want: &'static str| {
        let seen = seen.clone();
        async move {
            for _ in 0..1500 {
                if seen.lock().unwrap().contains(want) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("never saw {want:?} in {:?}", seen.lock().unwrap());
        }
    };
    stdin.write_all(b"hello\n").await.unwrap();
    wait_for("hi there\n").await;
    stdin.write_all(b"/think high\n").await.unwrap();
    wait_for("Thinking level set to high.\n").await;
    stdin.write_all(b"go slow\n").await.unwrap();
    wait_for("slow slow").await;
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status_within(CHILD_LIMIT);
    assert!(sent.success());
    wait_for("[aborted]").await;
    stdin.write_all(b"/stop\n").await.unwrap();
    wait_for("[nothing to stop]").await;
    drop(stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "Ctrl-D ends the program cleanly");
    let all = seen.lock().unwrap().clone();
    assert!(
        all.matches("slow").count() < 150,
        "the reply was cut short: {all}"
    );
}

#[tokio::test]
async fn doctor_gives_a_verdict_per_check() {
    use crate::support::fake_provider::{FakeProvider, Script};
    let gw = TestGateway::start();
    let o = run(Some(&gw), &["doctor"]).await;
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    for line in [
        "OK    config",
        "OK    state dir",
        "OK    disk",
        "OK    gateway",
        "OK    model",
        "OK    plugins",
        "OK    hooks",
        "OK    lsp",
        "OK    channels",
        "OK    control ui",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(
        text.contains("openclaw/dist/control-ui"),
        "how to serve it: {text}"
    );
    assert!(
        text.contains("ferroclaw security audit"),
        "it points at the audit: {text}"
    );
    let o = run(Some(&gw), &["doctor", "--json"]).await;
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    // config, state dir, disk, gateway, model, plugins, hooks, lsp,
    // delivery, channels, control ui, security.
    assert_eq!(v["checks"].as_array().unwrap().len(), 12);
    let disk = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "disk")
        .unwrap()
        .to_string();
    assert!(
        disk.contains("in all: store ") && disk.contains("audit "),
        "{disk}"
    );

    // A model that refuses the key fails its check; the others still run.
    let fake = FakeProvider::start().await;
    fake.set_default(Script::status(401, "{\"error\":{\"message\":\"bad key\"}}"));
    let bad = TestGateway::with_config(serde_json::json!({
        "models": { "providers": { "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k" } } },
        "agents": { "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] } } },
    }));
    let o = run(Some(&bad), &["doctor"]).await;
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("FAIL  model") && text.contains("OK    gateway"),
        "{text}"
    );
    assert_eq!(
        stderr(&o),
        "error: doctor found problems (see the FAIL lines above)\n"
    );

    // No gateway, and a broken config file.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.json");
    std::fs::write(&cfg, "{ gateway: { port: \"many\" } }").unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://127.0.0.1:{}", free.local_addr().unwrap().port());
    drop(free);
    let o = run(
        None,
        &["doctor", "--url", &url, "--config", cfg.to_str().unwrap()],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("FAIL  config") && text.contains("gateway.port"),
        "{text}"
    );
    assert!(
        text.contains("FAIL  gateway") && text.contains("WARN  model"),
        "{text}"
    );
}

#[tokio::test]
async fn cron_commands_manage_jobs_on_a_running_gateway() {
    let gw = TestGateway::start();
    let g = Some(&gw);
    let o = run(
        g,
        &[
            "cron",
            "add",
            "--name",
            "stretch",
            "--every",
            "1h",
            "--message",
            "time to stretch",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    assert!(
        said.starts_with("added ") && said.contains("every 1h"),
        "{said}"
    );
    let id = said.split_whitespace().nth(1).unwrap().to_string();
    let o = run(g, &["cron", "list"]).await;
    assert!(
        stdout(&o).contains(&id) && stdout(&o).contains("stretch"),
        "{}",
        stdout(&o)
    );
    let o = run(g, &["cron", "run", &id]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let mut runs = String::new();
    for _ in 0..100 {
        let o = run(g, &["cron", "runs", &id]).await;
        runs = stdout(&o);
        if runs.contains(" ok ") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        runs.contains(" ok ") && runs.contains("time to stretch"),
        "{runs}"
    );
    let o = run(g, &["cron", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list["jobs"][0]["state"]["lastRunStatus"], "ok", "{list}");
    let o = run(
        g,
        &[
            "cron",
            "add",
            "--name",
            "bad",
            "--cron",
            "0 9 * * *",
            "--tz",
            "Moon/Base",
            "--message",
            "x",
        ],
    )
    .await;
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown timezone"), "{}", stderr(&o));
    let o = run(g, &["cron", "add", "--name", "none", "--message", "x"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A one-shot job says where its run goes once it leaves the list.
    let o = run(
        g,
        &[
            "cron",
            "add",
            "--name",
            "once",
            "--at",
            "2099-01-01T09:00:00Z",
            "--message",
            "x",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    let once = said.split_whitespace().nth(1).unwrap().to_string();
    assert!(
        said.contains(&format!("ferroclaw cron runs {once}")),
        "{said}"
    );
    assert!(run(g, &["cron", "rm", &once]).await.status.success());
    let o = run(g, &["cron", "rm", &id]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(g, &["cron", "list"]).await;
    assert_eq!(stdout(&o), "no cron jobs\n");
}

/// A reply of several messages (text, a tool call, text after it) prints
/// each message whole, on its own line: not the second's tail at the
/// first's print position.
#[tokio::test]
async fn agent_prints_each_message_of_a_reply_with_a_tool_call_whole() {
    let gw = TestGateway::start();
    let o = run(
        Some(&gw),
        &["agent", "--message", "let me look\n@tool ls {}"],
    )
    .await;
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first().copied(), Some("let me look"), "{out:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("Tool ls returned: ")),
        "{out:?}"
    );
}

/// A shell line running the CLI with `args` against `gw` in a terminal; the
/// shell stays after the command, so its last words stay on screen.
fn terminal_line(gw: &TestGateway, state: &std::path::Path, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args)
        .arg("--state-dir")
        .arg(state)
        .args(["--url", &gw.ws_url(), "--token", TOKEN])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TERM", "xterm");
    format!(
        "{}; echo \"[exit $?]\"; sleep 60",
        crate::support::tmux::shell_line(&cmd).trim_start_matches("exec ")
    )
}

/// The shipped exec policy (allowlist, ask on a miss) with `ferroclaw
/// agent` and `chat` at a terminal: the request is shown and answered from
/// the keyboard (allow once runs it; deny refuses it), not waited on in
/// silence until it expires.
#[test]
fn an_exec_that_needs_approval_is_asked_at_the_terminal() {
    use crate::support::tmux::Tmux;
    let gw = TestGateway::with_config(
        json!({"tools": {"exec": {"security": "allowlist", "ask": "on-miss"}}}),
    );
    let state = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| terminal_line(&gw, state.path(), args);
    let wait = Duration::from_secs(30);

    let line = json!({"command": "echo approved-at-the-terminal"});
    let agent = cli(&["agent", "--message", &format!("@tool exec {line}")]);
    let term = Tmux::start(120, 30, &agent);
    term.until("the approval request", wait, |s| {
        s.contains("[o] allow once")
    });
    assert!(
        term.screen().contains("echo approved-at-the-terminal"),
        "{}",
        term.screen()
    );
    term.type_line("o");
    let screen = term.until("the command's output", wait, |s| s.contains("[exit 0]"));
    assert!(
        screen.contains("Tool exec returned: approved-at-the-terminal"),
        "{screen}"
    );

    let chat = cli(&["chat", "--session", "approvals"]);
    let term = Tmux::start(120, 30, &chat);
    term.until("the chat prompt", wait, |s| {
        s.contains("chatting in session")
    });
    term.type_line(&format!(
        "@tool exec {}",
        json!({"command": "echo never-ran"})
    ));
    term.until("the approval request", wait, |s| {
        s.contains("[o] allow once")
    });
    term.type_line("d");
    let screen = term.until("the refusal", wait, |s| {
        s.contains("deny") && s.contains("Tool exec")
    });
    assert!(!screen.contains("returned: never-ran"), "{screen}");
    // The chat goes on after it.
    term.type_line("still here?");
    term.until("the next reply", wait, |s| {
        s.contains("You said: still here?")
    });
}

/// A CLI that went away while its run waited for an approval leaves no dead
/// end: `/status` says what the session waits for, and the next `agent`
/// call to that session shows the approval first and answers it; both
/// turns then end.
#[test]
fn the_next_cli_call_to_a_session_blocked_on_an_approval_asks_it() {
    use crate::support::tmux::Tmux;
    let gw = TestGateway::with_config(
        json!({"tools": {"exec": {"security": "allowlist", "ask": "on-miss"}}}),
    );
    let state = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| terminal_line(&gw, state.path(), args);
    let wait = Duration::from_secs(30);
    let line = json!({"command": "echo left-behind"});
    let gone = Tmux::start(
        120,
        30,
        &cli(&["agent", "--message", &format!("@tool exec {line}")]),
    );
    gone.until("the approval request", wait, |s| {
        s.contains("[o] allow once")
    });
    drop(gone);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        let mut c = crate::support::admin(&gw).await;
        let events = crate::support::say(&mut c, "main", "/status", "st1").await;
        crate::support::final_text(&events)
    });
    assert!(
        status.contains("waiting for approval") && status.contains("echo left-behind"),
        "{status}"
    );
    let o = rt.block_on(run(Some(&gw), &["status"]));
    assert!(
        stdout(&o).contains("session agent:main:main wants to run echo left-behind"),
        "{}",
        stdout(&o)
    );

    let next = Tmux::start(120, 30, &cli(&["agent", "--message", "after that"]));
    let screen = next.until("the waiting approval", wait, |s| {
        s.contains("[o] allow once")
    });
    assert!(
        screen.contains("is waiting for an exec approval"),
        "{screen}"
    );
    assert!(screen.contains("echo left-behind"), "{screen}");
    next.type_line("o");
    let screen = next.until("its own reply", wait, |s| s.contains("[exit 0]"));
    assert!(screen.contains("You said: after that"), "{screen}");
    let rt_history = rt.block_on(async {
        let mut c = crate::support::admin(&gw).await;
        c.call("chat.history", json!({"sessionKey": "main"})).await
    });
    assert!(
        rt_history
            .to_string()
            .contains("Tool exec returned: left-behind"),
        "the first turn ran its command: {rt_history}"
    );
}

/// `ask_user` in `ferroclaw agent` at a terminal: the question is shown
/// with its numbered options and answered from the keyboard; the run goes
/// on with the answer.
#[test]
fn a_question_the_agent_asks_is_answered_at_the_terminal() {
    use crate::support::tmux::Tmux;
    let gw = TestGateway::start();
    let state = tempfile::tempdir().unwrap();
    let ask = format!(
        "@tool ask_user {}",
        json!({"questions": [{"id": "color", "header": "Color", "question": "Which color?",
            "options": [{"label": "Red"}, {"label": "Blue"}]}]})
    );
    let line = terminal_line(&gw, state.path(), &["agent", "--message", &ask]);
    let term = Tmux::start(120, 30, &line);
    let wait = Duration::from_secs(30);
    let screen = term.until("the question", wait, |s| {
        s.contains("answer (empty line: skip) >")
    });
    assert!(
        screen.contains("Which color?") && screen.contains("2. Blue"),
        "{screen}"
    );
    term.type_line("2");
    let screen = term.until("the run's end", wait, |s| s.contains("[exit 0]"));
    assert!(
        screen.contains("Tool ask_user returned: Color: Blue"),
        "{screen}"
    );
}
