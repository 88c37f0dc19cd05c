//! `ferroclaw nodes list|pending|describe|approve|reject|invoke|rename`:
//! the operator's side of nodes, through the running gateway (`node.*`).
//! A node is named by its id, an unambiguous id prefix, or its name.

use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

/// What to do.
#[derive(Clone, Copy)]
pub enum Action<'a> {
    List,
    Pending,
    Describe {
        node: &'a str,
    },
    Approve {
        request: &'a str,
    },
    Reject {
        request: &'a str,
    },
    Rename {
        node: &'a str,
        name: &'a str,
    },
    Invoke {
        node: &'a str,
        command: &'a str,
        params: &'a str,
        timeout_ms: u64,
    },
}

/// The node `name` means: its id, a unique id prefix, or its name.
async fn resolve(c: &mut Connection, name: &str) -> Result<String, Failure> {
    let list = c.call("node.list", json!({})).await?;
    let nodes = list["nodes"].as_array().cloned().unwrap_or_default();
    let id = |n: &Value| n["nodeId"].as_str().unwrap_or("").to_string();
    if let Some(n) = nodes.iter().find(|n| id(n) == name) {
        return Ok(id(n));
    }
    let matches: Vec<&Value> = nodes
        .iter()
        .filter(|n| {
            n["displayName"]
                .as_str()
                .is_some_and(|d| d.eq_ignore_ascii_case(name))
                || (name.len() >= 6 && id(n).starts_with(name))
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(id(one)),
        [] => Err(Failure::new(
            1,
            format!("no node {name:?} (ferroclaw nodes list)"),
        )),
        _ => Err(Failure::new(
            1,
            format!("{name:?} names several nodes: use the node id"),
        )),
    }
}

fn row(n: &Value) -> String {
    let state = if n["connected"] == true {
        "connected"
    } else {
        "offline"
    };
    format!(
        "{}  {}  {}  {state}, {}  {} commands",
        n["nodeId"].as_str().unwrap_or(""),
        n["displayName"].as_str().unwrap_or("-"),
        n["platform"].as_str().unwrap_or("-"),
        n["approvalState"].as_str().unwrap_or(""),
        n["commands"].as_array().map_or(0, Vec::len),
    )
}

/// What `nodes <action>` answered, for a person.
fn print_human(action: Action<'_>, out: &Value) {
    match action {
        Action::List => {
            let nodes = out["nodes"].as_array().cloned().unwrap_or_default();
            if nodes.is_empty() {
                println!("no nodes (run `openclaw node run` on a machine to add one)");
            }
            for n in nodes {
                println!("{}", row(&n));
            }
        }
        Action::Pending => {
            let pending = out["pending"].as_array().cloned().unwrap_or_default();
            if pending.is_empty() {
                println!("no node waits for approval");
            }
            for r in pending {
                println!(
                    "{}  {}  {}  asks for: {}",
                    r["requestId"].as_str().unwrap_or(""),
                    r["displayName"].as_str().unwrap_or("-"),
                    r["nodeId"].as_str().unwrap_or(""),
                    r["commands"].as_array().map_or(String::new(), |c| c
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")),
                );
            }
        }
        Action::Approve { .. } => println!("approved: {}", row(&out["node"])),
        Action::Reject { request } => println!("rejected {request}"),
        Action::Rename { .. } => println!("renamed: {}", out["displayName"].as_str().unwrap_or("")),
        Action::Describe { .. } | Action::Invoke { .. } => print_json(out),
    }
}

pub async fn nodes(t: &Target, action: Action<'_>) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let out = match action {
        Action::List => c.call("node.list", json!({})).await?,
        Action::Pending => c.call("node.pair.list", json!({})).await?,
        Action::Describe { node } => {
            let id = resolve(&mut c, node).await?;
            c.call("node.describe", json!({ "nodeId": id })).await?
        }
        Action::Approve { request } => {
            c.call("node.pair.approve", json!({ "requestId": request }))
                .await?
        }
        Action::Reject { request } => {
            c.call("node.pair.reject", json!({ "requestId": request }))
                .await?
        }
        Action::Rename { node, name } => {
            let id = resolve(&mut c, node).await?;
            c.call("node.rename", json!({ "nodeId": id, "displayName": name }))
                .await?
        }
        Action::Invoke {
            node,
            command,
            params,
            timeout_ms,
        } => {
            let params: Value = serde_json::from_str(params)
                .map_err(|e| Failure::new(2, format!("--params is not JSON: {e}")))?;
            let id = resolve(&mut c, node).await?;
            let key = ulid::Ulid::generate().to_string();
            let p = json!({ "nodeId": id, "command": command, "params": params,
                            "timeoutMs": timeout_ms, "idempotencyKey": key });
            c.call("node.invoke", p).await?
        }
    };
    if t.json {
        print_json(&out);
        return Ok(());
    }
    print_human(action, &out);
    Ok(())
}
