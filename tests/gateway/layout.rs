//! The code's shape, checked: no module imports itself back through
//! another (the actor tree's modules one and two levels deep, `src/`'s
//! three), no source file over 800 lines, no handler over 60 (and no
//! function of the session or its run over 60), every actor
//! type builds a span, and every folder under `actors/src/` says in its
//! `//!` what it owns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            // Installed packages (node_modules, .venv; links into the tests'
            // cache) hold no code of ours.
            if e.file_type().unwrap().is_dir() {
                if p.file_name()
                    .is_some_and(|n| n == "node_modules" || n == ".venv")
                {
                    continue;
                }
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The module path of `file` under `root` (`session/mod.rs` -> `session`).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// The source without its `#[cfg(test)] mod tests { .. }` block (tests may
/// reach anywhere).
pub(super) fn without_tests(src: &str) -> &str {
    match src.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &src[..i],
        None => src,
    }
}

/// Module -> the modules it names (`crate::a::b`, `super::x` resolved), cut
/// to `depth` path segments.
fn graph(root: &Path, depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in rust_files(root) {
        let module = module_of(root, &f);
        if module.is_empty()
            || module == ["lib"]
            || module == ["main"]
            || module.last().is_some_and(|m| m == "tests")
        {
            continue;
        }
        let me = module[..module.len().min(depth)].join("::");
        let src = std::fs::read_to_string(&f).unwrap();
        let src = without_tests(&src);
        let edges = g.entry(me.clone()).or_default();
        for (i, _) in src
            .match_indices("crate::")
            .chain(src.match_indices("super::"))
        {
            let rest = &src[i..];
            let (base, tail) = if let Some(t) = rest.strip_prefix("crate::") {
                (Vec::new(), t)
            } else {
                // `super::` from `a/b/mod.rs` or `a/b.rs` both mean `a`.
                let parent = module[..module.len().saturating_sub(1)].to_vec();
                (parent, &rest["super::".len()..])
            };
            let path: Vec<String> = tail
                .split("::")
                .map_while(|seg| {
                    let seg: String = seg
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    (!seg.is_empty()).then_some(seg)
                })
                .collect();
            let mut target = base;
            target.extend(path);
            if target.is_empty() {
                continue;
            }
            let target = target[..target.len().min(depth)].join("::");
            if target != me && !me.starts_with(&format!("{target}::")) {
                edges.insert(target);
            }
        }
    }
    g
}

/// A cycle in `g`, if there is one (depth-first search).
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if !g.contains_key(m) {
                continue;
            }
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == m).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

pub(super) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_actor_tree_and_the_edge_have_no_import_cycles() {
    let actors = graph(&repo().join("actors/src"), 1);
    assert!(actors.contains_key("session") && actors["session"].contains("run"));
    assert_eq!(find_cycle(&actors), None, "actors/src");
    // Inside folders too: `channels::slack` and `channels::desk` are nodes.
    let inner = graph(&repo().join("actors/src"), 2);
    assert!(inner.contains_key("channels::desk") && inner.contains_key("session::queue"));
    assert_eq!(find_cycle(&inner), None, "actors/src, two levels deep");
    let edge = graph(&repo().join("src"), 3);
    assert!(edge.contains_key("ws::methods::chat") && edge.contains_key("ws::handshake"));
    assert_eq!(find_cycle(&edge), None, "src, three levels deep");
}

/// The actor types a source defines (`impl ... Actor for X`), tests left out.
fn actor_types(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in src.match_indices(" Actor for ") {
        let line_start = src[..i].rfind('\n').map_or(0, |n| n + 1);
        if !src[line_start..i].trim_start().starts_with("impl") {
            continue;
        }
        let name: String = src[i + " Actor for ".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(name);
    }
    out
}

#[test]
fn every_actor_type_builds_a_span() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for dir in ["actors/src", "src"] {
        for f in rust_files(&repo().join(dir)) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&f).unwrap();
            let src = without_tests(&src);
            for actor in actor_types(src) {
                seen += 1;
                if !src.contains("_span!(") {
                    missing.push(format!("{} ({actor})", f.display()));
                }
            }
        }
    }
    assert!(seen > 20, "found {seen} actor types");
    assert!(missing.is_empty(), "actors without a span: {missing:?}");
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn no_source_file_is_over_800_lines() {
    let mut long = Vec::new();
    for dir in ["actors/src", "src"] {
        for f in rust_files(&repo().join(dir)) {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            if n > MAX_LINES {
                long.push(format!("{} ({n} lines)", f.display()));
            }
        }
    }
    assert!(long.is_empty(), "split these: {long:?}");
}

