//! `ferroclaw onboard`: the first-run setup OpenClaw users know from
//! `openclaw onboard`, in a terminal (dialoguer's prompts) or entirely
//! from flags (`--non-interactive`, OpenClaw's flag names where it has
//! them). It asks, checks every credential with one call (a provider's
//! `/models`, Telegram `getMe`, Slack `auth.test`, Discord `users/@me`),
//! and only then writes: the workspace's first-run files, then the config
//! (validated as the gateway would, then renamed into place), so an
//! onboarding stopped at any point leaves no config behind. An existing
//! config is never replaced without `--force` (the old one is kept).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Value};

mod checks;
use checks::Api;

#[derive(clap::Args, Default)]
pub struct OnboardArgs {
    /// Take everything from flags; never prompt.
    #[arg(long)]
    pub non_interactive: bool,
    /// Replace an existing config (kept as <file>.bak-<time>).
    #[arg(long)]
    pub force: bool,
    /// offline | openai-api-key | anthropic-api-key (or apiKey) | custom-api-key
    #[arg(long)]
    pub auth_choice: Option<String>,
    #[arg(long)]
    pub openai_api_key: Option<String>,
    #[arg(long)]
    pub anthropic_api_key: Option<String>,
    /// An OpenAI- or Anthropic-compatible endpoint (custom-api-key).
    #[arg(long)]
    pub custom_base_url: Option<String>,
    #[arg(long)]
    pub custom_api_key: Option<String>,
    #[arg(long)]
    pub custom_model_id: Option<String>,
    /// The provider's id in the config (default: custom).
    #[arg(long)]
    pub custom_provider_id: Option<String>,
    /// openai | anthropic
    #[arg(long)]
    pub custom_compatibility: Option<String>,
    /// plaintext (the key in the config, which is private) | ref (`${VAR}`:
    /// the key stays in the environment).
    #[arg(long)]
    pub secret_input_mode: Option<String>,
    /// The default model (an id the provider lists).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Do not write BOOTSTRAP.md into a new workspace.
    #[arg(long)]
    pub skip_bootstrap: bool,
    #[arg(long)]
    pub gateway_port: Option<u16>,
    /// loopback | lan | <ip>
    #[arg(long)]
    pub gateway_bind: Option<String>,
    /// Default: a new random one.
    #[arg(long)]
    pub gateway_token: Option<String>,
    #[arg(long)]
    pub telegram_bot_token: Option<String>,
    #[arg(long)]
    pub slack_bot_token: Option<String>,
    /// Slack Socket Mode app token (xapp-...).
    #[arg(long)]
    pub slack_app_token: Option<String>,
    #[arg(long)]
    pub discord_token: Option<String>,
    /// deny | allowlist (ask for commands not yet allowed) | full
    #[arg(long)]
    pub exec_security: Option<String>,
    /// Install and start the gateway as a user service (`ferroclaw daemon install`).
    #[arg(long)]
    pub install_daemon: bool,
    /// Endpoints (a proxy, a test's fakes); also written to the config.
    #[arg(long, hide = true)]
    pub provider_base_url: Option<String>,
    #[arg(long, hide = true)]
    pub telegram_api_base_url: Option<String>,
    #[arg(long, hide = true)]
    pub slack_api_base_url: Option<String>,
    #[arg(long, hide = true)]
    pub discord_api_base_url: Option<String>,
}

/// What main.rs resolved for it.
pub struct Context {
    pub config: PathBuf,
    pub state_dir: PathBuf,
    pub json: bool,
    /// Reads the process environment (keys for `ref` mode and fallbacks).
    pub env: ferroclaw_actors::provider::hub::EnvReader,
}

/// Stops onboarding: the line to print and the exit code.
struct Stop(String, u8);

type Step<T> = Result<T, Stop>;

/// Asks, or takes the flag, or (non-interactive) the default.
struct Ask {
    interactive: bool,
}

fn cancelled(e: dialoguer::Error) -> Stop {
    Stop(
        format!("onboarding stopped ({e}); nothing was written"),
        130,
    )
}

