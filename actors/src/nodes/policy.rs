//! Which commands a node may be asked to run: OpenClaw's platform defaults
//! (`node-command-policy.ts`), `gateway.nodes.commands.{allow,deny}`, the
//! commands never invoked from outside (worker controls) and the scopes an
//! approval or a call needs. Pure functions, unit-tested here.

use std::collections::BTreeSet;

/// `system.run` and its helpers.
pub const SYSTEM_RUN: [&str; 3] = ["system.run.prepare", "system.run", "system.which"];
/// The node host's own exec approvals file (reached only through
/// `exec.approvals.node.*`, never `node.invoke`).
pub const EXEC_APPROVALS: [&str; 2] = ["system.execApprovals.get", "system.execApprovals.set"];
pub const NOTIFY: &str = "system.notify";
const FILE: [&str; 2] = ["fs.listDir", "terminal.upload"];
const BROWSER: [&str; 2] = ["browser.proxy", "browser.proxy.upload.v1"];
const MCP_CALL: &str = "mcp.tools.call.v1";
const CLAUDE_RUN: &str = "agent.cli.claude.run.v1";
const SCREEN: [&str; 2] = ["screen.snapshot", "desktop.stream"];
const COMPUTER: &str = "computer.act";
const CAMERA: [&str; 1] = ["camera.list"];
const LOCATION: &str = "location.get";
const DEVICE: [&str; 2] = ["device.info", "device.status"];
const MOBILE_DATA: [&str; 6] = [
    "contacts.search",
    "calendar.events",
    "reminders.list",
    "photos.latest",
    "motion.activity",
    "motion.pedometer",
];

/// Commands only a `gateway.nodes.commands.allow` entry admits (OpenClaw's
/// `DEFAULT_DANGEROUS_NODE_COMMANDS`).
pub const DANGEROUS: [&str; 10] = [
    "camera.snap",
    "camera.clip",
    "camera.ptz.control",
    "screen.record",
    "contacts.add",
    "calendar.add",
    "reminders.add",
    "sms.send",
    "sms.search",
    "health.summary",
];

/// A node host's private worker controls: never listed, never invoked.
const PRIVATE: [&str; 12] = [
    "worker.bundle.install.v1",
    "worker.launch.v1",
    "worker.status.v1",
    "worker.cancel.v1",
    "worker.environment.stop.v1",
    "worker.workspace.exec.v1",
    "worker.workspace.prepare.v1",
    "worker.workspace.retain.v1",
    "worker.desktop.stream.v1",
    "worker.desktop.launch.v1",
    "worker.desktop.computer.v1",
    "worker.portal.stream.v1",
];

pub fn is_private(command: &str) -> bool {
    PRIVATE.contains(&command.trim())
}

/// Commands a direct `node.invoke` needs `operator.admin` for (they cross
/// into the node's files or browser).
pub fn admin_only(command: &str) -> bool {
    BROWSER.contains(&command) || FILE.contains(&command)
}

/// The scopes an operator needs to approve a node that declares these
/// commands (OpenClaw's `resolveNodePairApprovalScopes`).
pub fn approval_scopes(commands: &[String]) -> Vec<&'static str> {
    let admin = commands.iter().any(|c| {
        admin_only(c) || SYSTEM_RUN.contains(&c.as_str()) || EXEC_APPROVALS.contains(&c.as_str())
    });
    if admin {
        vec!["operator.pairing", "operator.admin"]
    } else if commands.is_empty() {
        vec!["operator.pairing"]
    } else {
        vec!["operator.pairing", "operator.write"]
    }
}

