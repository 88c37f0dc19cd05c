//! `progressCard.get` / `progressCard.put`: a session's progress card, as
//! the session's row keeps it (`session::card`), in OpenClaw's shape; a put
//! (from a client or the `progress_card` tool) publishes
//! `progressCard.changed` so open dashboards read it again.

use ferroclaw_actors::ids::SessionKey;
use ferroclaw_actors::session::card::{CardPut, CardStep, ProgressCard};
use ferroclaw_actors::session::{CardPutError, PutProgressCard};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{agent_session_key, down, json, params, session_for, store_err, MethodResult};
use crate::protocol::errors::ErrorShape;
use crate::state::SharedState;

/// The card as OpenClaw's clients read it (None: no card).
fn shown(key: &SessionKey, card: Option<&ProgressCard>) -> Value {
    match card {
        None => Value::Null,
        Some(c) => {
            let mut v = json!(c);
            v["sessionKey"] = json!(key.as_str());
            v
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GetParams {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
}

/// `progressCard.get`: `{card}` (null when the session has none).
pub async fn get(state: &SharedState, p: &Value) -> MethodResult {
    let p: GetParams = params("progressCard.get", p)?;
    let key = agent_session_key(state, &p.session_key, p.agent_id.as_deref())?;
    let card = super::lookup(state, &key)
        .await?
        .and_then(|e| e.progress_card);
    json(json!({ "card": shown(&key, card.as_ref()) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PutParams {
    session_key: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    markdown: Option<String>,
    #[serde(default)]
    plan: Option<Vec<CardStep>>,
    #[serde(default)]
    expected_revision: Option<u64>,
}

/// Replaces `key`'s card; tells dashboards. Reply: the card now.
pub(crate) async fn put(
    state: &SharedState,
    key: &SessionKey,
    put: CardPut,
) -> Result<Option<ProgressCard>, ErrorShape> {
    let session = session_for(state, key.clone()).await?;
    let card = match session.send(PutProgressCard { put }).await.map_err(down)? {
        Ok(card) => card,
        Err(CardPutError::Invalid(e)) => return Err(ErrorShape::invalid(e.to_string())),
        Err(CardPutError::Store(e)) => return Err(store_err(e)),
    };
    let revision = card.as_ref().map(|c| c.revision);
    state.publish(
        "progressCard.changed",
        json!({ "sessionKey": key.as_str(), "revision": revision }),
    );
    Ok(card)
}

/// `progressCard.put`: `{card}` after the replacement (null: cleared).
pub async fn put_method(state: &SharedState, p: &Value) -> MethodResult {
    let p: PutParams = params("progressCard.put", p)?;
    let key = agent_session_key(state, &p.session_key, p.agent_id.as_deref())?;
    let card = put(
        state,
        &key,
        CardPut {
            markdown: p.markdown,
            plan: p.plan,
            expected_revision: p.expected_revision,
        },
    )
    .await?;
    json(json!({ "card": shown(&key, card.as_ref()) }))
}
