//! `PluginSet`: the installed bundles as the gateway applies them, read
//! from the index and each bundle's files (blocking I/O: at start, and on
//! the blocking pool when config or installs change). Only enabled
//! bundles contribute: skill roots, MCP servers (the config's own win a
//! name clash), LSP servers, command hooks (gated by their entry's
//! `hooks` policy) and tool env from Claude `settings.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::bundle::{self, Bundle, BundleFormat};
use super::components::{self, Components};
use super::store::{InstallRecord, PluginDirs};
use crate::hooks::table::{HookTable, PluginEnv};
use crate::settings::{HooksSettings, LspServerSettings, McpSettings, PluginsSettings};

/// One installed plugin.
#[derive(Debug, Clone)]
pub struct Installed {
    pub id: String,
    pub record: InstallRecord,
    /// Its manifest and components, or why they cannot be read.
    pub bundle: Result<(Bundle, Components), super::PluginError>,
    pub enabled: bool,
    pub env: PluginEnv,
}

impl Installed {
    pub fn bundle(&self) -> Option<&Bundle> {
        self.bundle.as_ref().ok().map(|(b, _)| b)
    }

    pub fn components(&self) -> Option<&Components> {
        self.bundle.as_ref().ok().map(|(_, c)| c)
    }

    /// Whether enabling it starts processes (MCP stdio servers, LSP
    /// servers, hooks): what `--accept-capabilities` consents to.
    pub fn runs_commands(&self) -> bool {
        !self.surface().is_empty()
    }

    /// What enabling it would run or reach, one line each, with its own
    /// folders written `${PLUGIN_ROOT}` and `${PLUGIN_DATA}`.
    pub fn surface(&self) -> Vec<String> {
        let Some(c) = self.components() else {
            return Vec::new();
        };
        let (root, data) = (
            self.env.root.display().to_string(),
            self.env.data.display().to_string(),
        );
        let rel = |s: String| {
            s.replace(&root, "${PLUGIN_ROOT}")
                .replace(&data, "${PLUGIN_DATA}")
        };
        let line = |cmd: &str, args: &[String]| {
            rel(std::iter::once(cmd.to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "))
        };
        let mut out = Vec::new();
        for (name, s) in &c.mcp {
            match (&s.command, &s.url) {
                (Some(cmd), _) => out.push(format!("mcp {name}: runs {}", line(cmd, &s.args))),
                (None, Some(url)) => out.push(format!("mcp {name}: connects to {url}")),
                _ => {}
            }
        }
        for (name, s) in &c.lsp {
            out.push(format!("lsp {name}: runs {}", line(&s.command, &s.args)));
        }
        let mut table = HookTable::default();
        for (_, raw) in &c.hooks {
            let all = crate::settings::PluginHookPolicy {
                allow_conversation_access: Some(true),
                ..Default::default()
            };
            table.add_claude(&self.id, raw, &self.env, Some(&all));
        }
        for h in table.all() {
            out.push(format!(
                "hook {} ({}): runs {}",
                h.id,
                h.point.name(),
                rel(h.command.clone())
            ));
        }
        out
    }

    /// The consent token of `surface`: changes when what it runs does.
    pub fn review_token(&self) -> String {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for line in self.surface() {
            h.update(line.as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Every installed plugin, read.
#[derive(Debug, Clone, Default)]
pub struct PluginSet {
    pub plugins: Vec<Installed>,
    /// The index could not be read.
    pub error: Option<String>,
    /// Counts the sets the host applied (OpenClaw's plugin generation).
    pub generation: u64,
}

impl PluginSet {
    /// Reads the index and each bundle under `state_dir`.
    pub fn load(state_dir: &std::path::Path, settings: &PluginsSettings) -> PluginSet {
        let dirs = PluginDirs::of(state_dir);
        let index = match dirs.read_index() {
            Ok(i) => i,
            Err(e) => {
                return PluginSet {
                    plugins: Vec::new(),
                    error: Some(e.to_string()),
                    generation: 0,
                }
            }
        };
        let plugins = index
            .plugins
            .into_iter()
            .map(|(id, record)| {
                let env = PluginEnv {
                    root: dirs.root_of(&id),
                    data: dirs.data_of(&id),
                };
                let bundle = read_bundle(&env.root, &record).map(|b| {
                    let c = components::read(&b, &env);
                    (b, c)
                });
                Installed {
                    enabled: settings.is_enabled(&id),
                    id,
                    record,
                    bundle,
                    env,
                }
            })
            .collect();
        PluginSet {
            plugins,
            error: None,
            generation: 0,
        }
    }

    pub fn get(&self, id: &str) -> Option<&Installed> {
        self.plugins.iter().find(|p| p.id == id)
    }

    fn enabled(&self) -> impl Iterator<Item = (&Installed, &Bundle, &Components)> {
        self.plugins
            .iter()
            .filter(|p| p.enabled)
            .filter_map(|p| p.bundle.as_ref().ok().map(|(b, c)| (p, b, c)))
    }

    /// Enabled bundles' skill roots (inside their plugin).
    pub fn skill_roots(&self) -> Vec<PathBuf> {
        self.enabled()
            .flat_map(|(_, b, _)| {
                b.skill_roots
                    .iter()
                    .filter_map(|r| bundle::inside(&b.root, r).ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// `mcp` with enabled bundles' servers added (the config's win).
    pub fn merged_mcp(&self, mcp: &McpSettings) -> McpSettings {
        let mut merged = mcp.clone();
        for (p, _, c) in self.enabled() {
            for (name, server) in &c.mcp {
                if merged.servers.contains_key(name) {
                    tracing::warn!(plugin = %p.id, server = %name, "a configured MCP server of this name wins");
                    continue;
                }
                merged.servers.insert(name.clone(), server.clone());
            }
        }
        merged
    }

    /// Enabled bundles' LSP servers (the config's win a name clash).
    pub fn lsp_servers(
        &self,
        configured: &BTreeMap<String, LspServerSettings>,
    ) -> BTreeMap<String, LspServerSettings> {
        let mut all = configured.clone();
        for (_, _, c) in self.enabled() {
            for (name, s) in &c.lsp {
                all.entry(name.clone()).or_insert_with(|| s.clone());
            }
        }
        all
    }

    /// The operator's hooks and enabled bundles' hooks.
    pub fn hook_table(&self, hooks: &HooksSettings, plugins: &PluginsSettings) -> HookTable {
        let mut table = HookTable::default();
        table.add_config(&hooks.commands);
        for (p, _, c) in self.enabled() {
            let policy = plugins.entry(&p.id).and_then(|e| e.hooks.as_ref());
            for (_, raw) in &c.hooks {
                table.add_claude(&p.id, raw, &p.env, policy);
            }
        }
        table
    }

    /// Env from enabled Claude bundles' `settings.json`, for tool processes.
    pub fn tool_env(&self) -> Vec<(String, String)> {
        self.enabled().flat_map(|(_, _, c)| c.env.clone()).collect()
    }
}

fn read_bundle(
    root: &std::path::Path,
    record: &InstallRecord,
) -> Result<Bundle, super::PluginError> {
    let format = match record.format.as_str() {
        "agent" => BundleFormat::Agent,
        "codex" => BundleFormat::Codex,
        "cursor" => BundleFormat::Cursor,
        _ => BundleFormat::Claude,
    };
    if !root.is_dir() {
        return Err(super::PluginError::Read {
            path: root.display().to_string(),
            error: "missing".into(),
        });
    }
    bundle::load(root, format)
}