/// OpenClaw's platform id from what the node reports (`linux`, `macos`,
/// `windows`, `ios`, `android`, `watchos`, else `unknown`).
pub fn platform_id(platform: Option<&str>, family: Option<&str>) -> &'static str {
    let raw = platform.unwrap_or("").trim().to_ascii_lowercase();
    let fam = family.unwrap_or("").trim().to_ascii_lowercase();
    let exact = ["ios", "watchos", "android", "macos", "windows", "linux"];
    if let Some(p) = exact.iter().find(|p| **p == raw) {
        let fits = match *p {
            "ios" => fam.is_empty() || ["iphone", "ipad", "ios"].contains(&fam.as_str()),
            "watchos" => fam == "apple watch" || fam == "watchos",
            "android" => fam.is_empty() || fam == "android",
            "macos" => fam == "mac",
            other => fam == other,
        };
        return if fits { p } else { "unknown" };
    }
    if !raw.is_empty() {
        return "unknown";
    }
    for (id, tokens) in [
        ("ios", &["iphone", "ipad", "ios"][..]),
        ("watchos", &["apple watch", "watchos"][..]),
        ("android", &["android"][..]),
        ("macos", &["mac"][..]),
        ("windows", &["windows"][..]),
        ("linux", &["linux"][..]),
    ] {
        if tokens.iter().any(|t| fam.contains(t)) {
            return id;
        }
    }
    "unknown"
}

fn platform_defaults(id: &str) -> Vec<&'static str> {
    let system: Vec<&str> = SYSTEM_RUN
        .iter()
        .chain(&EXEC_APPROVALS)
        .chain(&FILE)
        .chain(&BROWSER)
        .copied()
        .chain([NOTIFY, MCP_CALL, CLAUDE_RUN])
        .collect();
    let desktop = |extra: &[&'static str]| {
        let mut v = system.clone();
        v.extend(SCREEN);
        v.push(COMPUTER);
        v.extend_from_slice(extra);
        v
    };
    match id {
        "linux" => desktop(&[]),
        "windows" => desktop(&["camera.list", LOCATION, "device.info", "device.status"]),
        "macos" => {
            let mut v = desktop(&["camera.list", "camera.ptz.status", LOCATION, "device.apps"]);
            v.extend(DEVICE);
            v.extend(MOBILE_DATA);
            v
        }
        "ios" => {
            let mut v = vec![LOCATION, NOTIFY];
            v.extend(CAMERA);
            v.extend(DEVICE);
            v.extend(MOBILE_DATA);
            v
        }
        "android" => {
            let mut v = vec![
                LOCATION,
                NOTIFY,
                "notifications.list",
                "notifications.actions",
                "device.permissions",
                "device.health",
                "device.apps",
                "callLog.search",
                "mobile.ui.observe",
                "mobile.ui.act",
            ];
            v.extend(CAMERA);
            v.extend(DEVICE);
            v.extend(MOBILE_DATA);
            v
        }
        "watchos" => {
            let mut v = vec![NOTIFY];
            v.extend(DEVICE);
            v
        }
        _ => vec!["camera.list", LOCATION, NOTIFY],
    }
}

/// The commands a node of this platform may be invoked with: the
/// platform's defaults (the dangerous ones only when `allow` names them),
/// plus `allow`, minus `deny`, never a private control.
pub fn allowlist(platform: &str, allow: &[String], deny: &[String]) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = platform_defaults(platform)
        .into_iter()
        .filter(|c| !DANGEROUS.contains(c))
        .map(str::to_string)
        .collect();
    set.extend(
        allow
            .iter()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty()),
    );
    for d in deny {
        set.remove(d.trim());
    }
    set.retain(|c| !is_private(c));
    set
}

