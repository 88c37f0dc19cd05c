//! The audit ledger at its row limit: 100,000 records written in the
//! ledger's batches (256 a transaction), then what the queries
//! `openclaw audit` makes cost on it: the newest page, a page deep in it
//! by cursor, an exact run (indexed), a rare status (a scan), and the
//! hourly prune; the file's size. Prints numbers; asserts nothing but
//! the counts.
//!
//!     cargo bench --bench audit
//!
//! `FERROCLAW_BENCH_AUDIT_ROWS` (100000) sets the size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use ferroclaw_actors::audit::{
    Activity, AuditDb, End, Limits, Query, Record, RunActivity, ToolActivity,
};

fn record(i: u64, now: u64) -> Record {
    let run_id = format!("run-{}", i / 4);
    let key = format!("agent:main:s{}", i % 50);
    let activity = if matches!(i % 4, 0 | 3) {
        Activity::AgentRun(RunActivity {
            agent_id: "main".into(),
            session_key: key,
            run_id,
            source_sequence: i % 4 + 1,
            end: (i % 4 == 3).then_some(End::Succeeded),
        })
    } else {
        Activity::ToolAction(ToolActivity {
            agent_id: "main".into(),
            session_key: key,
            run_id,
            source_sequence: i % 4 + 1,
            tool_call_id: Some(ferroclaw_actors::audit::call_id(&format!("call-{i}"))),
            tool_name: "exec".into(),
            // One blocked call in a thousand: the rare filter.
            end: (i % 4 == 2).then_some(if i % 4000 == 2 {
                End::Blocked
            } else {
                End::Succeeded
            }),
        })
    };
    Record {
        at_ms: now + i,
        activity,
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let rows: u64 = std::env::var("FERROCLAW_BENCH_AUDIT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite");
    let mut db = AuditDb::open(&path, Limits::default()).unwrap();
    let now = ferroclaw_actors::now_ms();
    let t = Instant::now();
    let mut i = 0;
    while i < rows {
        let batch: Vec<Record> = (i..(i + 256).min(rows)).map(|j| record(j, now)).collect();
        i += batch.len() as u64;
        db.append(batch).unwrap();
    }
    let took = t.elapsed().as_secs_f64();
    println!(
        "write {rows} records in batches of 256: {:.2} s ({:.0} records/s, {:.1} us each)",
        took,
        rows as f64 / took,
        took * 1e6 / rows as f64
    );
    let size: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    println!(
        "ledger files: {:.1} MB ({} bytes a record)",
        size as f64 / 1e6,
        size / rows
    );
    let q = |f: &dyn Fn(&mut Query)| {
        let mut q = Query {
            limit: 100,
            messages: true,
            ..Query::default()
        };
        f(&mut q);
        q
    };
    let time = |label: &str, q: Query| {
        let mut best = f64::MAX;
        let mut n = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let page = db.list(&q, now).unwrap();
            best = best.min(ms(t));
            n = page.entries.len();
        }
        println!("{label}: {best:.2} ms ({n} records)");
    };
    time("newest page of 100", q(&|_| {}));
    time(
        "page of 100 by cursor at the middle",
        q(&|q| q.cursor = Some(rows / 2)),
    );
    time(
        "one run (indexed)",
        q(&|q| q.run_id = Some(format!("run-{}", rows / 8))),
    );
    time(
        "rare status, blocked (a scan)",
        q(&|q| q.status = Some("blocked".into())),
    );
    time(
        "one session, newest 100 (indexed)",
        q(&|q| q.session_key = Some("agent:main:s7".into())),
    );
    let t = Instant::now();
    let gone = db.prune(now + 31 * 86_400_000).unwrap();
    println!(
        "prune of every row past the retention: {:.0} ms ({gone} rows)",
        ms(t)
    );
    assert_eq!(gone as u64, rows);
}
