//! `web_search` against wire fakes of Brave Search and SearXNG: results
//! normalized to OpenClaw's shape and wrapped as outside data, cached per
//! query, faults (429, 500, a slow answer, garbage, a refused key) as tool
//! errors the turn goes on from, OpenClaw's auto-detection with hand-over
//! and a named provider without it, and no tool at all when nothing is
//! configured (`tools.catalog` says why).

use serde_json::{json, Value};

use super::*;
use crate::support::fake_search::{FakeSearch, Mode, BRAVE_KEY, PERPLEXITY_KEY, TAVILY_KEY};
use crate::support::TOKEN;

fn brave(fake: &FakeSearch, key: &str) -> Value {
    json!({"entries": {"brave": {"config": {"webSearch": {"apiKey": key, "baseUrl": fake.base}}}}})
}

fn searxng(fake: &FakeSearch) -> Value {
    json!({"entries": {"searxng": {"config": {"webSearch": {"baseUrl": fake.base}}}}})
}

/// `/tools/invoke` of web_search: (HTTP status, the result or error text).
async fn search(gw: &TestGateway, args: Value) -> (u16, String) {
    let body = json!({"tool": "web_search", "args": args});
    invoke_tool(&gw.addr.to_string(), TOKEN, body).await
}

#[tokio::test]
async fn brave_results_come_normalized_wrapped_and_cached() {
    let fake = FakeSearch::start();
    let gw = TestGateway::with_config(json!({"plugins": brave(&fake, BRAVE_KEY)}));
    let (status, text) = search(
        &gw,
        json!({"query": "rust actors", "count": 2, "freshness": "week", "country": "PT"}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let head: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(head["kind"], "results");
    assert_eq!(head["provider"], "brave");
    assert_eq!(head["count"], 2);
    assert_eq!(head["externalContent"]["wrapped"], true);
    assert_eq!(head["cached"], false);
    // The provider's prose is a block of outside data; the bad URL is gone.
    assert!(text.contains("This is data from outside"), "{text}");
    assert!(text.contains("https://example.org/1") && text.contains("https://example.org/2"));
    assert!(
        !text.contains("example.org/3") && !text.contains("javascript:"),
        "{text}"
    );
    let asked = fake.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].token.as_deref(), Some(BRAVE_KEY));
    assert_eq!(asked[0].path, "/res/v1/web/search");
    let has = |k: &str, v: &str| asked[0].query.iter().any(|(a, b)| a == k && b == v);
    assert!(
        has("q", "rust actors")
            && has("count", "2")
            && has("freshness", "pw")
            && has("country", "PT"),
        "{asked:?}"
    );
    // The same query again: from the cache, the provider not asked.
    let (_, again) = search(
        &gw,
        json!({"query": "rust actors", "count": 2, "freshness": "week", "country": "PT"}),
    )
    .await;
    assert!(again.contains("\"cached\":true"), "{again}");
    assert_eq!(fake.asked().len(), 1);
}

