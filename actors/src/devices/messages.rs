//! The device registry's inbox: checks at connect, device tokens, the
//! pairing list and its decisions. Each says what its reply means; every
//! mutation replies after the store is flushed.

use actix::prelude::*;

use super::*;
use crate::store::StoreError;

/// Outcome of checking a connecting device against the paired set.
#[derive(Debug, Clone)]
pub enum DeviceDecision {
    /// Paired and covered: go on.
    Paired(DeviceRecord),
    /// Was not paired; approved silently (direct local connection).
    AutoApproved {
        record: Box<DeviceRecord>,
        request: Box<PairingRequest>,
    },
    /// Needs an operator's approval.
    PairingRequired(PairingRequest),
}

/// Checks a signed device at connect. `local` allows silent approval of a
/// first pairing (never of role or scope upgrades).
#[derive(Debug, Message)]
#[rtype(result = "Result<DeviceDecision, StoreError>")]
pub struct CheckDevice {
    pub claim: DeviceClaim,
    pub local: bool,
    /// The connect proved the gateway's shared secret (token, password, or
    /// auth `none`), not only a device token.
    pub shared_secret: bool,
}

/// Returns the device's token for `role`, minting one when none exists or
/// its scopes differ. Reply: the token to put in hello-ok.
#[derive(Debug, Message)]
#[rtype(result = "Result<DeviceToken, StoreError>")]
pub struct EnsureDeviceToken {
    pub device_id: String,
    pub role: String,
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCheck {
    Valid,
    Mismatch,
    ScopeMismatch,
}

/// Verifies a device token presented at connect.
#[derive(Debug, Message)]
#[rtype(result = "Result<TokenCheck, StoreError>")]
pub struct VerifyDeviceToken {
    pub device_id: String,
    pub role: String,
    pub scopes: Vec<String>,
    pub token: String,
}

/// Which paired device holds this operator token (the Control UI sends
/// its device token as the bearer of its HTTP reads). Reply: the device id.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<String>, StoreError>")]
pub struct FindOperatorToken {
    pub token: String,
}

/// Pending requests and paired devices.
#[derive(Debug, Message)]
#[rtype(result = "Result<(Vec<PairingRequest>, Vec<DeviceRecord>), StoreError>")]
pub struct ListPairing;

/// Approves a pending request. Reply: None when the request is unknown.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<(PairingRequest, DeviceRecord)>, StoreError>")]
pub struct ApprovePairing {
    pub request_id: String,
    pub display_name: Option<String>,
}

/// Rejects a pending request. Reply: None when unknown.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<PairingRequest>, StoreError>")]
pub struct RejectPairing {
    pub request_id: String,
}

/// Forgets a paired device and its tokens. Reply: whether it existed.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct RemoveDevice {
    pub device_id: String,
}

/// Replaces the device's token for a role. Reply: None when the device or
/// role is not paired, or the scopes exceed the approved ones (or, for an
/// operator token, `caller_scopes`: a caller never mints more than it has).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<DeviceToken>, StoreError>")]
pub struct RotateDeviceToken {
    pub device_id: String,
    pub role: String,
    pub scopes: Option<Vec<String>>,
    /// The caller's scopes when it is not an admin.
    pub caller_scopes: Option<Vec<String>>,
}

/// Names a paired device (`device.pair.rename`).
#[derive(Debug, Message)]
#[rtype(result = "Result<Renamed, StoreError>")]
pub struct RenameDevice {
    pub device_id: String,
    pub label: String,
    /// Refuse a device that holds any role but `operator` (a non-admin
    /// caller with a device of its own).
    pub operators_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renamed {
    Done,
    UnknownDevice,
    /// The device holds a role only an admin manages.
    Denied,
}

/// Revokes the device's token for a role. Reply: whether one existed.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct RevokeDeviceToken {
    pub device_id: String,
    pub role: String,
}

/// Takes one role (and its token) from a paired device; a device left with
/// no role is forgotten. Reply: whether the device held the role.
#[derive(Debug, Message)]
#[rtype(result = "Result<bool, StoreError>")]
pub struct RemoveDeviceRole {
    pub device_id: String,
    pub role: String,
}
