//! The files a session's agent wrote, read back from its transcript: each
//! `write`, `edit` and `apply_patch` call whose result was not an error,
//! with the position of the message that made it. The newest write of a
//! path wins. What `artifacts.list` answers from; nothing else is kept.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// A file a tool call wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// As the call named it (relative to the workspace, or absolute).
    pub path: String,
    pub tool: String,
    /// The 1-based position of the assistant message that made the call.
    pub seq: u64,
    /// The tool call's id.
    pub call_id: String,
}

/// The paths an `apply_patch` input adds or updates (`*** Add File: p`,
/// `*** Update File: p`, a move's `*** Move to: p`).
fn patched(input: &str) -> Vec<String> {
    input
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            ["*** Add File:", "*** Update File:", "*** Move to:"]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .map(|p| p.trim().to_string())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// Every file written, newest first, each path once.
pub fn written(entries: &[Value]) -> Vec<Written> {
    // Numbered as `chat.history` numbers them: delivered messages only.
    let messages: Vec<&Value> = entries
        .iter()
        .filter(|e| super::Entry::of(e).is_delivered_message())
        .map(|e| &e["message"])
        .collect();
    let failed: HashSet<&str> = messages
        .iter()
        .filter(|m| m["role"] == "toolResult" && m["isError"] == true)
        .filter_map(|m| m["toolCallId"].as_str())
        .collect();
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .filter_map(|m| m["toolCallId"].as_str())
        .collect();
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let calls = m["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for c in calls.iter().filter(|c| c["type"] == "toolCall") {
            let (Some(id), Some(name)) = (c["id"].as_str(), c["name"].as_str()) else {
                continue;
            };
            if failed.contains(id) || !answered.contains(id) {
                continue;
            }
            let args = &c["arguments"];
            let paths = match name {
                "write" | "edit" => args["path"]
                    .as_str()
                    .map(|p| vec![p.to_string()])
                    .unwrap_or_default(),
                "apply_patch" => patched(args["input"].as_str().unwrap_or_default()),
                _ => Vec::new(),
            };
            for path in paths {
                out.push(Written {
                    path,
                    tool: name.to_string(),
                    seq: i as u64 + 1,
                    call_id: id.to_string(),
                });
            }
        }
    }
    let mut seen = HashMap::new();
    out.reverse();
    out.retain(|w| seen.insert(w.path.clone(), ()).is_none());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(message: Value) -> Value {
        json!({ "type": "message", "id": "x", "message": message })
    }

    fn call(id: &str, name: &str, args: Value) -> Value {
        entry(
            json!({ "role": "assistant", "content": [{ "type": "toolCall", "id": id, "name": name, "arguments": args }] }),
        )
    }

    fn result(id: &str, error: bool) -> Value {
        entry(json!({ "role": "toolResult", "toolCallId": id, "isError": error, "content": [] }))
    }

    #[test]
    fn writes_that_succeeded_newest_first_each_path_once() {
        let patch =
            "*** Begin Patch\n*** Add File: notes/b.md\n+hi\n*** Update File: a.txt\n*** End Patch";
        let entries = vec![
            entry(json!({ "role": "user", "content": [] })),
            call("1", "write", json!({ "path": "a.txt", "content": "x" })),
            result("1", false),
            call(
                "2",
                "write",
                json!({ "path": "refused.txt", "content": "x" }),
            ),
            result("2", true),
            call("3", "apply_patch", json!({ "input": patch })),
            result("3", false),
            call("4", "read", json!({ "path": "c.txt" })),
            result("4", false),
            call("5", "write", json!({ "path": "never-answered.txt" })),
        ];
        let got: Vec<(String, String, u64)> = written(&entries)
            .into_iter()
            .map(|w| (w.path, w.tool, w.seq))
            .collect();
        assert_eq!(
            got,
            [
                ("a.txt".into(), "apply_patch".into(), 6),
                ("notes/b.md".into(), "apply_patch".into(), 6)
            ]
        );
    }
}
