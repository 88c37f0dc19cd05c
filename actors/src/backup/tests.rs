//! Tests of backup: archives created, verified and restored.

use std::io::Write;

use serde_json::{json, Value};

use super::archive::MANIFEST;
use super::*;
use crate::store::{Store, Tree};

/// A state dir with a store, a memory index in WAL mode with rows only in
/// its WAL (a writer keeps it open), an audit ledger, files, and a config
/// and a workspace kept outside it.
struct Fixture {
    _root: tempfile::TempDir,
    state: PathBuf,
    outside_ws: PathBuf,
    config: PathBuf,
    out: PathBuf,
    store: Store,
    _writer: rusqlite::Connection,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let store = Store::open(&state).unwrap();
    store
        .put(Tree::Sessions, "agent:main:main", &json!({"id": "s1"}))
        .unwrap();
    store
        .put(Tree::CronJobs, "job1", &json!({"name": "daily"}))
        .unwrap();
    std::fs::create_dir_all(state.join("memory")).unwrap();
    let writer = rusqlite::Connection::open(state.join("memory/main.sqlite")).unwrap();
    writer
        .execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE chunks(text TEXT); INSERT INTO chunks VALUES ('the blue heron');")
        .unwrap();
    std::fs::write(state.join("gateway.token"), "tok\n").unwrap();
    std::fs::write(state.join("exec-approvals.json"), "{}").unwrap();
    std::fs::create_dir_all(state.join("logs")).unwrap();
    std::fs::write(state.join("logs/ferroclaw.log"), "not kept").unwrap();
    std::fs::create_dir_all(state.join("media/ab")).unwrap();
    std::fs::write(state.join("media/ab/pic"), [0u8, 1, 2, 255]).unwrap();
    let outside_ws = root.path().join("ws");
    std::fs::create_dir_all(outside_ws.join("memory")).unwrap();
    std::fs::write(outside_ws.join("memory/notes.md"), "heron notes").unwrap();
    let config = root.path().join("cfg.json");
    std::fs::write(&config, "{ gateway: { port: 1 } }").unwrap();
    let out = root.path().join("backups");
    std::fs::create_dir_all(&out).unwrap();
    Fixture {
        state,
        outside_ws,
        config,
        out,
        store,
        _writer: writer,
        _root: root,
    }
}

impl Fixture {
    fn sources(&self) -> Sources {
        Sources {
            state_dir: self.state.clone(),
            config: Some(self.config.clone()),
            workspaces: vec![("main".into(), self.outside_ws.clone())],
            include_workspace: true,
        }
    }
    fn create(&self, name: &str) -> Result<Manifest, BackupError> {
        let store = self.store.clone();
        create(&self.sources(), &self.out.join(name), move |f| {
            store.snapshot(f).map(|_| ()).map_err(BackupError::from)
        })
    }
}

/// A restore of the archive at `archive` with no workspace configured.
fn restore_file(archive: &Path, target: &Path, force: bool) -> Result<Restored, BackupError> {
    restore(std::fs::File::open(archive).unwrap(), target, force, &[])
}

fn scan_all(store: &Store) -> Vec<(String, Value)> {
    let mut all = Vec::new();
    for t in [Tree::Sessions, Tree::CronJobs, Tree::Meta] {
        all.extend(store.scan::<Value>(t, "").unwrap());
    }
    all
}

