//! Inbound text from any surface, made safe before it is stored or routed:
//! NUL and control characters removed (newline and tab kept), Unicode NFC
//! (`unicode-normalization`), and session keys in their canonical form.

pub mod finalize;
pub mod msg_context;

use unicode_normalization::UnicodeNormalization;

/// Removes NUL and control characters except `\n` and `\t` (a `\r\n` becomes
/// `\n`), then normalises to NFC.
pub fn sanitize_text(input: &str) -> String {
    input
        .replace("\r\n", "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .nfc()
        .collect()
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
        self.0.split(':').nth(1).unwrap_or("")
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_removes_controls_keeps_newline_and_tab_and_normalizes_nfc() {
        let check = |input: &str, want: &str| assert_eq!(sanitize_text(input), want, "{input:?}");
        check("hi\0there", "hithere");
        check("a\tb\nc", "a\tb\nc");
        check("line\r\nnext", "line\nnext");
        check("bell\u{7}\u{1b}[31m", "bell[31m");
        check("del\u{7f}\u{85}x", "delx");
        check("e\u{301}", "\u{e9}");
        check("ﬁ", "ﬁ"); // NFC, not NFKC: compatibility characters stay
        check("", "");
    }

    #[test]
    fn session_keys_are_canonicalised() {
        let check = |raw: &str, want: Result<&str, SessionKeyError>| {
            let got = SessionKey::canonical(raw, "main", "main");
            assert_eq!(
                got.as_ref().map(|k| k.as_str()),
                want.as_ref().map(|s| *s),
                "{raw:?}"
            );
        };
        check("main", Ok("agent:main:main"));
        check(" main ", Ok("agent:main:main"));
        check("agent:main:main", Ok("agent:main:main"));
        check(
            "agent:Biologist:web:biologist",
            Ok("agent:biologist:web:biologist"),
        );
        check("web:main", Ok("agent:main:web:main"));
        check("main:web:default", Ok("agent:main:main:web:default"));
        check("", Err(SessionKeyError::Empty));
        check(
            "agent:main",
            Err(SessionKeyError::Malformed("agent:main".into())),
        );
        check(
            "agent::x",
            Err(SessionKeyError::Malformed("agent::x".into())),
        );
        check("a b", Err(SessionKeyError::BadCharacters));
        check(&"k".repeat(513), Err(SessionKeyError::TooLong));
        assert_eq!(
            SessionKey::canonical("agent:work:x", "main", "main")
                .unwrap()
                .agent_id(),
            "work"
        );
    }
}
