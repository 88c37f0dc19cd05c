//! `mcp`: the MCP servers whose tools the agent is offered (OpenClaw's
//! `mcp.servers.<name>` keys: `command`, `args`, `env`, `cwd` for stdio;
//! `url`, `transport` (`streamable-http` | `sse`, or the CLI-native alias
//! `type: "http"`), `headers` for HTTP; `enabled`, `requestTimeoutMs`,
//! `connectionTimeoutMs`, `toolFilter.include|exclude`,
//! `supportsParallelToolCalls`). OpenClaw's OAuth, TLS and Codex keys
//! (`auth`, `oauth`, `sslVerify`, `clientCert`, `clientKey`, `codex`) and
//! `mcp.sessionIdleTtlMs` are kept as written (`other`): ferroclaw keeps one
//! connection per server for the gateway's life and does no OAuth.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `mcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpSettings {
    /// Named stdio or remote MCP servers.
    pub servers: BTreeMap<String, McpServerSettings>,
    /// ferroclaw's: the timeouts of a server that sets none.
    pub defaults: McpServerDefaults,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `mcp.defaults`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerDefaults {
    pub request_timeout_ms: u64,
    pub connection_timeout_ms: u64,
    pub idle_timeout_ms: u64,
}

/// A server's timeouts: its own, else `mcp.defaults`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTimeouts {
    /// One request (a tool call, a listing).
    pub request: std::time::Duration,
    /// Connecting: spawn or dial, then the handshake.
    pub connection: std::time::Duration,
    /// A lazy server without a call is stopped after this.
    pub idle: std::time::Duration,
}

/// `mcp.servers.<name>`. A wrong type is an error naming the key
/// (`mcp.servers.docs.args`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerSettings {
    /// The program of a stdio server (with `args`, `env`, `cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Set in the stdio server's environment (never in the prompt).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("writeOnly" = true))]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint of a remote server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `stdio` | `streamable-http` | `sse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The CLI-native alias of `transport` (`http` is `streamable-http`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Sent with every HTTP request (a bearer token, say).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("writeOnly" = true))]
    pub headers: BTreeMap<String, String>,
    /// false: kept in the config, never connected, no tools offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How long one request (a tool call, a listing) may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// ferroclaw's older name of `requestTimeoutMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// How long connecting (spawn or dial, then the handshake) may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_timeout_ms: Option<u64>,
    /// Which of the server's tools are offered (MCP tool names or `*` globs).
    #[serde(default)]
    pub tool_filter: ToolFilter,
    /// A hint for runtimes that call tools concurrently (runs here call
    /// one tool at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_parallel_tool_calls: Option<bool>,
    /// Per-call approval of this server's tools: `approve` (never asks;
    /// the default, OpenClaw's full-permission posture), `prompt` (an
    /// operator approves every call) or `auto` (asks unless the tool is
    /// read-only by its annotations or an operator's allow-always covers
    /// it). OpenClaw's `codex.defaultToolsApprovalMode` is read too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// Started by its first call instead of at boot (its tools offered
    /// from the list it gave last time), and stopped after `idleTimeoutMs`
    /// without a call (ferroclaw's keys; `mcp/lazy.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lazy: Option<bool>,
    /// Only these agents are offered the server's tools (none: every
    /// agent). OpenClaw's `codex.agents` is read too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// OpenClaw's Codex-app-server keys for the same server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex: Option<CodexMcpSettings>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `mcp.servers.<name>.codex` (OpenClaw's): read where ferroclaw's own
/// keys (`agents`, `approval`) are unset; its other keys are kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodexMcpSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_tools_approval_mode: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// When a call to a server's tool waits for an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpApproval {
    Approve,
    Prompt,
    Auto,
}

/// `mcp.servers.<name>.toolFilter`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFilter {
    /// Only these (none: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Never these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Whether the MCP tool `name` passes (exact names or simple `*` globs).
    pub fn admits(&self, name: &str) -> bool {
        let hit = |pats: &[String]| pats.iter().any(|p| glob(p.trim(), name));
        (self.include.is_empty() || hit(&self.include)) && !hit(&self.exclude)
    }
}