#[tokio::test]
async fn tavily_and_perplexity_get_their_own_filters_and_give_their_own_fields() {
    let fake = FakeSearch::start();
    for (provider, key, filter, snippet) in [
        ("tavily", TAVILY_KEY, "time_range", "Tavily says 1"),
        (
            "perplexity",
            PERPLEXITY_KEY,
            "search_recency_filter",
            "Perplexity says 1",
        ),
    ] {
        let plugins = json!({"entries": {provider: {"config": {"webSearch": {"apiKey": key, "baseUrl": fake.base}}}}});
        let gw = TestGateway::with_config(json!({"plugins": plugins}));
        let (status, text) = search(
            &gw,
            json!({"query": "ferro", "count": 2, "freshness": "week", "country": "PT"}),
        )
        .await;
        assert_eq!(status, 200, "{provider}: {text}");
        let head: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            (head["provider"].as_str(), head["count"].as_u64()),
            (Some(provider), Some(2))
        );
        assert!(
            text.contains(snippet) && text.contains("This is data from outside"),
            "{text}"
        );
        let asked = fake.asked().pop().unwrap();
        assert_eq!(asked.token.as_deref(), Some(key));
        let body = asked.body.unwrap();
        assert_eq!(
            (&body["query"], &body["max_results"], &body[filter]),
            (&json!("ferro"), &json!(2), &json!("week"))
        );
        // Tavily's search has no country filter; Perplexity's has.
        assert_eq!(
            body.get("country").is_some(),
            provider == "perplexity",
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_providers_faults_are_tool_errors_the_turn_goes_on_from() {
    let fake = FakeSearch::start();
    let mut plugins = brave(&fake, BRAVE_KEY);
    plugins["entries"]["brave"]["config"]["webSearch"]["apiKey"] = json!(BRAVE_KEY);
    let (tg, gw) = start(json!({
        "plugins": plugins,
        "tools": {"web": {"search": {"provider": "brave", "timeoutSeconds": 1, "cacheTtlMinutes": 0}}},
    }));
    let cases = [
        (Mode::Status(429), "HTTP 429 (rate limited"),
        (Mode::Status(500), "HTTP 500 (the provider failed)"),
        (Mode::Garbage, "not the JSON it documents"),
        (
            Mode::Slow(std::time::Duration::from_secs(3)),
            "no answer within 1 s",
        ),
    ];
    for (i, (mode, says)) in cases.into_iter().enumerate() {
        fake.set(mode.clone());
        let (status, text) = search(&gw, json!({"query": format!("q{i}")})).await;
        assert_eq!(status, 400, "{mode:?}: {text}");
        assert!(
            text.contains("provider_error") && text.contains(says),
            "{mode:?}: {text}"
        );
    }
    // In a turn: the error is the tool's result and the model answers on.
    fake.set(Mode::Status(500));
    let reply = ask(&tg, OWNER, 1, &tool("web_search", json!({"query": "news"}))).await;
    assert!(
        reply.contains("Tool web_search returned") && reply.contains("HTTP 500"),
        "{reply}"
    );
    // A refused key is said as one.
    let wrong = FakeSearch::start();
    let gw2 = TestGateway::with_config(json!({"plugins": brave(&wrong, "not-the-key")}));
    let (_, text) = search(&gw2, json!({"query": "x"})).await;
    assert!(text.contains("HTTP 401 (the key was refused"), "{text}");
}

#[tokio::test]
async fn without_a_provider_auto_detection_hands_over_and_a_named_one_does_not() {
    let (b, s) = (FakeSearch::start(), FakeSearch::start());
    b.set(Mode::Status(500));
    let mut plugins = brave(&b, BRAVE_KEY);
    ferroclaw::config::merge_patch(&mut plugins, &searxng(&s));
    // Auto: Brave first (it has a key), then SearXNG.
    let auto = TestGateway::with_config(json!({"plugins": plugins.clone()}));
    let (status, text) = search(&auto, json!({"query": "ferroclaw"})).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("\"provider\":\"searxng\"") && text.contains("ferroclaw on searx"),
        "{text}"
    );
    assert_eq!((b.asked().len(), s.asked().len()), (1, 1));
    let asked = &s.asked()[0];
    assert_eq!(asked.path, "/search");
    assert!(
        asked
            .query
            .iter()
            .any(|(k, v)| k == "format" && v == "json"),
        "{asked:?}"
    );
    // Named: no hand-over.
    let named = TestGateway::with_config(json!({
        "plugins": plugins,
        "tools": {"web": {"search": {"provider": "brave"}}},
    }));
    let (status, text) = search(&named, json!({"query": "other"})).await;
    assert_eq!(status, 400);
    assert!(text.contains("brave: HTTP 500"), "{text}");
    assert_eq!(s.asked().len(), 1, "a named provider fell back");
}

#[tokio::test]
async fn with_nothing_configured_web_search_is_not_offered_and_the_catalog_says_why() {
    let (tg, gw) = start(json!({}));
    let mut c = admin(&gw).await;
    let cat = c.call("tools.catalog", json!({})).await["payload"].clone();
    let names: Vec<&str> = cat["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"web_search"), "{names:?}");
    assert!(
        names.contains(&"automations") && names.contains(&"message"),
        "{names:?}"
    );
    let why = &cat["unavailable"][0];
    assert_eq!(why["name"], "web_search", "{cat}");
    assert!(
        why["reason"].as_str().unwrap().contains("BRAVE_API_KEY"),
        "{why}"
    );
    let reply = ask(&tg, OWNER, 1, &tool("web_search", json!({"query": "x"}))).await;
    assert!(reply.contains("Unknown tool"), "{reply}");
    // Named but without its key: the same, and the reason names the key.
    let gw =
        TestGateway::with_config(json!({"tools": {"web": {"search": {"provider": "tavily"}}}}));
    let mut c = admin(&gw).await;
    let cat = c.call("tools.catalog", json!({})).await["payload"].clone();
    assert!(
        cat["unavailable"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("TAVILY_API_KEY"),
        "{cat}"
    );
}

#[tokio::test]
async fn a_strangers_search_goes_to_the_configured_provider_and_comes_back_wrapped() {
    // web_search is in the shipped untrusted profile: the stranger picks
    // the words, never the endpoint; what comes back is outside data.
    let fake = FakeSearch::start();
    let (tg, _gw) = start(json!({"plugins": brave(&fake, BRAVE_KEY)}));
    let reply = ask(
        &tg,
        STRANGER,
        1,
        &tool("web_search", json!({"query": "weather lisbon"})),
    )
    .await;
    assert!(reply.contains("Tool web_search returned"), "{reply}");
    assert!(reply.contains("externalContent"), "{reply}");
    let asked = fake.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0]
        .query
        .iter()
        .any(|(k, v)| k == "q" && v == "weather lisbon"));
    assert_eq!(asked[0].token.as_deref(), Some(BRAVE_KEY));
}
