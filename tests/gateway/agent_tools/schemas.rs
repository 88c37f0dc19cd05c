//! Each of ferroclaw's tools that OpenClaw also has is compared with
//! OpenClaw's own schema (`tests/fixtures/openclaw-tools.json`, printed
//! from the installed package by `tests/interop/tool_schemas.mjs`): every
//! property ferroclaw declares is one OpenClaw declares, with a type it
//! accepts, nested objects included; enums are a subset of OpenClaw's;
//! `required` lists are the same. What ferroclaw leaves out is printed
//! (not an error: an omitted property is one the model cannot call
//! ferroclaw with); where ferroclaw deliberately differs, the table below
//! says so and why.

use std::collections::BTreeSet;

use ferroclaw_actors::tool::ToolExecutor;
use serde_json::Value;

/// (tool, JSON pointer into its parameters, why ferroclaw differs there).
const DIFFERS: &[(&str, &str, &str)] = &[
    (
        "gateway",
        "/properties/action",
        "OpenClaw 2026.9.6 moved config edits to its `openclaw` custodian tool and keeps only update.run here; ferroclaw keeps the config actions its earlier gateway tool had (config.get, config.schema.lookup, config.patch, config.apply, restart, update.status) and updates through the package manager",
    ),
    ("gateway", "/properties/raw", "the config actions' patch text"),
    ("gateway", "/properties/baseHash", "the config actions' optimistic lock"),
    ("gateway", "/properties/path", "config.schema.lookup's path"),
    ("gateway", "/properties/restartDelayMs", "restart's delay"),
    // Tools of earlier issues, written before this fixture; aligning them
    // is left to a later issue (the closing note of issue 50 says so).
    ("nodes", "/properties/action", "ferroclaw's `run` (a command on a node); OpenClaw runs one through invoke system.run"),
    ("nodes", "/properties/command", "ferroclaw's `run` argv"),
    ("nodes", "/properties/commandTimeoutMs", "ferroclaw's `run` timeout"),
    ("nodes", "/properties/invokeParams", "an object where OpenClaw takes invokeParamsJson text"),
    ("nodes", "/properties/params", "notify's extra fields"),
    ("sessions_send", "/required", "ferroclaw needs sessionKey: it does not resolve labels or agent ids to sessions"),
    ("sessions_spawn", "/properties/skills", "ferroclaw's per-sub-agent skill filter"),
    ("subagents", "/required", "ferroclaw's subagents acts on sub-agent sessions (list, steer, kill); OpenClaw 2026.9.6's on background tasks (list, wait, cancel)"),
    ("subagents", "/properties/action", "as above"),
    ("subagents", "/properties/target", "as above"),
    ("subagents", "/properties/message", "as above"),
];

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openclaw-tools.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn differs(tool: &str, at: &str) -> bool {
    DIFFERS.iter().any(|(t, p, _)| *t == tool && *p == at)
}

/// The JSON types a schema node accepts (`anyOf` joined; an enum without a
/// type is of its values' types).
fn types(node: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match node.get("type") {
        Some(Value::String(t)) => {
            out.insert(t.clone());
        }
        Some(Value::Array(ts)) => {
            out.extend(ts.iter().filter_map(|t| t.as_str().map(str::to_string)))
        }
        _ => {}
    }
    for alt in node
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(types(alt));
    }
    if out.is_empty() {
        for v in node
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.insert(if v.is_string() { "string" } else { "number" }.into());
        }
        if node.get("const").is_some_and(Value::is_string) {
            out.insert("string".into());
        }
    }
    // An integer is a number OpenClaw accepts.
    if out.contains("number") {
        out.insert("integer".into());
    }
    out
}

fn required(node: &Value) -> BTreeSet<String> {
    node.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect()
}

/// The object schema a node holds (itself, or its `anyOf` object branch).
fn object(node: &Value) -> Option<&Value> {
    if node.get("properties").is_some() {
        return Some(node);
    }
    node.get("anyOf")?
        .as_array()?
        .iter()
        .find(|a| a.get("properties").is_some())
}

