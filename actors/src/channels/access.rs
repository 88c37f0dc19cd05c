//! Who may talk to the agent through a channel (OpenClaw's keys), and the
//! pairing codes that let an operator admit a stranger.
//!
//! Direct messages follow `dmPolicy`: `pairing` (the default: an unknown
//! sender gets a one-time code, valid 1 hour, at most 3 waiting per
//! account, and nothing reaches the agent until an operator approves it),
//! `allowlist` (only `allowFrom`), `open` (anyone; `allowFrom` must say
//! `"*"`), `disabled`. Groups follow `groupPolicy` (`allowlist`, the
//! default: only the chats under `groups`, `"*"` for all; `open`;
//! `disabled`) and, per group, `requireMention` (default true) and
//! `allowFrom`.
//!
//! Approved senders and waiting codes live in the store (`channel_access`):
//! `pair/<channel>/<account>/<code>` and `allow/<channel>/<account>/<sender>`.
//! Time and randomness are passed in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError, StoreWrite, Tree};

/// A pairing code's life.
pub const CODE_TTL_MS: u64 = 3_600_000;
/// Codes waiting per account at most.
pub const MAX_PENDING: usize = 3;
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;

pub use crate::settings::{DmPolicy, GroupPolicy, GroupRule};

/// One account's access rules.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessConfig {
    pub dm_policy: DmPolicy,
    pub allow_from: Vec<String>,
    pub group_policy: GroupPolicy,
    pub group_allow_from: Vec<String>,
    pub groups: BTreeMap<String, GroupRule>,
}

impl AccessConfig {
    /// The rule OpenClaw enforces: `open` needs `allowFrom: ["*"]`. The
    /// error names the key (under the account's `path`).
    pub fn check(&self, path: &str) -> Result<(), super::error::ConfigError> {
        if self.dm_policy == DmPolicy::Open && !self.allow_from.iter().any(|a| a == "*") {
            return Err(format!(
                "{path}.allowFrom: dmPolicy \"open\" requires allowFrom to include \"*\""
            )
            .into());
        }
        Ok(())
    }
}

/// What a message is, as access cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knock<'a> {
    pub sender: &'a str,
    /// The group's id; None for a direct message.
    pub group: Option<&'a str>,
    /// The bot was mentioned (or replied to) in a group.
    pub mentioned: bool,
    /// Wider scopes whose rule applies when the group has none of its
    /// own, nearest first (a Discord thread's channel, then its guild).
    pub parents: &'a [&'a str],
}

/// The answer for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it. `commands`: the sender may use directives.
    Allow { commands: bool },
    /// An unknown sender under `pairing`: answer with a code, run nothing.
    Pair,
    /// Drop it silently (`why` goes to the log).
    Ignore { why: &'static str },
}

fn listed(list: &[String], sender: &str) -> bool {
    list.iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(sender))
}

fn named(list: &[String], sender: &str) -> bool {
    list.iter()
        .any(|a| a != "*" && a.eq_ignore_ascii_case(sender))
}

/// Decides one message. `approved`: the sender was admitted by pairing.
pub fn decide(cfg: &AccessConfig, knock: &Knock<'_>, approved: bool) -> Verdict {
    let commands = approved || named(&cfg.allow_from, knock.sender);
    let Some(group) = knock.group else {
        return match cfg.dm_policy {
            DmPolicy::Disabled => Verdict::Ignore {
                why: "direct messages disabled",
            },
            DmPolicy::Open => Verdict::Allow { commands },
            _ if approved || listed(&cfg.allow_from, knock.sender) => Verdict::Allow { commands },
            DmPolicy::Pairing => Verdict::Pair,
            DmPolicy::Allowlist => Verdict::Ignore {
                why: "sender not allowlisted",
            },
        };
    };
    let rule = std::iter::once(group)
        .chain(knock.parents.iter().copied())
        .chain(std::iter::once("*"))
        .find_map(|k| cfg.groups.get(k));
    match cfg.group_policy {
        GroupPolicy::Disabled => {
            return Verdict::Ignore {
                why: "groups disabled",
            }
        }
        GroupPolicy::Allowlist if rule.is_none() => {
            return Verdict::Ignore {
                why: "group not allowlisted",
            }
        }
        _ => {}
    }
    if rule.is_some_and(|r| r.enabled == Some(false)) {
        return Verdict::Ignore {
            why: "group disabled",
        };
    }
    let senders: Vec<String> = rule
        .and_then(|r| r.allow_from.as_ref())
        .map(|l| l.iter().map(id_text).collect())
        .unwrap_or_else(|| cfg.group_allow_from.clone());
    if !senders.is_empty() && !listed(&senders, knock.sender) {
        return Verdict::Ignore {
            why: "sender not allowed in this group",
        };
    }
    if rule.and_then(|r| r.require_mention).unwrap_or(true) && !knock.mentioned {
        return Verdict::Ignore {
            why: "not mentioned",
        };
    }
    Verdict::Allow {
        commands: commands || named(&senders, knock.sender),
    }
}