/// A simple glob: `*` matches any run of characters, nothing else is special.
pub fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let tail: Vec<&str> = parts.collect();
    let Some((last, middle)) = tail.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    /// Streamable HTTP (2025-03-26 and later).
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl McpServerSettings {
    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    /// The approval mode's text: `approval`, else OpenClaw's
    /// `codex.defaultToolsApprovalMode`.
    fn approval_text(&self) -> Option<&str> {
        self.approval
            .as_deref()
            .or_else(|| self.codex.as_ref()?.default_tools_approval_mode.as_deref())
    }

    /// The approval mode (an unknown value is refused by validation; here
    /// it asks, the safe reading).
    pub fn approval_mode(&self) -> McpApproval {
        match self.approval_text().map(str::trim) {
            None | Some("approve") => McpApproval::Approve,
            Some("auto") => McpApproval::Auto,
            Some(_) => McpApproval::Prompt,
        }
    }

    /// The agents the server is for (None: all): `agents`, else
    /// OpenClaw's `codex.agents`.
    pub fn agent_ids(&self) -> Option<Vec<String>> {
        self.agents
            .clone()
            .or_else(|| self.codex.as_ref()?.agents.clone())
    }

    pub fn is_lazy(&self) -> bool {
        self.lazy == Some(true)
    }

    /// Its timeouts, `defaults`' where it sets none.
    pub fn timeouts(&self, defaults: &McpServerDefaults) -> McpTimeouts {
        let ms =
            |own: Option<u64>, d: u64| std::time::Duration::from_millis(own.unwrap_or(d).max(1));
        McpTimeouts {
            request: ms(
                self.request_timeout_ms.or(self.timeout_ms),
                defaults.request_timeout_ms,
            ),
            connection: ms(self.connection_timeout_ms, defaults.connection_timeout_ms),
            idle: ms(self.idle_timeout_ms, defaults.idle_timeout_ms),
        }
    }

    /// `stdio` | `streamable-http` | `sse` | `invalid`.
    pub fn transport_name(&self) -> &'static str {
        match self.transport() {
            Ok(McpTransport::Stdio { .. }) => "stdio",
            Ok(McpTransport::Http { .. }) => "streamable-http",
            Ok(McpTransport::Sse { .. }) => "sse",
            Err(_) => "invalid",
        }
    }

    /// The transport, or what is wrong with the entry (for `config validate`
    /// and the server's health).
    pub fn transport(&self) -> Result<McpTransport, BadTransport> {
        let declared = self
            .transport
            .as_deref()
            .or(self.kind.as_deref())
            .map(str::trim)
            .map(|t| t.to_ascii_lowercase());
        let headers = self.headers.clone();
        match (declared.as_deref(), &self.command, &self.url) {
            (Some("stdio") | None, Some(command), _) if !command.trim().is_empty() => {
                Ok(McpTransport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                })
            }
            (Some("stdio"), _, _) => Err(BadTransport::StdioWithoutCommand),
            (Some("sse"), _, Some(url)) => Ok(McpTransport::Sse {
                url: url.clone(),
                headers,
            }),
            (Some("streamable-http" | "http" | "streamable_http") | None, _, Some(url)) => {
                Ok(McpTransport::Http {
                    url: url.clone(),
                    headers,
                })
            }
            (Some(t @ ("sse" | "streamable-http" | "http" | "streamable_http")), _, None) => {
                Err(BadTransport::NoUrl(t.to_string()))
            }
            (Some(other), _, _) => Err(BadTransport::Unknown(other.to_string())),
            (None, _, None) => Err(BadTransport::Nothing),
        }
    }
}

/// Why an `mcp.servers` entry names no transport ferroclaw can open.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadTransport {
    #[error("transport \"stdio\" needs a non-empty `command`")]
    StdioWithoutCommand,
    #[error("transport {0:?} needs a `url`")]
    NoUrl(String),
    #[error("unknown transport {0:?} (stdio, streamable-http or sse)")]
    Unknown(String),
    #[error("needs a `command` (stdio) or a `url` (HTTP)")]
    Nothing,
}

