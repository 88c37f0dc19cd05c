//! Standing grants (OpenClaw's, for automation approvals): `allow-always`
//! on an exec a cron job's own session asked for lets that job run that
//! exact command in that folder again without asking, and nothing else.
//! It does not widen the agent's allowlist the way an interactive
//! `allow-always` does. Grants are listed and revoked by operators
//! (`exec.approval.grants.list|revoke`); a revoked grant asks again.
//! Kept in `<state dir>/exec-grants.json` (atomic writes), beside the
//! approvals file.

use serde::{Deserialize, Serialize};

/// Grants kept (the oldest revoked ones go first).
pub const MAX_GRANTS: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub grant_id: String,
    pub minted_by_approval_id: String,
    pub agent_id: String,
    pub cron_job_id: String,
    pub cron_job_name: Option<String>,
    pub command: String,
    pub cwd: Option<String>,
    pub created_at_ms: u64,
    pub expires_at_ms: Option<u64>,
    pub revoked_at_ms: Option<u64>,
    pub revoked_by: Option<String>,
    pub last_used_at_ms: Option<u64>,
    pub use_count: u64,
}

/// What a revoke did (OpenClaw's outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, actix::MessageResponse)]
pub enum Revoked {
    Revoked,
    AlreadyRevoked,
    NotFound,
}

impl Revoked {
    pub fn as_str(self) -> &'static str {
        match self {
            Revoked::Revoked => "revoked",
            Revoked::AlreadyRevoked => "already-revoked",
            Revoked::NotFound => "not-found",
        }
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grants {
    #[serde(default)]
    pub grants: Vec<Grant>,
}

impl Grants {
    /// The live grant for this job's command in this folder.
    pub fn find(
        &self,
        agent: &str,
        job: &str,
        command: &str,
        cwd: &str,
        now: u64,
    ) -> Option<usize> {
        self.grants.iter().position(|g| {
            g.agent_id == agent
                && g.cron_job_id == job
                && g.command == command
                && g.cwd.as_deref() == Some(cwd)
                && g.revoked_at_ms.is_none()
                && g.expires_at_ms.is_none_or(|e| e > now)
        })
    }

    pub fn used(&mut self, i: usize, now: u64) {
        if let Some(g) = self.grants.get_mut(i) {
            g.use_count += 1;
            g.last_used_at_ms = Some(now);
        }
    }

    pub fn mint(&mut self, g: Grant) {
        if self.grants.len() >= MAX_GRANTS {
            let oldest = self
                .grants
                .iter()
                .position(|g| g.revoked_at_ms.is_some())
                .unwrap_or(0);
            self.grants.remove(oldest);
        }
        self.grants.push(g);
    }

    pub fn revoke(&mut self, id: &str, by: &str, now: u64) -> Revoked {
        match self.grants.iter_mut().find(|g| g.grant_id == id) {
            None => Revoked::NotFound,
            Some(g) if g.revoked_at_ms.is_some() => Revoked::AlreadyRevoked,
            Some(g) => {
                g.revoked_at_ms = Some(now);
                g.revoked_by = Some(by.to_string());
                Revoked::Revoked
            }
        }
    }

    /// Newest first, at most `limit`.
    pub fn newest(&self, limit: usize) -> Vec<Grant> {
        self.grants.iter().rev().take(limit).cloned().collect()
    }
}

/// A grant for `main`'s cron job `job` to run `echo hi` in `/w` (tests).
#[cfg(test)]
pub(crate) fn sample(id: &str, job: &str) -> Grant {
    Grant {
        grant_id: id.into(),
        minted_by_approval_id: "a1".into(),
        agent_id: "main".into(),
        cron_job_id: job.into(),
        cron_job_name: None,
        command: "echo hi".into(),
        cwd: Some("/w".into()),
        created_at_ms: 1,
        expires_at_ms: None,
        revoked_at_ms: None,
        revoked_by: None,
        last_used_at_ms: None,
        use_count: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::sample as grant;
    use super::*;

    #[test]
    fn a_grant_binds_one_jobs_command_in_one_folder_until_revoked() {
        assert_eq!(crate::ids::key::cron_job("agent:main:cron:j1"), Some("j1"));
        assert_eq!(crate::ids::key::cron_job("agent:main:main"), None);
        assert_eq!(crate::ids::key::cron_job("agent:main:cron:j1:x"), None);
        let mut g = Grants::default();
        g.mint(grant("g1", "j1"));
        assert_eq!(g.find("main", "j1", "echo hi", "/w", 5), Some(0));
        assert_eq!(g.find("main", "j2", "echo hi", "/w", 5), None);
        assert_eq!(g.find("main", "j1", "echo hi; rm -rf /", "/w", 5), None);
        assert_eq!(g.find("main", "j1", "echo hi", "/elsewhere", 5), None);
        g.used(0, 6);
        assert_eq!(
            (g.grants[0].use_count, g.grants[0].last_used_at_ms),
            (1, Some(6))
        );
        assert_eq!(g.revoke("g1", "op", 7), Revoked::Revoked);
        assert_eq!(g.revoke("g1", "op", 8), Revoked::AlreadyRevoked);
        assert_eq!(g.revoke("nope", "op", 8), Revoked::NotFound);
        assert_eq!(g.find("main", "j1", "echo hi", "/w", 9), None);
        g.mint(grant("g2", "j1"));
        assert_eq!(g.newest(1)[0].grant_id, "g2");
    }
}
