//! `ferroclaw daemon`: the systemd user unit it writes passes Debian's
//! `systemd-analyze verify` with no warning (paths with spaces included);
//! a second install is refused without `--force`; where the user manager
//! is unreachable (this container, like a shell without a login session)
//! the install says what to run and exits 3 with the unit written;
//! `uninstall` removes it; the launchd agent parses as a property list
//! (Python's `plistlib`).

use std::path::Path;
use std::process::Output;

use crate::support::process::{ferroclaw, BIN};
use crate::support::process::{Within, CHILD_LIMIT};

fn daemon(state: &Path, xdg: &Path, args: &[&str]) -> Output {
    ferroclaw(state)
        .arg("daemon")
        .args(args)
        .env("XDG_CONFIG_HOME", xdg)
        .within(CHILD_LIMIT)
}

fn text(o: &Output) -> String {
    crate::support::process::output_text(o)
}

#[test]
fn the_unit_verifies_installs_refuse_twice_and_uninstall_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("my state");
    let xdg = dir.path().join("xdg");
    let unit = xdg.join("systemd/user/ferroclaw-gateway.service");

    let out = daemon(&state, &xdg, &["install", "--no-start"]);
    assert!(out.status.success(), "{}", text(&out));
    let body = std::fs::read_to_string(&unit).unwrap();
    let exec = format!(
        "ExecStart=\"{BIN}\" \"--state-dir\" \"{}\" \"gateway\"",
        state.display()
    );
    assert!(body.contains(&exec), "{body}");
    assert!(body.contains("Restart=on-failure"), "{body}");
    let verify = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .within(CHILD_LIMIT);
    assert!(verify.status.success(), "{}", text(&verify));
    assert_eq!(text(&verify).trim(), "", "no warning from systemd");

    let again = daemon(&state, &xdg, &["install", "--no-start"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("--force"), "{}", text(&again));

    // Starting needs the user manager; here there is none: said, exit 3.
    let start = daemon(&state, &xdg, &["install", "--force"]);
    assert_eq!(start.status.code(), Some(3), "{}", text(&start));
    let said = text(&start);
    assert!(
        said.contains("systemctl --user") && said.contains("loginctl enable-linger"),
        "{said}"
    );
    assert!(unit.exists(), "written though not started");

    let removed = daemon(&state, &xdg, &["uninstall"]);
    assert!(!unit.exists(), "{}", text(&removed));
    let none = daemon(&state, &xdg, &["uninstall"]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
}

#[test]
fn the_launchd_agent_is_a_valid_property_list() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a <b> & c");
    let out = daemon(
        &state,
        &dir.path().join("xdg"),
        &["install", "--print", "--launchd"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plist = dir.path().join("agent.plist");
    std::fs::write(&plist, &out.stdout).unwrap();
    let parsed = std::process::Command::new("python3")
        .args([
            "-c",
            "import json,plistlib,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb'))))",
        ])
        .arg(&plist)
        .within(CHILD_LIMIT);
    assert!(parsed.status.success(), "{}", text(&parsed));
    let v: serde_json::Value = serde_json::from_slice(&parsed.stdout).unwrap();
    assert_eq!(v["Label"], "ai.ferroclaw.gateway");
    let args = v["ProgramArguments"].as_array().unwrap();
    assert_eq!(args[0], BIN);
    assert_eq!(args[2], state.display().to_string(), "{v}");
    assert_eq!(v["KeepAlive"]["SuccessfulExit"], false);
}

/// `daemon status` says what is true without a user bus: whether the
/// service is installed, whether a gateway runs on the state dir (its pid
/// and address), and why systemd cannot be asked; never systemctl's bare
/// "Failed to connect to bus" or advice for a unit that does not exist.
#[test]
fn daemon_status_says_what_is_installed_and_running() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    let gw = crate::support::TestGateway::start();
    let none = daemon(&dir.path().join("empty"), &xdg, &["status"]);
    let said = text(&none);
    assert_eq!(none.status.code(), Some(3), "{said}");
    assert!(said.contains("service: not installed"), "{said}");
    assert!(said.contains("gateway: not running"), "{said}");
    assert!(!said.contains("Failed to connect to bus"), "{said}");

    let installed = daemon(gw.state_dir(), &xdg, &["install", "--no-start"]);
    assert!(installed.status.success(), "{}", text(&installed));
    let up = daemon(gw.state_dir(), &xdg, &["status"]);
    let said = text(&up);
    assert_eq!(up.status.code(), Some(0), "{said}");
    assert!(said.contains("service: installed"), "{said}");
    // The test gateway runs in this process.
    let pid = format!("gateway: running (pid {}", std::process::id());
    assert!(said.contains(&pid), "{said}");
    assert!(said.contains("systemd: "), "{said}");
    assert!(!said.contains("Failed to connect to bus"), "{said}");
}
