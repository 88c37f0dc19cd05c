//! `web_search` (OpenClaw's `tools.web.search`): a query sent to the
//! configured provider, its answer normalized to OpenClaw's `results`
//! shape and handed to the model as outside data (one wrapped block).
//! Providers: Brave Search, Perplexity's Search API, Tavily, SearXNG (a
//! self-hosted JSON API) and DuckDuckGo's HTML page (no key; only when
//! chosen by name). Without `provider`, the first one with a credential
//! wins in OpenClaw's order (Brave, Perplexity, Tavily, SearXNG), and a
//! failing one hands over to the next; a named one never falls back.
//! Answers are cached per query for `cacheTtlMinutes`. A provider's error
//! (refused key, 429, 5xx, a slow or garbled answer) is a tool error the
//! model can read, never a dead turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{error, ToolOutcome};
use crate::settings::{PluginsSettings, WebSearchPlugin, WebSearchSettings};

/// Why `tools.web.search` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SearchConfigError {
    #[error("tools.web.search.provider {0:?} is not one ferroclaw has (brave, perplexity, tavily, searxng, duckduckgo)")]
    UnknownProvider(String),
}

/// A search provider ferroclaw speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Brave,
    Perplexity,
    Tavily,
    Searxng,
    DuckDuckGo,
}

impl Provider {
    /// OpenClaw's ids, in its auto-detection order (key-free ones last:
    /// they never win it).
    const ALL: [Provider; 5] = [
        Provider::Brave,
        Provider::Perplexity,
        Provider::Tavily,
        Provider::Searxng,
        Provider::DuckDuckGo,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Provider::Brave => "brave",
            Provider::Perplexity => "perplexity",
            Provider::Tavily => "tavily",
            Provider::Searxng => "searxng",
            Provider::DuckDuckGo => "duckduckgo",
        }
    }

    fn parse(id: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.id() == id)
    }

    /// Where it answers unless `webSearch.baseUrl` says otherwise.
    fn default_base(self) -> Option<&'static str> {
        match self {
            Provider::Brave => Some("https://api.search.brave.com"),
            Provider::Perplexity => Some("https://api.perplexity.ai"),
            Provider::Tavily => Some("https://api.tavily.com"),
            Provider::Searxng => None,
            Provider::DuckDuckGo => Some("https://html.duckduckgo.com"),
        }
    }

    /// The environment variable holding its key (SearXNG: its base URL).
    fn env(self) -> Option<&'static str> {
        match self {
            Provider::Brave => Some("BRAVE_API_KEY"),
            Provider::Perplexity => Some("PERPLEXITY_API_KEY"),
            Provider::Tavily => Some("TAVILY_API_KEY"),
            Provider::Searxng => Some("SEARXNG_BASE_URL"),
            Provider::DuckDuckGo => None,
        }
    }
}

/// One provider ready to ask.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub provider: Provider,
    pub base: String,
    pub key: Option<String>,
}

/// What `web_search` asks, in order (empty: not configured, not offered).
#[derive(Debug, Clone, Default)]
pub struct SearchSettings {
    pub endpoints: Vec<Endpoint>,
    /// Whether a failing provider hands over to the next (auto-detection).
    pub fallback: bool,
    pub max_results: usize,
    pub timeout: Duration,
    pub cache_ttl: Duration,
    pub cache: SearchCache,
    /// Why it is not offered (for `tools.catalog`), when it is not.
    pub unavailable: Option<String>,
}

/// Answers by (provider, count, filters, query).
#[derive(Debug, Clone, Default)]
pub struct SearchCache(Arc<Mutex<HashMap<String, (Instant, String)>>>);

const CACHE_ENTRIES: usize = 200;

impl SearchCache {
    fn get(&self, key: &str, ttl: Duration) -> Option<String> {
        let map = self.0.lock().ok()?;
        let (at, text) = map.get(key)?;
        (at.elapsed() < ttl).then(|| text.clone())
    }

    fn put(&self, key: String, text: String, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        if let Ok(mut map) = self.0.lock() {
            map.retain(|_, (at, _)| at.elapsed() < ttl);
            if map.len() >= CACHE_ENTRIES {
                return;
            }
            map.insert(key, (Instant::now(), text));
        }
    }
}

