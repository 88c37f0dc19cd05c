//! `ferroclaw import` and `ferroclaw export`, with the real binary: an
//! OpenClaw 2026.9 state dir (`tests/fixtures/openclaw-state`) is moved in
//! and used (its history, workspace, skills and auth profile reach the
//! model), exported back in OpenClaw's layout, and imported again with
//! nothing lost; and bad input: malformed dirs, conflicts, a running
//! gateway, a bad `--out`, an unknown session. A failure writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{spawn_gateway, BIN};
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
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env("HOME", home)
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .env_remove("FERROCLAW_STATE_DIR")
        .env_remove("FERROCLAW_CONFIG");
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
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

#[tokio::test]
async fn an_openclaw_state_dir_is_imported_used_exported_and_imported_again() {
    let fake = FakeProvider::start().await;
    let home = openclaw_home(&fake.base_url());
    let oc = home.path().join(".openclaw");
    let state = home.path().join("ferroclaw");

    // Import.
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let report = out(&o);
    for want in [
        "sessions: 3 (13 transcript lines)",
        "workspace: ",
        "(5 files)",
        "auth profiles: ",
        "skills: ",
        "exec approvals: ",
        "left out gateway.bind \"tailnet\"",
        "left out models.providers.gemini",
        "left out agents.defaults.sandbox.mode",
        "1 transcript file(s) not named by any session row",
        "not imported (no ferroclaw counterpart yet, or rebuilt by ferroclaw): credentials, cron",
    ] {
        assert!(report.contains(want), "{want:?} missing from:\n{report}");
    }
    let ws = state.join("workspace");
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
        std::fs::read_to_string(oc.join("workspace/AGENTS.md")).unwrap()
    );
    assert!(ws.join("memory/2026-11-01.md").is_file());
    assert!(state.join("skills/weather/SKILL.md").is_file());
    assert!(state.join("agents/main/agent/auth-profiles.json").is_file());
    assert!(state.join("exec-approvals.json").is_file());
    let cfg = std::fs::read_to_string(state.join("ferroclaw.json")).unwrap();
    let cfg = ferroclaw::config::parse_json5(&cfg, "ferroclaw.json").unwrap();
    assert_eq!(cfg["gateway"]["auth"]["token"], FIXTURE_TOKEN);
    assert_eq!(
        cfg["agents"]["defaults"]["model"]["primary"],
        "local/qwen2.5-coder"
    );
    assert!(cfg["gateway"].get("bind").is_none(), "{cfg}");
    assert!(cfg["models"]["providers"].get("gemini").is_none(), "{cfg}");
    assert!(
        cfg["agents"]["defaults"].get("workspace").is_none(),
        "the copy is the default workspace: {cfg}"
    );
    let o = run(
        home.path(),
        &["config", "validate", "--state-dir", s(&state)],
    )
    .await;
    assert!(o.status.success(), "{}{}", out(&o), err(&o));

    // The imported session carries on: its history, the workspace, the
    // skills and the auth profile reach the model.
    let (gw, addr, _) = spawn_gateway(&state);
    let mut c = client(&addr, FIXTURE_TOKEN).await;
    fake.push(Script::text(&["Still ", "two files."]));
    let events = say(&mut c, "main", "anything new?", "r-after-import").await;
    assert_eq!(final_text(&events), "Still two files.");
    let (body, headers) = fake.requests.lock().unwrap()[0].clone();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("FIXTURE-AGENTS-MARKER"), "{system}");
    assert!(
        system.contains("weather") && system.contains("notes"),
        "{system}"
    );
    let msgs = body["messages"].as_array().unwrap();
    assert!(
        msgs[1]["content"]
            .to_string()
            .contains("what is in my notes folder?"),
        "{body}"
    );
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "assistant" && m["tool_calls"][0]["id"] == "call_1"),
        "{body}"
    );
    assert!(
        msgs.iter().any(|m| m["role"] == "tool"
            && m["tool_call_id"] == "call_1"
            && m["content"].to_string().contains("groceries.md")),
        "{body}"
    );
    assert!(
        msgs.last().unwrap()["content"]
            .to_string()
            .contains("anything new?"),
        "{body}"
    );
    let auth = headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(
        auth,
        Some("Bearer sk-local-from-profile"),
        "the imported auth profile is used"
    );

    // While the gateway runs, the state dir is not imported into.
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("in use by a running gateway; stop it"),
        "{}",
        err(&o)
    );

    // Export: OpenClaw's layout, every line as it was.
    let exported = home.path().join("exports/all");
    let url = format!("ws://{addr}/");
    let o = run(
        home.path(),
        &[
            "export",
            "--out",
            s(&exported),
            "--url",
            &url,
            "--token",
            FIXTURE_TOKEN,
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("exported 3 session(s)"), "{}", out(&o));
    assert!(
        names(&home.path().join("exports"), ".").is_empty(),
        "no staging left"
    );
    let main_file = exported.join(format!("agents/main/sessions/{MAIN_ID}.jsonl"));
    let main = jsonl(&main_file);
    let fixture_main = fixture_jsonl("main", MAIN_ID);
    assert_eq!(main[..fixture_main.len()], fixture_main[..]);
    let new_turn: Vec<String> = main[fixture_main.len()..]
        .iter()
        .filter_map(ferroclaw_actors::transcript::message_text)
        .collect();
    assert_eq!(new_turn, ["anything new?", "Still two files."]);
    assert_eq!(
        jsonl(&exported.join(format!("agents/main/sessions/{TELEGRAM_ID}.jsonl"))),
        fixture_jsonl("main", TELEGRAM_ID)
    );
    assert_eq!(
        jsonl(&exported.join(format!("agents/ops/sessions/{OPS_ID}.jsonl"))),
        fixture_jsonl("ops", OPS_ID)
    );
    let main_rows = rows(&exported, "main");
    assert_eq!(main_rows["agent:main:main"]["sessionId"], MAIN_ID);
    let tg = &main_rows["agent:main:telegram:direct:4242"];
    assert_eq!(
        (
            &tg["sessionId"],
            &tg["label"],
            &tg["queueMode"],
            &tg["queueDebounceMs"]
        ),
        (
            &json!(TELEGRAM_ID),
            &json!("Alice on Telegram"),
            &json!("followup"),
            &json!(500)
        )
    );
    assert_eq!(
        rows(&exported, "ops")["agent:ops:main"]["label"],
        "ops main"
    );

    let one = home.path().join("exports/one");
    let o = run(
        home.path(),
        &[
            "export",
            "--session",
            "main",
            "--out",
            s(&one),
            "--url",
            &url,
            "--token",
            FIXTURE_TOKEN,
            "--json",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["sessions"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["sessions"][0]["key"], "agent:main:main");
    assert_eq!(
        jsonl(&one.join(format!("agents/main/sessions/{MAIN_ID}.jsonl"))),
        main
    );
    drop(c);
    drop(gw);

    // The export imports again (no openclaw.json: config untouched) and
    // exports to the same files.
    let home2 = tempfile::tempdir().unwrap();
    let state2 = home2.path().join("ferroclaw");
    let o = run(
        home2.path(),
        &[
            "import",
            "--from",
            s(&exported),
            "--state-dir",
            s(&state2),
            "--json",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (report["sessions"].as_u64(), report["config"].is_null()),
        (Some(3), true),
        "{report}"
    );
    let (gw2, addr2, token2) = spawn_gateway(&state2);
    let again = home2.path().join("again");
    let url2 = format!("ws://{addr2}/");
    let o = run(
        home2.path(),
        &[
            "export",
            "--out",
            s(&again),
            "--url",
            &url2,
            "--token",
            &token2,
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    for (agent, id) in [("main", MAIN_ID), ("main", TELEGRAM_ID), ("ops", OPS_ID)] {
        let f = format!("agents/{agent}/sessions/{id}.jsonl");
        assert_eq!(jsonl(&again.join(&f)), jsonl(&exported.join(&f)), "{f}");
    }
    assert_eq!(rows(&again, "main"), rows(&exported, "main"));
    assert_eq!(rows(&again, "ops"), rows(&exported, "ops"));
    drop(gw2);

    // A second import into the first state dir conflicts; nothing changes.
    let before = snapshot(&state);
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("already exist in") && e.contains("--force"),
        "{e}"
    );
    assert_eq!(snapshot(&state), before, "nothing written");

    // --force replaces it all and keeps what it replaced.
    let o = run(
        home.path(),
        &[
            "import",
            "--from",
            s(&oc),
            "--state-dir",
            s(&state),
            "--force",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(names(&state, "ferroclaw.json.bak-").len(), 1);
    assert_eq!(names(&state, "workspace.bak-").len(), 1);
    let backups = names(&state, "backup-");
    assert_eq!(backups.len(), 1, "{backups:?}");
    let kept = jsonl(
        &state
            .join(&backups[0])
            .join(format!("agents/main/sessions/{MAIN_ID}.jsonl")),
    );
    assert_eq!(
        kept, main,
        "the replaced session, with the turn since the first import"
    );
    let (_gw3, addr3, _) = spawn_gateway(&state);
    let url3 = format!("ws://{addr3}/");
    let o = run(
        home.path(),
        &[
            "sessions",
            "show",
            "main",
            "--url",
            &url3,
            "--token",
            FIXTURE_TOKEN,
        ],
    )
    .await;
    assert_eq!(
        out(&o),
        "user: what is in my notes folder?\nassistant: \ntoolResult: groceries.md\nideas.md\nassistant: Two files: groceries.md and ideas.md.\n",
        "{}",
        err(&o)
    );
    let o = run(
        home.path(),
        &[
            "sessions",
            "show",
            "telegram:direct:4242",
            "--url",
            &url3,
            "--token",
            FIXTURE_TOKEN,
        ],
    )
    .await;
    assert_eq!(
        out(&o),
        "user: remind me to buy milk\nassistant: Noted: buy milk.\n"
    );
}

#[tokio::test]
async fn a_quick_start_state_dir_takes_an_import_without_force() {
    let home = openclaw_home("http://127.0.0.1:9/v1");
    let state = home.path().join("ferroclaw");
    // `ferroclaw gateway` once: a token, a store, a workspace with only the
    // first-run BOOTSTRAP.md.
    let (gw, _, _) = spawn_gateway(&state);
    drop(gw);
    assert!(state.join("workspace/BOOTSTRAP.md").is_file());
    let oc = home.path().join(".openclaw");
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(state.join("workspace/AGENTS.md").is_file());
    assert!(
        !state.join("workspace/BOOTSTRAP.md").exists(),
        "the untouched seed is replaced"
    );
    assert!(
        names(&state, "workspace.bak-").is_empty(),
        "{:?}",
        names(&state, "")
    );
}

#[tokio::test]
async fn malformed_import_dirs_are_refused_with_one_line_and_nothing_written() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("ferroclaw");
    let check = |o: &Output, code: i32, want: &[&str]| {
        let e = err(o);
        assert_eq!(o.status.code(), Some(code), "{e}{}", out(o));
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("error: "), "{e}");
        for w in want {
            assert!(e.contains(w), "{w:?} missing from {e}");
        }
        assert!(!state.exists(), "nothing written: {e}");
    };
    let st = ["--state-dir", s(&state)];
    let o = run(
        home.path(),
        &[&["import", "--from", "/no/such/openclaw"][..], &st].concat(),
    )
    .await;
    check(&o, 2, &["--from /no/such/openclaw"]);
    let empty = tempfile::tempdir().unwrap();
    let o = run(
        home.path(),
        &[&["import", "--from", s(empty.path())][..], &st].concat(),
    )
    .await;
    check(&o, 2, &["does not look like an OpenClaw state dir"]);
    let o = run(home.path(), &["import", "--state-dir", s(&state)]).await;
    assert_eq!(
        o.status.code(),
        Some(2),
        "a missing --from is a usage error"
    );

    let broken = |edit: &dyn Fn(&Path)| {
        let h = openclaw_home("http://127.0.0.1:9/v1");
        edit(&h.path().join(".openclaw"));
        h
    };
    let telegram_file = format!("{TELEGRAM_ID}.jsonl");
    type Case<'a> = (&'a str, Box<dyn Fn(&Path)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "config syntax",
            Box::new(|oc: &Path| {
                std::fs::write(oc.join("openclaw.json"), "{ gateway: { port: 1,, } ").unwrap()
            }),
            vec!["openclaw.json", "nothing was imported"],
        ),
        (
            "config not an object",
            Box::new(|oc: &Path| std::fs::write(oc.join("openclaw.json"), "[1]").unwrap()),
            vec!["openclaw.json", "expected a map"],
        ),
        (
            "sessions.json",
            Box::new(|oc: &Path| {
                std::fs::write(oc.join("agents/main/sessions/sessions.json"), "[]").unwrap()
            }),
            vec!["sessions.json", "not a JSON object"],
        ),
        (
            "a row without sessionId",
            Box::new(|oc: &Path| {
                std::fs::write(
                    oc.join("agents/ops/sessions/sessions.json"),
                    r#"{"main": {"updatedAt": 1}}"#,
                )
                .unwrap()
            }),
            vec!["sessions.json", "sessionId"],
        ),
        (
            "a transcript line",
            Box::new(|oc: &Path| {
                let f = oc.join(format!("agents/main/sessions/{TELEGRAM_ID}.jsonl"));
                let mut t = std::fs::read_to_string(&f).unwrap();
                t = t.replacen("{\"type\":\"message\"", "{\"type\":\"message\",,", 1);
                std::fs::write(f, t).unwrap()
            }),
            vec![&telegram_file, "line 2"],
        ),
        (
            "exec approvals",
            Box::new(|oc: &Path| {
                std::fs::write(oc.join("exec-approvals.json"), r#"{"version": 2}"#).unwrap()
            }),
            vec!["exec-approvals.json", "version"],
        ),
        (
            "auth profiles",
            Box::new(|oc: &Path| {
                std::fs::write(oc.join("agents/main/agent/auth-profiles.json"), "{nope").unwrap()
            }),
            vec!["auth-profiles.json", "not valid JSON"],
        ),
    ];
    for (name, edit, want) in cases {
        let h = broken(&*edit);
        let oc = h.path().join(".openclaw");
        let o = run(h.path(), &[&["import", "--from", s(&oc)][..], &st].concat()).await;
        assert!(!o.status.success(), "{name}");
        check(&o, 2, &want);
    }

    // A state dir that exists keeps exactly what it had when an import fails.
    std::fs::create_dir_all(state.join("workspace")).unwrap();
    std::fs::write(state.join("workspace/notes.md"), "mine").unwrap();
    let before = snapshot(&state);
    let h = broken(&|oc: &Path| {
        std::fs::write(oc.join("agents/main/sessions/sessions.json"), "{").unwrap()
    });
    let o = run(
        h.path(),
        &[
            "import",
            "--from",
            s(&h.path().join(".openclaw")),
            "--state-dir",
            s(&state),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(snapshot(&state), before);
}

#[tokio::test]
async fn export_refuses_a_used_folder_an_unknown_session_and_an_absent_gateway() {
    let gw = crate::support::TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let url = gw.ws_url();
    let tok = crate::support::TOKEN;
    let used = home.path().join("used");
    std::fs::create_dir_all(&used).unwrap();
    std::fs::write(used.join("x"), "x").unwrap();
    let o = run(
        home.path(),
        &["export", "--out", s(&used), "--url", &url, "--token", tok],
    )
    .await;
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("is not empty; export into a new folder"),
        "{}",
        err(&o)
    );

    let fresh = home.path().join("fresh");
    let o = run(
        home.path(),
        &[
            "export",
            "--session",
            "nope",
            "--out",
            s(&fresh),
            "--url",
            &url,
            "--token",
            tok,
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o),
        "error: sessions.export: unknown session: agent:main:nope\n"
    );
    assert!(!fresh.exists());
    assert_eq!(names(home.path(), ".").len(), 0, "no staging left");

    let o = run(
        home.path(),
        &[
            "export",
            "--out",
            s(&fresh),
            "--url",
            &url,
            "--token",
            "wrong",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("refused the connection"), "{}", err(&o));

    let o = run(
        home.path(),
        &["export", "--out", s(&fresh), "--url", "ws://127.0.0.1:9/"],
    )
    .await;
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("cannot reach the gateway"), "{}", err(&o));
    assert!(!fresh.exists());

    // An empty gateway exports an empty folder.
    let o = run(
        home.path(),
        &["export", "--out", s(&fresh), "--url", &url, "--token", tok],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(fresh.is_dir() && std::fs::read_dir(&fresh).unwrap().next().is_none());
}

#[tokio::test]
async fn the_converted_config_goes_where_config_points_and_nothing_is_left_behind() {
    let home = openclaw_home("http://127.0.0.1:9/v1");
    let oc = home.path().join(".openclaw");
    let state = home.path().join("ferroclaw");
    let cfg_dir = home.path().join("etc");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    let cfg = cfg_dir.join("gateway.json5");
    let o = run(
        home.path(),
        &[
            "import",
            "--from",
            s(&oc),
            "--state-dir",
            s(&state),
            "--config",
            s(&cfg),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains(FIXTURE_TOKEN), "{text}");
    assert!(!state.join("ferroclaw.json").exists());
    assert_eq!(
        names(&cfg_dir, ""),
        ["gateway.json5"],
        "no staging file beside it"
    );
    assert!(
        names(&state, ".import-").is_empty(),
        "no staging folder in the state dir"
    );
    let o = run(
        home.path(),
        &[
            "config",
            "validate",
            "--config",
            s(&cfg),
            "--state-dir",
            s(&state),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
}

/// OpenClaw's cron jobs come along: the same ids, schedules and targets,
/// and a job whose last run OpenClaw recorded does not run that slot again.
#[tokio::test]
async fn openclaw_cron_jobs_are_imported_and_scheduled() {
    let home = openclaw_home("http://127.0.0.1:9/v1");
    let oc = home.path().join(".openclaw");
    let now = ferroclaw_actors::now_ms();
    let jobs = serde_json::json!({"version": 1, "jobs": [
        {"id": "5f0c1d2e-daily", "name": "daily digest", "enabled": true, "createdAtMs": now - 86_400_000,
         "updatedAtMs": now - 86_400_000,
         "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"},
         "sessionTarget": "isolated", "wakeMode": "now",
         "payload": {"kind": "agentTurn", "message": "summarise my inbox"},
         "delivery": {"mode": "announce", "channel": "telegram", "to": "42"},
         "state": {"lastRunAtMs": now - 60_000, "lastStatus": "ok"}},
        {"id": "bad-tz", "name": "broken", "enabled": true, "createdAtMs": now,
         "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"},
         "sessionTarget": "isolated", "wakeMode": "now", "payload": {"kind": "agentTurn", "message": "x"}},
    ]});
    std::fs::create_dir_all(oc.join("cron")).unwrap();
    std::fs::write(oc.join("cron/jobs.json"), jobs.to_string()).unwrap();
    let state = home.path().join("ferroclaw");
    let o = run(
        home.path(),
        &["import", "--from", s(&oc), "--state-dir", s(&state)],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let said = out(&o);
    assert!(said.contains("1 cron job(s) imported"), "{said}");
    assert!(
        said.contains("\"broken\"") && said.contains("unknown timezone"),
        "{said}"
    );
    let (_gw, addr, _) = spawn_gateway(&state);
    let mut c = client(&addr, FIXTURE_TOKEN).await;
    let job = c
        .call("cron.get", serde_json::json!({"id": "5f0c1d2e-daily"}))
        .await;
    let j = &job["payload"];
    assert_eq!(j["schedule"]["tz"], "Europe/Lisbon", "{job}");
    assert_eq!(j["delivery"]["to"], "42");
    assert_eq!(j["state"]["lastRunStatus"], "ok");
    assert!(j["state"]["nextRunAtMs"].as_u64().unwrap() > now);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let runs = c
        .call("cron.runs", serde_json::json!({"id": "5f0c1d2e-daily"}))
        .await;
    assert_eq!(runs["payload"]["total"], 0, "nothing to catch up: {runs}");
}