fn id_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.trim().to_string(),
        other => other.to_string(),
    }
}

/// A code waiting for an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingRequest {
    pub channel: String,
    pub account_id: String,
    pub code: String,
    pub sender: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    pub created_ms: u64,
    pub expires_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Admitted {
    at_ms: u64,
    #[serde(default)]
    code: Option<String>,
}

/// What asking for a code gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pairing {
    /// A new code: tell the sender.
    New(String),
    /// The sender already has a waiting code (not repeated to them).
    Waiting(String),
    /// Too many codes wait on this account: nothing is sent.
    Full,
}

fn pair_prefix(channel: &str, account: &str) -> String {
    format!("pair/{channel}/{account}/")
}

/// Where a waiting request is kept.
fn request_key(r: &PairingRequest) -> String {
    format!("{}{}", pair_prefix(&r.channel, &r.account_id), r.code)
}

fn allow_key(channel: &str, account: &str, sender: &str) -> String {
    format!("allow/{channel}/{account}/{sender}")
}

/// Whether pairing admitted `sender`.
pub fn approved(
    store: &Store,
    channel: &str,
    account: &str,
    sender: &str,
) -> Result<bool, StoreError> {
    Ok(store
        .get::<Admitted>(Tree::ChannelAccess, &allow_key(channel, account, sender))?
        .is_some())
}

/// A new code for `sender` (8 characters without look-alikes), unless one
/// waits or the account has `MAX_PENDING`; expired codes go first.
/// `random`: at least 8 random bytes.
pub fn request(
    store: &Store,
    channel: &str,
    account: &str,
    sender: &str,
    sender_name: Option<&str>,
    now_ms: u64,
    random: &[u8],
) -> Result<Pairing, StoreError> {
    let prefix = pair_prefix(channel, account);
    let mut live = Vec::new();
    let mut writes: Vec<StoreWrite> = Vec::new();
    for (k, r) in store.scan::<PairingRequest>(Tree::ChannelAccess, &prefix)? {
        if r.expires_ms <= now_ms {
            writes.push((Tree::ChannelAccess, k, None));
        } else {
            live.push(r);
        }
    }
    let outcome = if let Some(r) = live.iter().find(|r| r.sender == sender) {
        Pairing::Waiting(r.code.clone())
    } else if live.len() >= MAX_PENDING {
        Pairing::Full
    } else {
        let code: String = random
            .iter()
            .cycle()
            .take(CODE_LEN)
            .map(|b| CODE_ALPHABET[*b as usize % CODE_ALPHABET.len()] as char)
            .collect();
        let req = PairingRequest {
            channel: channel.into(),
            account_id: account.into(),
            code: code.clone(),
            sender: sender.into(),
            sender_name: sender_name.map(str::to_string),
            created_ms: now_ms,
            expires_ms: now_ms + CODE_TTL_MS,
        };
        writes.push((
            Tree::ChannelAccess,
            format!("{prefix}{code}"),
            Some(serde_json::to_value(req)?),
        ));
        Pairing::New(code)
    };
    store.commit(&writes)?;
    Ok(outcome)
}

/// Codes waiting (unexpired), for `channel` or all, oldest first.
pub fn list(
    store: &Store,
    channel: Option<&str>,
    now_ms: u64,
) -> Result<Vec<PairingRequest>, StoreError> {
    let prefix = channel.map_or_else(|| "pair/".to_string(), |c| format!("pair/{c}/"));
    let mut out: Vec<PairingRequest> = store
        .scan::<PairingRequest>(Tree::ChannelAccess, &prefix)?
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| r.expires_ms > now_ms)
        .collect();
    out.sort_by_key(|r| r.created_ms);
    Ok(out)
}

