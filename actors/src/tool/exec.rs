//! `exec`: `sh -c <command>` in the workspace, in its own process group so
//! a timeout, an abort or `process kill` ends everything it started; and
//! `process`, which manages commands that run in the background.
//!
//! Every command's output is gathered by a task that also waits for the
//! child (so no zombie is ever left). A foreground command (stdin closed)
//! is waited for up to `yieldMs` (default 10 s): if it is still running
//! then, it moves to the background and the model gets its session id.
//! `background: true` starts it there at once, with a stdin `process write`
//! can feed. A background command still has its timeout (default 30 min);
//! an abort of the run does not stop it.

use crate::ids::SessionKey;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::watch;

use super::{blocked, error, ok, str_arg, uint_arg, ToolLimits};
use crate::tool::ToolOutcome;

/// Background sessions kept (finished ones are dropped first).
const MAX_SESSIONS: usize = 64;
/// How long `exec` waits before backgrounding a command, by default.
const DEFAULT_YIELD: Duration = Duration::from_secs(10);

/// Output of one command: stdout and stderr, each keeping its first `cap`
/// bytes and counting the rest.
#[derive(Default)]
struct Output {
    out: Vec<u8>,
    out_total: usize,
    err: Vec<u8>,
    err_total: usize,
    /// Set when the child exited: its code (None = killed by a signal).
    exit: Option<Option<i32>>,
    timed_out: bool,
}

type Shared = Arc<Mutex<Output>>;

fn lock(o: &Shared) -> std::sync::MutexGuard<'_, Output> {
    o.lock().unwrap_or_else(|p| p.into_inner())
}

async fn pump(mut r: impl AsyncRead + Unpin, out: Shared, cap: usize, stderr: bool) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut o = lock(&out);
        let (kept, total) = if stderr {
            let o = &mut *o;
            (&mut o.err, &mut o.err_total)
        } else {
            let o = &mut *o;
            (&mut o.out, &mut o.out_total)
        };
        *total += n;
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

pub(crate) fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals the process group the
        // child leads (it was spawned with process_group(0)); no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

async fn wait_cancel(cancel: &mut watch::Receiver<bool>) {
    while !*cancel.borrow() {
        if cancel.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Who started a background command. Only the session (and agent) that
/// started it sees it; a turn holding a stranger's message sees only what
/// such turns of its session started (which ran in the sandbox).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    session_key: SessionKey,
    agent_id: String,
    untrusted: bool,
}

impl Owner {
    pub fn of(call: &super::ExecuteTool) -> Owner {
        Owner {
            session_key: call.session_key.clone(),
            agent_id: call.agent_id.clone(),
            untrusted: call.trust.untrusted,
        }
    }

    fn sees(&self, started_by: &Owner) -> bool {
        self.session_key == started_by.session_key
            && self.agent_id == started_by.agent_id
            && (started_by.untrusted || !self.untrusted)
    }
}

/// A command in the background.
struct Session {
    owner: Owner,
    command: String,
    pid: Option<u32>,
    started: Instant,
    output: Shared,
    stdin: Option<ChildStdin>,
    /// Bytes of stdout / stderr already returned by `poll`.
    polled: (usize, usize),
    /// Ends the command (kill) when sent.
    kill: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The background commands of one executor.
#[derive(Clone, Default)]
pub struct Processes {
    sessions: Arc<Mutex<HashMap<String, Session>>>,
}

impl Processes {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Session>) -> T) -> T {
        let mut s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s)
    }

    fn insert(&self, id: String, session: Session) {
        self.with(|s| {
            if s.len() >= MAX_SESSIONS {
                let oldest_done = s
                    .iter()
                    .filter(|(_, v)| lock(&v.output).exit.is_some())
                    .min_by_key(|(_, v)| v.started)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest_done {
                    s.remove(&k);
                }
            }
            s.insert(id, session);
        });
    }

    /// Kills every background command (the executor is stopping).
    pub fn kill_all(&self) {
        self.with(|s| {
            for v in s.values_mut() {
                if let Some(k) = v.kill.take() {
                    let _ = k.send(());
                }
                kill_group(v.pid);
            }
        });
    }
}

fn render(o: &Output) -> String {
    let mut text = String::from_utf8_lossy(&o.out).into_owned();
    if !o.err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(&o.err));
    }
    let dropped = (o.out_total - o.out.len()) + (o.err_total - o.err.len());
    if dropped > 0 {
        text.push_str(&format!("\n[output truncated: {dropped} more bytes]"));
    }
    text
}

