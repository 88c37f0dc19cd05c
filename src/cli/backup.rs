//! `ferroclaw backup create|verify|restore` (OpenClaw's `openclaw backup
//! create|verify`, plus a restore). The archive is made by
//! `ferroclaw_actors::backup`; here: where it goes, where the store's
//! snapshot comes from (the store itself when no gateway runs on the state
//! dir; else the running gateway's `GET /backup/store`, so the gateway is
//! never stopped), and what is printed. Exit codes: 0 done, 1 failed
//! (an archive that fails a check among them), 2 refused as asked.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ferroclaw_actors::backup::{self, archive, BackupError, Sources};
use ferroclaw_actors::store::{Store, StoreError};
use serde_json::json;

#[derive(clap::Subcommand)]
pub enum BackupCommand {
    /// Archive the state dir (store, memory, audit, config, credentials,
    /// approvals, media, workspace), also while the gateway runs.
    Create {
        /// The archive file, or a folder for a timestamped one (default:
        /// the current folder; home when that is inside the state dir).
        #[arg(long)]
        output: Option<PathBuf>,
        /// Leave the agents' workspaces out.
        #[arg(long)]
        no_include_workspace: bool,
        /// Verify the archive once written.
        #[arg(long)]
        verify: bool,
    },
    /// Check an archive: one manifest, safe paths, every checksum, a whole store log.
    Verify { archive: PathBuf },
    /// Restore an archive (a file, or `/dev/stdin`) into the state dir
    /// (`--state-dir`), which must be empty or absent; `--force` moves a
    /// non-empty one aside first. An archived workspace goes where this
    /// config puts that agent's workspace (when that place is empty), else
    /// into `<state dir>/restored-workspaces/<agent>/`.
    Restore {
        archive: PathBuf,
        #[arg(long)]
        force: bool,
    },
}

/// What main.rs resolved.
pub struct Context {
    pub state_dir: PathBuf,
    pub config: PathBuf,
    pub workspaces: Vec<(String, PathBuf)>,
    pub home: Option<PathBuf>,
    /// The working dir (where an archive goes by default).
    pub cwd: PathBuf,
    pub target: super::Target,
}

fn fail(e: &BackupError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(match e {
        BackupError::Refused(_) => 2,
        _ => 1,
    })
}

