//! `write` (create or replace a file; parent folders are created) and
//! `edit` (replace one exact, unique piece of text). Paths resolve in the
//! workspace; escapes by `..`, `~`, absolute paths or symlinks are refused.
//! A file is replaced through a temporary file and a rename, so a reader
//! never sees half of it.

use std::path::Path;

use serde_json::Value;

use super::confine::{confined_new, kind_of};
use super::{error, ok, str_arg};
use crate::tool::ToolOutcome;

/// A string argument that may be empty (file contents, replacement text).
fn text_arg<'a>(tool: &str, args: &'a Value, name: &str) -> Result<&'a str, ToolOutcome> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(error(format!("{tool}: `{name}` must be a string"))),
        None => Err(error(format!("{tool}: `{name}` (string) is required"))),
    }
}

pub(crate) async fn replace_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    tokio::fs::create_dir_all(dir).await?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.ferroclaw-{}", ulid::Ulid::generate()));
    tokio::fs::write(&tmp, contents).await?;
    match tokio::fs::rename(&tmp, path).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            Err(e)
        }
    }
}

pub async fn write(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let raw = match str_arg("write", args, "path") {
        Ok(p) => p,
        Err(e) => return e,
    };
    let content = match text_arg("write", args, "content") {
        Ok(c) => c,
        Err(e) => return e,
    };
    let path = match confined_new(workspace, raw).await {
        Ok(p) => p,
        Err(e) => return error(format!("write: {e}")),
    };
    if kind_of(&path).await.is_some_and(|k| k.is_dir()) {
        return error(format!("write: {raw} is a directory"));
    }
    match replace_file(&path, content.as_bytes()).await {
        Ok(()) => ok(format!("Wrote {} bytes to {raw}", content.len())),
        Err(e) => error(format!("write: {raw}: {e}")),
    }
}

/// The replacements of an `edit` call: OpenClaw's `edits: [{oldText,
/// newText}]`, or one top-level `oldText`/`newText` pair (older clients).
fn edits_arg(args: &Value) -> Result<Vec<(&str, &str)>, ToolOutcome> {
    let pairs: Vec<&Value> = match args.get("edits") {
        Some(Value::Array(list)) if !list.is_empty() => list.iter().collect(),
        Some(_) => {
            return Err(error(
                "edit: `edits` must be a non-empty list of {oldText, newText}",
            ))
        }
        None => vec![args],
    };
    pairs
        .into_iter()
        .map(|p| {
            let old = text_arg("edit", p, "oldText")?;
            let new = text_arg("edit", p, "newText")?;
            if old.is_empty() {
                return Err(error("edit: `oldText` must not be empty"));
            }
            Ok((old, new))
        })
        .collect()
}

/// `text` with `edits` applied: each `oldText` must match the original
/// exactly once, without overlaps. Ok: the new text and the replacements
/// made; Err: the tool's answer saying which edit failed and why.
fn applied(text: &str, edits: &[(&str, &str)], raw: &str) -> Result<(String, usize), ToolOutcome> {
    // Every oldText must match the original exactly once, without overlaps.
    let mut spans = Vec::with_capacity(edits.len());
    for (i, (old, new)) in edits.iter().enumerate() {
        let which = match edits.len() {
            1 => String::new(),
            _ => format!(" (edit {})", i + 1),
        };
        let mut found = text.match_indices(old);
        match (found.next(), found.count()) {
            (None, _) => {
                return Err(error(format!(
                    "edit: `oldText`{which} was not found in {raw}; read the file and copy the text exactly"
                )))
            }
            (Some((at, _)), 0) => spans.push((at, at + old.len(), *new)),
            (Some(_), more) => {
                return Err(error(format!(
                    "edit: `oldText`{which} matches {} places in {raw}; include more surrounding text so it matches exactly one",
                    more + 1
                )))
            }
        }
    }
    spans.sort_by_key(|s| s.0);
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(error(format!(
            "edit: two edits overlap in {raw}; merge them into one"
        )));
    }
    let mut updated = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in &spans {
        updated.push_str(&text[at..*start]);
        updated.push_str(new);
        at = *end;
    }
    updated.push_str(&text[at..]);
    Ok((updated, spans.len()))
}

