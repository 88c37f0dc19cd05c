//! A page's accessibility tree as the model reads it, in OpenClaw's two
//! formats. `ai` (the default): one line per element, indented by depth,
//! `- role "name" [attributes] [ref=e12]`, the way Playwright's AI snapshot
//! writes it; `aria`: the same nodes as JSON with `ax12` refs. Both name
//! elements with refs from one counter per tab (`Refs`): an element keeps
//! its ref across snapshots of the same document (refs start again after a
//! navigation), so `e12` and `ax12` are the same element and an action can
//! use either. After the first snapshot of a document, elements that were
//! not in the previous one are marked `[new]`. Options: `interactive`
//! (controls only, flat), `compact` (no unnamed structure), `depth`,
//! `query` (lines holding every token), `maxChars` (cut at a line).

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

/// Roles a user acts on.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "treeitem",
    "textarea",
    "ComboBoxSelect",
    "MenuListOption",
];

/// Roles that only hold others: their children take their place.
const TRANSPARENT: &[&str] = &[
    "none",
    "generic",
    "GenericContainer",
    "InlineTextBox",
    "LineBreak",
    "Ignored",
    "presentation",
    "RootWebArea",
    "WebArea",
];

/// Boolean properties shown as `[name]` when true.
const FLAGS: &[&str] = &[
    "checked", "disabled", "expanded", "selected", "pressed", "required", "focused",
];

/// One element of the tree as a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub depth: usize,
    pub role: String,
    pub name: String,
    pub value: Option<String>,
    pub attrs: Vec<String>,
    pub node: Option<i64>,
    pub url: Option<String>,
}

/// A tab's refs: backend node id <-> number, for the current document.
#[derive(Debug, Default)]
pub struct Refs {
    by_node: HashMap<i64, u32>,
    by_ref: HashMap<u32, i64>,
    next: u32,
    /// The refs of the last snapshot (None: none since the navigation).
    last: Option<HashSet<u32>>,
}

impl Refs {
    /// A new document: refs start again.
    pub fn reset(&mut self) {
        *self = Refs::default();
    }

    fn assign(&mut self, node: i64) -> u32 {
        if let Some(r) = self.by_node.get(&node) {
            return *r;
        }
        self.next += 1;
        self.by_node.insert(node, self.next);
        self.by_ref.insert(self.next, node);
        self.next
    }

    /// The element a ref (`e12`, `ax12`, `12`) names.
    pub fn node(&self, r: &str) -> Option<i64> {
        let n = r.trim().trim_start_matches("ax").trim_start_matches('e');
        self.by_ref.get(&n.parse().ok()?).copied()
    }

    pub fn len(&self) -> usize {
        self.by_ref.len()
    }

    /// The refs the last snapshot showed, with their elements, in order.
    pub fn last_shown(&self) -> Vec<(u32, i64)> {
        let mut out: Vec<(u32, i64)> = self
            .last
            .iter()
            .flatten()
            .filter_map(|r| Some((*r, *self.by_ref.get(r)?)))
            .collect();
        out.sort_unstable();
        out
    }

    pub fn is_empty(&self) -> bool {
        self.by_ref.is_empty()
    }
}

fn text_of(v: &Value) -> String {
    match &v["value"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The properties shown, and a link's URL.
fn attributes(node: &Value) -> (Vec<String>, Option<String>) {
    let mut attrs = Vec::new();
    let mut url = None;
    for p in node["properties"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or_default();
        let value = &p["value"]["value"];
        match name {
            "level" => attrs.push(format!("level={}", text_of(&p["value"]))),
            "url" => url = value.as_str().map(str::to_string),
            "checked" | "pressed" if value.as_str() == Some("mixed") => {
                attrs.push(format!("{name}=mixed"))
            }
            n if FLAGS.contains(&n)
                && (value == &json!(true) || value.as_str() == Some("true")) =>
            {
                attrs.push(n.to_string())
            }
            _ => {}
        }
    }
    (attrs, url)
}

/// The tree flattened in document order (ignored and wrapper nodes are
/// transparent: their children take their depth).
pub fn flatten(nodes: &[Value]) -> Vec<Line> {
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|n| Some((n["nodeId"].as_str()?, n)))
        .collect();
    let mut out = Vec::new();
    // The roots: nodes without a parent in this tree. Each with its depth
    // and the name of the nearest element shown above it (a text that only
    // repeats it, a button's label, is not a line of its own).
    let mut stack: Vec<(&Value, usize, String)> = nodes
        .iter()
        .filter(|n| {
            n["parentId"]
                .as_str()
                .is_none_or(|p| !by_id.contains_key(p))
        })
        .rev()
        .map(|n| (n, 0, String::new()))
        .collect();
    while let Some((node, depth, above)) = stack.pop() {
        let role = text_of(&node["role"]);
        let name = text_of(&node["name"]);
        let ignored = node["ignored"].as_bool().unwrap_or(false);
        let blank_text =
            role == "StaticText" && (name.trim().is_empty() || name.trim() == above.trim());
        let shown = !(ignored || TRANSPARENT.contains(&role.as_str()) || blank_text);
        let below = if shown { depth + 1 } else { depth };
        let above = if shown { name.clone() } else { above };
        if shown {
            let (attrs, url) = attributes(node);
            let value = Some(text_of(&node["value"])).filter(|v| !v.is_empty());
            out.push(Line {
                depth,
                role: if role == "StaticText" {
                    "text".into()
                } else {
                    role
                },
                name,
                value,
                attrs,
                node: node["backendDOMNodeId"].as_i64(),
                url,
            });
        }
        let children = node["childIds"].as_array().into_iter().flatten().rev();
        for c in children.filter_map(|c| by_id.get(c.as_str()?)) {
            stack.push((c, below, above.clone()));
        }
    }
    out
}

/// The nodes of the element `root` (a backend DOM node id) and those
/// under it; `flatten` takes it as the only root. Empty when no node of
/// the tree is that element.
pub fn subtree(nodes: &[Value], root: i64) -> Vec<Value> {
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|n| Some((n["nodeId"].as_str()?, n)))
        .collect();
    let top = nodes
        .iter()
        .find(|n| n["backendDOMNodeId"].as_i64() == Some(root));
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = top.into_iter().collect();
    while let Some(n) = stack.pop() {
        out.push(n.clone());
        let children = n["childIds"].as_array().into_iter().flatten();
        stack.extend(children.filter_map(|c| by_id.get(c.as_str()?).copied()));
    }
    if let Some(first) = out.first_mut() {
        // Its parent is not in this tree: it is the root.
        first["parentId"] = Value::Null;
    }
    out
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub aria: bool,
    pub interactive: bool,
    pub compact: bool,
    pub depth: Option<usize>,
    pub query: Option<String>,
    pub max_chars: usize,
    pub urls: bool,
}