impl SearchSettings {
    /// From `tools` (its `web.search`, defaults from `config/default.json5`)
    /// and `plugins.entries.<provider>.config.webSearch` (`apiKey`,
    /// `baseUrl`), the keys' environment variables as fallbacks.
    pub fn from_config(
        keys: &WebSearchSettings,
        plugins: &PluginsSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SearchSettings, SearchConfigError> {
        let mut s = SearchSettings {
            max_results: keys.max_results.clamp(1, 10) as usize,
            timeout: Duration::from_secs(keys.timeout_seconds.max(1)),
            cache_ttl: Duration::from_secs(keys.cache_ttl_minutes * 60),
            ..Default::default()
        };
        if !keys.enabled {
            s.unavailable = Some("tools.web.search.enabled is false".into());
            return Ok(s);
        }
        let endpoint = |p: Provider| endpoint(p, keys, plugins, env);
        match keys
            .provider
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            Some(id) => {
                let p = Provider::parse(&id.to_ascii_lowercase())
                    .ok_or_else(|| SearchConfigError::UnknownProvider(id.into()))?;
                match endpoint(p) {
                    Some(e) => s.endpoints.push(e),
                    None => {
                        s.unavailable = Some(format!(
                            "tools.web.search.provider is {id} but it has no {} (plugins.entries.{id}.config.webSearch or {})",
                            if p == Provider::Searxng { "baseUrl" } else { "apiKey" },
                            p.env().unwrap_or_default()
                        ))
                    }
                }
            }
            None => {
                s.fallback = true;
                s.endpoints = Provider::ALL
                    .into_iter()
                    .filter(|p| *p != Provider::DuckDuckGo)
                    .filter_map(endpoint)
                    .collect();
                if s.endpoints.is_empty() {
                    s.unavailable = Some(
                        "no search provider is configured: set BRAVE_API_KEY (or PERPLEXITY_API_KEY, TAVILY_API_KEY, SEARXNG_BASE_URL), or tools.web.search.provider \"duckduckgo\"".into(),
                    );
                }
            }
        }
        Ok(s)
    }
}

/// Where provider `p` is asked, when it can be: its base URL and key from
/// `plugins.entries.<p>.config.webSearch`, else the legacy
/// `tools.web.search.apiKey` (Brave), else its environment variable.
fn endpoint(
    p: Provider,
    keys: &WebSearchSettings,
    plugins: &PluginsSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Endpoint> {
    let cfg = plugins.web_search(p.id());
    let text = |value: fn(&WebSearchPlugin) -> &Option<String>| {
        cfg.and_then(|c| value(c).as_deref())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let base_url = || text(|c| &c.base_url);
    let legacy = (p == Provider::Brave)
        .then(|| keys.api_key.clone())
        .flatten()
        .filter(|k| !k.trim().is_empty());
    let from_env = legacy.or_else(|| p.env().and_then(env).filter(|v| !v.trim().is_empty()));
    let (base, key) = match p {
        Provider::Searxng => (base_url().or(from_env), None),
        Provider::DuckDuckGo => (base_url(), None),
        _ => (base_url(), Some(text(|c| &c.api_key).or(from_env)?)),
    };
    let base = base.or(p.default_base().map(str::to_string))?;
    Some(Endpoint {
        provider: p,
        base: base.trim_end_matches('/').to_string(),
        key,
    })
}

/// One normalized result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub title: String,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_name: Option<String>,
}

/// Why one provider gave no results.
#[derive(Debug, thiserror::Error)]
enum ProviderError {
    #[error("HTTP {status}{}", hint(*status))]
    Status { status: u16 },
    #[error("no answer within {0} s")]
    Timeout(u64),
    #[error("cannot reach it: {0}")]
    Connect(String),
    #[error("its answer is not the JSON it documents: {0}")]
    Garbled(String),
}

fn hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (the key was refused: check it, or choose another provider)",
        429 => " (rate limited: try again later)",
        500..=599 => " (the provider failed)",
        _ => "",
    }
}