impl Ask {
    fn text(&self, flag: Option<String>, prompt: &str, default: Option<&str>) -> Step<String> {
        if let Some(v) = flag {
            return Ok(v);
        }
        if !self.interactive {
            return default
                .map(str::to_string)
                .ok_or_else(|| Stop(format!("{prompt}: required with --non-interactive"), 2));
        }
        let mut input = dialoguer::Input::<String>::new().with_prompt(prompt);
        if let Some(d) = default {
            input = input.default(d.to_string());
        }
        input.interact_text().map_err(cancelled)
    }

    fn secret(
        &self,
        flag: Option<String>,
        prompt: &str,
        env_var: &str,
        cx: &Context,
    ) -> Step<String> {
        if let Some(v) = flag.or_else(|| (cx.env)(env_var).filter(|v| !v.is_empty())) {
            return Ok(v);
        }
        if !self.interactive {
            return Err(Stop(format!("{prompt}: pass it or set {env_var}"), 2));
        }
        dialoguer::Password::new()
            .with_prompt(prompt)
            .interact()
            .map_err(cancelled)
    }

    fn choose(
        &self,
        flag: Option<String>,
        prompt: &str,
        items: &[(&str, &str)],
        default: usize,
    ) -> Step<String> {
        if let Some(v) = flag {
            return match items.iter().find(|(id, _)| *id == v) {
                Some((id, _)) => Ok(id.to_string()),
                None => Err(Stop(
                    format!(
                        "{prompt}: {v:?} is not one of {}",
                        items.iter().map(|(i, _)| *i).collect::<Vec<_>>().join(", ")
                    ),
                    2,
                )),
            };
        }
        if !self.interactive {
            return Ok(items[default].0.to_string());
        }
        let labels: Vec<&str> = items.iter().map(|(_, l)| *l).collect();
        let i = dialoguer::Select::new()
            .with_prompt(prompt)
            .items(&labels)
            .default(default)
            .interact()
            .map_err(cancelled)?;
        Ok(items[i].0.to_string())
    }

    fn yes(&self, flag: bool, prompt: &str) -> Step<bool> {
        if flag || !self.interactive {
            return Ok(flag);
        }
        dialoguer::Confirm::new()
            .with_prompt(prompt)
            .default(false)
            .interact()
            .map_err(cancelled)
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> Step<T> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Stop(format!("cannot start: {e}"), 1))?;
    Ok(rt.block_on(f))
}

/// Runs a check; interactively a failure asks again (`retry` gets a new
/// value), else it stops onboarding. Returns the value that passed and
/// what the check found.
fn checked<T>(
    ask: &Ask,
    what: &str,
    mut value: String,
    retry: impl Fn() -> Step<String>,
    check: impl Fn(&str) -> Step<Result<T, checks::CheckFailed>>,
    said: impl Fn(&T) -> String,
) -> Step<(String, T)> {
    loop {
        eprintln!("checking {what}...");
        match check(&value)? {
            Ok(found) => {
                eprintln!("  ok: {}", said(&found));
                return Ok((value, found));
            }
            Err(e) if ask.interactive => {
                eprintln!("  {e}; try again (Ctrl-C stops, nothing written)");
                value = retry()?;
            }
            Err(e) => return Err(Stop(format!("{e}; nothing was written"), 1)),
        }
    }
}

