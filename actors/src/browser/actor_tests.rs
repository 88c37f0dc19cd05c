//! `BrowserActor` against a real Chromium: started once however often it
//! is asked, started again after a SIGKILL, stopped as a whole group.

use super::*;
use crate::child::group_alive;

fn actor(dir: &std::path::Path) -> Addr<BrowserActor> {
    let launch = Launch {
        executable: "chromium".into(),
        headless: true,
        no_sandbox: true,
        user_data_dir: dir.join("browser").join("openclaw"),
        extra_args: Vec::new(),
        deadline: Duration::from_secs(60),
        proxy: None,
        cdp_port: 0,
    };
    let limits = super::super::test_kit::limits(dir);
    let policy = std::sync::Arc::new(crate::browser::policy::Policy::default());
    BrowserActor::new("openclaw", launch, policy, limits).start()
}

/// The state once `ok` holds, failing after 30 s.
async fn until(b: &Addr<BrowserActor>, ok: impl Fn(&BrowserState) -> bool) -> BrowserState {
    let started = Instant::now();
    loop {
        let s = b.send(GetBrowserState).await.unwrap();
        if ok(&s) {
            return s;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{s:?}");
        actix::clock::sleep(Duration::from_millis(20)).await;
    }
}

#[actix::test]
async fn a_browser_started_twice_runs_once_comes_back_after_a_kill_and_stops_whole() {
    let dir = tempfile::tempdir().unwrap();
    let b = actor(dir.path());
    let idle = b.send(GetBrowserState).await.unwrap();
    assert!(!idle.running && idle.pid.is_none(), "{idle:?}");
    let (one, two) = tokio::join!(b.send(StartBrowser), b.send(StartBrowser));
    let (one, two) = (one.unwrap().unwrap(), two.unwrap().unwrap());
    assert_eq!(one.pid, two.pid, "one browser for both starts");
    let first = one.pid.unwrap();
    // Killed outright: started again (after 1 s), on a new process.
    // SAFETY: signals the test's own child.
    unsafe {
        libc::kill(first as i32, libc::SIGKILL);
    }
    let again = until(&b, |s| s.running && s.pid != Some(first)).await;
    assert_eq!(again.restarts, 1);
    assert!(
        again.last_error.as_deref().unwrap_or("").contains("exited"),
        "{again:?}"
    );
    let url = format!("http://127.0.0.1:{}/json/version", again.cdp_port.unwrap());
    assert!(reqwest::get(&url).await.unwrap().status().is_success());
    let stopped = b.send(StopBrowser).await.unwrap();
    assert!(!stopped.running, "{stopped:?}");
    let pid = again.pid.unwrap();
    let started = Instant::now();
    while group_alive(pid) || group_alive(first) {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "a browser process is left"
        );
        actix::clock::sleep(Duration::from_millis(20)).await;
    }
    // Stopped stays stopped: no restart follows the stop's own exit.
    let after = b.send(GetBrowserState).await.unwrap();
    assert!(!after.running && after.restarts == 1, "{after:?}");
}
