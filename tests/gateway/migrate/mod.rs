//! `ferroclaw import` and `ferroclaw export`, with the real binary: an
//! OpenClaw 2026.9 state dir (`tests/fixtures/openclaw-state`) is moved in
//! and used (its history, workspace, skills and auth profile reach the
//! model), exported back in OpenClaw's layout, and imported again with
//! nothing lost; and bad input: malformed dirs, conflicts, a running
//! gateway, a bad `--out`, an unknown session. A failure writes nothing.
//! This file: the shared set-up; `round_trip.rs` the import, use, export
//! and import again; `refusals.rs` bad input and where things go;
//! `cron.rs` OpenClaw's cron jobs.

mod cron;
mod refusals;
mod round_trip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{spawn_gateway, BIN};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::{connect_params, final_text, say, Client};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openclaw-state");
const FIXTURE_TOKEN: &str = "fixture-gateway-token-0042";
const MAIN_ID: &str = "0b9c4f2e-6a1d-4c3b-9e8f-1a2b3c4d5e6f";
const TELEGRAM_ID: &str = "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6";
const OPS_ID: &str = "a0a0a0a0-1111-4222-8333-444455556666";

fn copy_dir(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dest.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

/// A HOME whose `.openclaw` is a copy of the fixture, its local model
/// server pointed at `base_url`.
fn openclaw_home(base_url: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let oc = home.path().join(".openclaw");
    copy_dir(Path::new(FIXTURE), &oc);
    let cfg = oc.join("openclaw.json");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("http://127.0.0.1:9/v1", base_url);
    std::fs::write(cfg, text).unwrap();
    home
}

/// Runs the binary with `HOME=home` and these arguments.
async fn run(home: &Path, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args)
        .env("HOME", home)
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .env_remove("FERROCLAW_STATE_DIR")
        .env_remove("FERROCLAW_CONFIG");
    tokio::task::spawn_blocking(move || cmd.within(CHILD_LIMIT))
        .await
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fixture_jsonl(agent: &str, id: &str) -> Vec<Value> {
    jsonl(&Path::new(FIXTURE).join(format!("agents/{agent}/sessions/{id}.jsonl")))
}

fn rows(dir: &Path, agent: &str) -> BTreeMap<String, Value> {
    let p = dir.join(format!("agents/{agent}/sessions/sessions.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Every file under `dir` but the store (its bytes), to show nothing changed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with("store") || rel.starts_with("logs") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

async fn client(addr: &str, token: &str) -> Client {
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let res = c
        .handshake(connect_params(
            "cli",
            "cli",
            &["operator.admin", "operator.read", "operator.write"],
            Some(token),
        ))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    c
}

fn names(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect()
}