/// The provider part of the config: (provider id, its entry or None for
/// the offline one, the default model ref).
fn provider(ask: &Ask, a: &mut OnboardArgs, cx: &Context) -> Step<(String, Option<Value>, String)> {
    let choices = [
        ("offline", "Built-in offline model (no key; try things out)"),
        ("openai-api-key", "OpenAI (API key)"),
        ("anthropic-api-key", "Anthropic (API key)"),
        (
            "custom-api-key",
            "Another OpenAI- or Anthropic-compatible endpoint",
        ),
    ];
    let flag = a.auth_choice.take().map(|c| {
        if c == "apiKey" {
            "anthropic-api-key".into()
        } else {
            c
        }
    });
    let choice = ask.choose(flag, "Model provider", &choices, 0)?;
    let (id, api, base, key_flag, env_var) = match choice.as_str() {
        "offline" => return Ok(("offline".into(), None, "offline/echo".into())),
        "openai-api-key" => (
            "openai".to_string(),
            Api::OpenAi,
            "https://api.openai.com/v1".to_string(),
            a.openai_api_key.take(),
            "OPENAI_API_KEY",
        ),
        "anthropic-api-key" => (
            "anthropic".to_string(),
            Api::Anthropic,
            "https://api.anthropic.com".to_string(),
            a.anthropic_api_key.take(),
            "ANTHROPIC_API_KEY",
        ),
        _ => custom_endpoint(ask, a)?,
    };
    let base = a.provider_base_url.take().unwrap_or(base);
    let mode = ask.choose(
        a.secret_input_mode.take(),
        "Keep the key",
        &[
            ("plaintext", "in the config file (private to you)"),
            ("ref", &format!("in the environment (${{{env_var}}})")),
        ],
        0,
    )?;
    let key = ask.secret(key_flag, "API key", env_var, cx)?;
    let (key, model) = key_and_model(ask, a, cx, (api, &base), key)?;
    let api_key = if mode == "ref" {
        format!("${{{env_var}}}")
    } else {
        key
    };
    let entry = json!({ "baseUrl": base, "api": api.config_name(), "apiKey": api_key, "models": [{ "id": model }] });
    Ok((id.clone(), Some(entry), format!("{id}/{model}")))
}

/// A custom endpoint: its base URL, which API it speaks, its id; the
/// key flag and the variable a `ref` key names.
fn custom_endpoint(
    ask: &Ask,
    a: &mut OnboardArgs,
) -> Step<(String, Api, String, Option<String>, &'static str)> {
    let base = ask.text(
        a.custom_base_url.take(),
        "Base URL (e.g. https://llm.example.com/v1)",
        None,
    )?;
    let compat = ask.choose(
        a.custom_compatibility.take(),
        "It speaks",
        &[
            ("openai", "OpenAI's chat completions"),
            ("anthropic", "Anthropic's messages"),
        ],
        0,
    )?;
    let api = if compat == "anthropic" {
        Api::Anthropic
    } else {
        Api::OpenAi
    };
    let id = a
        .custom_provider_id
        .take()
        .unwrap_or_else(|| "custom".into());
    Ok((id, api, base, a.custom_api_key.take(), "CUSTOM_API_KEY"))
}

/// The key, checked with one `/models` call (asked again when refused),
/// and the default model (the first listed is suggested).
fn key_and_model(
    ask: &Ask,
    a: &mut OnboardArgs,
    cx: &Context,
    (api, base): (Api, &str),
    key: String,
) -> Step<(String, String)> {
    let (key, listed) = checked(
        ask,
        "the key with one /models call",
        key,
        || ask.secret(None, "API key", "", cx),
        |k| block_on(checks::models(api, base, k)),
        |ids| format!("{} models listed", ids.len()),
    )?;
    let suggested = a.custom_model_id.take().or_else(|| listed.first().cloned());
    let model = ask.text(a.model.take(), "Default model", suggested.as_deref())?;
    if !listed.is_empty() && !listed.contains(&model) {
        eprintln!("  note: the provider does not list {model:?}; kept as given");
    }
    Ok((key, model))
}

/// The channels part: each one asked for, checked, and explained.
fn channels(ask: &Ask, a: &mut OnboardArgs) -> Step<Value> {
    let mut out = json!({});
    let base = |flag: &mut Option<String>, default: &str| {
        flag.take().unwrap_or_else(|| default.to_string())
    };
    let tg_base = base(&mut a.telegram_api_base_url, "https://api.telegram.org");
    if let Some(token) = optional(
        ask,
        a.telegram_bot_token.take(),
        "Telegram bot token (from @BotFather; empty: skip)",
    )? {
        let (token, _) = checked(
            ask,
            "Telegram (getMe)",
            token,
            || ask.text(None, "Telegram bot token", None),
            |t| block_on(checks::telegram(&tg_base, t)),
            |found| found.clone(),
        )?;
        out["telegram"] = json!({ "botToken": token, "apiBaseUrl": tg_base });
    }
    let slack_base = base(&mut a.slack_api_base_url, "https://slack.com/api");
    if let Some(bot) = optional(
        ask,
        a.slack_bot_token.take(),
        "Slack bot token (xoxb-...; empty: skip)",
    )? {
        let (bot, _) = checked(
            ask,
            "Slack (auth.test)",
            bot,
            || ask.text(None, "Slack bot token", None),
            |t| block_on(checks::slack(&slack_base, t)),
            |found| found.clone(),
        )?;
        let app = ask.text(
            a.slack_app_token.take(),
            "Slack app token for Socket Mode (xapp-...)",
            None,
        )?;
        out["slack"] = json!({ "botToken": bot, "appToken": app, "apiBaseUrl": slack_base });
    }
    let discord_base = base(&mut a.discord_api_base_url, "https://discord.com/api/v10");
    if let Some(token) = optional(
        ask,
        a.discord_token.take(),
        "Discord bot token (empty: skip)",
    )? {
        let (token, _) = checked(
            ask,
            "Discord (users/@me)",
            token,
            || ask.text(None, "Discord bot token", None),
            |t| block_on(checks::discord(&discord_base, t)),
            |found| found.clone(),
        )?;
        out["discord"] = json!({ "token": token, "apiBaseUrl": discord_base });
    }
    Ok(out)
}

