//! `ChannelSupervisor`: starts one actor per configured channel account and
//! restarts a failed one with backoff (1 s doubling to 5 min; a failing
//! account never touches the others or the WebSocket gateway). It owns the
//! routing table (`routing::Router`, shared with the adapters and rebuilt
//! on config apply), the health board, and the operator's side of pairing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::access;
use super::account::AccountCfg;
use super::desk::{AccountHandle, ChannelDeps};
use super::dispatch::{DispatchDeps, DispatchError, Policies, Routed};
use super::health::{AccountHealth, HealthBoard};
use super::ledger;
use super::messages::*;
use super::ChannelPlan;
use crate::router::RouterActor;
use crate::routing::Router;
use crate::runs::RunRegistry;
use crate::settings::Settings;
use crate::store::{Store, StoreError};

const MAX_RESTART_BACKOFF_MS: u64 = 300_000;

struct Slot {
    cfg: AccountCfg,
    addr: Option<AccountHandle>,
    health: Arc<AccountHealth>,
    failures_in_row: u32,
    logged_out: bool,
}

pub struct ChannelSupervisor {
    store: Store,
    sessions: Addr<RouterActor>,
    runs: Addr<RunRegistry>,
    /// The bindings in force (routing caches what it evaluated).
    routes: Router,
    /// The policies a hand-over reads, replaced whole on a config change.
    policies: Arc<Policies>,
    board: Arc<HealthBoard>,
    default_agent: String,
    main_key: String,
    env: super::ChannelEnv,
    /// The environment as `main.rs` reads it, for media (`Policies`).
    media_env: crate::provider::hub::EnvReader,
    audit: crate::audit::AuditLog,
    media: Option<Addr<crate::media::MediaStore>>,
    questions: Option<Addr<crate::questions::QuestionsActor>>,
    /// `message_received`, `message_sending`, `message_sent` command hooks.
    hooks: crate::hooks::HookClient,
    /// Spoken replies.
    speech: Option<Addr<crate::tts::Speaker>>,
    slots: BTreeMap<(String, String), Slot>,
    span: tracing::Span,
}

impl ChannelSupervisor {
    pub fn new(
        plan: ChannelPlan,
        settings: &Settings,
        store: Store,
        sessions: Addr<RouterActor>,
        runs: Addr<RunRegistry>,
        board: Arc<HealthBoard>,
        media_env: crate::provider::hub::EnvReader,
    ) -> ChannelSupervisor {
        let routes = Router::new(
            &settings.bindings,
            &settings.session,
            settings.default_agent_id(),
        );
        let mut sup = ChannelSupervisor {
            store,
            sessions,
            runs,
            routes,
            policies: Arc::new(Policies::from_settings(settings, &media_env)),
            media_env,
            board,
            default_agent: settings.default_agent_id().to_string(),
            main_key: settings.session.main_key.clone(),
            env: plan.env.clone(),
            audit: crate::audit::AuditLog::off(),
            media: None,
            questions: None,
            hooks: Default::default(),
            speech: None,
            slots: BTreeMap::new(),
            span: tracing::info_span!("channels"),
        };
        sup.set_accounts(plan.accounts);
        sup
    }

    /// Replies in chats may answer `questions`' pending questions.
    pub fn with_questions(mut self, questions: Addr<crate::questions::QuestionsActor>) -> Self {
        self.questions = Some(questions);
        self
    }

    /// Replies are spoken by `speech` (Auto-TTS, `/tts audio`).
    pub fn with_speech(mut self, speech: Addr<crate::tts::Speaker>) -> Self {
        self.speech = Some(speech);
        self
    }

    /// Messages in and out go by these command hooks.
    pub fn with_hooks(mut self, hooks: crate::hooks::HookClient) -> Self {
        self.hooks = hooks;
        self
    }

