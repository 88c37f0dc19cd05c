//! The system prompt, assembled for every run from fixed sections:
//! identity, tooling, safety (with the silent-reply token), skills,
//! workspace, injected workspace files, date and time zone, runtime. Modes:
//! `full` (main sessions), `minimal` (sub-agents: no skills, only AGENTS.md
//! and TOOLS.md) and `none` (the identity line).
//!
//! The text depends only on its inputs (no clock reading: the current time
//! rides in each user message's envelope), so it is byte-identical from
//! turn to turn while nothing changed, and provider prompt caches stay warm.
//! [`PromptReport`] gives the size of every component (`/context`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::context::cache::FileCache;
use crate::context::skills::Skill;
use crate::provider::ToolSpec;

/// A reply that is exactly this is not delivered (the run ends silently).
pub const SILENT_REPLY_TOKEN: &str = "NO_REPLY";

/// Whether a reply is the silent token (surrounding whitespace ignored).
pub fn is_silent(text: &str) -> bool {
    text.trim() == SILENT_REPLY_TOKEN
}

/// Whether streamed text so far could still become the silent token (its
/// deltas are held back until that is decided).
pub fn may_become_silent(text: &str) -> bool {
    let t = text.trim_start();
    !t.is_empty() && SILENT_REPLY_TOKEN.starts_with(t.trim_end())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptMode {
    Full,
    Minimal,
    None,
}

impl PromptMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PromptMode::Full => "full",
            PromptMode::Minimal => "minimal",
            PromptMode::None => "none",
        }
    }
}

/// The workspace files injected into the prompt, in order.
pub const BOOTSTRAP_FILES: [&str; 8] = [
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
];

/// Caps on injected workspace files (`agents.defaults.bootstrapMaxChars`,
/// `bootstrapTotalMaxChars`).
#[derive(Debug, Clone, Copy)]
pub struct BootstrapLimits {
    pub per_file: usize,
    pub total: usize,
}

impl Default for BootstrapLimits {
    fn default() -> Self {
        BootstrapLimits {
            per_file: 20_000,
            total: 150_000,
        }
    }
}

/// One workspace file as injected.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectedFile {
    pub name: &'static str,
    pub raw_chars: usize,
    /// The text put in the prompt (with a truncation marker when cut).
    pub text: String,
    pub truncated: bool,
}

/// Facts about where the agent runs (one line of the prompt).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuntimeInfo {
    pub agent_id: String,
    pub host: String,
    pub os: String,
    pub arch: String,
    pub model: String,
    pub channel: String,
    pub capabilities: Vec<String>,
    pub thinking: String,
}

/// Everything a prompt is made from.
pub struct PromptInputs<'a> {
    pub mode: PromptMode,
    pub tools: &'a [ToolSpec],
    pub skills: &'a [Skill],
    pub workspace: &'a Path,
    pub files: &'a [InjectedFile],
    pub runtime: &'a RuntimeInfo,
    pub timezone: &'a str,
}

/// Sizes of the prompt's parts, for `/context`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptReport {
    pub mode: &'static str,
    pub total_chars: usize,
    /// (section title, chars) in prompt order.
    pub sections: Vec<(String, usize)>,
    /// (file, raw chars, injected chars, truncated).
    pub files: Vec<(String, usize, usize, bool)>,
    /// (skill, chars of its line).
    pub skills: Vec<(String, usize)>,
    /// (tool, chars of its JSON schema): sent beside the prompt.
    pub tools: Vec<(String, usize)>,
}

/// A built prompt and its report.
#[derive(Debug, Clone)]
pub struct BuiltPrompt {
    pub text: Arc<str>,
    pub report: PromptReport,
}

/// Cuts `text` to `max` chars keeping the head (70%) and the tail (20%),
/// with a marker saying what was left out and where to read it whole.
pub fn truncate_file(name: &str, text: &str, max: usize) -> (String, bool) {
    let chars = text.chars().count();
    if chars <= max {
        return (text.to_string(), false);
    }
    let head = max * 7 / 10;
    let tail = max * 2 / 10;
    let head_text: String = text.chars().take(head).collect();
    let tail_text: String = text.chars().skip(chars - tail).collect();
    let omitted = chars - head - tail;
    (
        format!(
            "{head_text}\n\n[... {omitted} of {chars} characters truncated; read {name} for the full text ...]\n\n{tail_text}"
        ),
        true,
    )
}