fn optional(ask: &Ask, flag: Option<String>, prompt: &str) -> Step<Option<String>> {
    if flag.is_some() || !ask.interactive {
        return Ok(flag);
    }
    let v = dialoguer::Input::<String>::new()
        .with_prompt(prompt)
        .allow_empty(true)
        .interact_text()
        .map_err(cancelled)?;
    Ok(Some(v.trim().to_string()).filter(|v| !v.is_empty()))
}

/// What onboarding wrote.
pub struct Done {
    pub install_daemon: bool,
}

/// Asks, checks, writes. The daemon (when asked for) is main.rs's next step.
pub fn run(mut a: OnboardArgs, cx: &Context) -> Result<Done, ExitCode> {
    match onboard(&mut a, cx) {
        Ok(done) => Ok(done),
        Err(Stop(message, code)) => {
            eprintln!("error: {message}");
            Err(ExitCode::from(code))
        }
    }
}

/// The gateway's port (18789 unless said otherwise).
fn gateway_port(ask: &Ask, a: &OnboardArgs) -> Step<u16> {
    let port = ask.text(
        a.gateway_port.map(|p| p.to_string()),
        "Gateway port",
        Some("18789"),
    )?;
    port.trim()
        .parse()
        .map_err(|_| Stop(format!("gateway port: {port:?} is not a port"), 2))
}

/// How the agent's shell commands are guarded: `tools.exec.security` and
/// the `ask` that goes with it.
fn exec_policy(ask: &Ask, a: &mut OnboardArgs) -> Step<(String, &'static str)> {
    let security = ask.choose(
        a.exec_security.take(),
        "Shell commands the agent runs",
        &[
            (
                "allowlist",
                "ask me before a command not yet allowed (recommended)",
            ),
            ("deny", "never run commands"),
            ("full", "run any command without asking"),
        ],
        0,
    )?;
    let ask_mode = if security == "allowlist" {
        "on-miss"
    } else {
        "off"
    };
    Ok((security, ask_mode))
}

fn onboard(a: &mut OnboardArgs, cx: &Context) -> Step<Done> {
    if cx.config.exists() && !a.force {
        return Err(Stop(format!("{} exists; onboarding never replaces a config without --force (the old one is then kept as a .bak)", cx.config.display()), 2));
    }
    let ask = Ask {
        interactive: !a.non_interactive,
    };
    if ask.interactive {
        eprintln!("ferroclaw onboarding: a few questions, each credential checked, then one config written ({}). Ctrl-C stops at any point with nothing written.\n", cx.config.display());
    }
    let (provider_id, provider, model) = provider(&ask, a, cx)?;
    let default_ws = cx.state_dir.join("workspace");
    let ws = ask.text(
        a.workspace.take().map(|p| p.display().to_string()),
        "Workspace",
        Some(&default_ws.display().to_string()),
    )?;
    let ws = ferroclaw_actors::fsutil::expand_home(&ws).unwrap_or_else(|| PathBuf::from(&ws));
    let port = gateway_port(&ask, a)?;
    let bind = ask.choose(
        a.gateway_bind.take(),
        "Listen on",
        &[
            ("loopback", "this machine only (recommended)"),
            ("lan", "every interface (LAN)"),
        ],
        0,
    )?;
    let token = a.gateway_token.take().unwrap_or_else(|| {
        std::iter::repeat_with(ferroclaw_actors::devices::random_token)
            .find(|t| !t.starts_with('-'))
            .unwrap_or_default()
    });
    let (security, ask_mode) = exec_policy(&ask, a)?;
    let channels = channels(&ask, a)?;
    let install_daemon = ask.yes(
        a.install_daemon,
        "Install the gateway as a service of this user (systemd)?",
    )?;
    let mut config = json!({
        "gateway": { "port": port, "bind": bind, "auth": { "mode": "token", "token": token } },
        "agents": { "defaults": { "model": { "primary": model }, "workspace": ws.display().to_string() } },
        "tools": { "exec": { "security": security, "ask": ask_mode } },
    });
    if let Some(p) = provider {
        config["models"] = json!({ "providers": { provider_id: p } });
    }
    if channels.as_object().is_some_and(|c| !c.is_empty()) {
        config["channels"] = channels.clone();
    }
    write(cx, a, &config, &ws)?;
    report(cx, &config, &channels, &ws);
    Ok(Done { install_daemon })
}