    /// Attachments are kept and understood by `media`.
    pub fn with_media(mut self, media: Addr<crate::media::MediaStore>) -> Self {
        self.media = Some(media);
        self
    }

    /// Channel messages and pairing requests are recorded in `audit`.
    pub fn with_audit(mut self, audit: crate::audit::AuditLog) -> Self {
        self.audit = audit;
        self
    }

    /// The accounts to run: new ones get a slot; changed ones are replaced
    /// (their actor stopped); gone ones stopped and forgotten.
    fn set_accounts(&mut self, accounts: Vec<AccountCfg>) -> Vec<(String, String)> {
        let mut changed = Vec::new();
        let keys: Vec<(String, String)> = accounts.iter().map(AccountCfg::key).collect();
        self.slots.retain(|k, slot| {
            let keep = keys.contains(k);
            if !keep {
                if let Some(a) = slot.addr.take() {
                    a.stop.do_send(StopAccount);
                }
            }
            keep
        });
        for cfg in accounts {
            let key = cfg.key();
            let health = self.board.account(&key.0, &key.1);
            match self.slots.get_mut(&key) {
                Some(slot) if slot.cfg == cfg => {}
                Some(slot) => {
                    if let Some(a) = slot.addr.take() {
                        a.stop.do_send(StopAccount);
                    }
                    slot.cfg = cfg;
                    slot.failures_in_row = 0;
                    slot.logged_out = false;
                    changed.push(key);
                }
                None => {
                    self.slots.insert(
                        key.clone(),
                        Slot {
                            cfg,
                            addr: None,
                            health,
                            failures_in_row: 0,
                            logged_out: false,
                        },
                    );
                    changed.push(key);
                }
            }
        }
        self.board.retain(&keys);
        changed
    }

    fn start_account(&mut self, key: &(String, String), ctx: &mut Context<Self>) {
        let deps = ChannelDeps {
            dispatch: DispatchDeps {
                store: self.store.clone(),
                sessions: self.sessions.clone(),
                default_agent: self.default_agent.clone(),
                main_key: self.main_key.clone(),
                media: self.media.clone(),
                questions: self.questions.clone(),
                hooks: self.hooks.clone(),
                speech: self.speech.clone(),
            },
            runs: self.runs.clone(),
            supervisor: ctx.address().recipient(),
            routes: ctx.address().recipient(),
            audit: self.audit.clone(),
        };
        if let Some(slot) = self.slots.get_mut(key) {
            if slot.addr.is_none() && !slot.logged_out {
                slot.addr = Some(slot.cfg.start(deps, slot.health.clone()));
            }
        }
    }
}

impl Actor for ChannelSupervisor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        let keys: Vec<_> = self.slots.keys().cloned().collect();
        if !keys.is_empty() {
            tracing::info!(parent: &self.span, accounts = keys.len(), "starting channel accounts");
        }
        for k in keys {
            self.start_account(&k, ctx);
        }
        // Old dedupe keys go once a day (platforms stop redelivering long before).
        ctx.run_interval(Duration::from_secs(3600), |this, _| {
            let week_ago = crate::now_ms().saturating_sub(7 * 24 * 3_600_000);
            if let Err(e) = super::ledger::prune_inbound(&this.store, week_ago) {
                tracing::warn!(parent: &this.span, error = %e, "cannot prune channel dedupe keys");
            }
            // Settled reply chunks go after a week too (`durable.*` shows that week).
            if let Err(e) = super::ledger::prune_outbox(&this.store, week_ago) {
                tracing::warn!(parent: &this.span, error = %e, "cannot prune the outbox");
            }
        });
    }
}

