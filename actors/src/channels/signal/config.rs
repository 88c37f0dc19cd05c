//! `channels.signal` per account (`channels::keys`): OpenClaw's `account`,
//! `accountUuid`, `transport` (or its older `httpUrl`, `httpHost`,
//! `httpPort`, `autoStart`, `cliPath`, `configPath`, read as OpenClaw's
//! doctor migrates them: `autoStart` defaults to "no `httpUrl`"),
//! `dmPolicy`, `allowFrom` (numbers or `uuid:<ACI>`), `groupPolicy`,
//! `groupAllowFrom` (`group:<id>` entries admit a group, the rest are
//! senders), `groups`, `textChunkLimit`, `mediaMaxMb`,
//! `sendReadReceipts`, `ignoreAttachments`. An account on the `container`
//! transport (bbernhard's REST API) is not started, with a line in the log.

use crate::channels::error::ConfigError;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::channels::access::AccessConfig;
use crate::channels::keys::{self, StreamMode};
use crate::settings::{GroupRule, SignalKeys, SignalTransport, SignalTransportKind};

/// The daemon ferroclaw runs for an account (managed-native).
#[derive(Debug, Clone, PartialEq)]
pub struct Managed {
    pub cli_path: String,
    pub config_path: Option<String>,
    /// `host:port` for `daemon --http`.
    pub bind: String,
    pub startup_timeout_ms: u64,
    pub receive_mode: Option<String>,
    pub ignore_stories: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SignalAccount {
    pub account_id: String,
    /// The bot's number (E.164).
    pub number: String,
    pub uuid: Option<String>,
    /// The daemon's base URL (`/api/v1/...` under it).
    pub url: String,
    /// Set when ferroclaw owns the daemon.
    pub managed: Option<Managed>,
    /// Where signal-cli keeps received attachments (`<configPath>/attachments`).
    pub attachments_dir: Option<String>,
    pub access: AccessConfig,
    pub stream_mode: StreamMode,
    pub text_chunk_limit: usize,
    pub request_timeout_s: u64,
    pub send_interval_ms: u64,
    pub edit_interval_ms: u64,
    pub typing_interval_s: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    pub catch_up: crate::settings::CatchUp,
    pub media_max_bytes: u64,
    pub read_receipts: bool,
    pub ignore_attachments: bool,
}

/// The longest text signal-cli sends as one message.
pub const MAX_MESSAGE_CHARS: usize = 8000;
const PREFIXES: &[&str] = &["signal:"];

/// An id as the config writes it: a number, `uuid:<ACI>`, `group:<id>`.
pub fn id(raw: &str) -> String {
    let t = raw.trim();
    let t = PREFIXES
        .iter()
        .fold(t, |t, p| t.strip_prefix(p).unwrap_or(t));
    t.to_string()
}

/// A group's chat id (`group:<id>`), from a raw id or `group:<id>`.
pub fn group_chat(raw: &str) -> String {
    let t = id(raw);
    if t == "*" || t.starts_with("group:") {
        t
    } else {
        format!("group:{t}")
    }
}

/// `~/x` under the home directory; other paths as written.
fn home(raw: &str) -> String {
    crate::fsutil::expand_home(raw.trim())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| raw.trim().to_string())
}

fn e164(v: &str) -> bool {
    v.strip_prefix('+')
        .is_some_and(|d| (6..=15).contains(&d.len()) && d.chars().all(|c| c.is_ascii_digit()))
}

/// The accounts of `channels.signal`.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
) -> Result<Vec<SignalAccount>, ConfigError> {
    let mut out = Vec::new();
    for a in keys::accounts("signal", section, defaults, true)? {
        let k: SignalKeys = keys::parse(&a.path, &a.keys)?;
        if transport(&k).0.kind == Some(SignalTransportKind::Container) {
            tracing::warn!(path = %a.path, "Signal's container transport (bbernhard/signal-cli-rest-api) is not supported by ferroclaw: this account is not started (run signal-cli's own daemon: managed-native or external-native)");
            continue;
        }
        out.push(resolve(&a.id, k, &a.path)?);
    }
    type Key = fn(&SignalAccount) -> Option<String>;
    let checks: [(&str, Key); 2] = [
        ("one account number", |a| Some(a.number.clone())),
        ("one managed daemon address", |a| {
            a.managed.as_ref().map(|m| m.bind.clone())
        }),
    ];
    for (what, key) in checks {
        let mut seen: Vec<String> = out.iter().filter_map(key).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(ConfigError::from(format!(
                "channels.signal.accounts: two accounts use {what}"
            )));
        }
    }
    Ok(out)
}

fn url_of(path: &str, key: &str, raw: &str) -> Result<String, ConfigError> {
    let t = raw.trim().trim_end_matches('/');
    let t = if t.contains("://") {
        t.to_string()
    } else {
        format!("http://{t}")
    };
    let ok = (t.starts_with("http://") || t.starts_with("https://"))
        && reqwest::Url::parse(&t).is_ok_and(|u| u.host().is_some() && u.username().is_empty());
    if !ok {
        return Err(ConfigError::from(format!(
            "{path}.{key}: expected an http(s) URL such as http://127.0.0.1:8080"
        )));
    }
    Ok(t)
}

