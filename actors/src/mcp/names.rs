//! The names MCP tools are offered under, as OpenClaw's embedded runtime
//! makes them (so a `tools.deny: ["docs__*"]` written for OpenClaw means the
//! same here): `<server>__<tool>`, characters outside `[A-Za-z0-9_-]` made
//! `-`, a fragment that does not start with a letter prefixed (`mcp-`,
//! `tool-`), the server part at most 30 characters and the whole at most 64;
//! a name already taken (a built-in tool, an earlier server's tool; compared
//! without case) gets `-2`, `-3`, ... Stable: the same servers with the same
//! tools get the same names on every start.

use std::collections::HashSet;

const MAX_PREFIX: usize = 30;
const MAX_TOTAL: usize = 64;

fn fragment(raw: &str, fallback: &str, max: Option<usize>) -> String {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = if cleaned.is_empty() {
        fallback.to_string()
    } else {
        cleaned
    };
    let named = if cleaned.starts_with(|c: char| c.is_ascii_alphabetic()) {
        cleaned
    } else {
        format!("{fallback}-{cleaned}")
    };
    match max {
        Some(m) if named.len() > m => named[..m].to_string(),
        _ => named,
    }
}

/// The server names' safe forms, deduplicated in the order given.
pub fn server_names<'a>(servers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    servers
        .into_iter()
        .map(|s| {
            let base = fragment(s, "mcp", Some(MAX_PREFIX));
            let mut name = base.clone();
            let mut n = 2;
            while taken.contains(&name.to_ascii_lowercase()) {
                let suffix = format!("-{n}");
                let keep = MAX_PREFIX.saturating_sub(suffix.len()).max(1);
                name = format!("{}{suffix}", &base[..keep.min(base.len())]);
                n += 1;
            }
            taken.insert(name.to_ascii_lowercase());
            name
        })
        .collect()
}

/// The offered name of `tool` of the server whose safe name is `server`;
/// `taken` holds the names already used (lowercase) and gets this one.
pub fn tool_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let safe = fragment(tool, "tool", None);
    let room = MAX_TOTAL.saturating_sub(server.len() + 2).max(1);
    let mut base: String = safe.chars().take(room).collect();
    if base.is_empty() {
        base = "tool".into();
    }
    let mut name = format!("{server}__{base}");
    let mut n = 2;
    while taken.contains(&name.to_ascii_lowercase()) {
        let suffix = format!("-{n}");
        let keep = room.saturating_sub(suffix.len()).max(1);
        let short: String = base.chars().take(keep).collect();
        name = format!("{server}__{short}{suffix}");
        n += 1;
    }
    taken.insert(name.to_ascii_lowercase());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_bounded_and_collision_free() {
        let servers = server_names(["docs", "Docs", "9lives", "a very/odd name"]);
        assert_eq!(servers, ["docs", "Docs-2", "mcp-9lives", "a-very-odd-name"]);
        let mut taken: HashSet<String> = ["exec".to_string()].into();
        assert_eq!(tool_name("docs", "get-sum", &mut taken), "docs__get-sum");
        assert_eq!(tool_name("docs", "get.sum", &mut taken), "docs__get-sum-2");
        assert_eq!(tool_name("docs", "1st", &mut taken), "docs__tool-1st");
        let long = "x".repeat(100);
        let n = tool_name("docs", &long, &mut taken);
        assert_eq!(n.len(), 64);
        let n2 = tool_name("docs", &long, &mut taken);
        assert_eq!(n2.len(), 64);
        assert!(n2.ends_with("-2") && n != n2);
        assert!(crate::tool::is_mcp(&n) && !crate::tool::is_mcp("exec"));
    }
}
