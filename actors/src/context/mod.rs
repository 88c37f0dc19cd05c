//! `AgentContext`: what every run's system prompt and skill snapshot are
//! built from (workspace, bootstrap limits, skills config and filters,
//! envelope settings), shared by all sessions. Built prompts are interned:
//! sessions whose prompt text is the same share one allocation, and a
//! session's prompt is the same `Arc` from turn to turn while nothing
//! changed.

pub mod cache;
pub mod identity;
pub mod prompt;
pub mod skills;
pub mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::context::cache::FileCache;
use crate::context::prompt::{BootstrapLimits, BuiltPrompt, PromptInputs, PromptMode, RuntimeInfo};
use crate::context::skills::{SkillSnapshot, SkillSource, SkillStatus, SkillsConfig};
use crate::inbound::msg_context::EnvelopeSettings;
use crate::provider::ToolSpec;

/// Prompts kept for sharing.
const INTERNED: usize = 32;

pub struct AgentContext {
    pub workspace: PathBuf,
    pub skill_dirs: Vec<(PathBuf, SkillSource)>,
    /// Enabled bundles' skill roots (set live: `set_plugin_skills`).
    plugin_dirs: Mutex<Vec<(PathBuf, SkillSource)>>,
    /// Enabled bundles' env for tool processes (Claude `settings.json`).
    plugin_env: Mutex<Vec<(String, String)>>,
    pub skills: SkillsConfig,
    /// `agents.list[].skillFilter` by agent id.
    pub agent_skill_filters: HashMap<String, Vec<String>>,
    /// `channels.<id>.skillFilter` by channel id.
    pub channel_skill_filters: HashMap<String, Vec<String>>,
    pub limits: BootstrapLimits,
    pub envelope: EnvelopeSettings,
    pub host: String,
    /// Known agent ids (`/agent`).
    pub agents: Vec<String>,
    pub files: FileCache,
    interned: Mutex<Vec<Arc<BuiltPrompt>>>,
    /// The directories the files below come from, and what was read from
    /// them per (prompt mode, private chat) with the watch's generation
    /// then: served again while nothing there changed.
    watch: watch::DirWatch,
    snapshots: Mutex<HashMap<(PromptMode, bool), Snapshot>>,
}

/// What was read for one (prompt mode, private chat), and the watch's
/// generation before it was read.
type Snapshot = (u64, Arc<ContextFiles>);

/// One run's prompt and skills.
pub struct RunContext {
    pub prompt: Arc<BuiltPrompt>,
    pub skills: SkillSnapshot,
}

/// The channel a session key belongs to: `agent:<id>:<channel>:...` for
/// channel sessions, else the web chat.
pub fn channel_of_key(key: &str) -> &str {
    const CHANNELS: &[&str] = &[
        "telegram",
        "slack",
        "discord",
        "webhook",
        "hook",
        "cron",
        "whatsapp",
        "signal",
        "imessage",
        "matrix",
        "heartbeat",
    ];
    let third = crate::ids::key::first(key);
    CHANNELS
        .iter()
        .find(|c| **c == third)
        .copied()
        .unwrap_or("webchat")
}

/// What a channel can render (told to the model).
pub fn capabilities(channel: &str) -> Vec<String> {
    let caps: &[&str] = match channel {
        "webchat" => &["markdown", "code-blocks", "images", "streaming"],
        "telegram" => &["markdown", "images", "edits"],
        "slack" => &["markdown", "threads", "edits"],
        "discord" => &["markdown", "threads", "images"],
        _ => &["text"],
    };
    caps.iter().map(|c| c.to_string()).collect()
}

/// Whether a session key is a private chat (MEMORY.md is injected only there).
pub fn is_private(key: &str) -> bool {
    !crate::ids::key::is_group(key)
}

/// The prompt mode of a session key: sub-agents get `minimal`.
pub fn mode_of_key(key: &str) -> PromptMode {
    if crate::ids::key::has(key, "subagent") {
        PromptMode::Minimal
    } else {
        PromptMode::Full
    }
}

/// What a run's context read from disk (`AgentContext::read_files`).
#[derive(Debug, Clone)]
pub struct ContextFiles {
    /// Every skill found, requirements checked, no filter applied.
    skills: Vec<SkillStatus>,
    files: Vec<prompt::InjectedFile>,
}

impl ContextFiles {
    /// These files without the operator's private notes (`MEMORY.md`,
    /// `USER.md`): what a turn holding a stranger's message is given.
    pub fn for_stranger(&self) -> ContextFiles {
        ContextFiles {
            skills: self.skills.clone(),
            files: self
                .files
                .iter()
                .filter(|f| !crate::trust::private_file(f.name))
                .cloned()
                .collect(),
        }
    }
}

