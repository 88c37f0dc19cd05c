//! `chat.send_timing`: how long a Control UI's message took to reach each
//! step of its run (OpenClaw's server-side timings the UI records: the
//! ack, the run starting, the first assistant text, the run's end), sent
//! to the connection that sent it and to no one else. Only for OpenClaw's
//! operator UIs (the Control UI, the TUI), as OpenClaw does.

use ferroclaw_actors::ids::RunId;
use std::collections::HashMap;
use std::time::Instant;

use ferroclaw_actors::ids::ConnId;
use serde_json::{json, Value};

/// Clients that get their send timings.
pub fn wants_timings(client_id: &str) -> bool {
    matches!(client_id, "openclaw-control-ui" | "openclaw-tui")
}

/// Timings kept for runs that never start are dropped after this many.
const MAX_TRACKED: usize = 1024;

struct Timing {
    conn_id: ConnId,
    session_key: String,
    received: Instant,
    acked: Option<Instant>,
    first_assistant: bool,
}

/// Per-run timing state of the event bridge.
#[derive(Default)]
pub struct SendTimings {
    runs: HashMap<String, Timing>,
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

impl SendTimings {
    /// A message was received (keyed by its idempotency key, which is its run id).
    pub fn received(&mut self, run_id: RunId, conn_id: ConnId, session_key: String) {
        if self.runs.len() >= MAX_TRACKED {
            let oldest = self
                .runs
                .iter()
                .min_by_key(|(_, t)| t.received)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.runs.remove(&k);
            }
        }
        let t = Timing {
            conn_id,
            session_key,
            received: Instant::now(),
            acked: None,
            first_assistant: false,
        };
        self.runs.insert(run_id.to_string(), t);
    }

    /// Message `message_id` is answered by run `run_id`.
    pub fn follow(&mut self, message_id: &str, run_id: &str) {
        if message_id != run_id {
            if let Some(t) = self.runs.remove(message_id) {
                self.runs.entry(run_id.to_string()).or_insert(t);
            }
        }
    }

    /// A phase of run `run_id`: the payload and the connection it goes to.
    fn phase(&mut self, run_id: &str, phase: &str) -> Option<(ConnId, Value)> {
        let t = self.runs.get_mut(run_id)?;
        let now = Instant::now();
        if phase == "dispatch-started" {
            t.acked = Some(now);
        }
        let acked = t.acked.unwrap_or(now);
        let agent = crate::protocol::session_rows::agent_of(&t.session_key).to_string();
        let payload = json!({
            "phase": phase, "runId": run_id, "sessionKey": t.session_key, "agentId": agent,
            "ackToPhaseMs": ms(now.saturating_duration_since(acked)),
            "receivedToPhaseMs": ms(now.duration_since(t.received)),
            "dispatchStartedToPhaseMs": ms(now.saturating_duration_since(acked)),
        });
        Some((t.conn_id.clone(), payload))
    }

    pub fn acked(&mut self, run_id: &str) -> Option<(ConnId, Value)> {
        self.phase(run_id, "dispatch-started")
    }

    pub fn started(&mut self, run_id: &str) -> Option<(ConnId, Value)> {
        self.phase(run_id, "agent-run-started")
    }

    /// The first assistant text of the run (once).
    pub fn assistant(&mut self, run_id: &str) -> Option<(ConnId, Value)> {
        let t = self.runs.get_mut(run_id)?;
        if t.first_assistant {
            return None;
        }
        t.first_assistant = true;
        self.phase(run_id, "first-assistant-event")
    }

    /// The run ended: its last timing, and it is forgotten.
    pub fn ended(&mut self, run_id: &str) -> Option<(ConnId, Value)> {
        let out = self.phase(run_id, "dispatch-completed");
        self.runs.remove(run_id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(n: usize) -> ConnId {
        ConnId::new(format!("c{n}"))
    }

    #[test]
    fn a_queued_message_is_timed_under_the_run_that_answers_it_and_forgotten_at_its_end() {
        let mut t = SendTimings::default();
        t.received("m1".into(), conn(1), "agent:ops:main".into());
        t.follow("m1", "r1");
        assert!(t.acked("m1").is_none(), "known by its run now");
        let (to, p) = t.started("r1").unwrap();
        assert_eq!(
            (to, &p["phase"], &p["agentId"]),
            (conn(1), &json!("agent-run-started"), &json!("ops"))
        );
        assert!(t.assistant("r1").is_some());
        assert!(t.assistant("r1").is_none(), "the first assistant text only");
        assert_eq!(t.ended("r1").unwrap().1["phase"], "dispatch-completed");
        assert!(t.ended("r1").is_none() && t.started("r1").is_none());
    }

    #[test]
    fn runs_that_never_start_do_not_pile_up() {
        let mut t = SendTimings::default();
        for i in 0..(MAX_TRACKED + 10) {
            t.received(format!("m{i}").into(), conn(i), "agent:main:main".into());
        }
        assert_eq!(t.runs.len(), MAX_TRACKED);
        assert!(t.runs.contains_key(&format!("m{}", MAX_TRACKED + 9)));
    }
}
