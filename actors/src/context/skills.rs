//! Skills: folders with a `SKILL.md` whose YAML frontmatter names the skill,
//! describes it and lists what it needs (`requires: {bins, env, os}`, or
//! OpenClaw's `metadata.openclaw.requires`). Discovered from
//! `<workspace>/skills/*/SKILL.md` (wins on a name clash) and
//! `<state dir>/skills/*/SKILL.md`. The prompt lists eligible skills
//! compactly (name, description, path); the model reads a skill's file when
//! it needs it. Per-skill env overrides (`skills.entries.<name>.env`,
//! `apiKey`) go to the run's tool processes, never into the prompt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::context::cache::FileCache;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillSource {
    Workspace,
    Managed,
    /// An enabled bundle's skill root (its `SKILL.md` folders, and plain
    /// `.md` files: Claude commands, agents, output styles).
    Plugin,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::Workspace => "workspace",
            SkillSource::Managed => "managed",
            SkillSource::Plugin => "plugin",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Requires {
    pub bins: Vec<String>,
    pub env: Vec<String>,
    pub os: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    pub source: SkillSource,
    pub requires: Requires,
    /// The env var an `apiKey` entry fills (`metadata.openclaw.primaryEnv`).
    pub primary_env: Option<String>,
}

/// The `skills` section as the context reads it (typed in `settings`).
pub type SkillsConfig = crate::settings::SkillsSettings;

/// What the context reads of the section.
pub trait SkillsEnv {
    /// The env a skill's entry sets (its `env`, and `apiKey` into its
    /// primary env var).
    fn env_of(&self, skill: &Skill) -> Vec<(String, String)>;
}

impl SkillsEnv for SkillsConfig {
    fn env_of(&self, skill: &Skill) -> Vec<(String, String)> {
        let Some(entry) = self.entries.get(&skill.name) else {
            return Vec::new();
        };
        let mut env: Vec<(String, String)> = entry
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let (Some(key), Some(var)) = (&entry.api_key, &skill.primary_env) {
            env.push((var.clone(), key.clone()));
        }
        env
    }
}

/// A skill with what keeps it from being offered.
#[derive(Debug, Clone)]
pub struct SkillStatus {
    pub skill: Skill,
    pub disabled: bool,
    pub filtered: bool,
    pub missing: Vec<String>,
}

impl SkillStatus {
    pub fn eligible(&self) -> bool {
        !self.disabled && !self.filtered && self.missing.is_empty()
    }

    /// `skills.status` entry, in OpenClaw's shape: what it requires and
    /// what is missing (`bins`, `anyBins`, `env`, `config`, `os`).
    pub fn to_json(&self) -> Value {
        let missing = |kind: &str| -> Vec<String> {
            self.missing
                .iter()
                .filter_map(|m| m.strip_prefix(kind))
                .flat_map(|v| v.split('|').map(str::to_string).collect::<Vec<_>>())
                .collect()
        };
        let r = &self.skill.requires;
        let eligible = self.eligible();
        let base_dir = self.skill.path.parent().map(|p| p.display().to_string());
        json!({
            "name": self.skill.name,
            "description": self.skill.description,
            "filePath": self.skill.path.display().to_string(),
            "baseDir": base_dir,
            "skillKey": self.skill.name,
            "source": self.skill.source.as_str(),
            "bundled": false,
            "always": false,
            "eligible": eligible,
            "disabled": self.disabled,
            "filtered": self.filtered,
            "blockedByAllowlist": false,
            "blockedByAgentFilter": self.filtered,
            "platformIncompatible": !missing("os:").is_empty(),
            "modelVisible": eligible,
            "userInvocable": true,
            "commandVisible": eligible,
            "requirements": { "bins": r.bins, "anyBins": [], "env": r.env, "config": [], "os": r.os },
            "missing": {
                "bins": missing("bin:"), "anyBins": [], "env": missing("env:"), "config": [],
                "os": missing("os:"),
            },
            "configChecks": [],
            "install": [],
        })
    }
}

/// What one run sees of the skills: the eligible ones (prompt) and the env
/// their entries set (tool processes only).
#[derive(Debug, Clone, Default)]
pub struct SkillSnapshot {
    pub skills: Vec<Skill>,
    pub env: Vec<(String, String)>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
    requires: Option<Requires>,
    metadata: Option<serde_json::Value>,
}

/// Splits `---\n<yaml>\n---` off the top of a SKILL.md.
fn frontmatter(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest
        .match_indices("\n---")
        .find(|(i, _)| {
            let after = &rest[i + 4..];
            after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n")
        })?
        .0;
    Some(&rest[..end])
}

