//! The silent memory flush before a compaction: once per compaction cycle,
//! when the context crosses `window - reserve - softThresholdTokens`, the
//! model is asked (without tools, unseen by the user) for the durable
//! memories of the conversation; its answer is appended to
//! `memory/YYYY-MM-DD.md` by the gateway itself, so the flush can only ever
//! append to that one file. `NO_REPLY` (or nothing) appends nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The flush turn's request (after the conversation).
pub fn request(prompt: &str, day: &str) -> String {
    format!(
        "{prompt}\nReply with short markdown bullet points: the durable facts, decisions, preferences and open tasks from this conversation that should outlive it. They will be appended to memory/{day}.md. If there is nothing worth keeping, reply exactly NO_REPLY."
    )
}

/// What to append for `answer` (None: nothing to keep).
pub fn to_append(answer: &str) -> Option<String> {
    let a = answer.trim();
    (!a.is_empty() && !crate::context::prompt::is_silent(a)).then(|| a.to_string())
}

/// Today's daily note name (gateway-local date).
pub fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

/// Appends `text` to `memory/<day>.md` in `workspace` (made if missing).
pub fn append_daily(workspace: &Path, day: &str, text: &str) -> std::io::Result<PathBuf> {
    let dir = workspace.join("memory");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{day}.md"));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let at = chrono::Local::now().format("%H:%M");
    write!(f, "\n## Memory flush {at}\n\n{}\n", text.trim_end())?;
    f.sync_data()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_appends_to_the_daily_note_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("memory")).unwrap();
        std::fs::write(dir.path().join("memory/2026-11-24.md"), "- earlier note\n").unwrap();
        let p = append_daily(dir.path(), "2026-11-24", "- Ann moved to Porto\n").unwrap();
        let text = std::fs::read_to_string(p).unwrap();
        assert!(
            text.starts_with("- earlier note\n"),
            "appended, never replaced"
        );
        assert!(text.ends_with("- Ann moved to Porto\n"));
        assert_eq!(to_append(" NO_REPLY "), None);
        assert_eq!(to_append(""), None);
        assert_eq!(to_append("- x"), Some("- x".into()));
        assert!(request("Store now.", "2026-11-24").contains("memory/2026-11-24.md"));
    }
}
