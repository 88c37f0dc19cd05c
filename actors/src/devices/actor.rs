//! DeviceRegistry actor: the single writer of the `devices` and `pairing`
//! trees. Every mutation is flushed before its reply resolves, so a device
//! token handed out in hello-ok survives a crash.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix::prelude::*;

use super::*;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError, Tree};

pub struct DeviceRegistry {
    /// The actor's span, entered by its handlers.
    span: tracing::Span,
    store: Store,
    metrics: Arc<Metrics>,
}

impl DeviceRegistry {
    pub fn new(store: Store, metrics: Arc<Metrics>) -> DeviceRegistry {
        DeviceRegistry {
            span: tracing::info_span!("devices"),
            store,
            metrics,
        }
    }

    fn received(&self) {
        self.metrics.devices_mailbox.fetch_sub(1, Ordering::Relaxed);
    }

    fn pending(&self) -> Result<Vec<PairingRequest>, StoreError> {
        let now = crate::now_ms();
        let mut out = Vec::new();
        for (key, req) in self.store.scan::<PairingRequest>(Tree::Pairing, "")? {
            if now.saturating_sub(req.ts) > PAIRING_REQUEST_TTL_MS {
                self.store.remove(Tree::Pairing, &key)?;
            } else {
                out.push(req);
            }
        }
        Ok(out)
    }

    fn check(&self, msg: CheckDevice) -> Result<DeviceDecision, StoreError> {
        let claim = msg.claim;
        let existing: Option<DeviceRecord> = self.store.get(Tree::Devices, &claim.device_id)?;
        let reason = match &existing {
            Some(rec) => match upgrade_needed(rec, &claim) {
                None => return Ok(DeviceDecision::Paired(rec.clone())),
                Some(r) => r,
            },
            None => PairingReason::NotPaired,
        };
        let now = crate::now_ms();
        // OpenClaw's: on this machine a first pairing is approved at once,
        // and so is a scope upgrade proven by the shared secret (a device
        // token alone never widens itself); from elsewhere, an operator.
        let silent = msg.local
            && (reason == PairingReason::NotPaired
                || (reason == PairingReason::ScopeUpgrade && msg.shared_secret));
        // One pending request per device and reason: a retrying client does
        // not flood operators with new request ids.
        let reuse = self.pending()?.into_iter().find(|r| {
            r.device_id == claim.device_id && r.reason == reason && r.public_key == claim.public_key
        });
        let mut request = reuse.unwrap_or_else(|| PairingRequest {
            request_id: ulid::Ulid::generate().to_string(),
            device_id: claim.device_id.clone(),
            public_key: claim.public_key.clone(),
            display_name: claim.display_name.clone(),
            platform: claim.platform.clone(),
            device_family: claim.device_family.clone(),
            client_id: claim.client_id.clone(),
            client_mode: claim.client_mode.clone(),
            role: claim.role.clone(),
            roles: vec![claim.role.clone()],
            scopes: claim.scopes.clone(),
            remote_ip: claim.remote_ip.clone(),
            silent,
            is_repair: existing.is_some(),
            reason,
            ts: now,
        });
        request.scopes = claim.scopes.clone();
        if silent {
            let record = apply_approval(existing, &request, None, now);
            self.store.put(Tree::Devices, &record.device_id, &record)?;
            self.store.remove(Tree::Pairing, &request.request_id)?;
            return Ok(DeviceDecision::AutoApproved {
                record: Box::new(record),
                request: Box::new(request),
            });
        }
        self.store
            .put(Tree::Pairing, &request.request_id, &request)?;
        Ok(DeviceDecision::PairingRequired(request))
    }

    fn ensure_token(&self, msg: EnsureDeviceToken) -> Result<DeviceToken, StoreError> {
        let mut rec: DeviceRecord = match self.store.get(Tree::Devices, &msg.device_id)? {
            Some(r) => r,
            None => {
                return Err(StoreError::Corrupt {
                    tree: "devices",
                    key: msg.device_id,
                    message: "device vanished during connect".into(),
                })
            }
        };
        if let Some(t) = rec.tokens.get(&msg.role) {
            if crate::scopes::scopes_cover(&t.scopes, &msg.scopes) {
                return Ok(t.clone());
            }
        }
        let token = DeviceToken {
            token: random_token(),
            role: msg.role.clone(),
            scopes: msg.scopes,
            issued_at_ms: crate::now_ms(),
        };
        rec.tokens.insert(msg.role, token.clone());
        self.store.put(Tree::Devices, &rec.device_id, &rec)?;
        Ok(token)
    }
}

