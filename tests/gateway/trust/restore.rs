//! Road 7: an archive someone handed the operator. `ferroclaw backup
//! restore` (the real binary) reads it once, checks every entry as it
//! writes it into a staging dir, checks every path its manifest names, and
//! writes nowhere the archive says: a workspace goes back only where the
//! target's own config puts that agent's workspace, else into
//! `restored-workspaces/`. Crafted archives (a manifest workspace naming
//! `../..` or an absolute path, a `source` naming `~/.ssh`, a file swapped
//! between two opens of a FIFO) move, plant and write nothing outside.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{json, Value};
use sha2::Digest;

use crate::support::process::{ferroclaw, output_text};
use crate::support::process::{WaitWithin, Within, CHILD_LIMIT};

/// A stopped state dir (the released fixture) whose config keeps the
/// agent's workspace outside it, and a good archive of both.
struct Made {
    root: tempfile::TempDir,
    archive: PathBuf,
}

fn made() -> Made {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state-0.1.0");
    crate::gateway::upgrades::copy_dir(&fixture, &state);
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.md"), "heron notes").unwrap();
    let cfg = json!({ "gateway": { "auth": { "mode": "token", "token": "fixture-token-0123456789abcdef" } },
                      "agents": { "defaults": { "workspace": ws } } });
    std::fs::write(state.join("ferroclaw.json"), cfg.to_string()).unwrap();
    let archive = root.path().join("good.tar.gz");
    let out = ferroclaw(&state)
        .args(["backup", "create", "--output"])
        .arg(&archive)
        .within(CHILD_LIMIT);
    assert!(out.status.success(), "{}", output_text(&out));
    Made { root, archive }
}

fn sha(data: &[u8]) -> String {
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The archive at `from` rewritten: `edit` sees every entry (the manifest
/// last, parsed) and says what to write instead. Names are set as raw
/// bytes: tar's own setter refuses `..`, an attacker's tool does not.
fn craft(
    from: &Path,
    to: &Path,
    edit: impl Fn(&str, Vec<u8>, &mut Value) -> Vec<(String, Vec<u8>)>,
) {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(from).unwrap(),
    ));
    let mut entries = Vec::new();
    let mut manifest = Value::Null;
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().to_string();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        if path == "manifest.json" {
            manifest = serde_json::from_slice(&data).unwrap();
        } else {
            entries.push((path, data));
        }
    }
    let mut out = Vec::new();
    for (p, d) in entries {
        out.extend(edit(&p, d, &mut manifest));
    }
    out.extend(edit("manifest.json", vec![], &mut manifest));
    write_raw(to, &out);
}

/// A gzipped tar of regular files named exactly `path` (raw header bytes).
fn write_raw(to: &Path, files: &[(String, Vec<u8>)]) {
    let file = std::fs::File::create(to).unwrap();
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    for (p, d) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(d.len() as u64);
        h.set_mode(0o600);
        h.set_entry_type(tar::EntryType::Regular);
        h.as_old_mut().name[..p.len()].copy_from_slice(p.as_bytes());
        h.set_cksum();
        b.append(&h, d.as_slice()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
}

/// A payload added to the archive and named in its manifest, as a careful
/// attacker would (so every checksum matches).
fn add(manifest: &mut Value, path: &str, data: &[u8]) -> (String, Vec<u8>) {
    manifest["entries"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "path": path, "bytes": data.len(), "sha256": sha(data) }));
    (path.to_string(), data.to_vec())
}

fn restore(target: &Path, archive: &Path, extra: &[&str]) -> Output {
    ferroclaw(target)
        .args(["backup", "restore"])
        .args(extra)
        .arg(archive)
        .stdin(Stdio::null())
        .within(CHILD_LIMIT)
}

#[test]
fn a_manifest_workspace_naming_a_place_outside_moves_nothing() {
    let m = made();
    let root = m.root.path();
    let victim = root.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "mine").unwrap();
    let moved = root.join("moved");
    let evil = root.join("evil.tar.gz");
    for agent in [json!("../../victim"), json!(victim.display().to_string())] {
        craft(&m.archive, &evil, |p, d, manifest| {
            if p == "manifest.json" {
                manifest["workspaces"][0]["agentId"] = agent.clone();
                manifest["workspaces"][0]["source"] = json!(moved.display().to_string());
                return vec![(p.to_string(), serde_json::to_vec(manifest).unwrap())];
            }
            vec![(p.to_string(), d)]
        });
        let v = ferroclaw(root)
            .args(["backup", "verify"])
            .arg(&evil)
            .within(CHILD_LIMIT);
        assert_eq!(v.status.code(), Some(1), "{agent}: {}", output_text(&v));
        assert!(output_text(&v).contains("agent id"), "{}", output_text(&v));
        let target = root.join("target");
        let r = restore(&target, &evil, &[]);
        assert_eq!(r.status.code(), Some(1), "{agent}: {}", output_text(&r));
        assert!(output_text(&r).contains("agent id"), "{}", output_text(&r));
        assert_eq!(
            std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
            "mine",
            "{agent}"
        );
        assert!(
            !moved.exists() && !target.exists(),
            "{agent}: nothing restored, nothing moved"
        );
    }
}

