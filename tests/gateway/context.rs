//! Agent context over the real WebSocket: the system prompt a provider
//! receives (workspace files, skills, byte-stable across turns), the
//! timestamp envelope only the model sees, every directive (handled before
//! the model, never sent to it), the silent reply token, and
//! skills.status / tools.catalog / commands.list.

use serde_json::{json, Value};

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, final_text, say, TestGateway};

fn fake_config(fake: &FakeProvider) -> Value {
    json!({
        "models": { "providers": {
            "fake": { "baseUrl": fake.base_url(), "api": "openai-completions", "apiKey": "k0",
                      "models": [{ "id": "m1", "contextWindow": 100000 }, { "id": "m2", "contextWindow": 64000 }] },
        }},
        "agents": {
            "defaults": { "model": { "primary": "fake/m1", "fallbacks": [] }, "envelopeTimezone": "utc" },
            "list": [{ "id": "main", "default": true }, { "id": "ops" }],
        },
    })
}

fn bodies(fake: &FakeProvider) -> Vec<Value> {
    fake.requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| b.clone())
        .collect()
}

fn system_of(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_prompt_carries_workspace_files_and_skills_and_is_byte_stable_across_turns() {
    let fake = FakeProvider::start().await;
    fake.set_default(Script::text(&["ok"]));
    let mut cfg = fake_config(&fake);
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"skills": {"entries": {"weather": {"apiKey": "wx-secret-123", "env": {"WX_UNITS": "metric-secret"}}}}}),
    );
    let gw = TestGateway::with_files(
        cfg,
        &[
            ("workspace/AGENTS.md", "Always answer in haiku."),
            ("workspace/SOUL.md", "Calm and dry."),
            ("workspace/USER.md", "   \n"),
            (
                "workspace/skills/weather/SKILL.md",
                "---\nname: weather\ndescription: Forecasts via wttr.in\n---\nUse curl wttr.in.\n",
            ),
            (
                "workspace/skills/needs-key/SKILL.md",
                "---\nname: needs-key\ndescription: Hidden\nrequires:\n  env: [FERROCLAW_TEST_NEVER_SET]\n---\n",
            ),
        ],
    );
    let mut c = admin(&gw).await;
    say(&mut c, "main", "first", "t1").await;
    say(&mut c, "main", "second", "t2").await;
    let b = bodies(&fake);
    assert_eq!(b.len(), 2);
    let (p1, p2) = (system_of(&b[0]), system_of(&b[1]));
    assert_eq!(p1, p2, "the prompt is byte-identical from turn to turn");
    assert!(
        p1.contains("## AGENTS.md\n\nAlways answer in haiku."),
        "{p1}"
    );
    assert!(p1.contains("SOUL.md is your persona"), "{p1}");
    assert!(!p1.contains("## USER.md"), "blank files are skipped: {p1}");
    assert!(
        !p1.contains("BOOTSTRAP.md"),
        "an existing workspace is not seeded: {p1}"
    );
    assert!(p1.contains("- weather: Forecasts via wttr.in ("), "{p1}");
    assert!(
        !p1.contains("needs-key"),
        "ineligible skills are left out: {p1}"
    );
    assert!(p1.contains("model=fake/m1 | channel=webchat"), "{p1}");
    assert!(
        p1.contains("- exec: ") && p1.contains("- web_fetch: "),
        "{p1}"
    );
    assert!(p1.contains("reply with exactly NO_REPLY"), "{p1}");
    assert!(
        !p1.contains("wx-secret-123") && !p1.contains("metric-secret"),
        "skill env never enters the prompt"
    );

    // The model sees the time; people see their words.
    let user = b[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with('[') && user.ends_with(" UTC] first"),
        "{user}"
    );
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        h["payload"]["messages"][0]["content"][0]["text"], "first",
        "{h}"
    );
    // Earlier turns keep their envelope: the history prefix is stable too.
    assert_eq!(
        b[1]["messages"][1]["content"],
        b[0]["messages"][1]["content"]
    );

    // A changed file changes the prompt on the next turn.
    std::fs::write(
        gw.state_dir().join("workspace/AGENTS.md"),
        "Answer in prose.",
    )
    .unwrap();
    say(&mut c, "main", "third", "t3").await;
    let p3 = system_of(&bodies(&fake)[2]);
    assert!(
        p3.contains("Answer in prose.") && !p3.contains("haiku"),
        "{p3}"
    );

    let st = c.call("skills.status", json!({})).await;
    let skills = st["payload"]["skills"].as_array().unwrap();
    let names: Vec<(&str, bool)> = skills
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["eligible"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("needs-key", false), ("weather", true)], "{st}");
    assert_eq!(
        skills[0]["missing"],
        json!({"bins": [], "anyBins": [], "env": ["FERROCLAW_TEST_NEVER_SET"], "config": [], "os": []})
    );
    assert_eq!(
        skills[0]["requirements"]["env"],
        json!(["FERROCLAW_TEST_NEVER_SET"])
    );
    let tools = c.call("tools.catalog", json!({})).await;
    let names: Vec<&str> = tools["payload"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"exec") && names.contains(&"web_fetch"),
        "{tools}"
    );
    assert!(tools["payload"]["tools"][0]["parameters"]["type"] == "object");
    let cmds = c.call("commands.list", json!({})).await;
    assert_eq!(
        cmds["payload"]["commands"].as_array().unwrap().len(),
        14,
        "{cmds}"
    );
}

