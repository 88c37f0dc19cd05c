//! Link understanding, with OpenClaw's `tools.links` keys (`enabled`,
//! `maxLinks`, `timeoutSeconds`, `models[]`: CLI entries that get
//! the page on stdin, `{{LinkUrl}}` in their args, and print what the
//! model gets instead): up to `maxLinks` bare http(s) URLs of a message
//! (markdown links are citations, not fetched) are fetched through
//! `web_fetch`'s SSRF guard (`tools.web.fetch.ssrfPolicy`), their readable
//! text excerpted to `maxChars` (ferroclaw's key, per link) and
//! given to the model as `[Link]` blocks. On with `enabled: true`, or
//! when `models[]` is set (OpenClaw's); a failure is logged once and never
//! shown to the user.
//!
//! Trust: a page is outside data whoever linked it: always wrapped. A
//! stranger's links are fetched only with `tools.links.allowUntrusted`
//! (ferroclaw's key): a stranger could otherwise make the gateway fetch
//! for them.

use std::time::Duration;

use super::cli::CliError;
use crate::settings::{LinkEntry, LinksSettings};
use crate::tool::web_fetch::{page_text, FetchFailed, FetchSettings};

/// What a CLI entry may print.
const OUTPUT_MAX: usize = 1 << 20;

/// `tools.links` when it is on, with the fetch settings it goes through.
#[derive(Debug, Clone)]
pub struct LinksConfig {
    pub links: LinksSettings,
    /// `tools.web.fetch` (its SSRF policy, sizes, user agent).
    pub fetch: FetchSettings,
}

impl LinksConfig {
    /// From `tools` (None: `tools.links` is off, or `tools.web.fetch` is
    /// not usable, said once).
    pub fn from_tools(tools: &crate::settings::ToolsSettings) -> Option<LinksConfig> {
        if !tools.links.on() {
            return None;
        }
        match FetchSettings::from_settings(&tools.web.fetch) {
            Ok(fetch) => Some(LinksConfig {
                links: tools.links.clone(),
                fetch,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "tools.web.fetch not usable; link understanding off");
                None
            }
        }
    }

    fn timeout(&self, entry: Option<&LinkEntry>) -> Duration {
        let s = entry
            .and_then(|e| e.timeout_seconds)
            .unwrap_or(self.links.timeout_seconds);
        Duration::from_secs_f64(s.clamp(0.1, 600.0))
    }
}

/// The bare http(s) URLs of `text` (not those of markdown links), each
/// once, at most `max`.
pub fn find_links(text: &str, max: usize) -> Vec<String> {
    type Res = Option<(regex::Regex, regex::Regex)>;
    static RE: std::sync::OnceLock<Res> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        let md = regex::Regex::new(r"\[[^\]]*\]\((https?://[^)\s]+)\)").ok()?;
        let bare = regex::Regex::new(r"https?://[^\s<>()\[\]{}]+").ok()?;
        Some((md, bare))
    });
    let Some((md, bare)) = re else {
        return Vec::new();
    };
    let plain = md.replace_all(text, " ");
    let mut out: Vec<String> = Vec::new();
    for m in bare.find_iter(&plain) {
        let url = m
            .as_str()
            .trim_end_matches(['.', ',', ';', ':', '!', '?', '"', '\'']);
        if reqwest::Url::parse(url).is_ok() && !out.iter().any(|u| u == url) {
            out.push(url.to_string());
        }
        if out.len() >= max {
            break;
        }
    }
    out
}

/// The `[Link]` blocks for `text`'s links (`trusted`: the sender is an
/// operator); empty when link understanding is off or nothing came back.
pub async fn understand_links(cfg: Option<&LinksConfig>, text: &str, trusted: bool) -> Vec<String> {
    let Some(cfg) = cfg.filter(|c| trusted || c.links.allow_untrusted) else {
        return Vec::new();
    };
    let urls = find_links(text, cfg.links.max_links.clamp(1, 10));
    let mut blocks = Vec::new();
    for url in urls {
        match one(cfg, &url).await {
            Ok(t) if !t.trim().is_empty() => {
                let wrapped = crate::trust::wrap(&format!("the page at {url}"), t.trim());
                blocks.push(format!("[Link]\nURL: {url}\n{wrapped}"));
            }
            Ok(_) => tracing::info!(url = %url, "link understood as nothing"),
            Err(e) => tracing::info!(url = %url, error = %e, "link not understood"),
        }
    }
    blocks
}

