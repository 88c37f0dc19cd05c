//! What the `browser` tool says that is not a page's: the profiles list.

use serde_json::{json, Value};

use super::messages::BrowserState;

/// `profiles`' answer: each profile, the default marked, whether its
/// browser runs and its tabs.
pub fn profiles_reply(states: &[BrowserState], default: &str) -> Value {
    let list: Vec<Value> = states
        .iter()
        .map(|s| {
            json!({ "name": s.profile, "default": s.profile == default, "driver": "openclaw",
                "running": s.running, "tabs": s.tabs })
        })
        .collect();
    json!({ "ok": true, "profiles": list })
}
