//! `ferroclaw backup` against the real binary: an archive taken from a
//! running gateway while chats go on restores into an empty state dir, and
//! a gateway started there answers the same `chat.history` (a point-in-time
//! cut of the live one), `cron.list`, paired devices, nodes and memory
//! search. Bad input: a damaged or truncated archive, a restore over a
//! non-empty dir or a running gateway's, the wrong gateway, an unreachable
//! one, and a disk that fills mid-backup (the gateway goes on; nothing
//! partial is left).

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{json, Value};

use crate::support::process::{ferroclaw, spawn_gateway};
use crate::support::process::{WaitWithin, Within, CHILD_LIMIT};
use crate::support::{admin_at, chat_until_done, Client};

const TOKEN: &str = "fixture-token-0123456789abcdef";

/// The released fixture (a chat turn, a cron job, a paired node) plus a
/// memory file in its workspace.
fn state_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state-0.1.0");
    super::upgrades::copy_dir(&fixture, dir.path());
    std::fs::create_dir_all(dir.path().join("workspace/memory")).unwrap();
    std::fs::write(
        dir.path().join("workspace/memory/birds.md"),
        "The great blue heron nests by the river every spring.\n",
    )
    .unwrap();
    dir
}

fn backup(state: &Path, addr: &str, args: &[&str]) -> Output {
    ferroclaw(state)
        .args(["--url", &format!("ws://{addr}"), "--token", TOKEN, "backup"])
        .args(args)
        .stdin(Stdio::null())
        .within(CHILD_LIMIT)
}

fn text(o: &Output) -> String {
    crate::support::process::output_text(o)
}

