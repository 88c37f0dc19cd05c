//! Tests of routing: bindings by tier, session keys, identity links (with a property test).

use super::*;
use crate::settings::{BindingMatch, BindingPeer, BindingSession};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// `identityLinks` from literals.
fn identity_links(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(k, ids)| (k.to_string(), ids.iter().map(|s| s.to_string()).collect()))
        .collect()
}

fn bind(agent: &str, channel: &str, f: impl FnOnce(&mut BindingMatch)) -> Binding {
    let mut m = BindingMatch {
        channel: channel.into(),
        ..Default::default()
    };
    f(&mut m);
    Binding {
        agent_id: agent.into(),
        match_: m,
        session: None,
    }
}

fn peer(kind: PeerKind, id: &str) -> Option<Peer> {
    Some(Peer {
        kind,
        id: id.into(),
    })
}

fn p(kind: &str, id: &str) -> Option<BindingPeer> {
    Some(BindingPeer {
        kind: kind.into(),
        id: id.into(),
    })
}

/// One binding per tier, each to its own agent, plus decoys that must not win.
fn tiered() -> Vec<Binding> {
    vec![
        bind("channel", "discord", |m| m.account_id = Some("*".into())),
        bind("account", "discord", |m| m.account_id = Some("bot2".into())),
        bind("team", "slack", |m| m.team_id = Some("T1".into())),
        bind("guild", "discord", |m| m.guild_id = Some("G1".into())),
        bind("roles", "discord", |m| {
            m.guild_id = Some("G1".into());
            m.roles = Some(vec!["mod".into()]);
        }),
        bind("wild", "discord", |m| m.peer = p("group", "*")),
        bind("parent", "discord", |m| m.peer = p("channel", "C-parent")),
        bind("peer", "discord", |m| m.peer = p("direct", "u42")),
        // Decoys: another channel, another account, an unknown kind, no channel.
        bind("other-channel", "telegram", |m| m.peer = p("direct", "u42")),
        bind("other-account", "discord", |m| {
            m.account_id = Some("bot9".into());
            m.peer = p("direct", "u7");
        }),
        bind("bad-kind", "discord", |m| m.peer = p("thread", "u42")),
        bind("no-channel", "", |_| {}),
    ]
}

fn route(r: &mut Router, input: RouteInput<'_>) -> (String, &'static str) {
    let route = r.resolve(&input);
    (route.agent_id, route.matched_by.as_str())
}

#[test]
fn each_of_the_eight_tiers_wins_where_it_applies_and_the_first_tier_with_a_match_wins() {
    let session = SessionSettings::default();
    let mut r = Router::new(&tiered(), &session, "main");
    let roles = vec!["mod".to_string()];
    let cases: Vec<(RouteInput, (&str, &str))> = vec![
        (
            RouteInput {
                channel: "discord",
                peer: peer(PeerKind::Direct, "u42"),
                guild_id: Some("G1"),
                member_roles: &roles,
                ..Default::default()
            },
            ("peer", "binding.peer"),
        ),
        (
            RouteInput {
                channel: "discord",
                peer: peer(PeerKind::Channel, "thread-1"),
                parent_peer: peer(PeerKind::Channel, "C-parent"),
                ..Default::default()
            },
            ("parent", "binding.peer.parent"),
        ),
        (
            RouteInput {
                channel: "discord",
                peer: peer(PeerKind::Group, "g-any"),
                guild_id: Some("G1"),
                ..Default::default()
            },
            ("wild", "binding.peer.wildcard"),
        ),
        (
            RouteInput {
                channel: "discord",
                peer: peer(PeerKind::Direct, "u1"),
                guild_id: Some("G1"),
                member_roles: &roles,
                ..Default::default()
            },
            ("roles", "binding.guild+roles"),
        ),
        (
            RouteInput {
                channel: "discord",
                peer: peer(PeerKind::Direct, "u1"),
                guild_id: Some("G1"),
                ..Default::default()
            },
            ("guild", "binding.guild"),
        ),
        (
            RouteInput {
                channel: "slack",
                peer: peer(PeerKind::Direct, "u1"),
                team_id: Some("T1"),
                ..Default::default()
            },
            ("team", "binding.team"),
        ),
        (
            RouteInput {
                channel: "discord",
                account_id: Some("bot2"),
                peer: peer(PeerKind::Direct, "u1"),
                ..Default::default()
            },
            ("account", "binding.account"),
        ),
        (
            RouteInput {
                channel: "DISCORD",
                account_id: Some("bot3"),
                peer: peer(PeerKind::Direct, "u7"),
                ..Default::default()
            },
            ("channel", "binding.channel"),
        ),
        (
            RouteInput {
                channel: "whatsapp",
                peer: peer(PeerKind::Direct, "u42"),
                ..Default::default()
            },
            ("main", "default"),
        ),
        (
            RouteInput {
                channel: "slack",
                team_id: Some("T2"),
                ..Default::default()
            },
            ("main", "default"),
        ),
    ];
    for (input, want) in cases {
        let got = route(&mut r, input.clone());
        assert_eq!((got.0.as_str(), got.1), want, "{input:?}");
    }
}