/// Where the daemon is to be found or run: `transport` as written, what it
/// leaves unset taken from OpenClaw's older keys (or those alone).
struct Daemon {
    kind: Option<SignalTransportKind>,
    url: Option<String>,
    cli_path: String,
    config_path: Option<String>,
    http_host: String,
    http_port: u16,
    startup_timeout_ms: u64,
    receive_mode: Option<String>,
    ignore_stories: bool,
}

/// The daemon's settings, and the key prefix they were read under.
fn transport(k: &SignalKeys) -> (Daemon, &'static str) {
    let auto = k.auto_start.unwrap_or(k.http_url.is_none());
    let legacy = SignalTransport {
        kind: Some(if auto {
            SignalTransportKind::ManagedNative
        } else {
            SignalTransportKind::ExternalNative
        }),
        url: k.http_url.clone(),
        ..SignalTransport::default()
    };
    let (t, at) = match &k.transport {
        Some(t) => (t, "transport."),
        None => (&legacy, ""),
    };
    let d = Daemon {
        kind: t.kind,
        url: t.url.clone(),
        cli_path: t.cli_path.clone().unwrap_or_else(|| k.cli_path.clone()),
        config_path: t.config_path.clone().or_else(|| k.config_path.clone()),
        http_host: t.http_host.clone().unwrap_or_else(|| k.http_host.clone()),
        http_port: t.http_port.unwrap_or(k.http_port),
        startup_timeout_ms: t.startup_timeout_ms.unwrap_or(k.startup_timeout_ms),
        receive_mode: t.receive_mode.clone().or_else(|| k.receive_mode.clone()),
        ignore_stories: t.ignore_stories.unwrap_or(k.ignore_stories),
    };
    (d, at)
}

/// Where the daemon is, and whether ferroclaw runs it.
fn place(k: &SignalKeys, path: &str) -> Result<(String, Option<Managed>), ConfigError> {
    let (t, at) = transport(k);
    let bind = || {
        let (host, port) = (&t.http_host, t.http_port);
        if host.is_empty() || host.contains(['/', ' ', '@']) || port == 0 {
            return Err(ConfigError::from(format!(
                "{path}.{at}httpHost: expected a host and httpPort a port"
            )));
        }
        Ok(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        })
    };
    match t.kind {
        Some(SignalTransportKind::Container) => Err(ConfigError::from(format!(
            "{path}.transport.kind: \"container\" is not supported by ferroclaw"
        ))),
        Some(SignalTransportKind::ExternalNative) => {
            let url = match &t.url {
                Some(u) => url_of(path, &format!("{at}url"), u)?,
                None => url_of(path, &format!("{at}httpHost"), &bind()?)?,
            };
            Ok((url, None))
        }
        Some(SignalTransportKind::ManagedNative) => {
            let bind = bind()?;
            let url = match &t.url {
                Some(u) => url_of(path, &format!("{at}url"), u)?,
                None => url_of(path, &format!("{at}httpHost"), &bind)?,
            };
            let managed = Managed {
                cli_path: home(&t.cli_path),
                config_path: t.config_path.as_deref().map(home),
                bind,
                startup_timeout_ms: t.startup_timeout_ms.clamp(1000, 120_000),
                receive_mode: t.receive_mode.clone(),
                ignore_stories: t.ignore_stories,
            };
            Ok((url, Some(managed)))
        }
        None => Err(ConfigError::from(format!(
            "{path}.transport.kind: expected \"managed-native\" or \"external-native\""
        ))),
    }
}

/// `groupAllowFrom`'s groups become rules (mention gating stays), the rest
/// are senders; `groups` keys are chat ids (`group:<id>`).
fn group_access(k: &SignalKeys) -> (BTreeMap<String, GroupRule>, Vec<String>) {
    let mut groups: BTreeMap<String, GroupRule> = k
        .groups
        .iter()
        .map(|(g, r)| (group_chat(g), r.clone()))
        .collect();
    let mut senders = Vec::new();
    for i in keys::ids(&k.group_allow_from, PREFIXES) {
        if let Some(g) = i.strip_prefix("group:") {
            groups.entry(group_chat(g)).or_default();
        } else {
            senders.push(i);
        }
    }
    (groups, senders)
}