impl Handler<AccountStopped> for ChannelSupervisor {
    type Result = ();
    fn handle(&mut self, msg: AccountStopped, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let key = (msg.channel, msg.account);
        let Some(slot) = self.slots.get_mut(&key) else {
            return;
        };
        slot.addr = None;
        let Some(error) = msg.error else { return };
        slot.failures_in_row += 1;
        slot.health
            .restarts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let backoff = 1000u64
            .saturating_mul(1 << slot.failures_in_row.min(16))
            .min(MAX_RESTART_BACKOFF_MS);
        tracing::warn!(channel = %key.0, account = %key.1, %error, backoff_ms = backoff, "channel account failed: restarting");
        ctx.notify_later(Restart { key }, Duration::from_millis(backoff));
    }
}

impl Handler<Restart> for ChannelSupervisor {
    type Result = ();
    fn handle(&mut self, msg: Restart, ctx: &mut Context<Self>) {
        self.start_account(&msg.key, ctx);
    }
}

impl Handler<ChannelsBacklog> for ChannelSupervisor {
    type Result = Result<ledger::Backlog, StoreError>;
    fn handle(&mut self, _: ChannelsBacklog, _: &mut Context<Self>) -> Self::Result {
        ledger::backlog(&self.store)
    }
}

impl Handler<InspectDurable> for ChannelSupervisor {
    type Result = ResponseFuture<Result<super::inspect::Records, StoreError>>;
    fn handle(&mut self, msg: InspectDurable, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let read = move || super::inspect::Records::read(&store, msg.started_ms);
        Box::pin(async move {
            tokio::task::spawn_blocking(read)
                .await
                .map_err(|e| StoreError::Io {
                    dir: "durable inspection".into(),
                    source: std::io::Error::other(e),
                })?
        })
    }
}

impl Handler<ChannelsStatus> for ChannelSupervisor {
    type Result = MessageResult<ChannelsStatus>;
    fn handle(&mut self, _: ChannelsStatus, _: &mut Context<Self>) -> Self::Result {
        let now = crate::now_ms();
        let stale = self.board.stale_ms();
        let out = self
            .slots
            .iter()
            .map(|((channel, account), slot)| {
                let view = slot.cfg.view();
                AccountStatus {
                    mode: slot.cfg.mode(),
                    token_source: slot.cfg.token_source(self.env.token_for(channel)),
                    health: slot.health.snapshot(channel, account, now, stale),
                    configured: true,
                    logged_out: slot.logged_out,
                    dm_policy: view.dm_policy,
                    allow_from: view.allow_from,
                    stream_mode: view.stream_mode,
                    api_base: view.api_base,
                    bot_username: None,
                }
            })
            .collect();
        MessageResult(out)
    }
}

impl Handler<ProbeAccounts> for ChannelSupervisor {
    type Result = ResponseFuture<Vec<((String, String), Probe)>>;
    fn handle(&mut self, msg: ProbeAccounts, _: &mut Context<Self>) -> Self::Result {
        let accounts: Vec<((String, String), AccountCfg)> = self
            .slots
            .iter()
            .filter(|((c, _), _)| msg.channel.as_ref().is_none_or(|w| w == c))
            .map(|(k, slot)| (k.clone(), slot.cfg.clone()))
            .collect();
        let limit = msg.limit;
        Box::pin(async move {
            let probes = accounts.iter().map(|(_, cfg)| cfg.probe(limit));
            let done = futures_util::future::join_all(probes).await;
            accounts.into_iter().map(|(k, _)| k).zip(done).collect()
        })
    }
}

impl Handler<RouteIncoming> for ChannelSupervisor {
    type Result = Result<Routed, DispatchError>;
    fn handle(&mut self, msg: RouteIncoming, _: &mut Context<Self>) -> Self::Result {
        let ids = (self.default_agent.as_str(), self.main_key.as_str());
        let (route, key) = super::dispatch::route_of(&mut self.routes, ids, msg.query)?;
        Ok(Routed {
            route,
            key,
            policies: Arc::clone(&self.policies),
        })
    }
}

