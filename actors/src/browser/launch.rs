//! Starting Chromium for one profile: its own user-data dir (0700, under
//! the state dir, never the user's), headless or not, DevTools on a port
//! the browser picks, bound to 127.0.0.1, as an owned child
//! (`crate::child`: its own process group, SIGTERM when the gateway dies).
//! Chromium writes the port and the browser's WebSocket path to
//! `<user-data-dir>/DevToolsActivePort` once it listens; the launch waits
//! for that file, for the child's exit, or for its deadline, whichever
//! comes first.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How to start one profile's browser.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// The Chromium binary (`browser.executablePath`, else found on PATH).
    pub executable: PathBuf,
    pub headless: bool,
    /// `--no-sandbox` (`browser.noSandbox`; Chromium refuses root without).
    pub no_sandbox: bool,
    /// The profile's own directory (created 0700 when missing).
    pub user_data_dir: PathBuf,
    /// `browser.extraArgs`, after ferroclaw's own.
    pub extra_args: Vec<String>,
    /// How long the browser has to start listening.
    pub deadline: Duration,
    /// The SSRF proxy every request goes through (`proxy.rs`; None: none,
    /// for the launch's own tests).
    pub proxy: Option<u16>,
    /// The DevTools port (`browser.profiles.<name>.cdpPort`; 0: any).
    pub cdp_port: u16,
}

/// Flags in `browser.extraArgs` that would route around the proxy.
const ROUTING: &[&str] = &[
    "--proxy-server",
    "--proxy-pac-url",
    "--proxy-bypass-list",
    "--no-proxy-server",
    "--proxy-auto-detect",
    "--remote-debugging-address",
    "--remote-debugging-port",
    "--user-data-dir",
];

/// A started browser: the child (its process group's leader) and where its
/// DevTools endpoint listens.
#[derive(Debug)]
pub struct Launched {
    pub child: tokio::process::Child,
    pub pid: u32,
    /// The loopback port of its DevTools HTTP and WebSocket endpoint.
    pub port: u16,
    /// `ws://127.0.0.1:<port>/devtools/browser/<id>`.
    pub ws_url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot prepare the profile directory {path}: {source}")]
    Profile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {executable}: {source}")]
    Spawn {
        executable: PathBuf,
        source: std::io::Error,
    },
    #[error("the browser exited before it listened ({status})")]
    Exited { status: String },
    #[error("the browser's actor is stopping")]
    Stopping,
    #[error("the browser did not listen within {} ms (its process group {pid} is stopped)", .after.as_millis())]
    Timeout { after: Duration, pid: u32 },
}

/// The flags ferroclaw starts every profile's browser with.
fn args(l: &Launch) -> Vec<String> {
    let mut a = vec![
        format!("--user-data-dir={}", l.user_data_dir.display()),
        "--remote-debugging-address=127.0.0.1".to_string(),
        format!("--remote-debugging-port={}", l.cdp_port),
        "--no-first-run".to_string(),
        "--no-default-browser-check".to_string(),
        "--disable-background-networking".to_string(),
        "--disable-sync".to_string(),
        // No calls home (component updates, sign-in, reporting): they only
        // show as the proxy's refusals in the page's errors.
        "--disable-component-update".to_string(),
        "--disable-component-extensions-with-background-pages".to_string(),
        "--disable-extensions".to_string(),
        "--disable-default-apps".to_string(),
        "--disable-domain-reliability".to_string(),
        "--disable-client-side-phishing-detection".to_string(),
        "--disable-breakpad".to_string(),
        "--metrics-recording-only".to_string(),
        "--no-service-autorun".to_string(),
        "--disable-features=CertificateTransparencyComponentUpdater,Translate,MediaRouter,DialMediaRouteProvider,OptimizationHints,LensOverlay".to_string(),
        "--password-store=basic".to_string(),
    ];
    if l.headless {
        a.push("--headless=new".to_string());
    }
    if l.no_sandbox {
        a.push("--no-sandbox".to_string());
    }
    if let Some(port) = l.proxy {
        // Loopback too ("<-loopback>" takes back Chromium's own bypass);
        // WebRTC may not go around the proxy over UDP.
        a.push(format!("--proxy-server=http://127.0.0.1:{port}"));
        a.push("--proxy-bypass-list=<-loopback>".to_string());
        a.push("--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_string());
        a.push("--disable-quic".to_string());
    }
    for extra in &l.extra_args {
        if ROUTING.iter().any(|r| extra.starts_with(r)) {
            tracing::warn!(flag = %extra, "browser.extraArgs: dropped (the browser's routing and profile are ferroclaw's)");
        } else {
            a.push(extra.clone());
        }
    }
    a.push("about:blank".to_string());
    a
}

/// The profile directory, private to the gateway's user, without the
/// previous run's `DevToolsActivePort` (a stale one names a dead port).
fn prepare(dir: &Path) -> Result<PathBuf, std::io::Error> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let active = dir.join("DevToolsActivePort");
    match std::fs::remove_file(&active) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(active),
    }
}

/// `DevToolsActivePort`'s two lines (port, browser path) once both are
/// written.
fn read_active(path: &Path) -> Option<(u16, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let port = lines.next()?.trim().parse().ok()?;
    let ws_path = lines.next()?.trim();
    ws_path
        .starts_with('/')
        .then(|| (port, ws_path.to_string()))
}

/// Starts the browser `l` describes and waits until it listens.
pub async fn launch(l: &Launch) -> Result<Launched, LaunchError> {
    let profile = |source| LaunchError::Profile {
        path: l.user_data_dir.clone(),
        source,
    };
    let active = prepare(&l.user_data_dir).map_err(profile)?;
    let mut cmd = tokio::process::Command::new(&l.executable);
    cmd.args(args(l))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    crate::child::owned(&mut cmd);
    let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
        executable: l.executable.clone(),
        source,
    })?;
    let pid = child.id().unwrap_or_default();
    let started = Instant::now();
    let listening = loop {
        if let Some(found) = read_active(&active) {
            break found;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let status = status.to_string();
            return Err(LaunchError::Exited { status });
        }
        if started.elapsed() > l.deadline {
            crate::child::stop_group(pid, Duration::from_secs(2));
            return Err(LaunchError::Timeout {
                after: l.deadline,
                pid,
            });
        }
        // The file appears once; a short poll, bounded by the deadline.
        actix::clock::sleep(Duration::from_millis(20)).await;
    };
    let (port, ws_path) = listening;
    Ok(Launched {
        child,
        pid,
        port,
        ws_url: format!("ws://127.0.0.1:{port}{ws_path}"),
    })
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
