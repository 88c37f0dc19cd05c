//! OpenClaw's read-only durable inspection (`durable.*`), answered from the
//! records ferroclaw keeps anyway (not an actor: the channel supervisor
//! reads them for the methods, `InspectDurable`; the restore receipt is
//! `backup/receipt.rs`). OpenClaw's names, and
//! what each is here:
//! - a **wake** is a reply owed to a chat: one run's outbox items for one
//!   account (plus the open delivery record while the run still streams).
//!   Its id is `<account>|<session>/<run>`; `pending` while anything is
//!   left to send, `acked` when every item was taken by the platform,
//!   `failed` when one was refused or given up, `suspended` when one left
//!   and no answer came (not sent again: a person decides).
//! - a **delivery attempt** is one outbox item: `pending`, `attempted` (the
//!   request is out), `handoff_accepted` (the platform took it, with its
//!   message id), `failed` (with why), `unknown`, `superseded` (sent again).
//! - an **uncertainty fact** is an outbox item whose request left and got no
//!   answer (`delivery_unknown`), or a run a stop cut off, whose tool calls
//!   may or may not have happened (`lost_after_dispatch`).
//! - an **obligation** is what is owed and open: an update taken from a
//!   platform and not yet handed to its session, a message a session
//!   acknowledged and has not finished, an open wake, an open fact.
//!
//! Nothing private leaves: no message text, no dedupe key of a platform
//! beyond its id, no store path; strings are cut to OpenClaw's 2,000.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ledger::{Delivery, OutState, OutboxItem, Resolution};
use crate::session::run_record::RunRecord;
use crate::store::{Store, StoreError, Tree};

/// OpenClaw's longest public string.
const PUBLIC_MAX: usize = 2000;

fn public(s: &str) -> String {
    s.chars().take(PUBLIC_MAX).collect()
}

/// One outbox item as a delivery attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub delivery_attempt_id: String,
    pub source_owner: &'static str,
    pub source_ref: String,
    pub wake_id: String,
    pub target_kind: &'static str,
    pub target_ref: String,
    pub route_kind: &'static str,
    pub route_ref: String,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub scheduled_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempted_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_accepted_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_at: Option<u64>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// A reply owed to a chat.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Wake {
    pub wake_id: String,
    pub source_owner: &'static str,
    pub source_ref: String,
    pub target_kind: &'static str,
    pub target_ref: String,
    pub owner_kind: &'static str,
    pub owner_ref: String,
    pub target_resolution_status: &'static str,
    pub reason: &'static str,
    pub source_run_id: String,
    pub attempt_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acked_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_reason: Option<String>,
    pub status: &'static str,
    pub created_at: u64,
    pub updated_at: u64,
}

/// Something that may or may not have happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    pub fact_id: String,
    pub source_owner: &'static str,
    pub source_ref: String,
    pub kind: &'static str,
    pub source_run_id: String,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<u64>,
    pub created_at: u64,
    pub updated_at: u64,
    /// The wake it belongs to (not on the wire: inspection groups by it).
    #[serde(skip)]
    pub wake_id: Option<String>,
}

/// Something owed and open.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Obligation {
    pub obligation_id: String,
    pub source_owner: &'static str,
    pub source_ref: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertainty_fact_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub status: &'static str,
    pub created_at: u64,
    pub updated_at: u64,
}

/// The counts `durable.health.get` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Run records kept (a day of them).
    pub runs: usize,
    /// Platform updates recorded (the inbound ledger: a week of them).
    pub events: usize,
    /// Outbox items (each a delivery attempt).
    pub steps: usize,
    /// Runs accepted and not yet ended.
    pub open_runs: usize,
    pub pending_wakes: usize,
    pub unresolved_uncertainty_facts: usize,
}

/// Everything `durable.*` answers from, read once.
pub struct Records {
    items: Vec<OutboxItem>,
    deliveries: Vec<Delivery>,
    runs: Vec<(String, RunRecord)>,
    /// (account, dedupe key, taken at) of updates not yet handed over.
    undispatched: Vec<(String, String, u64)>,
    /// (session key, inbox id, at) of messages a session has not finished.
    inbox: Vec<(String, String, u64)>,
    events: usize,
    /// When this process started: an open reply older than that was cut
    /// off by a stop.
    started_ms: u64,
}

