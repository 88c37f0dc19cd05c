//! `channels.whatsapp` in Cloud API mode, per account (`channels::keys`):
//! OpenClaw's `dmPolicy`, `allowFrom` (phone numbers), `groupPolicy`,
//! `textChunkLimit`, `mediaMaxMb`, `sendReadReceipts`; the Cloud API's
//! `phoneNumberId`, `accessToken`, `appSecret`, `verifyToken` and
//! `webhookPath`; ferroclaw's `apiBaseUrl`/`apiVersion` (the Graph API;
//! tests point it at a fake) and `windowTemplate`. `WHATSAPP_ACCESS_TOKEN`
//! serves the default account when its section has none. A section in
//! OpenClaw's linked-device mode (`mode: "web"`) is not an account here.

use crate::channels::error::ConfigError;
use serde_json::{Map, Value};

use crate::channels::access::AccessConfig;
use crate::channels::keys::{self, StreamMode};
use crate::settings::{WhatsAppKeys, WhatsAppMode, WindowTemplate};

/// The longest text message the Cloud API takes.
pub const MAX_MESSAGE_CHARS: usize = 4096;

#[derive(Debug, Clone, PartialEq)]
pub struct WhatsAppAccount {
    pub account_id: String,
    pub phone_number_id: String,
    pub access_token: String,
    pub app_secret: String,
    pub verify_token: String,
    pub webhook_path: String,
    /// `<apiBaseUrl>/<apiVersion>`.
    pub api_base: String,
    pub access: AccessConfig,
    pub stream_mode: StreamMode,
    pub text_chunk_limit: usize,
    pub request_timeout_s: u64,
    pub send_interval_ms: u64,
    pub debounce_ms: u64,
    pub model_override: Option<String>,
    pub catch_up: crate::settings::CatchUp,
    pub media_max_bytes: u64,
    pub read_receipts: bool,
    pub window_template: Option<WindowTemplate>,
}

const PREFIXES: &[&str] = &["whatsapp:", "wa:", "+"];

/// A phone number as WhatsApp's webhooks write it: digits only.
pub fn number(id: &str) -> String {
    let t = id.trim();
    let t = PREFIXES
        .iter()
        .fold(t, |t, p| t.strip_prefix(p).unwrap_or(t));
    match t {
        "*" => "*".into(),
        t => t.chars().filter(char::is_ascii_digit).collect(),
    }
}

fn secret(v: Option<String>) -> Option<String> {
    v.filter(|t| !t.trim().is_empty())
}

/// The Cloud API accounts of `channels.whatsapp` (`env`:
/// `WHATSAPP_ACCESS_TOKEN`, for the default account). A `web` section has
/// none.
pub fn accounts(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
    env: Option<String>,
) -> Result<Vec<WhatsAppAccount>, ConfigError> {
    let own = section
        .get("accessToken")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.trim().is_empty())
        || env.is_some();
    let mut out = Vec::new();
    for a in keys::accounts("whatsapp", section, defaults, own)? {
        let k: WhatsAppKeys = keys::parse(&a.path, &a.keys)?;
        if k.mode == WhatsAppMode::Web {
            tracing::warn!(path = %a.path, "WhatsApp Web (linked device) is not supported by ferroclaw: set mode: \"cloud\" with a Cloud API number");
            continue;
        }
        let env = (a.path == "channels.whatsapp")
            .then(|| env.clone())
            .flatten();
        out.push(resolve(&a.id, k, env, &a.path)?);
    }
    type Key = fn(&WhatsAppAccount) -> String;
    let checks: [(&str, Key); 2] = [
        ("one phoneNumberId", |a| a.phone_number_id.clone()),
        ("one webhookPath", |a| a.webhook_path.clone()),
    ];
    for (what, key) in checks {
        let mut seen: Vec<String> = out.iter().map(key).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(ConfigError::from(format!(
                "channels.whatsapp.accounts: two accounts use {what}"
            )));
        }
    }
    Ok(out)
}

fn required(v: Option<String>, path: &str, key: &str, what: &str) -> Result<String, ConfigError> {
    secret(v).ok_or_else(|| format!("{path}.{key}: missing ({what})").into())
}

/// The access token (`WHATSAPP_ACCESS_TOKEN` for the default account).
fn token(v: Option<String>, env: Option<String>, path: &str) -> Result<String, ConfigError> {
    let token = secret(v)
        .or(env)
        .ok_or_else(|| format!("{path}.accessToken: missing (or set WHATSAPP_ACCESS_TOKEN)"))?;
    if token.contains(char::is_whitespace) {
        return Err(ConfigError::from(format!(
            "{path}.accessToken: not a token"
        )));
    }
    Ok(token)
}

/// `<apiBaseUrl>/<apiVersion>`, each checked.
fn api_base(base: &str, version: &str, path: &str) -> Result<String, ConfigError> {
    let base = base.trim_end_matches('/');
    if !(base.starts_with("https://") || base.starts_with("http://")) {
        return Err(ConfigError::from(format!(
            "{path}.apiBaseUrl: expected an http(s) URL"
        )));
    }
    let version = version.trim_matches('/');
    if version.is_empty() || version.contains(['/', ' ']) {
        return Err(ConfigError::from(format!(
            "{path}.apiVersion: expected a version such as v21.0"
        )));
    }
    Ok(format!("{base}/{version}"))
}

/// The business number's id: digits.
fn phone_number_id(k: &WhatsAppKeys, path: &str) -> Result<String, ConfigError> {
    let phone_number_id = required(
        k.phone_number_id.clone(),
        path,
        "phoneNumberId",
        "the business number's id from Meta's app dashboard",
    )?;
    if !phone_number_id.chars().all(|c| c.is_ascii_digit()) {
        return Err(ConfigError::from(format!(
            "{path}.phoneNumberId: expected digits"
        )));
    }
    Ok(phone_number_id)
}

