//! The model's `[[tts:...]]` directives (OpenClaw's): `[[tts:key=value
//! ...]]` changes the voice of this reply, `[[tts:text]]...[[/tts:text]]`
//! is spoken and never shown. Both are taken out of the visible text,
//! whether or not anything is spoken (a preview or a block never shows
//! them either). What a directive may change is `tts.modelOverrides`'.

use std::collections::BTreeMap;

use crate::settings::TtsModelOverrides;

const OPEN_TEXT: &str = "[[tts:text]]";
const CLOSE_TEXT: &str = "[[/tts:text]]";

/// What one reply asks of its voice (a directive's keys, a request's
/// `provider`/`voiceId`/`modelId`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// ElevenLabs' voice settings and the rest, by OpenClaw's key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

/// A speed is a checked finite number (0.25 to 4): equality is total.
impl Eq for VoiceOverrides {}

impl VoiceOverrides {
    pub fn is_empty(&self) -> bool {
        *self == VoiceOverrides::default()
    }
}

/// A reply's directives, taken out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Directives {
    /// The text without them.
    pub visible: String,
    /// What the `[[tts:text]]` blocks say (spoken instead of the visible text).
    pub spoken: Option<String>,
    pub overrides: VoiceOverrides,
    /// The reply carried a directive or a block (`auto: tagged` speaks it).
    pub tagged: bool,
    /// Keys not taken (unknown, or not allowed by `modelOverrides`).
    pub ignored: Vec<String>,
}

impl Directives {
    /// Only the stripped text: what a stranger's turn gets (no voice, no
    /// text block, no tag taken from it).
    pub fn inert(self) -> Directives {
        Directives {
            visible: self.visible,
            spoken: None,
            overrides: VoiceOverrides::default(),
            tagged: false,
            ignored: Vec::new(),
        }
    }
}

/// Whether `text` may hold a directive (a cheap check before `parse`).
pub fn any(text: &str) -> bool {
    text.contains("[[tts") || text.contains("[[/tts")
}

/// The text as a preview may show it: directives and `[[tts:text]]`
/// blocks out (an unclosed block is cut from its start: its end may be
/// still to come).
pub fn visible(text: &str) -> String {
    if !any(text) {
        return text.to_string();
    }
    let mut out = strip_blocks(text).0;
    if let Some(i) = out.find(OPEN_TEXT) {
        out.truncate(i);
    }
    strip_tags(&out).0
}

/// Takes the directives out of `text`, keeping what `allowed` permits.
pub fn parse(text: &str, allowed: &TtsModelOverrides) -> Directives {
    if !any(text) {
        return Directives {
            visible: text.to_string(),
            ..Default::default()
        };
    }
    let (rest, blocks) = strip_blocks(text);
    let (visible, tags) = strip_tags(&rest);
    let mut d = Directives {
        visible: tidy(&visible),
        tagged: !blocks.is_empty() || !tags.is_empty(),
        spoken: (!blocks.is_empty()).then(|| blocks.join(" ").trim().to_string()),
        ..Default::default()
    };
    if !allowed.enabled {
        d.ignored = tags.iter().flat_map(|t| pairs(t)).map(|(k, _)| k).collect();
        return d;
    }
    for (k, v) in tags.iter().flat_map(|t| pairs(t)) {
        let o = &mut d.overrides;
        match k.as_str() {
            "provider" if allowed.allow_provider => o.provider = Some(v.to_ascii_lowercase()),
            "speakerVoice" | "speakerVoiceId" | "voice" | "voiceName" | "voice_name"
            | "voiceId" | "google_voice" => o.voice = Some(v),
            "model" | "modelId" | "google_model" => o.model = Some(v),
            "speed" => match v.parse::<f64>() {
                Ok(s) if (0.25..=4.0).contains(&s) => o.speed = Some(s),
                _ => d.ignored.push(k),
            },
            "seed" if allowed.allow_seed => match v.parse::<u64>() {
                Ok(s) if s <= u32::MAX as u64 => o.seed = Some(s),
                _ => d.ignored.push(k),
            },
            "stability"
            | "similarityBoost"
            | "style"
            | "useSpeakerBoost"
            | "applyTextNormalization"
            | "languageCode" => {
                o.extra.insert(k, v);
            }
            _ => d.ignored.push(k),
        }
    }
    d
}

