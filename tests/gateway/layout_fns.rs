//! No production function over 60 lines, except declared tables (a `///`
//! that says "declared table": tool schemas).

use super::layout::{long_fns, repo, rust_files, starts_fn, without_tests, MAX_HANDLER_LINES};

/// The function's name on its first line (`pub async fn name<..>(`).
fn name_of(line: &str) -> &str {
    let rest = &line[line.find("fn ").map(|i| i + 3).unwrap_or(0)..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Whether the `///` lines right above line `at` (0-based) declare a table.
fn declared_table(lines: &[&str], at: usize) -> bool {
    lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.trim_start().starts_with("///") || l.trim_start().starts_with("#["))
        .any(|l| l.contains("declared table"))
}

/// `(file, function, lines)` of every production function over 60 lines.
fn long_production_fns() -> Vec<(String, String, usize)> {
    let root = repo();
    let mut out = Vec::new();
    for dir in ["src", "actors/src"] {
        for f in rust_files(&root.join(dir)) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let src = std::fs::read_to_string(&f).unwrap();
            let src = without_tests(&src);
            let lines: Vec<&str> = src.lines().collect();
            let file = f.strip_prefix(&root).unwrap().display().to_string();
            for (line, n) in long_fns(src, MAX_HANDLER_LINES, starts_fn) {
                if !declared_table(&lines, line - 1) {
                    out.push((file.clone(), name_of(lines[line - 1]).to_string(), n));
                }
            }
        }
    }
    out
}

#[test]
fn no_production_function_is_over_60_lines_but_declared_tables() {
    let found: Vec<String> = long_production_fns()
        .iter()
        .map(|(file, name, n)| format!("{file}: fn {name} is {n} lines (at most 60)"))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_declared_table_and_a_name_are_read() {
    assert_eq!(name_of("pub(crate) async fn parse_x<T>(a: T) {"), "parse_x");
    let lines = [
        "/// Specs (a declared table).",
        "#[allow(x)]",
        "fn specs() {",
    ];
    assert!(declared_table(&lines, 2));
    assert!(!declared_table(&["/// Specs.", "fn specs() {"], 1));
}
