//! The exec sandbox: `agents.defaults.sandbox` (`mode` off | non-main | all,
//! `scope` session | agent | shared, `workspaceAccess` none | ro | rw).
//! A sandboxed command runs under bubblewrap (`bwrap`): its own user, pid,
//! IPC, UTS and network namespaces (no network), the system directories
//! read-only, a private `/tmp`, and `/workspace`: the agent workspace (ro or
//! rw) or, with `none`, a scratch folder per scope under
//! `<state dir>/sandboxes/`. If `bwrap` is missing the tool fails with a
//! clear message; it never falls back to running on the host.

use crate::ids::SessionKey;
use std::path::{Path, PathBuf};

use crate::approvals::Host;
use crate::settings::SandboxConfig;

/// Why a sandboxed command cannot run (the exec tool's error text).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("exec: this session runs commands in the sandbox, which needs bubblewrap (`bwrap`), and it is not installed; install the `bubblewrap` package. Nothing was run.")]
    NoBwrap,
    #[error("exec: cannot prepare the sandbox workspace: {0}")]
    Workspace(#[from] std::io::Error),
}

pub use crate::settings::{SandboxMode as Mode, SandboxScope as Scope, WorkspaceAccess as Access};

#[derive(Debug, Clone)]
pub struct SandboxSettings {
    pub mode: Mode,
    pub scope: Scope,
    pub access: Access,
    /// Scratch workspaces (`workspaceAccess: none`) live here.
    pub root: PathBuf,
    /// The bubblewrap binary (`bwrap` on PATH).
    pub bwrap: String,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            mode: Mode::Off,
            scope: Scope::Session,
            access: Access::None,
            root: crate::host::env().tmp.join("ferroclaw-sandboxes"),
            bwrap: "bwrap".into(),
        }
    }
}

impl SandboxSettings {
    /// From `agents.defaults.sandbox` (scratch workspaces under the state dir).
    pub fn from_config(c: &SandboxConfig, state_dir: &Path) -> SandboxSettings {
        SandboxSettings {
            mode: c.mode,
            scope: c.scope,
            access: c.workspace_access,
            root: state_dir.join("sandboxes"),
            bwrap: "bwrap".into(),
        }
    }

    /// Where a session's commands run by default: `all` sandboxes every
    /// session, `non-main` every session but the agent's main one.
    pub fn host_for(&self, session_key: &str) -> Host {
        let main = crate::ids::key::is_main(session_key);
        match self.mode {
            Mode::Off => Host::Gateway,
            Mode::All => Host::Sandbox,
            Mode::NonMain if main => Host::Gateway,
            Mode::NonMain => Host::Sandbox,
        }
    }

    /// The folder mounted as `/workspace`, and whether it is writable. A
    /// stranger's turn always gets a scratch folder of its own session,
    /// never the agent workspace (where the files trusted turns obey are).
    fn mount(&self, workspace: &Path, turn: &Turn) -> std::io::Result<(PathBuf, bool)> {
        let access = if turn.untrusted {
            Access::None
        } else {
            self.access
        };
        match access {
            Access::ReadOnly => Ok((workspace.to_path_buf(), false)),
            Access::ReadWrite => Ok((workspace.to_path_buf(), true)),
            Access::None => {
                let name: String = match self.scope {
                    _ if turn.untrusted => format!("untrusted-{}", turn.session_key),
                    Scope::Session => turn.session_key.to_string(),
                    Scope::Agent => format!("agent-{}", turn.agent_id),
                    Scope::Shared => "shared".into(),
                };
                let name = crate::fsutil::safe_name(&name);
                let dir = self.root.join(name);
                std::fs::create_dir_all(&dir)?;
                Ok((dir, true))
            }
        }
    }

