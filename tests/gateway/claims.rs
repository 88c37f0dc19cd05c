//! ARCHITECTURE.md's claims that a reading of the code can check, checked:
//! only `main.rs` reads the environment (invariant 3); an actor's file
//! builds no JSON (payloads and wire shapes live in the modules that own
//! them); session keys are taken apart only in `ids::key`; every event the
//! edge publishes by name has a row in the one event table
//! (`protocol::events::audience`); errors are types, not strings; state
//! shared behind a lock says why a message would not do; and the
//! document keeps its shape (at most 250 lines, no table cell over 300
//! characters, no benchmark figures: those are BENCHMARKS.md's).

use std::path::Path;

use super::layout::{repo, rust_files};
use ferroclaw::protocol::events::audience;
use ferroclaw_actors::bus::Audience;

/// The source without its `#[cfg(test)]` items (a test module, a helper
/// only tests use): what ships.
fn production(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Skip the item the attribute covers: one line ending in `;`, or
        // everything up to its braces' close.
        let mut depth = 0i64;
        for item in lines.by_ref() {
            depth += item.matches('{').count() as i64 - item.matches('}').count() as i64;
            if depth <= 0 && (item.contains('}') || item.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    out
}

/// Every shipped Rust file of both crates: (path from the repo, its
/// production source). Test files are left out.
fn shipped() -> Vec<(String, String)> {
    let root = repo();
    let mut out = Vec::new();
    for dir in ["src", "actors/src"] {
        for path in rust_files(&root.join(dir)) {
            let rel = rel(&root, &path);
            let name = path.file_name().unwrap().to_string_lossy();
            if name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&path).unwrap();
            out.push((rel, production(&src)));
        }
    }
    assert!(out.len() > 300, "the walk found the sources");
    out
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap().display().to_string()
}

/// `(file, line number, line)` of every shipped line `bad` picks, outside
/// the files `allowed` names.
fn offenders(bad: impl Fn(&str) -> bool, allowed: impl Fn(&str, &str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (file, src) in shipped() {
        for (n, line) in src.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if bad(code) && !allowed(&file, &src) {
                found.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

fn reads_env(code: &str) -> bool {
    [
        "env::var(",
        "env::var_os(",
        "env::vars(",
        "env::vars_os(",
        "env::home_dir(",
        "env::temp_dir(",
    ]
    .iter()
    .any(|p| code.contains(p))
}

#[test]
fn only_main_reads_the_environment() {
    // The build script reads cargo's own variables (the target), not the gateway's.
    let found = offenders(reads_env, |file, _| {
        file == "src/main.rs" || file == "src/build.rs"
    });
    assert!(
        found.is_empty(),
        "environment read outside main.rs:\n{}",
        found.join("\n")
    );
}

/// A file that defines an actor or one of its handlers.
fn is_actor_file(src: &str) -> bool {
    [
        "impl Actor for ",
        "impl Handler<",
        "impl actix::Handler<",
        "impl StreamHandler<",
    ]
    .iter()
    .any(|p| src.contains(p))
}

#[test]
fn an_actors_file_builds_no_json() {
    let found: Vec<String> = offenders(
        |code| code.contains("json!("),
        |file, src| !file.starts_with("actors/src/") || !is_actor_file(src),
    );
    assert!(
        found.is_empty(),
        "json! in an actor's file (build it where its shape lives):\n{}",
        found.join("\n")
    );
}

/// A line that takes a session key apart by hand.
fn splits_a_key(code: &str) -> bool {
    let agent_prefix = [
        "starts_with(\"agent:",
        "strip_prefix(\"agent:",
        "split(\"agent:",
    ]
    .iter()
    .any(|p| code.contains(p));
    let key_split = [
        "key.split(",
        "key.splitn(",
        "key.split_once(",
        "key.rsplit_once(",
        "key.rsplit(",
    ]
    .iter()
    .any(|p| code.contains(p))
        && code.contains("':'");
    agent_prefix || key_split
}

#[test]
fn session_keys_are_taken_apart_only_in_ids_key() {
    let found = offenders(splits_a_key, |file, _| file == "actors/src/ids.rs");
    assert!(
        found.is_empty(),
        "a session key split outside ids::key:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_catch_what_they_look_for() {
    assert!(reads_env("let p = std::env::var_os(\"PATH\");"));
    assert!(!reads_env("let p = env!(\"CARGO_MANIFEST_DIR\");"));
    assert!(splits_a_key("if raw.starts_with(\"agent:\") {"));
    assert!(splits_a_key("let parts = session_key.split(':');"));
    assert!(!splits_a_key("let (h, m) = raw.split_once(':')?;"));
    assert!(!splits_a_key(
        "let parts: Vec<&str> = key.split('.').collect();"
    ));
    assert!(is_actor_file("impl Handler<Ping> for A {"));
    let src = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { json!(1); }\n}\nfn c() {}\n#[cfg(test)]\nmod x_tests;\nfn d() {}\n";
    assert_eq!(production(src), "fn a() {}\nfn c() {}\nfn d() {}\n");
}

/// Event names published by a literal (`publish("chat", ..)`,
/// `bus_event("tick", ..)`), with where.
fn published_names() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (file, src) in shipped() {
        if !file.starts_with("src/") {
            continue;
        }
        for call in ["publish(", "bus_event("] {
            for (at, _) in src.match_indices(call) {
                let rest = src[at + call.len()..].trim_start();
                let Some(lit) = rest.strip_prefix('"') else {
                    continue;
                };
                let Some(end) = lit.find('"') else {
                    continue;
                };
                out.push((lit[..end].to_string(), file.clone()));
            }
        }
    }
    out
}

#[test]
fn every_event_published_by_name_has_a_row_in_the_event_table() {
    let names = published_names();
    assert!(
        names.iter().any(|(n, _)| n == "chat"),
        "the scan finds the bridge's events: {names:?}"
    );
    let missing: Vec<String> = names
        .iter()
        .filter(|(n, _)| matches!(audience(n), Audience::Nobody))
        .map(|(n, f)| format!("{n} ({f})"))
        .collect();
    assert!(
        missing.is_empty(),
        "published but reaching nobody: {missing:?}"
    );
}

#[test]
fn architecture_md_keeps_its_shape() {
    let doc = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    assert!(
        doc.lines().count() <= 250,
        "ARCHITECTURE.md is over 250 lines"
    );
    let mut long = Vec::new();
    let mut figures = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        if line.starts_with('|') {
            for cell in line.split(" | ") {
                if cell.chars().count() > 300 {
                    long.push(format!(
                        "{}: {}...",
                        n + 1,
                        cell.chars().take(60).collect::<String>()
                    ));
                }
            }
        }
        let lower = line.to_ascii_lowercase();
        let measured = [
            "context switch",
            "cpu time",
            " rss",
            "allocations",
            "of cpu",
            "ms of its",
        ]
        .iter()
        .any(|w| lower.contains(w));
        if measured && line.chars().any(|c| c.is_ascii_digit()) {
            figures.push(format!("{}: {line}", n + 1));
        }
    }
    assert!(
        long.is_empty(),
        "table cells over 300 characters:\n{}",
        long.join("\n")
    );
    assert!(
        figures.is_empty(),
        "benchmark figures belong in BENCHMARKS.md:\n{}",
        figures.join("\n")
    );
}

/// A `Result` whose error type is a bare string (one line at a time).
fn string_error(code: &str) -> bool {
    let Some(at) = code.find("Result<") else {
        return false;
    };
    let rest = &code[at..];
    let end = rest.find(['{', ';', '=']).unwrap_or(rest.len());
    rest[..end]
        .trim_end()
        .trim_end_matches('>')
        .ends_with(", String")
}

#[test]
fn errors_are_typed_not_strings() {
    let found = offenders(string_error, |_, _| false);
    assert!(
        found.is_empty(),
        "a string for an error (give the module a thiserror type):\n{}",
        found.join("\n")
    );
    // The samples are built, so this file is not itself a match.
    let s = "String";
    assert!(string_error(&format!("fn f() -> Result<(), {s}> {{")));
    assert!(string_error(&format!("let r: Result<Vec<u8>, {s}> = x;")));
    assert!(!string_error("fn f() -> Result<String, BadSetting> {"));
    assert!(!string_error(&format!(
        "fn f() -> Result<HashMap<{s}, {s}>, E> {{"
    )));
}

/// The one exception: a `hooks.mappings[]` entry's `action` is `agent`
/// when it names none (OpenClaw's), and a list entry has no place in
/// `default.json5`.
#[test]
fn settings_write_no_default_value_in_rust() {
    let found = offenders(
        |code| code.contains("serde(default = \"") || code.trim() == "#[default]",
        |file, _| !file.starts_with("actors/src/settings/") || file.ends_with("hooks.rs"),
    );
    assert!(
        found.is_empty(),
        "a settings default written in Rust (put it in config/default.json5):\n{}",
        found.join("\n")
    );
}

/// Settings read untyped (a key taken out of a section's `other` map, a
/// section read as JSON): what they default to when unset is written in
/// Rust, and a typo in them is never named.
#[test]
fn settings_are_read_typed() {
    let untyped = |code: &str| code.contains("other.get(\"") || code.contains(".as_json()");
    let found = offenders(untyped, |_, _| false);
    assert!(
        found.is_empty(),
        "settings read untyped (type the key in settings/, its default in config/default.json5):\n{}",
        found.join("\n")
    );
    assert!(untyped("let v = s.other.get(\"codex\");") && !untyped("s.codex.agents"));
}

/// The methods of `impl SessionActor` blocks in `src` (not handlers).
fn session_methods(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for l in src.lines() {
        if l.starts_with("impl SessionActor") || l.starts_with("impl super::SessionActor") {
            inside = true;
        } else if inside && l == "}" {
            inside = false;
        } else if inside && l.starts_with("    ") && !l.starts_with("     ") {
            let l = l.trim_start();
            let l = ["pub(super) ", "pub(crate) ", "pub "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l);
            if let Some(rest) = l.strip_prefix("fn ") {
                names.push(rest.split(['(', '<']).next().unwrap_or(rest).to_string());
            }
        }
    }
    names
}

/// The session only applies effects: its decisions are pure functions and
/// transitions beside it (`state.rs`, `ending.rs`, `view.rs`,
/// `commands.rs`, `history.rs`), so the actor keeps at most 30 methods and
/// 10 fields, and nothing hands its active run out to be changed.
#[test]
fn the_session_actor_stays_small() {
    let dir = repo().join("actors/src/session");
    let mut methods = Vec::new();
    for f in rust_files(&dir) {
        let src = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") {
            continue;
        }
        assert!(
            !src.contains("fn active_mut"),
            "{name} hands the active run out"
        );
        methods.extend(session_methods(&src));
    }
    assert!(
        methods.len() <= 30,
        "{} methods: {methods:?}",
        methods.len()
    );
    let actor = std::fs::read_to_string(dir.join("actor.rs")).unwrap();
    let body = actor.split("pub struct SessionActor {").nth(1).unwrap();
    let body = &body[..body.find("\n}").unwrap()];
    let fields = body
        .lines()
        .filter(|l| l.starts_with("    pub(super) "))
        .count();
    assert!((1..=10).contains(&fields), "{fields} fields:{body}");
    let sample = "impl SessionActor {\n    pub(super) fn a(&self) {\n        fn inner() {}\n    }\n    fn b() {}\n}\nfn c() {}\n";
    assert_eq!(session_methods(sample), ["a", "b"]);
}

/// State shared behind a lock rather than owned by one actor and reached
/// by message, each with why a message would not do. This list only
/// shrinks: new shared state is an actor's, or says here why it cannot be.
const SHARED: &[(&str, &str)] = &[
    (
        "actors/src/channels/sender.rs",
        "one account's rate gates: every clone of its outlet sends from its own future",
    ),
    (
        "actors/src/channels/whatsapp/outlet.rs",
        "templates sent per chat: read and written only by one account's outlet clones",
    ),
    (
        "actors/src/idempotency/actor.rs",
        "one writer (the actor); the edge's lookups read in place, no mailbox trip per frame",
    ),
    (
        "actors/src/mcp/bench.rs",
        "the joined tool list, memoised per catalog version for every run that asks",
    ),
    (
        "actors/src/mcp/catalog.rs",
        "the MCP tool catalog: the hub writes it, every run's tool offer reads it",
    ),
    (
        "actors/src/mcp/server.rs",
        "calls in flight by progress token: the call's future and the server's notifications",
    ),
    (
        "actors/src/memory/actor.rs",
        "the index the actor's blocking searches and background embedding read off its thread",
    ),
    (
        "actors/src/tool/exec.rs",
        "a command's output and the background commands: written by the child's readers",
    ),
    (
        "actors/src/tool/web_search.rs",
        "answers cached per query across every tool executor",
    ),
];

#[test]
fn shared_state_says_why_a_message_would_not_do() {
    let locked = |code: &str| {
        [
            "Arc<Mutex<",
            "Arc<RwLock<",
            "Arc<std::sync::Mutex<",
            "Arc<std::sync::RwLock<",
        ]
        .iter()
        .any(|n| code.contains(n))
    };
    let found = offenders(locked, |file, _| SHARED.iter().any(|(f, _)| *f == file));
    assert!(
        found.is_empty(),
        "shared state behind a lock: give it one owning actor, or say in SHARED why not:\n{}",
        found.join("\n")
    );
    let files = shipped();
    for (listed, _) in SHARED {
        let still = files.iter().any(|(f, src)| {
            f == listed
                && src
                    .lines()
                    .any(|l| locked(l.split("//").next().unwrap_or("")))
        });
        assert!(
            still,
            "{listed} shares no locked state now: take it off SHARED"
        );
    }
    assert!(locked("routes: Arc<Mutex<Router>>,") && !locked("routes: Router,"));
}
