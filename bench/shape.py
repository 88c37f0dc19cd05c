#!/usr/bin/env python3
"""The code's shape at one or more revisions, counted the same way at each:
the numbers issue 51 ("redesign, third step") set out to move.

    python3 bench/shape.py b697d2c HEAD

Each revision is read with `git archive` (nothing is checked out). Prints
one row per measure and one column per revision; asserts nothing.

What is counted, in production code (`actors/src`, `src`; files named
`tests.rs` or `*_tests.rs` and a trailing `#[cfg(test)] mod tests` left out):
- `SessionActor` methods (every `fn` in an `impl SessionActor` block) and
  fields;
- `Result<_, String>` lines;
- actor messages declared outside a `messages.rs`, and tuple messages
  (a `#[rtype]` struct whose fields have no names);
- lines naming `Arc<Mutex|RwLock>`;
- top-level settings sections typed as JSON (`Value`);
- `src/main.rs` lines and its `main()`'s;
- functions over 60 lines (braces in literals and comments not counted;
  declared tables left out, as `tests/gateway/layout_fns.rs` does);
- source files of 700 to 800 lines;
- in `tests/` outside `support/`: sleeps of 100 ms or more, and those
  without a comment saying time is what is tested.
"""

import re
import subprocess
import sys
import tarfile
import io
from pathlib import PurePosixPath


def files_at(rev):
    """path -> text of every .rs file at `rev`."""
    raw = subprocess.run(
        ["git", "archive", "--format=tar", rev, "actors/src", "src", "tests"],
        check=True,
        capture_output=True,
    ).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        for m in t.getmembers():
            if m.isfile() and m.name.endswith(".rs"):
                out[m.name] = t.extractfile(m).read().decode("utf-8", "replace")
    return out


def is_test_file(path):
    name = PurePosixPath(path).name
    return name == "tests.rs" or name.endswith("_tests.rs")


def without_tests(src):
    i = src.find("#[cfg(test)]\nmod tests {")
    return src if i < 0 else src[:i]


def production(files):
    return {
        p: without_tests(s)
        for p, s in files.items()
        if (p.startswith("actors/src/") or p.startswith("src/")) and not is_test_file(p)
    }


def code_only(src):
    """`src` with comments and the insides of literals blanked, lines kept."""
    out, i, n = [], 0, len(src)

    def blank(c):
        return c if c == "\n" else " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            while i < n and src[i] != "\n":
                out.append(" ")
                i += 1
        elif c == "r" and i + 1 < n and src[i + 1] in '"#' and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")):
            j = i + 1
            while j < n and src[j] == "#":
                j += 1
            if j < n and src[j] == '"':
                close = '"' + "#" * (j - i - 1)
                end = src.find(close, j + 1)
                end = n if end < 0 else end + len(close)
                out.extend(blank(ch) for ch in src[i:end])
                i = end
            else:
                out.append(c)
                i += 1
        elif c == '"':
            out.append(" ")
            i += 1
            while i < n and src[i] != '"':
                step = 2 if src[i] == "\\" else 1
                out.extend(blank(ch) for ch in src[i : i + step])
                i += step
            if i < n:
                out.append(" ")
                i += 1
        elif c == "'" and ((i + 2 < n and src[i + 2] == "'") or (i + 1 < n and src[i + 1] == "\\")):
            end = src.find("'", i + 2)
            end = n if end < 0 else end + 1
            out.extend(blank(ch) for ch in src[i:end])
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


FN = re.compile(r"^\s*(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?fn ")


def declared_table(lines, at):
    """Whether the `///` and `#[..]` lines above line `at` say "declared table"."""
    j = at - 1
    while j >= 0 and lines[j].lstrip().startswith(("///", "#[")):
        if "declared table" in lines[j]:
            return True
        j -= 1
    return False


def long_fns(src, limit=60):
    """(name, lines) of every function longer than `limit` lines, but
    declared tables (tool schemas, a method table)."""
    lines = src.split("\n")
    code = code_only(src).split("\n")
    found = []
    for i, line in enumerate(lines):
        if not FN.match(line) or line.rstrip().endswith(";") or declared_table(lines, i):
            continue
        depth, opened = 0, False
        for j in range(i, len(code)):
            depth += code[j].count("{") - code[j].count("}")
            opened |= "{" in code[j]
            if opened and depth <= 0:
                if j - i + 1 > limit:
                    name = re.search(r"fn ([A-Za-z0-9_]+)", line).group(1)
                    found.append((name, j - i + 1))
                break
    return found