/// Compares `ours` with `theirs` at `at`; problems and omissions collected.
fn compare(
    tool: &str,
    at: &str,
    ours: &Value,
    theirs: &Value,
    problems: &mut Vec<String>,
    omitted: &mut Vec<String>,
) {
    if differs(tool, at) {
        return;
    }
    let (ot, tt) = (types(ours), types(theirs));
    if !ot.is_empty() && !tt.is_empty() && !ot.is_subset(&tt) {
        problems.push(format!("{tool}{at}: type {ot:?}, OpenClaw's {tt:?}"));
    }
    if let (Some(oe), Some(te)) = (
        ours.get("enum"),
        theirs.get("enum").or_else(|| {
            theirs
                .get("anyOf")?
                .as_array()?
                .iter()
                .find_map(|a| a.get("enum"))
        }),
    ) {
        let te: Vec<&Value> = te.as_array().unwrap().iter().collect();
        for v in oe.as_array().unwrap() {
            if !te.contains(&v) {
                problems.push(format!("{tool}{at}: enum value {v} is not OpenClaw's"));
            }
        }
    }
    let (Some(oo), Some(to)) = (object(ours), object(theirs)) else {
        return;
    };
    if at.is_empty() && !differs(tool, "/required") && required(oo) != required(to) {
        problems.push(format!(
            "{tool}: required {:?}, OpenClaw's {:?}",
            required(oo),
            required(to)
        ));
    }
    let theirs_props = to["properties"].as_object().unwrap();
    for (name, node) in oo["properties"].as_object().unwrap() {
        let here = format!("{at}/properties/{name}");
        match theirs_props.get(name) {
            Some(t) => compare(tool, &here, node, t, problems, omitted),
            None if differs(tool, &here) => {}
            None => problems.push(format!("{tool}{here}: OpenClaw has no such property")),
        }
    }
    for name in theirs_props.keys() {
        if !oo["properties"].as_object().unwrap().contains_key(name) {
            omitted.push(format!("{tool}{at}/properties/{name}"));
        }
    }
}

#[test]
fn each_shared_tool_takes_openclaws_parameters() {
    let fx = fixture();
    let theirs = fx["tools"].as_object().unwrap();
    let ours = ToolExecutor::specs();
    let mut problems = Vec::new();
    let mut omitted = Vec::new();
    let mut compared = Vec::new();
    for spec in &ours {
        let Some(t) = theirs.get(&spec.name) else {
            continue;
        };
        compared.push(spec.name.clone());
        compare(
            &spec.name,
            "",
            &spec.parameters,
            &t["parameters"],
            &mut problems,
            &mut omitted,
        );
    }
    println!("compared with OpenClaw {}: {compared:?}", fx["openclaw"]);
    println!(
        "OpenClaw's properties ferroclaw does not take ({}):",
        omitted.len()
    );
    for o in &omitted {
        println!("  {o}");
    }
    assert!(
        problems.is_empty(),
        "schemas differ from OpenClaw's:\n{}",
        problems.join("\n")
    );
    // The agent's own tools this issue brought are all compared.
    for name in [
        "automations",
        "message",
        "web_search",
        "sessions_history",
        "sessions_search",
        "agents_list",
    ] {
        assert!(compared.iter().any(|c| c == name), "{name} not compared");
    }
}

#[test]
fn openclaws_names_and_aliases_reach_the_same_tools() {
    use ferroclaw_actors::tool::policy::normalize_name;
    let offered = ["automations", "message", "exec"];
    // `cron` is OpenClaw's permanent alias of the scheduler tool.
    assert_eq!(
        normalize_name("cron", "c1", &offered).unwrap(),
        "automations"
    );
    assert_eq!(
        normalize_name("functions.cron", "c1", &offered).unwrap(),
        "automations"
    );
    assert_eq!(
        normalize_name("automations", "c1", &offered).unwrap(),
        "automations"
    );
}
