//! The cron scheduler actor on a real sled store in a temp dir, with a
//! manual clock (time moves, nobody sleeps) and a recording runner. A
//! "restart" is a new actix system on the same store: the old actor and
//! everything it had in memory are gone, as after a crash.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use ferroclaw::protocol::cron as wire;
use ferroclaw_actors::cron::clock::ManualClock;
use ferroclaw_actors::cron::job::Target;
use ferroclaw_actors::cron::*;
use ferroclaw_actors::store::Store;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

/// Calls the runner saw: (job id, slot, manual).
type Calls = Arc<Mutex<Vec<(String, u64, bool)>>>;

#[derive(Clone, Default)]
struct Recorder {
    calls: Calls,
    /// Replies whose delivery was finished after a restart.
    redelivered: Arc<Mutex<Vec<String>>>,
    /// Runs never end (a crash will cut them short).
    hang: bool,
    /// Runs panic.
    panic: bool,
}

impl Runner for Recorder {
    fn run(&self, o: Order) -> BoxFuture<'static, Outcome> {
        let manual = o.entry.manual;
        self.calls
            .lock()
            .unwrap()
            .push((o.job.id.clone(), o.entry.scheduled_at_ms, manual));
        let (hang, panic) = (self.hang, self.panic);
        async move {
            if panic {
                panic!("a runner bug");
            }
            if hang {
                futures_util::future::pending::<()>().await;
            }
            Outcome {
                status: "ok".into(),
                summary: Some(format!("ran {}", o.entry.run_id)),
                delivery_status: Some("not-requested".into()),
                ..Default::default()
            }
        }
        .boxed()
    }

    fn redeliver(&self, _: Order, reply: String, to: Target) -> BoxFuture<'static, Outcome> {
        self.redelivered
            .lock()
            .unwrap()
            .push(format!("{reply} -> {}", to.to.unwrap_or_default()));
        async {
            Outcome {
                status: "ok".into(),
                delivered: Some(true),
                delivery_status: Some("delivered".into()),
                ..Default::default()
            }
        }
        .boxed()
    }
}

fn config(run_missed: bool, retry: bool) -> CronConfig {
    CronConfig {
        enabled: true,
        run_missed,
        retry_interrupted: retry,
        default_agent: "main".into(),
    }
}

/// One life of the gateway: a new system, the scheduler on `dir`, `f`.
fn life<R: 'static>(
    dir: &std::path::Path,
    clock: &ManualClock,
    runner: &Recorder,
    cfg: CronConfig,
    f: impl FnOnce(Addr<CronActor>) -> futures_util::future::LocalBoxFuture<'static, R>,
) -> R {
    let (dir, clock, runner) = (dir.to_path_buf(), clock.clone(), runner.clone());
    System::new().block_on(async move {
        let store = Store::open(&dir).unwrap();
        let addr = CronActor::new(store, Arc::new(clock), Arc::new(runner), cfg).start();
        f(addr).await
    })
}

