//! What a bundle is: its format, detected as OpenClaw detects it (a native
//! plugin first, then `.codex-plugin/`, `.cursor-plugin/`,
//! `.claude-plugin/`, a root `plugin.json` with the Agent Plugins schema,
//! then Claude's manifestless layout), and its manifest read into a
//! `Bundle`: id, name, version, the skill roots each format has (Claude's
//! `commands/`, `agents/`, `output-styles/`, Cursor's `.cursor/commands/`
//! among them), its capabilities and the files its MCP servers, LSP
//! servers, settings and hooks come from. Reading a bundle runs nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::PluginError;

/// The Agent Plugins 1.0.0 manifest schema (`plugin.json` must name it).
pub const AGENT_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";
/// Largest manifest read.
const MAX_MANIFEST: u64 = 256 * 1024;

/// The four bundle formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleFormat {
    Agent,
    Codex,
    Claude,
    Cursor,
}

impl BundleFormat {
    /// OpenClaw's name for it (`Bundle format:` in `plugins inspect`).
    pub fn as_str(self) -> &'static str {
        match self {
            BundleFormat::Agent => "agent",
            BundleFormat::Codex => "codex",
            BundleFormat::Claude => "claude",
            BundleFormat::Cursor => "cursor",
        }
    }

    /// How `inspect` says it.
    pub fn label(self) -> &'static str {
        match self {
            BundleFormat::Agent => "agent (Agent Plugins)",
            other => other.as_str(),
        }
    }

    fn manifest(self) -> &'static str {
        match self {
            BundleFormat::Agent => "plugin.json",
            BundleFormat::Codex => ".codex-plugin/plugin.json",
            BundleFormat::Claude => ".claude-plugin/plugin.json",
            BundleFormat::Cursor => ".cursor-plugin/plugin.json",
        }
    }
}

/// What a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Bundle(BundleFormat),
    /// An OpenClaw native plugin (in-process JavaScript): not run here.
    Native,
}

/// A bundle's manifest and layout, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub version: Option<String>,
    pub format: BundleFormat,
    pub root: PathBuf,
    /// Skill roots, relative to `root` (inside it: checked).
    pub skill_roots: Vec<String>,
    /// Claude `hooks/hooks.json` files (and manifest `hooks` paths).
    pub hook_files: Vec<String>,
    /// Hooks written inline in the manifest (`hooks: {...}`).
    pub inline_hooks: Option<Value>,
    /// `.mcp.json` / `mcp.json` files, and inline `mcpServers`.
    pub mcp_files: Vec<String>,
    pub inline_mcp: Option<Value>,
    /// `.lsp.json` and manifest `lspServers` paths, and inline ones.
    pub lsp_files: Vec<String>,
    pub inline_lsp: Option<Value>,
    /// Claude `settings.json`.
    pub settings_file: Option<String>,
    /// OpenClaw's capability names, in its order.
    pub capabilities: Vec<String>,
    /// Detected but not run (Cursor rules and agents, Codex apps...).
    pub detect_only: Vec<String>,
}

fn exists(root: &Path, rel: &str) -> bool {
    root.join(rel).exists()
}

/// The format of the folder at `root` (None: not a plugin).
pub fn detect(root: &Path) -> Option<Detected> {
    let native = exists(root, "openclaw.plugin.json");
    for format in [
        BundleFormat::Codex,
        BundleFormat::Cursor,
        BundleFormat::Claude,
    ] {
        if exists(root, format.manifest()) {
            return Some(Detected::Bundle(format));
        }
    }
    if native || package_extensions(root) {
        return Some(Detected::Native);
    }
    if exists(root, "plugin.json") {
        let agent = read_json(root, "plugin.json")
            .ok()
            .is_some_and(|v| v.get("$schema").and_then(Value::as_str) == Some(AGENT_SCHEMA));
        if agent {
            return Some(Detected::Bundle(BundleFormat::Agent));
        }
    }
    let claude = [
        "skills",
        "commands",
        "agents",
        "hooks/hooks.json",
        ".mcp.json",
        ".lsp.json",
        "settings.json",
    ];
    claude
        .iter()
        .any(|c| exists(root, c))
        .then_some(Detected::Bundle(BundleFormat::Claude))
}

