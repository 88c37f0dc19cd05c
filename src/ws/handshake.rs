//! `connect` processing, in protocol.md 2.3 order: params, protocol, role,
//! browser origin, rate limit, shared secret, device identity (signature,
//! device token, pairing), scope trust, then the hello-ok snapshot.
//!
//! Trust paths for device-less operator connections (they keep the scopes
//! they ask for; every other device-less connection gets none):
//! - a direct loopback connection of a `cli`, `gateway-client` or
//!   `ferroclaw-cli` client that presented the valid shared token/password,
//!   or connected with `gateway.auth.mode: none` (loopback only);
//! - Control UI / webchat clients with `gateway.controlUi.allowInsecureAuth`
//!   on a direct loopback connection, or `dangerouslyDisableDeviceAuth`.

use std::sync::Arc;

use ferroclaw_actors::audit::{Activity, ControlActivity, End, Who};
use ferroclaw_actors::devices::{
    ask_devices, CheckDevice, DeviceClaim, DeviceDecision, DeviceToken, EnsureDeviceToken,
    TokenCheck, VerifyDeviceToken,
};
use ferroclaw_actors::gateway::GetHealth;
use ferroclaw_actors::ids::ConnId;
use ferroclaw_actors::presence::{ListPresence, PresenceEntry, UpsertPresence};
use ferroclaw_actors::scopes::Role;
use ferroclaw_actors::settings::{AuthMode, Settings};
use serde_json::{json, Value};

use super::caller::Caller;
use super::Origin;
use crate::protocol::connect::{negotiate, parse_connect_params, ConnectParams};
use crate::protocol::device_auth::{self, SignedFields};
use crate::protocol::errors::{ErrorCode, ErrorShape};
use crate::protocol::hello::{hello_ok, Hello};
use crate::protocol::PROTOCOL_VERSION;
use crate::state::SharedState;

/// Signed device connects are accepted within this clock skew.
pub const DEVICE_SIGNATURE_SKEW_MS: u64 = 120_000;

pub struct Input {
    pub state: SharedState,
    pub settings: Arc<Settings>,
    pub origin: Origin,
    pub conn_id: ConnId,
    pub nonce: String,
    pub params: Value,
}

pub struct Accepted {
    pub caller: Arc<Caller>,
    pub hello: Value,
    pub presence_key: Option<String>,
    /// A node's declaration (role `node`; its id is its device's).
    pub node: Option<(String, ferroclaw_actors::nodes::NodeDeclaration)>,
}

pub struct Rejected {
    pub error: ErrorShape,
    pub close_code: u16,
    pub close_reason: String,
}

impl Rejected {
    fn policy(error: ErrorShape) -> Rejected {
        let reason = error.message.clone();
        Rejected {
            error,
            close_code: 1008,
            close_reason: reason,
        }
    }
}

