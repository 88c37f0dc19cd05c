//! An agent's display identity, as OpenClaw resolves it: the config's
//! `agents.list[].identity` first, then the workspace's `IDENTITY.md`
//! (`- Name: ...`, `- Emoji: ...`, `- Avatar: ...` lines; the template's
//! placeholders do not count), then the default ("Assistant", avatar "A").
//! Pure: the caller reads the file.

use serde_json::Value;

/// The workspace file an agent describes itself in.
pub const IDENTITY_FILE: &str = "IDENTITY.md";
/// Larger files are not identity files.
pub const MAX_IDENTITY_FILE_BYTES: u64 = 4 << 20;

/// The template's placeholder answers (normalised), which mean "not set".
const PLACEHOLDERS: &[&str] = &[
    "not set yet",
    "pick something you like",
    "ai? robot? familiar? ghost in the machine? something weirder?",
    "how do you come across? sharp? warm? chaotic? calm?",
    "your signature - pick one that feels right",
    "workspace-relative path, http(s) url, or data uri",
];

/// The fields of an identity (config object or file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentityFields {
    pub name: Option<String>,
    pub emoji: Option<String>,
    pub avatar: Option<String>,
    pub theme: Option<String>,
}

/// Where the name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSource {
    /// `agents.list[].identity.name`.
    Agent,
    /// The workspace's `IDENTITY.md`.
    Workspace,
    Default,
}

impl NameSource {
    pub fn as_str(self) -> &'static str {
        match self {
            NameSource::Agent => "agent",
            NameSource::Workspace => "workspace",
            NameSource::Default => "default",
        }
    }
}

/// An agent's resolved identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantIdentity {
    pub agent_id: String,
    pub name: String,
    pub name_source: NameSource,
    pub avatar: String,
    pub emoji: Option<String>,
}

fn clean(v: Option<&str>) -> Option<String> {
    let v = v?.split_whitespace().collect::<Vec<_>>().join(" ");
    (!v.is_empty()).then_some(v)
}

impl IdentityFields {
    /// From `agents.list[].identity` (`{name, emoji, avatar, theme}`).
    pub fn from_config(v: Option<&Value>) -> IdentityFields {
        let text = |k: &str| clean(v.and_then(|v| v.get(k)).and_then(Value::as_str));
        IdentityFields {
            name: text("name"),
            emoji: text("emoji"),
            avatar: text("avatar"),
            theme: text("theme"),
        }
    }

    /// From `IDENTITY.md` text: `label: value` lines, list dashes and
    /// emphasis marks around the value ignored, placeholders skipped.
    pub fn from_markdown(text: &str) -> IdentityFields {
        let mut out = IdentityFields::default();
        for line in text.lines() {
            let cleaned = line.trim().trim_start_matches('-').trim_start();
            let Some((label, value)) = cleaned.split_once(':') else {
                continue;
            };
            let label = label.replace(['*', '_', '`'], "").trim().to_lowercase();
            let value = value
                .trim_matches(|c: char| matches!(c, '*' | '_' | '`') || c.is_whitespace())
                .to_string();
            if value.is_empty() || is_placeholder(&value) {
                continue;
            }
            let slot = match label.as_str() {
                "name" => &mut out.name,
                "emoji" => &mut out.emoji,
                "avatar" => &mut out.avatar,
                "theme" => &mut out.theme,
                _ => continue,
            };
            *slot = Some(value);
        }
        out
    }
}

fn is_placeholder(value: &str) -> bool {
    let mut v = value.trim().to_string();
    if v.starts_with('(') && v.ends_with(')') {
        v = v[1..v.len() - 1].trim().to_string();
    }
    let v = v
        .replace(['\u{2013}', '\u{2014}'], "-")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    PLACEHOLDERS.contains(&v.as_str())
}

/// The identity of `agent_id` from its config entry and its workspace file.
pub fn resolve(
    agent_id: &str,
    config: &IdentityFields,
    file: Option<&IdentityFields>,
) -> AssistantIdentity {
    let file_field = |f: fn(&IdentityFields) -> &Option<String>| file.and_then(|x| f(x).clone());
    let (name, name_source) = match (&config.name, file_field(|f| &f.name)) {
        (Some(n), _) => (n.clone(), NameSource::Agent),
        (None, Some(n)) => (n, NameSource::Workspace),
        (None, None) => ("Assistant".to_string(), NameSource::Default),
    };
    let avatar = [
        config.avatar.clone(),
        config.emoji.clone(),
        file_field(|f| &f.avatar),
        file_field(|f| &f.emoji),
    ]
    .into_iter()
    .flatten()
    .next()
    .unwrap_or_else(|| "A".to_string());
    let emoji = config.emoji.clone().or_else(|| file_field(|f| &f.emoji));
    AssistantIdentity {
        agent_id: agent_id.to_string(),
        name,
        name_source,
        avatar,
        emoji,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_config_wins_then_the_file_then_the_default() {
        let file = IdentityFields::from_markdown(
            "# IDENTITY.md\n\n- **Name:** Molty\n- **Emoji:** 🦞\n- **Vibe:** warm\n- **Avatar:** _(workspace-relative path, http(s) URL, or data URI)_\n",
        );
        assert_eq!(file.name.as_deref(), Some("Molty"));
        assert_eq!(file.emoji.as_deref(), Some("🦞"));
        assert_eq!(file.avatar, None, "the template's placeholder");
        let none = IdentityFields::default();
        let id = resolve("main", &none, Some(&file));
        assert_eq!(
            (id.name.as_str(), id.name_source, id.avatar.as_str()),
            ("Molty", NameSource::Workspace, "🦞")
        );
        let config = IdentityFields::from_config(Some(&json!({"name": "  Claw  ", "avatar": "C"})));
        let id = resolve("main", &config, Some(&file));
        assert_eq!(
            (id.name.as_str(), id.name_source),
            ("Claw", NameSource::Agent)
        );
        assert_eq!((id.avatar.as_str(), id.emoji.as_deref()), ("C", Some("🦞")));
        let id = resolve("ops", &none, None);
        assert_eq!(
            (id.name.as_str(), id.name_source, id.avatar.as_str()),
            ("Assistant", NameSource::Default, "A")
        );
    }

    #[test]
    fn template_placeholders_are_not_values() {
        let t = IdentityFields::from_markdown(
            "- Name: *(pick something you like)*\n- Theme: not set yet\n",
        );
        assert_eq!(t, IdentityFields::default());
    }
}
