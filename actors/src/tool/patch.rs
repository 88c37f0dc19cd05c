//! `apply_patch`: OpenClaw's (Codex-style) multi-file patch format.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: notes/new.md
//! +first line
//! *** Update File: src/app.py
//! *** Move to: src/main.py
//! @@ def greet():
//! -    print("Hi")
//! +    print("Hello")
//! *** Delete File: old.txt
//! *** End Patch
//! ```
//!
//! All or nothing: every file is read, every hunk located (exact, then
//! ignoring trailing whitespace, then ignoring surrounding whitespace) and
//! every path confined to the workspace before anything is written; files
//! are then replaced by temp file + rename.

use std::path::PathBuf;

use serde_json::Value;

use super::confine::{confined_new, kind_of};
use super::files::replace_file;
use super::{error, ok};
use crate::tool::ToolOutcome;

#[derive(Debug, PartialEq)]
enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

#[derive(Debug, Default, PartialEq)]
struct Hunk {
    anchor: Option<String>,
    old: Vec<String>,
    new: Vec<String>,
}

crate::reason_error! {
    /// Why a patch cannot be read or applied.
    struct PatchError;
}

fn parse(text: &str) -> Result<Vec<Op>, PatchError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    if lines.first().map(|l| l.trim()) != Some("*** Begin Patch") {
        return Err("the patch must start with `*** Begin Patch`".into());
    }
    if lines.last().map(|l| l.trim()) != Some("*** End Patch") {
        return Err("the patch must end with `*** End Patch`".into());
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        i += 1;
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            let (op, next) = parse_add(path.trim(), body, i)?;
            ops.push(op);
            i = next;
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            ops.push(Op::Delete {
                path: path.trim().to_string(),
            });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            let (op, next) = parse_update(path.trim(), body, i)?;
            ops.push(op);
            i = next;
        } else if !line.trim().is_empty() {
            return Err(format!(
                "unexpected line {line:?} (expected *** Add File / Update File / Delete File)"
            )
            .into());
        }
    }
    if ops.is_empty() {
        return Err("the patch changes nothing".into());
    }
    Ok(ops)
}

/// `*** Add File:`'s lines from `i`, each `+`; the op and the next line.
fn parse_add(path: &str, body: &[&str], mut i: usize) -> Result<(Op, usize), PatchError> {
    let mut lines = Vec::new();
    while i < body.len() && !body[i].starts_with("*** ") {
        match body[i].strip_prefix('+') {
            Some(l) => lines.push(l.to_string()),
            None => {
                return Err(format!(
                    "Add File {path}: every line must start with `+` (got {:?})",
                    body[i]
                )
                .into())
            }
        }
        i += 1;
    }
    let path = path.to_string();
    Ok((Op::Add { path, lines }, i))
}

/// `*** Update File:`'s optional move and its hunks from `i`; the op and
/// the next line.
fn parse_update(path: &str, body: &[&str], mut i: usize) -> Result<(Op, usize), PatchError> {
    let mut move_to = None;
    if let Some(to) = body.get(i).and_then(|l| l.strip_prefix("*** Move to: ")) {
        move_to = Some(to.trim().to_string());
        i += 1;
    }
    let mut hunks: Vec<Hunk> = Vec::new();
    while i < body.len() && (!body[i].starts_with("*** ") || body[i] == "*** End of File") {
        let l = body[i];
        i += 1;
        if l == "*** End of File" {
            continue;
        }
        if let Some(anchor) = l.strip_prefix("@@") {
            let a = anchor.trim();
            hunks.push(Hunk {
                anchor: (!a.is_empty()).then(|| a.to_string()),
                ..Default::default()
            });
            continue;
        }
        let h = match hunks.last_mut() {
            Some(h) => h,
            None => {
                hunks.push(Hunk::default());
                &mut hunks[0]
            }
        };
        hunk_line(h, l).map_err(|()| {
            format!("Update File {path}: a hunk line must start with ' ', '-' or '+' (got {l:?})")
        })?;
    }
    if hunks.is_empty() && move_to.is_none() {
        return Err(format!("Update File {path}: no hunks").into());
    }
    let path = path.to_string();
    Ok((
        Op::Update {
            path,
            move_to,
            hunks,
        },
        i,
    ))
}