fn finished(o: &Output) -> ToolOutcome {
    let text = render(o);
    if o.timed_out {
        return error(format!("{text}\n[timed out and killed]"));
    }
    match o.exit {
        Some(Some(0)) => ok(text),
        Some(Some(c)) => error(format!("{text}\n[exit code {c}]")),
        _ => error(format!("{text}\n[killed by a signal]")),
    }
}

fn bool_arg(args: &Value, name: &str) -> Result<bool, ToolOutcome> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(error(format!("exec: `{name}` must be true or false"))),
    }
}

/// What one `exec` call runs with.
pub struct ExecCtx<'a> {
    pub workspace: &'a Path,
    pub limits: &'a ToolLimits,
    pub processes: &'a Processes,
    pub env: &'a [(String, String)],
    pub session_key: &'a SessionKey,
    pub agent_id: &'a str,
    /// The turn holds a stranger's message: never on the host, a scratch
    /// sandbox with a clean environment.
    pub untrusted: bool,
    pub policy: crate::approvals::ExecPolicy,
    pub approvals: Option<actix::Addr<crate::approvals::ApprovalsActor>>,
    /// Host `node`: where the command goes instead.
    pub node_call: &'a super::nodes::NodeCall<'a>,
}

pub async fn run(cx: &ExecCtx<'_>, args: &Value, mut cancel: watch::Receiver<bool>) -> ToolOutcome {
    let (workspace, limits, processes, env) = (cx.workspace, cx.limits, cx.processes, cx.env);
    let command = match str_arg("exec", args, "command") {
        Ok(c) => c.to_string(),
        Err(e) => return e,
    };
    let background = match bool_arg(args, "background") {
        Ok(b) => b,
        Err(e) => return e,
    };
    let (timeout, yield_ms) = match (
        uint_arg("exec", args, "timeout"),
        uint_arg("exec", args, "yieldMs"),
    ) {
        (Ok(t), Ok(y)) => (t, y),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let default_timeout = if background {
        limits.exec_max_timeout
    } else {
        limits.exec_timeout
    };
    let timeout = timeout
        .map(Duration::from_secs)
        .unwrap_or(default_timeout)
        .min(limits.exec_max_timeout);
    let yield_after = yield_ms.map(Duration::from_millis).unwrap_or(DEFAULT_YIELD);
    if cx.untrusted && cx.policy.host != crate::approvals::Host::Sandbox {
        // The session's policy already says so (`SessionActor::exec_policy`);
        // this is the executor's own word on it.
        return blocked("exec: not run: a turn that holds a message from someone who is not the operator never runs commands on this host");
    }
    // Security and approvals first: nothing starts before it is allowed.
    if let Some(approvals) = &cx.approvals {
        let line = command.clone();
        let bins = tokio::task::spawn_blocking(move || crate::approvals::executables(&line))
            .await
            .ok()
            .flatten();
        let gate = crate::approvals::ExecGate {
            agent_id: cx.agent_id.to_string(),
            session_key: cx.session_key.clone(),
            command: command.clone(),
            bins,
            cwd: workspace.display().to_string(),
            policy: cx.policy.clone(),
            untrusted: cx.untrusted,
        };
        let verdict = tokio::select! {
            v = approvals.send(gate) => v.unwrap_or_else(|_| Err(crate::approvals::Refused("the approvals service is unavailable".into()))),
            _ = wait_cancel(&mut cancel) => return error("exec: aborted while waiting for approval"),
        };
        if let Err(reason) = verdict {
            return blocked(format!("exec: not run: {reason}"));
        }
    } else if cx.policy.security == crate::approvals::Security::Deny {
        return blocked("exec: not run: exec is disabled for this session (security=deny)");
    }
    if cx.policy.host == crate::approvals::Host::Node {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        return super::nodes::exec(cx.node_call, cx.policy.node.as_deref(), &command, ms).await;
    }
    let mut cmd = match cx.policy.host {
        crate::approvals::Host::Sandbox => {
            // Building it looks up bwrap and the system folders: off thread.
            let sandbox = limits.sandbox.clone();
            let ws = workspace.to_path_buf();
            let turn = super::sandbox::Turn {
                session_key: cx.session_key.clone(),
                agent_id: cx.agent_id.to_string(),
                untrusted: cx.untrusted,
                env: env.to_vec(),
            };
            let line = command.clone();
            let built =
                tokio::task::spawn_blocking(move || sandbox.command(&ws, &turn, &line)).await;
            match built {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => return error(e),
                Err(e) => return error(format!("exec: the sandbox could not be prepared: {e}")),
            }
        }
        crate::approvals::Host::Node => return error("exec: host node is handled above"),
        crate::approvals::Host::Gateway => {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c")
                .arg(&command)
                .current_dir(workspace)
                .envs(env.iter().map(|(k, v)| (k, v)));
            c
        }
    };
    let mut child = match cmd
        .stdin(if background {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return error(format!("exec: cannot start the shell: {e}")),
    };
    let pid = child.id();
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(pid);
        return error("exec: no output pipes");
    };
    let stdin = child.stdin.take();
    let output: Shared = Arc::default();
    let cap = limits.output_cap;
    let (done_tx, mut done) = watch::channel(false);
    let (kill_tx, kill_rx) = tokio::sync::oneshot::channel::<()>();
    // The reaper: gathers output, waits for the child (or kills it on
    // timeout / request), then kills what it left in its group.
    let o = output.clone();
    tokio::spawn(async move {
        let pumps = async {
            tokio::join!(
                pump(stdout, o.clone(), cap, false),
                pump(stderr, o.clone(), cap, true)
            );
            child.wait().await
        };
        let status = tokio::select! {
            s = pumps => s.ok().and_then(|s| s.code()),
            _ = actix::clock::sleep(timeout) => {
                kill_group(pid);
                let _ = child.wait().await;
                lock(&o).timed_out = true;
                None
            }
            _ = kill_rx => {
                kill_group(pid);
                let _ = child.wait().await;
                None
            }
        };
        kill_group(pid);
        lock(&o).exit = Some(status);
        let _ = done_tx.send(true);
    });
    let id = || format!("bg_{}", &ulid::Ulid::generate().to_string()[16..]).to_lowercase();
    let owner = Owner {
        session_key: cx.session_key.clone(),
        agent_id: cx.agent_id.to_string(),
        untrusted: cx.untrusted,
    };
    if background {
        let id = id();
        processes.insert(
            id.clone(),
            Session {
                owner,
                command: command.clone(),
                pid,
                started: Instant::now(),
                output,
                stdin,
                polled: (0, 0),
                kill: Some(kill_tx),
            },
        );
        return ok(format!(
            "Started in the background: session {id} (pid {}). Use the process tool (poll, log, write, kill) with sessionId {id:?}.",
            pid.unwrap_or(0)
        ));
    }
    let ended = async {
        while !*done.borrow() {
            if done.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = ended => {}
        _ = actix::clock::sleep(yield_after.min(timeout + Duration::from_secs(1))) => {
            let id = id();
            let so_far = render(&lock(&output));
            processes.insert(
                id.clone(),
                Session { owner, command: command.clone(), pid, started: Instant::now(), output, stdin, polled: (0, 0), kill: Some(kill_tx) },
            );
            return ok(format!(
                "{so_far}\n[still running after {} ms: moved to the background as session {id}; use the process tool to poll or kill it]",
                yield_after.as_millis()
            ));
        }
        _ = wait_cancel(&mut cancel) => {
            let _ = kill_tx.send(());
            kill_group(pid);
            return error("exec: aborted; the command was killed");
        }
    }
    let o = lock(&output);
    if o.timed_out {
        return error(format!(
            "exec: command timed out after {}s and was killed",
            timeout.as_secs()
        ));
    }
    finished(&o)
}

/// `process {action, sessionId?, data?, eof?, offset?, limit?}`: the
/// commands `caller` may see (`Owner::sees`); another's is answered as if
/// it did not exist.
pub async fn process(processes: &Processes, caller: &Owner, args: &Value) -> ToolOutcome {
    let action = match str_arg("process", args, "action") {
        Ok(a) => a.to_string(),
        Err(e) => return e,
    };
    if action == "list" {
        let mut rows: Vec<(Instant, String)> = processes.with(|s| {
            s.iter()
                .filter(|(_, v)| caller.sees(&v.owner))
                .map(|(id, v)| {
                    let state = match lock(&v.output).exit {
                        None => "running".to_string(),
                        Some(Some(c)) => format!("exited {c}"),
                        Some(None) => "killed".to_string(),
                    };
                    (
                        v.started,
                        format!(
                            "{id}  {state}  {}s  {}",
                            v.started.elapsed().as_secs(),
                            v.command
                        ),
                    )
                })
                .collect()
        });
        rows.sort();
        if rows.is_empty() {
            return ok("No background sessions.");
        }
        return ok(rows
            .into_iter()
            .map(|(_, r)| r)
            .collect::<Vec<_>>()
            .join("\n"));
    }
    if action == "clear" {
        let n = processes.with(|s| {
            let before = s.len();
            s.retain(|_, v| !caller.sees(&v.owner) || lock(&v.output).exit.is_none());
            before - s.len()
        });
        return ok(format!("Removed {n} finished sessions."));
    }
    let id = match str_arg("process", args, "sessionId") {
        Ok(i) => i.to_string(),
        Err(e) => return e,
    };
    let unknown = || {
        error(format!(
            "process: no session {id:?} (process list shows them)"
        ))
    };
    if !matches!(
        action.as_str(),
        "poll" | "log" | "write" | "kill" | "remove"
    ) {
        return error(format!(
            "process: unknown action {action:?} (list, poll, log, write, kill, remove, clear)"
        ));
    }
    if !processes.with(|s| s.get(&id).is_some_and(|v| caller.sees(&v.owner))) {
        return unknown();
    }
    match action.as_str() {
        "poll" => processes.with(|s| {
            let Some(v) = s.get_mut(&id) else {
                return unknown();
            };
            let o = lock(&v.output);
            let new_out =
                String::from_utf8_lossy(&o.out[v.polled.0.min(o.out.len())..]).into_owned();
            let new_err =
                String::from_utf8_lossy(&o.err[v.polled.1.min(o.err.len())..]).into_owned();
            let polled = (o.out.len(), o.err.len());
            let state = match o.exit {
                None => "running".to_string(),
                Some(Some(c)) => format!("exited with code {c}"),
                Some(None) if o.timed_out => "timed out and killed".to_string(),
                Some(None) => "killed".to_string(),
            };
            drop(o);
            v.polled = polled;
            let mut text = format!("[{id}: {state}]");
            for part in [new_out, new_err] {
                if !part.is_empty() {
                    text.push('\n');
                    text.push_str(&part);
                }
            }
            ok(text)
        }),
        "log" => {
            let (offset, limit) = match (
                uint_arg("process", args, "offset"),
                uint_arg("process", args, "limit"),
            ) {
                (Ok(o), Ok(l)) => (
                    usize::try_from(o.unwrap_or(0)).unwrap_or(usize::MAX),
                    l.map_or(200, |l| usize::try_from(l).unwrap_or(usize::MAX)),
                ),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            processes.with(|s| {
                let Some(v) = s.get(&id) else {
                    return unknown();
                };
                let all = render(&lock(&v.output));
                let lines: Vec<&str> = all.lines().collect();
                let end = offset.saturating_add(limit).min(lines.len());
                let mut text = lines[offset.min(end)..end].join("\n");
                if end < lines.len() {
                    text.push_str(&format!(
                        "\n[{} more lines; continue with offset {end}]",
                        lines.len() - end
                    ));
                }
                ok(text)
            })
        }
        "write" => {
            let data = match args.get("data") {
                Some(Value::String(d)) => d.clone(),
                _ => return error("process: `data` (string) is required for write"),
            };
            let eof = matches!(args.get("eof"), Some(Value::Bool(true)));
            let stdin = processes.with(|s| s.get_mut(&id).map(|v| v.stdin.take()));
            let Some(stdin) = stdin else { return unknown() };
            let Some(mut stdin) = stdin else {
                return error(format!("process: session {id} has no open stdin (only background: true commands take input; eof closes it)"));
            };
            if let Err(e) = stdin.write_all(data.as_bytes()).await {
                return error(format!("process: write to {id}: {e}"));
            }
            let _ = stdin.flush().await;
            if !eof {
                processes.with(|s| {
                    if let Some(v) = s.get_mut(&id) {
                        v.stdin = Some(stdin);
                    }
                });
            }
            ok(format!(
                "Wrote {} bytes to {id}{}.",
                data.len(),
                if eof { " and closed its stdin" } else { "" }
            ))
        }
        "kill" => processes.with(|s| {
            let Some(v) = s.get_mut(&id) else {
                return unknown();
            };
            if let Some(k) = v.kill.take() {
                let _ = k.send(());
            }
            kill_group(v.pid);
            ok(format!("Killed session {id}."))
        }),
        "remove" => processes.with(|s| match s.remove(&id) {
            Some(mut v) => {
                if let Some(k) = v.kill.take() {
                    let _ = k.send(());
                }
                ok(format!("Removed session {id}."))
            }
            None => unknown(),
        }),
        other => error(format!(
            "process: unknown action {other:?} (list, poll, log, write, kill, remove, clear)"
        )),
    }
}
