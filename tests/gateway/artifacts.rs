//! `artifacts.list` lists what the agent wrote into the workspace in a
//! session (read back from its transcript), newest first, as the
//! workspace holds it now: a refused write, a read, a file outside the
//! workspace and a file since removed are not artifacts.

use serde_json::{json, Value};

use crate::support::{admin, say, TestGateway};

fn titles(r: &Value) -> Vec<String> {
    r["payload"]["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn what_the_agent_wrote_in_the_workspace_is_listed_newest_first() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let r = c
        .call("artifacts.list", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(r["payload"]["artifacts"], json!([]), "{r}");
    let write = |path: &str, content: &str| {
        format!("@tool write {}", json!({"path": path, "content": content}))
    };
    say(&mut c, "main", &write("report.md", "# Findings\n"), "w1").await;
    say(
        &mut c,
        "main",
        &write("chart.png", "not really a png"),
        "w2",
    )
    .await;
    say(&mut c, "main", &write("gone.txt", "soon removed"), "w3").await;
    say(&mut c, "main", "@tool read {\"path\": \"report.md\"}", "r1").await;
    let outside = gw.state_dir().join("outside.txt");
    let away = write(outside.to_str().unwrap(), "not the workspace's");
    say(&mut c, "main", &away, "w4").await;
    std::fs::remove_file(gw.state_dir().join("workspace/gone.txt")).unwrap();

    let r = c
        .call("artifacts.list", json!({"sessionKey": "main"}))
        .await;
    assert_eq!(titles(&r), ["chart.png", "report.md"], "{r}");
    let report = &r["payload"]["artifacts"][1];
    assert_eq!(
        (
            &report["type"],
            &report["mimeType"],
            &report["sizeBytes"],
            &report["source"]
        ),
        (
            &json!("file"),
            &json!("text/markdown"),
            &json!(11),
            &json!("write")
        ),
        "{report}"
    );
    assert_eq!(report["sessionKey"], "agent:main:main");
    assert_eq!(report["download"]["mode"], "unsupported");
    // The activity page asks for images, a few at a time.
    let r = c
        .call(
            "artifacts.list",
            json!({"sessionKey": "main", "type": "image", "limit": 1}),
        )
        .await;
    assert_eq!(titles(&r), ["chart.png"], "{r}");
    assert!(r["payload"].get("nextCursor").is_none(), "{r}");
    // An image carries its signed link: the bytes the agent wrote.
    let url = r["payload"]["artifacts"][0]["image"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    assert!(url.starts_with("/media/"), "{url}");
    let got = reqwest::get(format!("http://{}{url}", gw.addr))
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"not really a png");
    let forged = url.replace("sig=", "sig=0");
    let refused = reqwest::get(format!("http://{}{forged}", gw.addr))
        .await
        .unwrap();
    assert_ne!(
        refused.status(),
        200,
        "a link that is not signed is refused"
    );
    let r = c
        .call("artifacts.list", json!({"sessionKey": "main", "limit": 1}))
        .await;
    let next = r["payload"]["nextCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let r = c
        .call(
            "artifacts.list",
            json!({"sessionKey": "main", "limit": 1, "cursor": next}),
        )
        .await;
    assert_eq!(titles(&r), ["report.md"], "{r}");
    let r = c
        .call("artifacts.list", json!({"sessionKey": "main", "limit": 9}))
        .await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{r}");
}

/// OpenClaw's own Control UI shows an image the agent wrote on its
/// Activity page (`tests/browser/control_ui_activity.test.mjs`): listed by
/// `artifacts.list`, its bytes loaded from the signed `/media` link, served
/// as the image it is and sandboxed.
#[tokio::test(flavor = "multi_thread")]
async fn the_control_ui_activity_page_shows_an_image_the_agent_wrote() {
    let root = super::control_ui::installed_ui().display().to_string();
    let gw = TestGateway::with_config(json!({ "gateway": { "controlUi": { "root": root } } }));
    let mut c = admin(&gw).await;
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="120" height="80" fill="#2a7"/></svg>"##;
    let write = json!({"path": "plots/growth.svg", "content": svg});
    say(&mut c, "main", &format!("@tool write {write}"), "w1").await;
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-activity");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_activity.test.mjs",
        &[
            base.as_ref(),
            crate::support::TOKEN.as_ref(),
            "plots/growth.svg".as_ref(),
        ],
        &shots,
    )
    .await;
    assert!(
        report["listed"]
            .as_array()
            .is_some_and(|l| l.contains(&json!("plots/growth.svg"))),
        "{report}"
    );
    assert_eq!(report["image"]["width"], 120, "the image loaded: {report}");
    assert_eq!(
        report["media"][0],
        json!({"status": 200, "type": "image/svg+xml"}),
        "{report}"
    );
    for list in ["failedCalls", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
}
