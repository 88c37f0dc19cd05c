//! An OpenClaw state dir imported, used, exported and imported again;
//! a quick-start state dir taking an import.

use super::*;

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