fn unavailable(what: &str) -> Rejected {
    Rejected {
        error: ErrorShape::unavailable(format!("{what} unavailable")).retry_after(1000),
        close_code: 1013,
        close_reason: "gateway unavailable".into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shared {
    Ok(&'static str),
    Missing,
    Mismatch,
    NotConfigured,
}

fn is_control_ui(p: &ConnectParams) -> bool {
    matches!(
        p.client.id.as_str(),
        "openclaw-control-ui" | "webchat-ui" | "webchat" | "ferroclaw-webchat"
    ) || p.client.mode == "webchat"
}

fn hint(p: &ConnectParams, mode: AuthMode) -> &'static str {
    match (is_control_ui(p), p.client.id.as_str(), mode) {
        // ferroclaw's own web chat asks for the token itself.
        (true, "ferroclaw-webchat", AuthMode::Password) => {
            "enter the gateway password (gateway.auth.password) on this page"
        }
        (true, "ferroclaw-webchat", _) => {
            "paste the gateway token here: it is in <state dir>/gateway.token (or gateway.auth.token)"
        }
        (true, _, _) => "open the dashboard URL and paste the token in Control UI settings",
        (false, "cli", AuthMode::Password) => {
            "set gateway.remote.password to match gateway.auth.password"
        }
        (false, "cli", _) => "set gateway.remote.token to match gateway.auth.token",
        (false, _, AuthMode::Password) => "provide gateway auth password",
        _ => "provide gateway auth token",
    }
}

fn check_shared(settings: &Settings, p: &ConnectParams) -> Shared {
    let auth = p.auth.clone().unwrap_or_default();
    let (configured, given, method) = match settings.gateway.auth.mode {
        AuthMode::None => return Shared::Ok("none"),
        AuthMode::Token => (&settings.gateway.auth.token, auth.token, "token"),
        AuthMode::Password => (&settings.gateway.auth.password, auth.password, "password"),
    };
    match (configured.as_deref().filter(|c| !c.is_empty()), given) {
        (None, _) => Shared::NotConfigured,
        (Some(_), None) => Shared::Missing,
        (Some(c), Some(g)) if ferroclaw_actors::devices::secret_eq(c, &g) => Shared::Ok(method),
        (Some(_), Some(_)) => Shared::Mismatch,
    }
}

fn auth_error(settings: &Settings, p: &ConnectParams, shared: Shared) -> ErrorShape {
    let mode = settings.gateway.auth.mode;
    let what = if mode == AuthMode::Password {
        "password"
    } else {
        "token"
    };
    let (text, code, reason, next) = match shared {
        Shared::Missing => (
            format!("unauthorized: gateway {what} missing ({})", hint(p, mode)),
            if mode == AuthMode::Password {
                "AUTH_PASSWORD_MISSING"
            } else {
                "AUTH_TOKEN_MISSING"
            },
            format!("{what}_missing"),
            "update_auth_credentials",
        ),
        Shared::Mismatch => (
            format!("unauthorized: gateway {what} mismatch ({})", hint(p, mode)),
            if mode == AuthMode::Password {
                "AUTH_PASSWORD_MISMATCH"
            } else {
                "AUTH_TOKEN_MISMATCH"
            },
            format!("{what}_mismatch"),
            "update_auth_credentials",
        ),
        Shared::NotConfigured => (
            format!(
                "unauthorized: gateway {what} not configured on gateway (set gateway.auth.{what})"
            ),
            if mode == AuthMode::Password {
                "AUTH_PASSWORD_NOT_CONFIGURED"
            } else {
                "AUTH_TOKEN_NOT_CONFIGURED"
            },
            format!("{what}_not_configured"),
            "update_auth_configuration",
        ),
        Shared::Ok(_) => (
            "unauthorized".to_string(),
            "AUTH_UNAUTHORIZED",
            "unauthorized".into(),
            "review_auth_configuration",
        ),
    };
    ErrorShape::invalid(text).with_details(json!({
        "code": code,
        "authReason": reason,
        "canRetryWithDeviceToken": false,
        "recommendedNextStep": next,
    }))
}

fn device_error(message: &str, code: &str, reason: &str) -> Rejected {
    Rejected::policy(
        ErrorShape::invalid(message).with_details(json!({ "code": code, "reason": reason })),
    )
}

fn origin_allowed(settings: &Settings, origin: &Origin) -> bool {
    let Some(o) = origin.origin_header.as_deref() else {
        return true;
    };
    if settings
        .gateway
        .control_ui
        .allowed_origins
        .iter()
        .any(|a| a == o || a == "*")
    {
        return true;
    }
    let origin_host = o.split("://").nth(1).unwrap_or(o).trim_end_matches('/');
    origin
        .host_header
        .as_deref()
        .is_some_and(|h| h.eq_ignore_ascii_case(origin_host))
}

/// What the checks of one `connect` read.
struct Connect<'a> {
    state: &'a SharedState,
    settings: &'a Settings,
    origin: &'a Origin,
    p: &'a ConnectParams,
    role: Role,
    /// The scopes the client asks for.
    requested: &'a [String],
    nonce: &'a str,
}

/// What the client is let in with.
struct Granted {
    scopes: Vec<String>,
    auth_method: &'static str,
    device_token: Option<DeviceToken>,
    device_id: Option<String>,
}

/// Runs the whole `connect`; the connection sends the result.
pub async fn connect(input: Input) -> Result<Accepted, Rejected> {
    let Input {
        state,
        settings,
        origin,
        conn_id,
        nonce,
        params,
    } = input;
    let (p, protocol, role) = preflight(&state, &settings, &origin, &params)?;
    let requested: Vec<String> = p.scopes.clone().unwrap_or_default();
    let c = Connect {
        state: &state,
        settings: &settings,
        origin: &origin,
        p: &p,
        role,
        requested: &requested,
        nonce: &nonce,
    };
    let shared = check_shared(&settings, &p);
    let granted = match &p.device {
        Some(dev) => c.with_device(dev, shared).await?,
        None => c.without_device(shared)?,
    };
    state.auth_succeeded(origin.ip);
    let presence_key = c.announce(&conn_id, &granted).await;
    let hello = c.hello(protocol, &conn_id, &granted).await?;
    let node = match (&granted.device_id, role) {
        (Some(id), Role::Node) => Some((id.clone(), c.declaration())),
        _ => None,
    };
    let caller = Arc::new(Caller {
        conn_id,
        role,
        scopes: granted.scopes,
        device_id: granted.device_id,
        client_id: p.client.id.clone(),
        client_mode: p.client.mode.clone(),
        instance_id: p.client.instance_id.clone(),
        ip: origin.ip,
        caps: p.caps.clone(),
    });
    Ok(Accepted {
        caller,
        hello,
        presence_key,
        node,
    })
}

/// The checks before any credential: params, protocol, role, browser
/// origin, the failed-auth rate limit.
fn preflight(
    state: &SharedState,
    settings: &Settings,
    origin: &Origin,
    params: &Value,
) -> Result<(ConnectParams, u32, Role), Rejected> {
    let p = parse_connect_params(params).map_err(|e| {
        Rejected::policy(ErrorShape::invalid(format!("invalid connect params: {e}")))
    })?;
    let Some(protocol) = negotiate(p.min_protocol, p.max_protocol) else {
        return Err(Rejected {
            error: ErrorShape::invalid("protocol mismatch")
                .with_details(json!({ "expectedProtocol": PROTOCOL_VERSION })),
            close_code: 1002,
            close_reason: "protocol mismatch".into(),
        });
    };
    let role = match p.role.as_deref() {
        None => Role::Operator,
        Some(r) => {
            Role::parse(r).ok_or_else(|| Rejected::policy(ErrorShape::invalid("invalid role")))?
        }
    };
    if !origin_allowed(settings, origin) {
        return Err(Rejected::policy(
            ErrorShape::invalid(
                "origin not allowed (open the Control UI from the gateway host or allow it in gateway.controlUi.allowedOrigins)",
            )
            .with_details(json!({ "code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": "origin-mismatch" })),
        ));
    }
    if let Err(retry_ms) = state.auth_locked(origin.ip) {
        let mut e = ErrorShape::invalid(
            "unauthorized: too many failed authentication attempts (retry later)",
        )
        .with_details(json!({
            "code": "AUTH_RATE_LIMITED",
            "authReason": "rate_limited",
            "canRetryWithDeviceToken": false,
            "recommendedNextStep": "wait_then_retry",
        }));
        e.retry_after_ms = Some(retry_ms);
        e.retryable = Some(true);
        return Err(Rejected::policy(e));
    }
    Ok((p, protocol, role))
}

/// A device store call's failure, logged once.
fn store_failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Rejected {
    move |e| {
        tracing::error!(error = %e, "{what} failed");
        unavailable("store")
    }
}

impl Connect<'_> {
    /// A device connect: its signature, then the shared secret or its
    /// device token, then pairing; a device token is issued.
    async fn with_device(
        &self,
        dev: &crate::protocol::connect::DeviceParams,
        shared: Shared,
    ) -> Result<Granted, Rejected> {
        let key = self.verify_signature(dev)?;
        let auth_method = match shared {
            Shared::Ok(m) => m,
            other => self.check_device_token(dev, other).await?,
        };
        self.pair(dev, &key, matches!(shared, Shared::Ok(_)))
            .await?;
        let gw = &self.state.gateway;
        let issue = EnsureDeviceToken {
            device_id: dev.id.clone(),
            role: self.role.as_str().to_string(),
            scopes: self.requested.to_vec(),
        };
        let token: DeviceToken = ask_devices(&gw.devices, &gw.metrics, issue)
            .await
            .map_err(|_| unavailable("device registry"))?
            .map_err(store_failed("device token issue"))?;
        Ok(Granted {
            scopes: self.requested.to_vec(),
            auth_method,
            device_token: Some(token),
            device_id: Some(dev.id.clone()),
        })
    }

    /// The device's key, id, freshness, nonce and signature (over any of
    /// the tokens it may have signed with).
    fn verify_signature(
        &self,
        dev: &crate::protocol::connect::DeviceParams,
    ) -> Result<[u8; 32], Rejected> {
        let Some(key) = device_auth::normalize_public_key(&dev.public_key) else {
            return Err(device_error(
                "device public key invalid",
                "DEVICE_AUTH_PUBLIC_KEY_INVALID",
                "device-public-key",
            ));
        };
        if device_auth::device_id_for(&key) != dev.id {
            return Err(device_error(
                "device identity mismatch",
                "DEVICE_AUTH_DEVICE_ID_MISMATCH",
                "device-id-mismatch",
            ));
        }
        let now = ferroclaw_actors::now_ms();
        if now.abs_diff(dev.signed_at) > DEVICE_SIGNATURE_SKEW_MS {
            return Err(device_error(
                "device signature expired",
                "DEVICE_AUTH_SIGNATURE_EXPIRED",
                "device-signature-stale",
            ));
        }
        let dev_nonce = dev.nonce.as_deref().map(str::trim).unwrap_or("");
        if dev_nonce.is_empty() {
            return Err(device_error(
                "device nonce required",
                "DEVICE_AUTH_NONCE_REQUIRED",
                "device-nonce-missing",
            ));
        }
        if dev_nonce != self.nonce {
            return Err(device_error(
                "device nonce mismatch",
                "DEVICE_AUTH_NONCE_MISMATCH",
                "device-nonce-mismatch",
            ));
        }
        let signed = self.signed(dev, &key);
        if !signed {
            return Err(device_error(
                "device signature invalid",
                "DEVICE_AUTH_SIGNATURE_INVALID",
                "device-signature",
            ));
        }
        Ok(key)
    }

    /// Whether the device signed this connect, over any of the tokens it
    /// may have signed with (the shared one, its device token, a bootstrap
    /// token, none).
    fn signed(&self, dev: &crate::protocol::connect::DeviceParams, key: &[u8; 32]) -> bool {
        let p = self.p;
        let auth = p.auth.clone().unwrap_or_default();
        let candidates = [
            auth.token.as_deref(),
            auth.device_token.as_deref(),
            auth.bootstrap_token.as_deref(),
            Some(""),
        ];
        candidates.iter().flatten().any(|token| {
            let fields = SignedFields {
                device_id: &dev.id,
                client_id: &p.client.id,
                client_mode: &p.client.mode,
                role: self.role.as_str(),
                scopes: self.requested,
                signed_at_ms: dev.signed_at,
                token,
                nonce: self.nonce,
                platform: &p.client.platform,
                device_family: p.client.device_family.as_deref().unwrap_or(""),
            };
            device_auth::verify(key, &dev.signature, &fields)
        })
    }

    /// Without the shared secret, a device gets in with its own token.
    async fn check_device_token(
        &self,
        dev: &crate::protocol::connect::DeviceParams,
        shared: Shared,
    ) -> Result<&'static str, Rejected> {
        let auth = self.p.auth.clone().unwrap_or_default();
        let Some(token) = auth.device_token.or(auth.token) else {
            self.state.auth_failed(self.origin.ip);
            return Err(Rejected::policy(auth_error(self.settings, self.p, shared)));
        };
        let gw = &self.state.gateway;
        let verify = VerifyDeviceToken {
            device_id: dev.id.clone(),
            role: self.role.as_str().to_string(),
            scopes: self.requested.to_vec(),
            token,
        };
        let check = ask_devices(&gw.devices, &gw.metrics, verify)
            .await
            .map_err(|_| unavailable("device registry"))?
            .map_err(store_failed("device token check"))?;
        let (code, text) = match check {
            TokenCheck::Valid => return Ok("device-token"),
            TokenCheck::Mismatch => (
                "AUTH_DEVICE_TOKEN_MISMATCH",
                "unauthorized: device token mismatch (rotate/reissue device token)",
            ),
            TokenCheck::ScopeMismatch => (
                "AUTH_DEVICE_TOKEN_SCOPE_MISMATCH",
                "unauthorized: device token scope mismatch (rotate/reissue device token)",
            ),
        };
        self.state.auth_failed(self.origin.ip);
        Err(Rejected::policy(ErrorShape::invalid(text).with_details(
            json!({
                "code": code,
                "authReason": "device_token_mismatch",
                "canRetryWithDeviceToken": false,
                "recommendedNextStep": "update_auth_credentials",
            }),
        )))
    }

    /// Approved by the gateway's own rule (a local client, a scope
    /// upgrade on loopback): recorded and announced.
    fn auto_approved(&self, request: &ferroclaw_actors::devices::PairingRequest) {
        let gw = &self.state.gateway;
        gw.audit_log.record(Activity::Control(ControlActivity {
            action: "device.pairing.approved".into(),
            outcome: End::Succeeded,
            actor: Who::System("local-auto-approval".into()),
            subject: Some(request.request_id.clone()),
            decision: None,
            paths: Vec::new(),
        }));
        self.state.publish(
            "device.pair.resolved",
            json!({
                "requestId": request.request_id, "deviceId": request.device_id,
                "decision": "approved", "ts": ferroclaw_actors::now_ms(),
            }),
        );
    }

    /// A device the operator has not approved: the request recorded and
    /// announced, the connect refused with its id.
    fn pairing_required(&self, request: &ferroclaw_actors::devices::PairingRequest) -> Rejected {
        let (gw, p) = (&self.state.gateway, self.p);
        let reason = request.reason.as_str();
        gw.audit_log.record(Activity::Control(ControlActivity {
            action: "device.pairing.requested".into(),
            outcome: End::Blocked,
            actor: Who::System(format!("connect:{}", p.client.id)),
            subject: Some(request.request_id.clone()),
            decision: None,
            paths: Vec::new(),
        }));
        self.state.publish(
            "device.pair.requested",
            serde_json::to_value(request).unwrap_or(Value::Null),
        );
        Rejected {
            error: ErrorShape::new(ErrorCode::NotPaired, "pairing required").with_details(json!({
                "code": "PAIRING_REQUIRED", "requestId": request.request_id, "reason": reason,
            })),
            close_code: 1008,
            close_reason: format!(
                "pairing required: {reason} (requestId: {})",
                request.request_id
            ),
        }
    }

    /// The device is paired (or auto-approved, or a pairing request is
    /// published and the connect refused).
    async fn pair(
        &self,
        dev: &crate::protocol::connect::DeviceParams,
        key: &[u8; 32],
        shared_secret: bool,
    ) -> Result<(), Rejected> {
        let p = self.p;
        let claim = DeviceClaim {
            device_id: dev.id.clone(),
            public_key: device_auth::encode_public_key(key),
            display_name: p.client.display_name.clone(),
            platform: Some(p.client.platform.clone()),
            device_family: p.client.device_family.clone(),
            client_id: Some(p.client.id.clone()),
            client_mode: Some(p.client.mode.clone()),
            role: self.role.as_str().to_string(),
            scopes: self.requested.to_vec(),
            remote_ip: self.origin.ip.map(|i| i.to_string()),
        };
        let gw = &self.state.gateway;
        let check = CheckDevice {
            claim,
            local: self.origin.local,
            shared_secret,
        };
        let decision = ask_devices(&gw.devices, &gw.metrics, check)
            .await
            .map_err(|_| unavailable("device registry"))?
            .map_err(store_failed("pairing check"))?;
        match decision {
            DeviceDecision::Paired(_) => Ok(()),
            DeviceDecision::AutoApproved { request, .. } => {
                self.auto_approved(&request);
                Ok(())
            }
            DeviceDecision::PairingRequired(request) => Err(self.pairing_required(&request)),
        }
    }

    /// A device-less connect: the shared secret, then the trust paths of
    /// this file's doc (every other one gets no scopes).
    fn without_device(&self, shared: Shared) -> Result<Granted, Rejected> {
        let p = self.p;
        let auth_method = match shared {
            Shared::Ok(m) => m,
            other => {
                self.state.auth_failed(self.origin.ip);
                return Err(Rejected::policy(auth_error(self.settings, p, other)));
            }
        };
        if self.role == Role::Node {
            return Err(Rejected::policy(
                ErrorShape::new(ErrorCode::NotPaired, "device identity required")
                    .with_details(json!({ "code": "DEVICE_IDENTITY_REQUIRED", "reason": "device-identity-missing" })),
            ));
        }
        let ui = &self.settings.gateway.control_ui;
        let local = self.origin.local;
        let trusted = if is_control_ui(p) {
            if !(ui.dangerously_disable_device_auth || (ui.allow_insecure_auth && local)) {
                return Err(Rejected::policy(
                    ErrorShape::invalid("control ui requires device identity (use HTTPS or localhost secure context)")
                        .with_details(json!({ "code": "CONTROL_UI_DEVICE_IDENTITY_REQUIRED", "reason": "device-identity-missing" })),
                ));
            }
            true
        } else {
            let cli = matches!(
                p.client.id.as_str(),
                "cli" | "gateway-client" | "ferroclaw-cli"
            );
            local && cli
        };
        Ok(Granted {
            scopes: if trusted {
                self.requested.to_vec()
            } else {
                Vec::new()
            },
            auth_method,
            device_token: None,
            device_id: None,
        })
    }

    /// What a node declares at connect (OpenClaw's node session fields).
    fn declaration(&self) -> ferroclaw_actors::nodes::NodeDeclaration {
        let p = self.p;
        ferroclaw_actors::nodes::NodeDeclaration {
            display_name: p.client.display_name.clone(),
            platform: Some(p.client.platform.clone()),
            version: Some(p.client.version.clone()),
            device_family: p.client.device_family.clone(),
            model_identifier: p.client.model_identifier.clone(),
            client_id: Some(p.client.id.clone()),
            client_mode: Some(p.client.mode.clone()),
            remote_ip: self.origin.ip.map(|i| i.to_string()),
            caps: p.caps.clone(),
            commands: p.commands.clone().unwrap_or_default(),
            permissions: p.permissions.clone(),
            path_env: p.path_env.clone(),
        }
    }

    /// Presence for every client but one-off CLI commands: its key.
    async fn announce(&self, conn_id: &ConnId, g: &Granted) -> Option<String> {
        let p = self.p;
        if p.client.mode == "cli" {
            return None;
        }
        let key = p
            .client
            .instance_id
            .clone()
            .or_else(|| g.device_id.clone())
            .unwrap_or_else(|| conn_id.to_string());
        let entry = PresenceEntry {
            ts: ferroclaw_actors::now_ms(),
            host: p.client.display_name.clone(),
            ip: self.origin.ip.map(|i| i.to_string()),
            version: Some(p.client.version.clone()),
            platform: Some(p.client.platform.clone()),
            device_family: p.client.device_family.clone(),
            model_identifier: p.client.model_identifier.clone(),
            mode: Some(p.client.mode.clone()),
            reason: Some("connect".into()),
            device_id: g.device_id.clone(),
            roles: Some(vec![self.role.as_str().to_string()]),
            scopes: Some(g.scopes.clone()),
            instance_id: p.client.instance_id.clone(),
            ..Default::default()
        };
        let gw = &self.state.gateway;
        gw.metrics
            .presence_mailbox
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let upsert = UpsertPresence {
            key: key.clone(),
            entry,
            pinned: true,
        };
        let _ = gw.presence.send(upsert).await;
        Some(key)
    }

    /// The hello-ok payload: the snapshot (presence, health), the policy
    /// and what was granted.
    async fn hello(&self, protocol: u32, conn_id: &ConnId, g: &Granted) -> Result<Value, Rejected> {
        let gw = &self.state.gateway;
        let presence = gw
            .presence
            .send(ListPresence)
            .await
            .map_err(|_| unavailable("presence"))?;
        let health = gw
            .root
            .send(GetHealth)
            .await
            .map_err(|_| unavailable("health"))?;
        let live = self.state.live.get();
        let settings = self.settings;
        Ok(hello_ok(&Hello {
            protocol,
            conn_id: conn_id.as_str(),
            server_version: self.state.server_version,
            presence: &presence,
            health: &health.summary,
            state_version: gw.versions.current(),
            uptime_ms: gw.metrics.uptime_ms(),
            config_path: &live.sources.path.display().to_string(),
            state_dir: &self.state.state_dir.display().to_string(),
            default_agent_id: settings.default_agent_id(),
            main_key: &settings.session.main_key,
            auth_mode: settings.gateway.auth.mode.as_str(),
            auth_method: g.auth_method,
            role: self.role.as_str(),
            scopes: &g.scopes,
            device_token: g.device_token.as_ref(),
            max_payload: settings.gateway.max_payload,
            max_buffered_bytes: settings.gateway.max_buffered_bytes,
            tick_interval_ms: settings.gateway.tick_interval_ms,
        }))
    }
}
