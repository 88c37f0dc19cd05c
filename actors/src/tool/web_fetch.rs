//! `web_fetch`: a plain HTTP GET of a public URL, HTML turned into markdown
//! or text (`dom_query`). Every hop, the first and each redirect,
//! goes through the SSRF guard and connects only to the addresses the guard
//! checked (no second DNS answer can slip in). Config: OpenClaw's
//! `tools.web.fetch` (`maxChars`, `maxCharsCap`, `maxResponseBytes`,
//! `timeoutSeconds`, `maxRedirects`, `userAgent`, `ssrfPolicy`), plus
//! ferroclaw's `ssrfPolicy.allowCidrs` for internal hosts meant to be
//! reachable.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use super::ssrf::{resolve_checked, Allowlist};
use super::{error, ToolOutcome};
use crate::settings::WebFetchSettings;

/// `tools.web.fetch` settings.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub enabled: bool,
    pub max_chars: usize,
    pub max_chars_cap: usize,
    pub max_response_bytes: usize,
    pub timeout: Duration,
    pub max_redirects: usize,
    pub user_agent: String,
    pub allow: Allowlist,
    /// Main-content extraction (Mozilla Readability's algorithm, `dom_smoothie`)
    /// before HTML is converted (`readability`, default true).
    pub readability: bool,
    /// Results are reused for this long (`cacheTtlMinutes`, default 15; 0: off).
    pub cache_ttl: Duration,
    /// Shared by every clone of these settings (one executor).
    pub cache: FetchCache,
}

/// Recent results by (mode, maxChars, URL).
#[derive(Debug, Clone, Default)]
pub struct FetchCache(
    std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, String)>>,
    >,
);

/// Results kept at most.
const CACHE_ENTRIES: usize = 100;

impl FetchCache {
    fn get(&self, key: &str, ttl: Duration) -> Option<(String, Duration)> {
        let map = self.0.lock().ok()?;
        let (at, text) = map.get(key)?;
        let age = at.elapsed();
        (age < ttl).then(|| (text.clone(), age))
    }

    fn put(&self, key: String, text: String, ttl: Duration) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|_, (at, _)| at.elapsed() < ttl);
            if map.len() >= CACHE_ENTRIES {
                if let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone())
                {
                    map.remove(&oldest);
                }
            }
            map.insert(key, (std::time::Instant::now(), text));
        }
    }
}

/// A `tools.web.fetch` the tool cannot use.
#[derive(Debug, thiserror::Error)]
#[error("tools.web.fetch.ssrfPolicy.allowCidrs: {0}")]
pub struct FetchSettingsError(String);

impl FetchSettings {
    /// From `tools.web.fetch` (its defaults are `config/default.json5`'s).
    pub fn from_settings(f: &WebFetchSettings) -> Result<FetchSettings, FetchSettingsError> {
        let policy = &f.ssrf_policy;
        let mut nets: Vec<&str> = Vec::new();
        if policy.allow_rfc2544_benchmark_range {
            nets.push("198.18.0.0/15");
        }
        if policy.allow_ipv6_unique_local_range {
            nets.push("fc00::/7");
        }
        nets.extend(policy.allow_cidrs.iter().map(String::as_str));
        let allow = Allowlist::parse(nets).map_err(|e| FetchSettingsError(e.to_string()))?;
        let max_chars_cap = f.max_chars_cap as usize;
        Ok(FetchSettings {
            enabled: f.enabled,
            max_chars: (f.max_chars as usize).min(max_chars_cap),
            max_chars_cap,
            max_response_bytes: f.max_response_bytes as usize,
            timeout: Duration::from_secs(f.timeout_seconds.max(1)),
            max_redirects: f.max_redirects as usize,
            user_agent: f.user_agent.clone(),
            allow,
            readability: f.readability,
            cache_ttl: Duration::from_secs(f.cache_ttl_minutes * 60),
            cache: FetchCache::default(),
        })
    }

    /// The shipped settings (`config/default.json5`), for tests.
    #[cfg(test)]
    pub fn shipped() -> FetchSettings {
        let web = crate::settings::shipped().tools.web.fetch;
        FetchSettings::from_settings(&web).expect("the shipped fetch settings are valid")
    }
}

