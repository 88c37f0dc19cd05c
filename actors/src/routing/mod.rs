//! Routing (seed 001; OpenClaw's `resolve-route`): which agent answers an
//! inbound channel message, and under which session key. Not an actor: a
//! pure `Router` built from `bindings[]` and the `session` section, owned by
//! whoever routes (the channel supervisor), rebuilt when config is applied.
//!
//! `bindings[]` are tried in tiers; the first tier with a match wins, and
//! within a tier the first binding in config order:
//! 1. `binding.peer`: the exact peer (kind and id);
//! 2. `binding.peer.parent`: the thread's parent peer;
//! 3. `binding.peer.wildcard`: every peer of a kind (`id: "*"`);
//! 4. `binding.guild+roles`: a guild and one of the sender's roles;
//! 5. `binding.guild`: a guild;
//! 6. `binding.team`: a Slack workspace;
//! 7. `binding.account`: an account of the channel;
//! 8. `binding.channel`: every account (`accountId: "*"`);
//!
//! then the default agent (`default`). A binding applies to its channel and
//! to its account (unset: the default account; `*`: all). The bindings of a
//! (channel, account) are evaluated once and kept in an LRU of 2000.
//!
//! Session keys (seed 001): a direct message goes by `session.dmScope`
//! (`main`: the agent's main session; `per-peer`: `agent:<id>:direct:<peer>`;
//! `per-channel-peer`: `agent:<id>:<channel>:direct:<peer>`;
//! `per-account-channel-peer`: `agent:<id>:<channel>:<account>:direct:<peer>`),
//! with `session.identityLinks` naming one person across channels; a group
//! or channel is `agent:<id>:<channel>:<kind>:<id>` (`groupScope: main`:
//! the main session); a thread or topic adds `:topic:<id>`.

pub mod reset;

use std::collections::HashMap;
use std::num::NonZeroUsize;

use crate::settings::{Binding, DmScope, GroupScope, SessionSettings};

/// (channel, account) pairs whose evaluated bindings are kept.
pub const EVALUATED_CACHE: usize = 2000;

/// The account a message arrives on when its channel names none.
pub const DEFAULT_ACCOUNT: &str = "default";

/// What kind of conversation a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerKind {
    Direct,
    Group,
    Channel,
}

impl PeerKind {
    pub fn parse(s: &str) -> Option<PeerKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "direct" | "dm" => Some(PeerKind::Direct),
            "group" => Some(PeerKind::Group),
            "channel" => Some(PeerKind::Channel),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PeerKind::Direct => "direct",
            PeerKind::Group => "group",
            PeerKind::Channel => "channel",
        }
    }

    /// Groups and channels match each other's bindings (OpenClaw's rule).
    fn matches(self, other: PeerKind) -> bool {
        self == other || (self != PeerKind::Direct && other != PeerKind::Direct)
    }
}

/// The conversation a message came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Peer {
    pub kind: PeerKind,
    pub id: String,
}

/// Where an inbound message came from, as a channel adapter knows it.
#[derive(Debug, Clone, Default)]
pub struct RouteInput<'a> {
    pub channel: &'a str,
    pub account_id: Option<&'a str>,
    pub peer: Option<Peer>,
    /// A thread's parent conversation.
    pub parent_peer: Option<Peer>,
    pub guild_id: Option<&'a str>,
    pub team_id: Option<&'a str>,
    pub member_roles: &'a [String],
    /// A thread or forum topic inside the peer.
    pub thread_id: Option<&'a str>,
}

/// Which tier chose the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedBy {
    Peer,
    ParentPeer,
    PeerWildcard,
    GuildRoles,
    Guild,
    Team,
    Account,
    Channel,
    Default,
}

impl MatchedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchedBy::Peer => "binding.peer",
            MatchedBy::ParentPeer => "binding.peer.parent",
            MatchedBy::PeerWildcard => "binding.peer.wildcard",
            MatchedBy::GuildRoles => "binding.guild+roles",
            MatchedBy::Guild => "binding.guild",
            MatchedBy::Team => "binding.team",
            MatchedBy::Account => "binding.account",
            MatchedBy::Channel => "binding.channel",
            MatchedBy::Default => "default",
        }
    }
}

/// The answer: the agent, its session for this message, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub agent_id: String,
    pub channel: String,
    pub account_id: String,
    pub session_key: String,
    pub main_session_key: String,
    pub matched_by: MatchedBy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PeerMatch {
    None,
    Exact(PeerKind, String),
    AnyOf(PeerKind),
}

#[derive(Debug, Clone)]
struct Rule {
    agent_id: String,
    peer: PeerMatch,
    guild: Option<String>,
    team: Option<String>,
    roles: Option<Vec<String>>,
    dm_scope: Option<DmScope>,
    group_scope: Option<GroupScope>,
}

