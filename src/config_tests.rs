//! `config.rs`'s tests: the layers, the typed sections, the secrets.

use super::*;

#[test]
fn defaults_alone_load_and_keep_camel_case_keys() {
    let loaded = load(&ConfigSources {
        path: PathBuf::from("/nonexistent/ferroclaw.json"),
        ..Default::default()
    })
    .unwrap();
    assert!(!loaded.exists);
    assert_eq!(loaded.settings.gateway.port, 18789);
    assert_eq!(loaded.settings.gateway.tick_interval_ms, 30000);
    assert_eq!(
        loaded.settings.agents.defaults.model.primary(),
        "offline/echo"
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn bad_values_name_the_file_key_path_and_expectation() {
    let check = |raw: &str, want_path: &str, want_msg: &str| {
        let err = check_user_raw(raw, "/x/ferroclaw.json")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/x/ferroclaw.json: "), "{err}");
        assert!(err.contains(want_path), "{err}");
        assert!(err.contains(want_msg), "{err}");
    };
    check("{gateway:{port:'abc'}}", "gateway.port", "expected u16");
    check(
        "{gateway:{auth:{mode:'magic'}}}",
        "gateway.auth.mode",
        "expected one of",
    );
    check(
        "{gateway:{handshakeTimeoutMs: 5}}",
        "gateway.handshakeTimeoutMs",
        "1000",
    );
    check("{gateway:{port: 1,,}}", "", "");
    check("[1,2]", "", "expected a map");
    check(
        "{gateway:{bind:'lan', auth:{mode:'none'}}}",
        "gateway.auth.mode",
        "only allowed",
    );
    assert!(check_user_raw("{gateway:{bind:'127.0.0.2', auth:{mode:'none'}}}", "f").is_ok());
}

#[test]
fn typed_sections_name_the_key_that_is_wrong() {
    let err = |raw: &str| check_user_raw(raw, "f").unwrap_err().to_string();
    let e = err("{agents:{defaults:{sandbox:{mode:'sometimes'}}}}");
    assert!(e.contains("agents.defaults.sandbox.mode"), "{e}");
    let e = err("{tools:{fs:{workspaceOnly:'yes'}}}");
    assert!(e.contains("tools.fs.workspaceOnly"), "{e}");
    let e = err("{session:{dmScope:'per-moon'}}");
    assert!(e.contains("session.dmScope"), "{e}");
    let e = err("{skills:{entries:{weather:{enabled:'yes'}}}}");
    assert!(e.contains("skills.entries.weather.enabled"), "{e}");
    // OpenClaw's loader keys and a skill's own config are kept as written.
    let openclaw = "{skills:{allowBundled:['x'], load:{watch:false}, entries:{w:{config:{a:1}}}}}";
    assert!(check_user_raw(openclaw, "f").is_ok());
    let e = err("{bindings:[{agentId:'ops'}]}");
    assert!(e.contains("bindings[0]") && e.contains("match"), "{e}");
    let e = err("{bindings:[{agentId:'ops', match:{channel:'telegram', peer:{kind:'direct'}}}]}");
    assert!(e.contains("bindings[0].match.peer"), "{e}");
    assert!(check_user_raw(
        "{session:{dmScope:'per-channel-peer', identityLinks:{alice:['telegram:1']}, reset:{atHour:4}}, bindings:[{agentId:'ops', match:{channel:'telegram', accountId:'*'}, comment:'ok'}]}",
        "f"
    )
    .is_ok());
    let e = err("{agents:{defaults:{subagents:{maxSpawnDepth:-1}}}}");
    assert!(e.contains("agents.defaults.subagents.maxSpawnDepth"), "{e}");
    // The agent sections read from raw JSON before are typed now: an
    // unknown mode is refused (it silently became `safeguard` before).
    let e = err("{agents:{defaults:{compaction:{mode:'turbo'}}}}");
    assert!(e.contains("agents.defaults.compaction.mode"), "{e}");
    let e = err("{agents:{defaults:{contextPruning:{mode:'sometimes'}}}}");
    assert!(e.contains("agents.defaults.contextPruning.mode"), "{e}");
    let e = err("{agents:{defaults:{contextPruning:{softTrimRatio:3}}}}");
    assert!(
        e.contains("agents.defaults.contextPruning.softTrimRatio"),
        "{e}"
    );
    let e = err("{agents:{defaults:{heartbeat:{ackMaxChars:'lots'}}}}");
    assert!(e.contains("agents.defaults.heartbeat.ackMaxChars"), "{e}");
    let e = err("{agents:{defaults:{memorySearch:{query:{minScore:'high'}}}}}");
    assert!(
        e.contains("agents.defaults.memorySearch.query.minScore"),
        "{e}"
    );
    let (_, s, warnings) = check_user_raw(
        "{agents:{defaults:{compaction:{mode:'default', keepRecent:5}, heartbeat:{every:'1h'}}}, hooks:{presets:['gmail']}}",
        "f",
    )
    .unwrap();
    assert_eq!(s.hooks.path, "/hooks");
    assert_eq!(
        s.hooks.other["presets"][0], "gmail",
        "OpenClaw's other keys kept"
    );
    assert_eq!(
        s.agents.defaults.compaction.mode,
        ferroclaw_actors::settings::CompactionMode::Safeguard
    );
    assert_eq!(
        s.agents.defaults.heartbeat.ack_max_chars, 300,
        "the shipped default"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("agents.defaults.compaction.keepRecent")),
        "a typo is named: {warnings:?}"
    );
    // A user's keys over the shipped ones, at every depth.
    let (_, s, warnings) =
        check_user_raw("{tools:{allow:['read'], exec:{security:'allowlist'}}}", "f").unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(s.tools.allow, Some(vec!["read".to_string()]));
    assert_eq!(s.tools.exec.security, "allowlist");
    assert_eq!(s.tools.exec.approval_timeout_seconds, 120, "the default");
    assert_eq!(s.messages.queue.mode, "collect");
}

#[test]
fn channel_sections_are_typed_over_their_shipped_defaults() {
    let err = |raw: &str| check_user_raw(raw, "f").unwrap_err().to_string();
    // A wrong value is refused at load, named by its key, in a section
    // and in an account (it stopped only the start before).
    let e = err("{channels:{telegram:{botToken:'1:a', dmPolicy:'sometimes'}}}");
    assert!(e.contains("channels.telegram.dmPolicy"), "{e}");
    let e = err("{channels:{slack:{accounts:{work:{mode:'carrier-pigeon'}}}}}");
    assert!(e.contains("channels.slack.accounts.work.mode"), "{e}");
    let e = err("{channels:{discord:{guilds:{G1:{requireMention:'yes'}}}}}");
    assert!(
        e.contains("channels.discord.guilds.G1.requireMention"),
        "{e}"
    );
    let e = err("{channels:{defaults:{telegram:{textChunkLimit:'long'}}}}");
    assert!(
        e.contains("channels.defaults.telegram.textChunkLimit"),
        "{e}"
    );
    let e = err("{channels:{defaults:{groupPolicy:'sometimes'}}}");
    assert!(e.contains("channels.defaults.groupPolicy"), "{e}");
    // The defaults are the shipped file's, and a user's channels.defaults
    // changes them without starting a channel.
    let (_, s, warnings) = check_user_raw(
        "{channels:{defaults:{groupPolicy:'disabled', discord:{typingIntervalSeconds:3}}, whatsapp:{allowFrom:['+1']}}}",
        "f",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let d = &s.channels.defaults;
    assert_eq!(d.telegram.send_interval_ms, 35);
    assert_eq!(d.slack.webhook_path, "/slack/events");
    assert_eq!(d.discord.typing_interval_seconds, 3);
    assert_eq!(d.discord.text_chunk_limit, 2000, "the shipped default kept");
    assert_eq!(s.channels.keys().collect::<Vec<_>>(), ["whatsapp"]);
    assert_eq!(d.layer("slack")["groupPolicy"], "disabled");
    // messages.inbound is typed too: the window per channel, bounded.
    let e = err("{messages:{inbound:{byChannel:{telegram:'soon'}}}}");
    assert!(e.contains("messages.inbound.byChannel.telegram"), "{e}");
    let (_, s, _) = check_user_raw(
        "{messages:{inbound:{debounceMs:400, byChannel:{slack:90000}}}}",
        "f",
    )
    .unwrap();
    let inbound = &s.messages.inbound;
    assert_eq!(
        (
            inbound.debounce_ms("telegram"),
            inbound.debounce_ms("slack")
        ),
        (400, 60_000)
    );
    // config.schema shows the typed sections, their secrets write-only.
    let schema = ferroclaw_actors::settings::json_schema().to_string();
    for key in [
        "typingIntervalSeconds",
        "pingIntervalSeconds",
        "webhookPath",
        "intents",
    ] {
        assert!(schema.contains(key), "{key}");
    }
}

#[test]
fn a_new_control_ui_folder_needs_a_restart() {
    let (_, old, _) = check_user_raw("{}", "f").unwrap();
    let (_, new, _) = check_user_raw("{gateway:{controlUi:{root:'/opt/ui'}}}", "f").unwrap();
    assert_eq!(restart_required(&old, &new), ["gateway.controlUi"]);
    assert!(restart_required(&old, &old).is_empty());
}

#[test]
fn unknown_keys_are_warned_not_fatal() {
    let (_, s, warnings) =
        check_user_raw("{gateway:{port:1234, bogus:1}, extra:{a:1}}", "f").unwrap();
    assert_eq!(s.gateway.port, 1234);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("gateway.bogus")));
    assert!(warnings.iter().any(|w| w.contains("extra")));
}