#[test]
fn every_folder_of_the_actor_tree_says_what_it_owns() {
    let root = repo().join("actors/src");
    for e in std::fs::read_dir(&root).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let module = dir.join("mod.rs");
        let src = std::fs::read_to_string(&module)
            .unwrap_or_else(|_| panic!("{} has no mod.rs", dir.display()));
        let doc: Vec<&str> = src.lines().take_while(|l| l.starts_with("//!")).collect();
        assert!(
            doc.len() >= 2,
            "{}: the //! says what it owns and who talks to it",
            module.display()
        );
    }
}

/// The replies of actor messages whose error is a bare `String`.
fn untyped_replies(src: &str) -> Vec<String> {
    src.lines()
        .filter(|l| {
            let l = l.trim();
            (l.starts_with("#[rtype(") || l.starts_with("type Result ="))
                && l.contains("Result<")
                && l.trim_end_matches(['"', ')', ']', ';', '>'])
                    .ends_with(", String")
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn actor_messages_reply_with_typed_errors() {
    let mut found = Vec::new();
    for f in rust_files(&repo().join("actors/src")) {
        let src = std::fs::read_to_string(&f).unwrap();
        for line in untyped_replies(without_tests(&src)) {
            found.push(format!("{}: {line}", f.display()));
        }
    }
    assert!(found.is_empty(), "replies with String errors: {found:#?}");
    let bad = "#[rtype(result = \"Result<(), String>\")]\ntype Result = ResponseFuture<Result<u8, String>>;";
    assert_eq!(untyped_replies(bad).len(), 2, "the check finds them");
    assert!(untyped_replies("#[rtype(result = \"Result<u8, StoreError>\")]").is_empty());
}

pub(super) const MAX_HANDLER_LINES: usize = 60;

/// `(line, length)` of every function body longer than `max` lines whose
/// first line `picks` (trimmed).
pub(super) fn long_fns(src: &str, max: usize, picks: impl Fn(&str) -> bool) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let code = code_only(src);
    let code: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !picks(l.trim_start()) || l.trim_end().ends_with(';') {
            continue;
        }
        let (mut depth, mut opened) = (0i64, false);
        for (j, l) in code.iter().enumerate().skip(i) {
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            opened |= l.contains('{');
            if opened && depth <= 0 {
                if j - i + 1 > max {
                    out.push((i + 1, j - i + 1));
                }
                break;
            }
        }
    }
    out
}

/// `src` with what is not code blanked out, lines kept: comments, the
/// insides of string literals (raw ones too) and char literals, so a `'{'`
/// or a `"}"` does not count as a brace.
pub(super) fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { c } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident(b, i) {
            let hashes = b[i + 1..].iter().take_while(|&&h| h == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let open = i + 1 + hashes;
            if b.get(open) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let end = b[open + 1..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| open + 1 + p + close.len());
            (i..end).for_each(|k| blank(&mut out, b[k]));
            i = end;
        } else if c == b'"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let step = if b[i] == b'\\' { 2 } else { 1 };
                (i..(i + step).min(b.len())).for_each(|k| blank(&mut out, b[k]));
                i += step;
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'\'' && (b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\')) {
            // A char literal ('x' or '\x'); a lifetime ('a) is left alone.
            let end = b[i + 2..]
                .iter()
                .position(|&q| q == b'\'')
                .map_or(b.len(), |p| i + 3 + p);
            (i..end).for_each(|k| blank(&mut out, b[k]));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the byte at `i` continues an identifier (`for"` is no raw string).
fn ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// `(line, length)` of every `fn handle(` body longer than `max` lines.
fn long_handlers(src: &str, max: usize) -> Vec<(usize, usize)> {
    long_fns(src, max, |l| l.starts_with("fn handle("))
}

/// Whether a (trimmed) line starts a function.
pub(super) fn starts_fn(l: &str) -> bool {
    let l = ["pub(crate) ", "pub(super) ", "pub "]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .unwrap_or(l);
    let l = l.strip_prefix("async ").unwrap_or(l);
    l.starts_with("fn ")
}

/// The session only applies effects: what happens to its active run is
/// decided by `SessionState`'s transitions (`state.rs`, `ending.rs`), and
/// the actor reads the active run once, for what its settings come to
/// (`view()`).
#[test]
fn the_session_actor_reads_its_active_run_only_through_its_view() {
    let mut found = Vec::new();
    for f in rust_files(&repo().join("actors/src/session")) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if ["state.rs", "ending.rs", "tests.rs"].contains(&name.as_str())
            || name.ends_with("_tests.rs")
        {
            continue;
        }
        let src = std::fs::read_to_string(&f).unwrap();
        for (i, line) in without_tests(&src).lines().enumerate() {
            if line.contains("state.active()") {
                found.push(format!("{name}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert_eq!(
        found,
        ["actor.rs:87: active: self.state.active(),"],
        "read outside the view"
    );
}

/// The session and its run read in one sitting: no function in
/// `actors/src/session` or `actors/src/run` is over 60 lines.
#[test]
fn no_function_of_the_session_or_its_run_is_over_60_lines() {
    let mut found = Vec::new();
    for dir in ["actors/src/session", "actors/src/run"] {
        for f in rust_files(&repo().join(dir)) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&f).unwrap();
            for (line, n) in long_fns(without_tests(&src), MAX_HANDLER_LINES, starts_fn) {
                found.push(format!("{}:{line}: {n} lines", f.display()));
            }
        }
    }
    assert!(found.is_empty(), "functions over 60 lines: {found:#?}");
    let long = format!("pub(super) async fn x() {{\n{}}}\n", "    a;\n".repeat(70));
    assert_eq!(long_fns(&long, MAX_HANDLER_LINES, starts_fn), vec![(1, 72)]);
    assert!(!starts_fn("let f = fn_name();"));
    // A brace in a literal or a comment is no brace: `a` ends on its line 4.
    let tricky = "fn a() {\n    b('{', r#\"{\"#);\n    c(\"{\\\"\"); // {\n}\n";
    let long = format!("{tricky}fn d() {{\n{}}}\n", "    a;\n".repeat(70));
    assert_eq!(long_fns(&long, MAX_HANDLER_LINES, starts_fn), vec![(5, 72)]);
}

#[test]
fn no_handler_body_is_over_60_lines() {
    let mut found = Vec::new();
    for dir in ["actors/src", "src"] {
        for f in rust_files(&repo().join(dir)) {
            if f.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&f).unwrap();
            for (line, n) in long_handlers(without_tests(&src), MAX_HANDLER_LINES) {
                found.push(format!("{}:{line}: {n} lines", f.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "handlers over {MAX_HANDLER_LINES} lines: {found:#?}"
    );
    let long = format!("fn handle(x) {{\n{}}}\n", "    a;\n".repeat(70));
    assert_eq!(long_handlers(&long, MAX_HANDLER_LINES), vec![(1, 72)]);
}

/// The edge's methods and routes reach state through the actors only
/// (recipients), never the store.
#[test]
fn the_edge_never_holds_the_store() {
    let mut found = Vec::new();
    for dir in ["src/ws", "src/http"] {
        for f in rust_files(&repo().join(dir)) {
            let src = std::fs::read_to_string(&f).unwrap();
            for needle in ["store::Store", "gateway.store", "Store::open"] {
                if without_tests(&src).contains(needle) {
                    found.push(format!("{}: {needle}", f.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}
