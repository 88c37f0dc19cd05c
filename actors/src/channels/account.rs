//! What the supervisor holds of an account: its checked settings
//! (`AccountCfg`, one variant per adapter) and, while it runs, the inbox
//! of its desk (`AccountHandle`).

use std::sync::Arc;

use super::desk::{AccountHandle, ChannelDeps};
use super::discord::config::DiscordAccount;
use super::health::AccountHealth;
use super::matrix::config::MatrixAccount;
use super::signal::config::SignalAccount;
use super::slack::config::{Mode, SlackAccount};
use super::telegram::config::TelegramAccount;
use super::whatsapp::config::WhatsAppAccount;

/// One account's settings, by adapter.
#[derive(Debug, Clone, PartialEq)]
pub enum AccountCfg {
    Telegram(Arc<TelegramAccount>),
    Slack(Arc<SlackAccount>),
    Discord(Arc<DiscordAccount>),
    WhatsApp(Arc<WhatsAppAccount>),
    Signal(Arc<SignalAccount>),
    Matrix(Arc<MatrixAccount>),
}

/// How `channels.status` shows an account's settings.
#[derive(Debug, Clone)]
pub struct SettingsView {
    pub dm_policy: String,
    pub allow_from: Vec<String>,
    pub stream_mode: String,
    pub api_base: String,
}

impl AccountCfg {
    pub fn channel(&self) -> &'static str {
        match self {
            AccountCfg::Telegram(_) => "telegram",
            AccountCfg::Slack(_) => "slack",
            AccountCfg::Discord(_) => "discord",
            AccountCfg::WhatsApp(_) => "whatsapp",
            AccountCfg::Signal(_) => "signal",
            AccountCfg::Matrix(_) => "matrix",
        }
    }

    pub fn account_id(&self) -> &str {
        match self {
            AccountCfg::Telegram(c) => &c.account_id,
            AccountCfg::Slack(c) => &c.account_id,
            AccountCfg::Discord(c) => &c.account_id,
            AccountCfg::WhatsApp(c) => &c.account_id,
            AccountCfg::Signal(c) => &c.account_id,
            AccountCfg::Matrix(c) => &c.account_id,
        }
    }

    pub fn key(&self) -> (String, String) {
        (self.channel().to_string(), self.account_id().to_string())
    }

    /// Starts the account's actors.
    pub fn start(&self, deps: ChannelDeps, health: Arc<AccountHealth>) -> AccountHandle {
        match self {
            AccountCfg::Telegram(c) => super::telegram::start(c.clone(), deps, health),
            AccountCfg::Slack(c) => super::slack::start(c.clone(), deps, health),
            AccountCfg::Discord(c) => super::discord::start(c.clone(), deps, health),
            AccountCfg::WhatsApp(c) => super::whatsapp::start(c.clone(), deps, health),
            AccountCfg::Signal(c) => super::signal::start(c.clone(), deps, health),
            AccountCfg::Matrix(c) => super::matrix::start(c.clone(), deps, health),
        }
    }

    pub fn view(&self) -> SettingsView {
        let view =
            |access: &super::access::AccessConfig, stream: super::keys::StreamMode, api: &str| {
                let lower = |s: String| s.to_ascii_lowercase();
                SettingsView {
                    dm_policy: lower(format!("{:?}", access.dm_policy)),
                    allow_from: access.allow_from.clone(),
                    stream_mode: lower(format!("{stream:?}")),
                    api_base: api.to_string(),
                }
            };
        match self {
            AccountCfg::Telegram(c) => view(&c.access, c.stream_mode, &c.api_base),
            AccountCfg::Slack(c) => view(&c.access, c.stream_mode, &c.api_base),
            AccountCfg::Discord(c) => view(&c.access, c.stream_mode, &c.api_base),
            AccountCfg::WhatsApp(c) => view(&c.access, c.stream_mode, &c.api_base),
            AccountCfg::Signal(c) => view(&c.access, c.stream_mode, &c.url),
            AccountCfg::Matrix(c) => view(&c.access, c.stream_mode, &c.homeserver),
        }
    }

    /// How the account hears its platform, in OpenClaw's words: Telegram
    /// long-polls, Slack by Socket Mode or the Events API over HTTP,
    /// Discord by its gateway, WhatsApp by webhooks, Signal by the REST
    /// API's event stream, Matrix by `/sync`.
    pub fn mode(&self) -> &'static str {
        match self {
            AccountCfg::Telegram(_) => "polling",
            AccountCfg::Slack(c) if c.mode == Mode::Http => "http",
            AccountCfg::Slack(_) => "socket",
            AccountCfg::Discord(_) => "gateway",
            AccountCfg::WhatsApp(_) => "webhook",
            AccountCfg::Signal(_) => "sse",
            AccountCfg::Matrix(_) => "sync",
        }
    }

    /// Where the account's credential came from: `env` (the channel's
    /// environment variable, `env_token`), `config`, or `none` (Signal's
    /// REST API takes none).
    pub fn token_source(&self, env_token: Option<&str>) -> &'static str {
        let token = match self {
            AccountCfg::Telegram(c) => Some(c.bot_token.as_str()),
            AccountCfg::Slack(c) => Some(c.bot_token.as_str()),
            AccountCfg::Discord(c) => Some(c.token.as_str()),
            AccountCfg::WhatsApp(c) => Some(c.access_token.as_str()),
            AccountCfg::Matrix(c) => c.access_token.as_deref().or(c.password.as_deref()),
            AccountCfg::Signal(_) => None,
        };
        match token {
            None => "none",
            Some(t) if env_token == Some(t) => "env",
            Some(_) => "config",
        }
    }

    /// The webhook path an account answers on (an HTTP-mode Slack app's
    /// Events API, a WhatsApp number's webhooks).
    pub fn webhook_path(&self) -> Option<&str> {
        match self {
            AccountCfg::Slack(c) if c.mode == Mode::Http => Some(&c.webhook_path),
            AccountCfg::WhatsApp(c) => Some(&c.webhook_path),
            _ => None,
        }
    }
}
