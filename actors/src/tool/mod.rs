//! Tool executors. `ToolExecutor` answers `ExecuteTool` for the built-in
//! tools of this stage: `exec` (a shell command as a real child process in
//! the agent workspace: timeout, output cap, the whole process group killed
//! on timeout or abort) and `read` (a workspace file, by lines). Arguments
//! are validated; every failure is a tool result with `is_error` so the model
//! can correct itself. The full tool set comes with issue 4.

mod confine;
mod exec;
mod files;
mod patch;
pub mod policy;
mod read;
pub mod sandbox;
mod search;
pub mod ssrf;
pub mod web_fetch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use crate::provider::ToolSpec;
use crate::run::{ExecuteTool, ToolOutcome};

/// Limits of the built-in tools.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    pub exec_timeout: Duration,
    pub exec_max_timeout: Duration,
    /// Bytes of command output kept (head); the rest is counted, not kept.
    pub output_cap: usize,
    /// Bytes of a file `read` returns at most.
    pub read_cap: usize,
    /// `web_fetch` (`tools.web.fetch`).
    pub fetch: web_fetch::FetchSettings,
    /// `agents.defaults.sandbox`.
    pub sandbox: sandbox::SandboxSettings,
    /// `tools.fs.workspaceOnly`: file tools stay inside the workspace.
    pub workspace_only: bool,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            exec_timeout: Duration::from_secs(120),
            exec_max_timeout: Duration::from_secs(1800),
            output_cap: 200_000,
            read_cap: 200_000,
            fetch: web_fetch::FetchSettings::default(),
            sandbox: sandbox::SandboxSettings::default(),
            workspace_only: true,
        }
    }
}

pub(crate) fn error(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome {
        text: text.into(),
        is_error: true,
    }
}

pub(crate) fn ok(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome {
        text: text.into(),
        is_error: false,
    }
}

/// A string argument, or the error result naming it.
pub(crate) fn str_arg<'a>(tool: &str, args: &'a Value, name: &str) -> Result<&'a str, ToolOutcome> {
    match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(error(format!(
            "{tool}: `{name}` must be a non-empty string"
        ))),
        None => Err(error(format!("{tool}: `{name}` (string) is required"))),
    }
}

/// An optional non-negative integer argument.
pub(crate) fn uint_arg(tool: &str, args: &Value, name: &str) -> Result<Option<u64>, ToolOutcome> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| error(format!("{tool}: `{name}` must be a non-negative integer"))),
    }
}

/// The agent workspace the file tools work in, and whether they are kept
/// inside it (`tools.fs.workspaceOnly`, default true). Relative paths always
/// resolve in it.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub only: bool,
}

impl From<&Path> for Workspace {
    fn from(p: &Path) -> Workspace {
        Workspace {
            root: p.to_path_buf(),
            only: true,
        }
    }
}

impl From<&Workspace> for Workspace {
    fn from(w: &Workspace) -> Workspace {
        w.clone()
    }
}

impl std::ops::Deref for Workspace {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.root
    }
}

pub(crate) use confine::confine;

pub struct ToolExecutor {
    workspace: Workspace,
    limits: ToolLimits,
    /// Commands running in the background (`exec` + `process`).
    processes: exec::Processes,
    /// The session tools actor (set once the router exists).
    sessions: std::sync::Arc<std::sync::OnceLock<Addr<crate::subagents::SessionTools>>>,
    /// Exec security and approvals (None: only `security=deny` is enforced).
    approvals: Option<Addr<crate::approvals::ApprovalsActor>>,
}

/// Tools answered by [`crate::subagents::SessionTools`].
pub const SESSION_TOOLS: &[&str] = &[
    "sessions_list",
    "sessions_send",
    "sessions_spawn",
    "session_status",
    "subagents",
];

impl ToolExecutor {
    pub fn new(workspace: PathBuf, limits: ToolLimits) -> ToolExecutor {
        ToolExecutor {
            workspace: Workspace {
                root: workspace,
                only: limits.workspace_only,
            },
            limits,
            processes: exec::Processes::default(),
            sessions: Default::default(),
            approvals: None,
        }
    }