    /// `bwrap ... sh -c <command>`, or the reason it cannot run. The
    /// command starts with a clean environment (the gateway's holds its
    /// secrets): `PATH`, `HOME`, `LANG`, and a trusted turn's skill env.
    pub fn command(
        &self,
        workspace: &Path,
        turn: &Turn,
        command: &str,
    ) -> Result<tokio::process::Command, SandboxError> {
        let bwrap = find_on_path(&self.bwrap).ok_or(SandboxError::NoBwrap)?;
        let (dir, writable) = self.mount(workspace, turn)?;
        let mut c = tokio::process::Command::new(bwrap);
        c.args([
            "--die-with-parent",
            "--unshare-all",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
        ]);
        for sys in ["/usr", "/etc", "/opt"] {
            if Path::new(sys).is_dir() {
                c.args(["--ro-bind", sys, sys]);
            }
        }
        // /bin, /lib... are symlinks into /usr on merged-usr systems.
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64"] {
            match std::fs::read_link(top) {
                Ok(target) => {
                    c.arg("--symlink").arg(target).arg(top);
                }
                Err(_) if Path::new(top).is_dir() => {
                    c.args(["--ro-bind", top, top]);
                }
                Err(_) => {}
            }
        }
        c.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
        c.arg(if writable { "--bind" } else { "--ro-bind" })
            .arg(&dir)
            .arg("/workspace");
        c.args([
            "--chdir",
            "/workspace",
            "--setenv",
            "HOME",
            "/workspace",
            "--setenv",
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C.UTF-8",
        ]);
        if !turn.untrusted {
            for (k, v) in &turn.env {
                c.arg("--setenv").arg(k).arg(v);
            }
        }
        c.args(["sh", "-c", command]);
        Ok(c)
    }
}

/// Whose command a sandbox runs.
#[derive(Debug, Clone)]
pub struct Turn {
    pub session_key: SessionKey,
    pub agent_id: String,
    /// A stranger's turn: a scratch workspace of its own, no skill env.
    pub untrusted: bool,
    /// Skills' env for the command (a trusted turn's).
    pub env: Vec<(String, String)>,
}

fn find_on_path(bin: &str) -> Option<PathBuf> {
    crate::host::env().which(bin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_parse_and_pick_the_host_per_session() {
        let d = Path::new("/state");
        let config = |v: serde_json::Value| -> Result<SandboxConfig, serde_json::Error> {
            let mut full = json!({"mode": "off", "scope": "session", "workspaceAccess": "none"});
            for (k, x) in v.as_object().unwrap() {
                full[k] = x.clone();
            }
            serde_json::from_value(full)
        };
        let s = SandboxSettings::from_config(
            &config(json!({"mode": "non-main", "scope": "agent", "workspaceAccess": "ro"}))
                .unwrap(),
            d,
        );
        assert_eq!(
            (s.mode, s.scope, s.access),
            (Mode::NonMain, Scope::Agent, Access::ReadOnly)
        );
        assert_eq!(s.host_for("agent:main:main"), Host::Gateway);
        assert_eq!(s.host_for("agent:main:telegram:dm:1"), Host::Sandbox);
        let all = SandboxSettings::from_config(&config(json!({"mode": "all"})).unwrap(), d);
        assert_eq!(all.host_for("agent:main:main"), Host::Sandbox);
        let off = SandboxSettings::from_config(&config(json!({})).unwrap(), d);
        assert_eq!(off.host_for("agent:main:x"), Host::Gateway);
        assert!(config(json!({"mode": "sometimes"})).is_err());
        assert!(config(json!({"workspaceAccess": "write"})).is_err());
    }

    #[test]
    fn a_missing_bwrap_is_a_clear_error_never_a_host_fallback() {
        let s = SandboxSettings {
            bwrap: "definitely-not-bwrap-xyz".into(),
            ..Default::default()
        };
        let turn = Turn {
            session_key: crate::ids::SessionKey::stored("agent:main:x"),
            agent_id: "main".into(),
            untrusted: false,
            env: Vec::new(),
        };
        let e = s
            .command(Path::new("/tmp"), &turn, "true")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("needs bubblewrap") && e.contains("Nothing was run"),
            "{e}"
        );
    }
}
