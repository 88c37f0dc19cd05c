//! `config.schema.lookup`: one config path's schema and its immediate
//! children, as OpenClaw's `lookupConfigSchema` answers it (the Control UI
//! asks it for a plugin's config form; the agent's `gateway` tool for one
//! section). Paths are dotted; `[n]`/`[]`/`[*]` index arrays, `*` is any map
//! key or item; `.` is the root. The schema is the inlined one
//! (`schema::inlined`), stripped to its describing keys: defaults and
//! examples never leave (no value of the config is in a schema anyway).

use serde_json::{json, Map, Value};

/// OpenClaw's bound on a lookup path's segments.
const MAX_SEGMENTS: usize = 32;
/// How deep nested forms are kept in the answer (OpenClaw's).
const NESTED_FORM_DEPTH: usize = 4;
const STRING_KEYS: &[&str] = &["title", "description", "format", "pattern"];
const NUMBER_KEYS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
];
const BOOL_KEYS: &[&str] = &[
    "additionalProperties",
    "uniqueItems",
    "deprecated",
    "readOnly",
    "writeOnly",
];
const COMPOSITION: &[&str] = &["anyOf", "oneOf", "allOf"];

/// `path` with array indexes as segments, no empty segment.
fn segments(path: &str) -> Vec<String> {
    let mut flat = String::new();
    let mut rest = path.trim();
    while let Some(open) = rest.find('[') {
        flat.push_str(&rest[..open]);
        let Some(close) = rest[open..].find(']') else {
            flat.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &rest[open + 1..open + close];
        flat.push('.');
        flat.push_str(if inner.is_empty() { "*" } else { inner });
        rest = &rest[open + close + 1..];
    }
    flat.push_str(rest);
    flat.split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The schema of `segment` under `node`: a property, an item, a variant's,
/// or any key of a map.
fn child<'a>(node: &'a Value, segment: &str) -> Option<&'a Value> {
    if matches!(segment, "__proto__" | "prototype" | "constructor") {
        return None;
    }
    if let Some(p) = node.get("properties").and_then(|p| p.get(segment)) {
        return Some(p);
    }
    let index = segment.parse::<usize>().ok();
    if segment == "*" || index.is_some() {
        if let Some(items) = node.get("items").filter(|i| i.is_object()) {
            return Some(items);
        }
    }
    for key in COMPOSITION {
        let variants = node.get(*key).and_then(Value::as_array);
        if let Some(found) = variants
            .into_iter()
            .flatten()
            .find_map(|v| child(v, segment))
        {
            return Some(found);
        }
    }
    node.get("additionalProperties").filter(|a| a.is_object())
}

fn has_children(node: &Value) -> bool {
    let props = node
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let map = node
        .get("additionalProperties")
        .is_some_and(Value::is_object);
    let items = node.get("items").is_some_and(Value::is_object);
    let variants = COMPOSITION.iter().any(|k| {
        node.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(has_children))
    });
    props || map || items || variants
}

fn scalar(v: &Value) -> bool {
    !v.is_object() && !v.is_array()
}

/// The node's describing keys; nested forms to OpenClaw's depth.
fn strip(node: &Value, depth: usize) -> Value {
    let Some(o) = node.as_object() else {
        return node.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        let keep = (STRING_KEYS.contains(&k.as_str()) && v.is_string())
            || (NUMBER_KEYS.contains(&k.as_str()) && v.is_number())
            || (BOOL_KEYS.contains(&k.as_str()) && v.is_boolean())
            || (k == "type" && (v.is_string() || v.is_array()))
            || (k == "enum" && v.as_array().is_some_and(|e| e.iter().all(scalar)))
            || (k == "const" && scalar(v));
        if keep {
            out.insert(k.clone(), v.clone());
        }
    }
    let nested = (1..=NESTED_FORM_DEPTH).contains(&depth);
    if let Some(props) = o
        .get("properties")
        .and_then(Value::as_object)
        .filter(|_| nested)
    {
        let kept = props.iter().map(|(k, v)| (k.clone(), strip(v, depth + 1)));
        out.insert("properties".into(), Value::Object(kept.collect()));
    }
    if let Some(a) = o.get("additionalProperties").filter(|a| a.is_object()) {
        out.insert("additionalProperties".into(), strip(a, depth + 1));
    }
    if let Some(i) = o.get("items").filter(|i| i.is_object()) {
        out.insert("items".into(), strip(i, depth + 1));
    }
    for key in COMPOSITION.iter().filter(|_| depth <= NESTED_FORM_DEPTH) {
        if let Some(v) = o.get(*key).and_then(Value::as_array) {
            out.insert(
                key.to_string(),
                v.iter().map(|v| strip(v, depth + 1)).collect(),
            );
        }
    }
    Value::Object(out)
}

