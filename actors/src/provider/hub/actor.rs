//! `ProviderHub`: provider specs, one provider actor per provider, auth profiles and cooldowns.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::*;
use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use crate::provider::limits::RateLimitSink;
use crate::provider::offline::OfflineProvider;
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::provider::selection::AuthProfiles;
use crate::provider::StreamCompletion;

pub struct ProviderHub {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    pub(super) config: HubConfig,
    slots: HashMap<String, Slot>,
    /// Each provider's last reported rate-limit windows.
    limits: BTreeMap<String, ReportedLimits>,
    /// Where its provider clients report them (set when it starts).
    me: Option<Recipient<RateLimitsSeen>>,
}

impl ProviderHub {
    pub fn new(config: HubConfig) -> ProviderHub {
        ProviderHub {
            span: tracing::info_span!("provider_hub"),
            config,
            slots: HashMap::new(),
            limits: BTreeMap::new(),
            me: None,
        }
    }

    /// A hub that only knows the built-ins and no credentials (tests).
    pub fn builtins() -> ProviderHub {
        ProviderHub::new(HubConfig {
            providers: BTreeMap::new(),
            order: BTreeMap::new(),
            configured_profiles: Vec::new(),
            stored_profiles: Vec::new(),
            credentials: HashMap::new(),
            env: Arc::new(|_: &str| None),
            request_timeout: Duration::from_secs(600),
            warnings: Vec::new(),
        })
    }

    /// Serves `provider` with an already started actor (one implicit
    /// `<provider>:default` profile, no key): embedding and tests.
    pub fn with_provider(
        mut self,
        provider: &str,
        actor: Recipient<StreamCompletion>,
    ) -> ProviderHub {
        let id = format!("{provider}:default");
        self.slots.insert(
            provider.to_string(),
            Slot {
                actor,
                profiles: AuthProfiles::new(vec![id.clone()]),
                keys: HashMap::from([(id, None)]),
            },
        );
        self
    }

    fn slot(&mut self, provider: &str) -> Result<&mut Slot, RouteError> {
        if !self.slots.contains_key(provider) {
            let spec = self
                .config
                .spec(provider)
                .ok_or_else(|| RouteError::Unconfigured(provider.to_string()))?;
            let timeout = self.config.request_timeout;
            let limits = self.me.clone().map_or_else(RateLimitSink::default, |me| {
                let provider = provider.to_string();
                RateLimitSink::new(std::sync::Arc::new(move |windows, at_ms| {
                    let provider = provider.clone();
                    me.do_send(RateLimitsSeen {
                        provider,
                        windows,
                        at_ms,
                    });
                }))
            });
            let actor: Recipient<StreamCompletion> = match spec.api {
                Api::Offline => OfflineProvider::new().start().recipient(),
                Api::AnthropicMessages => AnthropicProvider::new(AnthropicConfig {
                    base_url: spec.base_url.clone(),
                    api_key: None,
                    headers: spec.headers.clone(),
                    request_timeout: timeout,
                    limits: limits.clone(),
                })
                .start()
                .recipient(),
                Api::OpenAiCompletions => OpenAiProvider::new(OpenAiConfig {
                    base_url: spec.base_url.clone(),
                    api_key: None,
                    headers: spec.headers.clone(),
                    model_compat: spec.model_compat.clone(),
                    request_timeout: timeout,
                    limits,
                })
                .start()
                .recipient(),
            };
            let profiles = self.config.profiles(provider, &spec);
            let slot = Slot {
                actor,
                profiles: AuthProfiles::new(profiles.iter().map(|(id, _)| id.clone()).collect()),
                keys: profiles.into_iter().collect(),
            };
            self.slots.insert(provider.to_string(), slot);
        }
        self.slots
            .get_mut(provider)
            .ok_or_else(|| RouteError::Unavailable(provider.to_string()))
    }
}

impl Actor for ProviderHub {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.me = Some(ctx.address().recipient());
    }
}

impl Handler<RateLimitsSeen> for ProviderHub {
    type Result = ();
    fn handle(&mut self, msg: RateLimitsSeen, _: &mut Context<Self>) {
        let seen = ReportedLimits {
            windows: msg.windows,
            at_ms: msg.at_ms,
        };
        self.limits.insert(msg.provider, seen);
    }
}

impl Handler<GetRateLimits> for ProviderHub {
    type Result = MessageResult<GetRateLimits>;
    fn handle(&mut self, _: GetRateLimits, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.limits.clone())
    }
}

impl Handler<RouteRequest> for ProviderHub {
    type Result = Result<Route, RouteError>;
    fn handle(&mut self, msg: RouteRequest, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let now = crate::now_ms();
        let provider = msg.provider.to_ascii_lowercase();
        let slot = self.slot(&provider)?;
        let Some(profile) = slot.profiles.pick(msg.sticky.as_deref(), &msg.exclude, now) else {
            let back = slot.profiles.soonest_back_ms().unwrap_or(now);
            return Err(RouteError::Cooling {
                provider,
                back_in_s: back.saturating_sub(now).div_ceil(1000),
            });
        };
        let mut exclude = msg.exclude;
        exclude.push(profile.clone());
        Ok(Route {
            actor: slot.actor.clone(),
            api_key: slot.keys.get(&profile).cloned().flatten(),
            alternatives: slot.profiles.available_count(&exclude, now),
            profile,
        })
    }
}

impl Handler<ReportOutcome> for ProviderHub {
    type Result = ();
    fn handle(&mut self, msg: ReportOutcome, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        let Some(slot) = self.slots.get_mut(&msg.provider) else {
            return;
        };
        match msg.error {
            None => slot.profiles.succeeded(&msg.profile),
            Some(e) => {
                if let Some(d) = slot.profiles.failed(&msg.profile, &e, crate::now_ms()) {
                    tracing::warn!(provider = %msg.provider, profile = %msg.profile, error = %e,
                        cooldown_s = d.as_secs(), "auth profile cooling down");
                }
            }
        }
    }
}

impl Handler<Reconfigure> for ProviderHub {
    type Result = ();
    fn handle(&mut self, msg: Reconfigure, _: &mut Context<Self>) {
        let _span = self.span.clone().entered();
        self.config = msg.config;
        self.slots.clear();
    }
}

impl Handler<AuthStatus> for ProviderHub {
    type Result = Vec<ProviderAuth>;
    fn handle(&mut self, msg: AuthStatus, _: &mut Context<Self>) -> Vec<ProviderAuth> {
        let _span = self.span.clone().entered();
        let now = crate::now_ms();
        let stored: Vec<&str> = self
            .config
            .stored_profiles
            .iter()
            .map(|(id, _, _)| id.as_str())
            .collect();
        self.config
            .auth_status(&msg.also)
            .into_iter()
            .map(|(provider, spec)| {
                let Some(spec) = spec else {
                    return ProviderAuth {
                        provider,
                        needs_key: true,
                        known: false,
                        profiles: Vec::new(),
                    };
                };
                let cooling = self.slots.get(&provider).map(|s| &s.profiles);
                let profiles = self
                    .config
                    .profiles(&provider, &spec)
                    .into_iter()
                    .map(|(id, key)| ProfileAuth {
                        cooling_until: cooling.and_then(|c| c.cooling_until(&id, now)),
                        stored: stored.contains(&id.as_str()),
                        has_key: key.is_some(),
                        id,
                    })
                    .collect();
                ProviderAuth {
                    provider,
                    needs_key: spec.api != Api::Offline,
                    known: true,
                    profiles,
                }
            })
            .collect()
    }
}