impl Rule {
    fn tier(&self, any_account: bool) -> MatchedBy {
        match (&self.peer, &self.guild, &self.roles, &self.team) {
            (PeerMatch::Exact(..), ..) => MatchedBy::Peer,
            (PeerMatch::AnyOf(_), ..) => MatchedBy::PeerWildcard,
            (_, Some(_), Some(_), _) => MatchedBy::GuildRoles,
            (_, Some(_), None, _) => MatchedBy::Guild,
            (_, None, _, Some(_)) => MatchedBy::Team,
            _ if any_account => MatchedBy::Channel,
            _ => MatchedBy::Account,
        }
    }

    /// The guild, team and role constraints (the peer is checked by tier).
    fn scope_matches(&self, input: &RouteInput<'_>) -> bool {
        let same = |want: &Option<String>, got: Option<&str>| {
            want.as_ref()
                .is_none_or(|w| Some(w.as_str()) == got.map(str::trim))
        };
        let roles = self.roles.as_ref().is_none_or(|roles| {
            roles
                .iter()
                .any(|r| input.member_roles.iter().any(|m| m == r))
        });
        same(&self.guild, input.guild_id) && same(&self.team, input.team_id) && roles
    }

    fn peer_matches(&self, peer: &Peer) -> bool {
        match &self.peer {
            PeerMatch::None => true,
            PeerMatch::Exact(kind, id) => kind.matches(peer.kind) && *id == peer.id,
            PeerMatch::AnyOf(kind) => kind.matches(peer.kind),
        }
    }
}

/// The bindings of one (channel, account), in config order, with their tier.
type Evaluated = Vec<(MatchedBy, Rule)>;

/// A channel's bindings: per account, and for every account (`*`).
#[derive(Default)]
struct ChannelRules {
    by_account: HashMap<String, Vec<(usize, Rule)>>,
    any_account: Vec<(usize, Rule)>,
}

pub struct Router {
    channels: HashMap<String, ChannelRules>,
    evaluated: lru::LruCache<(String, String), Evaluated>,
    default_agent: String,
    dm_scope: DmScope,
    group_scope: GroupScope,
    main_key: String,
    /// Normalised id (`channel:peer` or a bare peer) -> canonical name.
    identity: HashMap<String, String>,
}

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// `session.identityLinks`: each normalised id -> its canonical name (the
/// first link naming an id wins).
fn identities(links: &std::collections::BTreeMap<String, Vec<String>>) -> HashMap<String, String> {
    let mut identity = HashMap::new();
    for (canonical, ids) in links {
        let name = canonical.trim();
        if name.is_empty() {
            continue;
        }
        for id in ids {
            identity.entry(norm(id)).or_insert_with(|| name.to_string());
        }
    }
    identity
}

/// A thread's own session under `base` (`:topic:<thread>`), unless the
/// conversation is the agent's main session.
fn in_thread(base: String, thread: Option<&str>, main_session_key: &str) -> String {
    match thread.map(str::trim).filter(|t| !t.is_empty()) {
        Some(thread) if base != main_session_key => {
            format!("{base}:topic:{}", thread.to_ascii_lowercase())
        }
        _ => base,
    }
}

fn account_of(account: Option<&str>) -> String {
    match account.map(str::trim) {
        Some(a) if !a.is_empty() => a.to_ascii_lowercase(),
        _ => DEFAULT_ACCOUNT.to_string(),
    }
}