#[tokio::test]
async fn a_new_workspace_gets_the_first_run_ritual() {
    let gw = TestGateway::start();
    let boot = gw.state_dir().join("workspace/BOOTSTRAP.md");
    assert!(boot.exists());
    let mut c = admin(&gw).await;
    let ctx = say(&mut c, "main", "/context list", "c1").await;
    let text = final_text(&ctx);
    assert!(text.contains("- BOOTSTRAP.md: "), "{text}");
    std::fs::remove_file(&boot).unwrap();
    let text = final_text(&say(&mut c, "main", "/context list", "c2").await);
    assert!(!text.contains("BOOTSTRAP.md"), "{text}");
}

#[tokio::test]
async fn directives_are_handled_before_the_model_and_never_reach_it() {
    let fake = FakeProvider::start().await;
    fake.set_default(Script::text(&["fine"]));
    let gw = TestGateway::with_files(fake_config(&fake), &[("workspace/AGENTS.md", "x")]);
    let mut c = admin(&gw).await;
    let check = |events: &[Value], want: &str| {
        let t = final_text(events);
        assert!(t.contains(want), "{t:?} should contain {want:?}");
    };
    let n0 = fake.request_count();
    check(
        &say(&mut c, "main", "/think high", "d1").await,
        "Thinking level set to high.",
    );
    check(
        &say(&mut c, "main", "/thinking:low", "d2").await,
        "Thinking level set to low.",
    );
    check(
        &say(&mut c, "main", "/t", "d3").await,
        "Current thinking level: low.",
    );
    check(
        &say(&mut c, "main", "/think loud", "d4").await,
        "Unrecognized thinking level \"loud\"",
    );
    check(
        &say(&mut c, "main", "/verbose off", "d5").await,
        "Verbose set to off.",
    );
    check(
        &say(&mut c, "main", "/reasoning off", "d6").await,
        "Reasoning visibility set to off.",
    );
    check(
        &say(&mut c, "main", "/send off", "d7").await,
        "Send policy set to off.",
    );
    check(
        &say(&mut c, "main", "/send", "d8").await,
        "Send policy: off.",
    );
    check(
        &say(&mut c, "main", "/model fake/m2", "d9").await,
        "Model set to fake/m2.",
    );
    check(
        &say(&mut c, "main", "/model nope", "d10").await,
        "Invalid model \"nope\"",
    );
    check(
        &say(&mut c, "main", "/queue collect", "d11").await,
        "queue mode: collect",
    );
    check(
        &say(&mut c, "main", "/agent ops", "d12").await,
        "Agent set to ops.",
    );
    check(
        &say(&mut c, "main", "/agent nobody", "d13").await,
        "Unknown agent \"nobody\"",
    );
    check(
        &say(&mut c, "main", "/agent main", "d14").await,
        "Agent set to main.",
    );
    check(
        &say(&mut c, "main", "/usage tokens", "d15").await,
        "Usage footer set to tokens.",
    );
    // `/stop` keeps OpenClaw's chat.send answer (no run events).
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": "/stop", "idempotencyKey": "d16"}),
        )
        .await;
    assert_eq!(
        r["payload"],
        json!({"ok": true, "aborted": false, "runIds": []})
    );
    check(
        &say(&mut c, "main", "/compact keep decisions", "d17").await,
        "Nothing to compact yet: the context holds 0 messages.",
    );
    // `/help` (and `/commands`) name what a session here accepts.
    for (i, help) in ["/help", "/commands"].into_iter().enumerate() {
        let said = final_text(&say(&mut c, "main", help, &format!("d18-{i}")).await);
        for want in ["Help", "/new", "/think", "/status", "/btw", "/tts"] {
            assert!(said.contains(want), "{help}: {said}");
        }
        assert!(!said.contains("You said"), "{said}");
    }
    assert_eq!(fake.request_count(), n0, "no directive reached the model");

    let list = c.call("sessions.list", json!({})).await;
    let row = &list["payload"]["sessions"][0];
    assert_eq!(row["thinkingLevel"], "low", "{row}");
    assert_eq!(row["verboseLevel"], "off", "{row}");

    // A normal turn: the session's model, thinking and usage footer apply.
    let events = say(&mut c, "main", "hello", "m1").await;
    let t = final_text(&events);
    assert!(t.starts_with("fine\n\nUsage: "), "{t}");
    let last = bodies(&fake).last().unwrap().clone();
    assert_eq!(last["model"], "m2");
    assert!(system_of(&last).contains("thinking=low"));

    // Inline: applies to that message only, and is removed from its text.
    say(&mut c, "main", "/t high /model fake/m1 what now", "m2").await;
    let last = bodies(&fake).last().unwrap().clone();
    assert_eq!(last["model"], "m1");
    assert!(system_of(&last).contains("thinking=high"));
    let user = last["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.ends_with("UTC] what now"), "{user}");
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    let msgs = h["payload"]["messages"].as_array().unwrap();
    let shown =
        msgs.iter().rev().find(|m| m["role"] == "user").unwrap()["content"][0]["text"].clone();
    assert_eq!(
        shown, "/t high /model fake/m1 what now",
        "people see what they wrote"
    );

    let status = final_text(&say(&mut c, "main", "/status", "s1").await);
    for want in [
        "Model: fake/m2",
        "Thinking: low",
        "Verbose: off",
        "Context: ~",
        "of 64000 tokens",
    ] {
        assert!(status.contains(want), "{want}: {status}");
    }
    let usage = final_text(&say(&mut c, "main", "/usage", "s2").await);
    assert!(
        usage.starts_with("Usage this session: ") && usage.contains("Footer: tokens."),
        "{usage}"
    );
    let ctx = final_text(&say(&mut c, "main", "/context list", "s3").await);
    assert!(
        ctx.contains("- system prompt: ") && ctx.contains("- AGENTS.md: 1 chars"),
        "{ctx}"
    );
    assert!(ctx.contains("- history: 4 messages"), "{ctx}");
    let detail = final_text(&say(&mut c, "main", "/context detail", "s4").await);
    assert!(
        detail.contains("Sections:") && detail.contains("- exec: "),
        "{detail}"
    );

    // /new with a model: a fresh transcript, the model set.
    let before =
        c.call("sessions.list", json!({})).await["payload"]["sessions"][0]["sessionId"].clone();
    check(
        &say(&mut c, "main", "/new fake/m1", "n1").await,
        "New session started with model fake/m1.",
    );
    let after = c.call("sessions.list", json!({})).await["payload"]["sessions"][0].clone();
    assert_ne!(after["sessionId"], before);
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(h["payload"]["messages"].as_array().unwrap().len(), 0, "{h}");
    check(&say(&mut c, "main", "/reset", "n2").await, "Session reset.");
    assert_eq!(
        fake.request_count(),
        n0 + 2,
        "only the two real turns reached the model"
    );
}

