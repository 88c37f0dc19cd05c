//! Channel methods in OpenClaw's shapes: `channels.status` (every account's
//! measured health), `channels.logout` / `channels.stop` / `channels.start`,
//! and the operator's side of DM pairing (`channels.pairing.list`,
//! `.approve`, `.dismiss`; a request's id is its pairing code).

use ferroclaw_actors::channels::access::{PairingRequest, CODE_TTL_MS, MAX_PENDING};
use ferroclaw_actors::channels::health::label;
use ferroclaw_actors::channels::{
    AccountStatus, ChannelsStatus, Logout, Pairing, PairingAnswer, Probe, ProbeAccounts,
    StartAccount,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json, params, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

fn down() -> ErrorShape {
    ErrorShape::unavailable("channels unavailable").retry_after(1000)
}

async fn accounts(state: &SharedState) -> Result<Vec<AccountStatus>, ErrorShape> {
    state
        .gateway
        .channels
        .send(ChannelsStatus)
        .await
        .map_err(|_| down())
}

fn account_json(a: &AccountStatus) -> Value {
    let mut v = a.health.to_json();
    v["enabled"] = json!(true);
    v["configured"] = json!(a.configured);
    v["linked"] = json!(!a.logged_out);
    v["mode"] = json!(a.mode);
    v["dmPolicy"] = json!(a.dm_policy);
    v["allowFrom"] = json!(a.allow_from);
    v["tokenSource"] = json!(a.token_source);
    v["baseUrl"] = json!(a.api_base);
    v["streamMode"] = json!(a.stream_mode);
    v
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StatusParams {
    #[serde(default)]
    probe: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    channel: Option<String>,
}

/// A probe's deadline when none is asked (OpenClaw's).
const PROBE_DEFAULT_MS: u64 = 10_000;
/// The longest a probe may take.
const PROBE_MAX_MS: u64 = 30_000;

/// A probe as OpenClaw shows it.
fn probe_json(p: &Probe) -> Value {
    let mut v = json!({ "ok": p.ok, "status": null, "error": p.error, "elapsedMs": p.elapsed_ms });
    if let Some(b) = &p.bot {
        v["bot"] = b.clone();
    }
    v
}

/// Each account probed on its platform now (`probe: true`).
async fn probes(
    state: &SharedState,
    p: &StatusParams,
) -> Result<Vec<((String, String), Probe)>, ErrorShape> {
    if p.probe != Some(true) {
        return Ok(Vec::new());
    }
    let ms = p
        .timeout_ms
        .unwrap_or(PROBE_DEFAULT_MS)
        .clamp(1, PROBE_MAX_MS);
    let asked = ProbeAccounts {
        channel: p.channel.clone(),
        limit: std::time::Duration::from_millis(ms),
    };
    state.gateway.channels.send(asked).await.map_err(|_| down())
}

/// `channels.status`: every account's measured health; with `probe: true`
/// each account's platform asked now (`probe`, `lastProbeAt`).
pub async fn status(state: &SharedState, p: &Value) -> MethodResult {
    let p: StatusParams = params("channels.status", &default_obj(p))?;
    let probed = probes(state, &p).await?;
    let list = accounts(state).await?;
    let mut order: Vec<String> = Vec::new();
    let (mut labels, mut detail, mut channels, mut by_channel, mut defaults) = (
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    );
    let mut meta = Vec::new();
    for a in list
        .iter()
        .filter(|a| p.channel.as_ref().is_none_or(|c| *c == a.health.channel))
    {
        let ch = a.health.channel.clone();
        if !order.contains(&ch) {
            order.push(ch.clone());
            labels.insert(ch.clone(), json!(label(&ch)));
            detail.insert(ch.clone(), json!(format!("{} Bot", label(&ch))));
            meta.push(json!({ "id": ch, "label": label(&ch), "detailLabel": format!("{} Bot", label(&ch)) }));
            defaults.insert(ch.clone(), json!(a.health.account_id));
        }
        let mut v = account_json(a);
        let key = (ch.clone(), a.health.account_id.clone());
        if let Some((_, probe)) = probed.iter().find(|(k, _)| *k == key) {
            v["probe"] = probe_json(probe);
            v["lastProbeAt"] = json!(probe.at_ms);
        }
        if a.health.account_id == "default" || !channels.contains_key(&ch) {
            channels.insert(ch.clone(), v.clone());
            defaults.insert(ch.clone(), json!(a.health.account_id));
        }
        if let Some(list) = by_channel
            .entry(ch)
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            list.push(v);
        }
    }
    json(json!({
        "ts": ferroclaw_actors::now_ms(),
        "channelOrder": order,
        "channelLabels": labels,
        "channelDetailLabels": detail,
        "channelSystemImages": {},
        "channelMeta": meta,
        "channels": channels,
        "channelAccounts": by_channel,
        "channelDefaultAccountId": defaults,
    }))
}

fn default_obj(p: &Value) -> Value {
    if p.is_null() {
        json!({})
    } else {
        p.clone()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AccountParams {
    channel: String,
    #[serde(default)]
    account_id: Option<String>,
}

/// `channels.logout` and `channels.stop`: the account stops polling until
/// `channels.start`, a config change or a restart.
pub async fn logout(state: &SharedState, method: &str, p: &Value) -> MethodResult {
    let p: AccountParams = params(method, p)?;
    let stopped = state
        .gateway
        .channels
        .send(Logout {
            channel: p.channel.clone(),
            account: p.account_id.clone(),
        })
        .await
        .map_err(|_| down())?;
    if !stopped.is_empty() {
        tracing::info!(channel = %p.channel, accounts = ?stopped, "channel accounts stopped by an operator");
    }
    // An account that is not configured has nothing to clear.
    let done = !stopped.is_empty();
    let account = stopped
        .first()
        .cloned()
        .or(p.account_id)
        .unwrap_or_else(|| "default".into());
    json(
        json!({ "channel": p.channel, "accountId": account, "cleared": done, "loggedOut": done, "stopped": stopped }),
    )
}

/// `channels.start`.
pub async fn start(state: &SharedState, p: &Value) -> MethodResult {
    let p: AccountParams = params("channels.start", p)?;
    let started = state
        .gateway
        .channels
        .send(StartAccount {
            channel: p.channel.clone(),
            account: p.account_id.clone(),
        })
        .await
        .map_err(|_| down())?;
    let account = started
        .first()
        .cloned()
        .or(p.account_id)
        .unwrap_or_else(|| "default".into());
    json(json!({ "channel": p.channel, "accountId": account, "started": started }))
}

fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

fn request_json(r: &PairingRequest) -> Value {
    json!({
        "requestId": r.code,
        "channel": r.channel,
        "channelLabel": label(&r.channel),
        "accountId": r.account_id,
        "senderId": r.sender,
        "senderLabel": r.sender_name.clone().unwrap_or_else(|| r.sender.clone()),
        "metadata": { "code": r.code },
        "createdAt": iso(r.created_ms),
        "lastSeenAt": iso(r.created_ms),
        "expiresAt": iso(r.expires_ms),
        "notifySupported": true,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ListParams {
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    account_id: Option<String>,
}

/// `channels.pairing.list`: the accounts that pair, and the codes waiting.
pub async fn pairing_list(state: &SharedState, p: &Value) -> MethodResult {
    let p: ListParams = params("channels.pairing.list", &default_obj(p))?;
    let answer = state
        .gateway
        .channels
        .send(Pairing::List {
            channel: p.channel.clone(),
        })
        .await
        .map_err(|_| down())?
        .map_err(super::store_err)?;
    let PairingAnswer::List(requests) = answer else {
        return Err(down());
    };
    let accounts: Vec<Value> = accounts(state)
        .await?
        .iter()
        .filter(|a| a.dm_policy == "pairing")
        .filter(|a| p.channel.as_ref().is_none_or(|c| *c == a.health.channel))
        .map(|a| {
            json!({ "channel": a.health.channel, "channelLabel": label(&a.health.channel),
                         "accountId": a.health.account_id, "notifySupported": true })
        })
        .collect();
    let requests: Vec<Value> = requests
        .iter()
        .filter(|r| p.account_id.as_ref().is_none_or(|a| *a == r.account_id))
        .map(request_json)
        .collect();
    json(json!({
        "accounts": accounts,
        "requests": requests,
        "commandOwnerConfigured": false,
        "limits": { "pendingPerAccount": MAX_PENDING, "ttlMs": CODE_TTL_MS },
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DecideParams {
    channel: String,
    account_id: String,
    request_id: String,
    #[serde(default)]
    notify: Option<bool>,
    #[serde(default)]
    bootstrap_command_owner: Option<bool>,
}

/// `channels.pairing.approve` and `.dismiss`.
pub async fn pairing_decide(state: &SharedState, method: &str, p: &Value) -> MethodResult {
    let p: DecideParams = params(method, p)?;
    let approve = method == "channels.pairing.approve";
    if !approve && (p.notify.is_some() || p.bootstrap_command_owner.is_some()) {
        return Err(ErrorShape::invalid(format!(
            "invalid {method} params: must NOT have additional properties"
        )));
    }
    let msg = if approve {
        Pairing::Approve {
            channel: p.channel.clone(),
            code: p.request_id.clone(),
            notify: p.notify != Some(false),
        }
    } else {
        Pairing::Dismiss {
            channel: p.channel.clone(),
            code: p.request_id.clone(),
        }
    };
    let answer = state
        .gateway
        .channels
        .send(msg)
        .await
        .map_err(|_| down())?
        .map_err(super::store_err)?;
    let PairingAnswer::Done(Some(r)) = answer else {
        return Err(ErrorShape::invalid(format!(
            "unknown or expired pairing request: {}",
            p.request_id
        )));
    };
    if r.account_id != p.account_id {
        tracing::warn!(account = %r.account_id, asked = %p.account_id, "pairing request decided under another account id");
    }
    if !approve {
        return json(json!({ "requestId": r.code, "senderId": r.sender }));
    }
    json(json!({
        "requestId": r.code,
        "senderId": r.sender,
        "notification": if p.notify == Some(false) { "not-requested" } else { "sent" },
        "commandOwnerBootstrap": if p.bootstrap_command_owner == Some(true) { "unavailable" } else { "not-requested" },
    }))
}
