//! What every channel's crash test checks once the load is over and the
//! gateway is gone (`telegram_crash.rs`, `slack_crash.rs`,
//! `discord_crash.rs`, `whatsapp_crash.rs`): nothing left unfinished in the ledger, each sent
//! chunk is exactly one platform message with its text, every platform
//! message is a chunk the outbox knows, and each message pushed was
//! answered at most once (answered, interrupted with a notice, or its
//! reply's send had no answer). Each test queues `followup` with a cap
//! above the messages it sends: every DM shares the main session, and at
//! the default cap (20) an overloaded run summarised the oldest into one
//! reply, answering them together instead of each once.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use ferroclaw_actors::channels::ledger::{OutState, OutboxItem};
use ferroclaw_actors::store::{Store, Tree};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::Value;

use crate::support::process::{sigkill, spawn_gateway, Gateway};

/// One message of the load: (chat index, words streamed every `delay` ms,
/// pause after, a SIGKILL after).
pub type Step = (u8, u16, u16, bool);

/// Steps at the end that are never followed by a SIGKILL: what is pushed
/// after the last restart must be answered.
pub const TAIL: usize = 4;

/// `n` messages across `chats` chats, about one in five followed by a
/// SIGKILL, as proptest draws them from the test's seed (printed; replay
/// with `FERROCLAW_TEST_SEED`). By construction at least two steps crash
/// and the last [`TAIL`] steps do not.
pub fn schedule(test: &str, chats: u8, n: usize) -> Vec<Step> {
    assert!(n > TAIL + 3);
    let mut runner = crate::support::seeded_runner(crate::support::test_seed(test), 1);
    let mut steps: Vec<Step> = prop::collection::vec(
        (0..chats, 0u16..25, 0u16..250, prop::bool::weighted(0.2)),
        n,
    )
    .new_tree(&mut runner)
    .unwrap()
    .current();
    let body = n - TAIL;
    for s in &mut steps[body..] {
        s.3 = false;
    }
    if steps.iter().filter(|s| s.3).count() < 2 {
        steps[body / 3].3 = true;
        steps[2 * body / 3].3 = true;
    }
    steps
}

/// The steps after the last SIGKILL of a schedule (never empty).
pub fn after_last_crash(steps: &[Step]) -> std::ops::Range<usize> {
    let last = steps.iter().rposition(|s| s.3).map_or(0, |i| i + 1);
    last..steps.len()
}

/// Every message pushed after the last restart was answered: nothing cut
/// them short, so anything else is a lost message.
pub fn tail_answered(steps: &[Step], outcomes: &BTreeMap<usize, &'static str>) {
    for i in after_last_crash(steps) {
        assert_eq!(
            outcomes.get(&i),
            Some(&"answered"),
            "message {i} after the last restart: {outcomes:?}"
        );
    }
}

/// Runs the schedule against the gateway in `dir`: `push(i, chat, text)`
/// sends message `i` (its text asks the offline model to stream every
/// `delay` ms) and says what it owes; after a step marked so, the gateway
/// is SIGKILLed and restarted. Returns what was pushed and the crashes.
pub async fn drive(
    dir: &std::path::Path,
    child: &mut Gateway,
    steps: &[Step],
    push: impl FnMut(usize, u8, &str) -> Pushed,
) -> (Vec<Pushed>, usize) {
    drive_with(dir, child, steps, push, |_| {}).await
}

/// As [`drive`], telling `restarted` each restarted gateway's address
/// (a platform that calls the gateway, as webhooks do, follows it).
pub async fn drive_with(
    dir: &std::path::Path,
    child: &mut Gateway,
    steps: &[Step],
    mut push: impl FnMut(usize, u8, &str) -> Pushed,
    mut restarted: impl FnMut(&str),
) -> (Vec<Pushed>, usize) {
    let mut pushed = Vec::new();
    let mut crashes = 0;
    for (i, (chat, delay, pause, crash)) in steps.iter().enumerate() {
        let words = format!("m{i}x one two three");
        let mut p = push(i, *chat, &format!("@delay {delay}\n{words}"));
        p.answer = format!("You said: {words}");
        pushed.push(p);
        tokio::time::sleep(Duration::from_millis(u64::from(*pause))).await;
        if *crash {
            sigkill(child);
            crashes += 1;
            let (again, addr, _) = spawn_gateway(dir);
            *child = again;
            restarted(&addr);
        }
    }
    (pushed, crashes)
}

/// A message as the platform holds it (its latest text).
#[derive(Debug, Clone)]
pub struct Landed {
    pub chat: String,
    pub id: String,
    pub text: String,
}

/// A message pushed to the gateway: its chat, its dedupe key, the answer
/// it should get (filled in by `drive`).
#[derive(Debug, Clone)]
pub struct Pushed {
    pub chat: String,
    pub key: String,
    pub answer: String,
}

