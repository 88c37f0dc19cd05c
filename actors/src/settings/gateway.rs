//! `gateway.{http, remote, tls, reload, tailscale}` with OpenClaw's keys.
//! ferroclaw reads `http.endpoints` (which HTTP APIs the gateway port
//! serves); `remote` is for clients (OpenClaw's CLI reads its token from
//! there), and `tls`, `reload`, `tailscale` are accepted so an OpenClaw
//! config loads: ferroclaw serves plain HTTP behind loopback or a proxy,
//! applies a changed config as `config.apply` says, and leaves Tailscale to
//! the host.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `gateway.http`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpSettings {
    pub endpoints: HttpEndpoints,
    #[schemars(schema_with = "super::shapes::object")]
    pub security_headers: Option<Value>,
}

/// `gateway.http.endpoints`: the HTTP APIs beside the WebSocket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpEndpoints {
    /// `/v1/chat/completions` and `/v1/models` (OpenAI's API).
    pub chat_completions: HttpEndpoint,
    /// OpenClaw's `/v1/responses` (not served by ferroclaw).
    #[schemars(schema_with = "super::shapes::object")]
    pub responses: Option<Value>,
    /// `/mcp`: the gateway as an MCP server.
    pub mcp: McpEndpoint,
}

/// `gateway.http.endpoints.chatCompletions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpEndpoint {
    pub enabled: bool,
    /// OpenClaw's image URL fetching for this endpoint.
    #[schemars(schema_with = "super::shapes::object")]
    pub images: Option<Value>,
}

/// `gateway.http.endpoints.mcp` (ferroclaw's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpEndpoint {
    pub enabled: bool,
    /// The tools `/mcp` offers besides the read-only ones; unset: those.
    pub allow: Option<Vec<String>>,
}

/// `gateway.remote`: where clients reach a gateway that is not local.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteSettings {
    pub url: Option<String>,
    /// `ssh` | `direct`.
    pub transport: Option<String>,
    pub remote_port: Option<u16>,
    #[schemars(extend("writeOnly" = true))]
    pub token: Option<String>,
    #[schemars(extend("writeOnly" = true))]
    pub password: Option<String>,
    #[schemars(schema_with = "super::shapes::object")]
    pub edge_auth: Option<Value>,
    pub tls_fingerprint: Option<String>,
    pub ssh_target: Option<String>,
    pub ssh_identity: Option<String>,
    /// `strict` | `openssh`.
    pub ssh_host_key_policy: Option<String>,
}

/// `gateway.tls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSettings {
    pub enabled: Option<bool>,
    pub auto_generate: Option<bool>,
    pub cert_path: Option<String>,
    pub key_path: Option<String>,
    pub ca_path: Option<String>,
}

/// `gateway.reload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReloadSettings {
    /// `off` | `hybrid`.
    pub mode: Option<String>,
}

/// `gateway.tailscale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TailscaleSettings {
    /// `off` | `serve` | `funnel`.
    pub mode: Option<String>,
    pub preserve_funnel: Option<bool>,
    /// OpenClaw's older key.
    pub reset_on_exit: Option<bool>,
}
