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
    // The windows the provider's last answer reported (its rate-limit
    // headers), never estimated.
    let served = fake.served.load(std::sync::atomic::Ordering::Relaxed);
    let w = &s["providers"][0]["windows"];
    assert_eq!(w[0]["label"], "Requests", "{s}");
    assert_eq!(
        w[0]["usedPercent"],
        (served as f64 / 500.0 * 1000.0).round() / 10.0
    );
    assert_eq!(w[1]["label"], "Tokens");
    assert_eq!(
        w[1]["usedPercent"],
        (1500.0 * served as f64 / 30000.0 * 1000.0).round() / 10.0
    );
    assert!(w[1]["resetAt"].as_u64().unwrap() > s["providers"][0]["windowsAt"].as_u64().unwrap());

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

/// The Usage page's activity: turns on Telegram and the web chat, counted
/// per channel, with their messages, tool calls, errors and latencies,
/// and still there after a restart.
#[tokio::test]
async fn usage_counts_each_channels_turns_tools_errors_and_latency() {
    use super::telegram::{answers, telegram_config, BOT_TOKEN, LONG};
    use crate::support::fake_telegram::FakeTelegram;
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut gw = TestGateway::with_config(telegram_config(&fake, json!({ "streamMode": "off" })));
    fake.dm(42, 1, "hello from telegram");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: hello from telegram")
            == 1)
            .await
    );
    let mut c = admin(&gw).await;
    // A tool call whose result is an error (no such file), then the reply.
    say(
        &mut c,
        "main",
        "@tool read {\"path\": \"missing.md\"}",
        "w1",
    )
    .await;
    let u = c.call("sessions.usage", json!({})).await["payload"].clone();
    let a = &u["aggregates"];
    let channels: Vec<&str> = a["byChannel"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["channel"].as_str())
        .collect();
    assert!(
        channels.contains(&"telegram") && channels.contains(&"webchat"),
        "{a:#}"
    );
    assert_eq!(
        a["messages"],
        json!({"total": 5, "user": 2, "assistant": 3, "toolCalls": 1, "toolResults": 1, "errors": 1}),
        "{a:#}"
    );
    assert_eq!(
        a["tools"],
        json!({"totalCalls": 1, "uniqueTools": 1, "tools": [{"name": "read", "count": 1}]})
    );
    let latency = a["dailyLatency"].as_array().unwrap();
    assert_eq!(latency.len(), 1, "{a:#}");
    assert_eq!(latency[0]["count"], 3);
    assert!(latency[0]["p95Ms"].as_u64().unwrap() <= latency[0]["maxMs"].as_u64().unwrap());
    assert_eq!(a["latency"]["count"], 3);
    assert_eq!(a["daily"][0]["messages"], 5);
    assert_eq!(a["daily"][0]["toolCalls"], 1);
    // Direct messages share the main session (dmScope `main`): its row
    // counts both turns and names the channel it last heard from.
    let main = u["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "agent:main:main")
        .cloned()
        .unwrap_or_else(|| panic!("no main session: {u:#}"));
    assert_eq!(main["channel"], "telegram", "{main:#}");
    assert_eq!(main["usage"]["messageCounts"]["user"], 2);
    assert_eq!(main["usage"]["toolUsage"]["tools"][0]["name"], "read");
    assert_eq!(main["usage"]["latency"]["count"], 3);

    // Kept with the runs: the same after a restart.
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    let again = c.call("sessions.usage", json!({})).await["payload"].clone();
    assert_eq!(again["aggregates"]["messages"], a["messages"]);
    assert_eq!(again["aggregates"]["byChannel"], a["byChannel"]);
}