pub fn run(cmd: BackupCommand, cx: &Context) -> ExitCode {
    let json = cx.target.json;
    let done = match cmd {
        BackupCommand::Create {
            output,
            no_include_workspace,
            verify,
        } => create(cx, output, !no_include_workspace, verify)
            .map(|(path, m)| print_created(json, &path, &m, verify)),
        BackupCommand::Verify { archive } => {
            archive::verify(&archive).map(|v| print_verified(json, &archive, &v))
        }
        BackupCommand::Restore { archive, force } => {
            // Opened once and read once: a pipe or `/dev/stdin` works, and
            // nothing can swap the file between a check and the writes.
            std::fs::File::open(&archive)
                .map_err(|e| BackupError::io(format!("opening {}", archive.display()), e))
                .and_then(|input| backup::restore(input, &cx.state_dir, force, &cx.workspaces))
                .map(|r| print_restored(json, cx, &r))
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn print_created(json: bool, path: &Path, m: &archive::Manifest, verify: bool) {
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if json {
        println!(
            "{}",
            json!({ "ok": true, "archive": path, "bytes": bytes, "storeEntries": m.store_entries, "files": m.entries.len(), "verified": verify })
        );
    } else {
        println!(
            "backup written: {} ({} bytes; {} store entries, {} files{})",
            path.display(),
            bytes,
            m.store_entries,
            m.entries.len(),
            if verify { "; verified" } else { "" }
        );
    }
}

fn print_verified(json: bool, archive: &Path, v: &archive::Verified) {
    if json {
        println!(
            "{}",
            json!({ "ok": true, "archive": archive, "storeEntries": v.store.entries, "files": v.manifest.entries.len(), "writtenBy": v.manifest.written_by, "createdAtMs": v.manifest.created_at_ms })
        );
    } else {
        println!(
            "ok: {} ({} store entries, {} files, made by ferroclaw {} from {})",
            archive.display(),
            v.store.entries,
            v.manifest.entries.len(),
            v.manifest.written_by,
            v.manifest.state_dir
        );
    }
}

fn print_restored(json: bool, cx: &Context, r: &backup::Restored) {
    if json {
        let ws: Vec<_> = r
            .workspaces
            .iter()
            .map(|(a, p)| json!({ "agentId": a, "path": p }))
            .collect();
        println!(
            "{}",
            json!({ "ok": true, "stateDir": cx.state_dir, "replaced": r.replaced, "workspaces": ws, "restoreOperationId": r.operation_id })
        );
        return;
    }
    println!("restored into {}", cx.state_dir.display());
    println!("restore operation: {}", r.operation_id);
    if let Some(old) = &r.replaced {
        println!("what was there is now in {}", old.display());
    }
    for (agent, path) in &r.workspaces {
        println!("workspace of {agent}: {}", path.display());
    }
}

/// Where the archive goes: `--output` as given (never overwritten), or a
/// timestamped name in that folder (else the working directory, the home
/// when that is inside the state dir), made unique: a second backup in the
/// same second gets `-2`, then `-3`...
fn output_path(cx: &Context, output: Option<PathBuf>) -> PathBuf {
    let dir = match output {
        Some(p) if p.is_dir() => p,
        Some(p) => return p,
        None => {
            let cwd = &cx.cwd;
            let state = std::fs::canonicalize(&cx.state_dir).unwrap_or(cx.state_dir.clone());
            match &cx.home {
                Some(home) if cwd.starts_with(&state) => home.clone(),
                _ => cwd.clone(),
            }
        }
    };
    unique(&dir, &backup::default_name(chrono::Utc::now()))
}

/// `dir/name`, else `dir/<stem>-2.tar.gz`, `-3`... the first not taken.
fn unique(dir: &std::path::Path, name: &str) -> PathBuf {
    let stem = name.trim_end_matches(".tar.gz");
    std::iter::once(dir.join(name))
        .chain((2..).map(|n| dir.join(format!("{stem}-{n}.tar.gz"))))
        .find(|p| !p.exists())
        .unwrap_or_else(|| dir.join(name))
}

/// The snapshot URL of the gateway `ws://host:port` names.
fn snapshot_url(ws: &str) -> String {
    let http = ws
        .replacen("wss://", "https://", 1)
        .replacen("ws://", "http://", 1);
    format!("{}/backup/store", http.trim_end_matches('/'))
}

/// Reads the running gateway's store snapshot (`GET /backup/store`) into
/// `out`, refusing one whose state dir is not `state_dir`.
async fn fetch_store_log(
    url: &str,
    token: Option<&str>,
    state_dir: &Path,
    out: &mut std::fs::File,
) -> Result<(), BackupError> {
    use std::io::Write;
    let reach = |e: reqwest::Error| {
        BackupError::io(
            format!("reading the store from the gateway at {url}"),
            std::io::Error::other(e),
        )
    };
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(reach)?;
    let mut req = client.get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let mut resp = req.send().await.map_err(reach)?;
    if !resp.status().is_success() {
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        return Err(BackupError::Refused(format!(
            "the gateway at {url} refused the snapshot ({status}): {body}"
        )));
    }
    let theirs = resp
        .headers()
        .get("x-ferroclaw-state-dir")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| percent_encoding::percent_decode_str(v).decode_utf8().ok())
        .map(|v| PathBuf::from(v.as_ref()));
    let ours = std::fs::canonicalize(state_dir).unwrap_or(state_dir.to_path_buf());
    if theirs.as_deref() != Some(ours.as_path()) {
        return Err(BackupError::Refused(format!(
            "the gateway at {url} runs on {}, not on {}",
            theirs
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "another state dir".into()),
            ours.display()
        )));
    }
    while let Some(chunk) = resp.chunk().await.map_err(reach)? {
        out.write_all(&chunk)
            .map_err(|e| BackupError::io("writing the store log", e))?;
    }
    out.flush()
        .map_err(|e| BackupError::io("writing the store log", e))
}

fn create(
    cx: &Context,
    output: Option<PathBuf>,
    include_workspace: bool,
    verify: bool,
) -> Result<(PathBuf, archive::Manifest), BackupError> {
    if !cx.state_dir.join("store").is_dir() {
        return Err(BackupError::Refused(format!(
            "no ferroclaw state in {} (pass --state-dir)",
            cx.state_dir.display()
        )));
    }
    let src = Sources {
        state_dir: cx.state_dir.clone(),
        config: Some(cx.config.clone()),
        workspaces: cx.workspaces.clone(),
        include_workspace,
    };
    let out = output_path(cx, output);
    let manifest = match Store::open(&cx.state_dir) {
        Ok(store) => backup::create(&src, &out, |f| {
            store.snapshot(f).map(|_| ()).map_err(BackupError::from)
        })?,
        Err(StoreError::AlreadyInUse { .. }) => {
            let url = snapshot_url(&cx.target.url);
            backup::create(&src, &out, |f| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| BackupError::io("starting", e))?;
                rt.block_on(fetch_store_log(&url, cx.target.token.as_deref(), &cx.state_dir, f))
                    .map_err(|e| match e {
                        BackupError::Io { what, source } => BackupError::Io {
                            what: format!("{what} (the state dir is in use by a running gateway; pass its --url and --token, or stop it)"),
                            source,
                        },
                        other => other,
                    })
            })?
        }
        Err(e) => return Err(e.into()),
    };
    if verify {
        archive::verify(&out)?;
    }
    Ok((out, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_taken_in_the_same_second_gets_the_next_number() {
        let dir = tempfile::tempdir().unwrap();
        let name = "2026-11-30T18-00-00Z-ferroclaw-backup.tar.gz";
        assert_eq!(super::unique(dir.path(), name), dir.path().join(name));
        std::fs::write(dir.path().join(name), "x").unwrap();
        let second = "2026-11-30T18-00-00Z-ferroclaw-backup-2.tar.gz";
        assert_eq!(super::unique(dir.path(), name), dir.path().join(second));
        std::fs::write(dir.path().join(second), "x").unwrap();
        assert!(super::unique(dir.path(), name)
            .ends_with("2026-11-30T18-00-00Z-ferroclaw-backup-3.tar.gz"));
    }

    #[test]
    fn the_snapshot_url_follows_the_gateway_url() {
        assert_eq!(
            snapshot_url("ws://127.0.0.1:18789"),
            "http://127.0.0.1:18789/backup/store"
        );
        assert_eq!(
            snapshot_url("wss://gw.example/"),
            "https://gw.example/backup/store"
        );
    }
}