/// The problems of `mcp.servers` that loading does not catch (the types do):
/// each as (key path, message).
pub fn mcp_problems(settings: &McpSettings) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, server) in &settings.servers {
        let path = format!("mcp.servers.{name}");
        if name == "__proto__" || name.trim().is_empty() {
            out.push((path.clone(), "reserved or empty server name".into()));
        }
        if !server.is_enabled() {
            continue;
        }
        if let Err(e) = server.transport() {
            out.push((path.clone(), e.to_string()));
        }
        if let Some(ids) = server.agent_ids() {
            if ids.is_empty() || ids.iter().any(|i| i.trim().is_empty()) {
                let key = match server.agents {
                    Some(_) => "agents",
                    None => "codex.agents",
                };
                out.push((
                    format!("{path}.{key}"),
                    "must name at least one agent id, none blank (leave it out for every agent)"
                        .into(),
                ));
            }
        }
        if let Some(a) = server.approval_text() {
            if !matches!(a.trim(), "approve" | "prompt" | "auto") {
                let key = match server.approval {
                    Some(_) => "approval",
                    None => "codex.defaultToolsApprovalMode",
                };
                out.push((
                    format!("{path}.{key}"),
                    format!("{a:?} is not one of \"approve\", \"prompt\", \"auto\""),
                ));
            }
        }
        if let Some(url) = &server.url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                out.push((
                    format!("{path}.url"),
                    "must be an http:// or https:// URL".into(),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_without_timeouts_takes_mcp_defaults() {
        use std::time::Duration;
        let m: McpSettings = crate::settings::shipped_with(
            "mcp",
            serde_json::json!({ "servers": {
                "own": { "command": "x", "requestTimeoutMs": 5, "connectionTimeoutMs": 6, "idleTimeoutMs": 7 },
                "older": { "command": "x", "timeoutMs": 8 },
                "bare": { "command": "x" },
            } }),
        );
        let t = |name: &str| m.servers[name].timeouts(&m.defaults);
        let ms = Duration::from_millis;
        assert_eq!(
            (t("own").request, t("own").connection, t("own").idle),
            (ms(5), ms(6), ms(7))
        );
        assert_eq!(t("older").request, ms(8));
        let shipped = (ms(60_000), ms(30_000), ms(300_000));
        assert_eq!(
            (t("bare").request, t("bare").connection, t("bare").idle),
            shipped
        );
    }

    #[test]
    fn globs_match_like_openclaws_filters() {
        assert!(glob("read_*", "read_file"));
        assert!(glob("*", "anything"));
        assert!(glob("a*c", "abbbc"));
        assert!(!glob("a*c", "abbb"));
        assert!(glob("echo", "echo"));
        assert!(!glob("echo", "echo2"));
        let f = ToolFilter {
            include: vec!["get-*".into(), "echo".into()],
            exclude: vec!["get-env".into()],
        };
        assert!(f.admits("echo") && f.admits("get-sum"));
        assert!(!f.admits("get-env") && !f.admits("add"));
    }

    #[test]
    fn the_transport_follows_openclaws_keys() {
        let s: McpServerSettings = serde_json::from_value(
            serde_json::json!({"url": "http://127.0.0.1:1/mcp", "type": "http"}),
        )
        .unwrap();
        assert!(matches!(s.transport(), Ok(McpTransport::Http { .. })));
        let s: McpServerSettings =
            serde_json::from_value(serde_json::json!({"command": "node", "args": ["x.js"]}))
                .unwrap();
        assert!(matches!(s.transport(), Ok(McpTransport::Stdio { .. })));
        let s: McpServerSettings =
            serde_json::from_value(serde_json::json!({"transport": "stdio"})).unwrap();
        assert!(s.transport().unwrap_err().to_string().contains("command"));
        let mut m: McpSettings = crate::settings::shipped_with("mcp", serde_json::json!({}));
        m.servers.insert(
            "x".into(),
            serde_json::from_value(serde_json::json!({"url": "ftp://x"})).unwrap(),
        );
        let p = mcp_problems(&m);
        assert_eq!(p[0].0, "mcp.servers.x.url", "{p:?}");
    }

    #[test]
    fn the_approval_mode_reads_openclaws_key_too_and_a_bad_one_is_named() {
        let s = |v: serde_json::Value| serde_json::from_value::<McpServerSettings>(v).unwrap();
        let base = serde_json::json!({"command": "node"});
        assert_eq!(s(base.clone()).approval_mode(), McpApproval::Approve);
        let mut v = base.clone();
        v["codex"] = serde_json::json!({"defaultToolsApprovalMode": "auto"});
        assert_eq!(s(v.clone()).approval_mode(), McpApproval::Auto);
        v["approval"] = serde_json::json!("prompt");
        assert_eq!(s(v).approval_mode(), McpApproval::Prompt);
        let mut m: McpSettings = crate::settings::shipped_with("mcp", serde_json::json!({}));
        let mut bad = base;
        bad["approval"] = serde_json::json!("sometimes");
        m.servers.insert("x".into(), s(bad.clone()));
        let p = mcp_problems(&m);
        assert_eq!(p[0].0, "mcp.servers.x.approval", "{p:?}");
        assert_eq!(s(bad).approval_mode(), McpApproval::Prompt, "unknown asks");
    }

    #[test]
    fn agent_lists_read_openclaws_key_and_an_empty_one_is_named() {
        let s = |v: serde_json::Value| serde_json::from_value::<McpServerSettings>(v).unwrap();
        assert_eq!(s(serde_json::json!({"command": "n"})).agent_ids(), None);
        let codex = s(serde_json::json!({"command": "n", "codex": {"agents": ["work"]}}));
        assert_eq!(codex.agent_ids(), Some(vec!["work".to_string()]));
        let mut m: McpSettings = crate::settings::shipped_with("mcp", serde_json::json!({}));
        m.servers.insert(
            "x".into(),
            s(serde_json::json!({"command": "n", "agents": []})),
        );
        m.servers.insert(
            "y".into(),
            s(serde_json::json!({"command": "n", "codex": {"agents": [" "]}})),
        );
        let keys: Vec<String> = mcp_problems(&m).into_iter().map(|p| p.0).collect();
        assert_eq!(keys, ["mcp.servers.x.agents", "mcp.servers.y.codex.agents"]);
    }
}
