//! Running one command hook: `sh -c <command>` in its own process group,
//! the event on stdin, stdout and stderr read (at most 64 KiB each), cut
//! at its budget (the whole group killed), its exit code kept. Nothing
//! here decides what the output means (`reply.rs` does).

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::table::CommandHook;
use super::HookError;

/// What a hook's process read and wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Output kept per stream.
const CAP: usize = 64 * 1024;

async fn read_capped<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            // Read on past the cap (so the writer never blocks), keep the cap.
            Ok(n) => {
                let room = CAP.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Feeds `input`, reads both streams, waits for the exit: all at once (a
/// hook that writes much before reading never blocks on us).
async fn talk(
    stdin: Option<tokio::process::ChildStdin>,
    input: Vec<u8>,
    out: Option<tokio::process::ChildStdout>,
    err: Option<tokio::process::ChildStderr>,
    exit: impl std::future::Future<Output = std::io::Result<std::process::ExitStatus>>,
) -> (String, String, std::io::Result<std::process::ExitStatus>) {
    let feed = async move {
        if let Some(mut s) = stdin {
            // A hook that does not read its input is not an error.
            let _ = s.write_all(&input).await;
            let _ = s.shutdown().await;
        }
    };
    let read_out = async move {
        match out {
            Some(o) => read_capped(o).await,
            None => String::new(),
        }
    };
    let read_err = async move {
        match err {
            Some(e) => read_capped(e).await,
            None => String::new(),
        }
    };
    let ((), stdout, stderr, status) = tokio::join!(feed, read_out, read_err, exit);
    (stdout, stderr, status)
}

/// Runs `hook` with `input` on stdin, in `workspace` unless it names a cwd.
pub async fn run(
    hook: &CommandHook,
    input: &[u8],
    workspace: &std::path::Path,
) -> Result<Ran, HookError> {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(hook.cwd.as_deref().unwrap_or(workspace))
        .envs(hook.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("CLAUDE_PROJECT_DIR", workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| HookError::Spawn(e.to_string()))?;
    let pid = child.id();
    let work = talk(
        child.stdin.take(),
        input.to_vec(),
        child.stdout.take(),
        child.stderr.take(),
        async move { child.wait().await },
    );
    match tokio::time::timeout(hook.timeout, work).await {
        Ok((stdout, stderr, status)) => Ok(Ran {
            code: status.ok().and_then(|s| s.code()),
            stdout,
            stderr,
            took: started.elapsed(),
        }),
        Err(_) => {
            if let Some(pid) = pid {
                // SAFETY: kill(2) on the group the child leads
                // (`process_group(0)`); a group already gone is a no-op.
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                }
            }
            Err(HookError::Timeout(hook.timeout))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::points::HookPoint;
    use crate::hooks::table::{Dialect, HookOwner, Matcher};

    fn hook(command: &str, timeout: Duration) -> CommandHook {
        CommandHook {
            id: "t".into(),
            owner: HookOwner::Config,
            point: HookPoint::BeforeToolCall,
            dialect: Dialect::OpenClaw,
            command: command.into(),
            matcher: Matcher::Any,
            timeout,
            fail_closed: true,
            priority: 0,
            cwd: None,
            env: vec![("X".into(), "1".into())],
        }
    }

    #[actix::test]
    async fn a_hook_reads_stdin_and_a_hanging_one_is_cut_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            &hook(
                "read l; echo \"$l$X\"; echo e >&2; exit 3",
                Duration::from_secs(10),
            ),
            b"in\n",
            dir.path(),
        )
        .await
        .unwrap();
        assert_eq!(
            (ran.code, ran.stdout.as_str(), ran.stderr.as_str()),
            (Some(3), "in1\n", "e\n")
        );
        let marker = dir.path().join("child.pid");
        let cmd = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let err = run(&hook(&cmd, Duration::from_millis(300)), b"", dir.path())
            .await
            .unwrap_err();
        assert!(matches!(err, HookError::Timeout(_)));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The group was killed: the sleeping child is gone (reaped by init).
        let deadline = Instant::now() + Duration::from_secs(10);
        while unsafe { libc::kill(pid, 0) } == 0 {
            assert!(
                Instant::now() < deadline,
                "the hook's child outlived its cut"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