/// Waits (briefly, in real time) until no run is in flight.
async fn settle(addr: &Addr<CronActor>) {
    for _ in 0..200 {
        let s = addr.send(CronStatus).await.unwrap();
        if s.running == 0 {
            // RunEnded is handled; give the last record a turn to land.
            actix::clock::sleep(std::time::Duration::from_millis(5)).await;
            return;
        }
        actix::clock::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("runs did not settle");
}

async fn add(addr: &Addr<CronActor>, params: Value) -> String {
    let added = addr
        .send(AddJob {
            job: wire::new_job(&params).unwrap(),
            channels: vec![],
            agents: vec![],
        })
        .await
        .unwrap()
        .unwrap();
    added.job.job.id
}

fn turn(name: &str, schedule: Value) -> Value {
    json!({"name": name, "schedule": schedule, "sessionTarget": "isolated", "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "go"}})
}

const H: u64 = 3_600_000;
/// 2026-03-06T00:00:00Z; New York springs forward on 2026-03-08.
const MAR6: u64 = 1_772_755_200_000;

fn slots_of(calls: &Calls, id: &str) -> Vec<u64> {
    calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(j, _, _)| j == id)
        .map(|(_, s, _)| *s)
        .collect()
}

#[test]
fn each_schedule_kind_fires_at_its_instants_across_a_dst_change() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let c = clock.clone();
    let ids = life(
        dir.path(),
        &clock,
        &runner,
        config(true, false),
        move |addr| {
            async move {
                let nine = add(
                    &addr,
                    turn(
                        "nine",
                        json!({"kind": "cron", "expr": "0 9 * * *", "tz": "America/New_York"}),
                    ),
                )
                .await;
                let skipped = add(
                    &addr,
                    turn(
                        "two-thirty",
                        json!({"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"}),
                    ),
                )
                .await;
                let every = add(
                    &addr,
                    turn("six-hourly", json!({"kind": "every", "everyMs": 6 * H})),
                )
                .await;
                let at = add(
                    &addr,
                    turn("once", json!({"kind": "at", "at": "2026-03-08T12:00:00Z"})),
                )
                .await;
                // Four days in quarter hours.
                for _ in 0..(4 * 24 * 4) {
                    c.advance(H / 4);
                    addr.send(Tick).await.unwrap();
                    settle(&addr).await;
                }
                (nine, skipped, every, at)
            }
            .boxed_local()
        },
    );
    let (nine, skipped, every, at) = ids;
    let calls = &runner.calls;
    // 09:00 New York: 14:00Z in EST, 13:00Z from March 8 (EDT).
    assert_eq!(
        slots_of(calls, &nine),
        vec![MAR6 + 14 * H, MAR6 + 38 * H, MAR6 + 61 * H, MAR6 + 85 * H]
    );
    // 02:30 does not exist on March 8: it runs once, as the clocks jump.
    let two = slots_of(calls, &skipped);
    assert_eq!(two.len(), 4, "{two:?}");
    assert_eq!(two[0], MAR6 + 7 * H + H / 2);
    assert_eq!(
        two[2],
        MAR6 + 55 * H,
        "03:00 EDT, the first instant after the gap"
    );
    assert_eq!(two[3], MAR6 + 78 * H + H / 2);
    // Every 6 h from its creation, in real time: DST is not its business.
    let six = slots_of(calls, &every);
    assert_eq!(six.len(), 16);
    assert!(six.windows(2).all(|w| w[1] - w[0] == 6 * H));
    assert_eq!(six[0], MAR6 + 6 * H);
    // Once, at its instant.
    assert_eq!(slots_of(calls, &at), vec![MAR6 + 60 * H]);
}

#[test]
fn a_stop_catches_up_once_and_never_twice() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let c = clock.clone();
    let id = life(
        dir.path(),
        &clock,
        &runner,
        config(true, false),
        move |addr| {
            async move {
                let id = add(
                    &addr,
                    turn("hourly", json!({"kind": "every", "everyMs": H})),
                )
                .await;
                c.advance(H);
                addr.send(Tick).await.unwrap();
                settle(&addr).await;
                id
            }
            .boxed_local()
        },
    );
    assert_eq!(slots_of(&runner.calls, &id), vec![MAR6 + H]);
    // Down for 4.5 hours: four slots missed, one run at start (the latest).
    clock.set(MAR6 + 5 * H + H / 2);
    life(dir.path(), &clock, &runner, config(true, false), |addr| {
        async move { settle(&addr).await }.boxed_local()
    });
    assert_eq!(slots_of(&runner.calls, &id), vec![MAR6 + H, MAR6 + 5 * H]);
    // A second restart in the same hour finds nothing missed.
    clock.set(MAR6 + 5 * H + 40 * 60_000);
    let listed = life(dir.path(), &clock, &runner, config(true, false), |addr| {
        async move {
            settle(&addr).await;
            wire::run_page(&addr.send(ListRuns::default()).await.unwrap().unwrap())
        }
        .boxed_local()
    });
    assert_eq!(slots_of(&runner.calls, &id), vec![MAR6 + H, MAR6 + 5 * H]);
    assert_eq!(listed["total"], 2);
    assert!(listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "ok"));
}

#[test]
fn with_run_missed_jobs_false_a_stop_skips_what_it_missed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let id = life(dir.path(), &clock, &runner, config(false, false), |addr| {
        async move {
            add(
                &addr,
                turn("hourly", json!({"kind": "every", "everyMs": H})),
            )
            .await
        }
        .boxed_local()
    });
    clock.set(MAR6 + 3 * H + 10);
    let c = clock.clone();
    life(
        dir.path(),
        &clock,
        &runner,
        config(false, false),
        move |addr| {
            async move {
                settle(&addr).await;
                // The schedule goes on from now: the next slot runs as usual.
                c.set(MAR6 + 4 * H);
                addr.send(Tick).await.unwrap();
                settle(&addr).await;
            }
            .boxed_local()
        },
    );
    assert_eq!(slots_of(&runner.calls, &id), vec![MAR6 + 4 * H]);
}

