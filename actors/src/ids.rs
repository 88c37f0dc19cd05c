//! Identifier newtypes shared by the actor tree, and the one place a
//! session key is taken apart (`key`).

use std::fmt;

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

/// A canonical session key: `agent:<agentId>:<rest>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey(String);

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
        Ok(SessionKey(full))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The agent id part.
    pub fn agent_id(&self) -> &str {
        key::agent(&self.0)
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
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
        }
    }
}
