//! Road 7: placeholder secrets. A gateway token or password that is an
//! unfilled template (`undefined`, `null`, `${VAR}`), empty, or shorter
//! than 16 characters stops the start (and `config validate`) with an
//! error that names the key and says how to make a real one.

use std::process::Stdio;

use crate::support::process::ferroclaw;
use crate::support::process::{WaitWithin, Within, CHILD_LIMIT};

fn start_with(config: &str, env: Option<(&str, &str)>) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ferroclaw.json"), config).unwrap();
    let mut cmd = ferroclaw(dir.path());
    cmd.args(["gateway", "--port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    // A start that is refused exits at once; one that is not would run on:
    // the hang guard kills it and the assertions below fail.
    let out = wait_or_kill(child);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn wait_or_kill(mut child: std::process::Child) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.output_within(CHILD_LIMIT)
}

#[test]
fn placeholder_and_short_gateway_secrets_stop_the_start() {
    for (config, key) in [
        (
            "{ gateway: { auth: { token: 'undefined' } } }",
            "gateway.auth.token",
        ),
        (
            "{ gateway: { auth: { token: 'null' } } }",
            "gateway.auth.token",
        ),
        ("{ gateway: { auth: { token: '' } } }", "gateway.auth.token"),
        (
            "{ gateway: { auth: { token: '${GATEWAY_TOKEN}' } } }",
            "gateway.auth.token",
        ),
        (
            "{ gateway: { auth: { token: 'hunter2' } } }",
            "gateway.auth.token",
        ),
        (
            "{ gateway: { auth: { mode: 'password', password: 'pw' } } }",
            "gateway.auth.password",
        ),
    ] {
        let (code, err) = start_with(config, None);
        assert_eq!(code, Some(2), "{config}: {err}");
        assert!(
            err.contains(key) && err.contains("openssl rand"),
            "{config}: {err}"
        );
    }
    let (code, err) = start_with("{}", Some(("OPENCLAW_GATEWAY_TOKEN", "undefined")));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("gateway.auth.token") && err.contains("placeholder"),
        "{err}"
    );
    // `config validate` runs the same check.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ferroclaw.json"),
        "{ gateway: { auth: { token: 'undefined' } } }",
    )
    .unwrap();
    let out = ferroclaw(dir.path())
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gateway.auth.token"));
    // A real secret starts.
    let dir = tempfile::tempdir().unwrap();
    let real = "{ gateway: { auth: { token: 'a-real-secret-0123456789' } } }";
    std::fs::write(dir.path().join("ferroclaw.json"), real).unwrap();
    let (_gw, addr, _) = crate::support::process::spawn_gateway(dir.path());
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
}

#[tokio::test]
async fn a_running_gateway_refuses_a_placeholder_secret_from_config_set() {
    let gw = crate::support::TestGateway::start();
    let mut c = crate::support::admin(&gw).await;
    let before = std::fs::read_to_string(gw.config_path()).unwrap();
    for (key, value) in [
        ("gateway.auth.token", "undefined"),
        ("gateway.auth.password", "short"),
    ] {
        let hash = c.call("config.get", serde_json::json!({})).await["payload"]["hash"].clone();
        let r = c
            .call(
                "config.set",
                serde_json::json!({ "key": key, "value": value, "baseHash": hash }),
            )
            .await;
        assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(key), "{r}");
    }
    assert_eq!(std::fs::read_to_string(gw.config_path()).unwrap(), before);
}