/// The tool: `url`, `extractMode` (`markdown` | `text`), `maxChars`.
pub async fn run(settings: &FetchSettings, args: &Value) -> ToolOutcome {
    if !settings.enabled {
        return error("web_fetch is disabled (tools.web.fetch.enabled is false)");
    }
    let Some(raw) = args.get("url").and_then(Value::as_str) else {
        return error("web_fetch needs a \"url\" string");
    };
    let mode = match args.get("extractMode").and_then(Value::as_str) {
        None | Some("markdown") => Mode::Markdown,
        Some("text") => Mode::Text,
        Some(other) => {
            return error(format!(
                "extractMode must be \"markdown\" or \"text\", not {other:?}"
            ))
        }
    };
    let max_chars = match args.get("maxChars") {
        None | Some(Value::Null) => settings.max_chars,
        Some(v) => match v.as_u64() {
            Some(n) => (n as usize).min(settings.max_chars_cap),
            None => return error("maxChars must be a positive integer"),
        },
    };
    let key = format!("{mode:?}|{max_chars}|{raw}");
    // A page is a stranger's text: the model gets it as data.
    let source = format!("web_fetch of {raw}");
    if let Some((text, age)) = settings.cache.get(&key, settings.cache_ttl) {
        return ToolOutcome {
            text: format!(
                "Cached: fetched {}s ago\n{}",
                age.as_secs(),
                crate::trust::wrap(&source, &text)
            ),
            is_error: false,
            blocked: false,
            images: Vec::new(),
            ends_turn: None,
        };
    }
    match fetch(settings, raw).await {
        Ok(page) => {
            let text = page.render(mode, max_chars, settings.readability);
            if !settings.cache_ttl.is_zero() {
                settings.cache.put(key, text.clone(), settings.cache_ttl);
            }
            ToolOutcome {
                text: crate::trust::wrap(&source, &text),
                is_error: false,
                blocked: false,
                images: Vec::new(),
                ends_turn: None,
            }
        }
        Err(e) => error(e.to_string()),
    }
}

/// A page's readable text (markdown, at most `max_chars`), through the
/// same SSRF guard as the tool, not wrapped (link understanding wraps it).
pub async fn page_text(
    settings: &FetchSettings,
    url: &str,
    max_chars: usize,
) -> Result<String, FetchFailed> {
    let page = fetch(settings, url).await?;
    if !(200..300).contains(&page.status) {
        return Err(format!("{url}: HTTP {}", page.status).into());
    }
    Ok(page.render(Mode::Markdown, max_chars, settings.readability))
}

/// The main content of an article page (title, HTML), when Readability finds one.
fn main_content(html: &str, url: &str) -> Option<(String, String)> {
    let mut r = dom_smoothie::Readability::new(html, Some(url), None).ok()?;
    let article = r.parse().ok()?;
    // Too little text: the page is not an article; keep it whole.
    if article.text_content.chars().count() < 200 {
        return None;
    }
    Some((article.title.to_string(), article.content.to_string()))
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Markdown,
    Text,
}

struct Page {
    url: String,
    status: u16,
    content_type: String,
    body: Vec<u8>,
    truncated: bool,
}

impl Page {
    fn render(&self, mode: Mode, max_chars: usize, readability: bool) -> String {
        let ct = self.content_type.to_ascii_lowercase();
        let html = ct.contains("html") || (ct.is_empty() && looks_like_html(&self.body));
        let textual = html
            || ct.starts_with("text/")
            || ct.contains("json")
            || ct.contains("xml")
            || ct.contains("javascript");
        let mut title = None;
        let content = if html {
            let whole = String::from_utf8_lossy(&self.body);
            let page = match readability
                .then(|| main_content(&whole, &self.url))
                .flatten()
            {
                Some((t, body)) => {
                    title = Some(t).filter(|t| !t.trim().is_empty());
                    body
                }
                None => whole.into_owned(),
            };
            converted(&page, mode)
        } else if textual {
            String::from_utf8_lossy(&self.body).into_owned()
        } else {
            format!(
                "(binary content, {} bytes; web_fetch returns text only)",
                self.body.len()
            )
        };
        let mut out = format!(
            "URL: {}\nStatus: {}\nContent-Type: {}\n",
            self.url, self.status, self.content_type
        );
        if let Some(t) = &title {
            out.push_str(&format!("Title: {t}\n"));
        }
        if self.truncated {
            out.push_str(
                "Note: the response was larger than maxResponseBytes; only its start was read.\n",
            );
        }
        out.push('\n');
        let total = content.chars().count();
        if total > max_chars {
            out.extend(content.chars().take(max_chars));
            out.push_str(&format!(
                "\n\n[truncated: {max_chars} of {total} characters]"
            ));
        } else {
            out.push_str(&content);
        }
        out
    }
}

/// Elements whose content is never the page's text.
const SKIPPED: [&str; 6] = ["script", "style", "noscript", "head", "template", "meta"];

