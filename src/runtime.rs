//! `<state dir>/gateway.runtime.json` (0600): how to reach the gateway that
//! runs on a state dir (its address, pid and start time), written once it
//! listens and removed when it stops. The CLI reads it while the state
//! dir's lock is held (so a file a killed gateway left is never believed):
//! `backup create` finds a gateway started with `--port` whatever its
//! config says. It holds no secret.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use ferroclaw_actors::fsutil::RUNTIME_FILE;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Runtime {
    pub pid: u32,
    /// `ws://host:port`: a loopback address when it listens on every one.
    pub url: String,
    pub started_at_ms: u64,
}

fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(RUNTIME_FILE)
}

/// The URL a client on this machine reaches `addr` by.
fn local_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("ws://{}", SocketAddr::new(ip, addr.port()))
}

/// Records where the gateway listens (a failure is logged: the CLI falls
/// back to the config's port).
pub fn record(state_dir: &Path, addr: SocketAddr) {
    let runtime = Runtime {
        pid: std::process::id(),
        url: local_url(addr),
        started_at_ms: ferroclaw_actors::now_ms(),
    };
    let text = serde_json::to_string(&runtime).unwrap_or_default();
    // Replaced whole, not fsynced: rewritten at every start, and one a
    // crash lost reads as no gateway (a dead pid's reads as that, too).
    if let Err(e) = ferroclaw_actors::fsutil::write_replace(&path(state_dir), &text) {
        tracing::warn!(error = %e, "runtime file not written");
    }
}

/// Removes the record when it is still this gateway's.
pub fn forget(state_dir: &Path, addr: SocketAddr) {
    if read_file(state_dir).is_some_and(|r| r.pid == std::process::id() && r.url == local_url(addr))
    {
        let _ = std::fs::remove_file(path(state_dir));
    }
}

fn read_file(state_dir: &Path) -> Option<Runtime> {
    let text = std::fs::read_to_string(path(state_dir)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Where the gateway running on `state_dir` listens: its record, believed
/// only while a live gateway holds the state dir's lock.
pub fn running(state_dir: &Path) -> Option<Runtime> {
    if !ferroclaw_actors::store::in_use(state_dir) {
        return None;
    }
    read_file(state_dir)
}

/// `<state dir>/restart-sentinel.json`: a restart the `gateway` tool asked
/// for (its note, the session to tell, the call that asked), read once by
/// the next start.
const SENTINEL: &str = "restart-sentinel.json";

pub fn write_restart_sentinel(
    state_dir: &Path,
    sentinel: &serde_json::Value,
) -> std::io::Result<()> {
    ferroclaw_actors::fsutil::write_atomic(&state_dir.join(SENTINEL), &sentinel.to_string())
}

/// The sentinel a restart left, removed as it is read.
pub fn take_restart_sentinel(state_dir: &Path) -> Option<serde_json::Value> {
    let path = state_dir.join(SENTINEL);
    let text = std::fs::read_to_string(&path).ok()?;
    let _ = std::fs::remove_file(&path);
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_believed_only_while_the_state_dir_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "0.0.0.0:4321".parse().unwrap();
        record(dir.path(), addr);
        assert_eq!(running(dir.path()), None, "nobody holds the lock");
        let store = ferroclaw_actors::store::Store::open(dir.path()).unwrap();
        let found = running(dir.path()).unwrap();
        assert_eq!(found.url, "ws://127.0.0.1:4321");
        assert_eq!(found.pid, std::process::id());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        forget(dir.path(), addr);
        assert_eq!(running(dir.path()), None);
        drop(store);
    }
}
