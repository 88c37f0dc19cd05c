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
    /// When it started, wall clock (`tasks.list`).
    started_ms: u64,
    output: Shared,
    stdin: Option<ChildStdin>,
    /// Bytes of stdout / stderr already returned by `poll`.
    polled: (usize, usize),
    /// Ends the command (kill) when sent.
    kill: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A background command as the task list sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundTask {
    pub id: String,
    /// The session whose turn started it.
    pub session_key: String,
    pub agent_id: String,
    pub command: String,
    pub started_ms: u64,
    /// Set when it ended: its exit code (None: killed by a signal).
    pub exit: Option<Option<i32>>,
    pub timed_out: bool,
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

    /// Every background command, as `tasks.list` shows them.
    pub fn tasks(&self) -> Vec<BackgroundTask> {
        self.with(|s| {
            s.iter()
                .map(|(id, v)| {
                    let o = lock(&v.output);
                    BackgroundTask {
                        id: id.clone(),
                        session_key: v.owner.session_key.as_str().to_string(),
                        agent_id: v.owner.agent_id.clone(),
                        command: v.command.clone(),
                        started_ms: v.started_ms,
                        exit: o.exit,
                        timed_out: o.timed_out,
                    }
                })
                .collect()
        })
    }

    /// Kills background command `id` (`tasks.cancel`). Reply: it was running.
    pub fn kill(&self, id: &str) -> bool {
        self.with(|s| s.get_mut(id).is_some_and(Session::stop))
    }

    /// Kills every background command (the executor is stopping).
    pub fn kill_all(&self) {
        self.with(|s| {
            for v in s.values_mut() {
                v.stop();
            }
        });
    }
}

impl Session {
    /// Ends the command (its process group killed while it still runs: an
    /// ended one's pid may be another's by now). Reply: it was running.
    fn stop(&mut self) -> bool {
        let running = lock(&self.output).exit.is_none();
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
        if running {
            kill_group(self.pid);
        }
        running
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
    /// The run's call, told when it waits for an operator's approval.
    pub waiting: Option<(super::ProgressSink, crate::provider::ToolCall)>,
}

/// One `exec` call's arguments, checked.
struct Call {
    command: String,
    background: bool,
    timeout: Duration,
    yield_after: Duration,
}

impl Call {
    fn parse(args: &Value, limits: &ToolLimits) -> Result<Call, ToolOutcome> {
        let command = str_arg("exec", args, "command")?.to_string();
        let background = bool_arg(args, "background")?;
        let timeout = uint_arg("exec", args, "timeout")?;
        let yield_ms = uint_arg("exec", args, "yieldMs")?;
        let default_timeout = if background {
            limits.exec_max_timeout
        } else {
            limits.exec_timeout
        };
        Ok(Call {
            command,
            background,
            timeout: timeout
                .map(Duration::from_secs)
                .unwrap_or(default_timeout)
                .min(limits.exec_max_timeout),
            yield_after: yield_ms.map(Duration::from_millis).unwrap_or(DEFAULT_YIELD),
        })
    }
}

pub async fn run(cx: &ExecCtx<'_>, args: &Value, mut cancel: watch::Receiver<bool>) -> ToolOutcome {
    let call = match Call::parse(args, cx.limits) {
        Ok(c) => c,
        Err(e) => return e,
    };
    // Security and approvals first: nothing starts before it is allowed.
    if let Err(refused) = allowed(cx, &call.command, &mut cancel).await {
        return refused;
    }
    if cx.policy.host == crate::approvals::Host::Node {
        let ms = u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX);
        return super::nodes::exec(cx.node_call, cx.policy.node.as_deref(), &call.command, ms)
            .await;
    }
    let running = match command_for(cx, &call.command).await {
        Ok(cmd) => spawn(cmd, &call, cx.limits.output_cap),
        Err(e) => return e,
    };
    let running = match running {
        Ok(r) => r,
        Err(e) => return e,
    };
    let owner = Owner {
        session_key: cx.session_key.clone(),
        agent_id: cx.agent_id.to_string(),
        untrusted: cx.untrusted,
    };
    if call.background {
        let (id, pid) = (session_id(), running.pid);
        cx.processes
            .insert(id.clone(), running.into_session(owner, &call.command));
        return ok(format!(
            "Started in the background: session {id} (pid {}). Use the process tool (poll, log, write, kill) with sessionId {id:?}.",
            pid.unwrap_or(0)
        ));
    }
    foreground(cx, &call, running, owner, &mut cancel).await
}