pub async fn edit(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let raw = match str_arg("edit", args, "path") {
        Ok(p) => p,
        Err(e) => return e,
    };
    let edits = match edits_arg(args) {
        Ok(e) => e,
        Err(e) => return e,
    };
    let path = match confined_new(workspace, raw).await {
        Ok(p) => p,
        Err(e) => return error(format!("edit: {e}")),
    };
    let bytes = match tokio::fs::read(&path).await {
        Ok(b) => b,
        Err(e) => return error(format!("edit: {raw}: {e}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return error(format!("edit: {raw} is not a UTF-8 text file"));
    };
    let (updated, count) = match applied(&text, &edits, raw) {
        Ok(done) => done,
        Err(e) => return e,
    };
    match replace_file(&path, updated.as_bytes()).await {
        Ok(()) => ok(format!(
            "Edited {raw}: {count} replacement{}",
            if count == 1 { "" } else { "s" }
        )),
        Err(e) => error(format!("edit: {raw}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[tokio::test]
    async fn write_creates_folders_and_replaces_whole_files() {
        let d = ws();
        let r = write(
            d.path(),
            &json!({"path": "notes/a/b.txt", "content": "one"}),
        )
        .await;
        assert_eq!(r, ok("Wrote 3 bytes to notes/a/b.txt"));
        let r = write(d.path(), &json!({"path": "notes/a/b.txt", "content": ""})).await;
        assert!(!r.is_error, "{}", r.text);
        assert_eq!(
            std::fs::read_to_string(d.path().join("notes/a/b.txt")).unwrap(),
            ""
        );
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(d.path().join("notes/a")).unwrap().count(),
            1
        );
    }

    #[tokio::test]
    async fn escapes_are_refused_and_nothing_is_written_outside() {
        let d = ws();
        let outside = ws();
        std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
        let abs = outside.path().join("abs.txt");
        for path in [
            "../escape.txt".to_string(),
            "sub/../../escape.txt".to_string(),
            "~/escape.txt".to_string(),
            abs.display().to_string(),
            "link/escape.txt".to_string(),
            "link".to_string(),
        ] {
            let r = write(d.path(), &json!({"path": path, "content": "x"})).await;
            assert!(r.is_error, "{path}: {}", r.text);
            assert!(
                r.text.contains("outside the workspace") || r.text.contains("`..`"),
                "{path}: {}",
                r.text
            );
            let r = edit(
                d.path(),
                &json!({"path": path, "oldText": "a", "newText": "b"}),
            )
            .await;
            assert!(r.is_error, "{path}: {}", r.text);
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(!d.path().parent().unwrap().join("escape.txt").exists());
        // An absolute path inside the workspace is fine.
        let inside = d.path().join("in.txt").display().to_string();
        assert!(
            !write(d.path(), &json!({"path": inside, "content": "x"}))
                .await
                .is_error
        );
    }

    #[tokio::test]
    async fn edit_replaces_exactly_one_match_and_refuses_ambiguity() {
        let d = ws();
        std::fs::write(d.path().join("f.rs"), "let a = 1;\nlet b = 1;\n").unwrap();
        let r = edit(
            d.path(),
            &json!({"path": "f.rs", "oldText": "= 1;", "newText": "= 2;"}),
        )
        .await;
        assert!(
            r.is_error && r.text.contains("matches 2 places"),
            "{}",
            r.text
        );
        let r = edit(
            d.path(),
            &json!({"path": "f.rs", "oldText": "let b = 1;", "newText": "let b = 2;"}),
        )
        .await;
        assert_eq!(r, ok("Edited f.rs: 1 replacement"));
        assert_eq!(
            std::fs::read_to_string(d.path().join("f.rs")).unwrap(),
            "let a = 1;\nlet b = 2;\n"
        );
        let r = edit(
            d.path(),
            &json!({"path": "f.rs", "oldText": "let c", "newText": ""}),
        )
        .await;
        assert!(r.is_error && r.text.contains("not found"), "{}", r.text);
        let r = edit(
            d.path(),
            &json!({"path": "f.rs", "oldText": "", "newText": "x"}),
        )
        .await;
        assert!(
            r.is_error && r.text.contains("must not be empty"),
            "{}",
            r.text
        );
        let r = edit(
            d.path(),
            &json!({"path": "missing.rs", "oldText": "a", "newText": "b"}),
        )
        .await;
        assert!(r.is_error, "{}", r.text);
        std::fs::write(d.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
        let r = edit(
            d.path(),
            &json!({"path": "bin", "oldText": "a", "newText": "b"}),
        )
        .await;
        assert!(r.is_error && r.text.contains("not a UTF-8"), "{}", r.text);
    }

    #[tokio::test]
    async fn several_edits_apply_to_the_original_and_must_not_overlap() {
        let d = ws();
        std::fs::write(d.path().join("g.txt"), "alpha beta gamma").unwrap();
        let edits = |e: Value| json!({"path": "g.txt", "edits": e});
        let r = edit(
            d.path(),
            &edits(json!([
                {"oldText": "gamma", "newText": "G"},
                {"oldText": "alpha", "newText": "A"},
            ])),
        )
        .await;
        assert_eq!(r, ok("Edited g.txt: 2 replacements"));
        assert_eq!(
            std::fs::read_to_string(d.path().join("g.txt")).unwrap(),
            "A beta G"
        );
        let r = edit(
            d.path(),
            &edits(json!([
                {"oldText": "A beta", "newText": "x"},
                {"oldText": "beta G", "newText": "y"},
            ])),
        )
        .await;
        assert!(r.is_error && r.text.contains("overlap"), "{}", r.text);
        let r = edit(
            d.path(),
            &edits(json!([
                {"oldText": "A", "newText": "x"},
                {"oldText": "zzz", "newText": "y"},
            ])),
        )
        .await;
        assert!(
            r.is_error && r.text.contains("(edit 2) was not found"),
            "{}",
            r.text
        );
        // A failed call changes nothing.
        assert_eq!(
            std::fs::read_to_string(d.path().join("g.txt")).unwrap(),
            "A beta G"
        );
        let r = edit(d.path(), &edits(json!([]))).await;
        assert!(
            r.is_error && r.text.contains("non-empty list"),
            "{}",
            r.text
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_tool_errors() {
        let d = ws();
        for (args, want) in [
            (json!({"content": "x"}), "`path` (string) is required"),
            (
                json!({"path": "a", "content": 5}),
                "`content` must be a string",
            ),
            (json!({"path": "a"}), "`content` (string) is required"),
        ] {
            let r = write(d.path(), &args).await;
            assert!(r.is_error && r.text.contains(want), "{args}: {}", r.text);
        }
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let r = write(d.path(), &json!({"path": "dir", "content": "x"})).await;
        assert!(
            r.is_error && r.text.contains("is a directory"),
            "{}",
            r.text
        );
    }
}