fn find(
    store: &Store,
    channel: &str,
    code: &str,
    now_ms: u64,
) -> Result<Option<PairingRequest>, StoreError> {
    let code = code.trim().to_ascii_uppercase();
    Ok(list(store, Some(channel), now_ms)?
        .into_iter()
        .find(|r| r.code == code))
}

/// Approves a waiting code: its sender is admitted. Reply: the request,
/// or None when no such code waits (unknown or expired).
pub fn approve(
    store: &Store,
    channel: &str,
    code: &str,
    now_ms: u64,
) -> Result<Option<PairingRequest>, StoreError> {
    let Some(r) = find(store, channel, code, now_ms)? else {
        return Ok(None);
    };
    let admitted = Admitted {
        at_ms: now_ms,
        code: Some(r.code.clone()),
    };
    store.commit(&[
        (Tree::ChannelAccess, request_key(&r), None),
        (
            Tree::ChannelAccess,
            allow_key(channel, &r.account_id, &r.sender),
            Some(serde_json::to_value(admitted)?),
        ),
    ])?;
    Ok(Some(r))
}

/// Drops a waiting code without admitting anyone.
pub fn dismiss(
    store: &Store,
    channel: &str,
    code: &str,
    now_ms: u64,
) -> Result<Option<PairingRequest>, StoreError> {
    let Some(r) = find(store, channel, code, now_ms)? else {
        return Ok(None);
    };
    store.commit(&[(Tree::ChannelAccess, request_key(&r), None)])?;
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dm: DmPolicy, allow: &[&str]) -> AccessConfig {
        AccessConfig {
            dm_policy: dm,
            allow_from: allow.iter().map(|s| s.to_string()).collect(),
            group_policy: GroupPolicy::Allowlist,
            group_allow_from: Vec::new(),
            groups: BTreeMap::new(),
        }
    }

    fn dm(sender: &str) -> Knock<'_> {
        Knock {
            sender,
            group: None,
            mentioned: false,
            parents: &[],
        }
    }

    #[test]
    fn direct_messages_follow_the_dm_policy() {
        let table = [
            (DmPolicy::Pairing, vec![], "7", false, Verdict::Pair),
            (
                DmPolicy::Pairing,
                vec![],
                "7",
                true,
                Verdict::Allow { commands: true },
            ),
            (
                DmPolicy::Pairing,
                vec!["7"],
                "7",
                false,
                Verdict::Allow { commands: true },
            ),
            (
                DmPolicy::Allowlist,
                vec!["8"],
                "7",
                false,
                Verdict::Ignore {
                    why: "sender not allowlisted",
                },
            ),
            (
                DmPolicy::Open,
                vec!["*"],
                "7",
                false,
                Verdict::Allow { commands: false },
            ),
            (
                DmPolicy::Open,
                vec!["*", "7"],
                "7",
                false,
                Verdict::Allow { commands: true },
            ),
            (
                DmPolicy::Disabled,
                vec!["7"],
                "7",
                false,
                Verdict::Ignore {
                    why: "direct messages disabled",
                },
            ),
        ];
        for (policy, allow, sender, approved, want) in table {
            assert_eq!(
                decide(&cfg(policy, &allow), &dm(sender), approved),
                want,
                "{policy:?} {allow:?}"
            );
        }
        assert!(cfg(DmPolicy::Open, &["7"])
            .check("channels.telegram")
            .is_err());
        assert!(cfg(DmPolicy::Open, &["*"])
            .check("channels.telegram")
            .is_ok());
    }

    #[test]
    fn a_group_without_a_rule_takes_its_parents_nearest_first() {
        let mut c = cfg(DmPolicy::Pairing, &[]);
        let open = GroupRule {
            require_mention: Some(false),
            ..GroupRule::default()
        };
        let off = GroupRule {
            enabled: Some(false),
            ..GroupRule::default()
        };
        c.groups.insert("guild".into(), open);
        let knock = |parents| Knock {
            sender: "7",
            group: Some("thread"),
            mentioned: false,
            parents,
        };
        assert_eq!(
            decide(&c, &knock(&["channel", "guild"]), false),
            Verdict::Allow { commands: false }
        );
        c.groups.insert("channel".into(), off);
        assert_eq!(
            decide(&c, &knock(&["channel", "guild"]), false),
            Verdict::Ignore {
                why: "group disabled"
            }
        );
        assert_eq!(
            decide(&c, &knock(&[]), false),
            Verdict::Ignore {
                why: "group not allowlisted"
            }
        );
    }

    #[test]
    fn groups_need_an_allowlist_entry_and_a_mention() {
        let mut c = cfg(DmPolicy::Pairing, &[]);
        let knock = |mentioned| Knock {
            parents: &[],
            sender: "7",
            group: Some("-100"),
            mentioned,
        };
        assert_eq!(
            decide(&c, &knock(true), false),
            Verdict::Ignore {
                why: "group not allowlisted"
            }
        );
        c.groups.insert("-100".into(), GroupRule::default());
        assert_eq!(
            decide(&c, &knock(false), false),
            Verdict::Ignore {
                why: "not mentioned"
            }
        );
        assert_eq!(
            decide(&c, &knock(true), false),
            Verdict::Allow { commands: false }
        );
        c.groups.insert(
            "-100".into(),
            GroupRule {
                require_mention: Some(false),
                ..Default::default()
            },
        );
        assert_eq!(
            decide(&c, &knock(false), false),
            Verdict::Allow { commands: false }
        );
        c.group_allow_from = vec!["9".into()];
        assert_eq!(
            decide(&c, &knock(true), false),
            Verdict::Ignore {
                why: "sender not allowed in this group"
            }
        );
        c.group_policy = GroupPolicy::Disabled;
        assert_eq!(
            decide(&c, &knock(true), false),
            Verdict::Ignore {
                why: "groups disabled"
            }
        );
        let mut open = cfg(DmPolicy::Pairing, &[]);
        open.group_policy = GroupPolicy::Open;
        assert_eq!(
            decide(&open, &knock(true), false),
            Verdict::Allow { commands: false }
        );
    }

    #[test]
    fn pairing_codes_expire_cap_at_three_and_admit_on_approval() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let r = |b: u8| [b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7];
        let Pairing::New(code) =
            request(&store, "telegram", "default", "1", Some("Ann"), 0, &r(1)).unwrap()
        else {
            panic!("expected a new code")
        };
        assert_eq!(code.len(), 8);
        assert_eq!(
            request(&store, "telegram", "default", "1", None, 5, &r(9)).unwrap(),
            Pairing::Waiting(code.clone())
        );
        assert!(matches!(
            request(&store, "telegram", "default", "2", None, 6, &r(2)).unwrap(),
            Pairing::New(_)
        ));
        assert!(matches!(
            request(&store, "telegram", "default", "3", None, 7, &r(3)).unwrap(),
            Pairing::New(_)
        ));
        assert_eq!(
            request(&store, "telegram", "default", "4", None, 8, &r(4)).unwrap(),
            Pairing::Full
        );
        // Another account has its own three.
        assert!(matches!(
            request(&store, "telegram", "work", "4", None, 8, &r(4)).unwrap(),
            Pairing::New(_)
        ));
        assert_eq!(list(&store, Some("telegram"), 10).unwrap().len(), 4);
        assert!(!approved(&store, "telegram", "default", "1").unwrap());
        let got = approve(&store, "telegram", &code.to_ascii_lowercase(), 10)
            .unwrap()
            .unwrap();
        assert_eq!(got.sender, "1");
        assert!(approved(&store, "telegram", "default", "1").unwrap());
        assert!(
            approve(&store, "telegram", &code, 11).unwrap().is_none(),
            "a code works once"
        );
        // An hour later every code has expired and a new one can be had.
        assert!(list(&store, None, CODE_TTL_MS + 8).unwrap().is_empty());
        assert!(approve(&store, "telegram", "ZZZZZZZZ", CODE_TTL_MS + 8)
            .unwrap()
            .is_none());
        assert!(matches!(
            request(
                &store,
                "telegram",
                "default",
                "4",
                None,
                CODE_TTL_MS + 9,
                &r(5)
            )
            .unwrap(),
            Pairing::New(_)
        ));
        let waiting = list(&store, Some("telegram"), CODE_TTL_MS + 9).unwrap();
        let dismissed = dismiss(&store, "telegram", &waiting[0].code, CODE_TTL_MS + 9)
            .unwrap()
            .unwrap();
        assert!(!approved(&store, "telegram", "default", &dismissed.sender).unwrap());
    }
}