/// Loads the workspace files a prompt mode injects: blank files skipped,
/// each capped at `per_file`, all together at `total` (a file that does not
/// fit is cut to what is left, then later ones are left out with a note).
/// `MEMORY.md` (or `memory.md`) only in private chats.
pub fn load_bootstrap(
    workspace: &Path,
    mode: PromptMode,
    limits: BootstrapLimits,
    private_chat: bool,
    cache: &FileCache,
) -> Vec<InjectedFile> {
    let mut out = Vec::new();
    if mode == PromptMode::None {
        return out;
    }
    let mut budget = limits.total;
    for name in BOOTSTRAP_FILES {
        if mode == PromptMode::Minimal && !matches!(name, "AGENTS.md" | "TOOLS.md") {
            continue;
        }
        if name == "MEMORY.md" && !private_chat {
            continue;
        }
        let text = cache.read(&workspace.join(name)).or_else(|| {
            (name == "MEMORY.md")
                .then(|| cache.read(&workspace.join("memory.md")))
                .flatten()
        });
        let Some(text) = text else { continue };
        if text.trim().is_empty() {
            continue;
        }
        let raw_chars = text.chars().count();
        if budget == 0 {
            out.push(InjectedFile {
                name,
                raw_chars,
                text: format!(
                    "[{name} left out: the injected files reached {} characters; read {name} if you need it]",
                    limits.total
                ),
                truncated: true,
            });
            continue;
        }
        let cap = limits.per_file.min(budget);
        let (text, truncated) = truncate_file(name, &text, cap);
        // A file cut to what was left of the total uses the rest up.
        budget = if truncated && cap < limits.per_file {
            0
        } else {
            budget.saturating_sub(text.chars().count().min(cap))
        };
        out.push(InjectedFile {
            name,
            raw_chars,
            text,
            truncated,
        });
    }
    out
}

fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.find(". ") {
        Some(i) => &line[..=i],
        None => line,
    }
}

/// Assembles the prompt.
pub fn build(inputs: &PromptInputs) -> BuiltPrompt {
    let mut sections: Vec<(&str, String)> = Vec::new();
    let identity = "You are a personal assistant running inside ferroclaw.".to_string();
    sections.push(("Identity", identity));
    let mut report = PromptReport {
        mode: inputs.mode.as_str(),
        ..Default::default()
    };
    for t in inputs.tools {
        report
            .tools
            .push((t.name.clone(), t.parameters.to_string().len()));
    }
    if inputs.mode != PromptMode::None {
        sections.push(("Tooling", tooling(inputs.tools)));
        sections.push(("Safety", safety()));
        if inputs.mode == PromptMode::Full && !inputs.skills.is_empty() {
            sections.push(("Skills", skills(inputs.skills, &mut report)));
        }
        sections.push((
            "Workspace",
            format!(
                "## Workspace\nYour working directory is {}. Relative paths in file tools resolve there.",
                inputs.workspace.display()
            ),
        ));
        if !inputs.files.is_empty() {
            sections.push(("Workspace Files", workspace_files(inputs.files)));
        }
        sections.push((
            "Current Date & Time",
            format!(
                "## Current Date & Time\nTime zone: {}. Each user message starts with the time it was sent, in brackets.",
                inputs.timezone
            ),
        ));
        sections.push(("Runtime", runtime_line(inputs.runtime)));
    }
    if !inputs.files.is_empty() {
        sections.push((
            "Project Context",
            project_context(inputs.files, &mut report),
        ));
    }
    let mut text = String::new();
    for (title, body) in &sections {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(body);
        report
            .sections
            .push((title.to_string(), body.chars().count()));
    }
    report.total_chars = text.chars().count();
    BuiltPrompt {
        text: Arc::from(text),
        report,
    }
}

/// `## Tooling`: each tool's first sentence, and how the gateway's own
/// tools are meant to be used.
fn tooling(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "## Tooling\nTools available to you (names are case-sensitive; call them exactly as listed):\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- {}: {}\n",
            t.name,
            first_sentence(&t.description)
        ));
    }
    s.push_str("Run shell commands with exec; its working directory is the workspace.");
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    if has("automations") {
        s.push_str("\nFor reminders and anything to do later or repeatedly, use automations (its reply comes back to this chat); never sleep or poll in exec as a timer.");
    }
    if has("message") {
        s.push_str("\nYour reply goes to this chat by itself: use message only for other chats, reactions, edits, or when you answer with it instead (then reply NO_REPLY).");
    }
    s
}