/// The query and its filters.
struct Query<'a> {
    q: &'a str,
    count: usize,
    country: Option<&'a str>,
    language: Option<&'a str>,
    freshness: Option<&'a str>,
    search_lang: Option<&'a str>,
    ui_lang: Option<&'a str>,
}

fn opt<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The tool.
/// The call's query: `count` (1-10, else the settings'), `freshness`
/// (day, week, month or year) and the optional filters.
fn query_of<'a>(s: &SearchSettings, q: &'a str, args: &'a Value) -> Result<Query<'a>, ToolOutcome> {
    let count = match args.get("count") {
        None | Some(Value::Null) => s.max_results,
        Some(v) => match v.as_f64() {
            Some(n) if (1.0..=10.0).contains(&n) => n as usize,
            _ => return Err(error("web_search: `count` must be a number from 1 to 10")),
        },
    };
    let freshness = opt(args, "freshness");
    if let Some(f) = freshness {
        if !["day", "week", "month", "year"].contains(&f) {
            return Err(error(
                "web_search: `freshness` must be day, week, month or year",
            ));
        }
    }
    Ok(Query {
        q,
        count,
        country: opt(args, "country"),
        language: opt(args, "language"),
        freshness,
        search_lang: opt(args, "search_lang"),
        ui_lang: opt(args, "ui_lang"),
    })
}

pub async fn run(s: &SearchSettings, args: &Value) -> ToolOutcome {
    if let Some(why) = &s.unavailable {
        return error(format!("web_search is unavailable: {why}"));
    }
    let Some(q) = opt(args, "query") else {
        return error("web_search: `query` (string) is required");
    };
    let query = match query_of(s, q, args) {
        Ok(query) => query,
        Err(e) => return e,
    };
    let count = query.count;
    let Some(client) = client() else {
        return error("web_search: the HTTP client cannot start");
    };
    let mut first_error: Option<String> = None;
    for e in &s.endpoints {
        let key = format!(
            "{}|{}|{count}|{:?}|{:?}|{:?}|{:?}|{:?}|{q}",
            e.provider.id(),
            e.base,
            query.country,
            query.language,
            query.freshness,
            query.search_lang,
            query.ui_lang
        );
        if let Some(text) = s.cache.get(&key, s.cache_ttl) {
            return super::ok(text.replacen("\"cached\":false", "\"cached\":true", 1));
        }
        let started = Instant::now();
        match ask(client, e, &query, s.timeout).await {
            Ok(mut hits) => {
                hits.truncate(count);
                let took = started.elapsed().as_millis() as u64;
                let text = render(e.provider, q, &hits, took);
                s.cache.put(key, text.clone(), s.cache_ttl);
                return super::ok(text);
            }
            Err(err) => {
                tracing::warn!(provider = e.provider.id(), error = %err, "web_search provider failed");
                first_error.get_or_insert(format!("{}: {err}", e.provider.id()));
                if !s.fallback {
                    break;
                }
            }
        }
    }
    let why = first_error.unwrap_or_else(|| "no provider answered".into());
    error(
        json!({
            "kind": "error",
            "provider": s.endpoints.first().map(|e| e.provider.id()).unwrap_or_default(),
            "error": "provider_error",
            "message": format!("web_search failed: {why}"),
        })
        .to_string(),
    )
}

/// One client for every search (its TLS roots are read once); each
/// request carries the configured timeout.
fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: std::sync::OnceLock<Option<reqwest::Client>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .user_agent(concat!("ferroclaw/", env!("CARGO_PKG_VERSION")))
                .build()
                .ok()
        })
        .as_ref()
}

/// OpenClaw's `results` shape; the provider's prose is one wrapped block.
fn render(p: Provider, q: &str, hits: &[Hit], took_ms: u64) -> String {
    let head = json!({
        "kind": "results",
        "provider": p.id(),
        "query": q,
        "count": hits.len(),
        "tookMs": took_ms,
        "externalContent": {"untrusted": true, "source": "web_search", "wrapped": true, "provider": p.id()},
        "cached": false,
    });
    let body = serde_json::to_string_pretty(&json!({ "results": hits })).unwrap_or_default();
    format!(
        "{head}\n{}",
        crate::trust::wrap(&format!("web_search results from {}", p.id()), &body)
    )
}

