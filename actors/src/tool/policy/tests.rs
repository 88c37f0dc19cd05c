//! Tests of the tool policy: names, layers, the untrusted profile, hooks, results, repair.

use super::*;
use crate::trust::Trust;
use serde_json::json;
use std::sync::Arc;

/// `tools` settings: the defaults of `config/default.json5` under `v`
/// (exec unguarded, no stranger's profile unless `v` gives one).
fn tools(v: Value) -> crate::settings::ToolsSettings {
    let mut t = json!({"exec": {"security": "full", "ask": "off"}, "untrusted": null});
    for (k, x) in v.as_object().unwrap() {
        t[k] = x.clone();
    }
    crate::settings::shipped_with("tools", t)
}

/// An agent's or a channel's `tools` layer.
fn layer(v: Value) -> crate::settings::ToolLayer {
    serde_json::from_value(v).unwrap()
}

/// Whether `tools` with `v` is refused when the settings are read.
fn refused(v: Value) -> bool {
    let mut t = serde_json::to_value(tools(json!({}))).unwrap();
    for (k, x) in v.as_object().unwrap() {
        t[k] = x.clone();
    }
    serde_json::from_value::<crate::settings::ToolsSettings>(t).is_err()
}

const OFFERED: &[&str] = &[
    "exec",
    "read",
    "write",
    "edit",
    "ls",
    "find",
    "grep",
    "web_fetch",
    "process",
];

#[test]
fn mangled_names_are_normalised() {
    for (raw, want) in [
        ("exec", "exec"),
        ("Exec", "exec"),
        ("functions.exec", "exec"),
        ("default_api:read", "read"),
        ("Bash", "exec"),
        ("read_file", "read"),
        ("str_replace_editor", "edit"),
        ("web-fetch", "web_fetch"),
        ("functions.grep:2", "grep"),
        (" ls ", "ls"),
    ] {
        assert_eq!(
            normalize_name(raw, "call_1", OFFERED).as_deref(),
            Ok(want),
            "{raw}"
        );
    }
    assert_eq!(
        normalize_name("", "functions.read:0", OFFERED).as_deref(),
        Ok("read"),
        "inferred from the id"
    );
    assert_eq!(
        normalize_name("", "call_exec_7", OFFERED).as_deref(),
        Ok("exec"),
        "call_<tool>_<n> ids"
    );
    assert_eq!(
        normalize_name("tool", "call_1", OFFERED)
            .unwrap_err()
            .to_string(),
        "Unknown tool \"tool\". Available tools: exec, read, write, edit, ls, find, grep, web_fetch, process."
    );
    assert!(normalize_name("", "call_9", OFFERED)
        .unwrap_err()
        .to_string()
        .starts_with("Tool call without a name"));
    assert!(normalize_name("fly", "call_1", OFFERED).is_err());
    assert!(
        normalize_name("bash", "x", &["read"]).is_err(),
        "an alias of a tool not offered"
    );
}

#[test]
fn allowlists_intersect_and_groups_expand() {
    let all: Vec<ToolSpec> = OFFERED
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            parameters: json!({}),
        })
        .collect();
    let p = ToolPolicy::from_config(
        &tools(json!({"deny": ["web_fetch"]})),
        &[
            (
                "ops".into(),
                Some(layer(json!({"allow": ["group:fs", "exec"]}))),
            ),
            ("main".into(), None),
        ],
        &[(
            "telegram".into(),
            Some(layer(json!({"deny": ["group:runtime"]}))),
        )],
    )
    .unwrap();
    let names = |v: Vec<ToolSpec>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let via = |c: &str| Trust {
        untrusted: false,
        channels: vec![c.to_string()],
    };
    assert_eq!(
        names(p.offered(&all, "main", &via("webchat"), None)),
        ["exec", "read", "write", "edit", "ls", "find", "grep", "process"]
    );
    assert_eq!(
        names(p.offered(&all, "ops", &via("webchat"), None)),
        ["exec", "read", "write", "edit", "ls", "find", "grep"]
    );
    assert_eq!(
        names(p.offered(&all, "ops", &via("telegram"), None)),
        ["read", "write", "edit", "ls", "find", "grep"]
    );
    let run = AllowDeny {
        allow: Some(vec!["read".into()]),
        deny: vec![],
    };
    assert_eq!(
        names(p.offered(&all, "main", &via("webchat"), Some(&run))),
        ["read"]
    );
    // Shared when nothing is left out; a narrower turn gets its own list.
    let shared: Arc<[ToolSpec]> = all
        .iter()
        .filter(|t| t.name != "web_fetch")
        .cloned()
        .collect();
    let main = p.offered_shared(&shared, "main", &via("webchat"), None);
    assert!(
        Arc::ptr_eq(&main, &shared),
        "every tool offered: the same list"
    );
    let ops = p.offered_shared(&shared, "ops", &via("telegram"), None);
    assert_eq!(
        names(ops.to_vec()),
        names(p.offered(&all, "ops", &via("telegram"), None))
    );
    assert!(refused(json!({"allow": "exec"})));
    assert!(ToolPolicy::from_config(&tools(json!({"resultMaxChars": 5})), &[], &[]).is_err());
}