/// `[[tts:text]]...[[/tts:text]]` blocks out; their insides.
fn strip_blocks(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(OPEN_TEXT) {
        let after = &rest[i + OPEN_TEXT.len()..];
        let Some(j) = after.find(CLOSE_TEXT) else {
            break;
        };
        out.push_str(&rest[..i]);
        blocks.push(after[..j].trim().to_string());
        rest = &after[j + CLOSE_TEXT.len()..];
    }
    out.push_str(rest);
    (out, blocks)
}

/// `[[tts:...]]` tags (and stray `[[/tts:text]]`) out; their insides.
fn strip_tags(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut tags = Vec::new();
    let mut rest = text;
    loop {
        let next = [rest.find("[[tts"), rest.find("[[/tts")]
            .into_iter()
            .flatten()
            .min();
        let Some(i) = next else { break };
        let Some(j) = rest[i..].find("]]") else { break };
        out.push_str(&rest[..i]);
        let inner = &rest[i + 2..i + j];
        if let Some(body) = inner.strip_prefix("tts:").or(inner.strip_prefix("tts")) {
            if body.trim() != "text" {
                tags.push(body.trim().to_string());
            }
        }
        rest = &rest[i + j + 2..];
    }
    out.push_str(rest);
    (out, tags)
}

/// `key=value` pairs of a tag (values may be quoted).
fn pairs(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_string();
        let after = &rest[eq + 1..];
        let (value, next) = match after.chars().next() {
            Some(q @ ('"' | '\'')) => match after[1..].find(q) {
                Some(end) => (&after[1..1 + end], &after[end + 2..]),
                None => (&after[1..], ""),
            },
            _ => match after.find(char::is_whitespace) {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            },
        };
        if !key.is_empty() {
            out.push((key, value.to_string()));
        }
        rest = next.trim_start();
    }
    out
}

/// Blank lines a directive left behind, collapsed.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.trim().lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(provider: bool) -> TtsModelOverrides {
        TtsModelOverrides {
            enabled: true,
            allow_provider: provider,
            allow_seed: true,
        }
    }

    #[test]
    fn directives_and_blocks_leave_the_visible_text() {
        let text = "Here you go.\n\n[[tts:speakerVoiceId=pMsX model=eleven_v3 speed=1.1 provider=openai]]\n[[tts:text]](laughs) Read the song once more.[[/tts:text]]";
        let d = parse(text, &allowed(false));
        assert_eq!(d.visible, "Here you go.");
        assert_eq!(
            d.spoken.as_deref(),
            Some("(laughs) Read the song once more.")
        );
        assert!(d.tagged);
        assert_eq!(d.overrides.voice.as_deref(), Some("pMsX"));
        assert_eq!(d.overrides.model.as_deref(), Some("eleven_v3"));
        assert_eq!(d.overrides.speed, Some(1.1));
        // provider= needs allowProvider.
        assert_eq!(d.overrides.provider, None);
        assert_eq!(d.ignored, vec!["provider".to_string()]);
        let d = parse(text, &allowed(true));
        assert_eq!(d.overrides.provider.as_deref(), Some("openai"));
    }

    #[test]
    fn overrides_off_still_strip_and_a_plain_reply_is_untouched() {
        let off = TtsModelOverrides {
            enabled: false,
            allow_provider: false,
            allow_seed: false,
        };
        let d = parse("Hi [[tts:voice=\"a b\"]] there", &off);
        assert_eq!(d.visible, "Hi  there");
        assert!(d.overrides.is_empty() && d.tagged);
        assert_eq!(parse("plain", &off).visible, "plain");
        assert!(!parse("plain", &off).tagged);
        assert_eq!(
            pairs("voice=\"a b\" speed=2"),
            [("voice".into(), "a b".into()), ("speed".into(), "2".into())]
        );
    }

    #[test]
    fn a_preview_never_shows_a_directive_even_half_written() {
        assert_eq!(visible("Hello [[tts:voice=x]]world"), "Hello world");
        assert_eq!(visible("Hello [[tts:text]]secret so far"), "Hello ");
        assert_eq!(
            visible("Hello [[tts:text]]s[[/tts:text]] end"),
            "Hello  end"
        );
        assert_eq!(visible("no directive"), "no directive");
    }
}
