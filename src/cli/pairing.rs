//! `ferroclaw pairing list|approve|dismiss`: the operator's side of DM
//! pairing, through the running gateway (`channels.pairing.*`).

use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

/// What to do.
pub enum Action<'a> {
    List { channel: Option<&'a str> },
    Approve { channel: &'a str, code: &'a str },
    Dismiss { channel: &'a str, code: &'a str },
}

/// The waiting request with this code (its account id).
async fn find(c: &mut Connection, channel: &str, code: &str) -> Result<Value, Failure> {
    let list = c
        .call("channels.pairing.list", json!({ "channel": channel }))
        .await?;
    list["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| {
            r["requestId"]
                .as_str()
                .is_some_and(|id| id.eq_ignore_ascii_case(code.trim()))
        })
        .cloned()
        .ok_or_else(|| {
            Failure::new(
                1,
                format!("no pairing request {code} waits on {channel} (unknown or expired)"),
            )
        })
}

pub async fn pairing(t: &Target, action: Action<'_>) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    match action {
        Action::List { channel } => {
            let params = channel.map_or_else(|| json!({}), |ch| json!({ "channel": ch }));
            let out = c.call("channels.pairing.list", params).await?;
            if t.json {
                print_json(&out);
                return Ok(());
            }
            let requests = out["requests"].as_array().cloned().unwrap_or_default();
            if requests.is_empty() {
                println!("no pairing requests");
            }
            for r in requests {
                println!(
                    "{}  {}/{}  {} ({})  expires {}",
                    r["requestId"].as_str().unwrap_or(""),
                    r["channel"].as_str().unwrap_or(""),
                    r["accountId"].as_str().unwrap_or(""),
                    r["senderLabel"].as_str().unwrap_or(""),
                    r["senderId"].as_str().unwrap_or(""),
                    r["expiresAt"].as_str().unwrap_or(""),
                );
            }
        }
        Action::Approve { channel, code } | Action::Dismiss { channel, code } => {
            let approve = matches!(action, Action::Approve { .. });
            let r = find(&mut c, channel, code).await?;
            let method = if approve {
                "channels.pairing.approve"
            } else {
                "channels.pairing.dismiss"
            };
            let params = json!({ "channel": channel, "accountId": r["accountId"], "requestId": r["requestId"] });
            let out = c.call(method, params).await?;
            if t.json {
                print_json(&out);
            } else if approve {
                println!(
                    "approved {} on {channel}: they can talk to the agent now",
                    out["senderId"].as_str().unwrap_or("")
                );
            } else {
                println!(
                    "dismissed the request of {} on {channel}",
                    out["senderId"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}
