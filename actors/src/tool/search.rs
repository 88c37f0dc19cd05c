//! `ls` (a directory's entries), `find` (files by glob, `globset`) and
//! `grep` (lines by regex, `regex`), walking the workspace with `ignore`
//! (respects `.gitignore`, `.ignore` and git excludes; never follows
//! symlinks; `.git` skipped). Every path starts in the workspace and
//! results are workspace-relative. Walks run on the blocking pool.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::RegexBuilder;
use serde_json::Value;

use super::confine::hidden;
use super::{confine, error, ok, str_arg, uint_arg};
use crate::tool::ToolOutcome;

const LS_LIMIT: usize = 500;
const FIND_LIMIT: usize = 1000;
const GREP_LIMIT: usize = 100;
/// A matched line longer than this is cut.
const GREP_LINE_CHARS: usize = 500;
/// Files larger than this are not searched by grep.
const GREP_MAX_FILE: u64 = 8 << 20;

/// The optional `path` argument (default: the workspace itself), resolved
/// on the blocking pool.
async fn base(
    tool: &'static str,
    workspace: &super::Workspace,
    args: &Value,
) -> Result<(PathBuf, PathBuf), ToolOutcome> {
    let (w, a) = (workspace.clone(), args.clone());
    tokio::task::spawn_blocking(move || resolve_base(tool, &w, &a))
        .await
        .unwrap_or_else(|e| Err(error(format!("{tool}: failed: {e}"))))
}

fn resolve_base(
    tool: &str,
    workspace: &super::Workspace,
    args: &Value,
) -> Result<(PathBuf, PathBuf), ToolOutcome> {
    let root = workspace.canonicalize().map_err(|e| {
        error(format!(
            "{tool}: workspace {} is not usable: {e}",
            workspace.display()
        ))
    })?;
    let dir = match args.get("path") {
        None | Some(Value::Null) => root.clone(),
        Some(Value::String(p)) if p.trim().is_empty() || p == "." => root.clone(),
        Some(Value::String(p)) => {
            if workspace.only && (p == "~" || p.starts_with("~/")) {
                return Err(error(format!(
                    "{tool}: {p}: outside the workspace (home paths are not allowed)"
                )));
            }
            confine(workspace, p).map_err(|e| error(format!("{tool}: {e}")))?
        }
        Some(_) => return Err(error(format!("{tool}: `path` must be a string"))),
    };
    Ok((root, dir))
}

fn limit(tool: &str, args: &Value, default: usize) -> Result<usize, ToolOutcome> {
    Ok(uint_arg(tool, args, "limit")?
        .map(|l| (l as usize).clamp(1, default * 10))
        .unwrap_or(default))
}

fn bool_arg(tool: &str, args: &Value, name: &str) -> Result<bool, ToolOutcome> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(error(format!("{tool}: `{name}` must be true or false"))),
    }
}

fn rel(root: &Path, p: &Path) -> String {
    let r = p.strip_prefix(root).unwrap_or(p);
    if r.as_os_str().is_empty() {
        ".".into()
    } else {
        r.display().to_string()
    }
}

/// A walk from `dir`; an untrusted turn's walk leaves the protected files
/// out (`root` is the canonical workspace).
fn walker(dir: &Path, workspace: &super::Workspace, root: &Path) -> ignore::Walk {
    let (w, root) = (workspace.clone(), root.to_path_buf());
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .filter_entry(move |e| e.file_name() != ".git" && !hidden(&w, &root, e.path()))
        .sort_by_file_path(|a, b| a.cmp(b))
        .build()
}

async fn blocking(
    tool: &'static str,
    f: impl FnOnce() -> ToolOutcome + Send + 'static,
) -> ToolOutcome {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| error(format!("{tool}: failed: {e}")))
}