async fn send(
    req: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let r = req
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| match e.is_timeout() {
            true => ProviderError::Timeout(timeout.as_secs()),
            false => ProviderError::Connect(e.without_url().to_string()),
        })?;
    let status = r.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(ProviderError::Status { status });
    }
    Ok(r)
}

async fn body_json(r: reqwest::Response, timeout: Duration) -> Result<Value, ProviderError> {
    let bytes = r.bytes().await.map_err(|e| match e.is_timeout() {
        true => ProviderError::Timeout(timeout.as_secs()),
        false => ProviderError::Connect(e.without_url().to_string()),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ProviderError::Garbled(e.to_string()))
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Results whose URL is http(s); the rest are dropped.
fn hits(list: Option<&Value>, snippet: &str, date: &str) -> Result<Vec<Hit>, ProviderError> {
    let list = list
        .and_then(Value::as_array)
        .ok_or_else(|| ProviderError::Garbled("no results list".into()))?;
    Ok(list
        .iter()
        .filter_map(|r| {
            let url = s(r, "url")?;
            let parsed = reqwest::Url::parse(&url).ok()?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return None;
            }
            Some(Hit {
                title: s(r, "title").unwrap_or_else(|| url.clone()),
                site_name: parsed.host_str().map(str::to_string),
                url: parsed.to_string(),
                snippet: s(r, snippet),
                published: s(r, date),
            })
        })
        .collect())
}

async fn ask(
    client: &reqwest::Client,
    e: &Endpoint,
    q: &Query<'_>,
    timeout: Duration,
) -> Result<Vec<Hit>, ProviderError> {
    match e.provider {
        Provider::Brave => brave(client, e, q, timeout).await,
        Provider::Searxng => {
            let mut params = vec![("q", q.q.to_string()), ("format", "json".to_string())];
            if let Some(l) = q.language {
                params.push(("language", l.to_string()));
            }
            if let Some(f) = q.freshness {
                params.push(("time_range", f.to_string()));
            }
            let get = client.get(format!("{}/search", e.base)).query(&params);
            let v = body_json(send(get, timeout).await?, timeout).await?;
            hits(v.get("results"), "content", "publishedDate")
        }
        Provider::Tavily | Provider::Perplexity => posted(client, e, q, timeout).await,
        Provider::DuckDuckGo => {
            let post = client.post(format!("{}/html/", e.base)).form(&[("q", q.q)]);
            let html = send(post, timeout)
                .await?
                .text()
                .await
                .map_err(|e| ProviderError::Connect(e.without_url().to_string()))?;
            Ok(duckduckgo_hits(&html))
        }
    }
}

/// Brave's web search: a GET with the subscription token.
async fn brave(
    client: &reqwest::Client,
    e: &Endpoint,
    q: &Query<'_>,
    timeout: Duration,
) -> Result<Vec<Hit>, ProviderError> {
    let mut params = vec![("q", q.q.to_string()), ("count", q.count.to_string())];
    if let Some(c) = q.country {
        params.push(("country", c.to_string()));
    }
    if let Some(l) = q.search_lang.or(q.language) {
        params.push(("search_lang", l.to_string()));
    }
    if let Some(l) = q.ui_lang {
        params.push(("ui_lang", l.to_string()));
    }
    if let Some(f) = q.freshness {
        params.push(("freshness", format!("p{}", &f[..1])));
    }
    let get = client
        .get(format!("{}/res/v1/web/search", e.base))
        .query(&params)
        .header("Accept", "application/json")
        .header("X-Subscription-Token", e.key.clone().unwrap_or_default());
    let v = body_json(send(get, timeout).await?, timeout).await?;
    hits(v.pointer("/web/results"), "description", "page_age")
}

/// Tavily and Perplexity both take a JSON POST with a bearer key; the
/// filters and the result fields are named differently.
async fn posted(
    client: &reqwest::Client,
    e: &Endpoint,
    q: &Query<'_>,
    timeout: Duration,
) -> Result<Vec<Hit>, ProviderError> {
    let mut body = json!({"query": q.q, "max_results": q.count});
    let tavily = e.provider == Provider::Tavily;
    if let (Some(c), false) = (q.country, tavily) {
        body["country"] = json!(c);
    }
    if let Some(f) = q.freshness {
        let filter = if tavily {
            "time_range"
        } else {
            "search_recency_filter"
        };
        body[filter] = json!(f);
    }
    let post = client
        .post(format!("{}/search", e.base))
        .bearer_auth(e.key.clone().unwrap_or_default())
        .json(&body);
    let v = body_json(send(post, timeout).await?, timeout).await?;
    match tavily {
        true => hits(v.get("results"), "content", "published_date"),
        false => hits(v.get("results"), "snippet", "date"),
    }
}

/// DuckDuckGo's HTML results page: each `a.result__a` (its link goes
/// through `/l/?uddg=<url>`) and the `.result__snippet` after it.
fn duckduckgo_hits(html: &str) -> Vec<Hit> {
    let doc = dom_query::Document::from(html);
    let mut out = Vec::new();
    for result in doc.select(".result").iter() {
        let link = result.select("a.result__a");
        let Some(href) = link.attr("href") else {
            continue;
        };
        let href = href.to_string();
        let absolute = if href.starts_with("//") {
            format!("https:{href}")
        } else {
            href
        };
        let url = reqwest::Url::parse(&absolute)
            .ok()
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "uddg")
                    .map(|(_, v)| v.to_string())
                    .or_else(|| Some(u.to_string()))
            })
            .and_then(|u| reqwest::Url::parse(&u).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let Some(url) = url else {
            continue;
        };
        let snippet = result.select(".result__snippet").text().trim().to_string();
        out.push(Hit {
            title: link.text().trim().to_string(),
            site_name: url.host_str().map(str::to_string),
            url: url.to_string(),
            snippet: (!snippet.is_empty()).then_some(snippet),
            published: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugins(v: Value) -> PluginsSettings {
        serde_json::from_value(v).unwrap()
    }

    fn defaults() -> WebSearchSettings {
        crate::settings::shipped_with("tools.web.search", json!({}))
    }

    #[test]
    fn auto_detection_takes_providers_with_a_key_in_openclaws_order() {
        let env = |k: &str| match k {
            "TAVILY_API_KEY" => Some("tv".to_string()),
            "SEARXNG_BASE_URL" => Some("http://127.0.0.1:8888/".to_string()),
            _ => None,
        };
        let brave =
            plugins(json!({"entries": {"brave": {"config": {"webSearch": {"apiKey": "b"}}}}}));
        let s = SearchSettings::from_config(&defaults(), &brave, &env).unwrap();
        let ids: Vec<_> = s.endpoints.iter().map(|e| e.provider.id()).collect();
        assert_eq!(ids, ["brave", "tavily", "searxng"]);
        assert!(s.fallback && s.unavailable.is_none());
        assert_eq!(s.endpoints[2].base, "http://127.0.0.1:8888");
        // Nothing configured: not offered, and the reason says what to set.
        let none =
            SearchSettings::from_config(&defaults(), &plugins(json!({})), &|_| None).unwrap();
        assert!(none.unavailable.unwrap().contains("BRAVE_API_KEY"));
        // Key-free DuckDuckGo only by name, and a named provider never falls back.
        let mut d = defaults();
        d.provider = Some("duckduckgo".into());
        let ddg = SearchSettings::from_config(&d, &plugins(json!({})), &|_| None).unwrap();
        assert_eq!(ddg.endpoints[0].provider, Provider::DuckDuckGo);
        assert!(!ddg.fallback);
        d.provider = Some("bing".into());
        assert!(matches!(
            SearchSettings::from_config(&d, &plugins(json!({})), &|_| None),
            Err(SearchConfigError::UnknownProvider(_))
        ));
    }

    #[test]
    fn duckduckgo_results_are_read_from_its_html_page() {
        let html = r#"<div class="result"><h2><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa&rut=x">Example A</a></h2>
<a class="result__snippet">First snippet</a></div>
<div class="result"><a class="result__a" href="javascript:alert(1)">bad</a></div>"#;
        let hits = duckduckgo_hits(html);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].url, "https://example.org/a");
        assert_eq!(hits[0].title, "Example A");
        assert_eq!(hits[0].snippet.as_deref(), Some("First snippet"));
    }
}