/// Who may talk to the account (numbers as the Cloud API writes them).
fn access_of(k: &WhatsAppKeys, path: &str) -> Result<AccessConfig, ConfigError> {
    let ids = |v: &[crate::settings::IdValue]| -> Vec<String> {
        keys::ids(v, &[]).iter().map(|i| number(i)).collect()
    };
    let access = AccessConfig {
        dm_policy: k.dm_policy,
        allow_from: ids(&k.allow_from),
        group_policy: k.group_policy,
        group_allow_from: ids(&k.group_allow_from),
        groups: Default::default(),
    };
    access.check(path)?;
    Ok(access)
}

fn resolve(
    id: &str,
    k: WhatsAppKeys,
    env: Option<String>,
    path: &str,
) -> Result<WhatsAppAccount, ConfigError> {
    let phone_number_id = phone_number_id(&k, path)?;
    let access_token = token(k.access_token.clone(), env, path)?;
    let app_secret = required(
        k.app_secret.clone(),
        path,
        "appSecret",
        "webhook bodies are verified with it",
    )?;
    let verify_token = required(
        k.verify_token.clone(),
        path,
        "verifyToken",
        "Meta's webhook verification presents it",
    )?;
    let webhook_path = k.webhook_path.clone();
    if !webhook_path.starts_with('/') || webhook_path.contains(char::is_whitespace) {
        return Err(ConfigError::from(format!(
            "{path}.webhookPath: expected a path such as /whatsapp/webhook"
        )));
    }
    let api_base = api_base(&k.api_base_url, &k.api_version, path)?;
    let access = access_of(&k, path)?;
    let media_max_bytes = keys::media_bytes(path, k.media_max_mb)?;
    Ok(WhatsAppAccount {
        account_id: id.to_string(),
        phone_number_id,
        access_token,
        app_secret,
        verify_token,
        webhook_path,
        api_base,
        access,
        // The Cloud API cannot edit: a preview could never be finished.
        stream_mode: match k.stream_mode {
            StreamMode::Partial => StreamMode::Off,
            m => m,
        },
        text_chunk_limit: k.text_chunk_limit.clamp(100, MAX_MESSAGE_CHARS),
        request_timeout_s: k.request_timeout_seconds.clamp(1, 300),
        send_interval_ms: k.send_interval_ms.min(10_000),
        debounce_ms: 0,
        model_override: k.model_override,
        catch_up: k.catch_up,
        media_max_bytes,
        read_receipts: k.send_read_receipts,
        window_template: k.window_template,
    })
}

/// The webhook paths the Cloud API accounts of `channels.whatsapp` answer
/// on, each with the verify token Meta's `GET` must present there.
pub fn webhooks(
    section: &Map<String, Value>,
    defaults: &Map<String, Value>,
) -> Vec<(String, Option<String>)> {
    keys::accounts("whatsapp", section, defaults, true)
        .unwrap_or_default()
        .iter()
        .filter_map(|a| keys::parse::<WhatsAppKeys>(&a.path, &a.keys).ok())
        .filter(|k| k.mode == WhatsAppMode::Cloud)
        .map(|k| (k.webhook_path, secret(k.verify_token)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{DmPolicy, StreamMode};
    use serde_json::json;

    fn accounts(v: Value, env: Option<&str>) -> Result<Vec<WhatsAppAccount>, ConfigError> {
        let d = crate::settings::shipped()
            .channels
            .defaults
            .layer("whatsapp");
        super::accounts(v.as_object().unwrap(), &d, env.map(str::to_string))
    }

    fn full() -> Value {
        json!({ "mode": "cloud", "phoneNumberId": "1055", "accessToken": "EAAG1",
            "appSecret": "s3cret", "verifyToken": "v-tok", "allowFrom": ["+1 (555) 123-4567", "*"] })
    }

    #[test]
    fn a_cloud_account_reads_openclaws_keys_with_numbers_as_digits() {
        let a = &accounts(full(), None).unwrap()[0];
        assert_eq!(a.api_base, "https://graph.facebook.com/v21.0");
        assert_eq!(a.webhook_path, "/whatsapp/webhook");
        assert_eq!(a.access.dm_policy, DmPolicy::Pairing);
        assert_eq!(a.access.allow_from, ["15551234567", "*"]);
        assert_eq!(a.text_chunk_limit, 4000);
        assert_eq!(a.stream_mode, StreamMode::Off);
        assert!(a.read_receipts && a.window_template.is_none());
        let mut partial = full();
        partial["streamMode"] = json!("partial");
        let a = &accounts(partial, None).unwrap()[0];
        assert_eq!(a.stream_mode, StreamMode::Off, "no edits: no previews");
    }

    #[test]
    fn each_credential_is_named_when_missing_and_web_mode_is_left_alone() {
        for key in ["phoneNumberId", "accessToken", "appSecret", "verifyToken"] {
            let mut v = full();
            v.as_object_mut().unwrap().remove(key);
            let e = accounts(v, None).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("channels.whatsapp.{key}: missing")),
                "{e}"
            );
        }
        let mut v = full();
        v.as_object_mut().unwrap().remove("accessToken");
        assert_eq!(
            accounts(v, Some("EAAG-env")).unwrap()[0].access_token,
            "EAAG-env"
        );
        assert!(
            accounts(json!({ "mode": "web", "allowFrom": ["+1555"] }), None)
                .unwrap()
                .is_empty()
        );
        let mut v = full();
        v["accounts"] = json!({ "b": { "accessToken": "EAAG2" } });
        let e = accounts(v, None).unwrap_err();
        assert!(e.to_string().contains("one phoneNumberId"), "{e}");
    }
}