/// Waits (at most 60 s) until `taken` holds (the platform knows every
/// message was taken: confirmed, acknowledged) and the gateway `child`
/// owes nothing: no message waits for its session, no run owes a reply, no
/// chunk waits in the outbox (its `/metrics`). Past that, nothing more is
/// sent, so what the platform holds is final.
pub async fn quiet(child: &Gateway, mut taken: impl AsyncFnMut() -> bool) {
    let addr: std::net::SocketAddr = child.1.parse().expect("the child's address");
    let owed = [
        "ferroclaw_channel_dispatch_waiting 0",
        "ferroclaw_channel_deliveries_open 0",
        "ferroclaw_channel_outbox_pending 0",
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if taken().await {
            let (status, _, metrics) = crate::support::http(addr, "GET", "/metrics", &[]).await;
            if status == 200 && owed.iter().all(|line| metrics.lines().any(|l| l == *line)) {
                return;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway never went quiet"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every chunk the outbox holds.
pub fn outbox_items(store: &Store) -> Vec<OutboxItem> {
    store
        .scan::<OutboxItem>(Tree::Outbox, "")
        .unwrap()
        .into_iter()
        .map(|(_, c)| c)
        .collect()
}

/// The checks (`label` and `crashes`, the SIGKILLs of the run, for the
/// printed row);
/// returns each pushed message's outcome.
/// What a chunk's text may look like on the platform: as it is, or, on
/// Telegram, rendered to its HTML (list items become bullets, rules dashes:
/// an overflowing queue's summary has both).
fn as_sent(channel: &str, text: &str) -> Vec<String> {
    let mut forms = vec![text.to_string()];
    if channel == "telegram" {
        forms.push(ferroclaw_actors::channels::telegram::format::to_html(text));
    }
    forms
}

pub fn check(
    dir: &std::path::Path,
    channel: &str,
    label: &str,
    crashes: usize,
    landed: &[Landed],
    pushed: &[Pushed],
) -> BTreeMap<usize, &'static str> {
    let store = Store::open(dir).unwrap();
    let open: Vec<(String, Value)> = store.scan(Tree::ChannelDeliveries, "").unwrap();
    assert!(open.is_empty(), "deliveries left unfinished: {open:?}");
    let waiting: Vec<(String, Value)> = store.scan(Tree::ChannelDispatch, "").unwrap();
    assert!(
        waiting.is_empty(),
        "messages never handed over: {waiting:?}"
    );
    let chunks = outbox_items(&store);
    // Each sent chunk is exactly one platform message with its text (the
    // final chunk of a partial stream edits the preview's message).
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for c in &chunks {
        if let OutState::Sent { message_id, .. } = &c.state {
            if c.edit_of.is_none() {
                *by_id.entry(message_id.clone()).or_default() += 1;
            }
            let m = landed.iter().find(|m| m.id == *message_id);
            let m = m.unwrap_or_else(|| {
                panic!("chunk {} sent as {message_id}, not on {channel}", c.key)
            });
            assert_eq!(m.chat, c.target);
            match &c.media {
                // An upload: the platform's message is the file.
                Some(_) => assert!(m.text.starts_with('['), "chunk {}: {m:?}", c.key),
                None if !c.key.ends_with("preview") => {
                    assert!(
                        as_sent(channel, &c.text).contains(&m.text),
                        "chunk {}: {:?} is not {:?}",
                        c.key,
                        m.text,
                        c.text
                    )
                }
                None => {}
            }
        }
        assert!(
            !matches!(c.state, OutState::Pending | OutState::Sending { .. }),
            "{c:?}"
        );
    }
    assert!(
        by_id.values().all(|n| *n == 1),
        "one message per chunk: {by_id:?}"
    );
    // Every platform message is a chunk the outbox knows.
    for m in landed {
        let known = chunks.iter().any(|c| match &c.state {
            OutState::Sent { message_id, .. } => *message_id == m.id,
            OutState::Unknown { .. } => c.target == m.chat,
            _ => false,
        });
        assert!(known, "a {channel} message no chunk accounts for: {m:?}");
    }
    let mut outcomes = BTreeMap::new();
    let (mut duplicates, mut lost) = (Vec::new(), Vec::new());
    for (i, p) in pushed.iter().enumerate() {
        let run = format!("{channel}:{}", p.key);
        let mine: Vec<&OutboxItem> = chunks
            .iter()
            .filter(|c| c.key.contains(&format!("/{run}/")))
            .collect();
        let n = landed
            .iter()
            .filter(|m| m.chat == p.chat && m.text == p.answer)
            .count();
        let unknown = mine
            .iter()
            .any(|c| matches!(c.state, OutState::Unknown { .. }));
        let noticed = mine.iter().any(|c| c.text.starts_with('⚠'));
        let outcome = match (n, noticed, unknown) {
            (1, false, _) => "answered",
            (0, true, _) => "interrupted",
            (0, false, true) => "unknown",
            (2.., ..) => {
                duplicates.push(format!(
                    "message {i}: {} reached {} {n} times",
                    p.answer, p.chat
                ));
                "duplicated"
            }
            other => {
                lost.push(format!(
                    "message {i} in {}: {other:?}; chunks {mine:?}",
                    p.chat
                ));
                "lost"
            }
        };
        outcomes.insert(i, outcome);
    }
    let count = |o: &str| outcomes.values().filter(|v| **v == o).count();
    // One row of BENCHMARKS.md's crash table (`bench/crash_table.sh`).
    if !pushed.is_empty() {
        eprintln!(
            "crash-table | {label} | {} | {crashes} | {} | {} | {} | {} | {} |",
            pushed.len(),
            count("answered"),
            count("interrupted"),
            count("unknown"),
            duplicates.len(),
            lost.len()
        );
    }
    assert!(duplicates.is_empty(), "{duplicates:?}");
    assert!(lost.is_empty(), "{lost:?}");
    outcomes
}