impl Records {
    pub fn read(store: &Store, started_ms: u64) -> Result<Records, StoreError> {
        let undispatched = store
            .scan::<serde_json::Value>(Tree::ChannelDispatch, "")?
            .into_iter()
            .filter_map(|(k, v)| {
                let (account, dedupe) = k.split_once('\0')?;
                let at = v.get("tsMs").and_then(|t| t.as_u64()).unwrap_or(0);
                Some((account.to_string(), dedupe.to_string(), at))
            })
            .collect();
        let inbox = store
            .scan::<serde_json::Value>(Tree::Inbox, "")?
            .into_iter()
            .filter_map(|(k, _)| {
                let (session, id) = k.split_once('\0')?;
                let at = ulid::Ulid::from_string(id).map(|u| u.timestamp_ms());
                Some((session.to_string(), id.to_string(), at.unwrap_or(0)))
            })
            .collect();
        Ok(Records {
            items: values(store.scan(Tree::Outbox, "")?),
            deliveries: values(store.scan(Tree::ChannelDeliveries, "")?),
            runs: store.scan(Tree::Runs, "")?,
            undispatched,
            inbox,
            events: store
                .scan::<serde_json::Value>(Tree::ChannelInbound, "")?
                .len(),
            started_ms,
        })
    }
}

fn values<T>(pairs: Vec<(String, T)>) -> Vec<T> {
    pairs.into_iter().map(|(_, v)| v).collect()
}

/// The wake an item belongs to: its account and its key without the
/// chunk index (`<session>/<run>`).
fn wake_of(account: &str, key: &str) -> String {
    let group = key.rsplit_once('/').map(|(g, _)| g).unwrap_or(key);
    format!("{account}|{group}")
}

fn wake_of_delivery(d: &Delivery) -> String {
    wake_of(
        &d.account,
        &super::ledger::chunk_key(d.session_key.as_str(), &d.run_id, 0),
    )
}

fn route(account: &str, target: &str, thread: Option<&str>) -> (String, String) {
    let target_ref = format!("{account}:{target}");
    let route_ref = match thread {
        Some(t) => format!("{target_ref}#{t}"),
        None => target_ref.clone(),
    };
    (public(&target_ref), public(&route_ref))
}

/// What one outbox item's state says, OpenClaw's way: (status, when it
/// last changed).
fn attempt_status(item: &OutboxItem) -> (&'static str, u64) {
    match &item.state {
        OutState::Pending => ("pending", item.created_ms),
        OutState::Sending { at_ms } => ("attempted", *at_ms),
        OutState::Sent { at_ms, .. } => ("handoff_accepted", *at_ms),
        OutState::Failed { at_ms, .. } => ("failed", *at_ms),
        OutState::Unknown {
            resolution: Resolution::Resent,
            at_ms,
        } => ("superseded", *at_ms),
        OutState::Unknown { at_ms, .. } => ("unknown", *at_ms),
    }
}

pub fn attempt(item: &OutboxItem) -> Attempt {
    let (status, at) = attempt_status(item);
    let (target_ref, route_ref) = route(&item.account, &item.target, item.thread_id.as_deref());
    let when = |s: &str| (status == s).then_some(at);
    Attempt {
        delivery_attempt_id: public(&format!("{}|{}", item.account, item.key)),
        source_owner: "outbox",
        source_ref: public(&item.key),
        wake_id: public(&wake_of(&item.account, &item.key)),
        target_kind: "channel_route",
        target_ref,
        route_kind: "channel_route",
        route_ref,
        status,
        error: match &item.state {
            OutState::Failed { error, .. } => Some(public(error)),
            _ => None,
        },
        scheduled_at: item.created_ms,
        attempted_at: when("attempted"),
        handoff_accepted_at: when("handoff_accepted"),
        failed_at: when("failed"),
        unknown_at: when("unknown").or(when("superseded")),
        created_at: item.created_ms,
        updated_at: at,
    }
}

