//! A CLI entry run for its output (`tools.media` transcription entries,
//! `tools.links` readers): its own process group, killed with whatever it
//! started when it ends or runs out of time; stdout capped.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Why a CLI entry gave no text.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("a CLI entry needs {0}")]
    Entry(&'static str),
    #[error("no stdout pipe")]
    NoStdout,
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("printed more than {0} bytes")]
    TooMuch(usize),
    #[error("exited with {0}")]
    Exit(ExitStatus),
    #[error("timed out after {0} s")]
    Timeout(f64),
    #[error("printed something that is not text")]
    NotText,
}

/// Runs `cmd` (stdin: `input`, else nothing) within `timeout`; at most
/// `max` bytes of stdout. The input is written beside the read: a CLI that
/// prints before it reads everything cannot deadlock on a full pipe.
pub async fn output(
    mut cmd: tokio::process::Command,
    input: Option<String>,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, CliError> {
    cmd.stdin(match input {
        Some(_) => Stdio::piped(),
        None => Stdio::null(),
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true)
    .process_group(0);
    let mut child = cmd.spawn().map_err(CliError::Start)?;
    let pid = child.id();
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().ok_or(CliError::NoStdout)?;
    let work = async {
        let feed = async move {
            if let (Some(mut pipe), Some(body)) = (stdin, input) {
                let _ = pipe.write_all(body.as_bytes()).await;
            }
        };
        let read = async {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16 * 1024];
            loop {
                let n = stdout.read(&mut chunk).await?;
                if n == 0 {
                    return Ok::<_, CliError>(buf);
                }
                if buf.len() + n > max {
                    return Err(CliError::TooMuch(max));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        };
        let ((), out) = tokio::join!(feed, read);
        // Over the cap: not waited for (it may be blocked on a full pipe).
        let out = out?;
        let status = child.wait().await?;
        if !status.success() {
            return Err(CliError::Exit(status));
        }
        Ok(out)
    };
    let result = tokio::time::timeout(timeout, work).await;
    // The whole group: whatever the CLI started goes with it.
    crate::tool::kill_group(pid);
    result.map_err(|_| CliError::Timeout(timeout.as_secs_f64()))?
}
