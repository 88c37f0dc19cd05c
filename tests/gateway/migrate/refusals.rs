//! Bad input for import and export (one line, nothing written), and where
//! the converted config goes.

use super::*;

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