#[tokio::test]
async fn a_silent_reply_is_not_delivered() {
    let fake = FakeProvider::start().await;
    fake.push(Script::text(&["NO_", "REPLY"]));
    fake.push(Script::text(&["NO", " problem"]));
    let gw = TestGateway::with_files(fake_config(&fake), &[("workspace/AGENTS.md", "x")]);
    let mut c = admin(&gw).await;
    let events = say(&mut c, "main", "anything?", "q1").await;
    assert!(
        events.iter().all(|e| e["payload"]["state"] != "delta"),
        "nothing of the token streamed: {events:?}"
    );
    let last = &events.last().unwrap()["payload"];
    assert_eq!(last["state"], "final");
    assert_eq!(last["skipReason"], "silent");
    assert!(last.get("message").is_none(), "{last}");
    let waited = c
        .call("agent.wait", json!({"runId": "q1", "timeoutMs": 5000}))
        .await;
    assert_eq!(waited["payload"]["status"], "ok", "{waited}");
    // A reply that only starts like the token is delivered whole.
    let events = say(&mut c, "main", "and now?", "q2").await;
    assert_eq!(final_text(&events), "NO problem");
}

#[tokio::test]
async fn tool_calls_are_normalised_filtered_hooked_and_truncated() {
    let fake = FakeProvider::start().await;
    fake.push(Script::tool_call(
        "call_1",
        "functions.exec",
        &json!({"command": "head -c 5000 /dev/zero | tr '\\0' x"}),
    ));
    fake.push(Script::tool_call(
        "call_2",
        "exec",
        &json!({"command": "rm -rf important"}),
    ));
    fake.push(Script::tool_call(
        "call_3",
        "web_fetch",
        &json!({"url": "http://example.com/"}),
    ));
    fake.push(Script::tool_call(
        "call_4",
        "Bash",
        &json!({"command": "echo $((6*7))", "timeout": 900}),
    ));
    fake.push(Script::text(&["all done"]));
    let mut cfg = fake_config(&fake);
    ferroclaw::config::merge_patch(
        &mut cfg,
        &json!({"tools": {
            "deny": ["web_fetch"],
            "resultMaxChars": 1000,
            "beforeToolCall": [
                {"tool": "exec", "when": {"command": "rm\\s+-rf"}, "block": "no recursive deletes"},
                {"tool": "exec", "set": {"timeout": 5}},
            ],
        }}),
    );
    let gw = TestGateway::with_files(cfg, &[("workspace/AGENTS.md", "x")]);
    std::fs::create_dir_all(gw.state_dir().join("workspace/important")).unwrap();
    let mut c = admin(&gw).await;
    let events = say(&mut c, "main", "go", "p1").await;
    assert_eq!(final_text(&events), "all done");
    let b = bodies(&fake);
    assert_eq!(b.len(), 5);
    let offered: Vec<&str> = b[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !offered.contains(&"web_fetch") && offered.contains(&"exec"),
        "{offered:?}"
    );
    assert!(
        !system_of(&b[0]).contains("web_fetch"),
        "the prompt lists only offered tools"
    );
    let result = |i: usize| -> String {
        let msgs = b[i]["messages"].as_array().unwrap();
        msgs.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // 1: a mangled name ran; its 5,000-character output was cut to 1,000 + marker.
    let r1 = result(1);
    assert!(
        r1.starts_with(&"x".repeat(750))
            && r1.contains("[... 4000 characters cut from this tool result ...]"),
        "{}",
        &r1[..800]
    );
    // 2: blocked by the hook; the folder is still there.
    assert_eq!(
        result(2),
        "Tool call blocked by policy: no recursive deletes"
    );
    assert!(gw.state_dir().join("workspace/important").exists());
    // 3: a denied tool is unknown to the model.
    assert!(
        result(3).starts_with("Unknown tool \"web_fetch\". Available tools: exec,"),
        "{}",
        result(3)
    );
    // 4: an alias ran with the rewritten timeout.
    assert_eq!(result(4), "42\n");
}

#[tokio::test]
async fn compact_summarises_the_older_context_and_survives_a_restart() {
    let mut gw = TestGateway::start();
    let mut c = admin(&gw).await;
    let text = final_text(&say(&mut c, "main", "/compact", "c0").await);
    assert_eq!(
        text,
        "Nothing to compact yet: the context holds 0 messages."
    );
    for (i, words) in ["alpha", "beta", "gamma", "delta"].iter().enumerate() {
        say(&mut c, "main", words, &format!("t{i}")).await;
    }
    assert_eq!(
        final_text(&say(&mut c, "main", "@context", "x1").await),
        "context: 9 messages"
    );
    let text = final_text(&say(&mut c, "main", "/compact keep the Greek letters", "c1").await);
    // The offline model echoes: its "summary" fails the quality check and
    // the deterministic one is used.
    assert!(
        text.starts_with("Compacted 6 earlier messages into a summary (")
            && text.contains("written without a model because the summary lacks the heading")
            && text.ends_with("kept the last 4."),
        "{text}"
    );
    // Summary + the kept 4 + this message.
    assert_eq!(
        final_text(&say(&mut c, "main", "@context", "x2").await),
        "context: 6 messages"
    );
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await;
    assert_eq!(
        h["payload"]["messages"].as_array().unwrap().len(),
        12,
        "the transcript keeps every message: {h}"
    );
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    assert_eq!(
        final_text(&say(&mut c, "main", "@context", "x3").await),
        "context: 8 messages",
        "after a restart: summary + the 6 kept since + this one"
    );
}
