//! Every tool's standing with a turn that holds a stranger's message,
//! decided here once and on purpose. The untrusted profile
//! (`tools.untrusted`, `policy.rs`) says what a config offers; this table
//! says what each tool is: in the shipped profile, withheld unless the
//! operator widens the profile, or never offered whatever the profile
//! names (enforced by `UntrustedProfile::permits`). A tool in the catalog
//! with no row here, or a row the shipped config contradicts, fails
//! `tests/gateway/trust/catalog.rs`, which also drives every tool as a
//! stranger: a new tool reaches strangers neither by accident nor unsaid.

/// A tool's standing with an untrusted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stance {
    /// In the shipped `tools.untrusted.allow`; the limits in `holds`
    /// apply whatever the profile says.
    Offered,
    /// Not in the shipped profile; an operator may widen it, and `holds`
    /// says what is still true then.
    Withheld,
    /// Never offered to an untrusted turn, whatever the profile names.
    Never,
}

/// One row: the stance and what holds for a stranger's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub stance: Stance,
    pub holds: &'static str,
}

const FILES_READ: &str = "inside the workspace; never the protected files (AGENTS.md, MEMORY.md, memory/, skills/, .git/ ...)";
const FILES_WRITE: &str = "when widened: inside the workspace; never the protected files";
const TRAVELS: &str =
    "when widened: what it causes (messages, sub-agents, their results) stays untrusted";

/// The built-in tools' rows.
const BUILT_IN: &[(&str, Stance, &str)] = &[
    ("read", Stance::Offered, FILES_READ),
    ("ls", Stance::Offered, FILES_READ),
    ("find", Stance::Offered, FILES_READ),
    ("grep", Stance::Offered, FILES_READ),
    ("write", Stance::Withheld, FILES_WRITE),
    ("edit", Stance::Withheld, FILES_WRITE),
    ("apply_patch", Stance::Withheld, FILES_WRITE),
    ("exec", Stance::Offered, "only in a scratch sandbox with a clean environment, else not at all; never on the host or a node"),
    ("process", Stance::Offered, "only the commands that session's untrusted turns started"),
    ("web_fetch", Stance::Offered, "the SSRF policy (no loopback, private or metadata address); the page is wrapped outside data"),
    ("memory_search", Stance::Offered, "only agents.defaults.memorySearch.extraPaths; never the owner's notes"),
    ("memory_get", Stance::Offered, "only agents.defaults.memorySearch.extraPaths; never the owner's notes"),
    ("session_status", Stance::Offered, "its own session"),
    ("sessions_list", Stance::Withheld, "when widened: lists keys, reads no transcript"),
    ("sessions_send", Stance::Withheld, TRAVELS),
    ("sessions_spawn", Stance::Withheld, TRAVELS),
    ("subagents", Stance::Withheld, TRAVELS),
    ("nodes", Stance::Never, "a node is the operator's machine"),
    ("browser", Stance::Never, "the browser holds the operator's logins and reaches what browser.ssrfPolicy lets it"),
    ("automations", Stance::Never, "a job runs later as the owner's turn: a stranger schedules nothing"),
    ("gateway", Stance::Never, "the gateway's config and restarts are the owner's"),
    ("message", Stance::Withheld, "when widened: only the conversation the turn came from, never another chat or channel"),
    ("web_search", Stance::Offered, "results are wrapped outside data; only the configured provider is asked"),
    ("view_image", Stance::Withheld, "when widened: workspace images (never the protected files) and media ids; a description is wrapped outside data"),
    ("pdf", Stance::Withheld, "when widened: workspace PDFs (never the protected files) and media ids; the text is wrapped outside data"),
    ("sessions_history", Stance::Withheld, "when widened: only its own session's history"),
    ("sessions_search", Stance::Withheld, "when widened: only its own session"),
    ("sessions_yield", Stance::Withheld, "when widened: ends only its own turn"),
    ("heartbeat_respond", Stance::Never, "offered to heartbeat turns only, which are the owner's"),
    ("agents_list", Stance::Withheld, "when widened: agent ids, names and models; nothing of their sessions"),
    ("tts", Stance::Never, "a voice note in the owner's voice on the owner's speech credits: a stranger's turn never synthesises on request (its reply may still be spoken by Auto-TTS, its directives never obeyed)"),
    ("progress_card", Stance::Never, "the session's progress card is the owner's status surface in the Control UI: a stranger's turn never writes on it"),
    ("ask_user", Stance::Withheld, "when widened: asks only the conversation the turn came from; its answer is wrapped outside data; a stranger never answers the owner's question"),
];

/// The row of `tool`, or None: a tool nobody decided on (a test failure).
/// MCP tools (`server__tool`) share one row: a third party's tool.
pub fn decision(tool: &str) -> Option<Decision> {
    if super::is_mcp(tool) {
        return Some(Decision {
            stance: Stance::Withheld,
            holds: "a third party's tool: offered only when the untrusted profile names it itself (server__tool, server__*), never by * or a group; its result is wrapped outside data",
        });
    }
    if crate::tool::is_lsp(tool) {
        return Some(Decision {
            stance: Stance::Never,
            holds: "a language server runs on the host and reads the whole workspace",
        });
    }
    BUILT_IN
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(tool))
        .map(|&(_, stance, holds)| Decision { stance, holds })
}

/// The built-in tools with a row (for the guard: no row without a tool).
pub fn decided() -> impl Iterator<Item = &'static str> {
    BUILT_IN.iter().map(|(name, _, _)| *name)
}

/// Whether no untrusted turn may ever be offered `tool`.
pub fn never(tool: &str) -> bool {
    decision(tool).is_some_and(|d| d.stance == Stance::Never)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_tool_has_exactly_one_row() {
        let specs = super::super::specs::specs();
        for s in &specs {
            assert!(decision(&s.name).is_some(), "{} has no row", s.name);
        }
        for name in decided() {
            assert!(
                specs.iter().any(|s| s.name == name),
                "a row for no tool: {name}"
            );
            assert_eq!(decided().filter(|n| *n == name).count(), 1, "{name} twice");
        }
        assert_eq!(
            decision("docs__search").map(|d| d.stance),
            Some(Stance::Withheld)
        );
        assert!(never("nodes") && !never("read"));
        assert_eq!(decision("made_up"), None);
    }
}
