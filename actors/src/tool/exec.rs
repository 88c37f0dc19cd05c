//! `exec`: `sh -c <command>` in the workspace, stdin closed, in its own
//! process group so a timeout or an abort kills everything it started.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use super::{error, str_arg, uint_arg, ToolLimits};
use crate::run::ToolOutcome;

/// Reads a pipe to the end, keeping at most `cap` bytes; returns (kept, total).
async fn capped(mut r: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        total += n;
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    (kept, total)
}

fn kill_group(pid: Option<u32>) {
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

pub async fn run(
    workspace: &Path,
    limits: &ToolLimits,
    args: &Value,
    env: &[(String, String)],
    mut cancel: watch::Receiver<bool>,
) -> ToolOutcome {
    let command = match str_arg("exec", args, "command") {
        Ok(c) => c,
        Err(e) => return e,
    };
    let timeout = match uint_arg("exec", args, "timeout") {
        Ok(t) => t
            .map(Duration::from_secs)
            .unwrap_or(limits.exec_timeout)
            .min(limits.exec_max_timeout),
        Err(e) => return e,
    };
    let mut child = match tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(workspace)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
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
    let cap = limits.output_cap;
    let output = async { tokio::join!(capped(stdout, cap), capped(stderr, cap)) };
    let finished = async {
        let out = output.await;
        let status = child.wait().await;
        (out, status)
    };
    let ((out, err), status) = tokio::select! {
        r = finished => r,
        _ = actix::clock::sleep(timeout) => {
            kill_group(pid);
            return error(format!("exec: command timed out after {}s and was killed", timeout.as_secs()));
        }
        _ = wait_cancel(&mut cancel) => {
            kill_group(pid);
            return error("exec: aborted; the command was killed");
        }
    };
    // Reap anything the command left running in its group.
    kill_group(pid);
    let mut text = String::from_utf8_lossy(&out.0).into_owned();
    if !err.0.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(&err.0));
    }
    let dropped = (out.1 - out.0.len()) + (err.1 - err.0.len());
    if dropped > 0 {
        text.push_str(&format!("\n[output truncated: {dropped} more bytes]"));
    }
    let code = status.ok().and_then(|s| s.code());
    match code {
        Some(0) => ToolOutcome {
            text,
            is_error: false,
        },
        Some(c) => ToolOutcome {
            text: format!("{text}\n[exit code {c}]"),
            is_error: true,
        },
        None => ToolOutcome {
            text: format!("{text}\n[killed by a signal]"),
            is_error: true,
        },
    }
}
