//! Snapshots from a tree shaped as Chromium's `getFullAXTree` answers.

use super::*;

fn node(
    id: &str,
    parent: Option<&str>,
    role: &str,
    name: &str,
    kids: &[&str],
    backend: i64,
) -> Value {
    json!({
        "nodeId": id, "parentId": parent, "ignored": false,
        "role": { "type": "role", "value": role },
        "name": { "type": "computedString", "value": name },
        "childIds": kids, "backendDOMNodeId": backend,
    })
}

fn page() -> Vec<Value> {
    let mut heading = node("3", Some("2"), "heading", "Sign in", &["7"], 30);
    heading["properties"] =
        json!([{ "name": "level", "value": { "type": "integer", "value": 1 } }]);
    let mut boxed = node("5", Some("2"), "checkbox", "Remember me", &[], 50);
    boxed["properties"] =
        json!([{ "name": "checked", "value": { "type": "tristate", "value": "true" } }]);
    let mut field = node("4", Some("2"), "textbox", "Email", &[], 40);
    field["value"] = json!({ "type": "string", "value": "a@b.c" });
    vec![
        node("1", None, "RootWebArea", "Page", &["2"], 10),
        node("2", Some("1"), "generic", "", &["3", "4", "5", "6"], 20),
        heading,
        field,
        boxed,
        node("6", Some("2"), "button", "Go \"now\"", &[], 60),
        node("7", Some("3"), "StaticText", "Sign in", &[], 70),
    ]
}

fn opts() -> Options {
    Options {
        max_chars: 10_000,
        ..Options::default()
    }
}

#[test]
fn the_ai_format_writes_one_line_per_element_with_refs_attributes_and_values() {
    let mut refs = Refs::default();
    let s = render(&flatten(&page()), &mut refs, &opts());
    assert_eq!(
        s.text,
        "- heading \"Sign in\" [level=1] [ref=e1]\n- textbox \"Email\" [ref=e2]: a@b.c\n- checkbox \"Remember me\" [checked] [ref=e3]\n- button \"Go \\\"now\\\"\" [ref=e4]\n"
    );
    // The heading's text only repeats its name: no line of its own.
    assert!(!s.text.contains("text: Sign in"));
    assert_eq!((s.refs, s.interactive, s.new_elements), (4, 3, 0));
    assert_eq!(refs.node("e2"), Some(40));
    assert_eq!(refs.node("ax4"), Some(60));
    assert_eq!(refs.node("e9"), None);
}

#[test]
fn refs_stay_with_their_elements_and_new_ones_are_marked_until_a_navigation() {
    let mut refs = Refs::default();
    let first = render(&flatten(&page()), &mut refs, &opts());
    assert!(!first.text.contains("[new]"));
    let mut more = page();
    more[1]["childIds"] = json!(["8", "3", "4", "5", "6"]);
    more.push(node("8", Some("2"), "link", "Help", &[], 80));
    let second = render(&flatten(&more), &mut refs, &opts());
    assert!(
        second.text.starts_with("- link \"Help\" [ref=e5] [new]\n"),
        "{}",
        second.text
    );
    assert!(second.text.contains("button \"Go \\\"now\\\"\" [ref=e4]\n"));
    assert_eq!(second.new_elements, 1);
    refs.reset();
    let after = render(&flatten(&more), &mut refs, &opts());
    assert!(after.text.starts_with("- link \"Help\" [ref=e1]\n") && !after.text.contains("[new]"));
}

#[test]
fn interactive_query_depth_aria_and_the_character_cap() {
    let mut refs = Refs::default();
    let lines = flatten(&page());
    let flat = render(
        &lines,
        &mut refs,
        &Options {
            interactive: true,
            ..opts()
        },
    );
    assert_eq!(flat.lines, 3);
    assert!(flat.text.lines().all(|l| l.starts_with("- ")));
    let q = render(
        &lines,
        &mut refs,
        &Options {
            query: Some("REMEMBER me".into()),
            ..opts()
        },
    );
    assert_eq!(
        (q.matches, q.text.as_str()),
        (Some(1), "- checkbox \"Remember me\" [checked] [ref=e2]\n")
    );
    let shallow = render(
        &lines,
        &mut refs,
        &Options {
            depth: Some(0),
            ..opts()
        },
    );
    assert!(
        shallow.text.lines().all(|l| l.starts_with("- ")),
        "{}",
        shallow.text
    );
    let aria = render(
        &lines,
        &mut refs,
        &Options {
            aria: true,
            ..opts()
        },
    );
    let first: Value = serde_json::from_str(aria.text.lines().next().unwrap()).unwrap();
    // The interactive snapshot numbered the controls first.
    assert_eq!(first["ref"], "ax4");
    assert_eq!(first["role"], "heading");
    let capped = render(
        &lines,
        &mut refs,
        &Options {
            max_chars: 60,
            ..opts()
        },
    );
    assert!(
        capped.truncated && capped.text.chars().count() < 140,
        "{}",
        capped.text
    );
}
