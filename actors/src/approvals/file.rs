//! `exec-approvals.json` as OpenClaw writes it, edited in place (fields
//! this gateway does not know stay): an agent's `allowlist` of executables
//! and its `mcpTools` grants; and the approval request an MCP call raises.

use serde_json::{json, Value};

use super::McpGate;

/// `agents.<agent>.<list>`, made an array (and its parents objects) first.
fn agent_list<'a>(file: &'a mut Value, agent: &str, list: &str) -> Option<&'a mut Vec<Value>> {
    if !file.get("agents").is_some_and(Value::is_object) {
        file["agents"] = json!({});
    }
    let a = &mut file["agents"][agent];
    if !a.is_object() {
        *a = json!({});
    }
    if !a.get(list).is_some_and(Value::is_array) {
        a[list] = json!([]);
    }
    a[list].as_array_mut()
}

/// Adds each executable not already on the agent's allowlist.
pub fn allow_bins(file: &mut Value, agent: &str, bins: Vec<String>) {
    let Some(list) = agent_list(file, agent, "allowlist") else {
        return;
    };
    for bin in bins {
        let known = |e: &Value| e.get("pattern").and_then(Value::as_str) == Some(bin.as_str());
        if !list.iter().any(known) {
            list.push(
                json!({ "id": ulid::Ulid::generate().to_string(), "pattern": bin,
                              "lastUsedAt": crate::now_ms() }),
            );
        }
    }
}

/// Whether the agent holds an allow-always grant for this MCP tool.
pub fn mcp_granted(file: &Value, agent: &str, server: &str, tool: &str) -> bool {
    file["agents"][agent]["mcpTools"]
        .as_array()
        .is_some_and(|l| l.iter().any(|g| g["server"] == server && g["tool"] == tool))
}

/// Records an allow-always grant for this MCP tool.
pub fn grant_mcp(file: &mut Value, agent: &str, server: &str, tool: &str) {
    if let Some(list) = agent_list(file, agent, "mcpTools") {
        list.push(
            json!({ "server": server, "tool": tool, "source": "allow-always",
                          "addedAt": crate::now_ms() }),
        );
    }
}

/// The approval request an MCP call raises (host `mcp`).
pub fn mcp_request(gate: &McpGate) -> Value {
    json!({
        "command": format!("{}__{} {}", gate.server, gate.tool, gate.arguments),
        "host": "mcp",
        "agentId": gate.agent_id,
        "sessionKey": gate.session_key.as_str(),
        "mcpServer": gate.server,
        "mcpTool": gate.tool,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_added_once_and_other_fields_stay() {
        let mut file = json!({ "version": 1, "agents": { "main": { "other": true } } });
        allow_bins(&mut file, "main", vec!["/bin/ls".into(), "/bin/ls".into()]);
        allow_bins(&mut file, "main", vec!["/bin/ls".into()]);
        assert_eq!(
            file["agents"]["main"]["allowlist"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(file["agents"]["main"]["other"], true);
        assert!(!mcp_granted(&file, "main", "fs", "read"));
        grant_mcp(&mut file, "main", "fs", "read");
        assert!(mcp_granted(&file, "main", "fs", "read"));
        assert!(!mcp_granted(&file, "ops", "fs", "read"));
        let mut broken = json!({ "agents": [] });
        grant_mcp(&mut broken, "ops", "fs", "read");
        assert!(mcp_granted(&broken, "ops", "fs", "read"));
    }
}