#[test]
fn a_workspace_goes_back_only_where_the_targets_config_puts_it() {
    let m = made();
    let root = m.root.path();
    let ssh = root.join("home/.ssh");
    let evil = root.join("evil.tar.gz");
    // The archive says its workspace came from ~/.ssh and carries a key.
    craft(&m.archive, &evil, |p, d, manifest| {
        if p == "manifest.json" {
            manifest["workspaces"][0]["source"] = json!(ssh.display().to_string());
            let key = add(
                manifest,
                "workspaces/main/authorized_keys",
                b"ssh-ed25519 AAAA attacker",
            );
            return vec![key, (p.to_string(), serde_json::to_vec(manifest).unwrap())];
        }
        vec![(p.to_string(), d)]
    });
    // A target with no config: the default workspace is in the state dir.
    let target = root.join("target");
    let r = restore(&target, &evil, &[]);
    assert!(r.status.success(), "{}", output_text(&r));
    assert!(!ssh.exists(), "nothing planted where the archive said");
    assert_eq!(
        std::fs::read_to_string(target.join("workspace/notes.md")).unwrap(),
        "heron notes",
        "{}",
        output_text(&r)
    );
    // A config naming the agent's workspace: it goes there.
    let cfg = root.join("restore-config.json");
    let mine = root.join("my-workspace");
    std::fs::write(
        &cfg,
        json!({ "agents": { "defaults": { "workspace": mine } } }).to_string(),
    )
    .unwrap();
    let target2 = root.join("target2");
    let r = restore(&target2, &evil, &["--config", cfg.to_str().unwrap()]);
    assert!(r.status.success(), "{}", output_text(&r));
    assert!(
        output_text(&r).contains(&mine.display().to_string()),
        "{}",
        output_text(&r)
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.md")).unwrap(),
        "heron notes"
    );
    assert!(!ssh.exists());
    // That place now has files: the next restore keeps its copy beside.
    let target3 = root.join("target3");
    let r = restore(&target3, &evil, &["--config", cfg.to_str().unwrap()]);
    assert!(r.status.success(), "{}", output_text(&r));
    assert!(
        target3.join("restored-workspaces/main/notes.md").is_file(),
        "{}",
        output_text(&r)
    );
    assert!(!ssh.exists());
}

/// Serves `first` to the first reader of the FIFO at `fifo` and `then` to
/// every later open, until `done` says the reader process has ended; how
/// many times it served. A restore that opened the path a second time
/// (after checking what the first open gave) would read `then`.
fn serve_fifo(
    fifo: PathBuf,
    first: Vec<u8>,
    then: Vec<u8>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    use std::os::unix::fs::OpenOptionsExt;
    std::thread::spawn(move || {
        let mut opens = 0;
        loop {
            if done.load(std::sync::atomic::Ordering::SeqCst) {
                return opens;
            }
            // Non-blocking: ENXIO while no reader has it open.
            let Ok(f) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
            else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            use std::os::fd::AsRawFd;
            // Blocking writes from here on.
            unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, 0) };
            let data = if opens == 0 { &first } else { &then };
            opens += 1;
            let _ = std::io::Write::write_all(&mut &f, data);
            drop(f);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    })
}

#[test]
fn restore_reads_the_archive_once_so_nothing_swapped_in_is_written() {
    let m = made();
    let root = m.root.path();
    // Deep enough that `state/../../escaped` from the staging dir lands in root.
    let target = root.join("a/target");
    std::fs::create_dir_all(root.join("a")).unwrap();
    let swapped = root.join("swapped.tar.gz");
    write_raw(
        &swapped,
        &[("state/../../escaped".to_string(), b"planted".to_vec())],
    );
    let fifo = root.join("archive.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = serve_fifo(
        fifo.clone(),
        std::fs::read(&m.archive).unwrap(),
        std::fs::read(&swapped).unwrap(),
        done.clone(),
    );
    let r = restore(&target, &fifo, &[]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let opens = writer.join().unwrap();
    assert!(r.status.success(), "{}", output_text(&r));
    assert!(opens >= 1, "the archive came through the FIFO");
    assert!(
        !root.join("escaped").exists() && !root.join("a/escaped").exists(),
        "nothing from a second read was written"
    );
    assert!(
        target.join("gateway.token").is_file() || target.join("store").is_dir(),
        "{}",
        output_text(&r)
    );
    // And a piped archive works the same way: `... | ferroclaw backup restore /dev/stdin`.
    let piped_target = root.join("piped");
    let mut child = ferroclaw(&piped_target)
        .args(["backup", "restore", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, &std::fs::read(&m.archive).unwrap()).unwrap();
    drop(stdin);
    let out = child.output_within(CHILD_LIMIT);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(piped_target.join("store").is_dir());
}

#[test]
fn entries_that_climb_out_or_are_not_files_are_refused_as_they_are_read() {
    let m = made();
    let root = m.root.path();
    let evil = root.join("evil.tar.gz");
    // A careful attacker's archive: the escaping entry is named in the
    // manifest with its checksum, so only the per-entry check stops it.
    craft(&m.archive, &evil, |p, d, manifest| {
        if p == "manifest.json" {
            let e = add(manifest, "state/../../escaped", b"planted");
            return vec![e, (p.to_string(), serde_json::to_vec(manifest).unwrap())];
        }
        vec![(p.to_string(), d)]
    });
    let target = root.join("a/target");
    std::fs::create_dir_all(root.join("a")).unwrap();
    let r = restore(&target, &evil, &[]);
    assert_eq!(r.status.code(), Some(1), "{}", output_text(&r));
    assert!(
        output_text(&r).contains("unsafe path"),
        "{}",
        output_text(&r)
    );
    assert!(!root.join("escaped").exists() && !target.exists());
    let left: Vec<String> = std::fs::read_dir(root.join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(left.is_empty(), "no staging dir left: {left:?}");
}
