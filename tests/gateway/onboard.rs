//! `ferroclaw onboard` with the real binary against the fakes: from flags
//! (an OpenAI-compatible provider checked with `/models`, Telegram
//! `getMe`, Slack `auth.test`, Discord `users/@me`), the written config
//! passes `config validate` and a gateway started on it answers a chat
//! through the provider; a bad key or token writes nothing; an existing
//! config is kept without `--force`; and in a terminal (tmux) a user is
//! walked through it, and one who stops halfway leaves nothing written.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::process::{ferroclaw, output_text, spawn_gateway, BIN};
use crate::support::process::{Within, CHILD_LIMIT};
use crate::support::tmux::{shell_line, Tmux};

const KEY: &str = "sk-test-onboard";

fn models(fake: &FakeProvider) {
    fake.push(Script::status(
        200,
        r#"{"object":"list","data":[{"id":"fake-large","object":"model","owned_by":"test"},{"id":"fake-small","object":"model","owned_by":"test"}]}"#,
    ));
}

/// The flags of an OpenAI-compatible provider at `fake` with `key`, then `more`.
fn custom(fake: &FakeProvider, key: &str, more: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["--auth-choice", "custom-api-key", "--custom-base-url"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    args.extend([fake.base_url(), "--custom-api-key".into(), key.into()]);
    args.extend(more.iter().map(|a| a.to_string()));
    args
}

fn onboard<S: AsRef<std::ffi::OsStr>>(state: &Path, args: &[S]) -> Output {
    ferroclaw(state)
        .args(["onboard", "--non-interactive"])
        .args(args)
        .env_remove("CUSTOM_API_KEY")
        .within(CHILD_LIMIT)
}

fn config(state: &Path) -> Value {
    let text = std::fs::read_to_string(state.join("ferroclaw.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn from_flags_every_credential_is_checked_and_the_gateway_works() {
    let fake = FakeProvider::start().await;
    let telegram = crate::support::fake_telegram::FakeTelegram::start("123:tg-token");
    let slack = crate::support::fake_slack::FakeSlack::start();
    let discord = crate::support::fake_discord::FakeDiscord::start(45_000);
    let state = tempfile::tempdir().unwrap();
    let s = state.path();
    models(&fake);
    let out = onboard(
        s,
        &custom(
            &fake,
            KEY,
            &[
                "--custom-provider-id",
                "fakeai",
                "--model",
                "fake-small",
                "--exec-security",
                "deny",
                "--telegram-bot-token",
                "123:tg-token",
                "--telegram-api-base-url",
                &telegram.base,
                "--slack-bot-token",
                crate::support::fake_slack::BOT_TOKEN,
                "--slack-app-token",
                crate::support::fake_slack::APP_TOKEN,
                "--slack-api-base-url",
                &slack.api,
                "--discord-token",
                crate::support::fake_discord::TOKEN,
                "--discord-api-base-url",
                &discord.api,
                "--json",
            ],
        ),
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model"], "fakeai/fake-small", "{report}");
    // The key was checked with one /models call, as the gateway will send it.
    let (_, headers) = fake.requests.lock().unwrap()[0].clone();
    let header = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
    assert_eq!(header(":path").as_deref(), Some("/v1/models"));
    assert_eq!(header("authorization"), Some(format!("Bearer {KEY}")));
    let c = config(s);
    assert_eq!(c["models"]["providers"]["fakeai"]["apiKey"], KEY);
    assert_eq!(c["tools"]["exec"]["security"], "deny");
    assert_eq!(
        c["channels"]["slack"]["appToken"],
        crate::support::fake_slack::APP_TOKEN
    );
    let token = c["gateway"]["auth"]["token"].as_str().unwrap().to_string();
    assert!(token.len() >= 32, "a random gateway token: {token}");
    assert!(s.join("workspace/BOOTSTRAP.md").exists());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(s.join("ferroclaw.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the config holds keys: {mode:o}");
    let valid = ferroclaw(s)
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert!(valid.status.success(), "{}", output_text(&valid));

    // A gateway on it talks to the provider with that key.
    fake.push(Script::text(&["hello ", "from the onboarded provider"]));
    let (_gw, addr, _) = spawn_gateway(s);
    let mut op = crate::support::admin_at(&format!("ws://{addr}"), &token).await;
    let events = crate::support::say(&mut op, "main", "hi", "ob-1").await;
    assert_eq!(
        crate::support::final_text(&events),
        "hello from the onboarded provider"
    );
    let chat = fake.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(chat.0["model"], "fake-small");

    // Again: the config is kept without --force; with it, kept as a .bak.
    let again = onboard::<&str>(s, &[]);
    assert_eq!(again.status.code(), Some(2), "{}", output_text(&again));
    assert_eq!(config(s), c);
    let forced = onboard(s, &["--force", "--gateway-port", "18790"]);
    assert!(forced.status.success(), "{}", output_text(&forced));
    assert_eq!(config(s)["gateway"]["port"], 18790);
    let baks: Vec<_> = std::fs::read_dir(s)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.starts_with("ferroclaw.json.bak-").then_some(name)
        })
        .collect();
    assert_eq!(baks.len(), 1, "{baks:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_credential_writes_nothing() {
    let fake = FakeProvider::start().await;
    fake.push(Script::status(401, r#"{"error":{"message":"Incorrect API key provided: sk-wr***ng.","type":"invalid_request_error","code":"invalid_api_key"}}"#));
    let state = tempfile::tempdir().unwrap();
    let s = state.path();
    let out = onboard(s, &custom(&fake, "sk-wrong", &[]));
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("Incorrect API key provided"),
        "{}",
        output_text(&out)
    );
    assert!(!s.join("ferroclaw.json").exists());
    // The provider is fine; the Telegram token is not.
    let telegram = crate::support::fake_telegram::FakeTelegram::start("123:tg-token");
    models(&fake);
    let out = onboard(
        s,
        &custom(
            &fake,
            KEY,
            &[
                "--telegram-bot-token",
                "123:wrong",
                "--telegram-api-base-url",
                &telegram.base,
            ],
        ),
    );
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("Telegram refused the key: 401"),
        "{}",
        output_text(&out)
    );
    assert!(!s.join("ferroclaw.json").exists());
    // Non-interactive with a provider and no key anywhere: a clear refusal.
    let out = onboard(s, &["--auth-choice", "openai-api-key"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("set OPENAI_API_KEY"),
        "{}",
        output_text(&out)
    );
    let files: Vec<_> = std::fs::read_dir(s)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !files
            .iter()
            .any(|f| f.to_string_lossy().contains("ferroclaw.json")),
        "{files:?}"
    );
}

fn terminal(state: &Path) -> Tmux {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("--state-dir")
        .arg(state)
        .arg("onboard")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", state)
        .env("TERM", "xterm");
    let line = format!(
        "{}; echo \"[exit $?]\"; sleep 60",
        shell_line(&cmd).trim_start_matches("exec ")
    );
    Tmux::start(120, 40, &line)
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_terminal_a_user_is_walked_through_and_can_stop_halfway() {
    let fake = FakeProvider::start().await;
    let state = tempfile::tempdir().unwrap();
    let s = state.path().to_path_buf();
    let wait = Duration::from_secs(20);
    let base = fake.base_url();
    models(&fake);
    let (s2, b2) = (s.clone(), base.clone());
    tokio::task::spawn_blocking(move || {
        // Stopped at the workspace question, after the key was checked.
        let t = terminal(&s2);
        t.until("the provider menu", wait, |x| x.contains("Model provider"));
        for _ in 0..3 {
            t.key("Down");
        }
        t.key("Enter");
        t.until("the base URL question", wait, |x| x.contains("Base URL"));
        t.type_line(&b2);
        t.until("the compatibility menu", wait, |x| x.contains("It speaks"));
        t.key("Enter");
        t.until("where to keep the key", wait, |x| {
            x.contains("Keep the key")
        });
        t.key("Enter");
        t.until("the key prompt", wait, |x| x.contains("API key"));
        t.type_line(KEY);
        t.until("the model question", wait, |x| x.contains("Default model"));
        assert!(t.screen().contains("2 models listed"), "{}", t.screen());
        t.key("Enter");
        t.until("the workspace question", wait, |x| x.contains("Workspace"));
        t.key("C-c");
        let screen = t.until("the exit", wait, |x| x.contains("[exit "));
        assert!(!screen.contains("[exit 0]"), "{screen}");
        assert!(!s2.join("ferroclaw.json").exists(), "{screen}");
        assert!(!s2.join("workspace").exists(), "{screen}");
    })
    .await
    .unwrap();
    // The whole way: offline model, defaults, no channels, no service.
    let s3 = s.clone();
    tokio::task::spawn_blocking(move || {
        let t = terminal(&s3);
        t.until("the provider menu", wait, |x| x.contains("Model provider"));
        t.key("Enter");
        for (question, answer) in [("Workspace", ""), ("Gateway port", "18795")] {
            t.until(question, wait, |x| x.contains(question));
            t.type_line(answer);
        }
        for question in ["Listen on", "Shell commands"] {
            t.until(question, wait, |x| x.contains(question));
            t.key("Enter");
        }
        for question in ["Telegram bot token", "Slack bot token", "Discord bot token"] {
            t.until(question, wait, |x| x.contains(question));
            t.type_line("");
        }
        t.until("the service question", wait, |x| {
            x.contains("Install the gateway")
        });
        t.type_line("n");
        let screen = t.until("the exit", wait, |x| x.contains("[exit "));
        assert!(
            screen.contains("[exit 0]") && screen.contains("config written"),
            "{screen}"
        );
    })
    .await
    .unwrap();
    let c = config(&s);
    assert_eq!(c["agents"]["defaults"]["model"]["primary"], "offline/echo");
    assert_eq!(c["gateway"]["port"], 18795);
    assert_eq!(c["tools"]["exec"]["security"], "allowlist");
    let valid = ferroclaw(&s)
        .args(["config", "validate"])
        .within(CHILD_LIMIT);
    assert!(valid.status.success(), "{}", output_text(&valid));
}