#[test]
fn a_backup_restores_into_an_empty_dir_with_everything_in_it() {
    let f = fixture();
    let m = f.create("b.tar.gz").unwrap();
    let paths: Vec<&str> = m.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"state/memory/main.sqlite") && paths.contains(&"config/ferroclaw.json"),
        "{paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("logs/") || p.ends_with("-wal") || p.contains("lock")),
        "{paths:?}"
    );
    assert!(!f.out.join("b.tar.gz.partial").exists() && !f.out.join(".b.tar.gz.staging").exists());
    let v = archive::verify(&f.out.join("b.tar.gz")).unwrap();
    assert_eq!(v.store.entries, m.store_entries);
    // The workspace's old place is gone, and the target's config puts the
    // agent's workspace there: the restore puts it back.
    std::fs::remove_dir_all(&f.outside_ws).unwrap();
    let target = f.out.join("restored");
    let configured = [("main".to_string(), f.outside_ws.clone())];
    let input = std::fs::File::open(f.out.join("b.tar.gz")).unwrap();
    let r = restore(input, &target, false, &configured).unwrap();
    assert_eq!(
        r.workspaces,
        vec![("main".to_string(), f.outside_ws.clone())]
    );
    assert_eq!(
        std::fs::read_to_string(f.outside_ws.join("memory/notes.md")).unwrap(),
        "heron notes"
    );
    assert_eq!(
        std::fs::read(target.join("media/ab/pic")).unwrap(),
        [0u8, 1, 2, 255]
    );
    assert_eq!(
        std::fs::read_to_string(target.join("ferroclaw.json")).unwrap(),
        "{ gateway: { port: 1 } }"
    );
    assert!(!target.join("logs").exists());
    // The WAL-only row is in the copy.
    let db = rusqlite::Connection::open(target.join("memory/main.sqlite")).unwrap();
    let text: String = db
        .query_row("SELECT text FROM chunks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(text, "the blue heron");
    let copy = Store::open(&target).unwrap();
    assert_eq!(scan_all(&copy), scan_all(&f.store));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(target.join("gateway.token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "private: {mode:o}");
}

#[test]
fn create_refuses_to_overwrite_or_to_write_inside_what_it_backs_up() {
    let f = fixture();
    f.create("b.tar.gz").unwrap();
    let again = f.create("b.tar.gz").unwrap_err();
    assert!(again.to_string().contains("never overwritten"), "{again}");
    let store = f.store.clone();
    let inside = create(&f.sources(), &f.state.join("x.tar.gz"), move |o| {
        store.snapshot(o).map(|_| ()).map_err(Into::into)
    })
    .unwrap_err();
    assert!(
        inside.to_string().contains("inside what it backs up"),
        "{inside}"
    );
    // A store log that fails halfway leaves nothing behind.
    let failed = create(&f.sources(), &f.out.join("c.tar.gz"), |o| {
        o.write_all(b"{\"format\":\"ferroclaw-store\"").unwrap();
        Err(BackupError::io(
            "the gateway",
            std::io::Error::other("connection reset"),
        ))
    })
    .unwrap_err();
    assert!(failed.to_string().contains("connection reset"), "{failed}");
    let left: Vec<_> = std::fs::read_dir(&f.out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("b.tar.gz")]);
}

/// Rewrites the archive's entries through `edit` (path, bytes) -> entries.
fn rewrite(from: &Path, to: &Path, edit: impl Fn(String, Vec<u8>) -> Vec<(String, Vec<u8>)>) {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(from).unwrap(),
    ));
    let out = std::fs::File::create(to).unwrap();
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        out,
        flate2::Compression::fast(),
    ));
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().to_string();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).unwrap();
        for (p, d) in edit(path, data) {
            let mut h = tar::Header::new_gnu();
            h.set_size(d.len() as u64);
            h.set_mode(0o600);
            // Raw name bytes: tar's own path setter refuses `..`.
            h.as_old_mut().name[..p.len()].copy_from_slice(p.as_bytes());
            h.set_cksum();
            b.append(&h, d.as_slice()).unwrap();
        }
    }
    b.into_inner().unwrap().finish().unwrap();
}

#[test]
fn a_damaged_archive_fails_verify_and_restores_nothing() {
    let f = fixture();
    f.create("b.tar.gz").unwrap();
    let good = f.out.join("b.tar.gz");
    let bytes = std::fs::read(&good).unwrap();
    let bad = f.out.join("bad.tar.gz");
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    type Make<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Make)> = vec![
        (
            "damaged",
            Box::new(|| std::fs::write(&bad, &flipped).unwrap()),
        ),
        (
            "damaged",
            Box::new(|| std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap()),
        ),
        (
            "damaged",
            Box::new(|| std::fs::write(&bad, b"not an archive").unwrap()),
        ),
        (
            "checksum mismatch",
            Box::new(|| {
                rewrite(&good, &bad, |p, mut d| {
                    if p == "state/gateway.token" {
                        d[0] = b'X';
                    }
                    vec![(p, d)]
                })
            }),
        ),
        (
            "unsafe path",
            Box::new(|| {
                rewrite(&good, &bad, |p, d| {
                    let mut v = vec![(p.clone(), d)];
                    if p == "state/gateway.token" {
                        v.push(("state/../../evil".into(), b"x".to_vec()));
                    }
                    v
                })
            }),
        ),
        (
            "not in the archive",
            Box::new(|| {
                rewrite(&good, &bad, |p, d| {
                    if p == "state/exec-approvals.json" {
                        vec![]
                    } else {
                        vec![(p, d)]
                    }
                })
            }),
        ),
        (
            "no manifest",
            Box::new(|| {
                rewrite(&good, &bad, |p, d| {
                    if p == MANIFEST {
                        vec![]
                    } else {
                        vec![(p, d)]
                    }
                })
            }),
        ),
        (
            "end mark",
            Box::new(|| {
                rewrite(&good, &bad, |p, d| {
                    if p != STORE_LOG {
                        return vec![(p, d)];
                    }
                    let text = String::from_utf8(d).unwrap();
                    let cut: Vec<&str> = text.lines().collect();
                    vec![(p, (cut[..cut.len() - 1].join("\n") + "\n").into_bytes())]
                })
            }),
        ),
    ];
    for (want, make) in cases {
        make();
        let err = archive::verify(&bad).unwrap_err();
        assert!(err.to_string().contains(want), "{want}: {err}");
        let target = f.out.join("never");
        let err = restore_file(&bad, &target, false).unwrap_err();
        assert!(err.to_string().contains(want), "{want}: {err}");
        assert!(!target.exists(), "{want}: nothing restored");
    }
    let left: Vec<_> = std::fs::read_dir(&f.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(!left.iter().any(|n| n.contains("restoring")), "{left:?}");
}