impl Handler<ChannelsReconfigure> for ChannelSupervisor {
    type Result = ();
    fn handle(&mut self, msg: ChannelsReconfigure, ctx: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let settings = msg.settings;
        self.routes = Router::new(
            &settings.bindings,
            &settings.session,
            settings.default_agent_id(),
        );
        self.policies = Arc::new(Policies::from_settings(&settings, &self.media_env));
        self.board.set_stale_ms(super::stale_ms(&settings));
        match super::plan(&settings, self.env.clone()) {
            Ok(plan) => {
                for key in self.set_accounts(plan.accounts) {
                    tracing::info!(channel = %key.0, account = %key.1, "channel account (re)started by a config change");
                    self.start_account(&key, ctx);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "channel config refused: accounts left as they run")
            }
        }
    }
}

impl Handler<Logout> for ChannelSupervisor {
    type Result = MessageResult<Logout>;
    fn handle(&mut self, msg: Logout, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let mut stopped = Vec::new();
        for ((channel, account), slot) in &mut self.slots {
            if *channel != msg.channel || msg.account.as_ref().is_some_and(|a| a != account) {
                continue;
            }
            slot.logged_out = true;
            if let Some(a) = slot.addr.take() {
                a.stop.do_send(StopAccount);
            }
            stopped.push(account.clone());
        }
        MessageResult(stopped)
    }
}

impl ChannelSupervisor {
    /// The running actor of `channel`'s `account` (the default one, else
    /// the only one, when None).
    fn actor_for(&self, channel: &str, account: Option<&str>) -> Option<(String, AccountHandle)> {
        let running: Vec<(&String, &AccountHandle)> = self
            .slots
            .iter()
            .filter(|((c, _), _)| c == channel)
            .filter_map(|((_, a), s)| s.addr.as_ref().map(|addr| (a, addr)))
            .collect();
        let pick = match account {
            Some(want) => running.iter().find(|(a, _)| *a == want),
            None => running
                .iter()
                .find(|(a, _)| *a == "default")
                .or(running.first().filter(|_| running.len() == 1)),
        };
        pick.map(|(a, addr)| ((*a).clone(), (*addr).clone()))
    }
}

/// Hands `msg` to the account's desk through `to` (its inbox for the
/// message), or says there is no such running account.
fn hand_to<M, R>(
    account: Option<(String, AccountHandle)>,
    channel: &str,
    asked: Option<&str>,
    to: impl FnOnce(&AccountHandle) -> Recipient<M>,
    msg: M,
) -> ResponseFuture<Result<R, ChannelSendError>>
where
    M: Message<Result = Result<R, ChannelSendError>> + Send + 'static,
    R: Send + 'static,
{
    let Some((_, addr)) = account else {
        let what = format!("{channel} account {}", asked.unwrap_or("(default)"));
        return Box::pin(async move { Err(ChannelSendError::NoAccount(what)) });
    };
    let inbox = to(&addr);
    Box::pin(async move { inbox.send(msg).await.map_err(|_| ChannelSendError::Down)? })
}

impl Handler<SendText> for ChannelSupervisor {
    type Result = ResponseFuture<Result<Vec<String>, ChannelSendError>>;
    fn handle(&mut self, msg: SendText, _: &mut Context<Self>) -> Self::Result {
        let account = self.actor_for(&msg.channel, msg.account.as_deref());
        let (channel, asked) = (msg.channel.clone(), msg.account.clone());
        hand_to(account, &channel, asked.as_deref(), |a| a.send.clone(), msg)
    }
}

impl Handler<ActOnMessage> for ChannelSupervisor {
    type Result = ResponseFuture<Result<(), ChannelSendError>>;
    fn handle(&mut self, msg: ActOnMessage, _: &mut Context<Self>) -> Self::Result {
        let account = self.actor_for(&msg.channel, msg.account.as_deref());
        let (channel, asked) = (msg.channel.clone(), msg.account.clone());
        hand_to(account, &channel, asked.as_deref(), |a| a.act.clone(), msg)
    }
}