impl Router {
    /// From `bindings[]` and `session`; `default_agent` answers what no
    /// binding matches. Bindings without a channel, or with a peer whose
    /// kind is unknown or id empty, are skipped (as OpenClaw skips them).
    pub fn new(bindings: &[Binding], session: &SessionSettings, default_agent: &str) -> Router {
        let mut channels: HashMap<String, ChannelRules> = HashMap::new();
        for (order, b) in bindings.iter().enumerate() {
            let m = &b.match_;
            let channel = norm(&m.channel);
            let peer = match &m.peer {
                None => PeerMatch::None,
                Some(p) => match (PeerKind::parse(&p.kind), p.id.trim()) {
                    (Some(_), "") | (None, _) => continue,
                    (Some(kind), "*") => PeerMatch::AnyOf(kind),
                    (Some(kind), id) => PeerMatch::Exact(kind, id.to_string()),
                },
            };
            if channel.is_empty() {
                continue;
            }
            let nonempty = |v: &Option<String>| {
                v.as_ref()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            let rule = Rule {
                agent_id: norm(&b.agent_id),
                peer,
                guild: nonempty(&m.guild_id),
                team: nonempty(&m.team_id),
                roles: m.roles.clone().filter(|r| !r.is_empty()),
                dm_scope: b.session.as_ref().and_then(|s| s.dm_scope),
                group_scope: b.session.as_ref().and_then(|s| s.group_scope),
            };
            let rules = channels.entry(channel).or_default();
            match m.account_id.as_deref().map(str::trim) {
                Some("*") => rules.any_account.push((order, rule)),
                other => rules
                    .by_account
                    .entry(account_of(other))
                    .or_default()
                    .push((order, rule)),
            }
        }
        let identity = identities(&session.identity_links);
        Router {
            channels,
            evaluated: lru::LruCache::new(
                NonZeroUsize::new(EVALUATED_CACHE).unwrap_or(NonZeroUsize::MIN),
            ),
            default_agent: norm(default_agent),
            dm_scope: session.dm_scope,
            group_scope: session.group_scope,
            main_key: norm(&session.main_key),
            identity,
        }
    }

    /// (channel, account) pairs evaluated and kept.
    pub fn cached(&self) -> usize {
        self.evaluated.len()
    }

    fn evaluated(&mut self, channel: &str, account: &str) -> &Evaluated {
        let key = (channel.to_string(), account.to_string());
        if !self.evaluated.contains(&key) {
            let rules = self.channels.get(channel);
            let mut all: Vec<(usize, MatchedBy, Rule)> = Vec::new();
            if let Some(r) = rules {
                for (order, rule) in r.by_account.get(account).into_iter().flatten() {
                    all.push((*order, rule.tier(false), rule.clone()));
                }
                for (order, rule) in &r.any_account {
                    all.push((*order, rule.tier(true), rule.clone()));
                }
            }
            all.sort_by_key(|(order, ..)| *order);
            let list = all.into_iter().map(|(_, t, r)| (t, r)).collect();
            self.evaluated.put(key.clone(), list);
        }
        self.evaluated.get(&key).map_or(&EMPTY, |v| v)
    }

    /// The agent and session for a message.
    pub fn resolve(&mut self, input: &RouteInput<'_>) -> Route {
        let channel = norm(input.channel);
        let account = account_of(input.account_id);
        let peer = input.peer.clone().map(|p| Peer {
            id: p.id.trim().to_string(),
            ..p
        });
        let parent = input
            .parent_peer
            .clone()
            .filter(|p| !p.id.trim().is_empty());
        let roles = input.guild_id.is_some() && !input.member_roles.is_empty();
        let rules = self.evaluated(&channel, &account).clone();
        let pick = |tier: MatchedBy, against: Option<&Peer>| {
            rules
                .iter()
                .filter(|(t, _)| match tier {
                    MatchedBy::ParentPeer => *t == MatchedBy::Peer,
                    _ => *t == tier,
                })
                .find(|(_, r)| against.is_none_or(|p| r.peer_matches(p)) && r.scope_matches(input))
                .map(|(_, r)| r.clone())
        };
        let tiers = [
            (MatchedBy::Peer, peer.is_some(), peer.as_ref()),
            (MatchedBy::ParentPeer, parent.is_some(), parent.as_ref()),
            (MatchedBy::PeerWildcard, peer.is_some(), peer.as_ref()),
            (MatchedBy::GuildRoles, roles, None),
            (MatchedBy::Guild, input.guild_id.is_some(), None),
            (MatchedBy::Team, input.team_id.is_some(), None),
            (MatchedBy::Account, true, None),
            (MatchedBy::Channel, true, None),
        ];
        let found = tiers
            .into_iter()
            .filter(|(_, applies, _)| *applies)
            .find_map(|(tier, _, against)| pick(tier, against).map(|r| (tier, r)));
        let (matched_by, agent, dm, group) = match found {
            Some((tier, r)) => (tier, r.agent_id, r.dm_scope, r.group_scope),
            None => (MatchedBy::Default, self.default_agent.clone(), None, None),
        };
        let main_session_key = format!("agent:{agent}:{}", self.main_key);
        let scopes = (
            dm.unwrap_or(self.dm_scope),
            group.unwrap_or(self.group_scope),
        );
        let base = self.session_key(&agent, &channel, &account, peer.as_ref(), scopes);
        let session_key = in_thread(base, input.thread_id, &main_session_key);
        Route {
            agent_id: agent,
            channel,
            account_id: account,
            session_key,
            main_session_key,
            matched_by,
        }
    }

    /// The canonical name of a direct peer linked across channels.
    fn linked(&self, channel: &str, peer: &str) -> Option<&String> {
        self.identity
            .get(&format!("{channel}:{}", norm(peer)))
            .or_else(|| self.identity.get(&norm(peer)))
    }

    fn session_key(
        &self,
        agent: &str,
        channel: &str,
        account: &str,
        peer: Option<&Peer>,
        (dm, group): (DmScope, GroupScope),
    ) -> String {
        let main = format!("agent:{agent}:{}", self.main_key);
        let Some(peer) = peer.filter(|p| !p.id.is_empty()) else {
            return main;
        };
        if peer.kind != PeerKind::Direct {
            return match group {
                GroupScope::Main => main,
                GroupScope::PerGroup => format!(
                    "agent:{agent}:{channel}:{}:{}",
                    peer.kind.as_str(),
                    norm(&peer.id)
                ),
            };
        }
        let id = match dm {
            DmScope::Main => return main,
            _ => self
                .linked(channel, &peer.id)
                .map_or_else(|| norm(&peer.id), |c| norm(c)),
        };
        match dm {
            DmScope::Main => main,
            DmScope::PerPeer => format!("agent:{agent}:direct:{id}"),
            DmScope::PerChannelPeer => format!("agent:{agent}:{channel}:direct:{id}"),
            DmScope::PerAccountChannelPeer => {
                format!("agent:{agent}:{channel}:{account}:direct:{id}")
            }
        }
    }
}

static EMPTY: Evaluated = Vec::new();

#[cfg(test)]
mod tests;
