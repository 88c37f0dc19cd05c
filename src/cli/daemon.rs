//! `ferroclaw daemon install|uninstall|status|start|stop|restart|logs`,
//! with OpenClaw's `openclaw daemon` meaning: the gateway as a service of
//! the user's own service manager. On Linux a systemd user unit
//! (`~/.config/systemd/user/ferroclaw-gateway.service`, restarted on
//! failure, with this binary, the state dir and the config file baked in);
//! on macOS a launchd agent (`~/Library/LaunchAgents/ai.ferroclaw.gateway.plist`,
//! rendered and parsed in tests, never run on a Mac here). Nothing here
//! needs root.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

pub const UNIT: &str = "ferroclaw-gateway.service";
pub const LABEL: &str = "ai.ferroclaw.gateway";

#[derive(clap::Subcommand)]
pub enum DaemonCommand {
    /// Write the service and start it (`--no-start`: only write it).
    Install {
        /// Replace a service file that exists.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        no_start: bool,
        /// Print the file instead of writing it.
        #[arg(long)]
        print: bool,
        /// The macOS launchd agent instead of the systemd unit.
        #[arg(long)]
        launchd: bool,
    },
    /// Stop the service and remove its file.
    Uninstall,
    /// The service manager's view of it.
    Status,
    Start,
    Stop,
    Restart,
    /// Its last log lines (the journal, else the gateway's log file).
    Logs {
        #[arg(long, default_value_t = 200)]
        lines: usize,
    },
}

/// What the service runs, and where its file goes (main.rs reads the
/// environment for these).
pub struct Service {
    pub exe: PathBuf,
    pub state_dir: PathBuf,
    pub config: Option<PathBuf>,
    /// `~/.config/systemd/user` (or `$XDG_CONFIG_HOME/systemd/user`).
    pub systemd_dir: PathBuf,
    /// `~/Library/LaunchAgents`.
    pub launchd_dir: PathBuf,
    pub log_file: PathBuf,
}

impl Service {
    /// This binary, with absolute paths (a service starts elsewhere).
    pub fn new(
        state: &Path,
        config: Option<&Path>,
        settings: &ferroclaw_actors::settings::Settings,
    ) -> Service {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        Service {
            exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ferroclaw")),
            state_dir: abs(state),
            config: config.map(abs),
            systemd_dir: PathBuf::new(),
            launchd_dir: PathBuf::new(),
            log_file: settings.logging.file.as_ref().map_or_else(
                || abs(&state.join("logs").join("ferroclaw.log")),
                |f| abs(Path::new(f)),
            ),
        }
    }

    /// Where this user's service files go (`$HOME`, `$XDG_CONFIG_HOME`, read by main.rs).
    pub fn homes(
        mut self,
        home: Option<std::ffi::OsString>,
        config_home: Option<std::ffi::OsString>,
    ) -> Service {
        let home = home.map(PathBuf::from).unwrap_or_default();
        let config_home = config_home.map_or_else(|| home.join(".config"), PathBuf::from);
        self.systemd_dir = config_home.join("systemd/user");
        self.launchd_dir = home.join("Library/LaunchAgents");
        self
    }

    fn args(&self) -> Vec<String> {
        let mut a = vec![self.exe.display().to_string()];
        a.push("--state-dir".into());
        a.push(self.state_dir.display().to_string());
        if let Some(c) = &self.config {
            a.push("--config".into());
            a.push(c.display().to_string());
        }
        a.push("gateway".into());
        a
    }
}

/// A word of `ExecStart=` as systemd reads it: quoted, `\` and `"`
/// escaped, `%` (a specifier) doubled.
fn sd_word(w: &str) -> String {
    let escaped = w
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%");
    format!("\"{escaped}\"")
}