fn resolve(id: &str, k: SignalKeys, path: &str) -> Result<SignalAccount, ConfigError> {
    let number = k
        .account
        .clone()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{path}.account: missing (the bot's number, E.164)"))?;
    if !e164(&number) {
        return Err(ConfigError::from(format!(
            "{path}.account: expected an E.164 number such as +15551234567"
        )));
    }
    let (url, managed) = place(&k, path)?;
    let attachments_dir = managed
        .as_ref()
        .and_then(|m| m.config_path.clone())
        .or_else(|| k.transport.as_ref().and_then(|t| t.config_path.clone()))
        .or_else(|| k.config_path.clone())
        .map(|c| format!("{}/attachments", home(&c).trim_end_matches('/')));
    let (groups, group_allow_from) = group_access(&k);
    let access = AccessConfig {
        dm_policy: k.dm_policy,
        allow_from: keys::ids(&k.allow_from, PREFIXES),
        group_policy: k.group_policy,
        group_allow_from,
        groups,
    };
    access.check(path)?;
    Ok(SignalAccount {
        account_id: id.to_string(),
        number,
        uuid: k.account_uuid.filter(|u| !u.trim().is_empty()),
        url,
        managed,
        attachments_dir,
        access,
        stream_mode: k.stream_mode,
        text_chunk_limit: k.text_chunk_limit.clamp(100, MAX_MESSAGE_CHARS),
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        send_interval_ms: k.send_interval_ms.min(10_000),
        edit_interval_ms: k.edit_interval_ms.max(250),
        typing_interval_s: k.typing_interval_seconds.clamp(1, 60),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
        media_max_bytes: keys::media_bytes(path, k.media_max_mb)?,
        read_receipts: k.send_read_receipts,
        ignore_attachments: k.ignore_attachments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accounts(v: Value) -> Result<Vec<SignalAccount>, ConfigError> {
        let d = crate::settings::shipped().channels.defaults.layer("signal");
        super::accounts(v.as_object().unwrap(), &d)
    }

    #[test]
    fn openclaws_older_keys_read_as_its_doctor_migrates_them() {
        let a = &accounts(json!({ "account": "+15550001111" })).unwrap()[0];
        let m = a.managed.as_ref().expect("autoStart defaults to true");
        assert_eq!(
            (m.cli_path.as_str(), m.bind.as_str()),
            ("signal-cli", "127.0.0.1:8080")
        );
        assert_eq!(a.url, "http://127.0.0.1:8080");
        let a = &accounts(json!({ "account": "+15550001111", "httpUrl": "http://10.0.0.5:9000/" }))
            .unwrap()[0];
        assert!(
            a.managed.is_none(),
            "an httpUrl alone is an external daemon"
        );
        assert_eq!(a.url, "http://10.0.0.5:9000");
        let a = &accounts(json!({ "account": "+15550001111", "autoStart": true,
            "cliPath": "/opt/signal-cli/bin/signal-cli", "httpPort": 8099, "configPath": "/srv/sig" }))
        .unwrap()[0];
        let m = a.managed.as_ref().unwrap();
        assert_eq!(
            (m.bind.as_str(), a.url.as_str()),
            ("127.0.0.1:8099", "http://127.0.0.1:8099")
        );
        assert_eq!(a.attachments_dir.as_deref(), Some("/srv/sig/attachments"));
    }

    #[test]
    fn the_transport_object_wins_a_container_account_is_left_alone_and_a_bad_number_refused() {
        let a = &accounts(json!({ "account": "+15550001111", "httpUrl": "http://x:1",
            "transport": { "kind": "external-native", "url": "127.0.0.1:7583" } }))
        .unwrap()[0];
        assert_eq!(a.url, "http://127.0.0.1:7583");
        // What the transport leaves unset comes from the keys beside it
        // (their defaults in default.json5), what it sets wins.
        let a = &accounts(
            json!({ "account": "+15550001111", "httpPort": 9090, "cliPath": "/opt/sc",
            "transport": { "kind": "managed-native", "httpHost": "127.0.0.2" } }),
        )
        .unwrap()[0];
        let m = a.managed.as_ref().expect("managed");
        assert_eq!(
            (m.bind.as_str(), m.cli_path.as_str()),
            ("127.0.0.2:9090", "/opt/sc")
        );
        assert_eq!((m.startup_timeout_ms, m.ignore_stories), (30_000, false));
        let none = accounts(json!({ "account": "+15550001111",
            "transport": { "kind": "container", "url": "http://signal:8080" } }))
        .unwrap();
        assert!(none.is_empty(), "not started, the rest of the config runs");
        let e = accounts(json!({ "account": "15550001111" })).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("channels.signal.account: expected an E.164"),
            "{e}"
        );
        let e = accounts(json!({ "transport": { "kind": "external-native" } })).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("channels.signal.account: missing"),
            "{e}"
        );
        let e = accounts(json!({ "account": "+15550001111",
            "transport": { "kind": "external-native", "url": "ftp://x" } }))
        .unwrap_err();
        assert!(e.to_string().contains("transport.url"), "{e}");
    }

    #[test]
    fn group_entries_of_group_allow_from_admit_groups_and_the_rest_are_senders() {
        let a = &accounts(json!({ "account": "+15550001111", "groupAllowFrom":
            ["group:abc=", "signal:group:def=", "+15550002222", "uuid:u-1"],
            "groups": { "xyz=": { "requireMention": false } } }))
        .unwrap()[0];
        let keys: Vec<&String> = a.access.groups.keys().collect();
        assert_eq!(keys, ["group:abc=", "group:def=", "group:xyz="]);
        assert_eq!(a.access.group_allow_from, ["+15550002222", "uuid:u-1"]);
        assert_eq!(a.access.groups["group:abc="].require_mention, None);
    }
}