    /// Exec calls go through this approvals actor first.
    pub fn with_approvals(
        mut self,
        approvals: Addr<crate::approvals::ApprovalsActor>,
    ) -> ToolExecutor {
        self.approvals = Some(approvals);
        self
    }

    /// Where session tools go (the gateway sets it after the router starts).
    pub fn with_sessions(
        mut self,
        sessions: std::sync::Arc<std::sync::OnceLock<Addr<crate::subagents::SessionTools>>>,
    ) -> ToolExecutor {
        self.sessions = sessions;
        self
    }

    /// The tools this executor offers, with their JSON schemas.
    pub fn specs() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "exec".into(),
                description: "Run a shell command in the workspace and return its output.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "command": { "type": "string", "description": "The shell command." },
                        "timeout": { "type": "integer", "description": "Seconds before the command is killed." },
                        "yieldMs": { "type": "integer", "description": "Milliseconds to wait before a still-running command moves to the background (default 10000)." },
                        "background": { "type": "boolean", "description": "Start in the background at once (stdin open for process write)." }
                    },
                    "required": ["command"],
                }),
            },
            ToolSpec {
                name: "process".into(),
                description: "Manage background exec sessions: list, poll (new output and status), log, write (stdin), kill, remove, clear.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "type": "string", "enum": ["list", "poll", "log", "write", "kill", "remove", "clear"] },
                        "sessionId": { "type": "string", "description": "The session id exec returned." },
                        "data": { "type": "string", "description": "Text to write to stdin (write)." },
                        "eof": { "type": "boolean", "description": "Close stdin after writing." },
                        "offset": { "type": "integer", "description": "First line (log)." },
                        "limit": { "type": "integer", "description": "Lines (log)." }
                    },
                    "required": ["action"],
                }),
            },
            ToolSpec {
                name: "read".into(),
                description: "Read a text file from the workspace.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string" },
                        "offset": { "type": "integer", "description": "First line (1-based)." },
                        "limit": { "type": "integer", "description": "Number of lines." }
                    },
                    "required": ["path"],
                }),
            },
            ToolSpec {
                name: "write".into(),
                description: "Create or replace a workspace file with the given content (folders are created).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "Path in the workspace." },
                        "content": { "type": "string", "description": "The whole new content." }
                    },
                    "required": ["path", "content"],
                }),
            },
            ToolSpec {
                name: "edit".into(),
                description: "Edit a workspace file with exact-text replacements; each oldText must occur exactly once.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "Path in the workspace." },
                        "edits": {
                            "type": "array",
                            "description": "Replacements, each matched against the original file; they must not overlap.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "oldText": { "type": "string", "description": "Exact text to replace; unique in the file." },
                                    "newText": { "type": "string", "description": "Replacement text." }
                                },
                                "required": ["oldText", "newText"]
                            }
                        }
                    },
                    "required": ["path", "edits"],
                }),
            },
            ToolSpec {
                name: "apply_patch".into(),
                description: "Apply a multi-file patch: *** Begin Patch, then *** Add File: <path> (+lines), *** Update File: <path> (optional *** Move to:, @@ anchor, ' '/-/+ lines), *** Delete File: <path>, then *** End Patch. All or nothing.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "input": { "type": "string", "description": "The whole patch text." }
                    },
                    "required": ["input"],
                }),
            },
            ToolSpec {
                name: "ls".into(),
                description: "List a workspace directory (folders end with /).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "Directory in the workspace (default: the workspace)." },
                        "limit": { "type": "integer", "description": "Entries to return (default 500)." }
                    },
                }),
            },
            ToolSpec {
                name: "find".into(),
                description: "Find workspace files by glob pattern (respects .gitignore).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": { "type": "string", "description": "Glob, e.g. *.rs, src/**/*.md (no / matches file names)." },
                        "path": { "type": "string", "description": "Directory to search (default: the workspace)." },
                        "limit": { "type": "integer", "description": "Results to return (default 1000)." }
                    },
                    "required": ["pattern"],
                }),
            },
            ToolSpec {
                name: "grep".into(),
                description: "Search workspace file contents by regex (respects .gitignore); prints file:line: text.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "pattern": { "type": "string", "description": "Regular expression (Rust regex syntax)." },
                        "path": { "type": "string", "description": "File or directory to search (default: the workspace)." },
                        "glob": { "type": "string", "description": "Only files matching this glob, e.g. *.ts." },
                        "ignoreCase": { "type": "boolean" },
                        "literal": { "type": "boolean", "description": "Treat the pattern as plain text." },
                        "context": { "type": "integer", "description": "Lines of context around each match (max 10)." },
                        "limit": { "type": "integer", "description": "Matches to return (default 100)." }
                    },
                    "required": ["pattern"],
                }),
            },
            ToolSpec {
                name: "sessions_list".into(),
                description: "List sessions (key, label, model, last message), newest first.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "limit": { "type": "integer", "description": "Rows (default 20)." } },
                }),
            },
            ToolSpec {
                name: "sessions_send".into(),
                description: "Send a message to another session and wait for its reply (timeoutSeconds 0: do not wait).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "sessionKey": { "type": "string" },
                        "message": { "type": "string" },
                        "timeoutSeconds": { "type": "integer", "description": "Seconds to wait for the reply (default 30)." }
                    },
                    "required": ["sessionKey", "message"],
                }),
            },
            ToolSpec {
                name: "sessions_spawn".into(),
                description: "Start a sub-agent on a task in the background; its result comes back to this session as a message.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "task": { "type": "string", "description": "What the sub-agent should do, with all the context it needs." },
                        "label": { "type": "string", "description": "A short name for it." },
                        "agentId": { "type": "string" },
                        "model": { "type": "string", "description": "provider/model for the sub-agent." },
                        "skills": { "type": "array", "items": { "type": "string" }, "description": "Only these skills for the sub-agent." },
                        "runTimeoutSeconds": { "type": "integer" }
                    },
                    "required": ["task"],
                }),
            },
            ToolSpec {
                name: "session_status".into(),
                description: "Status of this (or another) session: model, thinking, tokens, context use, time.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "sessionKey": { "type": "string" } },
                }),
            },
            ToolSpec {
                name: "subagents".into(),
                description: "List, steer or kill the sub-agents this session spawned.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": { "type": "string", "enum": ["list", "steer", "kill"] },
                        "target": { "type": "string", "description": "Sub-agent session key or label." },
                        "message": { "type": "string", "description": "Steering text (steer)." }
                    },
                    "required": ["action"],
                }),
            },
            ToolSpec {
                name: "web_fetch".into(),
                description: "Fetch a public http(s) URL and return its readable content as markdown or text (no JavaScript).".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "url": { "type": "string", "description": "http(s) URL." },
                        "extractMode": { "type": "string", "enum": ["markdown", "text"], "description": "Output format (default markdown)." },
                        "maxChars": { "type": "integer", "description": "Truncate the output to this many characters." }
                    },
                    "required": ["url"],
                }),
            },
        ]
    }
}