/// `ls {path?, limit?}`: entries sorted by name, folders with a trailing `/`.
pub async fn ls(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let (root, dir) = match base("ls", workspace, args).await {
        Ok(b) => b,
        Err(e) => return e,
    };
    let limit = match limit("ls", args, LS_LIMIT) {
        Ok(l) => l,
        Err(e) => return e,
    };
    blocking("ls", move || {
        if !dir.is_dir() {
            return error(format!("ls: {} is not a directory", rel(&root, &dir)));
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => return error(format!("ls: {}: {e}", rel(&root, &dir))),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type() {
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    Ok(t) if t.is_symlink() => format!("{name}@"),
                    _ => name,
                }
            })
            .collect();
        names.sort();
        if names.is_empty() {
            return ok("(empty directory)");
        }
        let total = names.len();
        names.truncate(limit);
        let mut out = names.join("\n");
        if total > limit {
            out.push_str(&format!(
                "\n[{} more entries; raise limit to see them]",
                total - limit
            ));
        }
        ok(out)
    })
    .await
}

/// `find {pattern, path?, limit?}`: files whose workspace-relative path (or
/// name, for a pattern without `/`) matches the glob.
pub async fn find(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let pattern = match str_arg("find", args, "pattern") {
        Ok(p) => p.to_string(),
        Err(e) => return e,
    };
    let (root, dir) = match base("find", workspace, args).await {
        Ok(b) => b,
        Err(e) => return e,
    };
    let limit = match limit("find", args, FIND_LIMIT) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let glob: GlobMatcher = match GlobBuilder::new(&pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => return error(format!("find: bad glob {pattern:?}: {e}")),
    };
    let by_name = !pattern.contains('/');
    let w = workspace.clone();
    blocking("find", move || {
        let mut found = Vec::new();
        let mut more = 0usize;
        for entry in walker(&dir, &w, &root).filter_map(Result::ok) {
            if entry.depth() == 0 {
                continue;
            }
            let path = entry.path();
            let from_base = path.strip_prefix(&dir).unwrap_or(path);
            let hit = if by_name {
                glob.is_match(entry.file_name())
            } else {
                glob.is_match(from_base)
            };
            if hit {
                if found.len() < limit {
                    let mut r = rel(&root, path);
                    if entry.file_type().is_some_and(|t| t.is_dir()) {
                        r.push('/');
                    }
                    found.push(r);
                } else {
                    more += 1;
                }
            }
        }
        if found.is_empty() {
            return ok(format!("No files match {pattern:?}."));
        }
        let mut out = found.join("\n");
        if more > 0 {
            out.push_str(&format!(
                "\n[{more} more matches; narrow the pattern or raise limit]"
            ));
        }
        ok(out)
    })
    .await
}

/// `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`:
/// `file:line: text` for each matching line (context lines with `-`).
pub async fn grep(workspace: impl Into<super::Workspace>, args: &Value) -> ToolOutcome {
    let workspace = &workspace.into();
    let pattern = match str_arg("grep", args, "pattern") {
        Ok(p) => p.to_string(),
        Err(e) => return e,
    };
    let (root, dir) = match base("grep", workspace, args).await {
        Ok(b) => b,
        Err(e) => return e,
    };
    let mut g = match Grep::new(&pattern, args, root) {
        Ok(g) => g,
        Err(e) => return e,
    };
    let w = workspace.clone();
    blocking("grep", move || {
        let files: Box<dyn Iterator<Item = PathBuf>> = if dir.is_file() {
            Box::new(std::iter::once(dir.clone()))
        } else {
            Box::new(
                walker(&dir, &w, &g.root)
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                    .map(|e| e.into_path()),
            )
        };
        for path in files {
            if g.file(&path) {
                break;
            }
        }
        if g.out.is_empty() {
            return ok(format!("No matches for {pattern:?}."));
        }
        let mut text = g.out.join("\n");
        if g.more {
            text.push_str(&format!(
                "\n[stopped after {} matches; narrow the search or raise limit]",
                g.limit
            ));
        }
        ok(text)
    })
    .await
}

/// One `grep` call: what it looks for, and what it found so far.
struct Grep {
    re: regex::Regex,
    file_glob: Option<globset::GlobMatcher>,
    root: PathBuf,
    limit: usize,
    context: usize,
    out: Vec<String>,
    matches: usize,
    more: bool,
}

