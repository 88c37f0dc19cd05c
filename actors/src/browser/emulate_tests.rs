//! `emulate` against a real Chromium: the page, loaded again, sees the
//! device, colour scheme, time zone and locale asked for; `Desktop Chrome`
//! takes the device away; bad settings are refused by name.

use serde_json::json;

use super::super::test_kit::{browser, call, serve, Reply};
use super::super::BrowserError;

/// Writes what the page is told about its reader.
const READER: &str = r#"<!doctype html><html><head><meta name="viewport" content="width=device-width">
</head><body><p id="r"></p><script>
document.getElementById('r').textContent = [
  'dark=' + matchMedia('(prefers-color-scheme: dark)').matches,
  'tz=' + Intl.DateTimeFormat().resolvedOptions().timeZone,
  'lang=' + navigator.language,
  'intl=' + Intl.DateTimeFormat().resolvedOptions().locale,
  'width=' + innerWidth,
  'touch=' + navigator.maxTouchPoints,
  'ua=' + (navigator.userAgent.includes('iPhone') ? 'iphone' : 'other'),
].join(' ');
</script></body></html>"#;

#[actix::test]
async fn a_tabs_pages_see_the_reader_it_emulates() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (
        browser(dir.path()),
        serve(None, |_, _| Reply::html(READER)).await,
    );
    let url = format!("http://127.0.0.1:{port}/reader");
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();
    let read = || async {
        call(&b, "navigate", json!({ "targetUrl": url }))
            .await
            .unwrap();
        call(&b, "text", json!({}))
            .await
            .unwrap()
            .page
            .unwrap_or_default()
    };
    let before = read().await;
    assert!(
        before.contains("dark=false") && before.contains("ua=other"),
        "{before}"
    );

    let done = call(
        &b,
        "emulate",
        json!({ "device": "iphone 15", "colorScheme": "dark", "timezoneId": "Asia/Tokyo", "locale": "fr-FR" }),
    )
    .await
    .unwrap();
    assert_eq!(
        done.head["applied"],
        json!(["device", "colorScheme", "timezoneId", "locale"])
    );
    let after = read().await;
    for seen in [
        "dark=true",
        "tz=Asia/Tokyo",
        "lang=fr-FR",
        "width=393",
        "ua=iphone",
    ] {
        assert!(after.contains(seen), "{seen}: {after}");
    }
    assert!(!after.contains("touch=0"), "{after}");

    call(
        &b,
        "emulate",
        json!({ "device": "Desktop Chrome", "colorScheme": "none" }),
    )
    .await
    .unwrap();
    let back = read().await;
    assert!(
        back.contains("dark=false") && back.contains("ua=other") && !back.contains("width=393"),
        "{back}"
    );

    for (args, why) in [
        (json!({}), "at least one of"),
        (json!({ "device": "Nokia 3310" }), "unknown device"),
        (json!({ "colorScheme": "purple" }), "colorScheme must be"),
        (json!({ "timezoneId": "Mars/Olympus" }), "timezoneId"),
    ] {
        let refused = call(&b, "emulate", args.clone()).await.unwrap_err();
        assert!(
            matches!(&refused, BrowserError::Args(m) if m.contains(why)),
            "{args}: {refused}"
        );
    }
}