/// A wake's status from its items' (status, at) and whether its run
/// still streams.
fn wake_status(states: &[(&'static str, u64)], open: bool) -> &'static str {
    let any = |s: &str| states.iter().any(|(st, _)| *st == s);
    if open || any("pending") || any("attempted") {
        "pending"
    } else if any("failed") {
        "failed"
    } else if any("unknown") {
        "suspended"
    } else {
        "acked"
    }
}

/// The session and run of a wake's key group (`<session>/<run>`).
fn owner_and_run(group: &str) -> (String, String) {
    match group.split_once('/') {
        Some((s, r)) => (s.to_string(), r.to_string()),
        None => (group.to_string(), String::new()),
    }
}

impl Records {
    /// Every wake, newest first.
    pub fn wakes(&self) -> Vec<Wake> {
        let mut groups: BTreeMap<String, (Vec<&OutboxItem>, Option<&Delivery>)> = BTreeMap::new();
        for item in &self.items {
            let g = groups.entry(wake_of(&item.account, &item.key)).or_default();
            g.0.push(item);
        }
        for d in &self.deliveries {
            groups.entry(wake_of_delivery(d)).or_default().1 = Some(d);
        }
        let mut wakes: Vec<Wake> = groups
            .into_iter()
            .map(|(id, (items, open))| self.wake(id, &items, open))
            .collect();
        wakes.sort_by_key(|w| std::cmp::Reverse(w.created_at));
        wakes
    }

    fn wake(&self, id: String, items: &[&OutboxItem], open: Option<&Delivery>) -> Wake {
        let states: Vec<(&'static str, u64)> = items.iter().map(|i| attempt_status(i)).collect();
        let any = |s: &str| states.iter().any(|(st, _)| *st == s);
        let status = wake_status(&states, open.is_some());
        let created = items
            .iter()
            .map(|i| i.created_ms)
            .chain(open.map(|d| d.created_ms))
            .min()
            .unwrap_or(0);
        let reason = if any("unknown") || any("superseded") {
            "delivery_unknown"
        } else if open.is_some() && created < self.started_ms {
            "restart_interrupted"
        } else {
            "child_terminal"
        };
        let (account, group) = id.split_once('|').unwrap_or(("", &id));
        let (session, run) = match open {
            Some(d) => (d.session_key.as_str().to_string(), d.run_id.to_string()),
            None => owner_and_run(group),
        };
        let first = items.first();
        let target = open
            .map(|d| (d.target.as_str(), d.thread_id.as_deref()))
            .or(first.map(|i| (i.target.as_str(), i.thread_id.as_deref())))
            .unwrap_or(("", None));
        let tried: Vec<u64> = states
            .iter()
            .filter(|(s, _)| *s != "pending")
            .map(|(_, at)| *at)
            .collect();
        let updated = states.iter().map(|(_, at)| *at).max().unwrap_or(created);
        Wake {
            wake_id: public(&id),
            source_owner: "outbox",
            source_ref: public(&run),
            target_kind: "channel_route",
            target_ref: route(account, target.0, target.1).1,
            owner_kind: "agent_session",
            owner_ref: public(&session),
            target_resolution_status: "resolved",
            reason,
            source_run_id: public(&run),
            attempt_count: tried.len(),
            last_attempt_at: tried.iter().copied().max(),
            acked_at: (status == "acked").then_some(updated),
            failed_reason: items.iter().find_map(|i| match &i.state {
                OutState::Failed { error, .. } => Some(public(error)),
                _ => None,
            }),
            status,
            created_at: created,
            updated_at: updated.max(created),
        }
    }

    /// One wake's attempts, in send order.
    pub fn attempts(&self, wake_id: &str) -> Vec<Attempt> {
        self.items
            .iter()
            .filter(|i| wake_of(&i.account, &i.key) == wake_id)
            .map(attempt)
            .collect()
    }

    /// Every uncertainty fact still open, newest first.
    pub fn facts(&self) -> Vec<Fact> {
        let mut facts: Vec<Fact> = self.items.iter().filter_map(item_fact).collect();
        facts.extend(self.runs.iter().filter_map(|(id, r)| run_fact(id, r)));
        facts.retain(|f| f.status == "open");
        facts.sort_by_key(|f| std::cmp::Reverse(f.created_at));
        facts
    }
}

/// An item whose request left and got no answer.
fn item_fact(item: &OutboxItem) -> Option<Fact> {
    let OutState::Unknown { resolution, at_ms } = &item.state else {
        return None;
    };
    let resent = *resolution == Resolution::Resent;
    let (_, run) = owner_and_run(wake_of(&item.account, &item.key).split_once('|')?.1);
    Some(Fact {
        fact_id: public(&format!("outbox|{}|{}", item.account, item.key)),
        source_owner: "outbox",
        source_ref: public(&item.key),
        kind: "delivery_unknown",
        source_run_id: public(&run),
        status: if resent { "resolved" } else { "open" },
        resolution_kind: resent.then_some("sent_again"),
        resolved_at: resent.then_some(*at_ms),
        created_at: item.created_ms,
        updated_at: *at_ms,
        wake_id: Some(wake_of(&item.account, &item.key)),
    })
}

/// A run a stop cut off: what its tools did before is not known.
fn run_fact(id: &str, r: &RunRecord) -> Option<Fact> {
    if r.error.as_deref() != Some(crate::session::INTERRUPTED_NOTE) {
        return None;
    }
    Some(Fact {
        fact_id: public(&format!("run|{id}")),
        source_owner: "runs",
        source_ref: public(id),
        kind: "lost_after_dispatch",
        source_run_id: public(id),
        status: "open",
        resolution_kind: None,
        resolved_at: None,
        created_at: r.started_at,
        updated_at: r.ended_at.max(r.started_at),
        wake_id: None,
    })
}

impl Records {
    /// Everything owed and open, oldest first.
    pub fn obligations(&self) -> Vec<Obligation> {
        let mut out: Vec<Obligation> = Vec::new();
        for (account, dedupe, at) in &self.undispatched {
            out.push(queued("channel_dispatch", account, dedupe, *at));
        }
        for (session, id, at) in &self.inbox {
            out.push(queued("session_inbox", session, id, *at));
        }
        for w in self.wakes().into_iter().filter(|w| w.status == "pending") {
            out.push(Obligation {
                obligation_id: public(&format!("wake|{}", w.wake_id)),
                source_owner: "outbox",
                source_ref: w.source_ref,
                kind: "pending_wake",
                reason: Some(w.reason.to_string()),
                wake_id: Some(w.wake_id),
                uncertainty_fact_id: None,
                status: "pending",
                created_at: w.created_at,
                updated_at: w.updated_at,
            });
        }
        for f in self.facts() {
            out.push(Obligation {
                obligation_id: public(&format!("fact|{}", f.fact_id)),
                source_owner: f.source_owner,
                source_ref: f.source_ref,
                kind: "unresolved_uncertainty",
                reason: Some(f.kind.to_string()),
                wake_id: f.wake_id.map(|w| public(&w)),
                uncertainty_fact_id: Some(f.fact_id),
                status: "open",
                created_at: f.created_at,
                updated_at: f.updated_at,
            });
        }
        out.sort_by_key(|o| o.created_at);
        out
    }

    pub fn stats(&self) -> Stats {
        Stats {
            runs: self.runs.len(),
            events: self.events,
            steps: self.items.len(),
            open_runs: self.runs.iter().filter(|(_, r)| r.is_pending()).count(),
            pending_wakes: self
                .wakes()
                .iter()
                .filter(|w| w.status == "pending")
                .count(),
            unresolved_uncertainty_facts: self.facts().len(),
        }
    }
}

/// A message taken and not yet answered.
fn queued(owner: &'static str, scope: &str, id: &str, at: u64) -> Obligation {
    Obligation {
        obligation_id: public(&format!("{owner}|{scope}|{id}")),
        source_owner: owner,
        source_ref: public(&format!("{scope}|{id}")),
        kind: "pending_delivery_queue",
        wake_id: None,
        uncertainty_fact_id: None,
        reason: Some("received and not yet answered".to_string()),
        status: "pending",
        created_at: at,
        updated_at: at,
    }
}

#[cfg(test)]
#[path = "inspect_tests.rs"]
mod tests;