impl Grep {
    fn new(pattern: &str, args: &Value, root: PathBuf) -> Result<Grep, ToolOutcome> {
        let limit = limit("grep", args, GREP_LIMIT)?;
        let ignore_case = bool_arg("grep", args, "ignoreCase")?;
        let literal = bool_arg("grep", args, "literal")?;
        let context = uint_arg("grep", args, "context")?.unwrap_or(0).min(10) as usize;
        let source = if literal {
            regex::escape(pattern)
        } else {
            pattern.to_string()
        };
        let re = RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| error(format!("grep: bad pattern {pattern:?}: {e}")))?;
        let file_glob = match args.get("glob") {
            None | Some(Value::Null) => None,
            Some(Value::String(g)) => match GlobBuilder::new(g).build() {
                Ok(g) => Some(g.compile_matcher()),
                Err(e) => return Err(error(format!("grep: bad glob {g:?}: {e}"))),
            },
            Some(_) => return Err(error("grep: `glob` must be a string")),
        };
        Ok(Grep {
            re,
            file_glob,
            root,
            limit,
            context,
            out: Vec::new(),
            matches: 0,
            more: false,
        })
    }

    /// The text of `path` when it is searched: it matches the glob, is not
    /// too big, and is not binary.
    fn text_of(&self, path: &Path) -> Option<String> {
        if let Some(g) = &self.file_glob {
            if !g.is_match(path.file_name().unwrap_or_default())
                && !g.is_match(path.strip_prefix(&self.root).unwrap_or(path))
            {
                return None;
            }
        }
        if std::fs::metadata(path)
            .map(|m| m.len() > GREP_MAX_FILE)
            .unwrap_or(true)
        {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return None; // binary
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Searches one file; true once the limit is reached.
    fn file(&mut self, path: &Path) -> bool {
        let Some(text) = self.text_of(path) else {
            return false;
        };
        let lines: Vec<&str> = text.lines().collect();
        let name = rel(&self.root, path);
        let mut last_printed: Option<usize> = None;
        for (i, line) in lines.iter().enumerate() {
            if !self.re.is_match(line) {
                continue;
            }
            if self.matches >= self.limit {
                self.more = true;
                return true;
            }
            self.matches += 1;
            let from = i.saturating_sub(self.context);
            let to = (i + self.context).min(lines.len().saturating_sub(1));
            for (j, l) in lines.iter().enumerate().take(to + 1).skip(from) {
                if last_printed.is_some_and(|p| j <= p) {
                    continue;
                }
                if self.context > 0 && last_printed.is_some_and(|p| j > p + 1) {
                    self.out.push("--".into());
                }
                let cut: String = l.chars().take(GREP_LINE_CHARS).collect();
                let sep = if j == i || self.re.is_match(l) {
                    ':'
                } else {
                    '-'
                };
                self.out.push(format!("{name}{sep}{}{sep} {cut}", j + 1));
                last_printed = Some(j);
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("src/inner")).unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(
            p.join("src/main.rs"),
            "fn main() {\n    println!(\"Hello\");\n}\n",
        )
        .unwrap();
        std::fs::write(
            p.join("src/inner/lib.rs"),
            "pub fn hello() {}\n// TODO later\n",
        )
        .unwrap();
        std::fs::write(p.join("target/out.rs"), "fn hello_built() {}\n").unwrap();
        std::fs::write(p.join("debug.log"), "hello log\n").unwrap();
        std::fs::write(p.join(".git/config"), "hello git\n").unwrap();
        std::fs::write(p.join("notes.md"), "say hello\nsay HELLO\n").unwrap();
        std::fs::write(p.join("blob.bin"), b"hello\0binary").unwrap();
        std::os::unix::fs::symlink("/etc", p.join("etc-link")).unwrap();
        d
    }

    #[tokio::test]
    async fn ls_lists_sorted_with_markers_and_refuses_escapes() {
        let d = tree();
        let r = ls(d.path(), &json!({})).await;
        assert!(!r.is_error, "{r:?}");
        assert_eq!(
            r.text,
            ".git/\n.gitignore\nblob.bin\ndebug.log\netc-link@\nnotes.md\nsrc/\ntarget/"
        );
        assert_eq!(
            ls(d.path(), &json!({"path": "src"})).await.text,
            "inner/\nmain.rs"
        );
        let r = ls(d.path(), &json!({"limit": 2})).await;
        assert!(
            r.text
                .ends_with("[6 more entries; raise limit to see them]"),
            "{}",
            r.text
        );
        for bad in ["..", "/etc", "etc-link", "~", "~/x"] {
            let r = ls(d.path(), &json!({"path": bad})).await;
            assert!(
                r.is_error && r.text.contains("outside the workspace"),
                "{bad}: {r:?}"
            );
        }
        assert!(ls(d.path(), &json!({"path": "notes.md"})).await.is_error);
    }

    #[tokio::test]
    async fn find_matches_globs_and_respects_gitignore() {
        let d = tree();
        let r = find(d.path(), &json!({"pattern": "*.rs"})).await;
        assert_eq!(
            r.text, "src/inner/lib.rs\nsrc/main.rs",
            "target/ is ignored"
        );
        let r = find(d.path(), &json!({"pattern": "src/*.rs"})).await;
        assert_eq!(
            r.text, "src/main.rs",
            "a / in the pattern matches the relative path"
        );
        let r = find(d.path(), &json!({"pattern": "**/*.rs", "path": "src"})).await;
        assert_eq!(r.text, "src/inner/lib.rs\nsrc/main.rs");
        let r = find(d.path(), &json!({"pattern": "*.log"})).await;
        assert_eq!(r.text, "No files match \"*.log\".");
        let r = find(d.path(), &json!({"pattern": "*", "limit": 1})).await;
        assert!(r.text.contains("more matches"), "{}", r.text);
        assert!(find(d.path(), &json!({"pattern": "a{b"})).await.is_error);
        assert!(find(d.path(), &json!({})).await.is_error);
        assert!(
            find(d.path(), &json!({"pattern": "*", "path": "../"}))
                .await
                .is_error
        );
    }

    #[tokio::test]
    async fn grep_finds_lines_with_context_and_skips_ignored_and_binary_files() {
        let d = tree();
        let r = grep(d.path(), &json!({"pattern": "hello"})).await;
        assert_eq!(
            r.text, "notes.md:1: say hello\nsrc/inner/lib.rs:1: pub fn hello() {}",
            "{r:?}"
        );
        let r = grep(
            d.path(),
            &json!({"pattern": "hello", "ignoreCase": true, "glob": "*.md"}),
        )
        .await;
        assert_eq!(r.text, "notes.md:1: say hello\nnotes.md:2: say HELLO");
        let r = grep(d.path(), &json!({"pattern": "println!(", "literal": true})).await;
        assert_eq!(
            r.text,
            "src/main.rs:2: println!(\"Hello\");".replace(": p", ":     p")
        );
        let r = grep(d.path(), &json!({"pattern": "println", "context": 1})).await;
        assert_eq!(
            r.text,
            "src/main.rs-1- fn main() {\nsrc/main.rs:2:     println!(\"Hello\");\nsrc/main.rs-3- }"
        );
        let r = grep(d.path(), &json!({"pattern": "e", "limit": 1})).await;
        assert!(r.text.contains("[stopped after 1 matches"), "{}", r.text);
        let r = grep(d.path(), &json!({"pattern": "(unclosed"})).await;
        assert!(
            r.is_error && r.text.starts_with("grep: bad pattern"),
            "{r:?}"
        );
        assert_eq!(
            grep(d.path(), &json!({"pattern": "zzz"})).await.text,
            "No matches for \"zzz\"."
        );
        let r = grep(
            d.path(),
            &json!({"pattern": "TODO", "path": "src/inner/lib.rs"}),
        )
        .await;
        assert_eq!(r.text, "src/inner/lib.rs:2: // TODO later");
        assert!(
            grep(d.path(), &json!({"pattern": "x", "path": "/etc"}))
                .await
                .is_error
        );
        assert!(
            grep(d.path(), &json!({"pattern": "x", "ignoreCase": "yes"}))
                .await
                .is_error
        );
    }
}