/// `## Safety`: no goals of its own, the trust note, the silent reply.
fn safety() -> String {
    format!(
        "## Safety\nYou have no goals of your own beyond the user's request: do not seek power, resources or persistence, do not copy yourself, and do not work around oversight, approvals or sandboxing. Ask before destructive or irreversible actions and before anything that leaves this machine on the user's behalf.\n\
         {}\n\
         If nothing needs to be said (for example after a background or heartbeat task with nothing to report), reply with exactly {SILENT_REPLY_TOKEN} and nothing else: that reply is not delivered.",
        crate::trust::PROMPT_NOTE
    )
}

/// `## Skills`: one line each (their sizes reported).
fn skills(skills: &[Skill], report: &mut PromptReport) -> String {
    let mut s = String::from(
        "## Skills\nBefore replying, check whether a skill below fits the request. If one does, read its SKILL.md with `read` first and follow it; read only the skill you need.\n",
    );
    for skill in skills {
        let line = format!(
            "- {}: {} ({})\n",
            skill.name,
            skill.description,
            skill.path.display()
        );
        report
            .skills
            .push((skill.name.clone(), line.chars().count()));
        s.push_str(&line);
    }
    s.trim_end().to_string()
}

/// `## Workspace Files (injected)`: what is loaded below, and what SOUL.md
/// and BOOTSTRAP.md mean when present.
fn workspace_files(files: &[InjectedFile]) -> String {
    let mut s = String::from(
        "## Workspace Files (injected)\nThese files from your workspace are included below under Project Context; they are already loaded, so do not read them again unless one says it was truncated.",
    );
    if files.iter().any(|f| f.name == "SOUL.md") {
        s.push_str("\nSOUL.md is your persona: embody its tone and boundaries.");
    }
    if files.iter().any(|f| f.name == "BOOTSTRAP.md") {
        s.push_str("\nBOOTSTRAP.md is present, so this is your first run: follow its ritual, and delete the file when it is done.");
    }
    s
}

/// `## Runtime`: the one line of where the agent runs.
fn runtime_line(r: &RuntimeInfo) -> String {
    let capabilities = if r.capabilities.is_empty() {
        "none".to_string()
    } else {
        r.capabilities.join(",")
    };
    format!(
        "## Runtime\nRuntime: agent={} | host={} | os={} ({}) | model={} | channel={} | capabilities={capabilities} | thinking={}",
        r.agent_id, r.host, r.os, r.arch, r.model, r.channel, r.thinking
    )
}

/// `# Project Context`: the workspace files (their sizes reported).
fn project_context(files: &[InjectedFile], report: &mut PromptReport) -> String {
    let mut s = String::from("# Project Context");
    for f in files {
        s.push_str(&format!("\n\n## {}\n\n{}", f.name, f.text.trim_end()));
        report.files.push((
            f.name.to_string(),
            f.raw_chars,
            f.text.chars().count(),
            f.truncated,
        ));
    }
    s
}

/// The host name (for the runtime line).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The first-run `BOOTSTRAP.md` a new workspace gets.
pub const FIRST_RUN_BOOTSTRAP: &str = "# First run\n\n\
     This workspace is new. Before anything else, get to know your user:\n\n\
     1. Introduce yourself briefly and ask what they would like to call you and how to address them.\n\
     2. Write what you learn: your name, tone and emoji in IDENTITY.md, theirs in USER.md, and any standing instructions in AGENTS.md.\n\
     3. Delete this file (BOOTSTRAP.md) when that is done, so the ritual does not repeat.\n";

/// Writes a first-run `BOOTSTRAP.md` into a workspace that was just created
/// (never into an existing one).
pub fn seed_new_workspace(workspace: &Path) -> std::io::Result<PathBuf> {
    let path = workspace.join("BOOTSTRAP.md");
    std::fs::write(&path, FIRST_RUN_BOOTSTRAP)?;
    Ok(path)
}

/// `/context list` text: one line per component with its size.
pub fn context_list(
    report: &PromptReport,
    history_messages: usize,
    history_chars: usize,
) -> String {
    let tools: usize = report.tools.iter().map(|(_, n)| n).sum();
    let skills: usize = report.skills.iter().map(|(_, n)| n).sum();
    let mut out = format!(
        "Context (prompt mode {}):\n- system prompt: {} chars (~{} tokens)\n",
        report.mode,
        report.total_chars,
        report.total_chars.div_ceil(4)
    );
    for (name, raw, injected, truncated) in &report.files {
        out.push_str(&format!(
            "- {name}: {injected} chars{}\n",
            if *truncated {
                format!(" (truncated from {raw})")
            } else {
                String::new()
            }
        ));
    }
    out.push_str(&format!(
        "- skills list: {} skills, {skills} chars\n- tool schemas: {} tools, {tools} chars\n- history: {history_messages} messages, {history_chars} chars",
        report.skills.len(),
        report.tools.len()
    ));
    out
}

