//! Usage and cost over the gateway: the price table in config, per-run
//! rows summed by `usage.cost` and `usage.status`, per-session and
//! per-model costs in `sessions.usage`, the `/usage` footer, and an
//! unpriced model counted as missing, never free.

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, final_text, say, TestGateway};

fn config(fake: &FakeProvider) -> Value {
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k",
            "models": [
                { "id": "priced", "cost": { "input": 2.5, "output": 10.0, "cacheRead": 1.25, "cacheWrite": 0 } },
                { "id": "free" } ] } } },
        "agents": { "defaults": { "model": { "primary": "fake/priced", "fallbacks": [] } } },
    })
}

/// Three tokens answered; usage: 12 prompt, 3 completion.
fn three() -> Script {
    Script::text(&["a", "b", "c"])
}

#[tokio::test]
async fn costs_follow_the_price_table_and_unpriced_models_are_missing() {
    let fake = FakeProvider::start().await;
    let gw = TestGateway::with_config(config(&fake));
    let mut c = admin(&gw).await;
    fake.push(three());
    say(&mut c, "main", "/usage full", "u0").await;
    let text = final_text(&say(&mut c, "main", "hello", "u1").await);
    let unit: f64 = (12.0 * 2.5 + 3.0 * 10.0) / 1e6;
    assert!(
        text.ends_with(&format!("· fake/priced · ${unit:.4}")),
        "{text}"
    );
    fake.push(three());
    say(&mut c, "work", "hello", "u2").await;
    // A session on the unpriced model.
    c.call(
        "sessions.patch",
        json!({"key": "other", "model": "fake/free"}),
    )
    .await;
    fake.push(three());
    say(&mut c, "other", "hello", "u3").await;

    let r = c.call("usage.cost", json!({})).await["payload"].clone();
    assert_eq!(r["totals"]["input"], 36);
    assert_eq!(r["totals"]["output"], 9);
    assert_eq!(
        r["totals"]["totalCost"].as_f64().unwrap(),
        (unit * 2.0 * 1e6).round() / 1e6
    );
    assert_eq!(r["totals"]["missingCostEntries"], 1);
    assert_eq!(r["totals"]["missingCostByModel"]["fake/free"], 1);
    assert_eq!(r["days"], 30);
    let daily = r["daily"].as_array().unwrap();
    assert_eq!(daily.len(), 1);
    assert_eq!(
        daily[0]["date"],
        chrono::Local::now().format("%Y-%m-%d").to_string()
    );
    assert_eq!(daily[0]["totalTokens"], 45);

    let s = c.call("usage.status", json!({})).await["payload"].clone();
    assert_eq!(s["providers"][0]["provider"], "fake");
    assert_eq!(s["providers"][0]["today"]["totalTokens"], 45);

    let u = c.call("sessions.usage", json!({})).await["payload"].clone();
    assert_eq!(u["totals"]["totalCost"], r["totals"]["totalCost"]);
    let main = u["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "agent:main:main")
        .unwrap()
        .clone();
    assert_eq!(
        main["usage"]["totalCost"].as_f64().unwrap(),
        (unit * 1e6).round() / 1e6
    );
    assert_eq!(main["usage"]["modelUsage"][0]["model"], "priced");
    let by_model = u["aggregates"]["byModel"].as_array().unwrap();
    assert_eq!(by_model.len(), 2);
    assert_eq!(u["aggregates"]["costDaily"][0]["totalTokens"], 45);
    assert_eq!(u["aggregates"]["modelDaily"].as_array().unwrap().len(), 2);
    let bad = c
        .call("usage.cost", json!({"startDate": "2026-13-01"}))
        .await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
    let bad = c
        .call(
            "usage.cost",
            json!({"startDate": "2026-11-25", "endDate": "2026-11-01"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST");
}
