//! The config's JSON Schema as clients read it (`config.schema`): every
//! `$ref` replaced by the definition it names, no `$defs`. OpenClaw's
//! Control UI builds its settings forms from the schema and renders a node
//! it cannot read (a `$ref` among them) as "Unsupported schema node. Use
//! Raw mode.": inlined, each section is a form.

use serde_json::{Map, Value};

/// `json_schema()` with its references inlined, built once.
pub fn inlined() -> &'static Value {
    static INLINED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    INLINED.get_or_init(|| {
        let schema = super::json_schema();
        let defs = schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut out = inline(schema, &defs, &mut Vec::new());
        if let Some(o) = out.as_object_mut() {
            o.remove("$defs");
        }
        out
    })
}

/// `node` with each `$ref` to `#/$defs/<name>` replaced by that definition
/// (the referring node's own keys, a description, win). A definition
/// inside itself is left a reference (the settings have none).
fn inline(node: &Value, defs: &Map<String, Value>, within: &mut Vec<String>) -> Value {
    match node {
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline(v, defs, within)).collect())
        }
        Value::Object(o) => {
            let name = o
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"));
            if let Some(def) = name
                .filter(|n| !within.iter().any(|w| w == n))
                .and_then(|n| defs.get(n))
            {
                within.push(name.unwrap_or_default().to_string());
                let mut merged = match inline(def, defs, within) {
                    Value::Object(d) => d,
                    other => return other,
                };
                within.pop();
                for (k, v) in o.iter().filter(|(k, _)| *k != "$ref") {
                    merged.insert(k.clone(), inline(v, defs, within));
                }
                return Value::Object(merged);
            }
            Value::Object(
                o.iter()
                    .filter(|(k, _)| *k != "$defs")
                    .map(|(k, v)| (k.clone(), inline(v, defs, within)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &Value) -> usize {
        match v {
            Value::Object(o) => {
                o.contains_key("$ref") as usize + o.values().map(refs).sum::<usize>()
            }
            Value::Array(a) => a.iter().map(refs).sum(),
            _ => 0,
        }
    }

    #[test]
    fn the_inlined_schema_has_no_reference_left_and_keeps_every_section() {
        let raw = crate::settings::json_schema();
        assert!(refs(raw) > 0, "the generated schema refers to definitions");
        let s = inlined();
        assert_eq!(refs(s), 0);
        assert!(s.get("$defs").is_none());
        let sections = |v: &Value| v["properties"].as_object().map(|p| p.len());
        assert_eq!(sections(s), sections(raw));
        // A section is its definition: typed, with its fields.
        assert_eq!(s["properties"]["tts"]["type"], "object");
        assert_eq!(
            s["properties"]["tts"]["properties"]["auto"]["enum"],
            serde_json::json!(["off", "always", "inbound", "tagged"])
        );
    }
}