/// One line of a hunk: context (` `, or empty), removed (`-`), added (`+`).
fn hunk_line(h: &mut Hunk, l: &str) -> Result<(), ()> {
    match l.chars().next() {
        Some(' ') => {
            h.old.push(l[1..].to_string());
            h.new.push(l[1..].to_string());
        }
        Some('-') => h.old.push(l[1..].to_string()),
        Some('+') => h.new.push(l[1..].to_string()),
        None => {
            // An empty line in a hunk is an empty context line.
            h.old.push(String::new());
            h.new.push(String::new());
        }
        _ => return Err(()),
    }
    Ok(())
}

/// A patch path inside the workspace (resolved off the actor's thread).
async fn confine_op(workspace: &super::Workspace, p: &str) -> Result<PathBuf, ToolOutcome> {
    confined_new(workspace, p)
        .await
        .map_err(|e| error(format!("apply_patch: {e}")))
}

/// Finds `old` in `lines` at or after `from`: exact, then ignoring trailing
/// whitespace, then ignoring surrounding whitespace.
fn locate(lines: &[String], old: &[String], from: usize) -> Option<usize> {
    if old.is_empty() {
        return Some(lines.len());
    }
    let fits = |cmp: &dyn Fn(&str, &str) -> bool| {
        (from..=lines.len().saturating_sub(old.len())).find(|&s| {
            s + old.len() <= lines.len()
                && old.iter().enumerate().all(|(k, o)| cmp(&lines[s + k], o))
        })
    };
    fits(&|a, b| a == b)
        .or_else(|| fits(&|a, b| a.trim_end() == b.trim_end()))
        .or_else(|| fits(&|a, b| a.trim() == b.trim()))
}

fn apply_hunks(path: &str, text: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let trailing_newline = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cursor = 0;
    for (n, h) in hunks.iter().enumerate() {
        if let Some(anchor) = &h.anchor {
            match lines
                .iter()
                .skip(cursor)
                .position(|l| l.trim() == anchor.trim())
            {
                Some(p) => cursor += p + 1,
                None => {
                    // The anchor may itself be the first old line.
                    if h.old.first().is_none_or(|o| o.trim() != anchor.trim()) {
                        return Err(
                            format!("{path}: hunk {} anchor {anchor:?} not found", n + 1).into(),
                        );
                    }
                }
            }
        }
        let at = locate(&lines, &h.old, cursor)
            .or_else(|| locate(&lines, &h.old, 0))
            .ok_or_else(|| {
                PatchError::from(format!(
                    "{path}: hunk {} did not match the file (context or removed lines differ)",
                    n + 1
                ))
            })?;
        lines.splice(at..at + h.old.len(), h.new.iter().cloned());
        cursor = at + h.new.len();
    }
    let mut out = lines.join("\n");
    if trailing_newline && !out.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

enum Change {
    Write(PathBuf, String),
    Remove(PathBuf),
}

pub async fn run(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let text = match args.get("input").or_else(|| args.get("patch")) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(_) => return error("apply_patch: `input` must be a non-empty string"),
        None => return error("apply_patch: `input` (the patch text) is required"),
    };
    let ops = match parse(&text) {
        Ok(o) => o,
        Err(e) => return error(format!("apply_patch: {e}")),
    };
    let mut changes = Vec::new();
    let mut summary = Vec::new();
    for op in &ops {
        match prepare(workspace, op).await {
            Ok((mut c, line)) => {
                changes.append(&mut c);
                summary.push(line);
            }
            Err(refused) => return refused,
        }
    }
    for change in changes {
        let (result, p) = match &change {
            Change::Write(p, content) => (replace_file(p, content.as_bytes()).await, p),
            Change::Remove(p) => (tokio::fs::remove_file(p).await, p),
        };
        if let Err(e) = result {
            return error(format!(
                "apply_patch: writing {}: {e} (earlier files of this patch were written)",
                p.display()
            ));
        }
    }
    ok(format!("Patch applied:\n{}", summary.join("\n")))
}