impl Actor for ToolExecutor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.processes.kill_all();
    }
}

impl Handler<ExecuteTool> for ToolExecutor {
    type Result = ResponseFuture<ToolOutcome>;
    fn handle(&mut self, msg: ExecuteTool, _: &mut Context<Self>) -> Self::Result {
        let (workspace, limits) = (self.workspace.clone(), self.limits.clone());
        let processes = self.processes.clone();
        let session_tools = self.sessions.get().cloned();
        let approvals = self.approvals.clone();
        Box::pin(async move {
            let args = &msg.call.arguments;
            match msg.call.name.as_str() {
                "exec" | "bash" => {
                    let cx = exec::ExecCtx {
                        workspace: &workspace,
                        limits: &limits,
                        processes: &processes,
                        env: &msg.env,
                        session_key: &msg.session_key,
                        agent_id: &msg.agent_id,
                        policy: msg.exec,
                        approvals,
                    };
                    exec::run(&cx, args, msg.cancel.clone()).await
                }
                "process" => exec::process(&processes, args).await,
                name if SESSION_TOOLS.contains(&name) => match session_tools {
                    Some(s) => {
                        s.send(crate::subagents::ExecuteSessionTool {
                            call: msg.call.clone(),
                            caller: msg.session_key.clone(),
                        })
                        .await
                        .unwrap_or_else(|_| error(format!("{name}: session tools are unavailable")))
                    }
                    None => error(format!("{name}: session tools are unavailable")),
                },
                "read" => read::run(&workspace, &limits, args).await,
                "web_fetch" => web_fetch::run(&limits.fetch, args).await,
                "write" => files::write(&workspace, args).await,
                "edit" => files::edit(&workspace, args).await,
                "apply_patch" => patch::run(&workspace, args).await,
                "ls" => search::ls(&workspace, args).await,
                "find" => search::find(&workspace, args).await,
                "grep" => search::grep(&workspace, args).await,
                other => error(format!("unknown tool: {other}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;
    use tokio::sync::watch;

    struct Ws {
        dir: tempfile::TempDir,
        tools: Addr<ToolExecutor>,
    }

    fn setup(limits: ToolLimits) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolExecutor::new(dir.path().to_path_buf(), limits).start();
        Ws { dir, tools }
    }

    async fn call(ws: &Ws, name: &str, args: Value) -> ToolOutcome {
        let (_tx, cancel) = watch::channel(false);
        ws.tools
            .send(ExecuteTool {
                call: ToolCall {
                    id: "c".into(),
                    name: name.into(),
                    arguments: args,
                },
                cancel,
                env: Vec::new().into(),
                session_key: "agent:main:main".into(),
                agent_id: "main".into(),
                exec: Default::default(),
            })
            .await
            .unwrap()
    }

    fn pid_alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .split(") ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with('Z')),
            Err(_) => false,
        }
    }

    #[actix::test]
    async fn exec_runs_in_the_workspace_and_reports_exit_codes() {
        let ws = setup(ToolLimits::default());
        let r = call(&ws, "exec", json!({"command": "echo hello"})).await;
        assert_eq!(r, ok("hello\n"));
        let r = call(&ws, "exec", json!({"command": "pwd"})).await;
        assert_eq!(
            r.text.trim(),
            ws.dir.path().canonicalize().unwrap().display().to_string()
        );
        let r = call(
            &ws,
            "exec",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await;
        assert!(r.is_error);
        assert!(
            r.text.contains("out") && r.text.contains("err") && r.text.contains("[exit code 3]"),
            "{}",
            r.text
        );
    }

    #[actix::test]
    async fn skill_env_reaches_the_command_only() {
        let ws = setup(ToolLimits::default());
        let (_tx, cancel) = watch::channel(false);
        let r = ws
            .tools
            .send(ExecuteTool {
                call: ToolCall {
                    id: "c".into(),
                    name: "exec".into(),
                    arguments: json!({"command": "echo \"$WEATHER_KEY\""}),
                },
                cancel,
                env: vec![("WEATHER_KEY".to_string(), "s3cret".to_string())].into(),
                session_key: "agent:main:main".into(),
                agent_id: "main".into(),
                exec: Default::default(),
            })
            .await
            .unwrap();
        assert_eq!(r, ok("s3cret\n"));
        let r = call(&ws, "exec", json!({"command": "echo \"[$WEATHER_KEY]\""})).await;
        assert_eq!(
            r,
            ok("[]\n"),
            "another run without the skill does not see it"
        );
    }

    #[actix::test]
    async fn bad_arguments_and_unknown_tools_are_tool_errors() {
        let ws = setup(ToolLimits::default());
        assert_eq!(
            call(&ws, "exec", json!({})).await,
            error("exec: `command` (string) is required")
        );
        assert_eq!(
            call(&ws, "exec", json!({"command": 5})).await,
            error("exec: `command` must be a non-empty string")
        );
        assert_eq!(
            call(&ws, "exec", json!({"command": "true", "timeout": -1})).await,
            error("exec: `timeout` must be a non-negative integer")
        );
        assert_eq!(
            call(&ws, "fly", json!({})).await,
            error("unknown tool: fly")
        );
    }

    #[actix::test]
    async fn output_is_capped_with_a_note() {
        let ws = setup(ToolLimits {
            output_cap: 1000,
            ..ToolLimits::default()
        });
        let r = call(
            &ws,
            "exec",
            json!({"command": "head -c 5000 /dev/zero | tr '\\0' a"}),
        )
        .await;
        assert!(!r.is_error);
        assert!(r.text.starts_with(&"a".repeat(1000)), "{}", &r.text[..50]);
        assert!(
            r.text.ends_with("[output truncated: 4000 more bytes]"),
            "{}",
            &r.text[1000..]
        );
    }

    #[actix::test]
    async fn a_timeout_kills_the_command() {
        let ws = setup(ToolLimits::default());
        let started = std::time::Instant::now();
        let r = call(&ws, "exec", json!({"command": "sleep 30", "timeout": 1})).await;
        assert_eq!(r, error("exec: command timed out after 1s and was killed"));
        assert!(started.elapsed() < Duration::from_secs(20), "hang guard");
    }

    #[actix::test]
    async fn abort_kills_the_whole_process_group_no_process_left_behind() {
        let ws = setup(ToolLimits::default());
        let (tx, cancel) = watch::channel(false);
        let call = ToolCall {
            id: "c".into(),
            name: "exec".into(),
            arguments: json!({"command": "sleep 60 & echo $! > bg.pid; sleep 60"}),
        };
        let pending = ws.tools.send(ExecuteTool {
            call,
            cancel,
            env: Vec::new().into(),
            session_key: "agent:main:main".into(),
            agent_id: "main".into(),
            exec: Default::default(),
        });
        let pidfile = ws.dir.path().join("bg.pid");
        let waiter = actix::spawn(pending);
        let mut pid = None;
        for _ in 0..500 {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                pid = Some(p);
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        let pid = pid.expect("the command started its background child");
        assert!(pid_alive(pid));
        tx.send(true).unwrap();
        let r = waiter.await.unwrap().unwrap();
        assert_eq!(r, error("exec: aborted; the command was killed"));
        for _ in 0..500 {
            if !pid_alive(pid) {
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        assert!(!pid_alive(pid), "the background grandchild was killed too");
    }

    fn session_id(text: &str) -> String {
        let i = text.find("bg_").expect("a session id");
        text[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    }

    async fn poll_until_done(ws: &Ws, id: &str) -> String {
        let mut all = String::new();
        for _ in 0..500 {
            let r = call(ws, "process", json!({"action": "poll", "sessionId": id})).await;
            assert!(!r.is_error, "{r:?}");
            all.push_str(&r.text);
            if !r.text.starts_with(&format!("[{id}: running]")) {
                return all;
            }
            actix::clock::sleep(Duration::from_millis(20)).await;
        }
        panic!("{id} never ended: {all}");
    }

    /// Every process listed in /proc whose parent is this test process and
    /// that is a zombie.
    fn zombies_among(pids: &[i32]) -> Vec<i32> {
        pids.iter()
            .copied()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .map(|st| st.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
                    .unwrap_or(false)
            })
            .collect()
    }

    #[actix::test]
    async fn background_commands_take_input_report_output_and_can_be_killed() {
        let ws = setup(ToolLimits::default());
        let r = call(&ws, "exec", json!({"command": "echo $$ > bg1.pid; read line; echo got:$line; echo oops >&2; exit 4", "background": true})).await;
        assert!(
            !r.is_error && r.text.starts_with("Started in the background: session bg_"),
            "{r:?}"
        );
        let id = session_id(&r.text);
        let list = call(&ws, "process", json!({"action": "list"})).await;
        assert!(
            list.text.contains(&id) && list.text.contains("running"),
            "{list:?}"
        );
        let w = call(
            &ws,
            "process",
            json!({"action": "write", "sessionId": id, "data": "hello\n", "eof": true}),
        )
        .await;
        assert_eq!(
            w.text,
            format!("Wrote 6 bytes to {id} and closed its stdin.")
        );
        let out = poll_until_done(&ws, &id).await;
        assert!(out.contains("got:hello") && out.contains("oops"), "{out}");
        assert!(
            out.contains(&format!("[{id}: exited with code 4]")),
            "{out}"
        );
        let again = call(&ws, "process", json!({"action": "poll", "sessionId": id})).await;
        assert_eq!(
            again.text,
            format!("[{id}: exited with code 4]"),
            "poll returns only new output"
        );
        let log = call(&ws, "process", json!({"action": "log", "sessionId": id})).await;
        assert_eq!(log.text, "got:hello\noops");
        let w = call(
            &ws,
            "process",
            json!({"action": "write", "sessionId": id, "data": "x"}),
        )
        .await;
        assert!(w.is_error && w.text.contains("no open stdin"), "{w:?}");

        // A foreground command that outlives yieldMs moves to the background.
        let r = call(
            &ws,
            "exec",
            json!({"command": "echo $$ > bg2.pid; echo started; sleep 30", "yieldMs": 300}),
        )
        .await;
        assert!(!r.is_error, "{r:?}");
        assert!(
            r.text.starts_with("started\n")
                && r.text.contains("moved to the background as session bg_"),
            "{r:?}"
        );
        let id2 = session_id(&r.text);
        let k = call(&ws, "process", json!({"action": "kill", "sessionId": id2})).await;
        assert_eq!(k.text, format!("Killed session {id2}."));
        let out = poll_until_done(&ws, &id2).await;
        assert!(out.contains("killed"), "{out}");

        // A background command still has its timeout.
        let r = call(
            &ws,
            "exec",
            json!({"command": "echo $$ > bg3.pid; sleep 30", "background": true, "timeout": 1}),
        )
        .await;
        let id3 = session_id(&r.text);
        let out = poll_until_done(&ws, &id3).await;
        assert!(out.contains("timed out and killed"), "{out}");

        let cleared = call(&ws, "process", json!({"action": "clear"})).await;
        assert_eq!(cleared.text, "Removed 3 finished sessions.");
        assert_eq!(
            call(&ws, "process", json!({"action": "list"})).await.text,
            "No background sessions."
        );
        assert!(
            call(&ws, "process", json!({"action": "poll", "sessionId": id}))
                .await
                .is_error
        );
        assert!(
            call(&ws, "process", json!({"action": "dance", "sessionId": id}))
                .await
                .text
                .contains("unknown action")
        );
        assert!(call(&ws, "process", json!({})).await.is_error);
        assert!(
            call(&ws, "exec", json!({"command": "true", "background": "yes"}))
                .await
                .is_error
        );

        // No process is left behind, and none is a zombie.
        let pids: Vec<i32> = ["bg1.pid", "bg2.pid", "bg3.pid"]
            .iter()
            .map(|f| {
                std::fs::read_to_string(ws.dir.path().join(f))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            })
            .collect();
        for _ in 0..200 {
            if pids
                .iter()
                .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
            {
                break;
            }
            actix::clock::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(zombies_among(&pids), Vec::<i32>::new(), "no zombies");
        for p in &pids {
            assert!(
                !std::path::Path::new(&format!("/proc/{p}")).exists(),
                "process {p} is gone (reaped)"
            );
        }
    }

    #[actix::test]
    async fn workspace_only_off_lets_file_tools_reach_outside() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("note.txt");
        std::fs::write(&target, "outside text\n").unwrap();
        let ws = setup(ToolLimits {
            workspace_only: false,
            ..ToolLimits::default()
        });
        std::fs::write(ws.dir.path().join("inside.txt"), "inside\n").unwrap();
        let abs = target.display().to_string();
        assert_eq!(
            call(&ws, "read", json!({"path": abs})).await,
            ok("outside text")
        );
        assert_eq!(
            call(&ws, "read", json!({"path": "inside.txt"})).await,
            ok("inside"),
            "relative paths stay in the workspace"
        );
        let made = outside.path().join("new/made.txt").display().to_string();
        assert!(
            !call(&ws, "write", json!({"path": made, "content": "x"}))
                .await
                .is_error
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("new/made.txt")).unwrap(),
            "x"
        );
        let listed = call(
            &ws,
            "ls",
            json!({"path": outside.path().display().to_string()}),
        )
        .await;
        assert_eq!(listed.text, "new/\nnote.txt");
        // The default keeps them in.
        let confined = setup(ToolLimits::default());
        assert!(call(&confined, "read", json!({"path": abs}))
            .await
            .text
            .contains("outside the workspace"));
    }

    #[actix::test]
    async fn outside_paths_are_refused_alike_whether_they_exist_or_not() {
        let ws = setup(ToolLimits::default());
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(out.path(), ws.dir.path().join("door")).unwrap();
        let o = out.path().display().to_string();
        for (tool, args) in [
            ("read", "path"),
            ("ls", "path"),
            ("grep", "path"),
            ("write", "path"),
            ("edit", "path"),
        ] {
            for (exists, missing) in [
                (format!("{o}/secret.txt"), format!("{o}/missing.txt")),
                (
                    "door/secret.txt".to_string(),
                    "door/missing.txt".to_string(),
                ),
            ] {
                let call_with = |p: &str| {
                    let mut a = json!({ args: p, "pattern": "s", "content": "x", "oldText": "s", "newText": "t" });
                    if tool == "ls" || tool == "grep" {
                        a[args] = json!(
                            p.trim_end_matches("/secret.txt")
                                .trim_end_matches("/missing.txt")
                                .to_string()
                                + if p.ends_with("missing.txt") {
                                    "/nope"
                                } else {
                                    ""
                                }
                        );
                    }
                    a
                };
                let a = call(&ws, tool, call_with(&exists)).await;
                let b = call(&ws, tool, call_with(&missing)).await;
                assert!(a.is_error && b.is_error, "{tool}: {a:?} {b:?}");
                assert!(
                    a.text.contains("outside the workspace"),
                    "{tool}: {}",
                    a.text
                );
                assert!(
                    b.text.contains("outside the workspace"),
                    "{tool}: {}",
                    b.text
                );
            }
        }
        assert_eq!(
            std::fs::read_to_string(out.path().join("secret.txt")).unwrap(),
            "s"
        );
    }

    #[actix::test]
    async fn read_returns_lines_and_refuses_to_leave_the_workspace() {
        let ws = setup(ToolLimits::default());
        let d = ws.dir.path();
        std::fs::write(d.join("notes.txt"), "one\ntwo\nthree\nfour\n").unwrap();
        std::fs::write(d.join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join("escape")).unwrap();
        assert_eq!(
            call(&ws, "read", json!({"path": "notes.txt"})).await,
            ok("one\ntwo\nthree\nfour")
        );
        assert_eq!(
            call(
                &ws,
                "read",
                json!({"path": "notes.txt", "offset": 2, "limit": 2})
            )
            .await,
            ok("two\nthree\n[1 more lines; continue with offset 4]")
        );
        assert_eq!(
            call(&ws, "read", json!({"path": "blob.bin"})).await,
            ok("[binary file blob.bin: 4 bytes]")
        );
        // A 3x2 PNG: described by type and size.
        let png: Vec<u8> = [
            &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A][..],
            &[
                0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0,
            ],
            &[0, 0, 0, 0],
        ]
        .concat();
        std::fs::write(d.join("pic.png"), &png).unwrap();
        assert_eq!(
            call(&ws, "read", json!({"path": "pic.png"})).await,
            ok(format!(
                "[image pic.png: image/png, 3x2 px, {} bytes]",
                png.len()
            ))
        );
        for bad in ["../outside.txt", "/etc/hostname", "escape"] {
            let r = call(&ws, "read", json!({"path": bad})).await;
            assert!(r.is_error, "{bad}: {r:?}");
        }
        let r = call(&ws, "read", json!({"path": "/etc/hostname"})).await;
        assert!(r.text.contains("outside the workspace"), "{}", r.text);
        assert!(
            call(&ws, "read", json!({"path": "missing.txt"}))
                .await
                .is_error
        );
        assert!(
            call(&ws, "read", json!({"path": "notes.txt", "offset": "x"}))
                .await
                .is_error
        );
    }
}