/// A `package.json` naming `openclaw.extensions`: a native plugin.
fn package_extensions(root: &Path) -> bool {
    read_json(root, "package.json")
        .ok()
        .and_then(|p| p.get("openclaw")?.get("extensions").cloned())
        .is_some()
}

/// A JSON file under `root` (JSON5 allowed), bounded, inside `root`.
pub fn read_json(root: &Path, rel: &str) -> Result<Value, PluginError> {
    let path = inside(root, rel)?;
    let meta = std::fs::metadata(&path).map_err(|e| PluginError::Read {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    if meta.len() > MAX_MANIFEST {
        return Err(PluginError::Invalid(format!(
            "{rel} is over {MAX_MANIFEST} bytes"
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| PluginError::Read {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    json5::from_str(&text).map_err(|e| PluginError::Invalid(format!("{rel}: {e}")))
}

/// `root/rel`, refused when it leaves `root` (`..`, an absolute path, a
/// link out).
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf, PluginError> {
    let rel = rel.trim_start_matches("./");
    let escapes = Path::new(rel).is_absolute()
        || Path::new(rel)
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if escapes {
        return Err(PluginError::Outside(rel.to_string()));
    }
    let path = root.join(rel);
    if let (Ok(real), Ok(base)) = (std::fs::canonicalize(&path), std::fs::canonicalize(root)) {
        if !real.starts_with(&base) {
            return Err(PluginError::Outside(rel.to_string()));
        }
    }
    Ok(path)
}

/// A manifest's string-or-list path field.
fn paths(raw: &Value, key: &str) -> Vec<String> {
    match raw.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

/// The defaults that exist, then the declared ones (additive), no repeats.
fn merged(root: &Path, defaults: &[&str], declared: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let found = defaults
        .iter()
        .filter(|d| exists(root, d))
        .map(|d| d.to_string());
    for p in found.chain(declared) {
        let p = p.trim_start_matches("./").to_string();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn inline(raw: &Value, key: &str) -> Option<Value> {
    match raw.get(key) {
        Some(v @ Value::Object(m)) if !m.is_empty() => Some(v.clone()),
        _ => None,
    }
}

/// OpenClaw's id rule: the name (else the folder) lowercased, runs of
/// anything but `a-z0-9` made one `-`.
pub fn slug(name: &str, root: &Path) -> String {
    let folder = root.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let raw = if name.trim().is_empty() { folder } else { name };
    let mut out = String::new();
    for c in raw.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "bundle-plugin".into()
    } else {
        out
    }
}

/// Reads the bundle at `root` in `format`.
pub fn load(root: &Path, format: BundleFormat) -> Result<Bundle, PluginError> {
    let raw = match read_json(root, format.manifest()) {
        Ok(Value::Object(m)) => Value::Object(m),
        Ok(_) => {
            return Err(PluginError::Invalid(
                "plugin manifest must be an object".into(),
            ))
        }
        // A manifestless Claude bundle.
        Err(PluginError::Read { .. }) if format == BundleFormat::Claude => {
            Value::Object(Default::default())
        }
        Err(e) => return Err(e),
    };
    let text = |k: &str| {
        raw.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let name = text("name").unwrap_or_default();
    if format == BundleFormat::Agent {
        agent_manifest(&raw, &name)?;
    }
    let mut b = Bundle {
        id: slug(&name, root),
        name: if name.is_empty() {
            slug(&name, root)
        } else {
            name.clone()
        },
        description: text("description").or_else(|| text("shortDescription")),
        version: text("version"),
        format,
        root: root.to_path_buf(),
        skill_roots: Vec::new(),
        hook_files: Vec::new(),
        inline_hooks: None,
        mcp_files: Vec::new(),
        inline_mcp: None,
        lsp_files: Vec::new(),
        inline_lsp: None,
        settings_file: None,
        capabilities: Vec::new(),
        detect_only: Vec::new(),
    };
    match format {
        BundleFormat::Agent => agent(&mut b),
        BundleFormat::Codex => codex(&mut b, &raw),
        BundleFormat::Cursor => cursor(&mut b, &raw),
        BundleFormat::Claude => claude(&mut b, &raw),
    }
    Ok(b)
}

/// An Agent Plugins manifest names its schema and has a name.
fn agent_manifest(raw: &Value, name: &str) -> Result<(), PluginError> {
    if raw.get("$schema").and_then(Value::as_str) != Some(AGENT_SCHEMA) {
        return Err(PluginError::Invalid(format!(
            "root plugin.json is not an Agent Plugins manifest; expected $schema {AGENT_SCHEMA}"
        )));
    }
    if name.is_empty() {
        return Err(PluginError::Invalid(
            "agent plugin manifest name must be a non-empty string".into(),
        ));
    }
    Ok(())
}

fn agent(b: &mut Bundle) {
    if b.root.join("skills").is_dir() {
        b.skill_roots.push("skills".into());
        b.capabilities.push("skills".into());
    }
    if exists(&b.root, "mcp.json") {
        b.mcp_files.push("mcp.json".into());
        b.capabilities.push("mcpServers".into());
    }
}

fn codex(b: &mut Bundle, raw: &Value) {
    let root = b.root.clone();
    let declared = paths(raw, "skills");
    b.skill_roots = if declared.is_empty() {
        merged(&root, &["skills"], Vec::new())
    } else {
        declared
    };
    if !b.skill_roots.is_empty() {
        b.capabilities.push("skills".into());
    }
    if !merged(&root, &["hooks"], paths(raw, "hooks")).is_empty() {
        // OpenClaw's hook packs (HOOK.md + handler.ts) run JavaScript.
        b.capabilities.push("hooks".into());
        b.detect_only
            .push("hooks (HOOK.md handler packs: JavaScript)".into());
    }
    mcp(b, raw);
    if inline(raw, "apps").is_some() || exists(&root, ".app.json") {
        b.capabilities.push("apps".into());
        b.detect_only.push("apps (.app.json)".into());
    }
}

fn cursor(b: &mut Bundle, raw: &Value) {
    let root = b.root.clone();
    let skills = merged(&root, &["skills"], paths(raw, "skills"));
    let commands = merged(&root, &[".cursor/commands"], paths(raw, "commands"));
    b.skill_roots = merged(&root, &[], [skills.clone(), commands.clone()].concat());
    if !b.skill_roots.is_empty() {
        b.capabilities.push("skills".into());
    }
    if !commands.is_empty() {
        b.capabilities.push("commands".into());
    }
    for (cap, file, key) in [
        ("agents", ".cursor/agents", "agents"),
        ("hooks", ".cursor/hooks.json", "hooks"),
        ("rules", ".cursor/rules", "rules"),
    ] {
        if exists(&root, file) || raw.get(key).is_some_and(|v| !v.is_null()) {
            b.capabilities.push(cap.into());
            b.detect_only.push(format!("{cap} ({file})"));
        }
    }
    mcp(b, raw);
}

fn mcp(b: &mut Bundle, raw: &Value) {
    b.mcp_files = merged(&b.root, &[".mcp.json"], Vec::new());
    b.inline_mcp = inline(raw, "mcpServers");
    if !b.mcp_files.is_empty() || b.inline_mcp.is_some() {
        b.capabilities.push("mcpServers".into());
    }
}

fn claude(b: &mut Bundle, raw: &Value) {
    let root = b.root.clone();
    let skills = merged(&root, &["skills"], paths(raw, "skills"));
    let commands = merged(&root, &["commands"], paths(raw, "commands"));
    let agents = merged(&root, &["agents"], paths(raw, "agents"));
    let styles = merged(&root, &["output-styles"], paths(raw, "outputStyles"));
    b.skill_roots = merged(
        &root,
        &[],
        [skills, commands.clone(), agents.clone(), styles.clone()].concat(),
    );
    let hook_paths: Vec<String> = paths(raw, "hooks");
    b.hook_files = merged(&root, &["hooks/hooks.json"], hook_paths);
    b.inline_hooks = inline(raw, "hooks");
    b.mcp_files = merged(&root, &[".mcp.json"], paths(raw, "mcpServers"));
    b.inline_mcp = inline(raw, "mcpServers");
    b.lsp_files = merged(&root, &[".lsp.json"], paths(raw, "lspServers"));
    b.inline_lsp = inline(raw, "lspServers");
    b.settings_file = exists(&root, "settings.json").then(|| "settings.json".to_string());
    let caps = [
        ("skills", !b.skill_roots.is_empty()),
        ("commands", !commands.is_empty()),
        ("agents", !agents.is_empty()),
        (
            "hooks",
            !b.hook_files.is_empty() || b.inline_hooks.is_some(),
        ),
        (
            "mcpServers",
            !b.mcp_files.is_empty() || b.inline_mcp.is_some(),
        ),
        (
            "lspServers",
            !b.lsp_files.is_empty() || b.inline_lsp.is_some(),
        ),
        ("outputStyles", !styles.is_empty()),
        ("settings", b.settings_file.is_some()),
    ];
    b.capabilities = caps
        .iter()
        .filter(|(_, on)| *on)
        .map(|(c, _)| c.to_string())
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_four_formats_are_told_apart_as_openclaw_does() {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("c");
        write(&claude, "commands/review.md", "# Review");
        assert_eq!(
            detect(&claude),
            Some(Detected::Bundle(BundleFormat::Claude))
        );
        let styles_only = dir.path().join("s");
        write(&styles_only, "output-styles/terse.md", "x");
        assert_eq!(detect(&styles_only), None, "output-styles is no marker");
        let agent = dir.path().join("a");
        write(
            &agent,
            "plugin.json",
            &format!(r#"{{"$schema":"{AGENT_SCHEMA}","name":"A B"}}"#),
        );
        assert_eq!(detect(&agent), Some(Detected::Bundle(BundleFormat::Agent)));
        let not_agent = dir.path().join("n");
        write(&not_agent, "plugin.json", r#"{"name":"x"}"#);
        assert_eq!(detect(&not_agent), None);
        let both = dir.path().join("b");
        write(
            &both,
            "plugin.json",
            &format!(r#"{{"$schema":"{AGENT_SCHEMA}","name":"x"}}"#),
        );
        write(&both, ".cursor-plugin/plugin.json", r#"{"name":"x"}"#);
        assert_eq!(detect(&both), Some(Detected::Bundle(BundleFormat::Cursor)));
        let native = dir.path().join("o");
        write(&native, "openclaw.plugin.json", "{}");
        write(&native, "skills/x/SKILL.md", "x");
        assert_eq!(detect(&native), Some(Detected::Native));
        let b = load(&agent, BundleFormat::Agent).unwrap();
        assert_eq!(b.id, "a-b");
    }

    #[test]
    fn a_claude_manifest_adds_to_the_default_paths_and_stays_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            ".claude-plugin/plugin.json",
            r#"{"name":"Reviewer","commands":["./extra"],"lspServers":"./lsp/servers.json"}"#,
        );
        write(root, "commands/review.md", "x");
        write(root, "extra/more.md", "x");
        write(root, "hooks/hooks.json", "{}");
        write(root, "settings.json", "{}");
        let b = load(root, BundleFormat::Claude).unwrap();
        assert_eq!(b.skill_roots, ["commands", "extra"]);
        assert_eq!(b.hook_files, ["hooks/hooks.json"]);
        assert_eq!(b.lsp_files, ["lsp/servers.json"]);
        assert!(b.capabilities.contains(&"hooks".to_string()));
        assert!(inside(root, "../etc/passwd").is_err());
        assert!(inside(root, "/etc/passwd").is_err());
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        assert!(inside(root, "out/passwd").is_err());
    }
}