/// An HTML page as Markdown or plain text, both from `dom_query`'s one DOM
/// (the tree Readability already parsed with: one HTML stack in the binary).
fn converted(page: &str, mode: Mode) -> String {
    let doc = dom_query::Document::from(page);
    match mode {
        Mode::Markdown => doc.md(Some(&SKIPPED)).to_string(),
        Mode::Text => {
            doc.select(&SKIPPED.join(",")).remove();
            doc.formatted_text().to_string()
        }
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

crate::reason_error! {
    /// Why a page could not be fetched (its URL named).
    pub struct FetchFailed;
}

async fn fetch(settings: &FetchSettings, raw: &str) -> Result<Page, FetchFailed> {
    let mut url = reqwest::Url::parse(raw).map_err(|e| format!("{raw}: not a URL ({e})"))?;
    for hop in 0..=settings.max_redirects {
        let res = request(settings, &url).await?;
        if !res.status().is_redirection() {
            return read_page(settings, &url, res).await;
        }
        let Some(location) = res
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Err(format!("{url}: redirect without a Location header").into());
        };
        if hop == settings.max_redirects {
            return Err(format!(
                "{raw}: more than {} redirects (tools.web.fetch.maxRedirects)",
                settings.max_redirects
            )
            .into());
        }
        url = url
            .join(location)
            .map_err(|e| format!("{url}: bad redirect target {location:?} ({e})"))?;
    }
    Err(format!("{raw}: too many redirects").into())
}

/// One GET of `url`, to exactly the addresses its host resolves to once
/// they passed the SSRF guard; redirects are not followed here.
async fn request(
    settings: &FetchSettings,
    url: &reqwest::Url,
) -> Result<reqwest::Response, FetchFailed> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{url}: only http and https URLs can be fetched").into());
    }
    let host = url
        .host_str()
        .ok_or_else(|| format!("{url}: no host"))?
        .to_string();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("{url}: no port"))?;
    let addrs = resolve_checked(&host, port, &settings.allow)
        .await
        .map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .user_agent(settings.user_agent.as_str())
        .resolve_to_addrs(host.trim_start_matches('[').trim_end_matches(']'), &addrs)
        .build()
        .map_err(|e| format!("cannot set up the request: {e}"))?;
    Ok(client
        .get(url.clone())
        .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.9")
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?)
}