/// What one run's prompt depends on besides its session key.
#[derive(Debug, Clone, Copy)]
pub struct RunInputs<'a> {
    pub agent_id: &'a str,
    pub model: &'a str,
    pub thinking: &'a str,
    pub tools: &'a [ToolSpec],
    pub skill_filter: Option<&'a [String]>,
    /// The channel the turn's message came by (its capabilities go into the
    /// runtime line); None: the session key's.
    pub channel: Option<&'a str>,
}

impl AgentContext {
    /// Defaults for `workspace` (skills from `<workspace>/skills` and
    /// `<state dir>/skills`).
    pub fn new(workspace: PathBuf, state_dir: &std::path::Path) -> AgentContext {
        AgentContext {
            skill_dirs: vec![
                (workspace.join("skills"), SkillSource::Workspace),
                (state_dir.join("skills"), SkillSource::Managed),
            ],
            plugin_dirs: Mutex::new(Vec::new()),
            plugin_env: Mutex::new(Vec::new()),
            workspace,
            skills: SkillsConfig::default(),
            agent_skill_filters: HashMap::new(),
            channel_skill_filters: HashMap::new(),
            limits: BootstrapLimits::default(),
            envelope: EnvelopeSettings::default(),
            host: prompt::host_name(),
            agents: vec!["main".into()],
            files: FileCache::default(),
            interned: Mutex::new(Vec::new()),
            watch: watch::DirWatch::new(),
            snapshots: Mutex::new(HashMap::new()),
        }
    }

    /// Every skill folder: the workspace's, the state dir's, then enabled
    /// bundles' (a name found earlier wins).
    pub fn all_skill_dirs(&self) -> Vec<(PathBuf, SkillSource)> {
        let plugins = self
            .plugin_dirs
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        self.skill_dirs.iter().cloned().chain(plugins).collect()
    }

    /// Enabled bundles' skill roots and tool env; runs read them from
    /// their next turn.
    pub fn set_plugin_skills(&self, roots: Vec<PathBuf>, env: Vec<(String, String)>) {
        let dirs = roots
            .into_iter()
            .map(|r| (r, SkillSource::Plugin))
            .collect();
        if let Ok(mut p) = self.plugin_dirs.lock() {
            *p = dirs;
        }
        if let Ok(mut e) = self.plugin_env.lock() {
            *e = env;
        }
        // What was read before is read again.
        if let Ok(mut s) = self.snapshots.lock() {
            s.clear();
        }
    }

    /// What a run of `key` gets from disk, when nothing changed since it
    /// was last read: no file is looked at (one read of the watch's queue,
    /// which does not block, so actors call it on their own thread). None:
    /// read it (`read_files`).
    pub fn cached_files(&self, key: &str) -> Option<Arc<ContextFiles>> {
        let now = self.watch.generation()?;
        let snapshots = self.snapshots.lock().ok()?;
        let (generation, files) = snapshots.get(&(mode_of_key(key), is_private(key)))?;
        (*generation == now).then(|| files.clone())
    }

    /// Reads what a run of `key` gets from disk: the skills (discovered,
    /// their requirements checked) and the workspace's bootstrap files.
    /// Blocking file I/O (the files themselves cached by size and mtime):
    /// actors call it on the blocking pool when `cached_files` had nothing.
    pub fn read_files(&self, key: &str) -> Arc<ContextFiles> {
        if let Some(files) = self.cached_files(key) {
            return files;
        }
        // Watched before reading: a change made while reading is counted,
        // and the snapshot is read again next time.
        self.watch_sources();
        let generation = self.watch.generation();
        let found = skills::discover(&self.all_skill_dirs(), &self.files);
        if found.iter().any(|s| !s.requires.bins.is_empty()) {
            // Relative entries (`.`, an empty one) name the gateway's
            // working folder: not watched.
            for dir in crate::host::env().path.iter().filter(|d| d.is_absolute()) {
                self.watch.watch(dir);
            }
        }
        let mode = mode_of_key(key);
        let files = prompt::load_bootstrap(
            &self.workspace,
            mode,
            self.limits,
            is_private(key),
            &self.files,
        );
        let read = Arc::new(ContextFiles {
            skills: skills::status(found, &self.skills, &[]),
            files,
        });
        if let (Some(g), Ok(mut snapshots)) = (generation, self.snapshots.lock()) {
            snapshots.insert((mode, is_private(key)), (g, read.clone()));
        }
        read
    }

