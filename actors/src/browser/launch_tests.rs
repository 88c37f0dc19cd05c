//! The launch against a real Chromium (Debian's `chromium`; the browser
//! tests' setup installs it) and against stand-ins that never listen.

use super::*;
use crate::child::{group_alive, stop_group};

fn launch_of(executable: &str, dir: &Path, deadline: Duration) -> Launch {
    Launch {
        executable: executable.into(),
        headless: true,
        // Chromium refuses to run as root with its sandbox.
        no_sandbox: true,
        user_data_dir: dir.join("browser").join("openclaw"),
        extra_args: Vec::new(),
        deadline,
        proxy: None,
        cdp_port: 0,
    }
}

/// Waits until the group `pid` led is gone, failing after `within`.
async fn until_gone(pid: u32, within: Duration) {
    let started = Instant::now();
    while group_alive(pid) {
        assert!(started.elapsed() < within, "group {pid} still alive");
        actix::clock::sleep(Duration::from_millis(20)).await;
    }
}

#[actix::test]
async fn a_real_chromium_listens_on_loopback_in_a_private_profile_and_stops_as_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let l = launch_of("chromium", dir.path(), Duration::from_secs(60));
    let mut b = launch(&l)
        .await
        .expect("chromium starts (apt-get install chromium; tests/browser/setup.sh does)");
    let prefix = format!("ws://127.0.0.1:{}/devtools/browser/", b.port);
    assert!(b.ws_url.starts_with(&prefix), "{}", b.ws_url);
    let url = format!("http://127.0.0.1:{}/json/version", b.port);
    let version: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    assert_eq!(version["webSocketDebuggerUrl"], b.ws_url.as_str());
    assert!(
        version["Browser"].as_str().unwrap().contains("Chrome"),
        "{version}"
    );
    let mode = std::fs::metadata(&l.user_data_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o700,
        "the profile is the gateway user's alone"
    );
    assert!(group_alive(b.pid));
    stop_group(b.pid, Duration::from_secs(5));
    let exited = actix::clock::timeout(Duration::from_secs(15), b.child.wait()).await;
    assert!(exited.is_ok(), "the browser ends on SIGTERM");
    until_gone(b.pid, Duration::from_secs(15)).await;
}

#[actix::test]
async fn a_browser_that_cannot_start_exits_or_never_listens_is_named_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let missing = launch(&launch_of(
        "/nonexistent/chromium",
        dir.path(),
        Duration::from_secs(5),
    ))
    .await;
    assert!(
        matches!(&missing, Err(LaunchError::Spawn { executable, .. }) if executable.ends_with("chromium")),
        "{missing:?}"
    );
    let exits = launch(&launch_of("false", dir.path(), Duration::from_secs(30))).await;
    assert!(
        matches!(exits, Err(LaunchError::Exited { .. })),
        "{exits:?}"
    );
    // A stand-in that never listens, beside a stale DevToolsActivePort of
    // an earlier run (read, it would name a dead port at once).
    let script = dir.path().join("silent");
    std::fs::write(&script, "#!/bin/sh\nexec sleep 30\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let l = launch_of(
        script.to_str().unwrap(),
        dir.path(),
        Duration::from_millis(300),
    );
    std::fs::create_dir_all(&l.user_data_dir).unwrap();
    let stale = l.user_data_dir.join("DevToolsActivePort");
    std::fs::write(&stale, "1\n/devtools/browser/stale\n").unwrap();
    let silent = launch(&l).await;
    let Err(LaunchError::Timeout { pid, .. }) = silent else {
        panic!("{silent:?}");
    };
    assert!(!stale.exists(), "the stale port file was removed first");
    until_gone(pid, Duration::from_secs(15)).await;
}
