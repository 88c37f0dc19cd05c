//! The browser's SSRF policy: schemes, internal addresses, the keys that
//! open them, allowed and blocked names.

use super::*;

fn policy(patch: serde_json::Value) -> Policy {
    Policy::from_settings(&crate::settings::shipped_with("browser.ssrfPolicy", patch))
}

#[test]
fn only_http_https_and_about_blank_are_opened() {
    let p = policy(serde_json::json!({}));
    assert_eq!(p.check_url("about:blank"), Ok(()));
    assert_eq!(p.check_url("https://example.com/x"), Ok(()));
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("chrome://settings", "chrome"),
        ("devtools://devtools/bundled/inspector.html", "devtools"),
        ("view-source:https://example.com", "view-source"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,hi", "data"),
    ] {
        match p.check_url(url) {
            Err(Refused::Scheme { scheme: s, .. }) => assert_eq!(s, scheme, "{url}"),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(matches!(
        p.check_url("not a url"),
        Err(Refused::NotAUrl { .. })
    ));
}

#[tokio::test]
async fn internal_addresses_are_refused_until_a_key_opens_them() {
    let strict = policy(serde_json::json!({}));
    for host in [
        "127.0.0.1",
        "10.0.0.1",
        "169.254.169.254",
        "[::1]",
        "198.18.0.1",
        "[fd00::1]",
    ] {
        assert!(
            matches!(
                strict.resolve(host, 80).await,
                Err(Refused::Internal { .. })
            ),
            "{host}"
        );
    }
    assert!(strict.resolve("93.184.216.34", 80).await.is_ok());
    let open = policy(serde_json::json!({ "dangerouslyAllowPrivateNetwork": true }));
    assert!(open.resolve("10.0.0.1", 80).await.is_ok());
    let legacy = policy(serde_json::json!({ "allowPrivateNetwork": true }));
    assert!(legacy.resolve("192.168.1.1", 80).await.is_ok());
    let ranges = policy(serde_json::json!({
        "allowRfc2544BenchmarkRange": true, "allowIpv6UniqueLocalRange": true,
    }));
    assert!(ranges.resolve("198.18.0.1", 80).await.is_ok());
    assert!(ranges.resolve("[fd00::1]", 80).await.is_ok());
    assert!(ranges.resolve("127.0.0.1", 80).await.is_err());
}

#[tokio::test]
async fn allowed_hostnames_open_one_host_and_blocked_ones_close_it() {
    let p = policy(serde_json::json!({
        "allowedHostnames": ["localhost", "127.0.0.1"],
        "blockedHostnames": ["*.evil.example", "bad.test"],
    }));
    assert!(p.resolve("localhost", 80).await.is_ok());
    assert!(p.resolve("127.0.0.1", 80).await.is_ok());
    // Another loopback address is not the allowed name.
    assert!(p.resolve("127.0.0.2", 80).await.is_err());
    for host in ["evil.example", "a.b.evil.example", "BAD.test"] {
        assert!(
            matches!(p.check_name(host), Err(Refused::BlockedHost { .. })),
            "{host}"
        );
    }
    assert!(p.check_name("notevil.example").is_ok());
    assert!(matches!(
        p.check_url("https://x.evil.example/"),
        Err(Refused::BlockedHost { .. })
    ));
}