/// The systemd user unit.
pub fn systemd_unit(s: &Service) -> String {
    let exec: Vec<String> = s.args().iter().map(|a| sd_word(a)).collect();
    format!(
        "# Written by `ferroclaw daemon install`; `ferroclaw daemon uninstall` removes it.\n\
         [Unit]\n\
         Description=ferroclaw gateway\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         TimeoutStopSec=30\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exec.join(" ")
    )
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The launchd agent (untested on a real Mac; parsed as a plist in tests).
pub fn launchd_plist(s: &Service) -> String {
    let args: String = s
        .args()
        .iter()
        .map(|a| format!("    <string>{}</string>\n", xml(a)))
        .collect();
    let log = xml(&s
        .log_file
        .with_file_name("launchd.log")
        .display()
        .to_string());
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n\
         <key>Label</key><string>{LABEL}</string>\n\
         <key>ProgramArguments</key>\n<array>\n{args}</array>\n\
         <key>RunAtLoad</key><true/>\n\
         <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n\
         <key>StandardOutPath</key><string>{log}</string>\n\
         <key>StandardErrorPath</key><string>{log}</string>\n\
         </dict>\n</plist>\n"
    )
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// Why `systemctl --user` did not do it.
#[derive(Debug, thiserror::Error)]
enum SystemctlError {
    #[error("systemctl not found ({0}): this machine has no systemd")]
    Missing(std::io::Error),
    /// What it printed on stderr, trimmed.
    #[error("{0}")]
    Failed(String),
}

/// `systemctl --user <args>`: its stdout, or what went wrong in a line.
fn systemctl(args: &[&str]) -> Result<String, SystemctlError> {
    match Command::new("systemctl").arg("--user").args(args).output() {
        Err(e) => Err(SystemctlError::Missing(e)),
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(SystemctlError::Failed(
            String::from_utf8_lossy(&o.stderr).trim().to_string(),
        )),
    }
}

const BUS_HINT: &str = "the systemd user manager is not reachable from here (no login session?): in a login shell run `systemctl --user daemon-reload && systemctl --user enable --now ferroclaw-gateway`, and `loginctl enable-linger $USER` so it keeps running after you log out";

fn install(s: &Service, force: bool, no_start: bool, launchd: bool) -> ExitCode {
    let (dir, name, text) = if launchd {
        (&s.launchd_dir, format!("{LABEL}.plist"), launchd_plist(s))
    } else {
        (&s.systemd_dir, UNIT.to_string(), systemd_unit(s))
    };
    let path = dir.join(name);
    if path.exists() && !force {
        return fail(1, format!("{} exists: --force replaces it", path.display()));
    }
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| write_atomic(&path, &text)) {
        return fail(1, format!("cannot write {}: {e}", path.display()));
    }
    println!("wrote {}", path.display());
    if no_start {
        return ExitCode::SUCCESS;
    }
    if launchd {
        return match Command::new("launchctl")
            .arg("load")
            .arg("-w")
            .arg(&path)
            .status()
        {
            Ok(st) if st.success() => ExitCode::SUCCESS,
            _ => fail(
                3,
                format!(
                    "launchctl could not load it: run `launchctl load -w {}`",
                    path.display()
                ),
            ),
        };
    }
    match systemctl(&["daemon-reload"]).and_then(|_| systemctl(&["enable", "--now", UNIT])) {
        Ok(_) => {
            println!(
                "started {UNIT}; `loginctl enable-linger $USER` keeps it running after you log out"
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(
            3,
            format!("the unit is written but not started: {e}; {BUS_HINT}"),
        ),
    }
}

/// Written whole or not at all.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn uninstall(s: &Service) -> ExitCode {
    let path = s.systemd_dir.join(UNIT);
    if !path.exists() {
        return fail(
            1,
            format!("no service installed ({} does not exist)", path.display()),
        );
    }
    let stopped = systemctl(&["disable", "--now", UNIT]);
    if let Err(e) = std::fs::remove_file(&path) {
        return fail(1, format!("cannot remove {}: {e}", path.display()));
    }
    println!("removed {}", path.display());
    if let Err(e) = stopped.and_then(|_| systemctl(&["daemon-reload"])) {
        return fail(
            3,
            format!("the unit file is gone, but systemd was not told: {e}; {BUS_HINT}"),
        );
    }
    ExitCode::SUCCESS
}

fn logs(s: &Service, lines: usize) -> ExitCode {
    let n = lines.to_string();
    let journal = Command::new("journalctl")
        .args(["--user", "-u", UNIT, "-n", &n, "--no-pager"])
        .output();
    if let Ok(o) = journal {
        let text = String::from_utf8_lossy(&o.stdout);
        if o.status.success() && !text.contains("No entries") && !text.trim().is_empty() {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
    }
    match std::fs::read_to_string(&s.log_file) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            for l in &all[all.len().saturating_sub(lines)..] {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(
            1,
            format!(
                "no journal entries and no log file at {}: {e}",
                s.log_file.display()
            ),
        ),
    }
}

/// `daemon status`: whether the service is installed, whether a gateway
/// runs on the state dir (its pid and address, from the gateway's own
/// record), and what systemd says, or why it cannot be asked. Exit 0 when
/// a gateway runs, 3 when none does (systemctl's "not running").
fn status(s: &Service) -> ExitCode {
    let unit = s.systemd_dir.join(UNIT);
    if unit.exists() {
        println!("service: installed ({})", unit.display());
    } else {
        println!(
            "service: not installed (no {}): `ferroclaw daemon install` adds it",
            unit.display()
        );
    }
    let running = ferroclaw::runtime::running(&s.state_dir);
    match &running {
        Some(r) => println!("gateway: running (pid {}, {})", r.pid, r.url),
        None => println!("gateway: not running on {}", s.state_dir.display()),
    }
    if unit.exists() {
        match systemctl(&["status", UNIT, "--no-pager"]) {
            Ok(out) => print!("{out}"),
            // `status` exits non-zero for a stopped unit and says why.
            Err(SystemctlError::Failed(e)) if !e.to_ascii_lowercase().contains("bus") => {
                println!("systemd: {e}")
            }
            Err(SystemctlError::Failed(_)) => println!("systemd: {BUS_HINT}"),
            Err(e @ SystemctlError::Missing(_)) => println!("systemd: {e}"),
        }
    }
    match running {
        Some(_) => ExitCode::SUCCESS,
        None => ExitCode::from(3),
    }
}

pub fn run(cmd: DaemonCommand, s: &Service) -> ExitCode {
    let verb = match cmd {
        DaemonCommand::Install {
            print: true,
            launchd,
            ..
        } => {
            print!(
                "{}",
                if launchd {
                    launchd_plist(s)
                } else {
                    systemd_unit(s)
                }
            );
            return ExitCode::SUCCESS;
        }
        DaemonCommand::Install {
            force,
            no_start,
            launchd,
            ..
        } => return install(s, force, no_start, launchd),
        DaemonCommand::Uninstall => return uninstall(s),
        DaemonCommand::Logs { lines } => return logs(s, lines),
        DaemonCommand::Status => return status(s),
        DaemonCommand::Start => "start",
        DaemonCommand::Stop => "stop",
        DaemonCommand::Restart => "restart",
    };
    if !s.systemd_dir.join(UNIT).exists() {
        return fail(1, "no service installed: run `ferroclaw daemon install`");
    }
    match Command::new("systemctl")
        .args(["--user", verb, UNIT])
        .status()
    {
        Err(e) => fail(
            3,
            format!("systemctl not found ({e}): this machine has no systemd"),
        ),
        Ok(st) if st.success() => ExitCode::SUCCESS,
        Ok(st) => {
            eprintln!("{BUS_HINT}");
            ExitCode::from(u8::try_from(st.code().unwrap_or(1)).unwrap_or(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(state: &str) -> Service {
        Service {
            exe: "/opt/ferro claw/bin/ferroclaw".into(),
            state_dir: state.into(),
            config: Some("/etc/ferro%claw.json".into()),
            systemd_dir: "/tmp/u".into(),
            launchd_dir: "/tmp/l".into(),
            log_file: "/home/a/.ferroclaw/logs/ferroclaw.log".into(),
        }
    }

    #[test]
    fn the_unit_quotes_paths_and_escapes_specifiers() {
        let unit = systemd_unit(&service("/home/a/my \"state\""));
        let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
        assert_eq!(
            exec,
            r#"ExecStart="/opt/ferro claw/bin/ferroclaw" "--state-dir" "/home/a/my \"state\"" "--config" "/etc/ferro%%claw.json" "gateway""#
        );
        assert!(unit.contains("Restart=on-failure"));
    }

    #[test]
    fn the_plist_escapes_xml() {
        let plist = launchd_plist(&service("/home/a/<s>&t"));
        assert!(
            plist.contains("<string>/home/a/&lt;s&gt;&amp;t</string>"),
            "{plist}"
        );
        assert!(plist.contains("<string>/home/a/.ferroclaw/logs/launchd.log</string>"));
    }
}