#[test]
fn within_a_tier_the_first_binding_in_config_order_wins_across_account_scopes() {
    let bindings = vec![
        bind("first", "telegram", |m| m.account_id = Some("*".into())),
        bind("second", "telegram", |_| {}),
    ];
    let mut r = Router::new(&bindings, &SessionSettings::default(), "main");
    // Both match the default account at different tiers: the account tier first.
    let got = route(
        &mut r,
        RouteInput {
            channel: "telegram",
            ..Default::default()
        },
    );
    assert_eq!(got, ("second".into(), "binding.account"));
    let peers = vec![
        bind("a", "telegram", |m| m.peer = p("direct", "9")),
        bind("b", "telegram", |m| m.peer = p("direct", "9")),
    ];
    let mut r = Router::new(&peers, &SessionSettings::default(), "main");
    let input = RouteInput {
        channel: "telegram",
        peer: peer(PeerKind::Direct, "9"),
        ..Default::default()
    };
    assert_eq!(route(&mut r, input), ("a".into(), "binding.peer"));
}

fn key(dm: DmScope, links: &[(&str, &[&str])], channel: &str, kind: PeerKind, id: &str) -> String {
    let session = SessionSettings {
        dm_scope: dm,
        identity_links: identity_links(links),
        main_key: "main".into(),
        ..Default::default()
    };
    let mut r = Router::new(&[], &session, "Main");
    r.resolve(&RouteInput {
        channel,
        account_id: Some("Bot1"),
        peer: peer(kind, id),
        ..Default::default()
    })
    .session_key
}

#[test]
fn session_keys_follow_the_dm_scope_and_identity_links_merge_one_person() {
    use DmScope::*;
    use PeerKind::*;
    let none: &[(&str, &[&str])] = &[];
    let table = [
        (Main, "telegram", Direct, "42", "agent:main:main"),
        (PerPeer, "telegram", Direct, "42", "agent:main:direct:42"),
        (
            PerChannelPeer,
            "telegram",
            Direct,
            "42",
            "agent:main:telegram:direct:42",
        ),
        (
            PerAccountChannelPeer,
            "telegram",
            Direct,
            "42",
            "agent:main:telegram:bot1:direct:42",
        ),
        (
            PerPeer,
            "telegram",
            Group,
            "-100",
            "agent:main:telegram:group:-100",
        ),
        (
            Main,
            "discord",
            Channel,
            "C1",
            "agent:main:discord:channel:c1",
        ),
    ];
    for (dm, channel, kind, id, want) in table {
        assert_eq!(key(dm, none, channel, kind, id), want, "{dm:?} {kind:?}");
    }
    let alice: &[(&str, &[&str])] = &[("alice", &["telegram:42", "WhatsApp:+15550001"])];
    assert_eq!(
        key(PerPeer, alice, "telegram", Direct, "42"),
        "agent:main:direct:alice"
    );
    assert_eq!(
        key(PerPeer, alice, "whatsapp", Direct, "+15550001"),
        "agent:main:direct:alice",
        "same person, same session"
    );
    assert_eq!(
        key(PerChannelPeer, alice, "whatsapp", Direct, "+15550001"),
        "agent:main:whatsapp:direct:alice"
    );
    assert_eq!(
        key(PerPeer, alice, "discord", Direct, "42"),
        "agent:main:direct:42",
        "a link names its channel"
    );
    let bare: &[(&str, &[&str])] = &[("bob", &["777"])];
    assert_eq!(
        key(PerPeer, bare, "slack", Direct, "777"),
        "agent:main:direct:bob"
    );
    assert_eq!(
        key(Main, alice, "telegram", Direct, "42"),
        "agent:main:main"
    );
}

