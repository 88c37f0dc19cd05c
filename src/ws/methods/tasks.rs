//! `tasks.list` / `tasks.get` / `tasks.cancel`: OpenClaw's task ledger,
//! answered from the background work ferroclaw has: a cron job's runs and
//! a sub-agent's (the `runs` tree, kept a day, with the registry's live
//! view), and the commands `exec` moved to the background (the executor's
//! process table, until the gateway stops). Chat turns and heartbeats are
//! not tasks, as in OpenClaw. Cancel aborts the run (or takes it out of
//! its queue) or kills the command.

use std::time::Duration;

use ferroclaw_actors::ids::key;
use ferroclaw_actors::router::ListSessions;
use ferroclaw_actors::run::RunKind;
use ferroclaw_actors::runs::{wait_run, ListTaskRuns, TaskRun};
use ferroclaw_actors::session::{AbortSession, CancelQueuedRun};
use ferroclaw_actors::tool::BackgroundTask;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{down, json, params, session_for, session_key, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// How long `tasks.cancel` waits for what it stopped to record its end.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);
/// A page when the caller names no `limit`.
const DEFAULT_LIMIT: usize = 100;
/// Background commands' ids are prefixed so they never meet a run id.
const EXEC_PREFIX: &str = "exec:";

/// OpenClaw's `TaskSummary` (the fields ferroclaw knows).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskSummary {
    id: String,
    kind: &'static str,
    runtime: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    agent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    child_session_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    has_transcript: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    task_id: String,
    created_at: u64,
    updated_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl TaskSummary {
    fn live(&self) -> bool {
        matches!(self.status, "queued" | "running")
    }

    fn touches(&self, key: &str) -> bool {
        [&self.session_key, &self.child_session_key, &self.owner_key]
            .iter()
            .any(|k| k.as_deref() == Some(key))
    }
}

/// A run's task: `spawned_by` is who spawned a sub-agent's session.
fn run_task(t: TaskRun, spawned_by: Option<String>) -> TaskSummary {
    let r = &t.record;
    let status = match (r.status.as_str(), &t.live) {
        ("pending", Some(l)) if l.started => "running",
        ("pending", _) => "queued",
        ("ok", _) => "completed",
        ("aborted", _) => "cancelled",
        _ if r.error.as_deref().is_some_and(|e| e.contains("timed out")) => "timed_out",
        _ => "failed",
    };
    let ended = (r.ended_at > 0).then_some(r.ended_at);
    let key = r.session_key.as_str().to_string();
    let (kind, session_key, child) = match r.kind {
        RunKind::Subagent => ("subagent", spawned_by, Some(key.clone())),
        _ => ("cron", Some(key.clone()), None),
    };
    TaskSummary {
        id: t.run_id.to_string(),
        kind,
        runtime: kind,
        status,
        title: r.title.clone(),
        agent_id: key::agent(&key).to_string(),
        owner_key: session_key.clone(),
        session_key,
        has_transcript: child.as_ref().map(|_| true),
        child_session_key: child,
        run_id: Some(t.run_id.to_string()),
        task_id: t.run_id.to_string(),
        created_at: r.started_at,
        updated_at: ended.unwrap_or(r.started_at),
        started_at: (status != "queued").then_some(r.started_at),
        ended_at: ended,
        last_tool_name: t.open_tool,
        error: r.error.clone(),
    }
}

/// A background command's task.
fn exec_task(b: BackgroundTask) -> TaskSummary {
    let (status, error) = match (b.exit, b.timed_out) {
        (_, true) => ("timed_out", Some("timed out and killed".to_string())),
        (None, _) => ("running", None),
        (Some(Some(0)), _) => ("completed", None),
        (Some(Some(c)), _) => ("failed", Some(format!("exit code {c}"))),
        (Some(None), _) => ("cancelled", Some("killed by a signal".to_string())),
    };
    let id = format!("{EXEC_PREFIX}{}", b.id);
    let title: String = b.command.chars().take(80).collect();
    TaskSummary {
        task_id: id.clone(),
        id,
        kind: "exec",
        runtime: "cli",
        status,
        title: Some(title),
        agent_id: b.agent_id,
        session_key: Some(b.session_key.clone()),
        child_session_key: None,
        owner_key: Some(b.session_key),
        has_transcript: None,
        run_id: None,
        created_at: b.started_ms,
        updated_at: b.started_ms,
        started_at: Some(b.started_ms),
        ended_at: None,
        last_tool_name: None,
        error,
    }
}

/// Every task there is, newest activity first.
async fn all_tasks(state: &SharedState) -> Result<Vec<TaskSummary>, ErrorShape> {
    let gw = &state.gateway;
    let runs = gw
        .runs
        .send(ListTaskRuns)
        .await
        .map_err(down)?
        .map_err(|e| ErrorShape::unavailable(format!("cannot read the task records: {e}")))?;
    let spawners = match runs.iter().any(|t| t.record.kind == RunKind::Subagent) {
        true => gw.router.send(ListSessions).await.map_err(down)?.ok(),
        false => None,
    };
    let spawner = |child: &str| {
        let rows = spawners.as_ref()?;
        let row = rows.iter().find(|r| r.key == child)?;
        row.entry.spawned_by.clone()
    };
    // A sub-agent's runs are tasks; a message `sessions_send` put into a
    // session people talk to is a turn of that session, not a task.
    let spawned = |t: &TaskRun| {
        t.record.kind != RunKind::Subagent || key::has(t.record.session_key.as_str(), "subagent")
    };
    let mut tasks: Vec<TaskSummary> = runs
        .into_iter()
        .filter(spawned)
        .map(|t| {
            let by = spawner(t.record.session_key.as_str());
            run_task(t, by)
        })
        .collect();
    tasks.extend(gw.processes.tasks().into_iter().map(exec_task));
    tasks.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
    Ok(tasks)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Statuses {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListParams {
    #[serde(default)]
    status: Option<Statuses>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    sort_by: Option<String>,
}

/// `tasks.list`: a page of tasks, filtered; the cursor is the offset of
/// the next page in the same order.
pub async fn list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ListParams = params("tasks.list", &object(p))?;
    let statuses: Vec<String> = match p.status {
        None => Vec::new(),
        Some(Statuses::One(s)) => vec![s],
        Some(Statuses::Many(v)) => v,
    };
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=500).contains(&limit) {
        return Err(ErrorShape::invalid(
            "invalid tasks.list params: limit must be 1 to 500",
        ));
    }
    let offset = match &p.cursor {
        None => 0,
        Some(c) => c.parse::<usize>().map_err(|_| {
            ErrorShape::invalid(
                "invalid or expired tasks.list cursor; restart pagination without a cursor",
            )
        })?,
    };
    let key = match &p.session_key {
        Some(k) => Some(session_key(state, k)?.as_str().to_string()),
        None => None,
    };
    let agent = p.agent_id.map(|a| a.to_ascii_lowercase());
    let mut tasks: Vec<TaskSummary> = all_tasks(state)
        .await?
        .into_iter()
        .filter(|t| statuses.is_empty() || statuses.iter().any(|s| s == t.status))
        .filter(|t| agent.as_deref().is_none_or(|a| t.agent_id == a))
        .filter(|t| key.as_deref().is_none_or(|k| t.touches(k)))
        .collect();
    if p.sort_by.as_deref() == Some("endedAt") {
        tasks.sort_by_key(|t| std::cmp::Reverse(t.ended_at.unwrap_or(t.updated_at)));
    }
    let page: Vec<&TaskSummary> = tasks.iter().skip(offset).take(limit).collect();
    let mut out = json!({ "tasks": page });
    if offset + limit < tasks.len() {
        out["nextCursor"] = json!((offset + limit).to_string());
    }
    json(out)
}

fn object(p: &Value) -> Value {
    match p {
        Value::Null => json!({}),
        v => v.clone(),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GetParams {
    task_id: String,
}

async fn find(state: &SharedState, id: &str) -> Result<Option<TaskSummary>, ErrorShape> {
    Ok(all_tasks(state).await?.into_iter().find(|t| t.id == id))
}

fn not_found() -> ErrorShape {
    ErrorShape::invalid("Task not found.")
}

/// `tasks.get`: one task, or OpenClaw's not-found error.
pub async fn get(state: &SharedState, p: &Value) -> MethodResult {
    let p: GetParams = params("tasks.get", p)?;
    let task = find(state, &p.task_id).await?.ok_or_else(not_found)?;
    json(json!({ "task": task }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CancelParams {
    task_id: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `tasks.cancel`: stops a queued or running task and answers the task as
/// it then is (`cancelled`: it was live and was told to stop).
pub async fn cancel(state: &SharedState, p: &Value) -> MethodResult {
    let p: CancelParams = params("tasks.cancel", p)?;
    let Some(task) = find(state, &p.task_id).await? else {
        return json(json!({ "found": false, "cancelled": false, "reason": "Task not found." }));
    };
    if !task.live() {
        let why = format!("the task already ended ({})", task.status);
        return json(json!({ "found": true, "cancelled": false, "reason": why, "task": task }));
    }
    let cancelled = match p.task_id.strip_prefix(EXEC_PREFIX) {
        Some(id) => stop_command(state, id).await,
        None => stop_run(state, &task).await?,
    };
    tracing::info!(task = %p.task_id, cancelled, reason = p.reason.as_deref().unwrap_or(""), "task cancel");
    let task = find(state, &p.task_id).await?.unwrap_or(task);
    let mut out = json!({ "found": true, "cancelled": cancelled, "task": task });
    if !cancelled {
        out["reason"] = json!("the task ended before it could be stopped");
    }
    json(out)
}

/// Kills a background command and waits (bounded) until it has exited.
async fn stop_command(state: &SharedState, id: &str) -> bool {
    let processes = &state.gateway.processes;
    if !processes.kill(id) {
        return false;
    }
    let ended = || {
        processes
            .tasks()
            .iter()
            .any(|t| t.id == id && t.exit.is_some())
    };
    let deadline = tokio::time::Instant::now() + CANCEL_SETTLE;
    while !ended() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Aborts a task's run (or takes it out of its session's queue) and waits
/// (bounded) for its end to be recorded.
async fn stop_run(state: &SharedState, task: &TaskSummary) -> Result<bool, ErrorShape> {
    let gw = &state.gateway;
    let run_key = task
        .child_session_key
        .as_ref()
        .or(task.session_key.as_ref());
    let Some(run_key) = run_key else {
        return Ok(false);
    };
    let session = session_for(state, session_key(state, run_key)?).await?;
    let run_id = task.id.clone();
    let stopped = match task.status {
        "queued" => session
            .send(CancelQueuedRun {
                run_id: run_id.clone().into(),
            })
            .await
            .map_err(down)?,
        _ => {
            let ids = session.send(AbortSession).await.map_err(down)?;
            ids.iter().any(|r| r.as_str() == run_id)
        }
    };
    if stopped {
        wait_run(&gw.runs, &run_id, None, CANCEL_SETTLE).await;
    }
    Ok(stopped)
}