/// The properties of `node` and of every schema it is `allOf` (all apply:
/// their keys are its keys), first definition of a key kept.
fn all_properties<'a>(node: &'a Value, out: &mut Vec<(&'a String, &'a Value, bool)>) {
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (k, v) in node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !out.iter().any(|(seen, _, _)| *seen == k) {
            out.push((k, v, required.contains(&k.as_str())));
        }
    }
    for part in node
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        all_properties(part, out);
    }
}

/// The node's immediate children (its properties, its `allOf` parts',
/// then `*` for a map's keys or an array's items).
fn children(node: &Value, path: &str) -> Vec<Value> {
    let entry = |key: &str, schema: &Value, required: bool| {
        let path = match path {
            "" => key.to_string(),
            p => format!("{p}.{key}"),
        };
        let mut c = json!({ "key": key, "path": path, "required": required,
            "hasChildren": has_children(schema) });
        if let Some(t) = schema.get("type").filter(|t| t.is_string() || t.is_array()) {
            c["type"] = t.clone();
        }
        c
    };
    let mut props = Vec::new();
    all_properties(node, &mut props);
    props.sort_by(|a, b| a.0.cmp(b.0));
    let mut out: Vec<Value> = props.into_iter().map(|(k, v, r)| entry(k, v, r)).collect();
    let any = node
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .or_else(|| node.get("items").filter(|i| i.is_object()));
    if let Some(any) = any {
        out.push(entry("*", any, false));
    }
    out
}

/// OpenClaw's `ConfigSchemaLookupResult` for `path` in `schema` (None: no
/// such path).
pub fn lookup_in(schema: &Value, path: &str) -> Option<Value> {
    let root = path.trim() == ".";
    let parts = segments(path);
    if (parts.is_empty() && !root) || parts.len() > MAX_SEGMENTS {
        return None;
    }
    let mut node = schema;
    for part in &parts {
        node = child(node, part)?;
    }
    let normalized = parts.join(".");
    let shown = if root { "." } else { normalized.as_str() };
    Some(json!({
        "path": shown,
        "schema": strip(node, 0),
        "children": children(node, &normalized),
    }))
}

/// `lookup_in` over the config's schema.
pub fn lookup(path: &str) -> Option<Value> {
    lookup_in(super::schema::inlined(), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_finds_its_node_and_its_children_through_maps_arrays_and_variants() {
        let s = json!({ "type": "object", "properties": {
            "a": { "type": "object", "required": ["x"], "description": "A",
                "properties": { "x": { "type": "string", "default": "kept out" },
                    "m": { "type": "object", "additionalProperties": { "type": "object",
                        "properties": { "y": { "type": "number" } } } } } },
            "l": { "type": "array", "items": { "type": "string", "enum": ["p", "q"] } },
            "v": { "allOf": [ { "properties": { "w": { "type": "boolean" } } } ] },
        } });
        let a = lookup_in(&s, "a").unwrap();
        assert_eq!(a["path"], "a");
        assert_eq!(a["schema"], json!({ "type": "object", "description": "A" }));
        assert_eq!(a["children"][0]["key"], "m");
        assert_eq!(
            a["children"][1],
            json!({ "key": "x", "path": "a.x", "required": true,
            "hasChildren": false, "type": "string" })
        );
        let y = lookup_in(&s, "a.m.anything.y").unwrap();
        assert_eq!(y["schema"], json!({ "type": "number" }));
        let item = lookup_in(&s, "l[0]").unwrap();
        assert_eq!(
            (item["path"].as_str(), &item["schema"]["enum"]),
            (Some("l.0"), &json!(["p", "q"]))
        );
        assert_eq!(lookup_in(&s, "l[]").unwrap()["path"], "l.*");
        assert_eq!(lookup_in(&s, "v.w").unwrap()["schema"]["type"], "boolean");
        assert_eq!(lookup_in(&s, ".").unwrap()["path"], ".");
        assert!(lookup_in(&s, "a.nope").is_none());
        assert!(lookup_in(&s, "__proto__").is_none());
        assert!(lookup_in(&s, "").is_none());
        assert!(!lookup(".").unwrap()["children"]
            .as_array()
            .unwrap()
            .is_empty());
        assert!(lookup("gateway.auth.token").is_some());
    }
}