/// A SKILL.md that cannot be read (it is skipped with this in the log).
#[derive(Debug, thiserror::Error)]
pub enum BadSkill {
    #[error("frontmatter: {0}")]
    Frontmatter(#[from] serde_yaml_ng::Error),
    #[error("metadata.openclaw.requires: {0}")]
    Requires(#[from] serde_json::Error),
}

/// Parses one SKILL.md. The name defaults to the folder's.
pub fn parse_skill(text: &str, path: &Path, source: SkillSource) -> Result<Skill, BadSkill> {
    // A `SKILL.md` is named by its folder, a command file by itself.
    let named_by = match path.file_name().is_some_and(|n| n == "SKILL.md") {
        true => path.parent().and_then(Path::file_name),
        false => path.file_stem(),
    };
    let folder = named_by
        .and_then(|n| n.to_str())
        .unwrap_or("skill")
        .to_string();
    let fm: Frontmatter = match frontmatter(text) {
        Some(yaml) => serde_yaml_ng::from_str(yaml)?,
        None => Frontmatter::default(),
    };
    // OpenClaw keeps requirements in `metadata.openclaw` (older: `clawdbot`),
    // often as a one-line JSON object.
    let meta = fm.metadata.as_ref().and_then(|m| match m {
        Value::String(s) => serde_json::from_str::<Value>(s).ok(),
        other => Some(other.clone()),
    });
    let oc = meta
        .as_ref()
        .and_then(|m| m.get("openclaw").or_else(|| m.get("clawdbot")).cloned());
    let requires = match (fm.requires, oc.as_ref().and_then(|o| o.get("requires"))) {
        (Some(r), _) => r,
        (None, Some(r)) => serde_json::from_value(r.clone())?,
        (None, None) => Requires::default(),
    };
    let primary_env = oc
        .as_ref()
        .and_then(|o| o.get("primaryEnv"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let description = fm.description.unwrap_or_else(|| {
        // No frontmatter description: the first prose line.
        text.lines()
            .skip_while(|l| frontmatter(text).is_some() && !l.is_empty())
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && *l != "---")
            .unwrap_or("")
            .to_string()
    });
    Ok(Skill {
        name: fm.name.unwrap_or(folder).trim().to_string(),
        description: description.trim().to_string(),
        path: path.to_path_buf(),
        source,
        requires,
        primary_env,
    })
}

fn on_path(bin: &str) -> bool {
    crate::host::env().path.iter().any(|dir| {
        std::fs::metadata(dir.join(bin))
            .map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
            .unwrap_or(false)
    })
}

/// Finds every skill; the workspace's win over managed ones of the same name.
/// Unreadable or malformed files are logged and skipped.
pub fn discover(dirs: &[(PathBuf, SkillSource)], cache: &FileCache) -> Vec<Skill> {
    let mut found: BTreeMap<String, Skill> = BTreeMap::new();
    for (dir, source) in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter_map(|p| match p.is_dir() {
                true => Some(p.join("SKILL.md")),
                // A bundle's command file is a skill of its own.
                false => (*source == SkillSource::Plugin
                    && p.extension().is_some_and(|x| x == "md"))
                .then_some(p),
            })
            .collect();
        paths.sort();
        for path in paths {
            let Some(text) = cache.read(&path) else {
                continue;
            };
            match parse_skill(&text, &path, *source) {
                Ok(skill) if skill.name.is_empty() => {
                    tracing::warn!(path = %path.display(), "skill without a name skipped");
                }
                Ok(skill) => {
                    found.entry(skill.name.clone()).or_insert(skill);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "malformed SKILL.md skipped")
                }
            }
        }
    }
    found.into_values().collect()
}

/// Every skill with its eligibility: disabled by config, left out by a
/// filter (`None` = no filter), or missing a binary, env var or OS.
pub fn status(
    skills: Vec<Skill>,
    config: &SkillsConfig,
    filters: &[&[String]],
) -> Vec<SkillStatus> {
    skills
        .into_iter()
        .map(|skill| {
            let entry = config.entries.get(&skill.name);
            let disabled = entry.and_then(|e| e.enabled) == Some(false);
            let filtered = filters.iter().any(|f| !f.contains(&skill.name));
            let env = config.env_of(&skill);
            let mut missing = Vec::new();
            for bin in &skill.requires.bins {
                if !on_path(bin) {
                    missing.push(format!("bin:{bin}"));
                }
            }
            for var in &skill.requires.env {
                let set = crate::host::env().var(var).is_some()
                    || env.iter().any(|(k, v)| k == var && !v.is_empty());
                if !set {
                    missing.push(format!("env:{var}"));
                }
            }
            if !skill.requires.os.is_empty()
                && !skill.requires.os.iter().any(|os| {
                    os == std::env::consts::OS || (os == "darwin" && cfg!(target_os = "macos"))
                })
            {
                missing.push(format!("os:{}", skill.requires.os.join("|")));
            }
            SkillStatus {
                skill,
                disabled,
                filtered,
                missing,
            }
        })
        .collect()
}

/// The eligible skills and their env, for one run.
pub fn snapshot(statuses: &[SkillStatus], config: &SkillsConfig) -> SkillSnapshot {
    let mut snap = SkillSnapshot::default();
    for s in statuses.iter().filter(|s| s.eligible()) {
        snap.env.extend(config.env_of(&s.skill));
        snap.skills.push(s.skill.clone());
    }
    snap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_fields_and_openclaw_metadata_are_read() {
        let text = "---\nname: weather\ndescription: Get the forecast\nmetadata: {\"openclaw\": {\"requires\": {\"bins\": [\"curl\"], \"env\": [\"WEATHER_KEY\"]}, \"primaryEnv\": \"WEATHER_KEY\"}}\n---\n# Weather\nUse curl.\n";
        let s = parse_skill(
            text,
            Path::new("/w/skills/wx/SKILL.md"),
            SkillSource::Workspace,
        )
        .unwrap();
        assert_eq!(s.name, "weather");
        assert_eq!(s.description, "Get the forecast");
        assert_eq!(s.requires.bins, vec!["curl"]);
        assert_eq!(s.requires.env, vec!["WEATHER_KEY"]);
        assert_eq!(s.primary_env.as_deref(), Some("WEATHER_KEY"));

        let plain = "---\nrequires:\n  bins: [sh]\n---\n\nSummarise a file.\n";
        let s = parse_skill(
            plain,
            Path::new("/w/skills/sum/SKILL.md"),
            SkillSource::Managed,
        )
        .unwrap();
        assert_eq!(s.name, "sum", "the folder name when none is given");
        assert_eq!(s.description, "Summarise a file.");
        assert_eq!(s.requires.bins, vec!["sh"]);

        assert!(parse_skill(
            "---\nname: [unclosed\n---\n",
            Path::new("/x/SKILL.md"),
            SkillSource::Managed
        )
        .is_err());
    }

    #[test]
    fn eligibility_follows_requirements_config_and_filters() {
        let mk = |name: &str, requires: Requires| Skill {
            name: name.into(),
            description: String::new(),
            path: PathBuf::from(format!("/s/{name}/SKILL.md")),
            source: SkillSource::Workspace,
            requires,
            primary_env: Some("KEYED_TOKEN".into()),
        };
        let skills = vec![
            mk("plain", Requires::default()),
            mk(
                "needs-bin",
                Requires {
                    bins: vec!["definitely-not-a-binary-xyz".into()],
                    ..Default::default()
                },
            ),
            mk(
                "has-bin",
                Requires {
                    bins: vec!["sh".into()],
                    ..Default::default()
                },
            ),
            mk(
                "keyed",
                Requires {
                    env: vec!["KEYED_TOKEN".into()],
                    ..Default::default()
                },
            ),
            mk("off", Requires::default()),
            mk(
                "wrong-os",
                Requires {
                    os: vec!["plan9".into()],
                    ..Default::default()
                },
            ),
        ];
        let config: SkillsConfig = serde_json::from_value(json!({"entries": {
            "keyed": {"apiKey": "sekrit", "env": {"EXTRA": "1"}},
            "off": {"enabled": false},
        }}))
        .unwrap();
        let st = status(skills.clone(), &config, &[]);
        let eligible: Vec<&str> = st
            .iter()
            .filter(|s| s.eligible())
            .map(|s| s.skill.name.as_str())
            .collect();
        assert_eq!(eligible, vec!["plain", "has-bin", "keyed"]);
        let missing = &st[1].missing;
        assert_eq!(
            missing,
            &vec!["bin:definitely-not-a-binary-xyz".to_string()]
        );
        assert!(st[4].disabled);
        assert_eq!(st[5].missing, vec!["os:plan9".to_string()]);
        let snap = snapshot(&st, &config);
        assert!(snap.env.contains(&("KEYED_TOKEN".into(), "sekrit".into())));
        assert!(snap.env.contains(&("EXTRA".into(), "1".into())));

        let filter = vec!["plain".to_string()];
        let st = status(skills, &config, &[&filter]);
        let eligible: Vec<&str> = st
            .iter()
            .filter(|s| s.eligible())
            .map(|s| s.skill.name.as_str())
            .collect();
        assert_eq!(eligible, vec!["plain"]);
        let bad = json!({"entries": {"x": {"enabled": "yes"}}});
        let e = serde_path_to_error::deserialize::<_, SkillsConfig>(bad).unwrap_err();
        assert_eq!(e.path().to_string(), "entries.x.enabled");
    }

    #[test]
    fn discovery_prefers_the_workspace_and_skips_malformed_files() {
        let ws = tempfile::tempdir().unwrap();
        let managed = tempfile::tempdir().unwrap();
        for (root, name, desc) in [
            (ws.path(), "a", "from the workspace"),
            (managed.path(), "a", "managed copy"),
            (managed.path(), "b", "managed only"),
        ] {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: {desc}\n---\nbody\n"),
            )
            .unwrap();
        }
        let bad = ws.path().join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("SKILL.md"), "---\nname: [x\n---\n").unwrap();
        let cache = FileCache::default();
        let found = discover(
            &[
                (ws.path().to_path_buf(), SkillSource::Workspace),
                (managed.path().to_path_buf(), SkillSource::Managed),
            ],
            &cache,
        );
        let got: Vec<(&str, &str)> = found
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("a", "from the workspace"), ("b", "managed only")]
        );
    }
}
