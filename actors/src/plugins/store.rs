//! Installed bundles on disk: each under `<state>/extensions/<id>/` (a
//! copy: links are not followed, nothing outside the source is read),
//! recorded in `<state>/plugins/index.json` (format, source, version,
//! when), its own data under `<state>/plugins/data/<id>/` (`PLUGIN_DATA`).
//! Installs come from a folder or a `.tar`, `.tgz` or `.tar.gz` archive
//! (entries checked as they are unpacked: no absolute paths, no `..`);
//! a staging folder is renamed into place, so a failed install leaves
//! nothing behind. Whether a plugin is on is config
//! (`plugins.entries.<id>.enabled`), not here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::bundle::{self, Bundle, Detected};
use super::PluginError;

/// One install's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    pub format: String,
    pub source: String,
    pub version: Option<String>,
    pub installed_at_ms: u64,
}

/// `<state>/plugins/index.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Index {
    pub plugins: BTreeMap<String, InstallRecord>,
}

/// Where a state dir keeps plugins.
#[derive(Debug, Clone)]
pub struct PluginDirs {
    pub extensions: PathBuf,
    pub index: PathBuf,
    pub data: PathBuf,
}

impl PluginDirs {
    pub fn of(state_dir: &Path) -> PluginDirs {
        PluginDirs {
            extensions: state_dir.join("extensions"),
            index: state_dir.join("plugins").join("index.json"),
            data: state_dir.join("plugins").join("data"),
        }
    }

    pub fn root_of(&self, id: &str) -> PathBuf {
        self.extensions.join(id)
    }

    pub fn data_of(&self, id: &str) -> PathBuf {
        self.data.join(id)
    }

    pub fn read_index(&self) -> Result<Index, PluginError> {
        match std::fs::read_to_string(&self.index) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| PluginError::Invalid(format!("{}: {e}", self.index.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
            Err(e) => Err(PluginError::Read {
                path: self.index.display().to_string(),
                error: e.to_string(),
            }),
        }
    }

    fn write_index(&self, index: &Index) -> Result<(), PluginError> {
        let text =
            serde_json::to_string_pretty(index).map_err(|e| PluginError::Invalid(e.to_string()))?;
        std::fs::create_dir_all(self.index.parent().unwrap_or(Path::new(".")))
            .map_err(|e| PluginError::Write(e.to_string()))?;
        crate::fsutil::write_atomic(&self.index, &text)
            .map_err(|e| PluginError::Write(e.to_string()))
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> PluginError + '_ {
    move |e| PluginError::Write(format!("{}: {e}", path.display()))
}

/// Copies the tree at `from` into `to` (files and folders; links skipped).
fn copy_tree(from: &Path, to: &Path) -> Result<(), PluginError> {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| PluginError::Write(e.to_string()))?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&dest).map_err(io(&dest))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest).map_err(io(&dest))?;
        } else {
            tracing::warn!(path = %entry.path().display(), "plugin install: a link or special file is not copied");
        }
    }
    Ok(())
}

