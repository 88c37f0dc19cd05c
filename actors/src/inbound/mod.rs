//! Inbound text from any surface, made safe before it is stored or routed:
//! NUL and control characters removed (newline and tab kept), Unicode NFC
//! (`unicode-normalization`). Session keys (`SessionKey`) live in `ids`.

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

pub use crate::ids::{SessionKey, SessionKeyError, MAX_SESSION_KEY};

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
