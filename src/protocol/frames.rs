//! Frames: parsing `req` strictly (additionalProperties:false, string ids)
//! and writing `res`/`event` with absent optionals omitted.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::errors::ErrorShape;
use ferroclaw_actors::bus::StateVersion;

/// A client request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFrame {
    pub id: String,
    pub method: String,
    /// `params` omitted means `{}`.
    pub params: Value,
}

/// Why a text was not a valid request frame.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameError {
    /// Not JSON at all.
    NotJson,
    /// JSON, but not a valid request frame; `id` is the frame's string id if any.
    Invalid { id: Option<String>, errors: String },
}

impl FrameError {
    pub fn errors(&self) -> &str {
        match self {
            FrameError::NotJson => "frame is not valid JSON",
            FrameError::Invalid { errors, .. } => errors,
        }
    }
}

#[derive(Deserialize)]
struct Loose {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    #[serde(flatten)]
    extra: serde_json::Map<String, Value>,
}

/// `field`'s string when it is one and not empty, else None and the
/// schema's words for what it is instead.
fn non_empty(v: &Option<Value>, field: &str, errors: &mut Vec<String>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => return Some(s.clone()),
        Some(Value::String(_)) => errors.push(format!(
            "at /{field}: must NOT have fewer than 1 characters"
        )),
        Some(_) => errors.push(format!("at /{field}: must be string")),
        None => errors.push(format!("at root: must have required property '{field}'")),
    }
    None
}

/// Parses one inbound text frame as a request.
pub fn parse_request(text: &str) -> Result<RequestFrame, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| FrameError::NotJson)?;
    let Value::Object(_) = &value else {
        return Err(FrameError::Invalid {
            id: None,
            errors: "at root: must be object".into(),
        });
    };
    let loose: Loose = serde_json::from_value(value).map_err(|_| FrameError::NotJson)?;
    let mut errors = Vec::new();
    match &loose.kind {
        Some(Value::String(t)) if t == "req" => {}
        Some(Value::String(_)) => {
            errors.push("at /type: must be equal to constant \"req\"".to_string())
        }
        Some(_) => errors.push("at /type: must be string".to_string()),
        None => errors.push("at root: must have required property 'type'".to_string()),
    }
    let id = non_empty(&loose.id, "id", &mut errors);
    let method = non_empty(&loose.method, "method", &mut errors);
    if let Some(k) = loose.extra.keys().next() {
        errors.push(format!(
            "at root: must NOT have additional properties ({k})"
        ));
    }
    match (errors.is_empty(), id, method) {
        (true, Some(id), Some(method)) => Ok(RequestFrame {
            id,
            method,
            params: loose
                .params
                .unwrap_or_else(|| Value::Object(Default::default())),
        }),
        (_, id, _) => Err(FrameError::Invalid {
            id,
            errors: errors.join("; "),
        }),
    }
}

#[derive(Serialize)]
struct Res<'a, P: Serialize + ?Sized> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorShape>,
}

/// `{"type":"res","id":..,"ok":true,"payload":..}`.
pub fn res_ok<P: Serialize + ?Sized>(id: &str, payload: &P) -> String {
    serde_json::to_string(&Res {
        kind: "res",
        id,
        ok: true,
        payload: Some(payload),
        error: None,
    })
    .unwrap_or_default()
}

/// `{"type":"res","id":..,"ok":false,"error":{..}}` (payload only when given).
pub fn res_err(id: &str, error: &ErrorShape, payload: Option<&Value>) -> String {
    serde_json::to_string(&Res {
        kind: "res",
        id,
        ok: false,
        payload,
        error: Some(error),
    })
    .unwrap_or_default()
}

/// A replayed response: `ok`, `payload` and `error` exactly as cached.
pub fn res_cached(id: &str, ok: bool, payload: Option<&Value>, error: Option<&Value>) -> String {
    #[derive(Serialize)]
    struct Cached<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        payload: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a Value>,
    }
    serde_json::to_string(&Cached {
        kind: "res",
        id,
        ok,
        payload,
        error,
    })
    .unwrap_or_default()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    event: &'a str,
    payload: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_version: Option<StateVersion>,
}

/// `{"type":"event","event":..,"payload":..,"seq"?:..,"stateVersion"?:..}`.
pub fn event(
    name: &str,
    payload: &RawValue,
    seq: Option<u64>,
    state_version: Option<StateVersion>,
) -> String {
    serde_json::to_string(&Event {
        kind: "event",
        event: name,
        payload,
        seq,
        state_version,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::errors::ErrorShape;

    #[test]
    fn valid_requests_parse_and_params_default_to_empty_object() {
        let f = parse_request(r#"{"type":"req","id":"1","method":"health"}"#).unwrap();
        assert_eq!(f.id, "1");
        assert_eq!(f.method, "health");
        assert_eq!(f.params, serde_json::json!({}));
    }

    #[test]
    fn invalid_frames_say_why_and_keep_string_ids() {
        let check = |text: &str, want_id: Option<&str>, want: &str| match parse_request(text) {
            Err(FrameError::Invalid { id, errors }) => {
                assert_eq!(id.as_deref(), want_id, "{text}");
                assert!(errors.contains(want), "{text}: {errors}");
            }
            other => panic!("{text}: {other:?}"),
        };
        check(
            r#"{"type":"req","id":1,"method":"x"}"#,
            None,
            "/id: must be string",
        );
        check(
            r#"{"type":"event","id":"a","method":"x"}"#,
            Some("a"),
            "constant \"req\"",
        );
        check(r#"{"type":"req","id":"a"}"#, Some("a"), "'method'");
        check(
            r#"{"type":"req","id":"a","method":"x","extra":1}"#,
            Some("a"),
            "additional properties (extra)",
        );
        check(r#"[1]"#, None, "must be object");
        check(
            r#"{"type":"req","id":"","method":"x"}"#,
            None,
            "fewer than 1",
        );
        assert_eq!(parse_request("nope"), Err(FrameError::NotJson));
    }

    #[test]
    fn outbound_frames_omit_absent_optionals() {
        assert_eq!(
            res_ok("7", &serde_json::json!({"a":1})),
            r#"{"type":"res","id":"7","ok":true,"payload":{"a":1}}"#
        );
        assert_eq!(
            res_err("7", &ErrorShape::invalid("bad"), None),
            r#"{"type":"res","id":"7","ok":false,"error":{"code":"INVALID_REQUEST","message":"bad"}}"#
        );
        let raw = serde_json::value::to_raw_value(&serde_json::json!({"ts":1})).unwrap();
        assert_eq!(
            event("tick", &raw, Some(3), None),
            r#"{"type":"event","event":"tick","payload":{"ts":1},"seq":3}"#
        );
        assert_eq!(
            event("x", &raw, None, None),
            r#"{"type":"event","event":"x","payload":{"ts":1}}"#
        );
    }
}