#[test]
fn a_run_cut_short_is_recorded_interrupted_and_not_repeated_unless_configured() {
    for retry in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::at(MAR6);
        let hanging = Recorder {
            hang: true,
            ..Default::default()
        };
        let c = clock.clone();
        let id = life(
            dir.path(),
            &clock,
            &hanging,
            config(true, retry),
            move |addr| {
                async move {
                    let id = add(&addr, turn("slow", json!({"kind": "every", "everyMs": H}))).await;
                    c.advance(H);
                    addr.send(Tick).await.unwrap();
                    let s = addr.send(CronStatus).await.unwrap();
                    assert_eq!(s.running, 1);
                    id
                }
                .boxed_local()
            },
        );
        // The "crash": the system is gone with the run in flight.
        let fresh = Recorder::default();
        clock.advance(60_000);
        let runs = life(dir.path(), &clock, &fresh, config(true, retry), |addr| {
            async move {
                settle(&addr).await;
                wire::run_page(&addr.send(ListRuns::default()).await.unwrap().unwrap())
            }
            .boxed_local()
        });
        let entries = runs["entries"].as_array().unwrap();
        let cut = entries
            .iter()
            .find(|e| e["diagnostics"]["summary"] == "interrupted")
            .unwrap();
        assert_eq!(cut["status"], "error");
        assert!(cut["error"].as_str().unwrap().contains("interrupted"));
        assert_eq!(cut["diagnostics"]["entries"][0]["source"], "agent-run");
        assert_eq!(cut["runId"], format!("cron:{id}:{}", MAR6 + H));
        let again = slots_of(&fresh.calls, &id);
        match retry {
            false => assert!(again.is_empty(), "not repeated: {again:?}"),
            true => assert_eq!(again, vec![MAR6 + H], "run again once"),
        }
    }
}

#[test]
fn reading_jobs_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let c = clock.clone();
    life(
        dir.path(),
        &clock,
        &runner,
        config(true, false),
        move |addr| {
            async move {
                let id = add(
                    &addr,
                    turn(
                        "daily",
                        json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Lisbon"}),
                    ),
                )
                .await;
                let get = |id: String| {
                    let addr = addr.clone();
                    async move { wire::job(&addr.send(GetJob { id }).await.unwrap().unwrap()) }
                };
                let before = get(id.clone()).await;
                for _ in 0..50 {
                    c.advance(60_000);
                    let mut list = wire::job_page(&addr.send(ListJobs::default()).await.unwrap());
                    assert_eq!(list["jobs"][0]["effectiveAgentId"], "main");
                    list["jobs"][0]
                        .as_object_mut()
                        .unwrap()
                        .remove("effectiveAgentId");
                    assert_eq!(list["jobs"][0], before);
                    assert_eq!(get(id.clone()).await, before);
                    addr.send(CronStatus).await.unwrap();
                    addr.send(ListRuns {
                        job_id: Some(id.clone()),
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .unwrap();
                }
                assert_eq!(before["state"]["nextRunAtMs"], MAR6 + 9 * H);
            }
            .boxed_local()
        },
    );
    assert!(runner.calls.lock().unwrap().is_empty());
}

#[test]
fn bad_jobs_are_refused_with_the_reason_and_the_scheduler_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let c = clock.clone();
    life(
        dir.path(),
        &clock,
        &runner,
        config(true, false),
        move |addr| {
            async move {
                for (schedule, why) in [
                    (
                        json!({"kind": "cron", "expr": "0 25 * * *"}),
                        "cron expression",
                    ),
                    (
                        json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Atlantis/Capital"}),
                        "unknown timezone",
                    ),
                    (json!({"kind": "every", "everyMs": 0}), "everyMs"),
                    (json!({"kind": "sometimes"}), "unknown schedule kind"),
                ] {
                    let e = addr
                        .send(AddJob {
                            job: wire::new_job(&turn("bad", schedule)).unwrap(),
                            channels: vec![],
                            agents: vec![],
                        })
                        .await
                        .unwrap()
                        .unwrap_err();
                    assert!(e.to_string().contains(why), "{e}");
                }
                let e = addr
                    .send(UpdateJob {
                        id: "nope".into(),
                        patch: wire::job_patch(&json!({})).unwrap(),
                        channels: vec![],
                        agents: vec![],
                    })
                    .await
                    .unwrap()
                    .unwrap_err();
                assert!(matches!(e, CronError::NotFound(_)));
                let id = add(&addr, turn("fine", json!({"kind": "every", "everyMs": H}))).await;
                c.advance(H);
                addr.send(Tick).await.unwrap();
                settle(&addr).await;
                assert_eq!(addr.send(CronStatus).await.unwrap().jobs, 1);
                id
            }
            .boxed_local()
        },
    );
    assert_eq!(runner.calls.lock().unwrap().len(), 1);
}