    /// Watches where the context files come from: the workspace (and the
    /// folders of bootstrap files that are links), each skills folder and
    /// each skill's own folder.
    fn watch_sources(&self) {
        self.watch.watch(&self.workspace);
        for name in prompt::BOOTSTRAP_FILES.iter().chain(&["memory.md"]) {
            let path = self.workspace.join(name);
            let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            if let Some(parent) = linked
                .then(|| std::fs::canonicalize(&path).ok())
                .flatten()
                .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
            {
                self.watch.watch(&parent);
            }
        }
        for (dir, _) in &self.all_skill_dirs() {
            self.watch.watch(dir);
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    self.watch.watch(&path);
                    // A linked skill folder: where its SKILL.md really is.
                    if let Ok(real) = std::fs::canonicalize(&path) {
                        self.watch.watch(&real);
                    }
                }
            }
        }
    }

    /// Every skill with its eligibility for an agent on a channel (and a
    /// per-run filter: a sub-agent's `skills`). Blocking: reads the skill
    /// folders.
    pub fn skill_status(
        &self,
        agent_id: &str,
        channel: &str,
        run: Option<&[String]>,
    ) -> Vec<SkillStatus> {
        let found = skills::discover(&self.all_skill_dirs(), &self.files);
        let all = skills::status(found, &self.skills, &[]);
        self.filtered(all, agent_id, channel, run)
    }

    /// Marks the skills the agent's, the channel's and the run's filters
    /// leave out.
    fn filtered(
        &self,
        mut all: Vec<SkillStatus>,
        agent_id: &str,
        channel: &str,
        run: Option<&[String]>,
    ) -> Vec<SkillStatus> {
        let mut filters: Vec<&[String]> = run.into_iter().collect();
        if let Some(f) = self.agent_skill_filters.get(agent_id) {
            filters.push(f);
        }
        if let Some(f) = self.channel_skill_filters.get(channel) {
            filters.push(f);
        }
        for s in &mut all {
            s.filtered = filters.iter().any(|f| !f.contains(&s.skill.name));
        }
        all
    }

    fn intern(&self, built: BuiltPrompt) -> Arc<BuiltPrompt> {
        let Ok(mut interned) = self.interned.lock() else {
            return Arc::new(built);
        };
        if let Some(p) = interned.iter().find(|p| p.text == built.text) {
            return p.clone();
        }
        let p = Arc::new(built);
        if interned.len() >= INTERNED {
            interned.remove(0);
        }
        interned.push(p.clone());
        p
    }

    /// The prompt and skill snapshot for one run of `key` (blocking: reads
    /// the files first).
    pub fn for_run(
        &self,
        key: &str,
        agent_id: &str,
        model: &str,
        thinking: &str,
        tools: &[ToolSpec],
        skill_filter: Option<&[String]>,
    ) -> RunContext {
        let read = self.read_files(key);
        self.build_run(
            &read,
            key,
            &RunInputs {
                agent_id,
                model,
                thinking,
                tools,
                skill_filter,
                channel: None,
            },
        )
    }

    /// The prompt and skill snapshot for one run of `key` from its files
    /// (no I/O).
    pub fn build_run(&self, read: &ContextFiles, key: &str, run: &RunInputs) -> RunContext {
        let RunInputs {
            agent_id,
            model,
            thinking,
            tools,
            skill_filter,
            channel,
        } = *run;
        let channel = channel.unwrap_or_else(|| channel_of_key(key));
        let mode = mode_of_key(key);
        let statuses = self.filtered(read.skills.clone(), agent_id, channel, skill_filter);
        let mut snapshot = skills::snapshot(&statuses, &self.skills);
        // A bundle's env comes first: the operator's skill entries override it.
        if let Ok(env) = self.plugin_env.lock() {
            snapshot.env.splice(0..0, env.iter().cloned());
        }
        let files = &read.files;
        let runtime = RuntimeInfo {
            agent_id: agent_id.to_string(),
            host: self.host.clone(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            model: model.to_string(),
            channel: channel.to_string(),
            capabilities: capabilities(channel),
            thinking: thinking.to_string(),
        };
        let built = prompt::build(&PromptInputs {
            mode,
            tools,
            skills: &snapshot.skills,
            workspace: &self.workspace,
            files,
            runtime: &runtime,
            timezone: &self.envelope.zone_name(),
        });
        RunContext {
            prompt: self.intern(built),
            skills: snapshot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_channel_privacy_and_mode() {
        assert_eq!(channel_of_key("agent:main:main"), "webchat");
        assert_eq!(channel_of_key("agent:main:web:main"), "webchat");
        assert_eq!(channel_of_key("agent:main:telegram:group:42"), "telegram");
        assert!(is_private("agent:main:telegram:dm:7"));
        assert!(!is_private("agent:main:telegram:group:42"));
        assert_eq!(mode_of_key("agent:main:subagent:01J"), PromptMode::Minimal);
        assert_eq!(mode_of_key("agent:main:main"), PromptMode::Full);
    }

    #[test]
    fn agent_channel_and_run_filters_narrow_the_skills() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        for name in ["alpha", "beta", "gamma"] {
            let dir = ws.path().join("skills").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: the {name} skill\n---\n"),
            )
            .unwrap();
        }
        let mut cx = AgentContext::new(ws.path().to_path_buf(), state.path());
        cx.agent_skill_filters
            .insert("ops".into(), vec!["alpha".into(), "beta".into()]);
        cx.channel_skill_filters
            .insert("telegram".into(), vec!["beta".into(), "gamma".into()]);
        let listed = |run: &RunContext| {
            run.skills
                .skills
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        let all = cx.for_run("agent:main:main", "main", "m/x", "off", &[], None);
        assert_eq!(listed(&all), ["alpha", "beta", "gamma"]);
        let ops = cx.for_run("agent:ops:main", "ops", "m/x", "off", &[], None);
        assert_eq!(listed(&ops), ["alpha", "beta"]);
        let both = cx.for_run("agent:ops:telegram:dm:1", "ops", "m/x", "off", &[], None);
        assert_eq!(
            listed(&both),
            ["beta"],
            "agent and channel filters both apply"
        );
        let run_filter = vec!["gamma".to_string()];
        let run = cx.for_run(
            "agent:main:subagent:x",
            "main",
            "m/x",
            "off",
            &[],
            Some(&run_filter),
        );
        assert_eq!(listed(&run), ["gamma"], "the run's snapshot is filtered");
        assert!(
            !run.prompt.text.contains("## Skills"),
            "minimal mode lists no skills in the prompt"
        );
        let run = cx.for_run(
            "agent:main:main",
            "main",
            "m/x",
            "off",
            &[],
            Some(&run_filter),
        );
        assert_eq!(listed(&run), ["gamma"]);
        assert!(
            run.prompt.text.contains("- gamma: the gamma skill")
                && !run.prompt.text.contains("alpha")
        );
    }

    #[test]
    fn the_prompt_is_the_same_allocation_until_a_file_changes() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("AGENTS.md"), "Be brief.").unwrap();
        let cx = AgentContext::new(ws.path().to_path_buf(), state.path());
        let a = cx.for_run("agent:main:main", "main", "offline/echo", "off", &[], None);
        let b = cx.for_run("agent:main:other", "main", "offline/echo", "off", &[], None);
        assert!(
            Arc::ptr_eq(&a.prompt, &b.prompt),
            "same inputs, one shared prompt"
        );
        assert!(a.prompt.text.contains("## AGENTS.md\n\nBe brief."));
        std::fs::write(ws.path().join("AGENTS.md"), "Be very brief.").unwrap();
        let c = cx.for_run("agent:main:main", "main", "offline/echo", "off", &[], None);
        assert!(c.prompt.text.contains("Be very brief."));
        let d = cx.for_run("agent:main:main", "main", "offline/echo", "high", &[], None);
        assert!(d.prompt.text.contains("thinking=high"));
    }

    /// The context files are read once and served from the snapshot while
    /// nothing changed; any change made before a run (an edit, a new
    /// file, a new skills folder and skill, a removal) is in that run.
    #[cfg(target_os = "linux")]
    #[test]
    fn files_are_read_again_only_after_a_change() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let cx = AgentContext::new(ws.path().to_path_buf(), state.path());
        let key = "agent:main:main";
        assert!(cx.cached_files(key).is_none(), "nothing read yet");
        let a = cx.read_files(key);
        assert!(a.files.is_empty() && a.skills.is_empty());
        let b = cx
            .cached_files(key)
            .expect("served without a look at the disk");
        assert!(Arc::ptr_eq(&a, &b));
        std::fs::write(ws.path().join("AGENTS.md"), "Be brief.").unwrap();
        assert!(cx.cached_files(key).is_none(), "a new file: read again");
        let c = cx.read_files(key);
        assert_eq!(c.files[0].text, "Be brief.");
        std::fs::write(ws.path().join("AGENTS.md"), "Be very brief.").unwrap();
        assert_eq!(cx.read_files(key).files[0].text, "Be very brief.");
        // A managed skills folder that did not exist, then a skill in it.
        let skill = state.path().join("skills/gamma");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: gamma\ndescription: g\n---\n",
        )
        .unwrap();
        let d = cx.read_files(key);
        assert_eq!(d.skills.len(), 1, "{:?}", d.skills);
        assert!(Arc::ptr_eq(&d, &cx.read_files(key)), "unchanged since");
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: gamma\ndescription: new\n---\n",
        )
        .unwrap();
        assert_eq!(cx.read_files(key).skills[0].skill.description, "new");
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        assert!(cx.read_files(key).files.is_empty(), "a removal too");
        // Other files of the state dir (the audit ledger's) change nothing.
        let e = cx.read_files(key);
        std::fs::write(state.path().join("audit.sqlite-wal"), "x").unwrap();
        assert!(Arc::ptr_eq(&e, &cx.read_files(key)));
    }
}