async fn one(cfg: &LinksConfig, url: &str) -> Result<String, FetchFailed> {
    let max = cfg.links.max_chars.clamp(100, 50_000);
    let fetch = tokio::time::timeout(cfg.timeout(None), page_text(&cfg.fetch, url, max));
    let page = fetch
        .await
        .map_err(|_| FetchFailed::from("the fetch timed out"))??;
    for entry in cfg
        .links
        .models
        .iter()
        .filter(|e| e.kind.as_deref().unwrap_or("cli") == "cli")
    {
        match run(entry, url, &page, cfg.timeout(Some(entry))).await {
            Ok(out) if !out.trim().is_empty() => return Ok(out.chars().take(max).collect()),
            Ok(_) => {}
            Err(e) => {
                tracing::info!(url = %url, command = %entry.command, error = %e, "link entry failed")
            }
        }
    }
    Ok(page)
}

/// One CLI entry: the page on stdin, its stdout back.
async fn run(
    entry: &LinkEntry,
    url: &str,
    page: &str,
    timeout: Duration,
) -> Result<String, CliError> {
    if entry.command.trim().is_empty() {
        return Err(CliError::Entry("`command`"));
    }
    let args: Vec<String> = entry
        .args
        .iter()
        .map(|a| {
            a.replace("{{LinkUrl}}", url)
                .replace("{{LinkFinalUrl}}", url)
        })
        .collect();
    let mut cmd = tokio::process::Command::new(&entry.command);
    cmd.args(&args).env("OPERATOR_LINK_URL", url);
    let bytes = super::cli::output(cmd, Some(page.to_string()), OUTPUT_MAX, timeout).await?;
    String::from_utf8(bytes).map_err(|_| CliError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_links_are_found_once_and_markdown_links_are_not() {
        let t =
            "see https://a.example/x, and [docs](https://b.example/d) or http://c.example/?q=1. \
                 again https://a.example/x ftp://no.example https://d.example/ https://e.example/";
        assert_eq!(
            find_links(t, 3),
            [
                "https://a.example/x",
                "http://c.example/?q=1",
                "https://d.example/"
            ]
        );
        assert!(find_links("no links here", 3).is_empty());
    }

    #[test]
    fn links_are_on_when_enabled_or_when_openclaws_models_are_set() {
        let links = |patch| crate::settings::shipped_with::<LinksSettings>("tools.links", patch);
        assert!(!links(serde_json::json!({})).on(), "shipped off");
        assert!(links(serde_json::json!({ "enabled": true })).on());
        let cli = serde_json::json!([{ "type": "cli", "command": "summarize" }]);
        assert!(
            links(serde_json::json!({ "models": cli })).on(),
            "OpenClaw's config"
        );
        assert!(!links(serde_json::json!({ "enabled": false, "models": cli })).on());
    }

    #[tokio::test]
    async fn a_strangers_links_are_not_fetched_unless_allowed() {
        let mut tools = crate::settings::shipped().tools;
        tools.links.enabled = Some(true);
        let cfg = LinksConfig::from_tools(&tools).expect("on");
        // A private address: the guard refuses it before any connection,
        // so a fetch attempt shows as nothing.
        let text = "look http://10.255.255.1/x";
        assert!(understand_links(Some(&cfg), text, false).await.is_empty());
        assert!(understand_links(None, text, true).await.is_empty());
        assert!(
            understand_links(Some(&cfg), text, true).await.is_empty(),
            "a blocked address gives nothing, silently"
        );
    }
}