/// The workspace, then the config: validated from a temporary file as the
/// gateway would read it, then renamed into place.
fn write(cx: &Context, a: &OnboardArgs, config: &Value, ws: &Path) -> Step<()> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        Stop(format!("{what}: {e}; the config was not written"), 1)
    };
    ferroclaw_actors::fsutil::private_dir(&cx.state_dir).map_err(|e| fail("the state dir", &e))?;
    if !ws.exists() {
        std::fs::create_dir_all(ws).map_err(|e| fail("the workspace", &e))?;
        if !a.skip_bootstrap {
            ferroclaw_actors::context::prompt::seed_new_workspace(ws)
                .map_err(|e| fail("the workspace", &e))?;
        }
    }
    let text = serde_json::to_string_pretty(config).map_err(|e| fail("the config", &e))?;
    let tmp = cx
        .config
        .with_extension(format!("onboard-{}.tmp", std::process::id()));
    if let Some(dir) = cx.config.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("the config folder", &e))?;
    }
    ferroclaw::config::write_atomic(&tmp, &text).map_err(|e| fail("the config", &e))?;
    let sources = ferroclaw::config::ConfigSources {
        path: tmp.clone(),
        env: vec![],
        gateway_token: None,
        gateway_password: None,
        generated_token: None,
    };
    let valid = ferroclaw::config::load(&sources)
        .map_err(|e| e.to_string())
        .and_then(|c| {
            ferroclaw_actors::plan::plan(&c.settings, &cx.state_dir, cx.env.clone())
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
    if let Err(e) = valid {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("the new config is invalid", &e));
    }
    if cx.config.exists() {
        let bak = PathBuf::from(format!(
            "{}.bak-{}",
            cx.config.display(),
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ));
        std::fs::copy(&cx.config, &bak).map_err(|e| fail("keeping the old config", &e))?;
    }
    std::fs::rename(&tmp, &cx.config).map_err(|e| fail("the config", &e))
}

fn report(cx: &Context, config: &Value, channels: &Value, ws: &Path) {
    if cx.json {
        let names: Vec<&String> = channels
            .as_object()
            .map(|c| c.keys().collect())
            .unwrap_or_default();
        println!(
            "{}",
            json!({ "ok": true, "config": cx.config, "workspace": ws, "model": config["agents"]["defaults"]["model"]["primary"], "gatewayPort": config["gateway"]["port"], "channels": names })
        );
        return;
    }
    println!("config written: {}", cx.config.display());
    println!("gateway token: in the config (gateway.auth.token); clients pass it with --token");
    if channels.as_object().is_some_and(|c| !c.is_empty()) {
        println!("channels: a stranger who messages the bot gets a pairing code and no answer until you run `ferroclaw pairing approve <channel> <code>`; to let people in up front, list them in channels.<channel>.allowFrom");
    }
    println!("webhooks: off until you set hooks.enabled and hooks.token (POST /hooks/agent with that token)");
    println!(
        "next: `ferroclaw gateway`, then `ferroclaw chat` (or open http://127.0.0.1:{}/chat)",
        config["gateway"]["port"]
    );
}