async fn heron(c: &mut Client) -> Value {
    for _ in 0..200 {
        let r = c
            .call("memory.search", json!({"query": "blue heron river"}))
            .await;
        if r["payload"]["results"]
            .as_array()
            .is_some_and(|a| a.iter().any(|h| h["path"] == "memory/birds.md"))
        {
            return r["payload"]["results"][0]["path"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the memory file was never found");
}

/// The texts of a session's messages, in order.
async fn history(c: &mut Client) -> Vec<String> {
    let h = c
        .call("chat.history", json!({"sessionKey": "main", "limit": 1000}))
        .await;
    h["payload"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect()
}

async fn facts(c: &mut Client) -> (Value, Vec<Value>, Value) {
    let cron = c.call("cron.list", json!({})).await["payload"].clone();
    assert!(cron.to_string().contains("fixture job"), "{cron}");
    // The revision is the running process's own.
    let cron = cron["jobs"].clone();
    let devices = c.call("device.pair.list", json!({})).await["payload"]["paired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| json!([d["deviceId"], d["roles"], d["displayName"]]))
        .collect();
    let nodes = c.call("node.list", json!({})).await["payload"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| json!([n["nodeId"], n["approvalState"], n["commands"]]))
        .collect();
    (cron, devices, nodes)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backup_taken_during_chats_restores_to_the_same_gateway() {
    let state = state_dir();
    let (_gw, addr, _) = spawn_gateway(state.path());
    let url = format!("ws://{addr}");
    let mut c = admin_at(&url, TOKEN).await;
    heron(&mut c).await;
    for i in 0..2 {
        crate::support::say(
            &mut c,
            "main",
            &format!("before the backup {i}"),
            &format!("pre-{i}"),
        )
        .await;
    }
    // Chats go on, on their own connection, while the backup runs.
    let chatting = {
        let url = url.clone();
        tokio::spawn(async move {
            let mut c = admin_at(&url, TOKEN).await;
            for i in 0..8 {
                crate::support::chat_send(
                    &mut c,
                    "main",
                    &format!("during {i}"),
                    &format!("during-{i}"),
                )
                .await;
                chat_until_done(&mut c, &format!("during-{i}")).await;
            }
        })
    };
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("b.tar.gz");
    let (s, a, o) = (state.path().to_path_buf(), addr.clone(), out.clone());
    let made = tokio::task::spawn_blocking(move || {
        backup(
            &s,
            &a,
            &[
                "create",
                "--output",
                o.to_str().unwrap(),
                "--verify",
                "--json",
            ],
        )
    })
    .await
    .unwrap();
    assert!(made.status.success(), "{}", text(&made));
    let report: Value = serde_json::from_slice(&made.stdout).unwrap();
    assert_eq!(
        (report["ok"].as_bool(), report["verified"].as_bool()),
        (Some(true), Some(true)),
        "{report}"
    );
    chatting.await.unwrap();
    let live = history(&mut c).await;
    let live_facts = facts(&mut c).await;

    let verified = ferroclaw(state.path())
        .args(["backup", "verify"])
        .arg(&out)
        .within(CHILD_LIMIT);
    assert!(verified.status.success(), "{}", text(&verified));
    let target = tempfile::tempdir().unwrap();
    let restored_dir = target.path().join("restored");
    let restored = ferroclaw(&restored_dir)
        .args(["backup", "restore"])
        .arg(&out)
        .within(CHILD_LIMIT);
    assert!(restored.status.success(), "{}", text(&restored));
    let (_gw2, addr2, _) = spawn_gateway(&restored_dir);
    let mut r = admin_at(&format!("ws://{addr2}"), TOKEN).await;
    let mut copy = history(&mut r).await;
    // A message acknowledged and not yet answered at the instant of the
    // snapshot is in the copy's inbox: the restored gateway treats it as
    // after a crash, with its note (then the cut is a prefix again).
    if copy
        .last()
        .is_some_and(|m| m.contains("The gateway stopped before this message was answered"))
    {
        copy.pop();
    }
    // A cut of the live history: everything up to some instant, and
    // everything acknowledged before the backup began.
    assert!(
        copy.len() <= live.len() && copy[..] == live[..copy.len()],
        "{copy:?}\nvs\n{live:?}"
    );
    for needle in ["a turn kept by the fixture", "before the backup 1"] {
        assert!(
            copy.iter().any(|m| m.contains(needle)),
            "{needle}: {copy:?}"
        );
    }
    assert_eq!(facts(&mut r).await, live_facts);
    assert!(
        !live_facts.1.is_empty() && live_facts.2[0].is_array(),
        "{live_facts:?}"
    );
    assert_eq!(heron(&mut r).await, "memory/birds.md");
    // The restored dir is as private as the original.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&restored_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_archives_busy_dirs_and_a_full_disk() {
    let state = state_dir();
    let (_gw, addr, _) = spawn_gateway(state.path());
    let out_dir = tempfile::tempdir().unwrap();
    let archive = out_dir.path().join("good.tar.gz");
    let s = state.path();
    let ok = backup(s, &addr, &["create", "--output", archive.to_str().unwrap()]);
    assert!(ok.status.success(), "{}", text(&ok));
    // The snapshot route wants the gateway secret.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let anon = http
        .get(format!("http://{addr}/backup/store"))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
    let again = backup(s, &addr, &["create", "--output", archive.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("never overwritten"));
    // Named by the clock: two in a row (the same second, or not) both land.
    let many = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let o = backup(
            s,
            &addr,
            &["create", "--output", many.path().to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let made: Vec<_> = std::fs::read_dir(many.path()).unwrap().flatten().collect();
    assert_eq!(made.len(), 2, "{made:?}");

    // Damaged and truncated archives: verify fails, restore refuses.
    let bytes = std::fs::read(&archive).unwrap();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    for (name, data) in [
        ("flipped", flipped),
        ("truncated", bytes[..bytes.len() * 2 / 3].to_vec()),
    ] {
        let bad = out_dir.path().join(format!("{name}.tar.gz"));
        std::fs::write(&bad, data).unwrap();
        let v = ferroclaw(s)
            .args(["backup", "verify"])
            .arg(&bad)
            .within(CHILD_LIMIT);
        assert_eq!(v.status.code(), Some(1), "{name}: {}", text(&v));
        let target = out_dir.path().join(format!("into-{name}"));
        let r = ferroclaw(&target)
            .args(["backup", "restore"])
            .arg(&bad)
            .within(CHILD_LIMIT);
        assert_eq!(r.status.code(), Some(1), "{name}: {}", text(&r));
        assert!(!target.exists(), "{name}: nothing restored");
    }

    // A non-empty dir needs --force; the running gateway's never.
    let busy = out_dir.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let r = ferroclaw(&busy)
        .args(["backup", "restore"])
        .arg(&archive)
        .within(CHILD_LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert!(text(&r).contains("not empty") && busy.join("notes.txt").exists());
    let r = ferroclaw(s)
        .args(["backup", "restore", "--force"])
        .arg(&archive)
        .within(CHILD_LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert!(
        text(&r).contains("in use by a running ferroclaw"),
        "{}",
        text(&r)
    );

    // The state dir is in use and the gateway named is not reachable, or
    // is another gateway: refused, nothing written.
    let dead = backup(
        s,
        "127.0.0.1:9",
        &[
            "create",
            "--output",
            out_dir.path().join("x.tar.gz").to_str().unwrap(),
        ],
    );
    assert_eq!(dead.status.code(), Some(1), "{}", text(&dead));
    assert!(
        text(&dead).contains("in use by a running gateway"),
        "{}",
        text(&dead)
    );
    let other = state_dir();
    std::fs::write(
        other.path().join("ferroclaw.json"),
        format!("{{ gateway: {{ auth: {{ mode: 'token', token: '{TOKEN}' }} }} }}"),
    )
    .unwrap();
    let (_gw3, addr3, _) = spawn_gateway(other.path());
    let wrong = backup(
        s,
        &addr3,
        &[
            "create",
            "--output",
            out_dir.path().join("y.tar.gz").to_str().unwrap(),
        ],
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    assert!(text(&wrong).contains("not on"), "{}", text(&wrong));

    // The disk fills mid-archive (a file size limit: writes fail as on a
    // full disk): the backup fails, leaves nothing, and the gateway goes on.
    let full = out_dir.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    let line = format!(
        "trap '' XFSZ; ulimit -f 2048; exec {} --state-dir {} --url ws://{addr} --token {TOKEN} backup create --output {}/z.tar.gz",
        crate::support::process::BIN,
        s.display(),
        full.display()
    );
    std::fs::write(
        s.join("workspace/big.bin"),
        (0..1_000_000u32)
            .flat_map(|i| i.wrapping_mul(2654435761).to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let filled = std::process::Command::new("sh")
        .args(["-c", &line])
        .env("HOME", s)
        .within(CHILD_LIMIT);
    assert_eq!(filled.status.code(), Some(1), "{}", text(&filled));
    assert!(
        text(&filled).contains("into the archive: File too large"),
        "{}",
        text(&filled)
    );
    let left: Vec<_> = std::fs::read_dir(&full).unwrap().collect();
    assert!(left.is_empty(), "partial files left: {left:?}");
    let mut c = admin_at(&format!("ws://{addr}"), TOKEN).await;
    let events = crate::support::say(&mut c, "main", "still here?", "after-full").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "final");
    let ok = backup(
        s,
        &addr,
        &[
            "create",
            "--output",
            full.join("z.tar.gz").to_str().unwrap(),
            "--verify",
        ],
    );
    assert!(ok.status.success(), "{}", text(&ok));
}

#[test]
fn backup_create_finds_a_gateway_started_on_another_port_than_its_config_names() {
    // The fixture's config says port 44707; the gateway listens on --port 0.
    let state = state_dir();
    let s = state.path();
    let (mut gw, addr, _) = spawn_gateway(s);
    let runtime = s.join("gateway.runtime.json");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&runtime).unwrap()).unwrap();
    assert_eq!(recorded["url"], format!("ws://{addr}"), "{recorded}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&runtime).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let out_dir = tempfile::tempdir().unwrap();
    let archive = out_dir.path().join("found.tar.gz");
    // No --url, no --token: the runtime file and the config's token.
    let made = ferroclaw(s)
        .args(["backup", "create", "--verify", "--output"])
        .arg(&archive)
        .stdin(Stdio::null())
        .within(CHILD_LIMIT);
    assert!(made.status.success(), "{}", text(&made));
    // A SIGKILLed gateway's file is not believed: the lock is free.
    crate::support::process::sigkill(&mut gw);
    assert!(runtime.exists(), "a killed gateway leaves its record");
    let status = ferroclaw(s)
        .args(["health", "--json"])
        .stdin(Stdio::null())
        .within(CHILD_LIMIT);
    assert!(
        !text(&status).contains(&addr),
        "the dead address is not used: {}",
        text(&status)
    );
    // A gateway stopped by SIGTERM takes its record away.
    let (gw2, _, _) = spawn_gateway(s);
    let pid = gw2.id().to_string();
    let mut gw2 = gw2;
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status_within(CHILD_LIMIT)
        .success());
    gw2.wait_within(CHILD_LIMIT);
    assert!(!runtime.exists(), "removed at a clean stop");
}
