//! OpenClaw's auto-detection of audio transcribers, for when
//! `tools.media.audio` names no models and is not `enabled: false`: the
//! first working option, in OpenClaw's order:
//! 1. a local CLI on `PATH`: `whisper-cli` (whisper.cpp, with the model in
//!    `WHISPER_CPP_MODEL`), then `whisper` (the Python CLI);
//! 2. a provider with a key (`models.providers.<id>.apiKey` or
//!    `<ID>_API_KEY`): OpenAI, then Groq, then Deepgram.
//!
//! `sherpa-onnx-offline` (OpenClaw's first choice) is not detected: its
//! output needs parsing ferroclaw does not do; name it as a CLI entry.
//! Detection runs when the config is read, not per message.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;

use crate::settings::ProviderSettings;

/// What was found: a CLI (command and args, OpenClaw's templates) or a
/// provider id (`config.rs` makes it a `models[]` entry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub kind: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub provider: Option<String>,
}

/// Where to look and what the environment says (a seam for tests).
pub struct Env<'a> {
    pub path: Option<&'a OsStr>,
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn find(&self, name: &str) -> Option<PathBuf> {
        std::env::split_paths(self.path?)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    }
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn cli(command: PathBuf, args: &[&str]) -> Found {
    Found {
        kind: Some("cli".into()),
        command: Some(command.display().to_string()),
        args: args.iter().map(|a| a.to_string()).collect(),
        provider: None,
    }
}

/// The first working audio option, if any.
pub fn audio(env: &Env<'_>, providers: &BTreeMap<String, ProviderSettings>) -> Option<Found> {
    if let (Some(bin), Some(model)) = (env.find("whisper-cli"), (env.var)("WHISPER_CPP_MODEL")) {
        let mut e = cli(bin, &["-m", "", "-nt", "-np", "-f", "{{MediaPath}}"]);
        e.args[1] = model;
        return Some(e);
    }
    if let Some(bin) = env.find("whisper") {
        // The Python CLI writes <name>.txt into {{OutputDir}} (read when
        // stdout is empty).
        return Some(cli(
            bin,
            &[
                "{{MediaPath}}",
                "--model",
                "base",
                "--output_format",
                "txt",
                "--output_dir",
                "{{OutputDir}}",
                "--verbose",
                "False",
            ],
        ));
    }
    ["openai", "groq", "deepgram"].into_iter().find_map(|id| {
        let configured = providers
            .get(id)
            .and_then(|p| p.api_key.clone())
            .filter(|k| !k.is_empty());
        let env_key =
            (env.var)(&crate::provider::selection::env_var_for(id)).filter(|k| !k.is_empty());
        (configured.is_some() || env_key.is_some()).then(|| Found {
            provider: Some(id.to_string()),
            ..Found::default()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(dir: &std::path::Path, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn local_clis_come_first_then_providers_with_keys_in_openclaws_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().as_os_str();
        let none = |_: &str| None;
        let no_providers = BTreeMap::new();
        let env = Env {
            path: Some(path),
            var: &none,
        };
        assert_eq!(
            audio(&env, &no_providers),
            None,
            "nothing installed, no keys"
        );

        let groq = |k: &str| (k == "GROQ_API_KEY").then(|| "gsk".to_string());
        let env = Env {
            path: Some(path),
            var: &groq,
        };
        assert_eq!(
            audio(&env, &no_providers).unwrap().provider.as_deref(),
            Some("groq")
        );
        let mut providers = BTreeMap::new();
        providers.insert(
            "openai".to_string(),
            serde_json::from_value(serde_json::json!({"apiKey": "sk"})).unwrap(),
        );
        assert_eq!(
            audio(&env, &providers).unwrap().provider.as_deref(),
            Some("openai")
        );

        tool(dir.path(), "whisper");
        let py = audio(&env, &providers).unwrap();
        assert!(py.command.unwrap().ends_with("/whisper"));
        assert!(py.args.contains(&"{{OutputDir}}".to_string()));

        // whisper-cli needs its model: without WHISPER_CPP_MODEL it is passed over.
        tool(dir.path(), "whisper-cli");
        assert!(audio(&env, &providers)
            .unwrap()
            .command
            .unwrap()
            .ends_with("/whisper"));
        let model = |k: &str| (k == "WHISPER_CPP_MODEL").then(|| "/m/ggml-base.bin".to_string());
        let env = Env {
            path: Some(path),
            var: &model,
        };
        let cpp = audio(&env, &providers).unwrap();
        assert!(cpp.command.unwrap().ends_with("/whisper-cli"));
        assert_eq!(cpp.args[..2], ["-m", "/m/ggml-base.bin"]);
    }
}
