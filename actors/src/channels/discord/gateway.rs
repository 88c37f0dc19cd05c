//! Discord's gateway protocol as a state machine with no I/O: frames and
//! timer ticks in, actions out (`Shard`). The socket actor (`shard.rs`)
//! performs the actions; everything that decides is here and tested with
//! time passed in.
//!
//! - `Hello` (op 10) gives the heartbeat interval; the first heartbeat
//!   waits a random part of it, then one per interval.
//! - A heartbeat sent while the last one was not acknowledged (op 11)
//!   means the connection is a zombie: reconnect and resume (OpenClaw
//!   #54682 reported such connections "OK" while no events came).
//! - With a session (id, sequence, resume URL from `READY`) a new socket
//!   resumes (op 6) instead of identifying, so events in the gap are
//!   replayed by Discord; without one it identifies (op 2), at most once
//!   per 5 s (Discord's identify limit; OpenClaw #11836 looped thousands
//!   of times).
//! - `Reconnect` (op 7) resumes; `Invalid Session` (op 9) resumes when `d`
//!   is true, else drops the session and identifies after 1-5 s.
//! - Close codes: 4004 (bad token) and 4010-4014 (shard, version or intents
//!   refused) are fatal; 4007 and 4009 drop the session; others resume.

use serde_json::{json, Value};

pub const IDENTIFY_SPACING_MS: u64 = 5_000;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub resume_url: String,
}

