//! `channels.status` with `probe: true`: each account asks its platform
//! who it is, now, with the account's own credential and a deadline:
//! Telegram `getMe`, Slack `auth.test`, Discord `GET /users/@me`, WhatsApp
//! the business number, Signal the daemon's `/api/v1/check`, Matrix
//! `whoami` (the homeserver's `/versions` for an account that logs in
//! with a password when it starts). Nothing is cached: a probe is the
//! platform's answer at that moment.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::account::AccountCfg;
use super::messages::Probe;

/// Why a probe failed: the platform's own error.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Telegram(#[from] super::telegram::api::TgError),
    #[error(transparent)]
    Slack(#[from] super::slack::api::SlackError),
    #[error(transparent)]
    Discord(#[from] super::discord::api::DiscordError),
    #[error(transparent)]
    WhatsApp(#[from] super::whatsapp::api::WaError),
    #[error(transparent)]
    Signal(#[from] super::signal::api::SigError),
    #[error(transparent)]
    Matrix(#[from] super::matrix::api::MxError),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("the homeserver answered {0}")]
    Homeserver(reqwest::StatusCode),
}

impl AccountCfg {
    /// Asks the platform who this account is, within `limit`.
    pub async fn probe(&self, limit: Duration) -> Probe {
        let started = Instant::now();
        let answer = tokio::time::timeout(limit, self.identity(limit)).await;
        let (ok, error, bot) = match answer {
            Ok(Ok(bot)) => (true, None, bot),
            Ok(Err(e)) => (false, Some(e.to_string()), None),
            Err(_) => (
                false,
                Some(format!("probe timed out after {} ms", limit.as_millis())),
                None,
            ),
        };
        Probe {
            ok,
            error,
            elapsed_ms: started.elapsed().as_millis() as u64,
            bot,
            at_ms: crate::now_ms(),
        }
    }

    async fn identity(&self, limit: Duration) -> Result<Option<Value>, ProbeError> {
        match self {
            AccountCfg::Telegram(c) => {
                let api = super::telegram::api::BotApi::new(&c.api_base, &c.bot_token, limit);
                let me = api.get_me().await?;
                Ok(Some(json!({ "id": me.id, "username": me.username })))
            }
            AccountCfg::Slack(c) => {
                let api = super::slack::api::WebApi::new(&c.api_base, &c.bot_token, None, limit);
                let me = api.auth_test().await?;
                Ok(Some(json!({ "id": me.user_id, "teamId": me.team_id })))
            }
            AccountCfg::Discord(c) => {
                let api = super::discord::api::RestApi::new(&c.api_base, &c.token, limit);
                let id = api.me().await?;
                Ok(Some(json!({ "id": id })))
            }
            AccountCfg::WhatsApp(c) => {
                let api = super::whatsapp::api::GraphApi::new(
                    &c.api_base,
                    &c.phone_number_id,
                    &c.access_token,
                    limit,
                );
                let number = api.number().await?;
                Ok(Some(
                    json!({ "id": c.phone_number_id, "phoneNumber": number }),
                ))
            }
            AccountCfg::Signal(c) => {
                let rpc = super::signal::api::SignalRpc::new(&c.url, limit);
                rpc.check().await?;
                Ok(Some(json!({ "number": c.number })))
            }
            AccountCfg::Matrix(c) => match c.access_token.as_deref() {
                Some(token) => {
                    let api = super::matrix::api::MatrixApi::new(&c.homeserver, Some(token), limit);
                    let user = api.whoami().await?;
                    Ok(Some(json!({ "id": user })))
                }
                None => homeserver_answers(&c.homeserver, limit).await.map(|_| None),
            },
        }
    }
}

/// The homeserver answers `/_matrix/client/versions` (no credential).
async fn homeserver_answers(homeserver: &str, limit: Duration) -> Result<(), ProbeError> {
    let url = format!(
        "{}/_matrix/client/versions",
        homeserver.trim_end_matches('/')
    );
    let r = reqwest::Client::new()
        .get(url)
        .timeout(limit)
        .send()
        .await
        .map_err(|e| ProbeError::Unreachable(e.to_string()))?;
    match r.status() {
        s if s.is_success() => Ok(()),
        s => Err(ProbeError::Homeserver(s)),
    }
}
