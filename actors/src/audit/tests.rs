//! Tests of the run audit: pages, filters, keyed platform ids, retention.

use super::*;

fn run(agent: &str, run_id: &str, at: u64, end: Option<End>) -> Record {
    Record {
        at_ms: at,
        activity: Activity::AgentRun(RunActivity {
            agent_id: agent.into(),
            session_key: format!("agent:{agent}:main"),
            run_id: run_id.into(),
            source_sequence: if end.is_some() { 2 } else { 1 },
            end,
        }),
    }
}

fn inbound(sender: &str, chat: &str, at: u64) -> Record {
    Record {
        at_ms: at,
        activity: Activity::Message(MessageActivity {
            channel: "telegram".into(),
            conversation: Conversation::Direct,
            account: Some("default".into()),
            chat: Some(chat.into()),
            message: Some("4711".into()),
            target: None,
            agent_id: None,
            run_id: None,
            result_count: None,
            duration_ms: None,
            flow: Flow::Inbound {
                sender: sender.into(),
                outcome: Inbound::Refused,
            },
        }),
    }
}

fn control(at: u64) -> Record {
    Record {
        at_ms: at,
        activity: Activity::Control(ControlActivity {
            action: "config.changed".into(),
            outcome: End::Succeeded,
            actor: Who::Operator("cli".into()),
            subject: None,
            decision: None,
            paths: vec!["logging.level".into()],
        }),
    }
}

fn all(limit: usize) -> Query {
    Query {
        limit,
        messages: true,
        ..Query::default()
    }
}

fn open(dir: &std::path::Path, limits: Limits) -> AuditDb {
    AuditDb::open(&dir.join("audit.sqlite"), limits).expect("opens")
}

#[test]
fn pages_go_newest_first_and_every_record_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = open(dir.path(), Limits::default());
    let now = crate::now_ms();
    let records: Vec<Record> = (0..25)
        .map(|i| run("main", &format!("r{i}"), now + i, None))
        .collect();
    assert_eq!(db.append(records).expect("append"), 25);
    let mut seen = Vec::new();
    let mut q = all(10);
    loop {
        let page = db.list(&q, now).expect("list");
        seen.extend(page.entries.iter().map(|e| e.sequence));
        match page.next {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    let want: Vec<u64> = (1..=25).rev().collect();
    assert_eq!(seen, want, "newest first, no gap, no repeat");
}

#[test]
fn filters_are_exact_and_control_is_listed_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = open(dir.path(), Limits::default());
    let now = crate::now_ms();
    db.append(vec![
        run("main", "a", now, None),
        run("main", "a", now + 1, Some(End::Failed)),
        run("ops", "b", now + 2, None),
        inbound("12345", "12345", now + 3),
        control(now + 4),
    ])
    .expect("append");
    let kinds = |q: &Query| -> Vec<&'static str> {
        db.list(q, now)
            .expect("list")
            .entries
            .iter()
            .map(|e| e.activity.kind())
            .collect()
    };
    assert_eq!(
        kinds(&all(50)),
        ["message", "agent_run", "agent_run", "agent_run"]
    );
    let legacy = Query {
        messages: false,
        ..all(50)
    };
    assert_eq!(kinds(&legacy), ["agent_run"; 3]);
    let only = |f: &dyn Fn(&mut Query)| {
        let mut q = all(50);
        f(&mut q);
        q
    };
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.kind = Some("control".into()))),
        ["control"]
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.status = Some("failed".into()))),
        ["agent_run"]
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.agent_id = Some("ops".into()))),
        ["agent_run"]
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.run_id = Some("a".into()))).len(),
        2
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.direction = Some("inbound".into()))),
        ["message"]
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.channel = Some("slack".into()))),
        Vec::<&str>::new()
    );
    assert_eq!(
        kinds(&only(&|q: &mut Query| q.after = Some(now + 2))).len(),
        2
    );
    assert_eq!(kinds(&only(&|q: &mut Query| q.before = Some(now))).len(), 1);
}

