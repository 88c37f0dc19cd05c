//! Keys OpenClaw moved, read where they went (what `openclaw doctor`
//! rewrites in a user's file): ferroclaw reads the old place too, so a
//! file written for an older OpenClaw works unchanged.

use serde_json::Value;

/// OpenClaw's legacy TTS keys moved where 2026.9.6 reads them (what its
/// doctor does): `messages.tts` into `tts` (keys `tts` sets win),
/// `enabled` as `auto`, `tts.<openai|elevenlabs|microsoft|edge>` blocks as
/// `tts.providers.<id>`. None: nothing to move (the file is read as is).
pub fn tts(raw: &str) -> Option<String> {
    if !raw.contains("tts") {
        return None;
    }
    let mut v: Value = json5::from_str(raw).ok()?;
    let legacy = v
        .get_mut("messages")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("tts"));
    let top = v.as_object_mut()?;
    let tts = top.entry("tts").or_insert_with(|| serde_json::json!({}));
    let tts = tts.as_object_mut()?;
    let mut moved = legacy.is_some();
    if let Some(Value::Object(old)) = legacy {
        for (k, val) in old {
            tts.entry(k).or_insert(val);
        }
    }
    if let Some(on) = tts.remove("enabled") {
        moved = true;
        let auto = if on == Value::Bool(true) {
            "always"
        } else {
            "off"
        };
        tts.entry("auto")
            .or_insert_with(|| Value::String(auto.into()));
    }
    for id in ["openai", "elevenlabs", "microsoft", "edge"] {
        if let Some(block) = tts.remove(id) {
            moved = true;
            let name = if id == "edge" { "microsoft" } else { id };
            let providers = tts
                .entry("providers")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(p) = providers.as_object_mut() {
                p.entry(name.to_string()).or_insert(block);
            }
        }
    }
    if tts.get("provider").and_then(Value::as_str) == Some("edge") {
        tts.insert("provider".into(), Value::String("microsoft".into()));
    }
    if tts.is_empty() {
        top.remove("tts");
    }
    moved.then(|| v.to_string())
}
