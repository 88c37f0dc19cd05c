//! The checks onboarding makes before it writes anything: one call per
//! credential, as the gateway will make them (the same base URLs).

use std::time::Duration;

use serde_json::Value;

ferroclaw_actors::reason_error! {
    /// Why a credential did not pass its check (the platform's own word
    /// when it said one).
    pub struct CheckFailed;
}

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    pub fn config_name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai-completions",
            Api::Anthropic => "anthropic-messages",
        }
    }
}

fn client() -> Result<reqwest::Client, CheckFailed> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| e.to_string().into())
}

/// The error text of a refused call: the platform's own message when it
/// sent one (`error.message`, `description`, `error`, `message`).
fn refusal(status: reqwest::StatusCode, body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let said = v["error"]["message"]
        .as_str()
        .or(v["description"].as_str())
        .or(v["error"].as_str())
        .or(v["message"].as_str());
    match said {
        Some(m) => format!("{status}: {m}"),
        None => format!("{status}"),
    }
}

async fn call(req: reqwest::RequestBuilder, what: &str) -> Result<Value, CheckFailed> {
    let resp = req
        .send()
        .await
        .map_err(|e| CheckFailed::from(format!("{what}: cannot reach it: {e}")))?;
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("{what} refused the key: {}", refusal(status, &body)).into());
    }
    serde_json::from_str(&body).map_err(|e| format!("{what}: not a JSON answer: {e}").into())
}

/// The provider's models (one `GET /models`), which proves the key.
pub async fn models(api: Api, base: &str, key: &str) -> Result<Vec<String>, CheckFailed> {
    let base = base.trim_end_matches('/');
    let req = match api {
        Api::OpenAi => client()?.get(format!("{base}/models")).bearer_auth(key),
        Api::Anthropic => client()?
            .get(format!("{base}/v1/models"))
            .header("x-api-key", key)
            .header("anthropic-version", "2023-06-01"),
    };
    let v = call(req, "the provider").await?;
    let ids: Vec<String> = v["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok(ids)
}

/// Telegram's `getMe`: the bot's @name.
pub async fn telegram(base: &str, token: &str) -> Result<String, CheckFailed> {
    let url = format!("{}/bot{token}/getMe", base.trim_end_matches('/'));
    // POST, as the gateway calls every method.
    let v = call(client()?.post(url), "Telegram").await?;
    match (v["ok"].as_bool(), v["result"]["username"].as_str()) {
        (Some(true), Some(name)) => Ok(format!("@{name}")),
        _ => Err(format!("Telegram did not accept the token: {v}").into()),
    }
}

/// Slack's `auth.test`: the bot user and workspace.
pub async fn slack(base: &str, token: &str) -> Result<String, CheckFailed> {
    let url = format!("{}/auth.test", base.trim_end_matches('/'));
    let v = call(client()?.post(url).bearer_auth(token), "Slack").await?;
    if v["ok"].as_bool() != Some(true) {
        let why = v["error"].as_str().unwrap_or("not ok");
        return Err(format!("Slack refused the bot token: {why}").into());
    }
    Ok(format!(
        "{} in {}",
        v["user"].as_str().unwrap_or("?"),
        v["team"].as_str().unwrap_or("?")
    ))
}

/// Discord's `GET /users/@me`: the bot's name.
pub async fn discord(base: &str, token: &str) -> Result<String, CheckFailed> {
    let url = format!("{}/users/@me", base.trim_end_matches('/'));
    let req = client()?
        .get(url)
        .header("authorization", format!("Bot {token}"));
    let v = call(req, "Discord").await?;
    v["username"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("Discord did not name the bot: {v}").into())
}
