//! The restore receipt (`gateway.restore.status`): `backup restore` writes
//! `restore.json` into the state dir it restores (inside the staging dir,
//! so it arrives with the restored files or not at all). A gateway that
//! starts on that dir reports it restored, `held` until what the restored
//! ledger owed is worked off, then `ready`; its first clean stop moves the
//! receipt to `restore.done.json`, and later starts report `not-restored`.
//! A crash leaves the receipt: the next start reports the restore again.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::archive::Manifest;

pub const RECEIPT: &str = "restore.json";
pub const SETTLED: &str = "restore.done.json";

/// What a restore recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// `restore-<ulid>`: the id `backup restore` printed.
    pub operation_id: String,
    /// SHA-256 of the archive's manifest (the recovery point).
    pub recovery_point: String,
    /// SHA-256 over every restored entry's path and SHA-256.
    pub acceptance_set: String,
    /// When the archive was made, and when it was restored.
    pub created_at_ms: u64,
    pub restored_at_ms: u64,
}

pub fn sha256_hex(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

impl Receipt {
    /// The receipt of restoring the archive of `manifest` now.
    pub fn of(manifest: &Manifest, now_ms: u64) -> Receipt {
        let point = serde_json::to_vec(manifest).unwrap_or_default();
        let set: String = manifest
            .entries
            .iter()
            .map(|e| format!("{}\0{}\n", e.path, e.sha256))
            .collect();
        Receipt {
            operation_id: format!("restore-{}", ulid::Ulid::generate()),
            recovery_point: sha256_hex(&point),
            acceptance_set: sha256_hex(set.as_bytes()),
            created_at_ms: manifest.created_at_ms,
            restored_at_ms: now_ms,
        }
    }

    /// Written into `dir` (the staging dir of a restore).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&dir.join(RECEIPT), &text)
    }
}

/// The receipt a state dir holds, with the SHA-256 of its bytes (None:
/// not restored, or restored and cleanly started since).
pub fn load(state_dir: &Path) -> Option<(Receipt, String)> {
    let bytes = std::fs::read(state_dir.join(RECEIPT)).ok()?;
    match serde_json::from_slice::<Receipt>(&bytes) {
        Ok(r) => Some((r, sha256_hex(&bytes))),
        Err(e) => {
            tracing::warn!(error = %e, "the restore receipt cannot be read; reported not restored");
            None
        }
    }
}

/// A clean stop: the restore is done with (kept as `restore.done.json`).
pub fn settle(state_dir: &Path) {
    let from = state_dir.join(RECEIPT);
    if from.exists() {
        if let Err(e) = std::fs::rename(&from, state_dir.join(SETTLED)) {
            tracing::warn!(error = %e, "cannot settle the restore receipt");
        }
    }
}

/// A gateway running on a restored state dir (loaded at start).
pub struct Restored {
    pub receipt: Receipt,
    /// SHA-256 of the receipt's bytes.
    pub receipt_sha: String,
    /// This process: `pid-<pid>-<start ms>`.
    pub generation: String,
    /// When the restored backlog was first seen worked off (0: not yet).
    pub ready_at_ms: std::sync::atomic::AtomicU64,
}

/// Who a restored admission is, OpenClaw's fields.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    pub runtime_lineage: String,
    pub lifecycle_owner_generation: String,
    pub destination_runtime_generation: String,
    pub restore_operation_id: String,
    pub destination_owner: String,
    pub admission_identity: String,
    pub recovery_point_id: String,
    pub acceptance_set_id: String,
    pub restore_receipt_identity: String,
}

/// `gateway.restore.status`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status")]
pub enum Status {
    #[serde(rename = "not-restored")]
    NotRestored,
    #[serde(rename = "held", rename_all = "camelCase")]
    Held {
        reason: &'static str,
        retry_after_ms: u64,
        #[serde(flatten)]
        identity: Identity,
    },
    #[serde(rename = "ready", rename_all = "camelCase")]
    Ready {
        #[serde(flatten)]
        identity: Identity,
        scheduler_identity: String,
        owner_readiness_identity: String,
        readiness_identity: String,
    },
}

impl Restored {
    pub fn new(receipt: Receipt, receipt_sha: String, started_ms: u64) -> Restored {
        Restored {
            receipt,
            receipt_sha,
            generation: format!("pid-{}-{started_ms}", std::process::id()),
            ready_at_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn identity(&self) -> Identity {
        let r = &self.receipt;
        Identity {
            runtime_lineage: format!(
                "ferroclaw:{}",
                &r.recovery_point[..16.min(r.recovery_point.len())]
            ),
            lifecycle_owner_generation: self.generation.clone(),
            destination_runtime_generation: format!("ferroclaw-{}", env!("CARGO_PKG_VERSION")),
            restore_operation_id: r.operation_id.clone(),
            destination_owner: "ferroclaw-gateway".to_string(),
            admission_identity: format!("{}/{}", r.operation_id, self.generation),
            recovery_point_id: r.recovery_point.clone(),
            acceptance_set_id: r.acceptance_set.clone(),
            restore_receipt_identity: self.receipt_sha.clone(),
        }
    }

    /// The answer, `ready` once the restored backlog was seen cleared.
    pub fn status(&self) -> Status {
        let identity = self.identity();
        let ready_at = self.ready_at_ms.load(std::sync::atomic::Ordering::Acquire);
        if ready_at == 0 {
            return Status::Held {
                reason: "owner-readiness",
                retry_after_ms: 1000,
                identity,
            };
        }
        let of = |what: &str| {
            sha256_hex(format!("{}\0{}\0{what}", self.receipt_sha, self.generation).as_bytes())
        };
        let scheduler = of("scheduler");
        let owner = of(&format!("owner-ready-at-{ready_at}"));
        Status::Ready {
            readiness_identity: sha256_hex(format!("{scheduler}\0{owner}").as_bytes()),
            scheduler_identity: scheduler,
            owner_readiness_identity: owner,
            identity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restored() -> Restored {
        let receipt = Receipt {
            operation_id: "restore-01J".into(),
            recovery_point: sha256_hex(b"manifest"),
            acceptance_set: sha256_hex(b"entries"),
            created_at_ms: 1,
            restored_at_ms: 2,
        };
        Restored::new(receipt, sha256_hex(b"receipt"), 3)
    }

    #[test]
    fn held_until_the_restored_backlog_is_seen_cleared_then_ready() {
        let r = restored();
        let held = serde_json::to_value(r.status()).unwrap();
        assert_eq!(
            (&held["status"], &held["reason"]),
            (&"held".into(), &"owner-readiness".into())
        );
        assert_eq!(held["restoreOperationId"], "restore-01J");
        assert!(held.get("readinessIdentity").is_none());
        r.ready_at_ms
            .store(99, std::sync::atomic::Ordering::Release);
        let ready = serde_json::to_value(r.status()).unwrap();
        assert_eq!(ready["status"], "ready");
        assert_eq!(ready["recoveryPointId"], sha256_hex(b"manifest"));
        assert_eq!(ready["readinessIdentity"].as_str().map(str::len), Some(64));
        assert!(ready.get("reason").is_none());
    }

    #[test]
    fn a_receipt_is_read_back_and_settled_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = restored().receipt;
        r.write(dir.path()).unwrap();
        let (back, sha) = load(dir.path()).unwrap();
        assert_eq!((back, sha.len()), (r, 64));
        settle(dir.path());
        assert!(load(dir.path()).is_none());
        assert!(dir.path().join(SETTLED).exists());
    }
}