def block_at(src, start):
    """The text of the `{ .. }` block whose `{` is at or after `start`."""
    code = code_only(src)
    i = code.index("{", start)
    depth = 0
    for j in range(i, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return src[i : j + 1]
    return src[i:]


def session_actor(prod):
    methods = fields = 0
    for p, s in prod.items():
        if not p.startswith("actors/src/session/"):
            continue
        for m in re.finditer(r"^impl SessionActor \{", s, re.M):
            body = block_at(s, m.start())
            methods += len(re.findall(r"^    (pub(\([^)]*\))? )?(async )?fn ", body, re.M))
        m = re.search(r"^pub struct SessionActor \{", s, re.M)
        if m:
            body = block_at(s, m.start())
            fields += len(re.findall(r"^    (pub(\([^)]*\))? )?[a-z_]+: ", body, re.M))
    return methods, fields


def messages(prod):
    outside = tuples = 0
    for p, s in prod.items():
        for m in re.finditer(r"#\[rtype[^\]]*\]\s*(#\[[^\]]*\]\s*)*pub(\([^)]*\))? struct \w+(<[^>]*>)?\s*([({;])", s):
            if PurePosixPath(p).name != "messages.rs":
                outside += 1
            if m.group(4) == "(":
                tuples += 1
    return outside, tuples


def settings_value_sections(prod):
    s = prod.get("actors/src/settings/mod.rs", "")
    m = re.search(r"^pub struct Settings \{", s, re.M)
    if not m:
        return "?"
    body = block_at(s, m.start())
    return len(re.findall(r"^    pub [a-z_]+: (serde_json::)?Value,", body, re.M))


def main_rs(files):
    s = files.get("src/main.rs", "")
    main_len = next((n for name, n in long_fns(s, 0) if name == "main"), 0)
    return len(s.split("\n")) - 1, main_len


SLEEP = re.compile(r"sleep\((std::time::)?Duration::from_(millis|secs(_f64)?)\(([0-9_.]+)\)")


def long_sleeps(files):
    """Sleeps of 100 ms or more in tests outside `support/`: all, and those
    whose comment (the lines just above) does not say time is what is tested."""
    n = unexplained = 0
    for p, s in files.items():
        if not p.startswith("tests/") or "/support/" in p:
            continue
        for m in SLEEP.finditer(s):
            v = float(m.group(4).replace("_", ""))
            ms = v if m.group(2) == "millis" else v * 1000
            if ms < 100:
                continue
            n += 1
            above = "\n".join(s[: m.start()].split("\n")[-4:]).lower()
            unexplained += "time is what is tested" not in above
    return n, unexplained


def measure(rev):
    files = files_at(rev)
    prod = production(files)
    methods, fields = session_actor(prod)
    outside, tuples = messages(prod)
    main_lines, main_fn = main_rs(files)
    sleeps = long_sleeps(files)
    lines = {p: len(s.split("\n")) - 1 for p, s in files.items() if p.startswith(("actors/src/", "src/"))}
    return [
        ("SessionActor methods", methods),
        ("SessionActor fields", fields),
        ("production Result<_, String> lines", sum(len(re.findall(r"Result<[^;\n]*, String>", s)) for s in prod.values())),
        ("messages declared outside messages.rs", outside),
        ("tuple messages", tuples),
        ("Arc<Mutex|RwLock> lines", sum(len(re.findall(r"Arc<(std::sync::)?(Mutex|RwLock)", s)) for s in prod.values())),
        ("settings sections typed as Value", settings_value_sections(prod)),
        ("src/main.rs lines", main_lines),
        ("main() lines", main_fn),
        ("production functions over 60 lines", sum(len(long_fns(s)) for s in prod.values())),
        ("source files of 700-800 lines", sum(700 <= n <= 800 for n in lines.values())),
        ("sleeps >= 100 ms in tests outside support/", sleeps[0]),
        ("  of which not said to test time", sleeps[1]),
        ("Rust lines (actors/src, src, tests)", sum(len(s.split("\n")) - 1 for s in files.values())),
    ]


def main():
    revs = sys.argv[1:] or ["HEAD"]
    columns = [measure(r) for r in revs]
    width = max(len(name) for name, _ in columns[0])
    print(f"{'measure':<{width}}  " + "  ".join(f"{r:>10}" for r in revs))
    for i, (name, _) in enumerate(columns[0]):
        print(f"{name:<{width}}  " + "  ".join(f"{c[i][1]:>10}" for c in columns))


if __name__ == "__main__":
    main()