/// A command in the foreground: its output once it ends, else (after
/// `yieldMs`) a background session with what it printed so far.
async fn foreground(
    cx: &ExecCtx<'_>,
    call: &Call,
    mut running: Running,
    owner: Owner,
    cancel: &mut watch::Receiver<bool>,
) -> ToolOutcome {
    let ended = async {
        while !*running.done.borrow() {
            if running.done.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = ended => {}
        _ = actix::clock::sleep(call.yield_after.min(call.timeout + Duration::from_secs(1))) => {
            let id = session_id();
            let so_far = render(&lock(&running.output));
            cx.processes.insert(id.clone(), running.into_session(owner, &call.command));
            return ok(format!(
                "{so_far}\n[still running after {} ms: moved to the background as session {id}; use the process tool to poll or kill it]",
                call.yield_after.as_millis()
            ));
        }
        _ = wait_cancel(cancel) => {
            let _ = running.kill.send(());
            kill_group(running.pid);
            return error("exec: aborted; the command was killed");
        }
    }
    let o = lock(&running.output);
    if o.timed_out {
        return error(format!(
            "exec: command timed out after {}s and was killed",
            call.timeout.as_secs()
        ));
    }
    finished(&o)
}

/// A background session's id.
fn session_id() -> String {
    format!("bg_{}", &ulid::Ulid::generate().to_string()[16..]).to_lowercase()
}

/// Whether `command` may run: never on this host for a stranger's turn;
/// else the approvals' verdict (or, without them, not under `deny`).
async fn allowed(
    cx: &ExecCtx<'_>,
    command: &str,
    cancel: &mut watch::Receiver<bool>,
) -> Result<(), ToolOutcome> {
    if cx.untrusted && cx.policy.host != crate::approvals::Host::Sandbox {
        // The session's policy already says so (`SessionActor::exec_policy`);
        // this is the executor's own word on it.
        return Err(blocked("exec: not run: a turn that holds a message from someone who is not the operator never runs commands on this host"));
    }
    let Some(approvals) = &cx.approvals else {
        if cx.policy.security == crate::approvals::Security::Deny {
            return Err(blocked(
                "exec: not run: exec is disabled for this session (security=deny)",
            ));
        }
        return Ok(());
    };
    let line = command.to_string();
    let bins = tokio::task::spawn_blocking(move || crate::approvals::executables(&line))
        .await
        .ok()
        .flatten();
    let gate = crate::approvals::ExecGate {
        agent_id: cx.agent_id.to_string(),
        session_key: cx.session_key.clone(),
        command: command.to_string(),
        bins,
        cwd: cx.workspace.display().to_string(),
        policy: cx.policy.clone(),
        untrusted: cx.untrusted,
        waiting: cx.waiting.clone().map(waiting_told),
    };
    let verdict = tokio::select! {
        v = approvals.send(gate) => v.unwrap_or_else(|_| Err(crate::approvals::Refused("the approvals service is unavailable".into()))),
        _ = wait_cancel(cancel) => return Err(error("exec: aborted while waiting for approval")),
    };
    verdict.map_err(|reason| blocked(format!("exec: not run: {reason}")))
}

/// The run's session hears which approval its call waits for (a tool
/// progress event that names it).
fn waiting_told(
    (sink, call): (super::ProgressSink, crate::provider::ToolCall),
) -> crate::approvals::OnWaiting {
    crate::approvals::OnWaiting(Box::new(move |id: &str, command: &str| {
        sink.sink.do_send(super::ToolProgress {
            run_id: sink.run_id.clone(),
            call,
            progress: 0.0,
            total: None,
            message: Some(format!("waiting for approval {id}: {command}")),
            approval: Some(id.to_string()),
        });
    }))
}

/// The shell that runs `command`: in the sandbox, or `sh -c` in the
/// workspace.
async fn command_for(
    cx: &ExecCtx<'_>,
    command: &str,
) -> Result<tokio::process::Command, ToolOutcome> {
    match cx.policy.host {
        crate::approvals::Host::Sandbox => {
            // Building it looks up bwrap and the system folders: off thread.
            let sandbox = cx.limits.sandbox.clone();
            let ws = cx.workspace.to_path_buf();
            let turn = super::sandbox::Turn {
                session_key: cx.session_key.clone(),
                agent_id: cx.agent_id.to_string(),
                untrusted: cx.untrusted,
                env: cx.env.to_vec(),
            };
            let line = command.to_string();
            match tokio::task::spawn_blocking(move || sandbox.command(&ws, &turn, &line)).await {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => Err(error(e.to_string())),
                Err(e) => Err(error(format!(
                    "exec: the sandbox could not be prepared: {e}"
                ))),
            }
        }
        crate::approvals::Host::Node => Err(error("exec: host node is handled above")),
        crate::approvals::Host::Gateway => {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c")
                .arg(command)
                .current_dir(cx.workspace)
                .envs(cx.env.iter().map(|(k, v)| (k, v)));
            Ok(c)
        }
    }
}

/// The reaper of `child`: gathers its output, waits for it (or kills it on
/// timeout / request), then kills what it left in its group and says done.
async fn reap(
    mut child: tokio::process::Child,
    (stdout, stderr): (tokio::process::ChildStdout, tokio::process::ChildStderr),
    o: Shared,
    cap: usize,
    timeout: Duration,
    kill_rx: tokio::sync::oneshot::Receiver<()>,
    done_tx: watch::Sender<bool>,
) {
    let pid = child.id();
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
}

/// A started command: its reaper gathers the output into `output` and says
/// `done` once the child and its group are gone.
struct Running {
    pid: Option<u32>,
    stdin: Option<ChildStdin>,
    output: Shared,
    done: watch::Receiver<bool>,
    kill: tokio::sync::oneshot::Sender<()>,
}

impl Running {
    fn into_session(self, owner: Owner, command: &str) -> Session {
        Session {
            owner,
            command: command.to_string(),
            pid: self.pid,
            started: Instant::now(),
            started_ms: crate::now_ms(),
            output: self.output,
            stdin: self.stdin,
            polled: (0, 0),
            kill: Some(self.kill),
        }
    }
}

/// Starts `cmd` in its own process group (stdin open for a background
/// command) and its reaper: it gathers output, waits for the child (or
/// kills it on timeout / request), then kills what it left in its group.
fn spawn(
    mut cmd: tokio::process::Command,
    call: &Call,
    cap: usize,
) -> Result<Running, ToolOutcome> {
    let mut child = cmd
        .stdin(if call.background {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| error(format!("exec: cannot start the shell: {e}")))?;
    let pid = child.id();
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(pid);
        return Err(error("exec: no output pipes"));
    };
    let stdin = child.stdin.take();
    let output: Shared = Arc::default();
    let (done_tx, done) = watch::channel(false);
    let (kill, kill_rx) = tokio::sync::oneshot::channel::<()>();
    let pipes = (stdout, stderr);
    tokio::spawn(reap(
        child,
        pipes,
        output.clone(),
        cap,
        call.timeout,
        kill_rx,
        done_tx,
    ));
    Ok(Running {
        pid,
        stdin,
        output,
        done,
        kill,
    })
}

/// `process {action, sessionId?, data?, eof?, offset?, limit?}`: the
/// commands `caller` may see (`Owner::sees`); another's is answered as if
/// it did not exist.
pub async fn process(processes: &Processes, caller: &Owner, args: &Value) -> ToolOutcome {
    let action = match str_arg("process", args, "action") {
        Ok(a) => a.to_string(),
        Err(e) => return e,
    };
    match action.as_str() {
        "list" => return list(processes, caller),
        "clear" => return clear(processes, caller),
        "poll" | "log" | "write" | "kill" | "remove" => {}
        _ => {
            return error(format!(
                "process: unknown action {action:?} (list, poll, log, write, kill, remove, clear)"
            ))
        }
    }
    let id = match str_arg("process", args, "sessionId") {
        Ok(i) => i.to_string(),
        Err(e) => return e,
    };
    if !processes.with(|s| s.get(&id).is_some_and(|v| caller.sees(&v.owner))) {
        return unknown(&id);
    }
    match action.as_str() {
        "poll" => poll(processes, &id),
        "log" => log(processes, &id, args),
        "write" => write(processes, &id, args).await,
        "kill" => match processes.with(|s| s.get_mut(&id).map(Session::stop)) {
            Some(_) => ok(format!("Killed session {id}.")),
            None => unknown(&id),
        },
        _ => processes.with(|s| match s.remove(&id) {
            Some(mut v) => {
                if let Some(k) = v.kill.take() {
                    let _ = k.send(());
                }
                ok(format!("Removed session {id}."))
            }
            None => unknown(&id),
        }),
    }
}

/// What `process` answers for a session the caller cannot see or that is
/// gone.
fn unknown(id: &str) -> ToolOutcome {
    error(format!(
        "process: no session {id:?} (process list shows them)"
    ))
}

/// `process list`: the caller's sessions, oldest first.
fn list(processes: &Processes, caller: &Owner) -> ToolOutcome {
    let mut rows: Vec<(Instant, String)> = processes.with(|s| {
        s.iter()
            .filter(|(_, v)| caller.sees(&v.owner))
            .map(|(id, v)| {
                let state = match lock(&v.output).exit {
                    None => "running".to_string(),
                    Some(Some(c)) => format!("exited {c}"),
                    Some(None) => "killed".to_string(),
                };
                let age = v.started.elapsed().as_secs();
                (v.started, format!("{id}  {state}  {age}s  {}", v.command))
            })
            .collect()
    });
    rows.sort();
    if rows.is_empty() {
        return ok("No background sessions.");
    }
    let rows: Vec<String> = rows.into_iter().map(|(_, r)| r).collect();
    ok(rows.join("\n"))
}

/// `process clear`: the caller's finished sessions removed.
fn clear(processes: &Processes, caller: &Owner) -> ToolOutcome {
    let n = processes.with(|s| {
        let before = s.len();
        s.retain(|_, v| !caller.sees(&v.owner) || lock(&v.output).exit.is_none());
        before - s.len()
    });
    ok(format!("Removed {n} finished sessions."))
}

/// `process poll`: the state and the output since the last poll.
fn poll(processes: &Processes, id: &str) -> ToolOutcome {
    processes.with(|s| {
        let Some(v) = s.get_mut(id) else {
            return unknown(id);
        };
        let o = lock(&v.output);
        let new_out = String::from_utf8_lossy(&o.out[v.polled.0.min(o.out.len())..]).into_owned();
        let new_err = String::from_utf8_lossy(&o.err[v.polled.1.min(o.err.len())..]).into_owned();
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
    })
}

/// `process log {offset?, limit?}`: lines of the whole output.
fn log(processes: &Processes, id: &str, args: &Value) -> ToolOutcome {
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
        let Some(v) = s.get(id) else {
            return unknown(id);
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

/// `process write {data, eof?}`: to a background command's stdin.
async fn write(processes: &Processes, id: &str, args: &Value) -> ToolOutcome {
    let data = match args.get("data") {
        Some(Value::String(d)) => d.clone(),
        _ => return error("process: `data` (string) is required for write"),
    };
    let eof = matches!(args.get("eof"), Some(Value::Bool(true)));
    let stdin = processes.with(|s| s.get_mut(id).map(|v| v.stdin.take()));
    let Some(stdin) = stdin else {
        return unknown(id);
    };
    let Some(mut stdin) = stdin else {
        return error(format!("process: session {id} has no open stdin (only background: true commands take input; eof closes it)"));
    };
    if let Err(e) = stdin.write_all(data.as_bytes()).await {
        return error(format!("process: write to {id}: {e}"));
    }
    let _ = stdin.flush().await;
    if !eof {
        processes.with(|s| {
            if let Some(v) = s.get_mut(id) {
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
