//! A terminal a test types into as a user does: a tmux server of its own,
//! one window, keys sent, the screen read back.

use std::process::Command;
use std::time::{Duration, Instant};

/// `cmd` as one shell line: its environment (and nothing else), then the
/// program and its arguments, each quoted.
pub fn shell_line(cmd: &Command) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec!["exec env -i".to_string()];
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            line.push(quote(&format!(
                "{}={}",
                k.to_string_lossy(),
                v.to_string_lossy()
            )));
        }
    }
    line.push(quote(&cmd.get_program().to_string_lossy()));
    for a in cmd.get_args() {
        line.push(quote(&a.to_string_lossy()));
    }
    line.join(" ")
}

/// A tmux server of its own (its own socket), so tests never touch a
/// user's sessions; killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(width: u16, height: u16, line: &str) -> Tmux {
        let socket = format!(
            "ferroclaw-test-{}-{}",
            std::process::id(),
            ulid::Ulid::generate()
        );
        let t = Tmux { socket };
        let (w, h) = (width.to_string(), height.to_string());
        let ok = t
            .tmux(&["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, line])
            .status
            .success();
        assert!(
            ok,
            "tmux new-session failed (is tmux installed? tests/run.sh installs it)"
        );
        t
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Types `text` and presses Enter.
    pub fn type_line(&self, text: &str) {
        assert!(self
            .tmux(&["send-keys", "-t", "t", "-l", text])
            .status
            .success());
        assert!(self
            .tmux(&["send-keys", "-t", "t", "Enter"])
            .status
            .success());
    }

    /// Presses a key by tmux's name for it (`Enter`, `Down`, `C-c`).
    pub fn key(&self, key: &str) {
        assert!(self.tmux(&["send-keys", "-t", "t", key]).status.success());
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// Waits until `done` holds for the screen; panics with the screen.
    pub fn until(&self, what: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if Instant::now() > end {
                panic!("the terminal never showed {what}; its screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