/// A rendered snapshot and its counts (OpenClaw's `stats`).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub text: String,
    pub lines: usize,
    pub refs: usize,
    pub interactive: usize,
    pub new_elements: usize,
    pub truncated: bool,
    pub matches: Option<usize>,
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn ai_line(l: &Line, r: Option<u32>, indent: usize, new: bool, urls: bool) -> String {
    let mut s = format!("{}- {}", "  ".repeat(indent), l.role);
    if !l.name.is_empty() && l.role != "text" {
        s.push(' ');
        s.push_str(&quoted(&l.name));
    }
    for a in &l.attrs {
        s.push_str(&format!(" [{a}]"));
    }
    if let Some(r) = r {
        s.push_str(&format!(" [ref=e{r}]"));
    }
    if new {
        s.push_str(" [new]");
    }
    if l.role == "text" {
        s.push_str(&format!(": {}", l.name));
    } else if let Some(v) = &l.value {
        s.push_str(&format!(": {v}"));
    }
    if let (true, Some(u)) = (urls, &l.url) {
        s.push_str(&format!("\n{}  - /url: {u}", "  ".repeat(indent)));
    }
    s
}

/// The lines kept by the options, each with its ref.
fn kept(lines: &[Line], refs: &mut Refs, o: &Options) -> Vec<(Line, Option<u32>)> {
    lines
        .iter()
        .filter(|l| o.depth.is_none_or(|d| l.depth <= d))
        .filter(|l| !o.interactive || INTERACTIVE.contains(&l.role.as_str()))
        .filter(|l| !o.compact || !l.name.is_empty() || INTERACTIVE.contains(&l.role.as_str()))
        .map(|l| {
            let r = (l.role != "text")
                .then_some(l.node)
                .flatten()
                .map(|n| refs.assign(n));
            (l.clone(), r)
        })
        .collect()
}

/// Renders `lines` with `refs` (assigning new ones) under the options.
pub fn render(lines: &[Line], refs: &mut Refs, o: &Options) -> Snapshot {
    let rows = kept(lines, refs, o);
    let previous = refs.last.take();
    let seen: HashSet<u32> = rows.iter().filter_map(|(_, r)| *r).collect();
    let is_new = |r: Option<u32>| match (&previous, r) {
        (Some(p), Some(r)) => !p.contains(&r),
        _ => false,
    };
    let new_elements = rows.iter().filter(|(_, r)| is_new(*r)).count();
    refs.last = Some(seen.clone());
    let mut texts: Vec<String> = rows
        .iter()
        .map(|(l, r)| {
            if o.aria {
                json!({ "ref": r.map(|r| format!("ax{r}")), "role": l.role, "name": l.name,
                        "value": l.value, "depth": l.depth, "attributes": l.attrs })
                .to_string()
            } else {
                let indent = if o.interactive { 0 } else { l.depth };
                ai_line(l, *r, indent, is_new(*r), o.urls)
            }
        })
        .collect();
    let mut matches = None;
    if let Some(q) = o.query.as_deref().filter(|q| !q.trim().is_empty()) {
        let tokens: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
        texts.retain(|t| {
            let t = t.to_lowercase();
            tokens.iter().all(|k| t.contains(k))
        });
        matches = Some(texts.len());
    }
    let (text, truncated) = cut(&texts, o.max_chars);
    Snapshot {
        lines: texts.len(),
        refs: seen.len(),
        interactive: rows
            .iter()
            .filter(|(l, _)| INTERACTIVE.contains(&l.role.as_str()))
            .count(),
        new_elements,
        truncated,
        matches,
        text,
    }
}

/// The lines joined, cut at the last whole line within `max` characters.
fn cut(lines: &[String], max: usize) -> (String, bool) {
    let mut out = String::new();
    let mut chars = 0;
    for l in lines {
        chars += l.chars().count() + 1;
        if chars > max {
            out.push_str("[... truncated: use query, interactive, depth or a larger maxChars]");
            return (out, true);
        }
        out.push_str(l);
        out.push('\n');
    }
    (out, false)
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
