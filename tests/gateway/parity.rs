//! Every gateway-facing command of OpenClaw's CLI that ferroclaw claims
//! (README, "OpenClaw's CLI against ferroclaw"), run as a user runs it
//! against one gateway with a Telegram account: each exits 0 and says
//! what it should. Commands with more to check have tests of their own
//! (`interop.rs`, `commands.rs`, `clients.rs`); the ones that do not apply
//! to ferroclaw, or do not work yet, are listed in the README with why.

use std::process::Output;

use serde_json::json;

use super::interop::{openclaw_command, openclaw_env_command};
use super::telegram::{telegram_config, BOT_TOKEN};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::TestGateway;

/// How a command names the gateway: flags, or the environment.
#[derive(Clone, Copy)]
enum Via {
    Flags,
    Env,
}

/// (command line, how it reaches the gateway, what its output must hold).
const CLAIMED: &[(&str, Via, &str)] = &[
    ("health", Via::Env, "Agents: main"),
    ("status", Via::Env, "OpenClaw status"),
    ("gateway health", Via::Flags, "OK"),
    // Exits non-zero when the RPC probe fails.
    ("gateway status --require-rpc", Via::Flags, "Service:"),
    ("gateway call health", Via::Flags, "\"ok\": true"),
    ("gateway probe", Via::Flags, "Reachable: yes"),
    ("gateway stability", Via::Flags, "Gateway Stability"),
    ("logs --limit 3", Via::Flags, "Log file:"),
    ("doctor --non-interactive", Via::Env, "Gateway"),
    (
        "agent --message parity --session-key agent:main:parity",
        Via::Env,
        "You said: parity",
    ),
    ("models list", Via::Env, "offline/echo"),
    ("skills list", Via::Env, "skills"),
    ("channels status", Via::Env, "Gateway reachable."),
    // Lists the CLI's own config's channels; asks the gateway for status.
    ("channels list", Via::Env, "Chat channels:"),
    ("pairing list telegram", Via::Env, "telegram"),
    (
        "message send --channel telegram --target 4242 --message parity",
        Via::Env,
        "Sent via",
    ),
    // Token clients pair no device.
    ("devices list", Via::Flags, "No device pairing entries."),
    ("approvals get --gateway", Via::Flags, "Approvals"),
    ("approvals grants list", Via::Flags, "No standing grants."),
    ("cron status", Via::Flags, "\"enabled\": true"),
    ("cron list", Via::Flags, "No automations."),
    ("system presence", Via::Flags, "\"host\""),
    // No heartbeat ran yet: OpenClaw's answer is null too.
    ("system heartbeat last", Via::Flags, "null"),
    ("system event --text parity", Via::Flags, "ok"),
    ("hooks list", Via::Env, "Hooks ("),
    ("hooks check", Via::Env, "Total hooks:"),
    ("secrets reload", Via::Flags, "Secrets reloaded"),
    ("users list", Via::Flags, "No user profiles found."),
    ("audit --kind agent_run", Via::Env, "TIME\tKIND\tDIRECTION"),
    // ferroclaw keeps no execution identity: the CLI's own answer to that.
    (
        "audit --run parity --explain",
        Via::Env,
        "Reason: gateway_upgrade_required",
    ),
    ("update status", Via::Env, "update status"),
];

fn run(gw: &TestGateway, home: &std::path::Path, line: &str, via: Via) -> Output {
    let args: Vec<&str> = line.split_whitespace().collect();
    let mut cmd = match via {
        Via::Flags => openclaw_command(gw, home, &args),
        Via::Env => openclaw_env_command(gw, home, &args),
    };
    crate::support::process::output_within(&mut cmd, super::interop::CLI_LIMIT)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gateway_command_ferroclaw_claims_works() {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let gw = TestGateway::with_config(telegram_config(&fake, json!({})));
    let failed = tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let mut failed = Vec::new();
        // Two at a time: each is a Node process that spends seconds of CPU
        // starting; more would starve the suite's other tests on 2 cores.
        for batch in CLAIMED.chunks(2) {
            let outs: Vec<(&str, Output)> = std::thread::scope(|s| {
                let jobs: Vec<_> = batch
                    .iter()
                    .map(|(line, via, _)| {
                        let (gw, home) = (&gw, home.path());
                        s.spawn(move || (*line, run(gw, home, line, *via)))
                    })
                    .collect();
                jobs.into_iter().map(|j| j.join().unwrap()).collect()
            });
            for ((_, _, want), (line, out)) in batch.iter().zip(outs) {
                let said = String::from_utf8_lossy(&out.stdout);
                if !out.status.success() || !said.contains(want) {
                    let err = String::from_utf8_lossy(&out.stderr);
                    failed.push(format!(
                        "openclaw {line}: {:?}, wanted {want:?}\n{said}\n{err}",
                        out.status.code()
                    ));
                }
            }
        }
        drop(gw);
        failed
    })
    .await
    .unwrap();
    assert!(
        failed.is_empty(),
        "{} of {} commands failed:\n{}",
        failed.len(),
        CLAIMED.len(),
        failed.join("\n---\n")
    );
    assert!(fake.sent_to(4242).iter().any(|s| s.text == "parity"));
}
