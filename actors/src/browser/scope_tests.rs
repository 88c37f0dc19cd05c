//! Scoped snapshots against a real Chromium: `selector` keeps one element
//! and what is inside it, `frame` reads an iframe's tree (and its refs
//! act), `labels` adds a picture with the refs drawn; what cannot be read
//! is refused by name.

use serde_json::json;

use super::super::test_kit::{browser, call, ref_of, serve, Reply};
use super::super::BrowserError;

const OUTER: &str = r#"<!doctype html><html><head><title>Outer</title></head><body>
<h1>Outside heading</h1>
<section id="s"><button>Inside the section</button></section>
<iframe id="inner" src="/inner" width="400" height="200"></iframe>
</body></html>"#;

const INNER: &str = r#"<!doctype html><html><body><h2>Framed</h2>
<button onclick="document.getElementById('o').textContent = 'framed click'">Inner go</button>
<p id="o">not yet</p></body></html>"#;

fn pages(path: &str, _: u16) -> Reply {
    match path {
        "/outer" => Reply::html(OUTER),
        "/inner" => Reply::html(INNER),
        _ => Reply::not_found(),
    }
}

#[actix::test]
async fn a_snapshot_reads_one_element_or_one_frame_and_draws_its_refs() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), serve(None, pages).await);
    let url = format!("http://127.0.0.1:{port}/outer");
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();

    let section = call(&b, "snapshot", json!({ "selector": "#s" }))
        .await
        .unwrap()
        .text;
    assert!(
        section.contains("button \"Inside the section\""),
        "{section}"
    );
    assert!(!section.contains("Outside heading"), "{section}");

    let framed = call(&b, "snapshot", json!({ "frame": "#inner" }))
        .await
        .unwrap()
        .text;
    assert!(framed.contains("heading \"Framed\""), "{framed}");
    assert!(!framed.contains("Outside heading"), "{framed}");
    let go = ref_of(&framed, "button \"Inner go\"");
    call(&b, "act", json!({ "kind": "click", "ref": go }))
        .await
        .unwrap();
    let after = call(
        &b,
        "snapshot",
        json!({ "frame": "#inner", "selector": "#o" }),
    )
    .await
    .unwrap()
    .text;
    assert!(
        after.contains("framed click") && !after.contains("Inner go"),
        "{after}"
    );

    let labelled = call(&b, "snapshot", json!({ "labels": true }))
        .await
        .unwrap();
    let image = labelled.image.expect("a labelled picture");
    assert_eq!(&image.bytes[..4], b"\x89PNG");
    // The labels are drawn for the picture only, and a screenshot with
    // labels draws the last snapshot's refs: a different picture.
    let plain = call(&b, "screenshot", json!({}))
        .await
        .unwrap()
        .image
        .unwrap();
    let marked = call(&b, "screenshot", json!({ "labels": true }))
        .await
        .unwrap();
    let marked = marked.image.unwrap();
    assert_eq!(&marked.bytes[..4], b"\x89PNG");
    assert_ne!(plain.bytes, marked.bytes);
    assert_ne!(plain.bytes, image.bytes);

    for (args, why) in [
        (json!({ "frame": "#missing" }), "no element matches"),
        (json!({ "frame": "h1" }), "is not an iframe"),
        (json!({ "selector": "##" }), "bad selector"),
        (json!({ "selector": "#missing" }), "no element matches"),
    ] {
        let refused = call(&b, "snapshot", args.clone()).await.unwrap_err();
        assert!(
            matches!(&refused, BrowserError::Args(m) if m.contains(why)),
            "{args}: {refused}"
        );
    }
}
