//! What the `browser` tool says that is not a page's: the profiles list.

use serde_json::json;

/// `profiles`' answer: each profile, the default marked, whether its
/// browser runs (`running`: (runs, tabs) of a started one).
pub fn profiles_reply(
    names: &[String],
    default: &str,
    running: impl Fn(&String) -> Option<(bool, usize)>,
) -> String {
    let list: Vec<serde_json::Value> = names
        .iter()
        .map(|n| {
            let (up, tabs) = running(n).unwrap_or((false, 0));
            json!({ "name": n, "default": n == default, "driver": "openclaw", "running": up, "tabs": tabs })
        })
        .collect();
    json!({ "ok": true, "profiles": list }).to_string()
}
