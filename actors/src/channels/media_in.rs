//! An accepted message's attachments on a channel: each downloaded once
//! through its outlet (refused before the download when its declared size
//! is over the account's `mediaMaxMb`, cut off when the bytes pass it),
//! then taken in like every surface's (`media::take`: kept in the media
//! store, understood, given to the model).
//!
//! Trust: what a file says is the sender's words; it follows the sender's
//! trust (a stranger's transcript is wrapped like a stranger's text).

use std::sync::Arc;

use super::deliver::Outlet;
use super::dispatch::{DispatchDeps, Incoming, Routed, Taken};
use crate::media::{label, take, Intake, Loaded, NotLoaded};

/// Takes in `inc`'s attachments for the agent it is `routed` to (`max`:
/// the account's size limit; `model`: the channel's model override, if
/// any).
pub async fn take_in<O: Outlet>(
    deps: &DispatchDeps,
    outlet: &O,
    (inc, routed): (&Incoming, &Routed),
    max: u64,
    model: Option<&str>,
    trusted: bool,
) -> Taken {
    let policies = &routed.policies;
    let config = Arc::clone(&policies.media);
    if inc.media.is_empty() && config.links.is_none() {
        return Taken::default();
    }
    let model = model.or_else(|| {
        policies
            .model_by_channel
            .get(&inc.channel)
            .map(String::as_str)
    });
    let agent = routed.route.agent_id.clone();
    let mut items = Vec::with_capacity(inc.media.len());
    for m in &inc.media {
        let name = label(m.name.as_deref(), m.mime_type.as_deref(), m.size);
        if m.size.is_some_and(|s| s > max) {
            items.push(Err(NotLoaded::TooLarge { name, max }));
            continue;
        }
        items.push(match outlet.download(m, max).await {
            Ok(b) => Ok(Loaded {
                bytes: bytes::Bytes::from(b),
                content_type: m.mime_type.clone(),
                name: m.name.clone(),
                url: m.url.clone(),
            }),
            Err(e) => {
                tracing::warn!(channel = %inc.channel, error = %e, "channel media not loaded");
                Err(NotLoaded::Failed {
                    name,
                    why: e.to_string(),
                })
            }
        });
    }
    let intake = Intake {
        store: deps.media.clone(),
        vision: config.reply.vision(model, &agent),
        config,
        caption: inc.text.clone(),
        trusted,
    };
    take(&intake, items).await
}

/// A platform's file by URL (a Slack `url_private_download`, a Discord
/// CDN URL): fetched only from the platform's own hosts (`hosts`, or the
/// account's API host, for test servers), so a token in `headers` goes
/// nowhere else; at most `max` bytes. A web page where a file was expected
/// (Slack's sign-in page for a token without `files:read`) is refused.
pub async fn platform_file(
    url: &str,
    hosts: &[&str],
    api_base: &str,
    headers: &[(String, String)],
    expected: Option<&str>,
    max: u64,
) -> Result<Vec<u8>, crate::channels::error::DownloadError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let host_of = |u: &str| {
        reqwest::Url::parse(u)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
    };
    let host = host_of(url).ok_or("not a file URL")?;
    let own = host_of(api_base).is_some_and(|h| h == host);
    let platform = hosts
        .iter()
        .any(|h| host == *h || host.ends_with(&format!(".{h}")));
    if !(own || platform) {
        return Err(crate::channels::error::DownloadError::from(format!(
            "{host} is not the platform's file host; not fetched"
        )));
    }
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .unwrap_or_default()
    });
    let timeout = std::time::Duration::from_secs(120);
    let (bytes, served) = crate::media::fetch_capped(client, url, headers, max, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let page = served
        .as_deref()
        .is_some_and(|t| t.starts_with("text/html"));
    if page && !expected.is_some_and(|t| t.starts_with("text/html")) {
        return Err("the platform answered with a web page, not the file (does the bot have the scope to read files?)".into());
    }
    Ok(bytes.to_vec())
}