impl Actor for DeviceRegistry {
    type Context = Context<Self>;
}

impl Supervised for DeviceRegistry {}

/// Sends to the registry and awaits the reply, counting the mailbox gauge.
pub async fn ask_devices<M>(
    addr: &Addr<DeviceRegistry>,
    metrics: &Metrics,
    msg: M,
) -> Result<M::Result, MailboxError>
where
    M: Message + Send + 'static,
    M::Result: Send,
    DeviceRegistry: Handler<M>,
{
    crate::metrics::counted_send(addr, &metrics.devices_mailbox, msg).await
}

/// Replies after a flush so the change is durable before anyone hears of it.
fn flushed<T: Send + 'static>(
    store: &Store,
    result: Result<T, StoreError>,
) -> ResponseFuture<Result<T, StoreError>> {
    let store = store.clone();
    Box::pin(async move {
        let value = result?;
        store.flush().await?;
        Ok(value)
    })
}

impl Handler<CheckDevice> for DeviceRegistry {
    type Result = ResponseFuture<Result<DeviceDecision, StoreError>>;
    fn handle(&mut self, msg: CheckDevice, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = self.check(msg);
        flushed(&self.store, r)
    }
}

impl Handler<EnsureDeviceToken> for DeviceRegistry {
    type Result = ResponseFuture<Result<DeviceToken, StoreError>>;
    fn handle(&mut self, msg: EnsureDeviceToken, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = self.ensure_token(msg);
        flushed(&self.store, r)
    }
}

impl Handler<VerifyDeviceToken> for DeviceRegistry {
    type Result = Result<TokenCheck, StoreError>;
    fn handle(&mut self, msg: VerifyDeviceToken, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let rec: Option<DeviceRecord> = self.store.get(Tree::Devices, &msg.device_id)?;
        let Some(tok) = rec.as_ref().and_then(|r| r.tokens.get(&msg.role)) else {
            return Ok(TokenCheck::Mismatch);
        };
        if !secret_eq(&tok.token, &msg.token) {
            return Ok(TokenCheck::Mismatch);
        }
        if !crate::scopes::scopes_cover(&tok.scopes, &msg.scopes) {
            return Ok(TokenCheck::ScopeMismatch);
        }
        Ok(TokenCheck::Valid)
    }
}

impl Handler<FindOperatorToken> for DeviceRegistry {
    type Result = Result<Option<String>, StoreError>;
    fn handle(&mut self, msg: FindOperatorToken, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        if msg.token.is_empty() {
            return Ok(None);
        }
        let found = self
            .store
            .scan::<DeviceRecord>(Tree::Devices, "")?
            .into_iter()
            .find(|(_, r)| {
                r.tokens
                    .get("operator")
                    .is_some_and(|t| secret_eq(&t.token, &msg.token))
            })
            .map(|(_, r)| r.device_id);
        Ok(found)
    }
}

impl Handler<ListPairing> for DeviceRegistry {
    type Result = Result<(Vec<PairingRequest>, Vec<DeviceRecord>), StoreError>;
    fn handle(&mut self, _: ListPairing, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let pending = self.pending()?;
        let paired = self
            .store
            .scan::<DeviceRecord>(Tree::Devices, "")?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        Ok((pending, paired))
    }
}

impl Handler<ApprovePairing> for DeviceRegistry {
    type Result = ResponseFuture<Result<Option<(PairingRequest, DeviceRecord)>, StoreError>>;
    fn handle(&mut self, msg: ApprovePairing, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let Some(req) = self
                .pending()?
                .into_iter()
                .find(|r| r.request_id == msg.request_id)
            else {
                return Ok(None);
            };
            let existing = self.store.get(Tree::Devices, &req.device_id)?;
            let rec = apply_approval(existing, &req, msg.display_name, crate::now_ms());
            self.store.put(Tree::Devices, &rec.device_id, &rec)?;
            self.store.remove(Tree::Pairing, &req.request_id)?;
            Ok(Some((req, rec)))
        })();
        flushed(&self.store, r)
    }
}

