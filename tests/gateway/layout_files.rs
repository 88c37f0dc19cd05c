//! What each file is for, checked: every source file is compiled (a file
//! no `mod` reaches is dead code whose tests never run), opens with a `//!`
//! that says what it is for, and holds only what its place is for: actor
//! messages in a folder's `messages.rs`, sled in `store/`, the
//! WebSocket actor glue in `src/ws/`, tests in test files or a
//! `#[cfg(test)]` block.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::layout::{repo, rust_files};

/// The files `root` (a crate root or a module file) and its `mod x;`
/// declarations reach, `#[path]` attributes followed; `dir` is where its
/// child modules live.
fn reached(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
    if !out.insert(root.to_path_buf()) {
        return;
    }
    let src = std::fs::read_to_string(root).unwrap();
    let mut path_attr: Option<String> = None;
    for line in src.lines().map(str::trim) {
        if let Some(p) = line
            .strip_prefix("#[path = \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            path_attr = Some(p.to_string());
            continue;
        }
        let decl = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            let (file, child_dir) = match path_attr.take() {
                Some(p) => {
                    let f = normal(&root.parent().unwrap().join(p));
                    let d = match f.file_name().is_some_and(|n| n == "mod.rs") {
                        true => f.parent().unwrap().to_path_buf(),
                        false => f.with_extension(""),
                    };
                    (f, d)
                }
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        (flat, dir.join(name))
                    } else {
                        (dir.join(name).join("mod.rs"), dir.join(name))
                    }
                }
            };
            assert!(
                file.exists(),
                "{}: `mod {name};` has no file",
                root.display()
            );
            reached(&file, &child_dir, out);
        } else if !line.starts_with("#[") && !line.is_empty() {
            path_attr = None;
        }
    }
}

/// `p` without its `..` steps.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Every file the crates and test targets compile.
fn compiled() -> BTreeSet<PathBuf> {
    let r = repo();
    let mut out = BTreeSet::new();
    for root in [
        "actors/src/lib.rs",
        "src/lib.rs",
        "src/main.rs",
        "src/build.rs",
    ] {
        let f = r.join(root);
        if f.exists() {
            reached(&f, f.parent().unwrap(), &mut out);
        }
    }
    for dir in ["tests", "bench", "actors/tests", "actors/benches"] {
        let Ok(entries) = std::fs::read_dir(r.join(dir)) else {
            continue;
        };
        for e in entries {
            let f = e.unwrap().path();
            if f.extension().is_some_and(|x| x == "rs") {
                reached(&f, f.parent().unwrap(), &mut out);
            }
        }
    }
    out
}

/// The source files of ours: the crates', the tests', the benchmarks'.
fn ours() -> Vec<PathBuf> {
    let r = repo();
    [
        "actors/src",
        "src",
        "tests",
        "bench",
        "actors/tests",
        "actors/benches",
    ]
    .iter()
    .map(|d| r.join(d))
    .filter(|d| d.exists())
    .flat_map(|d| rust_files(&d))
    .collect()
}

fn rel(f: &Path) -> String {
    f.strip_prefix(repo()).unwrap().display().to_string()
}

#[test]
fn every_source_file_is_compiled() {
    let compiled = compiled();
    assert!(compiled.len() > 300, "reached {} files", compiled.len());
    let dead: Vec<String> = ours()
        .into_iter()
        .filter(|f| !compiled.contains(f))
        .map(|f| rel(&f))
        .collect();
    assert!(
        dead.is_empty(),
        "no `mod` reaches these (dead code, tests that never run): {dead:#?}"
    );
}

#[test]
fn a_file_no_mod_reaches_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "//! x\nmod a;\n").unwrap();
    std::fs::write(
        dir.path().join("a/mod.rs"),
        "//! a\n#[cfg(test)]\n#[path = \"t.rs\"]\nmod tests;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a/t.rs"), "//! t\n").unwrap();
    std::fs::write(dir.path().join("a/orphan.rs"), "//! o\n").unwrap();
    let mut out = BTreeSet::new();
    reached(&dir.path().join("lib.rs"), dir.path(), &mut out);
    assert!(out.contains(&dir.path().join("a/t.rs")), "{out:?}");
    assert!(!out.contains(&dir.path().join("a/orphan.rs")));
}

#[test]
fn every_source_file_says_what_it_is_for() {
    let mut silent = Vec::new();
    for dir in ["actors/src", "src"] {
        for f in rust_files(&repo().join(dir)) {
            let src = std::fs::read_to_string(&f).unwrap();
            if !src.starts_with("//! ") {
                silent.push(rel(&f));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "open these with a //! that says what the file is for: {silent:#?}"
    );
}

/// `(what, where it may be, the test of a line)`: each kind of code and
/// the one place it belongs.
type Place = (&'static str, fn(&str) -> bool, fn(&str) -> bool);

const PLACES: &[Place] = &[
    (
        "an actor message (a folder's messages.rs)",
        |f| f.ends_with("/messages.rs"),
        |l| {
            l.contains("derive(Message")
                || l.contains("derive(actix::Message")
                || l.contains("impl Message for")
                || l.contains("impl actix::Message for")
        },
    ),
    (
        "sled (the store module)",
        |f| f.starts_with("actors/src/store/"),
        |l| l.contains("sled::"),
    ),
    (
        "actix-web-actors (the WebSocket glue in src/ws/)",
        |f| f.starts_with("src/ws/"),
        |l| l.contains("actix_web_actors"),
    ),
];

#[test]
fn each_kind_of_code_lives_in_its_place() {
    let mut misplaced = Vec::new();
    for dir in ["actors/src", "src"] {
        for f in rust_files(&repo().join(dir)) {
            let name = rel(&f);
            let src = std::fs::read_to_string(&f).unwrap();
            for (what, allowed, finds) in PLACES {
                if allowed(&name) {
                    continue;
                }
                for (i, l) in src.lines().enumerate() {
                    let code = l.split("//").next().unwrap_or("");
                    if finds(code) {
                        misplaced.push(format!("{name}:{}: {what}", i + 1));
                    }
                }
            }
        }
    }
    assert!(misplaced.is_empty(), "{misplaced:#?}");
    let found = |i: usize, line: &str| (PLACES[i].2)(line);
    assert!(found(0, "#[derive(Message, Debug)]") && found(1, "let t = sled::open(p)?;"));
    assert!(found(2, "use actix_web_actors::ws;") && !found(0, "impl Handler<Foo> for X"));
}