#[test]
fn restore_over_a_non_empty_dir_needs_force_and_moves_it_aside() {
    let f = fixture();
    f.create("b.tar.gz").unwrap();
    let archive = f.out.join("b.tar.gz");
    let target = f.out.join("t");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("mine.txt"), "keep me").unwrap();
    let err = restore_file(&archive, &target, false).unwrap_err();
    assert!(
        matches!(err, BackupError::Refused(_)) && err.to_string().contains("not empty"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("mine.txt")).unwrap(),
        "keep me"
    );
    let r = restore_file(&archive, &target, true).unwrap();
    let aside = r.replaced.unwrap();
    assert_eq!(
        std::fs::read_to_string(aside.join("mine.txt")).unwrap(),
        "keep me"
    );
    assert!(target.join("gateway.token").exists() && !target.join("mine.txt").exists());
    // The workspace's old place still has files: the copy stays beside.
    assert_eq!(r.workspaces[0].1, target.join("restored-workspaces/main"));
    // A state dir a gateway runs on is refused even with --force.
    let _running = Store::open(&target).unwrap();
    let err = restore_file(&archive, &target, true).unwrap_err();
    assert!(err.to_string().contains("in use"), "{err}");
}

#[test]
fn a_manifest_naming_a_place_outside_fails_verify_and_restores_nothing() {
    let f = fixture();
    f.create("b.tar.gz").unwrap();
    let good = f.out.join("b.tar.gz");
    let bad = f.out.join("bad.tar.gz");
    let victim = f.out.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "mine").unwrap();
    let cases: [(&str, Value, &str); 6] = [
        ("agentId", json!("../../victim"), "agent id"),
        ("agentId", json!(victim.display().to_string()), "agent id"),
        ("agentId", json!(""), "agent id"),
        ("agentId", json!("a/b"), "agent id"),
        ("source", json!("/tmp/x/../../etc"), "plain path"),
        ("source", json!("ws\u{0}x"), "plain path"),
    ];
    for (field, value, want) in cases {
        rewrite(&good, &bad, |p, d| {
            if p != archive::MANIFEST {
                return vec![(p, d)];
            }
            let mut m: Value = serde_json::from_slice(&d).unwrap();
            m["workspaces"][0][field] = value.clone();
            vec![(p, serde_json::to_vec(&m).unwrap())]
        });
        let err = archive::verify(&bad).unwrap_err();
        assert!(err.to_string().contains(want), "{field}={value}: {err}");
        let target = f.out.join("never");
        let err = restore_file(&bad, &target, false).unwrap_err();
        assert!(err.to_string().contains(want), "{field}={value}: {err}");
        assert!(!target.exists(), "{field}={value}: nothing restored");
        assert_eq!(
            std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
            "mine"
        );
    }
    // A workspace entry no manifest workspace owns, and a store file
    // planted beside the store's log.
    for (extra, want) in [
        ("workspaces/ghost/x.md", "no workspace"),
        ("state/store/conf", "unsafe path"),
    ] {
        rewrite(&good, &bad, |p, d| {
            if p != archive::MANIFEST {
                return vec![(p, d)];
            }
            let body = b"planted".to_vec();
            let mut m: Value = serde_json::from_slice(&d).unwrap();
            let hash = {
                use sha2::Digest;
                let h = sha2::Sha256::digest(&body);
                h.iter().map(|b| format!("{b:02x}")).collect::<String>()
            };
            m["entries"]
                .as_array_mut()
                .unwrap()
                .push(json!({"path": extra, "bytes": body.len(), "sha256": hash}));
            vec![
                (extra.to_string(), body),
                (p, serde_json::to_vec(&m).unwrap()),
            ]
        });
        let err = archive::verify(&bad).unwrap_err();
        assert!(err.to_string().contains(want), "{extra}: {err}");
    }
}