/// What the socket actor must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this payload.
    Send(Value),
    /// Next heartbeat in this many ms.
    HeartbeatIn(u64),
    /// Send `Identify` after this many ms (the identify spacing).
    IdentifyIn(u64),
    /// Close this socket and open another: to `url` when resuming.
    Reconnect { resume: bool, why: &'static str },
    /// An event for the adapter (`t`, `d`, and its sequence number `s`).
    Dispatch {
        kind: String,
        data: Value,
        seq: Option<u64>,
    },
    /// Stop: retrying cannot help.
    Fatal(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for `Hello` on a new socket.
    Connecting,
    Identifying,
    Resuming,
    Ready,
}

/// One shard's protocol state (kept across sockets).
#[derive(Debug, Clone)]
pub struct Shard {
    token: String,
    intents: u64,
    pub phase: Phase,
    pub session: Option<Session>,
    pub seq: Option<u64>,
    pub heartbeat_ms: u64,
    /// A heartbeat went out and no ack came yet.
    pub awaiting_ack: bool,
    last_identify_ms: Option<u64>,
}

fn op(v: &Value) -> Option<u64> {
    v.get("op").and_then(Value::as_u64)
}

impl Shard {
    pub fn new(token: &str, intents: u64) -> Shard {
        Shard {
            token: token.to_string(),
            intents,
            phase: Phase::Connecting,
            session: None,
            seq: None,
            heartbeat_ms: 41_250,
            awaiting_ack: false,
            last_identify_ms: None,
        }
    }

    /// A session kept from before a restart: the next socket resumes it,
    /// so Discord replays what came after `seq`.
    pub fn restore(&mut self, session: Session, seq: u64) {
        self.session = Some(session);
        self.seq = Some(seq);
    }

    /// The URL a new socket goes to: the session's resume URL, else the
    /// gateway's.
    pub fn connect_url(&self, gateway: &str) -> String {
        let base = self
            .session
            .as_ref()
            .map_or(gateway, |s| s.resume_url.as_str());
        let base = base.trim_end_matches('/');
        if base.contains('?') {
            format!("{base}&v=10&encoding=json")
        } else {
            format!("{base}/?v=10&encoding=json")
        }
    }

    /// A new socket is open.
    pub fn connected(&mut self) {
        self.phase = Phase::Connecting;
        self.awaiting_ack = false;
    }

    fn heartbeat(&self) -> Value {
        json!({ "op": 1, "d": self.seq })
    }

    /// The identify payload, or how long to wait for it.
    pub fn identify(&mut self, now_ms: u64) -> Action {
        if let Some(last) = self.last_identify_ms {
            let due = last + IDENTIFY_SPACING_MS;
            if now_ms < due {
                return Action::IdentifyIn(due - now_ms);
            }
        }
        self.last_identify_ms = Some(now_ms);
        self.phase = Phase::Identifying;
        Action::Send(json!({ "op": 2, "d": {
            "token": self.token,
            "intents": self.intents,
            "properties": { "os": std::env::consts::OS, "browser": "ferroclaw", "device": "ferroclaw" },
        } }))
    }

    /// A text frame. `jitter`: a draw in [0, 1) for the first heartbeat.
    pub fn on_frame(&mut self, text: &str, now_ms: u64, jitter: f64) -> Vec<Action> {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return Vec::new(); // malformed: the caller logs it
        };
        if let Some(s) = v.get("s").and_then(Value::as_u64) {
            // Sequence numbers only grow (a replayed old event never
            // moves the resume point back).
            self.seq = Some(self.seq.map_or(s, |old| old.max(s)));
        }
        match op(&v) {
            Some(10) => {
                let interval = v["d"]["heartbeat_interval"].as_u64().unwrap_or(41_250);
                self.heartbeat_ms = interval.clamp(100, 600_000);
                let first = (self.heartbeat_ms as f64 * jitter.clamp(0.0, 1.0)) as u64;
                let start = match (&self.session, self.seq) {
                    (Some(s), Some(seq)) => {
                        self.phase = Phase::Resuming;
                        Action::Send(json!({ "op": 6, "d": {
                            "token": self.token, "session_id": s.id, "seq": seq,
                        } }))
                    }
                    _ => {
                        // Identifying, even while the identify waits its turn.
                        self.phase = Phase::Identifying;
                        self.identify(now_ms)
                    }
                };
                vec![Action::HeartbeatIn(first), start]
            }
            Some(11) => {
                self.awaiting_ack = false;
                Vec::new()
            }
            // Discord asks for a heartbeat now.
            Some(1) => vec![Action::Send(self.heartbeat())],
            Some(7) => vec![Action::Reconnect {
                resume: true,
                why: "discord asked to reconnect",
            }],
            Some(9) => {
                let resumable = v["d"].as_bool().unwrap_or(false) && self.session.is_some();
                if !resumable {
                    self.session = None;
                    self.seq = None;
                }
                vec![Action::Reconnect {
                    resume: resumable,
                    why: "invalid session",
                }]
            }
            Some(0) => self.dispatch(&v),
            _ => Vec::new(),
        }
    }

    fn dispatch(&mut self, v: &Value) -> Vec<Action> {
        let kind = v["t"].as_str().unwrap_or_default().to_string();
        let data = v["d"].clone();
        let seq = v.get("s").and_then(Value::as_u64);
        match kind.as_str() {
            "READY" => {
                let id = data["session_id"].as_str().unwrap_or_default();
                let url = data["resume_gateway_url"].as_str().unwrap_or_default();
                if !id.is_empty() && !url.is_empty() {
                    self.session = Some(Session {
                        id: id.to_string(),
                        resume_url: url.to_string(),
                    });
                }
                self.phase = Phase::Ready;
            }
            "RESUMED" => self.phase = Phase::Ready,
            _ => {}
        }
        vec![Action::Dispatch { kind, data, seq }]
    }

    /// The dispatch numbered `seq` could not be handled (its message not
    /// recorded): the next resume starts just before it, so Discord
    /// replays it and what followed (sequence numbers are consecutive
    /// within a session; everything before it was handled).
    pub fn replay_from(&mut self, seq: u64) {
        if self.session.is_some() {
            self.seq = Some(seq.saturating_sub(1));
        }
    }

    /// The heartbeat timer fired: a heartbeat, or, when the last one was
    /// never acknowledged, a zombie to replace.
    pub fn on_heartbeat_due(&mut self) -> Vec<Action> {
        if self.awaiting_ack {
            return vec![Action::Reconnect {
                resume: true,
                why: "heartbeat not acknowledged (zombie connection)",
            }];
        }
        self.awaiting_ack = true;
        vec![
            Action::Send(self.heartbeat()),
            Action::HeartbeatIn(self.heartbeat_ms),
        ]
    }

    /// The socket closed with `code` (None: dropped without a close frame).
    pub fn on_close(&mut self, code: Option<u16>) -> Action {
        match code {
            Some(4004) => {
                Action::Fatal("authentication failed (4004): the token was refused".into())
            }
            Some(c @ 4010..=4014) => Action::Fatal(format!(
                "discord refused the connection ({c}): shard, version or intents"
            )),
            Some(4007 | 4009) => {
                self.session = None;
                self.seq = None;
                Action::Reconnect {
                    resume: false,
                    why: "session expired",
                }
            }
            _ => Action::Reconnect {
                resume: self.session.is_some(),
                why: "socket closed",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hello(ms: u64) -> String {
        json!({ "op": 10, "d": { "heartbeat_interval": ms } }).to_string()
    }

    fn ready(seq: u64) -> String {
        json!({ "op": 0, "s": seq, "t": "READY", "d": { "session_id": "S1",
            "resume_gateway_url": "wss://resume.example" } })
        .to_string()
    }

    fn sent_op(a: &[Action]) -> Vec<u64> {
        a.iter()
            .filter_map(|a| match a {
                Action::Send(v) => op(v),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn hello_identifies_then_ready_makes_a_session_and_the_next_socket_resumes() {
        let mut s = Shard::new("tok", 513);
        s.connected();
        let a = s.on_frame(&hello(1000), 0, 0.5);
        assert_eq!(a[0], Action::HeartbeatIn(500));
        assert_eq!(sent_op(&a), vec![2]);
        s.on_frame(&ready(1), 10, 0.0);
        assert_eq!(s.phase, Phase::Ready);
        assert_eq!(
            s.connect_url("wss://gw"),
            "wss://resume.example/?v=10&encoding=json"
        );
        s.on_frame(
            &json!({"op":0,"s":5,"t":"MESSAGE_CREATE","d":{}}).to_string(),
            20,
            0.0,
        );
        assert_eq!(
            s.on_close(Some(1006)),
            Action::Reconnect {
                resume: true,
                why: "socket closed"
            }
        );
        s.connected();
        let a = s.on_frame(&hello(1000), 30, 0.0);
        let Action::Send(resume) = &a[1] else {
            panic!("{a:?}")
        };
        assert_eq!(resume["op"], 6);
        assert_eq!(resume["d"]["session_id"], "S1");
        assert_eq!(resume["d"]["seq"], 5);
        assert_eq!(s.phase, Phase::Resuming);
    }

    #[test]
    fn a_message_not_handled_is_replayed_by_the_next_resume() {
        let mut s = Shard::new("tok", 1);
        s.on_frame(&hello(1000), 0, 0.0);
        s.on_frame(&ready(1), 10, 0.0);
        let msg = json!({"op":0,"s":7,"t":"MESSAGE_CREATE","d":{"id":"M"}}).to_string();
        let a = s.on_frame(&msg, 20, 0.0);
        let [Action::Dispatch { kind, seq, .. }] = a.as_slice() else {
            panic!("{a:?}")
        };
        assert_eq!((kind.as_str(), *seq), ("MESSAGE_CREATE", Some(7)));
        // Later events moved the point on; the failed message takes it back.
        s.on_frame(
            &json!({"op":0,"s":8,"t":"TYPING_START","d":{}}).to_string(),
            30,
            0.0,
        );
        s.replay_from(7);
        s.connected();
        let a = s.on_frame(&hello(1000), 40, 0.0);
        let Action::Send(resume) = &a[1] else {
            panic!("{a:?}")
        };
        assert_eq!(resume["op"], 6, "a resume");
        assert_eq!(resume["d"]["seq"], 6, "from just before the message");
        // Without a session there is nothing to resume: identified anew.
        let mut fresh = Shard::new("tok", 1);
        fresh.replay_from(7);
        assert_eq!(fresh.seq, None);
    }

    #[test]
    fn a_missed_ack_is_a_zombie() {
        let mut s = Shard::new("tok", 1);
        s.on_frame(&hello(1000), 0, 0.0);
        assert_eq!(sent_op(&s.on_heartbeat_due()), vec![1]);
        s.on_frame(&json!({"op": 11}).to_string(), 10, 0.0);
        assert_eq!(sent_op(&s.on_heartbeat_due()), vec![1]);
        // No ack this time.
        assert!(matches!(
            s.on_heartbeat_due()[0],
            Action::Reconnect { resume: true, .. }
        ));
    }

    #[test]
    fn identify_waits_five_seconds_after_the_last() {
        let mut s = Shard::new("tok", 1);
        s.on_frame(&hello(1000), 0, 0.0);
        assert!(matches!(
            s.on_close(Some(4009)),
            Action::Reconnect { resume: false, .. }
        ));
        s.connected();
        let a = s.on_frame(&hello(1000), 1_000, 0.0);
        assert_eq!(a[1], Action::IdentifyIn(4_000));
        assert_eq!(s.phase, Phase::Identifying, "past the hello while it waits");
        assert!(matches!(s.identify(5_000), Action::Send(_)));
    }

    #[test]
    fn invalid_session_and_close_codes() {
        let mut s = Shard::new("tok", 1);
        s.on_frame(&hello(1000), 0, 0.0);
        s.on_frame(&ready(1), 0, 0.0);
        let a = s.on_frame(&json!({"op": 9, "d": true}).to_string(), 0, 0.0);
        assert_eq!(
            a,
            vec![Action::Reconnect {
                resume: true,
                why: "invalid session"
            }]
        );
        let a = s.on_frame(&json!({"op": 9, "d": false}).to_string(), 0, 0.0);
        assert_eq!(
            a,
            vec![Action::Reconnect {
                resume: false,
                why: "invalid session"
            }]
        );
        assert!(s.session.is_none());
        assert!(matches!(s.on_close(Some(4004)), Action::Fatal(_)));
        assert!(matches!(s.on_close(Some(4014)), Action::Fatal(_)));
        let a = s.on_frame(&json!({"op": 7}).to_string(), 0, 0.0);
        assert!(matches!(a[0], Action::Reconnect { .. }));
    }

    proptest! {
        /// Whatever comes, nothing panics and the resume point never moves
        /// back.
        #[test]
        fn any_frames_keep_the_sequence_monotonic(
            frames in prop::collection::vec((0u64..12, prop::option::of(0u64..1000), any::<bool>()), 0..60),
            junk in prop::collection::vec(".{0,20}", 0..5),
        ) {
            let mut s = Shard::new("tok", 1);
            for (i, (code, seq, d)) in frames.iter().enumerate() {
                let before = s.seq;
                let f = json!({ "op": code, "s": seq, "t": "X", "d": d });
                s.on_frame(&f.to_string(), i as u64, 0.3);
                if *code != 9 {
                    prop_assert!(s.seq >= before, "{:?} -> {:?}", before, s.seq);
                }
            }
            for j in &junk {
                prop_assert!(s.on_frame(j, 0, 0.0).is_empty() || serde_json::from_str::<Value>(j).is_ok());
            }
        }
    }
}
