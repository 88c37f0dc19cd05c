//! The JSON the LSP client sends: `initialize` (what ferroclaw can use),
//! `didOpen`/`didChange` of whole files, the requests of each tool, and
//! its answers to the server's own requests.

use serde_json::{json, Value};

/// A request.
pub fn request(id: i64, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The answer to a server's request: what ferroclaw has (no configuration,
/// every progress token accepted).
pub fn answer(id: &Value, method: &str, params: &Value) -> Value {
    let result = match method {
        "workspace/configuration" => {
            let n = params
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Value::Array(vec![Value::Null; n])
        }
        "workspace/workspaceFolders" => Value::Array(Vec::new()),
        _ => Value::Null,
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `initialize`'s params for a workspace at `root_uri`.
pub fn initialize(root_uri: &str, name: &str, options: Option<&Value>) -> Value {
    let mut v = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "ferroclaw"},
        "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": name}],
        "capabilities": {
            "textDocument": {
                "hover": {"contentFormat": ["plaintext", "markdown"]},
                "definition": {},
                "references": {},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                "rename": {"prepareSupport": false},
                "publishDiagnostics": {"relatedInformation": false},
                "synchronization": {"didSave": false}
            },
            "workspace": {"symbol": {}, "configuration": true, "workspaceFolders": true}
        }
    });
    if let Some(o) = options {
        v["initializationOptions"] = o.clone();
    }
    v
}

pub fn did_open(uri: &str, language: &str, version: i64, text: &str) -> Value {
    json!({"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}})
}

pub fn did_change(uri: &str, version: i64, text: &str) -> Value {
    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})
}

pub fn position(uri: &str, line: u64, character: u64) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

pub fn references(uri: &str, line: u64, character: u64, declaration: bool) -> Value {
    let mut v = position(uri, line, character);
    v["context"] = json!({"includeDeclaration": declaration});
    v
}

pub fn rename(uri: &str, line: u64, character: u64, new_name: &str) -> Value {
    let mut v = position(uri, line, character);
    v["newName"] = json!(new_name);
    v
}

pub fn document(uri: &str) -> Value {
    json!({"textDocument": {"uri": uri}})
}

pub fn query(q: &str) -> Value {
    json!({"query": q})
}

pub fn cancel(id: i64) -> Value {
    json!({"id": id})
}
