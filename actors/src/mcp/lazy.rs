//! Lazy servers (`mcp.servers.<name>.lazy: true`, ferroclaw's key): not
//! started at boot when their tool list is known from an earlier run (a
//! cache in `<state>/mcp/<name>.tools.json`, written by the hub whenever a
//! lazy server lists its tools); their tools are offered all the same
//! (state `idle`); the first call starts the server and waits for it, and
//! a server with no call for `idleTimeoutMs` (default 5 minutes) is
//! stopped again (its stdio child's process group killed), its tools still
//! offered. A lazy server that fails goes back to `idle` (no restart loop):
//! the next call tries again and says why it could not.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::catalog::ToolDef;
use crate::settings::{McpServerSettings, McpTransport};

/// What a lazy server's cache holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolCache {
    /// Which server listed them (its command and arguments, or its URL;
    /// never its environment or headers): another server's list is not
    /// reused.
    pub identity: String,
    pub protocol: String,
    pub server_info: String,
    pub tools: Vec<ToolDef>,
}

/// The server's identity as the cache records it.
pub fn identity(settings: &McpServerSettings) -> String {
    match settings.transport() {
        Ok(McpTransport::Stdio { command, args, .. }) => format!("stdio {command} {args:?}"),
        Ok(McpTransport::Http { url, .. }) => format!("http {url}"),
        Ok(McpTransport::Sse { url, .. }) => format!("sse {url}"),
        Err(e) => format!("invalid {e}"),
    }
}

pub fn cache_path(dir: &Path, name: &str) -> PathBuf {
    // Server names are config keys: keep only what is safe in a file name.
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.tools.json"))
}

/// The cached list, when there is one for this very server.
pub fn read(dir: &Path, name: &str, settings: &McpServerSettings) -> Option<ToolCache> {
    let text = std::fs::read_to_string(cache_path(dir, name)).ok()?;
    let cache: ToolCache = serde_json::from_str(&text).ok()?;
    (cache.identity == identity(settings)).then_some(cache)
}

/// Writes the list (atomic) on the blocking pool; a failure is logged.
pub fn write(dir: &Path, name: &str, cache: ToolCache) {
    let path = cache_path(dir, name);
    let name = name.to_string();
    tokio::task::spawn_blocking(move || {
        let text = match serde_json::to_string_pretty(&cache) {
            Ok(t) => t,
            Err(e) => return tracing::warn!(server = %name, error = %e, "mcp tool cache"),
        };
        if let Err(e) = crate::fsutil::write_atomic(&path, &text) {
            tracing::warn!(server = %name, error = %e, "cannot write the mcp tool cache");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_is_only_reused_by_the_server_that_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = |cmd: &str| -> McpServerSettings {
            serde_json::from_value(serde_json::json!({"command": cmd, "env": {"TOKEN": "secret"}}))
                .unwrap()
        };
        let cache = ToolCache {
            identity: identity(&s("a")),
            protocol: "2025-11-25".into(),
            server_info: "a 1".into(),
            tools: vec![],
        };
        let path = cache_path(dir.path(), "a/../b");
        assert_eq!(path.parent().unwrap(), dir.path(), "{path:?}");
        std::fs::write(
            cache_path(dir.path(), "x"),
            serde_json::to_string(&cache).unwrap(),
        )
        .unwrap();
        assert_eq!(read(dir.path(), "x", &s("a")), Some(cache.clone()));
        assert_eq!(read(dir.path(), "x", &s("b")), None, "another server");
        assert!(!identity(&s("a")).contains("secret"));
    }
}