#[test]
fn binding_scopes_threads_and_group_scope_shape_the_key() {
    let mut b = bind("ops", "telegram", |m| m.peer = p("group", "-100"));
    b.session = Some(BindingSession {
        dm_scope: None,
        group_scope: Some(GroupScope::Main),
    });
    let session = SessionSettings {
        main_key: "main".into(),
        ..Default::default()
    };
    let mut r = Router::new(&[b], &session, "main");
    let r1 = r.resolve(&RouteInput {
        channel: "telegram",
        peer: peer(PeerKind::Group, "-100"),
        thread_id: Some("7"),
        ..Default::default()
    });
    assert_eq!(
        (r1.session_key.as_str(), r1.main_session_key.as_str()),
        ("agent:ops:main", "agent:ops:main"),
        "the binding's group scope; no topic on the main session"
    );
    let r2 = r.resolve(&RouteInput {
        channel: "telegram",
        peer: peer(PeerKind::Group, "-200"),
        thread_id: Some("Topic9"),
        ..Default::default()
    });
    assert_eq!(
        r2.session_key,
        "agent:main:telegram:group:-200:topic:topic9"
    );
    assert_eq!(r2.account_id, "default");
}

#[test]
fn evaluated_bindings_are_kept_for_at_most_2000_channel_accounts() {
    let mut r = Router::new(&tiered(), &SessionSettings::default(), "main");
    for i in 0..(EVALUATED_CACHE + 50) {
        let account = format!("acct{i}");
        r.resolve(&RouteInput {
            channel: "discord",
            account_id: Some(&account),
            ..Default::default()
        });
    }
    assert_eq!(r.cached(), EVALUATED_CACHE);
}

proptest! {
    /// Whatever arrives, routing answers (no panic), names a configured
    /// agent or the default, and gives a well-formed key of that agent.
    #[test]
    fn any_input_routes_to_a_known_agent_with_a_key_of_its_own(
        channel in "[a-zA-Z]{0,8}",
        account in proptest::option::of("[a-z0-9*]{0,5}"),
        kind in 0u8..4,
        id in "[ -~]{0,12}",
        guild in proptest::option::of("G[0-9]"),
        team in proptest::option::of("T[0-9]"),
        thread in proptest::option::of("[0-9]{1,3}"),
        dm in 0u8..4,
    ) {
        let dm_scope = [DmScope::Main, DmScope::PerPeer, DmScope::PerChannelPeer, DmScope::PerAccountChannelPeer][dm as usize];
        let session = SessionSettings { dm_scope, main_key: "main".into(), ..Default::default() };
        let mut r = Router::new(&tiered(), &session, "main");
        let kind = [None, Some(PeerKind::Direct), Some(PeerKind::Group), Some(PeerKind::Channel)][kind as usize];
        let route = r.resolve(&RouteInput {
            channel: &channel,
            account_id: account.as_deref(),
            peer: kind.map(|kind| Peer { kind, id: id.clone() }),
            guild_id: guild.as_deref(),
            team_id: team.as_deref(),
            thread_id: thread.as_deref(),
            ..Default::default()
        });
        let agents = ["main", "peer", "parent", "wild", "roles", "guild", "team", "account", "channel"];
        prop_assert!(agents.contains(&route.agent_id.as_str()), "{:?}", route);
        let prefix = format!("agent:{}:", route.agent_id);
        prop_assert!(route.session_key.starts_with(&prefix), "{:?}", route);
        let main = format!("agent:{}:main", route.agent_id);
        prop_assert_eq!(route.main_session_key, main);
    }
}
