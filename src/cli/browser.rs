//! `ferroclaw browser status|start|stop|profiles|tabs|open|snapshot|
//! screenshot`: the gateway's browser through `browser.request` (OpenClaw's
//! routes, the same ones `openclaw browser` calls), printed as OpenClaw's
//! CLI prints them; `--json` prints the route's answer.

use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

#[derive(clap::Subcommand)]
pub enum BrowserCommand {
    /// The profile's browser: running, its DevTools port, headless.
    Status,
    /// Start the profile's browser (nothing happens when it runs).
    Start,
    /// Stop the profile's browser.
    Stop,
    /// The profiles and which run.
    Profiles,
    /// The open tabs.
    Tabs,
    /// Open a URL in a new tab.
    Open {
        #[arg(value_name = "URL")]
        target: String,
    },
    /// The current tab (or --target-id) as a snapshot with refs.
    Snapshot {
        /// ai (default) or aria.
        #[arg(long, default_value = "ai")]
        format: String,
        #[arg(long)]
        target_id: Option<String>,
        /// The compact interactive snapshot.
        #[arg(long)]
        efficient: bool,
    },
    /// A screenshot of the current tab (or TARGET_ID); prints where it is.
    Screenshot {
        target_id: Option<String>,
        #[arg(long)]
        full_page: bool,
    },
}

/// `browser.request`'s params for a command (`profile`: the profile).
fn request(command: &BrowserCommand, profile: Option<&str>) -> Value {
    let (method, path, mut query, body) = match command {
        BrowserCommand::Status => ("GET", "/", json!({}), Value::Null),
        BrowserCommand::Start => ("POST", "/start", json!({}), Value::Null),
        BrowserCommand::Stop => ("POST", "/stop", json!({}), Value::Null),
        BrowserCommand::Profiles => ("GET", "/profiles", json!({}), Value::Null),
        BrowserCommand::Tabs => ("GET", "/tabs", json!({}), Value::Null),
        BrowserCommand::Open { target } => {
            ("POST", "/tabs/open", json!({}), json!({ "url": target }))
        }
        BrowserCommand::Snapshot {
            format,
            target_id,
            efficient,
        } => {
            let mut q = json!({ "format": format });
            if let Some(t) = target_id {
                q["targetId"] = json!(t);
            }
            if *efficient {
                q["mode"] = json!("efficient");
            }
            ("GET", "/snapshot", q, Value::Null)
        }
        BrowserCommand::Screenshot {
            target_id,
            full_page,
        } => (
            "POST",
            "/screenshot",
            json!({}),
            json!({ "targetId": target_id, "fullPage": full_page }),
        ),
    };
    if let Some(p) = profile {
        query["profile"] = json!(p);
    }
    json!({ "method": method, "path": path, "query": query, "body": body })
}

/// The answer as OpenClaw's CLI prints it.
fn print_human(command: &BrowserCommand, out: &Value) {
    let s = |k: &str| match &out[k] {
        Value::Null => "(unset)".to_string(),
        Value::String(v) => v.clone(),
        v => v.to_string(),
    };
    match command {
        BrowserCommand::Status => {
            for k in [
                "profile",
                "enabled",
                "running",
                "transport",
                "cdpPort",
                "cdpUrl",
                "pid",
                "tabs",
                "headless",
                "detectedExecutablePath",
                "restarts",
                "lastError",
            ] {
                println!("{k}: {}", s(k));
            }
        }
        BrowserCommand::Start | BrowserCommand::Stop => {
            println!("browser [{}] running: {}", s("profile"), s("running"));
        }
        BrowserCommand::Profiles => {
            for p in out["profiles"].as_array().into_iter().flatten() {
                let default = if p["default"] == true {
                    " (default)"
                } else {
                    ""
                };
                println!(
                    "{}{default}: running {}, {} tabs",
                    p["name"].as_str().unwrap_or(""),
                    p["running"],
                    p["tabs"]
                );
            }
        }
        BrowserCommand::Tabs => print_tabs(out),
        BrowserCommand::Open { .. } => {
            println!(
                "opened: {}\ntab: {}\nid: {}",
                s("url"),
                s("tabId"),
                s("targetId")
            );
        }
        BrowserCommand::Snapshot { .. } => match out["nodes"].as_array() {
            Some(nodes) => nodes.iter().for_each(|n| println!("{n}")),
            None => println!("{}", out["snapshot"].as_str().unwrap_or("")),
        },
        BrowserCommand::Screenshot { .. } => println!("{}", s("path")),
    }
}

fn print_tabs(out: &Value) {
    let tabs = out["tabs"].as_array().cloned().unwrap_or_default();
    if tabs.is_empty() {
        println!("No tabs (browser closed or no targets).");
    }
    for (i, t) in tabs.iter().enumerate() {
        let title = t["title"]
            .as_str()
            .filter(|t| !t.is_empty())
            .unwrap_or("(untitled)");
        println!(
            "{}. {title} [tab: {}]\n   {}\n   id: {}",
            i + 1,
            t["tabId"].as_str().unwrap_or(""),
            t["url"].as_str().unwrap_or(""),
            t["targetId"].as_str().unwrap_or("")
        );
    }
}

pub async fn browser(
    t: &Target,
    command: &BrowserCommand,
    profile: Option<&str>,
    as_json: bool,
) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let out = c.call("browser.request", request(command, profile)).await?;
    if as_json {
        print_json(&out);
    } else {
        print_human(command, &out);
    }
    Ok(())
}
