//! The process environment as the actors see it: `PATH`, `HOME`, `TZ` and
//! named variables (providers' keys, skills' `requires.env`). `main.rs`
//! reads them once and installs them here before anything starts
//! (invariant 3); nothing else in either crate reads the environment. A
//! process that installs none (an in-process test) sees an empty one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Reads environment variables by name (tests pass a fixed map).
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What the actors may know of the process environment.
#[derive(Clone)]
pub struct HostEnv {
    /// `PATH`'s entries, in order.
    pub path: Vec<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `TZ` (the zone's name, for the prompt), when set and not empty.
    pub tz: Option<String>,
    /// Scratch files' folder: `TMPDIR`, else `/tmp`.
    pub tmp: PathBuf,
    /// Any other variable, read when asked.
    pub vars: EnvReader,
}

static HOST: OnceLock<HostEnv> = OnceLock::new();

/// Installs the process's environment; false if one was installed already
/// (the first stays).
pub fn install(env: HostEnv) -> bool {
    HOST.set(env).is_ok()
}

/// The installed environment, else an empty one (in this crate's unit
/// tests: the test process's, whichever test asks first, so a test that
/// looks for a binary does not depend on the order the tests run in).
pub fn env() -> &'static HostEnv {
    #[cfg(test)]
    let fallback = || HostEnv::from_vars(Arc::new(|k: &str| std::env::var(k).ok()));
    #[cfg(not(test))]
    let fallback = HostEnv::empty;
    HOST.get_or_init(fallback)
}

impl HostEnv {
    /// No variables, no `PATH`, no home.
    pub fn empty() -> HostEnv {
        HostEnv {
            path: Vec::new(),
            home: None,
            tz: None,
            tmp: PathBuf::from("/tmp"),
            vars: Arc::new(|_: &str| None),
        }
    }

    /// `PATH`, `HOME` and `TZ` taken from `vars` (`main.rs` hands in the
    /// process's), which stays the reader of every other variable.
    pub fn from_vars(vars: EnvReader) -> HostEnv {
        let set = |name: &str| vars(name).filter(|v| !v.is_empty());
        HostEnv {
            path: set("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            home: set("HOME").map(PathBuf::from),
            tz: set("TZ"),
            tmp: set("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
            vars,
        }
    }

    /// A variable's value, when set and not empty.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.vars)(name).filter(|v| !v.is_empty())
    }

    /// The first file named `bin` in `PATH`'s absolute entries (a name with
    /// a `/` is taken as it is, when it is a file).
    pub fn which(&self, bin: &str) -> Option<PathBuf> {
        if bin.contains('/') {
            return Path::new(bin).is_file().then(|| PathBuf::from(bin));
        }
        self.path.iter().map(|d| d.join(bin)).find(|p| p.is_file())
    }

    /// `~` and `~/x` under the home directory; other paths (and no home):
    /// None.
    pub fn expand_home(&self, raw: &str) -> Option<PathBuf> {
        let home = self.home.as_ref()?;
        match raw {
            "~" => Some(home.clone()),
            r => r.strip_prefix("~/").map(|rest| home.join(rest)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed() -> HostEnv {
        HostEnv {
            path: vec![PathBuf::from("/nonexistent"), PathBuf::from("/bin")],
            home: Some(PathBuf::from("/home/u")),
            tz: None,
            tmp: PathBuf::from("/tmp"),
            vars: Arc::new(|k: &str| match k {
                "SET" => Some("v".into()),
                "EMPTY" => Some(String::new()),
                _ => None,
            }),
        }
    }

    #[test]
    fn reads_only_what_it_was_given() {
        let env = fixed();
        assert_eq!(env.var("SET").as_deref(), Some("v"));
        assert_eq!(env.var("EMPTY"), None);
        assert_eq!(env.var("PATH"), None);
        assert_eq!(env.which("sh"), Some(PathBuf::from("/bin/sh")));
        assert_eq!(env.which("no-such-binary-here"), None);
        assert_eq!(env.expand_home("~/x"), Some(PathBuf::from("/home/u/x")));
        assert_eq!(env.expand_home("~"), Some(PathBuf::from("/home/u")));
        assert_eq!(env.expand_home("/abs"), None);
        assert_eq!(HostEnv::empty().expand_home("~/x"), None);
        assert_eq!(HostEnv::empty().which("sh"), None);
    }

    #[test]
    fn path_home_and_zone_come_from_the_variables_handed_in() {
        let env = HostEnv::from_vars(Arc::new(|k: &str| match k {
            "PATH" => Some("/a:/b".into()),
            "HOME" => Some("/h".into()),
            "TZ" => Some(String::new()),
            "TMPDIR" => Some("/t".into()),
            _ => None,
        }));
        assert_eq!(env.path, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(env.home, Some(PathBuf::from("/h")));
        assert_eq!(env.tz, None);
        assert_eq!(env.tmp, PathBuf::from("/t"));
    }
}
