//! The agent's LSP tools: per server `lsp_hover_<server>`,
//! `lsp_definition_<server>`, `lsp_references_<server>` (OpenClaw's names
//! and params: `uri`, zero-based `line` and `character`; ferroclaw also
//! takes a workspace `path`), and ferroclaw's `lsp_diagnostics_<server>`
//! (the server's diagnostics of a file), `lsp_symbols_<server>` (a file's
//! symbols, or the workspace's matching `query`) and `lsp_rename_<server>`
//! (the edits a rename would make: a preview, nothing is written). Files
//! are confined to the workspace like the file tools.

use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::messages::{Request, SyncFile, WaitDiagnostics};
use super::server::LspServer;
use super::{wire, LspError};
use crate::provider::ToolSpec;

/// What a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Hover,
    Definition,
    References,
    Diagnostics,
    Symbols,
    Rename,
}

/// `lsp_<op>_<server>` taken apart (`tool::lsp_parts` knows the names).
pub fn parse(tool: &str) -> Option<(Op, &str)> {
    let (op, server) = crate::tool::lsp_parts(tool)?;
    let op = match op {
        "hover" => Op::Hover,
        "definition" => Op::Definition,
        "references" => Op::References,
        "diagnostics" => Op::Diagnostics,
        "symbols" => Op::Symbols,
        _ => Op::Rename,
    };
    Some((op, server))
}

fn position_params(extra: Value) -> Value {
    let mut props = json!({
        "path": {"type": "string", "description": "A file in the workspace (relative or absolute)"},
        "uri": {"type": "string", "description": "File URI (file:///path/to/file), instead of path"},
        "line": {"type": "number", "description": "Zero-based line number"},
        "character": {"type": "number", "description": "Zero-based character offset"}
    });
    if let (Value::Object(p), Value::Object(e)) = (&mut props, extra) {
        p.extend(e);
    }
    json!({"type": "object", "properties": props, "required": ["line", "character"]})
}

/// The tools of server `name`.
pub fn specs(name: &str) -> Vec<ToolSpec> {
    let file = json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "A file in the workspace"},
        "uri": {"type": "string", "description": "File URI, instead of path"}
    }});
    let symbols = json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "A file: its symbols"},
        "query": {"type": "string", "description": "Without path: workspace symbols matching this"}
    }});
    let spec = |op: &str, description: String, parameters: Value| ToolSpec {
        name: format!("lsp_{op}_{name}"),
        description,
        parameters,
    };
    vec![
        spec("hover", format!("Get hover information for a symbol at a position in a file via the {name} language server."), position_params(json!({}))),
        spec("definition", format!("Find the definition of a symbol at a position in a file via the {name} language server."), position_params(json!({}))),
        spec("references", format!("Find all references to a symbol at a position in a file via the {name} language server."), position_params(json!({"includeDeclaration": {"type": "boolean", "description": "Include the declaration in results"}}))),
        spec("diagnostics", format!("The {name} language server's diagnostics (errors, warnings) for a file, as it is on disk now."), file),
        spec("symbols", format!("Symbols of a file, or of the workspace matching a query, via the {name} language server."), symbols),
        spec("rename", format!("Preview renaming the symbol at a position via the {name} language server: the edits it would make (nothing is written)."), position_params(json!({"newName": {"type": "string"}}))),
    ]
}

/// Where a call's file is, and the server's language id for it.
pub struct Target {
    pub path: PathBuf,
    pub language: String,
}

/// The file a call names: `path`, else a `file://` `uri`.
pub fn file_arg(args: &Value) -> Option<String> {
    if let Some(p) = args.get("path").and_then(Value::as_str) {
        return Some(p.to_string());
    }
    let uri = args.get("uri").and_then(Value::as_str)?;
    let raw = uri.strip_prefix("file://")?;
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// The language id of `path` by `extensionToLanguage`, else its extension.
pub fn language(path: &Path, map: &std::collections::BTreeMap<String, String>) -> String {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    map.get(&format!(".{ext}"))
        .cloned()
        .unwrap_or_else(|| match ext {
            "py" => "python".into(),
            "rs" => "rust".into(),
            "c" | "h" => "c".into(),
            "cc" | "cpp" | "hpp" => "cpp".into(),
            "ts" => "typescript".into(),
            "js" => "javascript".into(),
            other => other.into(),
        })
}

/// The file a call is about, confined to the workspace at `root` (None:
/// workspace symbols, which name no file).
pub async fn target(
    op: Op,
    args: &Value,
    root: &Path,
    languages: &std::collections::BTreeMap<String, String>,
) -> Result<Option<Target>, LspError> {
    let raw = match file_arg(args) {
        None if op == Op::Symbols => return Ok(None),
        None => return Err(LspError::Args("path: required".into())),
        Some(raw) => raw,
    };
    let ws = crate::tool::Workspace {
        root: root.to_path_buf(),
        only: true,
        untrusted: false,
    };
    let path = crate::tool::confine::confined(&ws, &raw)
        .await
        .map_err(|e| LspError::Args(e.to_string()))?;
    let language = language(&path, languages);
    Ok(Some(Target { path, language }))
}

fn num(args: &Value, key: &str) -> Result<u64, LspError> {
    args.get(key)
        .and_then(Value::as_f64)
        .filter(|n| *n >= 0.0)
        .map(|n| n as u64)
        .ok_or_else(|| LspError::Args(format!("{key}: a number of at least 0")))
}

/// How long each step may take.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    pub request: Duration,
    pub diagnostics: Duration,
}