#[test]
fn platform_ids_are_stored_only_as_keyed_references_stable_across_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let now = crate::now_ms();
    let first = {
        let mut db = open(dir.path(), Limits::default());
        db.append(vec![inbound("555000111", "-1009876", now)])
            .expect("append");
        db.list(&all(5), now).expect("list").entries
    };
    let Activity::Message(m) = &first[0].activity else {
        panic!("a message record")
    };
    let Flow::Inbound { sender, .. } = &m.flow else {
        panic!("inbound")
    };
    let shape = regex::Regex::new("^hmac-sha256:v1:[a-f0-9]{32}:[a-f0-9]{64}$").expect("regex");
    for r in [
        sender,
        m.chat.as_ref().expect("chat"),
        m.account.as_ref().expect("account"),
    ] {
        assert!(shape.is_match(r), "{r}");
    }
    assert_ne!(
        Some(sender),
        m.chat.as_ref(),
        "each id kind is its own domain"
    );
    // Nothing raw on disk (the WAL included).
    for f in std::fs::read_dir(dir.path()).expect("dir") {
        let bytes = std::fs::read(f.expect("entry").path()).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("555000111") && !text.contains("-1009876"));
    }
    // The key survives a restart: the same sender gets the same reference.
    let mut db = open(dir.path(), Limits::default());
    db.append(vec![inbound("555000111", "other", now + 1)])
        .expect("append");
    let again = db.list(&all(1), now).expect("list").entries;
    let Activity::Message(m2) = &again[0].activity else {
        panic!("a message record")
    };
    assert_eq!(m2.flow, m.flow, "same sender, same reference");
    assert_ne!(m2.chat, m.chat);
    assert_eq!(
        again[0].sequence, 2,
        "the sequence continues after a restart"
    );
}

#[test]
fn rows_past_the_retention_or_the_cap_are_removed_and_never_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        max_rows: 10,
        retention_ms: 1000,
    };
    let mut db = open(dir.path(), limits);
    let now = crate::now_ms();
    // Three records older than the retention, then 15 fresh ones.
    db.append(
        (0..3)
            .map(|i| run("main", "old", now - 5000 + i, None))
            .collect(),
    )
    .expect("append");
    db.append((0..15).map(|i| run("main", "new", now + i, None)).collect())
        .expect("append");
    assert!(db.rows() <= 10, "capped: {}", db.rows());
    let listed = db.list(&all(500), now).expect("list").entries;
    assert_eq!(listed.len(), 10);
    assert!(listed.iter().all(|e| e.activity.run_id() == Some("new")));
    assert_eq!(
        listed.last().map(|e| e.sequence),
        Some(9),
        "the oldest went first"
    );
    // Time passes: everything is past the retention.
    assert_eq!(db.prune(now + 10_000).expect("prune"), 10);
    assert_eq!(db.rows(), 0);
}

#[test]
fn settings_decide_what_is_kept() {
    let off = AuditSettings {
        enabled: true,
        messages: MessageMode::Off,
    };
    let direct = AuditSettings {
        messages: MessageMode::Direct,
        ..off
    };
    let msg = inbound("1", "1", 0).activity;
    let mut group = msg.clone();
    if let Activity::Message(m) = &mut group {
        m.conversation = Conversation::Group;
    }
    assert!(!off.keeps(&msg));
    assert!(off.keeps(&run("main", "r", 0, None).activity));
    assert!(direct.keeps(&msg) && !direct.keeps(&group));
    let disabled = AuditSettings {
        enabled: false,
        messages: MessageMode::All,
    };
    assert!(!disabled.keeps(&control(0).activity));
}

#[actix::test]
async fn channels_build_message_records_only_while_the_ledger_keeps_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let off = AuditSettings {
        enabled: true,
        messages: MessageMode::Off,
    };
    let (ledger, log) = AuditLedger::start(
        dir.path(),
        Limits::default(),
        off,
        std::sync::Arc::new(crate::metrics::Metrics::default()),
    )
    .expect("starts");
    assert!(!log.wants_messages());
    let all = AuditSettings {
        messages: MessageMode::All,
        ..off
    };
    ledger
        .send(SetAuditSettings { settings: all })
        .await
        .expect("ledger runs");
    assert!(log.wants_messages(), "a config change applies at once");
    let stopped = AuditSettings {
        enabled: false,
        ..all
    };
    ledger
        .send(SetAuditSettings { settings: stopped })
        .await
        .expect("ledger runs");
    assert!(!log.wants_messages(), "a disabled ledger wants nothing");
    assert!(!AuditLog::off().wants_messages());
}

#[test]
fn the_log_is_truncated_by_the_hourly_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = open(dir.path(), Limits::default());
    let now = crate::now_ms();
    let records: Vec<Record> = (0..5_000)
        .map(|i| run("main", &format!("r{i}"), now + i, None))
        .collect();
    assert_eq!(db.append(records).expect("append"), 5_000);
    let wal = dir.path().join("audit.sqlite-wal");
    let size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(size() > 0, "the rows went through the log");
    assert!(db.checkpoint().expect("checkpoint"));
    assert_eq!(size(), 0);
}
