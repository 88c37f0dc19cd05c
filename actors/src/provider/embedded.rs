//! Tool calls that models (Qwen-style, served by vLLM/Ollama) write into the
//! content instead of native `tool_calls` (seed 003), in three formats:
//! `<tools>` tags with one JSON object per line, the whole content as one
//! JSON object, or one JSON object per line. Objects with a `name` become
//! tool calls; everything else stays text.

use serde_json::{Map, Value};

/// A tool call found in content: name and arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedCall {
    pub name: String,
    pub arguments: Value,
}

/// `{"name": .., "arguments"|"parameters": ..}` -> a call. String arguments
/// holding JSON are decoded; missing arguments are `{}`.
fn as_call(v: &Value) -> Option<EmbeddedCall> {
    let obj = v.as_object()?;
    let name = obj.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let args = obj
        .get("arguments")
        .or_else(|| obj.get("parameters"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let arguments = match args {
        Value::String(s) => serde_json::from_str::<Value>(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    Some(EmbeddedCall {
        name: name.to_string(),
        arguments,
    })
}

fn parse_line(line: &str) -> Option<EmbeddedCall> {
    let t = line.trim();
    if !t.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(t)
        .ok()
        .as_ref()
        .and_then(as_call)
}

/// Splits content into the text that remains and the calls found in it.
pub fn extract_tool_calls(content: &str) -> (String, Vec<EmbeddedCall>) {
    let mut calls = Vec::new();
    let mut text = String::new();
    // 1. <tools> ... </tools> blocks.
    let mut rest = content;
    let mut found_tags = false;
    while let Some(start) = rest.find("<tools>") {
        let Some(len) = rest[start + 7..].find("</tools>") else {
            break;
        };
        found_tags = true;
        text.push_str(&rest[..start]);
        let inner = &rest[start + 7..start + 7 + len];
        match serde_json::from_str::<Value>(inner.trim())
            .ok()
            .as_ref()
            .and_then(as_call)
        {
            Some(c) => calls.push(c),
            None => calls.extend(inner.lines().filter_map(parse_line)),
        }
        rest = &rest[start + 7 + len + 8..];
    }
    if found_tags {
        text.push_str(rest);
        return (text.trim().to_string(), calls);
    }
    // 2. The whole content is one JSON object.
    if let Some(c) = serde_json::from_str::<Value>(content.trim())
        .ok()
        .as_ref()
        .and_then(as_call)
    {
        return (String::new(), vec![c]);
    }
    // 3. One JSON object per line; other lines stay text.
    let mut kept = Vec::new();
    for line in content.lines() {
        match parse_line(line) {
            Some(c) => calls.push(c),
            None => kept.push(line),
        }
    }
    if calls.is_empty() {
        return (content.to_string(), calls);
    }
    (kept.join("\n").trim().to_string(), calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> EmbeddedCall {
        EmbeddedCall {
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn the_three_formats_of_seed_003_are_recognised() {
        let check = |content: &str, want_text: &str, want: Vec<EmbeddedCall>| {
            let (text, calls) = extract_tool_calls(content);
            assert_eq!(text, want_text, "{content:?}");
            assert_eq!(calls, want, "{content:?}");
        };
        check(
            "Reading it.\n<tools>\n{\"name\": \"read\", \"arguments\": {\"path\": \"/tmp/test.txt\"}}\n</tools>",
            "Reading it.",
            vec![call("read", json!({"path": "/tmp/test.txt"}))],
        );
        check(
            "{\"name\": \"exec\", \"arguments\": {\"command\": \"ls -la\"}}",
            "",
            vec![call("exec", json!({"command": "ls -la"}))],
        );
        check(
            "{\"name\": \"write\", \"arguments\": {\"path\": \"/tmp/a.txt\", \"content\": \"hello\"}}\n{\"name\": \"write\", \"arguments\": {\"path\": \"/tmp/b.txt\", \"content\": \"world\"}}",
            "",
            vec![
                call("write", json!({"path": "/tmp/a.txt", "content": "hello"})),
                call("write", json!({"path": "/tmp/b.txt", "content": "world"})),
            ],
        );
        check(
            "I will run it:\n{\"name\": \"exec\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}\nDone soon.",
            "I will run it:\nDone soon.",
            vec![call("exec", json!({"command": "pwd"}))],
        );
    }

    #[test]
    fn ordinary_text_and_json_without_a_name_are_left_alone() {
        for content in [
            "just text",
            "{\"answer\": 42}",
            "{not json",
            "<tools>unclosed",
            "",
        ] {
            let (text, calls) = extract_tool_calls(content);
            assert!(calls.is_empty(), "{content:?}");
            assert_eq!(text, content);
        }
    }
}