/// What one op will change, checked (nothing is written yet), and its
/// summary line.
async fn prepare(
    workspace: &super::Workspace,
    op: &Op,
) -> Result<(Vec<Change>, String), ToolOutcome> {
    match op {
        Op::Add { path, lines } => {
            let p = confine_op(workspace, path).await?;
            if kind_of(&p).await.is_some() {
                return Err(error(format!(
                    "apply_patch: {path} already exists (use Update File)"
                )));
            }
            let mut content = lines.join("\n");
            content.push('\n');
            Ok((vec![Change::Write(p, content)], format!("A {path}")))
        }
        Op::Delete { path } => {
            let p = confine_op(workspace, path).await?;
            if !kind_of(&p).await.is_some_and(|k| k.is_file()) {
                return Err(error(format!("apply_patch: {path} does not exist")));
            }
            Ok((vec![Change::Remove(p)], format!("D {path}")))
        }
        Op::Update {
            path,
            move_to,
            hunks,
        } => {
            let p = confine_op(workspace, path).await?;
            let current = match tokio::fs::read(&p).await {
                Ok(b) => String::from_utf8(b)
                    .map_err(|_| error(format!("apply_patch: {path} is not UTF-8 text")))?,
                Err(e) => return Err(error(format!("apply_patch: {path}: {e}"))),
            };
            let updated = apply_hunks(path, &current, hunks)
                .map_err(|e| error(format!("apply_patch: {e}")))?;
            match move_to {
                Some(to) => {
                    let dest = confine_op(workspace, to).await?;
                    let changes = vec![Change::Write(dest, updated), Change::Remove(p)];
                    Ok((changes, format!("M {path} -> {to}")))
                }
                None => Ok((vec![Change::Write(p, updated)], format!("M {path}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn adds_updates_moves_and_deletes_files() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("src")).unwrap();
        std::fs::write(
            w.join("src/app.py"),
            "def greet():\n    print(\"Hi\")\n\ndef other():\n    return 1\n",
        )
        .unwrap();
        std::fs::write(w.join("old.txt"), "bye\n").unwrap();
        std::fs::write(w.join("cfg.toml"), "a = 1  \nb = 2\n").unwrap();
        let patch = "*** Begin Patch\n\
*** Add File: notes/new.md\n+# New\n+text\n\
*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n@@ def other():\n-    return 1\n+    return 2\n\
*** Update File: cfg.toml\n-a = 1\n+a = 10\n b = 2\n\
*** Delete File: old.txt\n\
*** End Patch";
        let r = run(w, &json!({"input": patch})).await;
        assert!(!r.is_error, "{r:?}");
        assert_eq!(
            r.text,
            "Patch applied:\nA notes/new.md\nM src/app.py -> src/main.py\nM cfg.toml\nD old.txt"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("notes/new.md")).unwrap(),
            "# New\ntext\n"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/main.py")).unwrap(),
            "def greet():\n    print(\"Hello\")\n\ndef other():\n    return 2\n"
        );
        assert!(!w.join("src/app.py").exists() && !w.join("old.txt").exists());
        assert_eq!(
            std::fs::read_to_string(w.join("cfg.toml")).unwrap(),
            "a = 10\nb = 2\n",
            "trailing spaces tolerated"
        );
    }

    #[tokio::test]
    async fn a_bad_patch_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::write(w.join("a.txt"), "one\ntwo\n").unwrap();
        let mismatch = "*** Begin Patch\n*** Add File: b.txt\n+new\n*** Update File: a.txt\n-three\n+four\n*** End Patch";
        let r = run(w, &json!({"input": mismatch})).await;
        assert!(
            r.is_error && r.text.contains("hunk 1 did not match"),
            "{r:?}"
        );
        assert!(!w.join("b.txt").exists(), "all or nothing");
        for (bad, want) in [
            ("*** Add File: x\n+y\n*** End Patch", "must start with"),
            ("*** Begin Patch\n*** Add File: x\n+y", "must end with"),
            ("*** Begin Patch\n*** Add File: a.txt\n+y\n*** End Patch", "already exists"),
            ("*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch", "does not exist"),
            ("*** Begin Patch\n*** Add File: ../escape.txt\n+y\n*** End Patch", "outside the workspace"),
            ("*** Begin Patch\n*** Add File: /tmp/abs.txt\n+y\n*** End Patch", "outside the workspace"),
            ("*** Begin Patch\n*** Add File: ~/x.txt\n+y\n*** End Patch", "outside the workspace"),
            ("*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../out.txt\n-one\n+1\n*** End Patch", "outside the workspace"),
            ("*** Begin Patch\n*** Add File: c.txt\ny\n*** End Patch", "must start with `+`"),
            ("*** Begin Patch\nrandom\n*** End Patch", "unexpected line"),
            ("*** Begin Patch\n*** End Patch", "changes nothing"),
        ] {
            let r = run(w, &json!({"input": bad})).await;
            assert!(r.is_error && r.text.contains(want), "{bad}: {r:?}");
        }
        assert!(run(w, &json!({})).await.is_error);
        assert_eq!(
            std::fs::read_to_string(w.join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
    }
}
