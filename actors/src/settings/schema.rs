//! The config's JSON Schema as clients read it (`config.schema`): every
//! `$ref` replaced by the definition it names, no `$defs`. OpenClaw's
//! Control UI builds its settings forms from the schema and renders a node
//! it cannot read (a `$ref` among them) as "Unsupported schema node. Use
//! Raw mode.": inlined, each section is a form. A choice among named values
//! (an enum whose variants carry docs: `oneOf` of `const`s) is one `enum`,
//! as the form draws it; `tests/gateway/config_form.rs` runs the UI's own
//! analyzer over the result.

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
        collapse_choices(&mut out);
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

/// Each `oneOf`/`anyOf` whose alternatives are all named values (`const`,
/// `enum` of scalars) made one `enum` of them (with their common `type`),
/// innermost first; the node's own keys (a description, a default) stay.
fn collapse_choices(node: &mut Value) {
    match node {
        Value::Array(items) => items.iter_mut().for_each(collapse_choices),
        Value::Object(o) => {
            o.values_mut().for_each(collapse_choices);
            flatten_any_of(o);
            for key in ["oneOf", "anyOf"] {
                let Some(values) = o.get(key).and_then(named_values) else {
                    continue;
                };
                let (values, kind) = values;
                o.remove(key);
                o.insert("enum".into(), Value::Array(values));
                if let Some(t) = kind {
                    o.entry("type").or_insert(Value::String(t));
                }
            }
        }
        _ => {}
    }
}

/// An `anyOf` alternative that is only an `anyOf` itself (an `Option` of
/// an untagged enum: `[[string, object], null]`) spliced into its parent,
/// its description kept there; the form draws one level of choices.
fn flatten_any_of(o: &mut serde_json::Map<String, Value>) {
    let Some(Value::Array(alts)) = o.get("anyOf") else {
        return;
    };
    let only_choice = |a: &Value| {
        a.as_object().is_some_and(|a| {
            a.contains_key("anyOf")
                && a.keys()
                    .all(|k| matches!(k.as_str(), "anyOf" | "description" | "title"))
        })
    };
    if !alts.iter().any(only_choice) {
        return;
    }
    let mut flat = Vec::new();
    let mut description = None;
    for alt in alts {
        match alt.get("anyOf").and_then(Value::as_array) {
            Some(inner) if only_choice(alt) => {
                flat.extend(inner.iter().cloned());
                description = description.or_else(|| alt.get("description").cloned());
            }
            _ => flat.push(alt.clone()),
        }
    }
    o.insert("anyOf".into(), Value::Array(flat));
    if let Some(d) = description {
        o.entry("description").or_insert(d);
    }
}

/// The values of alternatives that are all named values, and their type
/// when they share one; None when any alternative is more than a value.
fn named_values(alts: &Value) -> Option<(Vec<Value>, Option<String>)> {
    let alts = alts.as_array().filter(|a| !a.is_empty())?;
    let mut values = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for alt in alts {
        let alt = alt.as_object()?;
        let shape = [
            "properties",
            "items",
            "oneOf",
            "anyOf",
            "allOf",
            "additionalProperties",
        ];
        if shape.iter().any(|k| alt.contains_key(*k)) {
            return None;
        }
        match (alt.get("const"), alt.get("enum").and_then(Value::as_array)) {
            (Some(c), _) => values.push(c.clone()),
            (None, Some(e)) => values.extend(e.iter().cloned()),
            (None, None) => return None,
        }
        kinds.insert(alt.get("type").and_then(Value::as_str).map(str::to_string));
    }
    let scalar = values
        .iter()
        .all(|v| !v.is_object() && !v.is_array() && !v.is_null());
    let kind = match (kinds.len(), kinds.into_iter().next()) {
        (1, Some(k)) => k,
        _ => None,
    };
    scalar.then_some((values, kind))
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

    #[test]
    fn a_choice_of_named_values_is_one_enum_and_anything_more_is_kept() {
        let mut v = serde_json::json!({ "anyOf": [
            { "description": "policy", "oneOf": [
                { "enum": ["open", "disabled"], "type": "string" },
                { "const": "allowlist", "description": "listed", "type": "string" } ] },
            { "type": "null" } ] });
        collapse_choices(&mut v);
        assert_eq!(
            v["anyOf"][0],
            serde_json::json!({ "description": "policy", "type": "string",
                "enum": ["open", "disabled", "allowlist"] })
        );
        assert_eq!(v["anyOf"][1], serde_json::json!({ "type": "null" }));
        let mut mixed =
            serde_json::json!({ "oneOf": [{ "const": "auto" }, { "type": "boolean" }] });
        let before = mixed.clone();
        collapse_choices(&mut mixed);
        assert_eq!(mixed, before);
        let mut model = serde_json::json!({ "anyOf": [
            { "description": "a ref or an object", "anyOf": [{ "type": "string" }, { "type": "object" }] },
            { "type": "null" } ] });
        collapse_choices(&mut model);
        assert_eq!(
            model,
            serde_json::json!({ "description": "a ref or an object", "anyOf": [
                { "type": "string" }, { "type": "object" }, { "type": "null" } ] })
        );
    }
}