/// Why a command may not be invoked on a node, in OpenClaw's words
/// (`buildNodeCommandRejectionHint`), or None when it may.
pub fn refusal(
    command: &str,
    platform: &str,
    allowed: &BTreeSet<String>,
    effective: &[String],
    declared: &[String],
    deny: &[String],
) -> Option<String> {
    let command = command.trim();
    if command.is_empty() {
        return Some("node command not allowed: command required".into());
    }
    if is_private(command) || !allowed.contains(command) {
        if deny.iter().any(|d| d.trim() == command) {
            return Some(format!(
                "node command not allowed: \"{command}\" is blocked by gateway.nodes.commands.deny"
            ));
        }
        if DANGEROUS.contains(&command) {
            return Some(format!(
                "node command not allowed: \"{command}\" requires explicit gateway.nodes.commands.allow opt-in"
            ));
        }
        return Some(format!(
            "node command not allowed: \"{command}\" is not in the allowlist for platform \"{platform}\""
        ));
    }
    if effective.is_empty() {
        if declared.iter().any(|c| c == command) {
            return Some("node command not allowed: the node's declared command surface is pending approval; run `openclaw nodes pending`, then `openclaw nodes approve <requestId>`".into());
        }
        return Some(
            "node command not allowed: the node did not declare any supported commands".into(),
        );
    }
    if !effective.iter().any(|c| c == command) {
        if declared.iter().any(|c| c == command) {
            return Some(format!("node command not allowed: \"{command}\" is declared by the node but not approved; run `openclaw nodes pending`, then `openclaw nodes approve <requestId>`"));
        }
        return Some(format!(
            "node command not allowed: the node (platform: {platform}) does not support \"{command}\""
        ));
    }
    None
}

/// Trimmed, de-duplicated, sorted, without private controls.
pub fn normalize(commands: &[String]) -> Vec<String> {
    let set: BTreeSet<String> = commands
        .iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty() && !is_private(c))
        .collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn platforms_are_read_as_openclaw_reads_them() {
        assert_eq!(platform_id(Some("linux"), Some("Linux")), "linux");
        assert_eq!(platform_id(Some("linux"), None), "unknown");
        assert_eq!(platform_id(Some("macos"), Some("Mac")), "macos");
        assert_eq!(platform_id(Some("ios"), None), "ios");
        assert_eq!(platform_id(None, Some("iPhone")), "ios");
        assert_eq!(platform_id(Some("plan9"), Some("linux")), "unknown");
    }

    #[test]
    fn the_allowlist_keeps_dangerous_and_private_commands_out() {
        let linux = allowlist("linux", &[], &[]);
        assert!(linux.contains("system.run") && linux.contains("system.which"));
        assert!(!linux.contains("screen.record") && !linux.contains("camera.snap"));
        let opted = allowlist("linux", &s(&["screen.record", "worker.launch.v1"]), &[]);
        assert!(opted.contains("screen.record"));
        assert!(!opted.contains("worker.launch.v1"), "private stays out");
        let denied = allowlist("linux", &[], &s(&["system.run"]));
        assert!(!denied.contains("system.run"));
        assert!(!allowlist("unknown", &[], &[]).contains("system.run"));
    }

    #[test]
    fn refusals_say_why_in_openclaws_words() {
        let allowed = allowlist("linux", &[], &s(&["system.notify"]));
        let declared = s(&["system.run", "system.which"]);
        let r = |cmd: &str, effective: &[String]| {
            refusal(
                cmd,
                "linux",
                &allowed,
                effective,
                &declared,
                &s(&["system.notify"]),
            )
        };
        assert!(r("system.run", &[]).unwrap().contains("pending approval"));
        assert_eq!(r("system.run", &declared), None);
        assert!(r("camera.snap", &declared)
            .unwrap()
            .contains("explicit gateway.nodes.commands.allow"));
        assert!(r("system.notify", &declared)
            .unwrap()
            .contains("gateway.nodes.commands.deny"));
        assert!(r("screen.snapshot", &declared)
            .unwrap()
            .contains("does not support"));
        assert!(r("worker.launch.v1", &declared)
            .unwrap()
            .contains("not in the allowlist"));
    }

    #[test]
    fn approving_system_run_needs_admin() {
        assert_eq!(
            approval_scopes(&s(&["system.run"])),
            ["operator.pairing", "operator.admin"]
        );
        assert_eq!(
            approval_scopes(&s(&["location.get"])),
            ["operator.pairing", "operator.write"]
        );
        assert_eq!(approval_scopes(&[]), ["operator.pairing"]);
    }
}