/// The answer's body, at most `maxResponseBytes` (the rest cut, and said).
async fn read_page(
    settings: &FetchSettings,
    url: &reqwest::Url,
    res: reqwest::Response,
) -> Result<Page, FetchFailed> {
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    let mut truncated = false;
    let mut stream = res.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("{url}: read failed: {e}"))?;
        let room = settings.max_response_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url: url.to_string(),
        status,
        content_type,
        body,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const PAGE: &str =
        "<!doctype html><html><head><title>T</title><style>p{color:red}</style></head>\
        <body><h1>Hello</h1><p>Some <b>bold</b> text</p><script>evil()</script></body></html>";

    static ARTICLE_HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn article_page() -> String {
        let para = "The harbour lights came on one by one as the ferry crossed the bay, and the passengers watched the town fold itself into the dusk. ";
        format!(
            "<!doctype html><html><head><title>Ferry at dusk</title></head><body>\
             <nav><a href=\"/\">Home</a> <a href=\"/shop\">Shop the sale now</a> <a href=\"/login\">Log in</a></nav>\
             <div class=\"sidebar\"><a href=\"/ad\">Buy cheap widgets</a></div>\
             <article><h1>Ferry at dusk</h1><p>{}</p><p>{}</p><p>{}</p></article>\
             <footer><a href=\"/terms\">Terms of service</a> Copyright notice</footer></body></html>",
            para.repeat(3),
            para.repeat(2),
            para.repeat(2)
        )
    }

    /// A loopback HTTP/1.1 server with a few fixed routes.
    async fn server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let n = sock.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                        "/page" => (
                            "200 OK",
                            "Content-Type: text/html; charset=utf-8\r\n".into(),
                            PAGE.into(),
                        ),
                        "/to-page" => ("302 Found", "Location: /page\r\n".into(), Vec::new()),
                        "/article" => {
                            ARTICLE_HITS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            (
                                "200 OK",
                                "Content-Type: text/html\r\n".into(),
                                article_page().into_bytes(),
                            )
                        }
                        "/to-private" => (
                            "302 Found",
                            "Location: http://10.0.0.1/secret\r\n".into(),
                            Vec::new(),
                        ),
                        "/loop" => ("302 Found", "Location: /loop\r\n".into(), Vec::new()),
                        "/big" => (
                            "200 OK",
                            "Content-Type: text/plain\r\n".into(),
                            vec![b'x'; 300_000],
                        ),
                        "/bin" => (
                            "200 OK",
                            "Content-Type: application/octet-stream\r\n".into(),
                            vec![0, 159, 146, 150],
                        ),
                        _ => (
                            "404 Not Found",
                            "Content-Type: text/plain\r\n".into(),
                            b"nope".to_vec(),
                        ),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(&body).await;
                });
            }
        });
        format!("http://{addr}")
    }

    fn loopback_allowed() -> FetchSettings {
        FetchSettings {
            allow: Allowlist::parse(["127.0.0.0/8"]).unwrap(),
            ..FetchSettings::shipped()
        }
    }

    #[tokio::test]
    async fn a_loopback_url_is_refused_unless_allowlisted() {
        let base = server().await;
        let out = run(
            &FetchSettings::shipped(),
            &json!({"url": format!("{base}/page")}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("loopback"),
            "{}",
            out.text
        );
        let out = run(&loopback_allowed(), &json!({"url": format!("{base}/page")})).await;
        assert!(!out.is_error, "{}", out.text);
    }

    #[tokio::test]
    async fn html_becomes_markdown_or_text_without_scripts_and_styles() {
        let base = server().await;
        let s = loopback_allowed();
        let md = run(&s, &json!({"url": format!("{base}/page")})).await;
        assert!(md.text.contains("Status: 200"), "{}", md.text);
        assert!(
            md.text.contains("# Hello") && md.text.contains("**bold**"),
            "{}",
            md.text
        );
        assert!(
            !md.text.contains("evil") && !md.text.contains("color:red"),
            "{}",
            md.text
        );
        let text = run(
            &s,
            &json!({"url": format!("{base}/page"), "extractMode": "text"}),
        )
        .await;
        assert!(
            text.text.contains("Hello") && !text.text.contains("<h1>"),
            "{}",
            text.text
        );
        assert!(!text.text.contains("evil"), "{}", text.text);
    }

    #[tokio::test]
    async fn articles_are_reduced_to_their_main_content_and_results_are_cached() {
        let base = server().await;
        let s = loopback_allowed();
        let url = format!("{base}/article");
        let before = ARTICLE_HITS.load(std::sync::atomic::Ordering::SeqCst);
        let out = run(&s, &json!({"url": url})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(out.text.contains("Title: Ferry at dusk"), "{}", out.text);
        assert!(out.text.contains("harbour lights came on"), "{}", out.text);
        for clutter in ["Shop the sale", "cheap widgets", "Terms of service"] {
            assert!(!out.text.contains(clutter), "{clutter}: {}", out.text);
        }
        // The same request within the TTL is answered from the cache.
        let again = run(&s, &json!({"url": url})).await;
        assert!(
            again.text.starts_with("Cached: fetched 0s ago\n"),
            "{}",
            again.text
        );
        // The same page, in a block of its own (each block its own id).
        let (first, cached) = (
            crate::trust::unwrap(&out.text),
            crate::trust::unwrap(&again.text),
        );
        assert!(cached.ends_with(&*first), "{cached}");
        assert!(
            out.text.starts_with("<<<EXTERNAL_UNTRUSTED_CONTENT id=\""),
            "{}",
            out.text
        );
        assert!(out.text.contains("Source: web_fetch of "), "{}", out.text);
        assert_eq!(
            ARTICLE_HITS.load(std::sync::atomic::Ordering::SeqCst) - before,
            1
        );
        // Other modes are other entries; readability off keeps the whole page.
        let whole = FetchSettings {
            readability: false,
            cache_ttl: Duration::ZERO,
            ..loopback_allowed()
        };
        let out = run(&whole, &json!({"url": url, "extractMode": "text"})).await;
        assert!(
            out.text.contains("Shop the sale") && out.text.contains("Terms of service"),
            "{}",
            out.text
        );
        let n = ARTICLE_HITS.load(std::sync::atomic::Ordering::SeqCst) - before;
        run(&whole, &json!({"url": url, "extractMode": "text"})).await;
        assert_eq!(
            ARTICLE_HITS.load(std::sync::atomic::Ordering::SeqCst) - before,
            n + 1,
            "TTL 0: no cache"
        );
        let cfg = configured(json!({"cacheTtlMinutes": 5, "readability": false})).unwrap();
        assert_eq!(cfg.cache_ttl, Duration::from_secs(300));
        assert!(!cfg.readability);
        assert!(configured(json!({"readability": "yes"})).is_err());
    }

    #[tokio::test]
    async fn redirects_are_followed_and_each_hop_is_checked() {
        let base = server().await;
        let s = loopback_allowed();
        let out = run(&s, &json!({"url": format!("{base}/to-page")})).await;
        assert!(
            !out.is_error && out.text.contains("# Hello"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains(&format!("URL: {base}/page")),
            "{}",
            out.text
        );
        // The redirect target is refused before any connection is made.
        let out = run(&s, &json!({"url": format!("{base}/to-private")})).await;
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text.contains("10.0.0.1") && out.text.contains("private"),
            "{}",
            out.text
        );
        let out = run(&s, &json!({"url": format!("{base}/loop")})).await;
        assert!(
            out.is_error && out.text.contains("more than 3 redirects"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn big_and_binary_responses_are_capped_and_described() {
        let base = server().await;
        let s = FetchSettings {
            max_response_bytes: 1000,
            ..loopback_allowed()
        };
        let out = run(&s, &json!({"url": format!("{base}/big"), "maxChars": 50})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(
            out.text.contains("larger than maxResponseBytes"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("[truncated: 50 of 1000 characters]"),
            "{}",
            out.text
        );
        let out = run(&s, &json!({"url": format!("{base}/bin")})).await;
        assert!(out.text.contains("binary content, 4 bytes"), "{}", out.text);
        // maxChars above the cap is clamped to it.
        let capped = FetchSettings {
            max_chars_cap: 10,
            ..loopback_allowed()
        };
        let out = run(
            &capped,
            &json!({"url": format!("{base}/big"), "maxChars": 100000}),
        )
        .await;
        assert!(
            out.text.contains("[truncated: 10 of 300000 characters]"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_tool_errors() {
        let s = FetchSettings::shipped();
        for (args, want) in [
            (json!({}), "needs a \"url\""),
            (json!({"url": "ftp://example.com/x"}), "only http and https"),
            (json!({"url": "not a url"}), "not a URL"),
            (
                json!({"url": "http://example.com", "extractMode": "pdf"}),
                "extractMode",
            ),
            (
                json!({"url": "http://example.com", "maxChars": "many"}),
                "maxChars",
            ),
        ] {
            let out = run(&s, &args).await;
            assert!(
                out.is_error && out.text.contains(want),
                "{args}: {}",
                out.text
            );
        }
        let off = FetchSettings {
            enabled: false,
            ..FetchSettings::shipped()
        };
        assert!(
            run(&off, &json!({"url": "http://example.com"}))
                .await
                .is_error
        );
    }

    /// Why a patched `tools.web.fetch` is refused: unreadable as typed, or
    /// unusable by the tool.
    #[derive(Debug, thiserror::Error)]
    enum Refused {
        #[error(transparent)]
        Read(#[from] serde_json::Error),
        #[error(transparent)]
        Settings(#[from] FetchSettingsError),
    }

    /// The shipped `tools.web.fetch` with `patch` laid over it, read as
    /// the config loader reads it (a value of the wrong type: Err).
    fn configured(patch: Value) -> Result<FetchSettings, Refused> {
        let web: WebFetchSettings =
            serde_json::from_value(crate::settings::shipped_with("tools.web.fetch", patch))?;
        Ok(FetchSettings::from_settings(&web)?)
    }

    #[test]
    fn openclaw_config_keys_are_read_and_checked() {
        let s = configured(json!({
            "maxChars": 90000, "maxCharsCap": 60000, "maxResponseBytes": 1000,
            "timeoutSeconds": 5, "maxRedirects": 1, "userAgent": "ua",
            "ssrfPolicy": {"allowRfc2544BenchmarkRange": true, "allowCidrs": ["10.9.0.0/16"]},
        }))
        .unwrap();
        assert_eq!(
            (s.max_chars, s.max_chars_cap, s.max_response_bytes),
            (60000, 60000, 1000)
        );
        assert_eq!(
            (s.timeout, s.max_redirects, s.user_agent.as_str()),
            (Duration::from_secs(5), 1, "ua")
        );
        let ip = |a: &str| a.parse().unwrap();
        assert!(super::super::ssrf::check_ip("h", ip("198.18.0.9"), &s.allow).is_ok());
        assert!(super::super::ssrf::check_ip("h", ip("10.9.1.1"), &s.allow).is_ok());
        assert!(super::super::ssrf::check_ip("h", ip("10.8.1.1"), &s.allow).is_err());
        let bad = configured(json!({"ssrfPolicy": {"allowCidrs": ["x"]}}));
        assert!(bad.unwrap_err().to_string().contains("allowCidrs"));
        assert!(configured(json!({"maxChars": -1})).is_err());
        assert_eq!(configured(json!({})).unwrap().max_chars, 50_000);
    }
}