/// Unpacks a tar archive (gzipped when it says so) into `to`.
fn unpack(archive: &Path, to: &Path) -> Result<(), PluginError> {
    let name = archive.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let file = std::fs::File::open(archive).map_err(|e| PluginError::Read {
        path: archive.display().to_string(),
        error: e.to_string(),
    })?;
    let reader: Box<dyn std::io::Read> = if name.ends_with(".tgz") || name.ends_with(".tar.gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else if name.ends_with(".tar") {
        Box::new(file)
    } else {
        return Err(PluginError::Invalid(format!(
            "{name}: not a folder or a .tar, .tgz or .tar.gz archive"
        )));
    };
    let mut tar = tar::Archive::new(reader);
    let entries = tar
        .entries()
        .map_err(|e| PluginError::Invalid(format!("{name}: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| PluginError::Invalid(format!("{name}: {e}")))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        // `unpack_in` refuses absolute paths and `..`.
        let inside = entry
            .unpack_in(to)
            .map_err(|e| PluginError::Invalid(format!("{name}: {e}")))?;
        if !inside {
            return Err(PluginError::Outside(format!(
                "{name}: an entry leaves the archive"
            )));
        }
    }
    Ok(())
}

/// The plugin root inside an unpacked archive: the folder itself, or its
/// only child folder (`package/`, `my-bundle/`).
fn root_in(dir: &Path) -> PathBuf {
    if bundle::detect(dir).is_some() {
        return dir.to_path_buf();
    }
    let children: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    match children.as_slice() {
        [only] if only.is_dir() => only.clone(),
        _ => dir.to_path_buf(),
    }
}

/// Installs the bundle at `source` (a folder or an archive); `force`
/// replaces an install of the same id. The bundle as installed.
pub fn install(dirs: &PluginDirs, source: &Path, force: bool) -> Result<Bundle, PluginError> {
    std::fs::create_dir_all(&dirs.extensions).map_err(io(&dirs.extensions))?;
    let staging = dirs
        .extensions
        .join(format!(".staging-{}", ulid::Ulid::generate()));
    let result = stage_and_place(dirs, source, &staging, force);
    let _ = std::fs::remove_dir_all(&staging);
    result
}

fn stage_and_place(
    dirs: &PluginDirs,
    source: &Path,
    staging: &Path,
    force: bool,
) -> Result<Bundle, PluginError> {
    // Under the source's own name: a manifestless bundle is named by its folder.
    let name = source
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("bundle");
    let name = [".tar.gz", ".tgz", ".tar"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name);
    let staging = staging.join(crate::fsutil::safe_name(name));
    let staging = staging.as_path();
    std::fs::create_dir_all(staging).map_err(io(staging))?;
    if source.is_dir() {
        copy_tree(source, staging)?;
    } else if source.is_file() {
        unpack(source, staging)?;
    } else {
        return Err(PluginError::Read {
            path: source.display().to_string(),
            error: "no such file or folder".into(),
        });
    }
    let root = root_in(staging);
    let format = match bundle::detect(&root) {
        Some(Detected::Bundle(f)) => f,
        Some(Detected::Native) => return Err(PluginError::Native),
        None => return Err(PluginError::NotABundle(source.display().to_string())),
    };
    let staged = bundle::load(&root, format)?;
    let id = staged.id.clone();
    let dest = dirs.root_of(&id);
    let mut index = dirs.read_index()?;
    if dest.exists() || index.plugins.contains_key(&id) {
        if !force {
            return Err(PluginError::Exists(id));
        }
        let _ = std::fs::remove_dir_all(&dest);
    }
    std::fs::rename(&root, &dest).map_err(io(&dest))?;
    std::fs::create_dir_all(dirs.data_of(&id)).map_err(io(&dirs.data))?;
    index.plugins.insert(
        id.clone(),
        InstallRecord {
            format: format.as_str().into(),
            source: source.display().to_string(),
            version: staged.version.clone(),
            installed_at_ms: crate::now_ms(),
        },
    );
    dirs.write_index(&index)?;
    bundle::load(&dest, format)
}

/// Removes plugin `id`: its folder (only inside the extensions root), its
/// record, and its data unless `keep_data`.
pub fn uninstall(dirs: &PluginDirs, id: &str, keep_data: bool) -> Result<(), PluginError> {
    let mut index = dirs.read_index()?;
    if index.plugins.remove(id).is_none() {
        return Err(PluginError::Unknown(id.to_string()));
    }
    let root = dirs.root_of(id);
    let inside =
        root.parent() == Some(dirs.extensions.as_path()) && !id.contains('/') && id != "..";
    if inside {
        let _ = std::fs::remove_dir_all(&root);
        if !keep_data {
            let _ = std::fs::remove_dir_all(dirs.data_of(id));
        }
    }
    dirs.write_index(&index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_installs_from_a_folder_or_a_tgz_and_uninstalls_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = PluginDirs::of(&dir.path().join("state"));
        let src = dir.path().join("Review Pack");
        std::fs::create_dir_all(src.join("commands")).unwrap();
        std::fs::write(src.join("commands/review.md"), "Review the diff").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("commands/leak.md")).unwrap();
        let b = install(&dirs, &src, false).unwrap();
        assert_eq!(b.id, "review-pack");
        assert!(dirs
            .root_of("review-pack")
            .join("commands/review.md")
            .is_file());
        assert!(
            !dirs
                .root_of("review-pack")
                .join("commands/leak.md")
                .exists(),
            "links are not copied"
        );
        assert!(matches!(
            install(&dirs, &src, false),
            Err(PluginError::Exists(_))
        ));
        // The same as a .tgz with a top folder.
        let tgz = dir.path().join("pack.tgz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&tgz).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        tar.follow_symlinks(false);
        tar.append_dir_all("package", &src).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
        let b = install(&dirs, &tgz, true).unwrap();
        assert_eq!(b.id, "package");
        assert!(
            !dirs.root_of("package").join("commands/leak.md").exists(),
            "a link entry is not unpacked"
        );
        uninstall(&dirs, "review-pack", false).unwrap();
        assert!(!dirs.root_of("review-pack").exists());
        assert!(!dirs
            .read_index()
            .unwrap()
            .plugins
            .contains_key("review-pack"));
        assert!(matches!(
            uninstall(&dirs, "review-pack", false),
            Err(PluginError::Unknown(_))
        ));
        let leftovers: Vec<_> = std::fs::read_dir(&dirs.extensions)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers, ["package"], "no staging folder left");
    }
}