#[test]
fn env_layer_overrides_file_and_openclaw_token_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ferroclaw.json");
    std::fs::write(
        &path,
        "{gateway:{port:1111, auth:{token:'file-token-0123456789'}}}",
    )
    .unwrap();
    let loaded = load(&ConfigSources {
        path: path.clone(),
        env: vec![("FERROCLAW_GATEWAY__PORT".into(), "2222".into())],
        gateway_token: Some("env-token-0123456789".into()),
        gateway_password: None,
        generated_token: None,
    })
    .unwrap();
    assert_eq!(loaded.settings.gateway.port, 2222);
    assert_eq!(
        loaded.settings.gateway.auth.token.as_deref(),
        Some("env-token-0123456789")
    );
    assert_eq!(
        loaded.hash,
        hash_raw(Some(
            "{gateway:{port:1111, auth:{token:'file-token-0123456789'}}}"
        ))
    );
    let bad = load(&ConfigSources {
        path,
        env: vec![("FERROCLAW_GATEWAY__PORT".into(), "notaport".into())],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("environment") && bad.contains("gateway.port"),
        "{bad}"
    );
}

#[test]
fn redaction_hides_secrets_and_restores_them() {
    let cfg = serde_json::json!({"gateway":{"auth":{"token":"s3cret","mode":"token"}},
        "models":{"providers":{"x":{"apiKey":"k","models":[{"id":"m","maxTokens":5}]}}}});
    let red = redact(&cfg);
    assert_eq!(red["gateway"]["auth"]["token"], REDACTED);
    assert_eq!(red["models"]["providers"]["x"]["apiKey"], REDACTED);
    assert_eq!(red["models"]["providers"]["x"]["models"][0]["maxTokens"], 5);
    let skills = serde_json::json!({"skills":{"entries":{"w":{"apiKey":"k","env":{"T":"v"},"enabled":true}}}});
    let red = redact(&skills);
    assert_eq!(red["skills"]["entries"]["w"]["apiKey"], REDACTED);
    assert_eq!(red["skills"]["entries"]["w"]["env"]["T"], REDACTED);
    assert_eq!(red["skills"]["entries"]["w"]["enabled"], true);
    let red = redact(&cfg);
    let mut back = red.clone();
    restore_redacted(&mut back, &cfg);
    assert_eq!(back, cfg);
}

#[test]
fn merge_patch_follows_rfc7396() {
    let mut t = serde_json::json!({"a":{"b":1,"c":2},"d":3});
    merge_patch(&mut t, &serde_json::json!({"a":{"b":null,"e":4},"d":[1]}));
    assert_eq!(t, serde_json::json!({"a":{"c":2,"e":4},"d":[1]}));
    set_dotted(&mut t, "agents.defaults.model", serde_json::json!("x/y"));
    assert_eq!(t["agents"]["defaults"]["model"], "x/y");
}