impl Handler<FollowRun> for ChannelSupervisor {
    type Result = ResponseFuture<Result<(), ChannelSendError>>;
    fn handle(&mut self, mut msg: FollowRun, _: &mut Context<Self>) -> Self::Result {
        let Some((account, addr)) = self.actor_for(&msg.channel, msg.account.as_deref()) else {
            let what = format!(
                "{} account {}",
                msg.channel,
                msg.account.as_deref().unwrap_or("(default)")
            );
            return Box::pin(async move { Err(ChannelSendError::NoAccount(what)) });
        };
        msg.delivery.account = account;
        Box::pin(async move {
            addr.follow
                .send(msg)
                .await
                .map_err(|_| ChannelSendError::Down)?
        })
    }
}

impl Handler<StartAccount> for ChannelSupervisor {
    type Result = MessageResult<StartAccount>;
    fn handle(&mut self, msg: StartAccount, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let keys: Vec<(String, String)> = self
            .slots
            .keys()
            .filter(|(c, a)| *c == msg.channel && msg.account.as_ref().is_none_or(|want| want == a))
            .cloned()
            .collect();
        for k in &keys {
            if let Some(slot) = self.slots.get_mut(k) {
                slot.logged_out = false;
                slot.failures_in_row = 0;
            }
            self.start_account(k, ctx);
        }
        MessageResult(keys.into_iter().map(|(_, a)| a).collect())
    }
}

impl Handler<Pairing> for ChannelSupervisor {
    type Result = ResponseFuture<Result<PairingAnswer, crate::store::StoreError>>;
    fn handle(&mut self, msg: Pairing, _: &mut Context<Self>) -> Self::Result {
        let answer = self.pairing(msg);
        let store = self.store.clone();
        Box::pin(async move {
            let answer = answer?;
            if let PairingAnswer::Done(Some(_)) = answer {
                store.flush().await?; // durable before the operator hears it
            }
            Ok(answer)
        })
    }
}

impl ChannelSupervisor {
    fn pairing(&mut self, msg: Pairing) -> Result<PairingAnswer, crate::store::StoreError> {
        let _span = self.span.clone().entered();
        let now = crate::now_ms();
        let store = &self.store;
        let done = match msg {
            Pairing::List { channel } => {
                return Ok(PairingAnswer::List(access::list(
                    store,
                    channel.as_deref(),
                    now,
                )?));
            }
            Pairing::Approve {
                channel,
                code,
                notify,
            } => {
                let r = access::approve(store, &channel, &code, now)?;
                if let Some(r) = &r {
                    tracing::info!(channel = %channel, account = %r.account_id, sender = %r.sender, "pairing approved");
                    let key = (channel.clone(), r.account_id.clone());
                    let addr = self
                        .slots
                        .get(&key)
                        .and_then(|s| s.addr.as_ref())
                        .filter(|_| notify);
                    if let Some(addr) = addr {
                        addr.notify.do_send(Notify {
                            to: r.sender.clone(),
                            key: format!("approved-{}", r.code),
                            text: "You are approved. Send a message to talk to the assistant."
                                .into(),
                        });
                    }
                }
                r
            }
            Pairing::Dismiss { channel, code } => access::dismiss(store, &channel, &code, now)?,
        };
        Ok(PairingAnswer::Done(done))
    }
}

impl Handler<RouteWebhook> for ChannelSupervisor {
    type Result = ResponseFuture<Option<super::messages::WebhookReply>>;
    fn handle(&mut self, msg: RouteWebhook, _: &mut Context<Self>) -> Self::Result {
        let hook = self
            .slots
            .values()
            .filter(|s| s.cfg.webhook_path() == Some(msg.webhook.path.as_str()))
            .find_map(|s| s.addr.as_ref().and_then(|a| a.webhook.clone()));
        Box::pin(async move { hook?.send(msg.webhook).await.ok() })
    }
}