#[test]
fn untrusted_turns_get_the_profile_widened_only_where_the_operator_said() {
    let all: Vec<ToolSpec> = OFFERED
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            parameters: json!({}),
        })
        .collect();
    let p = ToolPolicy::from_config(
        &tools(json!({"untrusted": {"allow": ["read", "exec", "web_fetch"], "deny": []}})),
        &[(
            "public".into(),
            Some(layer(json!({"untrusted": {"allow": ["write"]}}))),
        )],
        &[
            (
                "telegram".into(),
                Some(layer(
                    json!({"untrusted": {"allow": ["grep"], "deny": ["web_fetch"]}}),
                )),
            ),
            ("slack".into(), Some(layer(json!({"deny": ["read"]})))),
        ],
    )
    .unwrap();
    let names = |v: Vec<ToolSpec>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let turn = |untrusted: bool, channels: &[&str]| Trust {
        untrusted,
        channels: channels.iter().map(|c| c.to_string()).collect(),
    };
    assert_eq!(
        names(p.offered(&all, "main", &turn(true, &["webchat"]), None)),
        ["exec", "read", "web_fetch"]
    );
    assert_eq!(
        names(p.offered(&all, "main", &turn(true, &["telegram"]), None)),
        ["exec", "read", "grep"],
        "widened by the channel, and its deny wins"
    );
    assert_eq!(
        names(p.offered(&all, "main", &turn(true, &["telegram", "slack"]), None)),
        ["exec"],
        "the strictest channel of the turn: slack widens nothing and denies read"
    );
    assert_eq!(
        names(p.offered(&all, "public", &turn(true, &["webchat"]), None)),
        ["exec", "read", "write", "web_fetch"],
        "widened by the agent a binding routes to"
    );
    assert_eq!(
        names(p.offered(&all, "main", &turn(false, &["telegram"]), None)).len(),
        OFFERED.len(),
        "operators are not touched by the profile"
    );
    let none = ToolPolicy::from_config(&tools(json!({})), &[], &[]).unwrap();
    assert!(
        none.offered(&all, "main", &turn(true, &["webchat"]), None)
            .is_empty(),
        "no tools.untrusted list: a stranger's turn has no tools"
    );
}

#[test]
fn config_hooks_block_or_rewrite() {
    let p = ToolPolicy::from_config(
        &tools(json!({"beforeToolCall": [
            {"tool": "exec", "when": {"command": "rm\\s+-rf"}, "block": "destructive commands are not allowed"},
            {"tool": "exec", "set": {"timeout": 5}},
            {"tool": "*", "when": {"path": "^secrets/"}, "block": "no secrets"},
        ]})),
        &[],
        &[],
    )
    .unwrap();
    let hook = &p.hooks[0];
    let mut call = ToolCall {
        id: "1".into(),
        name: "exec".into(),
        arguments: json!({"command": "rm -rf /"}),
    };
    assert_eq!(
        hook.before_tool_call(&mut call),
        HookDecision::Block("destructive commands are not allowed".into())
    );
    let mut call = ToolCall {
        id: "2".into(),
        name: "exec".into(),
        arguments: json!({"command": "ls", "timeout": 600}),
    };
    assert_eq!(hook.before_tool_call(&mut call), HookDecision::Continue);
    assert_eq!(call.arguments, json!({"command": "ls", "timeout": 5}));
    let mut call = ToolCall {
        id: "3".into(),
        name: "read".into(),
        arguments: json!({"path": "secrets/key"}),
    };
    assert_eq!(
        hook.before_tool_call(&mut call),
        HookDecision::Block("no secrets".into())
    );
    assert!(ToolPolicy::from_config(
        &tools(json!({"beforeToolCall": [{"tool": "exec"}]})),
        &[],
        &[]
    )
    .is_err());
    assert!(ToolPolicy::from_config(
        &tools(
            json!({"beforeToolCall": [{"tool": "exec", "when": {"command": "("}, "block": "x"}]})
        ),
        &[],
        &[]
    )
    .is_err());
}

#[test]
fn results_keep_head_and_tail() {
    let text: String = (0..2000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let t = truncate_result(&text, 1000);
    assert!(t.starts_with(&text[..750]));
    assert!(t.ends_with(&text[1750..]));
    assert!(t.contains("[... 1000 characters cut from this tool result ...]"));
    assert_eq!(truncate_result("short", 1000), "short");
}

#[test]
fn repair_fills_missing_results_and_drops_orphans() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "exec".into(),
        arguments: json!({}),
    };
    let mut a = ChatMessage::assistant("");
    a.tool_calls = vec![call("c1"), call("c2")];
    let history: Messages = vec![
        Arc::new(ChatMessage::user("hi")),
        Arc::new(a),
        Arc::new(ChatMessage::tool_result("c1", "ok", false)),
        Arc::new(ChatMessage::user("next")),
        Arc::new(ChatMessage::tool_result("zz", "orphan", false)),
        Arc::new(ChatMessage::assistant("done")),
    ];
    let fixed = repair(&history);
    let shape: Vec<(MessageRole, Option<&str>, &str)> = fixed
        .iter()
        .map(|m| (m.role, m.tool_call_id.as_deref(), m.text.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (MessageRole::User, None, "hi"),
            (MessageRole::Assistant, None, ""),
            (MessageRole::Tool, Some("c1"), "ok"),
            (MessageRole::Tool, Some("c2"), MISSING_RESULT),
            (MessageRole::User, None, "next"),
            (MessageRole::Assistant, None, "done"),
        ]
    );
    let good: Messages = vec![
        Arc::new(ChatMessage::user("x")),
        Arc::new(ChatMessage::assistant("y")),
    ];
    let same = repair(&good);
    assert!(Arc::ptr_eq(&same[0], &good[0]));
}
