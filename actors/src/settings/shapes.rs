//! The schemas of settings ferroclaw keeps as raw JSON (OpenClaw's keys it
//! carries through, or hands on as they are): the shape OpenClaw's own
//! config gives each, so its Control UI draws them as form fields (a raw
//! `Value` would be "any", which the form cannot draw).

use schemars::{json_schema, Schema, SchemaGenerator};

/// An object of OpenClaw's keys, edited as keys and values.
pub fn object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "additionalProperties": true })
}

/// OpenClaw's `NativeCommandsSetting`: true, false or `"auto"`.
pub fn auto_or_bool(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "anyOf": [{ "type": "boolean" }, { "const": "auto", "type": "string" }] })
}

/// `{ start: "08:00", end: "22:00", timezone? }`.
pub fn active_hours(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "additionalProperties": false, "properties": {
        "start": { "type": "string" }, "end": { "type": "string" }, "timezone": { "type": "string" },
    } })
}

/// An agent's `identity`: name, theme, emoji, avatar.
pub fn identity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "additionalProperties": true, "properties": {
        "name": { "type": "string" }, "theme": { "type": "string" },
        "emoji": { "type": "string" }, "avatar": { "type": "string" },
    } })
}

/// A model's price per million tokens.
pub fn cost(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "additionalProperties": true, "properties": {
        "input": { "type": "number" }, "output": { "type": "number" },
        "cacheRead": { "type": "number" }, "cacheWrite": { "type": "number" },
    } })
}

/// A provider's authentication mode.
pub fn provider_auth(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "enum": ["api-key", "aws-sdk", "oauth", "token"] })
}