impl Handler<RejectPairing> for DeviceRegistry {
    type Result = ResponseFuture<Result<Option<PairingRequest>, StoreError>>;
    fn handle(&mut self, msg: RejectPairing, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let req: Option<PairingRequest> = self.store.get(Tree::Pairing, &msg.request_id)?;
            if req.is_some() {
                self.store.remove(Tree::Pairing, &msg.request_id)?;
            }
            Ok(req)
        })();
        flushed(&self.store, r)
    }
}

impl Handler<RemoveDevice> for DeviceRegistry {
    type Result = ResponseFuture<Result<bool, StoreError>>;
    fn handle(&mut self, msg: RemoveDevice, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = self.store.remove(Tree::Devices, &msg.device_id);
        flushed(&self.store, r)
    }
}

impl Handler<RemoveDeviceRole> for DeviceRegistry {
    type Result = ResponseFuture<Result<bool, StoreError>>;
    fn handle(&mut self, msg: RemoveDeviceRole, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let Some(mut rec) = self
                .store
                .get::<DeviceRecord>(Tree::Devices, &msg.device_id)?
            else {
                return Ok(false);
            };
            let had = rec.roles.iter().any(|r| r == &msg.role);
            rec.roles.retain(|r| r != &msg.role);
            rec.tokens.remove(&msg.role);
            if rec.roles.is_empty() {
                self.store.remove(Tree::Devices, &msg.device_id)?;
            } else {
                self.store.put(Tree::Devices, &msg.device_id, &rec)?;
            }
            Ok(had)
        })();
        flushed(&self.store, r)
    }
}

impl Handler<RotateDeviceToken> for DeviceRegistry {
    type Result = ResponseFuture<Result<Option<DeviceToken>, StoreError>>;
    fn handle(&mut self, msg: RotateDeviceToken, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let Some(mut rec) = self
                .store
                .get::<DeviceRecord>(Tree::Devices, &msg.device_id)?
            else {
                return Ok(None);
            };
            if !rec.roles.contains(&msg.role) {
                return Ok(None);
            }
            let scopes = msg
                .scopes
                .or_else(|| rec.tokens.get(&msg.role).map(|t| t.scopes.clone()))
                .unwrap_or_else(|| rec.scopes.clone());
            let beyond_caller = msg
                .caller_scopes
                .as_ref()
                .is_some_and(|c| !crate::scopes::scopes_cover(c, &scopes));
            if msg.role == "operator"
                && (!crate::scopes::scopes_cover(&rec.scopes, &scopes) || beyond_caller)
            {
                return Ok(None);
            }
            let token = DeviceToken {
                token: random_token(),
                role: msg.role.clone(),
                scopes,
                issued_at_ms: crate::now_ms(),
            };
            rec.tokens.insert(msg.role, token.clone());
            self.store.put(Tree::Devices, &rec.device_id, &rec)?;
            Ok(Some(token))
        })();
        flushed(&self.store, r)
    }
}

impl Handler<RenameDevice> for DeviceRegistry {
    type Result = ResponseFuture<Result<Renamed, StoreError>>;
    fn handle(&mut self, msg: RenameDevice, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let Some(mut rec) = self
                .store
                .get::<DeviceRecord>(Tree::Devices, &msg.device_id)?
            else {
                return Ok(Renamed::UnknownDevice);
            };
            if msg.operators_only && rec.roles.iter().any(|r| r != "operator") {
                return Ok(Renamed::Denied);
            }
            rec.operator_label = Some(msg.label);
            self.store.put(Tree::Devices, &rec.device_id, &rec)?;
            Ok(Renamed::Done)
        })();
        flushed(&self.store, r)
    }
}

impl Handler<RevokeDeviceToken> for DeviceRegistry {
    type Result = ResponseFuture<Result<bool, StoreError>>;
    fn handle(&mut self, msg: RevokeDeviceToken, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        self.received();
        let r = (|| {
            let Some(mut rec) = self
                .store
                .get::<DeviceRecord>(Tree::Devices, &msg.device_id)?
            else {
                return Ok(false);
            };
            let existed = rec.tokens.remove(&msg.role).is_some();
            if existed {
                self.store.put(Tree::Devices, &rec.device_id, &rec)?;
            }
            Ok(existed)
        })();
        flushed(&self.store, r)
    }
}