#[test]
fn a_run_caught_delivering_finishes_its_delivery_once_and_is_not_run_again() {
    use ferroclaw_actors::cron::record::{self, Phase, RunEntry};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder::default();
    let id = life(dir.path(), &clock, &runner, config(true, false), |addr| {
        async move { add(&addr, turn("news", json!({"kind": "every", "everyMs": H}))).await }
            .boxed_local()
    });
    // What a crash between the run's end and the platform's answer leaves:
    // the slot claimed, the run `delivering` with its reply.
    {
        let store = Store::open(dir.path()).unwrap();
        let mut job: CronJobRow = store
            .get(ferroclaw_actors::store::Tree::CronJobs, &id)
            .unwrap()
            .unwrap();
        job.state.last_slot_ms = Some(MAR6 + H);
        job.state.running_at_ms = Some(MAR6 + H);
        let mut entry = RunEntry::start(
            &id,
            &format!("cron:{id}:{}", MAR6 + H),
            MAR6 + H,
            MAR6 + H,
            false,
        );
        entry.phase = Phase::Delivering;
        entry.reply = Some("the news".into());
        entry.target = Some(Target {
            channel: "telegram".into(),
            to: Some("42".into()),
            account_id: None,
            thread_id: None,
            best_effort: false,
        });
        record::write(&store, &job, &record::new_key(&id), &entry).unwrap();
    }
    clock.set(MAR6 + H + 30_000);
    let runs = life(dir.path(), &clock, &runner, config(true, false), |addr| {
        async move {
            settle(&addr).await;
            wire::run_page(&addr.send(ListRuns::default()).await.unwrap().unwrap())
        }
        .boxed_local()
    });
    assert_eq!(
        *runner.redelivered.lock().unwrap(),
        vec!["the news -> 42".to_string()]
    );
    assert!(
        runner.calls.lock().unwrap().is_empty(),
        "the turn is not run again"
    );
    assert_eq!(runs["entries"][0]["deliveryStatus"], "delivered", "{runs}");
    life(dir.path(), &clock, &runner, config(true, false), |addr| {
        async move { settle(&addr).await }.boxed_local()
    });
    assert_eq!(runner.redelivered.lock().unwrap().len(), 1, "once");
}

type CronJobRow = ferroclaw_actors::cron::job::CronJob;

#[test]
fn a_runner_that_panics_fails_its_run_and_the_job_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(MAR6);
    let runner = Recorder {
        panic: true,
        ..Default::default()
    };
    let c = clock.clone();
    let runs = life(
        dir.path(),
        &clock,
        &runner,
        config(true, false),
        move |addr| {
            async move {
                add(&addr, turn("buggy", json!({"kind": "every", "everyMs": H}))).await;
                for _ in 0..2 {
                    c.advance(H);
                    addr.send(Tick).await.unwrap();
                    settle(&addr).await;
                }
                wire::run_page(&addr.send(ListRuns::default()).await.unwrap().unwrap())
            }
            .boxed_local()
        },
    );
    let entries = runs["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{runs}");
    assert!(entries
        .iter()
        .all(|e| e["status"] == "error" && e["error"] == "the run panicked"));
}

mod property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Whatever the mix of ticks and crashes: a slot runs at most once,
        /// slots run in order, each run is a real slot of the schedule, and
        /// after each restart at most one missed slot is made up.
        #[test]
        fn no_slot_ever_runs_twice(steps in proptest::collection::vec((1u64..(5 * H), any::<bool>()), 1..12)) {
            let dir = tempfile::tempdir().unwrap();
            let clock = ManualClock::at(MAR6);
            let runner = Recorder::default();
            let id = life(dir.path(), &clock, &runner, config(true, false), |addr| {
                async move { add(&addr, turn("p", json!({"kind": "every", "everyMs": H}))).await }.boxed_local()
            });
            for (advance, restart) in steps {
                let before = runner.calls.lock().unwrap().len();
                let c = clock.clone();
                if restart {
                    c.advance(advance);
                }
                life(dir.path(), &clock, &runner, config(true, false), move |addr| {
                    async move {
                        settle(&addr).await;
                        if !restart {
                            c.advance(advance);
                            addr.send(Tick).await.unwrap();
                            settle(&addr).await;
                        }
                    }
                    .boxed_local()
                });
                let after = runner.calls.lock().unwrap().len();
                prop_assert!(after - before <= 1, "at most one run per step");
            }
            let slots = slots_of(&runner.calls, &id);
            prop_assert!(slots.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {:?}", slots);
            prop_assert!(slots.iter().all(|s| (s - MAR6).is_multiple_of(H) && *s > MAR6));
            prop_assert!(slots.iter().all(|s| *s <= clock.now_ms()));
        }
    }
}

use ferroclaw_actors::cron::clock::Clock;
