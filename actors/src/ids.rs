//! Identifier newtypes shared by the actor tree (`ConnId`, `RunId`,
//! `SessionKey`), and the one place a
//! session key is taken apart (`key`).

use std::fmt;

/// What an id made of shared text (`Arc<str>`) offers: read as `&str`
/// (maps keyed by it are asked by `&str`), shown and serialised as its
/// text, compared with strings, cloned by a reference count.
macro_rules! shared_text {
    ($t:ident) => {
        impl std::ops::Deref for $t {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $t {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&$t> for $t {
            fn from(v: &$t) -> $t {
                v.clone()
            }
        }

        impl From<$t> for String {
            fn from(v: $t) -> String {
                v.0.to_string()
            }
        }

        impl PartialEq<str> for $t {
            fn eq(&self, o: &str) -> bool {
                &*self.0 == o
            }
        }

        impl PartialEq<&str> for $t {
            fn eq(&self, o: &&str) -> bool {
                &*self.0 == *o
            }
        }

        impl PartialEq<String> for $t {
            fn eq(&self, o: &String) -> bool {
                *self.0 == **o
            }
        }

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

/// One WebSocket connection, as advertised in `hello-ok.server.connId`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(String);

impl ConnId {
    pub fn new(id: String) -> ConnId {
        ConnId(id)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Longest accepted session key (OpenClaw's `sessionKey` bound).
pub const MAX_SESSION_KEY: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionKeyError {
    #[error("session key is empty")]
    Empty,
    #[error("session key is longer than {MAX_SESSION_KEY} characters")]
    TooLong,
    #[error("session key contains whitespace or control characters")]
    BadCharacters,
    #[error("session key {0:?} is not agent:<agentId>:<key>")]
    Malformed(String),
}

/// A canonical session key: `agent:<agentId>:<rest>`. Shared, not
/// copied: every event of a session's runs carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey(std::sync::Arc<str>);

impl SessionKey {
    /// Canonicalises a key as clients send it: `main` (the main key) becomes
    /// `agent:<default>:main`; a key without the `agent:` prefix is scoped to
    /// the default agent (`web:main` -> `agent:main:web:main`); the agent id
    /// is lowercased.
    pub fn canonical(
        raw: &str,
        default_agent: &str,
        main_key: &str,
    ) -> Result<SessionKey, SessionKeyError> {
        let key = raw.trim();
        if key.is_empty() {
            return Err(SessionKeyError::Empty);
        }
        if key.chars().count() > MAX_SESSION_KEY {
            return Err(SessionKeyError::TooLong);
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(SessionKeyError::BadCharacters);
        }
        let full = match key.strip_prefix("agent:") {
            Some(rest) => {
                let (agent, tail) = rest
                    .split_once(':')
                    .ok_or_else(|| SessionKeyError::Malformed(key.to_string()))?;
                if agent.is_empty() || tail.is_empty() {
                    return Err(SessionKeyError::Malformed(key.to_string()));
                }
                format!("agent:{}:{tail}", agent.to_ascii_lowercase())
            }
            None if key == main_key || key == "main" => format!("agent:{default_agent}:{main_key}"),
            None => format!("agent:{default_agent}:{key}"),
        };
        if full.chars().count() > MAX_SESSION_KEY {
            return Err(SessionKeyError::TooLong);
        }
        Ok(SessionKey(full.into()))
    }

    /// A key this gateway made canonical before (stored, or held by its
    /// actors): taken as it is.
    pub fn stored(key: &str) -> SessionKey {
        SessionKey(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The agent id part.
    pub fn agent_id(&self) -> &str {
        key::agent(&self.0)
    }
}

shared_text!(SessionKey);

/// Read back as written (the store holds canonical keys only).
impl<'de> serde::Deserialize<'de> for SessionKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SessionKey, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(SessionKey::stored(&s))
    }
}

/// The parts of a session key (`agent:<agentId>:<rest>`), read in one
/// place. Every function takes any string and never panics; a key without
/// the `agent:` prefix reads as the `main` agent's.
pub mod key {
    /// The agent id (`main` when the key names none).
    pub fn agent(key: &str) -> &str {
        let mut parts = key.splitn(3, ':');
        match (parts.next(), parts.next()) {
            (Some("agent"), Some(id)) if !id.is_empty() => id,
            _ => "main",
        }
    }

    /// What follows `agent:<id>:` (the whole key when it has no prefix).
    pub fn rest(key: &str) -> &str {
        match key.strip_prefix("agent:") {
            Some(r) => r.split_once(':').map_or("", |(_, rest)| rest),
            None => key,
        }
    }

    /// The first part of the rest: the channel or kind (`telegram`,
    /// `cron`, `subagent`, `main`...).
    pub fn first(key: &str) -> &str {
        rest(key).split(':').next().unwrap_or("")
    }

    /// An agent's main session (`agent:<id>:main`).
    pub fn is_main(key: &str) -> bool {
        rest(key) == "main"
    }

    /// Whether one `:`-separated part of the rest is `part`.
    pub fn has(key: &str, part: &str) -> bool {
        rest(key).split(':').any(|p| p == part)
    }

    /// Whether the key names its agent (`agent:<id>:...`).
    pub fn is_qualified(key: &str) -> bool {
        key.starts_with("agent:")
    }

    /// The job of a cron job's own (isolated) session
    /// (`agent:<agent>:cron:<job id>`).
    pub fn cron_job(key: &str) -> Option<&str> {
        if !is_qualified(key) {
            return None;
        }
        rest(key)
            .strip_prefix("cron:")
            .filter(|job| !job.is_empty() && !job.contains(':'))
    }

    /// A group or channel conversation (not a private chat).
    pub fn is_group(key: &str) -> bool {
        has(key, "group") || has(key, "channel")
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn keys_are_taken_apart_the_same_way_everywhere() {
            assert_eq!(agent("agent:ops:telegram:dm:1"), "ops");
            assert_eq!(agent("web:main"), "main");
            assert_eq!(agent("agent::x"), "main");
            assert_eq!(rest("agent:ops:telegram:dm:1"), "telegram:dm:1");
            assert_eq!(rest("agent:ops"), "");
            assert_eq!(first("agent:main:cron:job-1"), "cron");
            assert!(is_main("agent:main:main"));
            assert!(!is_main("agent:main:main:thread"));
            assert!(has("agent:main:subagent:x", "subagent"));
            assert!(is_group("agent:main:slack:channel:c1"));
            assert!(!is_group("agent:main:telegram:dm:1"));
            assert_eq!(first(""), "");
            assert!(is_qualified("agent:a:main") && !is_qualified("main"));
            assert_eq!(cron_job("agent:main:cron:job-1"), Some("job-1"));
            assert_eq!(cron_job("agent:main:cron:job-1:run:2"), None);
            assert_eq!(cron_job("agent:main:cron:"), None);
            assert_eq!(cron_job("cron:job-1"), None);
        }
    }
}

/// A run's id: the client's idempotency key of the message that started
/// it, a ULID, or a scheduler's `heartbeat:`/`cron:` id. Shared, not
/// copied: every streamed event of the run carries it, so a clone is a
/// reference count, not an allocation.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(std::sync::Arc<str>);

impl RunId {
    /// A new time-ordered id (a ULID).
    pub fn generate() -> RunId {
        RunId::from(ulid::Ulid::generate().to_string())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RunId {
    fn default() -> RunId {
        RunId::from("")
    }
}

shared_text!(RunId);

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<String> for RunId {
    fn from(s: String) -> RunId {
        RunId(s.into())
    }
}

impl From<&str> for RunId {
    fn from(s: &str) -> RunId {
        RunId(s.into())
    }
}

impl From<&String> for RunId {
    fn from(s: &String) -> RunId {
        RunId(s.as_str().into())
    }
}

impl PartialEq<RunId> for String {
    fn eq(&self, o: &RunId) -> bool {
        **self == *o.0
    }
}

impl PartialEq<RunId> for &str {
    fn eq(&self, o: &RunId) -> bool {
        **self == *o.0
    }
}

impl PartialEq<RunId> for str {
    fn eq(&self, o: &RunId) -> bool {
        *self == *o.0
    }
}

impl<'de> serde::Deserialize<'de> for RunId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RunId, D::Error> {
        String::deserialize(d).map(RunId::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_strings_on_the_wire_and_in_the_store_and_clones_share_the_text() {
        let run = RunId::from("r1");
        assert_eq!(serde_json::to_value(&run).unwrap(), serde_json::json!("r1"));
        let back: RunId = serde_json::from_str("\"r1\"").unwrap();
        assert_eq!(back, run);
        let owned = String::from("r1");
        assert_eq!(run, "r1");
        assert_eq!("r1", run);
        assert_eq!(run, owned);
        let copy = run.clone();
        assert!(
            std::ptr::eq(copy.as_str(), run.as_str()),
            "a clone allocates nothing"
        );
        let mut live = std::collections::HashMap::new();
        live.insert(run, 1);
        assert_eq!(
            live.get("r1"),
            Some(&1),
            "maps keyed by id are asked by &str"
        );

        let key = SessionKey::canonical("main", "main", "main").unwrap();
        assert_eq!(key, "agent:main:main");
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(json, "\"agent:main:main\"");
        let stored: SessionKey = serde_json::from_str(&json).unwrap();
        assert_eq!(stored, key);
        assert!(std::ptr::eq(key.clone().as_str(), key.as_str()));
        assert_ne!(RunId::generate(), RunId::generate());
    }
}