/// `/context detail` text: every section, file, skill and tool schema.
pub fn context_detail(
    report: &PromptReport,
    history_messages: usize,
    history_chars: usize,
) -> String {
    let mut out = context_list(report, history_messages, history_chars);
    out.push_str("\n\nSections:");
    for (title, n) in &report.sections {
        out.push_str(&format!("\n- {title}: {n} chars"));
    }
    if !report.skills.is_empty() {
        out.push_str("\n\nSkills:");
        for (name, n) in &report.skills {
            out.push_str(&format!("\n- {name}: {n} chars"));
        }
    }
    out.push_str("\n\nTool schemas:");
    for (name, n) in &report.tools {
        out.push_str(&format!("\n- {name}: {n} chars"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Compares with `actors/tests/snapshots/<name>`; `UPDATE_SNAPSHOTS=1`
    /// rewrites the file instead (review the diff before committing).
    #[test]
    fn every_bootstrap_file_is_one_a_strangers_turn_cannot_touch() {
        for name in BOOTSTRAP_FILES {
            assert!(
                crate::trust::protected(Path::new(name)).is_some(),
                "{name} is injected into trusted turns' prompts: trust::protected must name it"
            );
        }
    }

    fn check_snapshot(name: &str, text: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(name);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{text}\n")).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, expected.trim_end_matches('\n'), "snapshot {name}");
    }

    fn runtime() -> RuntimeInfo {
        RuntimeInfo {
            agent_id: "main".into(),
            host: "box".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            model: "offline/echo".into(),
            channel: "webchat".into(),
            capabilities: vec!["markdown".into(), "images".into()],
            thinking: "off".into(),
        }
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "read".into(),
                description: "Read a text file from the workspace. Lines by offset.".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "exec".into(),
                description: "Run a shell command.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ]
    }

    fn skill() -> Skill {
        Skill {
            name: "weather".into(),
            description: "Get the forecast".into(),
            path: PathBuf::from("/ws/skills/weather/SKILL.md"),
            source: crate::context::skills::SkillSource::Workspace,
            requires: Default::default(),
            primary_env: None,
        }
    }

    #[test]
    fn full_prompt_matches_its_snapshot() {
        let files = vec![
            InjectedFile {
                name: "AGENTS.md",
                raw_chars: 9,
                text: "Be brief.".into(),
                truncated: false,
            },
            InjectedFile {
                name: "SOUL.md",
                raw_chars: 11,
                text: "Dry humour.".into(),
                truncated: false,
            },
        ];
        let tools = tools();
        let skills = vec![skill()];
        let rt = runtime();
        let p = build(&PromptInputs {
            mode: PromptMode::Full,
            tools: &tools,
            skills: &skills,
            workspace: Path::new("/ws"),
            files: &files,
            runtime: &rt,
            timezone: "UTC",
        });
        check_snapshot("prompt_full.txt", &p.text);
        assert_eq!(p.report.total_chars, p.text.chars().count());
        let titles: Vec<&str> = p.report.sections.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Identity",
                "Tooling",
                "Safety",
                "Skills",
                "Workspace",
                "Workspace Files",
                "Current Date & Time",
                "Runtime",
                "Project Context"
            ]
        );
    }

    #[test]
    fn minimal_and_none_modes_leave_sections_out() {
        let tools = tools();
        let skills = vec![skill()];
        let rt = runtime();
        let files = vec![InjectedFile {
            name: "AGENTS.md",
            raw_chars: 9,
            text: "Be brief.".into(),
            truncated: false,
        }];
        let minimal = build(&PromptInputs {
            mode: PromptMode::Minimal,
            tools: &tools,
            skills: &skills,
            workspace: Path::new("/ws"),
            files: &files,
            runtime: &rt,
            timezone: "UTC",
        });
        check_snapshot("prompt_minimal.txt", &minimal.text);
        assert!(!minimal.text.contains("## Skills"));
        let none = build(&PromptInputs {
            mode: PromptMode::None,
            tools: &tools,
            skills: &skills,
            workspace: Path::new("/ws"),
            files: &[],
            runtime: &rt,
            timezone: "UTC",
        });
        assert_eq!(
            &*none.text,
            "You are a personal assistant running inside ferroclaw."
        );
    }

    #[test]
    fn bootstrap_files_are_capped_blank_ones_skipped_and_memory_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("AGENTS.md"), "a".repeat(30_000)).unwrap();
        std::fs::write(d.join("SOUL.md"), "  \n\n").unwrap();
        std::fs::write(d.join("TOOLS.md"), "tools notes").unwrap();
        std::fs::write(d.join("USER.md"), "u".repeat(20_000)).unwrap();
        std::fs::write(d.join("MEMORY.md"), "remember this").unwrap();
        let cache = FileCache::default();
        let limits = BootstrapLimits {
            per_file: 20_000,
            total: 30_000,
        };
        let files = load_bootstrap(d, PromptMode::Full, limits, true, &cache);
        let names: Vec<&str> = files.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            ["AGENTS.md", "TOOLS.md", "USER.md", "MEMORY.md"],
            "blank SOUL.md skipped"
        );
        let agents = &files[0];
        assert!(agents.truncated);
        assert_eq!(agents.raw_chars, 30_000);
        assert!(agents.text.starts_with(&"a".repeat(14_000)));
        assert!(agents.text.ends_with(&"a".repeat(4_000)));
        assert!(
            agents.text.contains(
                "[... 12000 of 30000 characters truncated; read AGENTS.md for the full text ...]"
            ),
            "{}",
            &agents.text[13_990..14_100]
        );
        // 30,000 total: AGENTS.md took ~18,100 (cut), TOOLS.md 11, USER.md gets the rest.
        assert!(files[2].truncated);
        assert!(
            files[2].text.chars().count() < 12_000,
            "the rest of the budget"
        );
        assert!(
            files[3].text.starts_with("[MEMORY.md left out"),
            "{}",
            files[3].text
        );
        let group = load_bootstrap(
            d,
            PromptMode::Full,
            BootstrapLimits::default(),
            false,
            &cache,
        );
        assert!(
            group.iter().all(|f| f.name != "MEMORY.md"),
            "no MEMORY.md outside private chats"
        );
        let minimal = load_bootstrap(
            d,
            PromptMode::Minimal,
            BootstrapLimits::default(),
            true,
            &cache,
        );
        let names: Vec<&str> = minimal.iter().map(|f| f.name).collect();
        assert_eq!(names, ["AGENTS.md", "TOOLS.md"]);
        assert!(load_bootstrap(
            d,
            PromptMode::None,
            BootstrapLimits::default(),
            true,
            &cache
        )
        .is_empty());
    }

    #[test]
    fn silent_token_detection() {
        assert!(is_silent("NO_REPLY"));
        assert!(is_silent("  NO_REPLY\n"));
        assert!(!is_silent("NO_REPLY, but also this"));
        assert!(!is_silent("no_reply"));
        assert!(may_become_silent("NO_"));
        assert!(may_become_silent(" NO_REPLY"));
        assert!(!may_become_silent("NOPE"));
        assert!(!may_become_silent(""));
    }

    #[test]
    fn context_reports_list_every_component() {
        let tools = tools();
        let skills = vec![skill()];
        let rt = runtime();
        let files = vec![InjectedFile {
            name: "AGENTS.md",
            raw_chars: 30_000,
            text: "x".repeat(100),
            truncated: true,
        }];
        let p = build(&PromptInputs {
            mode: PromptMode::Full,
            tools: &tools,
            skills: &skills,
            workspace: Path::new("/ws"),
            files: &files,
            runtime: &rt,
            timezone: "UTC",
        });
        let list = context_list(&p.report, 3, 120);
        assert!(
            list.contains(&format!("- system prompt: {} chars", p.report.total_chars)),
            "{list}"
        );
        assert!(
            list.contains("- AGENTS.md: 100 chars (truncated from 30000)"),
            "{list}"
        );
        assert!(list.contains("- skills list: 1 skills"), "{list}");
        assert!(list.contains("- tool schemas: 2 tools"), "{list}");
        assert!(list.contains("- history: 3 messages, 120 chars"), "{list}");
        let detail = context_detail(&p.report, 3, 120);
        assert!(detail.contains("- Safety: "), "{detail}");
        assert!(detail.contains("- weather: "), "{detail}");
        assert!(detail.contains("- exec: 33 chars"), "{detail}");
    }
}