/// Runs `op` on `server` for `target` (None: no file: workspace symbols).
pub async fn run(
    op: Op,
    server: &Addr<LspServer>,
    target: Option<Target>,
    args: &Value,
    root: &Path,
    b: Budgets,
) -> Result<String, LspError> {
    let Some(target) = target else {
        let q = args.get("query").and_then(Value::as_str).unwrap_or("");
        let found = ask(server, "workspace/symbol", wire::query(q), b).await?;
        return Ok(render(&found, root, "workspace symbols"));
    };
    let sync = SyncFile {
        path: target.path.clone(),
        language: target.language,
    };
    let gone = |_| LspError::Exited(String::new());
    let (uri, seen) = server.send(sync).await.map_err(gone)??;
    if op == Op::Diagnostics {
        let asked = WaitDiagnostics {
            uri,
            after: seen,
            wait: b.diagnostics,
        };
        let list = server.send(asked).await.unwrap_or_default();
        return Ok(diagnostics(&list, &target.path, root));
    }
    let (method, params, label) = request_of(op, &uri, args)?;
    let found = ask(server, method, params, b).await?;
    Ok(render(&found, root, label))
}

async fn ask(
    server: &Addr<LspServer>,
    method: &'static str,
    params: Value,
    b: Budgets,
) -> Result<Value, LspError> {
    let timeout = b.request;
    let asked = server.send(Request {
        method,
        params,
        timeout,
    });
    asked.await.map_err(|_| LspError::Exited(String::new()))?
}

/// The request of a positional or file op: method, params, what it is.
fn request_of(
    op: Op,
    uri: &str,
    args: &Value,
) -> Result<(&'static str, Value, &'static str), LspError> {
    if op == Op::Symbols {
        return Ok((
            "textDocument/documentSymbol",
            wire::document(uri),
            "symbols",
        ));
    }
    let (l, c) = (num(args, "line")?, num(args, "character")?);
    Ok(match op {
        Op::Hover => ("textDocument/hover", wire::position(uri, l, c), "hover"),
        Op::Definition => (
            "textDocument/definition",
            wire::position(uri, l, c),
            "definition",
        ),
        Op::References => {
            let decl = args
                .get("includeDeclaration")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            (
                "textDocument/references",
                wire::references(uri, l, c, decl),
                "references",
            )
        }
        _ => {
            let new = args
                .get("newName")
                .and_then(Value::as_str)
                .ok_or_else(|| LspError::Args("newName: required".into()))?;
            (
                "textDocument/rename",
                wire::rename(uri, l, c, new),
                "rename preview (nothing written)",
            )
        }
    })
}

/// An answer as the model reads it: `file://<root>/` shortened to paths.
fn render(found: &Value, root: &Path, label: &str) -> String {
    if found.is_null() || found.as_array().is_some_and(Vec::is_empty) {
        return format!("No {label} result");
    }
    let text = serde_json::to_string_pretty(found).unwrap_or_default();
    let prefix = format!("{}/", super::server::uri_of(root));
    format!("{label}:\n{}", text.replace(&prefix, ""))
}

/// Diagnostics as lines: `path:line:col severity [source] message`, read
/// as LSP's `Diagnostic` (a malformed one is skipped).
fn diagnostics(list: &[Value], path: &Path, root: &Path) -> String {
    use lsp_types::{Diagnostic, DiagnosticSeverity};
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let read: Vec<Diagnostic> = list
        .iter()
        .filter_map(|d| serde_json::from_value(d.clone()).ok())
        .collect();
    if read.is_empty() {
        return format!("{shown}: no diagnostics");
    }
    read.iter()
        .map(|d| {
            let (l, c) = (d.range.start.line + 1, d.range.start.character + 1);
            let sev = match d.severity {
                Some(DiagnosticSeverity::WARNING) => "warning",
                Some(DiagnosticSeverity::INFORMATION) => "info",
                Some(DiagnosticSeverity::HINT) => "hint",
                _ => "error",
            };
            let src = d
                .source
                .as_ref()
                .map(|s| format!(" [{s}]"))
                .unwrap_or_default();
            format!("{shown}:{l}:{c} {sev}{src} {}", d.message)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_parse_back_to_their_op_and_server() {
        assert_eq!(parse("lsp_hover_py"), Some((Op::Hover, "py")));
        assert_eq!(
            parse("lsp_references_my_server"),
            Some((Op::References, "my_server"))
        );
        assert_eq!(parse("lsp_hover_"), None);
        assert_eq!(parse("read"), None);
        for s in specs("py") {
            assert!(parse(&s.name).is_some(), "{}", s.name);
        }
        assert_eq!(
            file_arg(&json!({"uri": "file:///w/a%20b.py"})).as_deref(),
            Some("/w/a b.py")
        );
    }
}
