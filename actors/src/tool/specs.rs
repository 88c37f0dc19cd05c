//! The built-in tools' names, descriptions and JSON schemas, as offered to
//! the model (and listed by `tools.catalog`).

use serde_json::json;

use crate::provider::ToolSpec;

/// The tools this executor offers, with their JSON schemas.
pub fn specs() -> Vec<ToolSpec> {
    let mut all = core();
    all.extend(super::agent_specs::specs());
    // Offered with `act:evaluate` as `browser.evaluateEnabled` says
    // (`tree::stages::offered_builtins`).
    all.push(super::browser_spec::spec(true));
    all
}

/// The core tools' specs (a declared table).
fn core() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "exec".into(),
            description: "Run a shell command in the workspace and return its output.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": "The shell command." },
                    "timeout": { "type": "integer", "description": "Seconds before the command is killed." },
                    "yieldMs": { "type": "integer", "description": "Milliseconds to wait before a still-running command moves to the background (default 10000)." },
                    "background": { "type": "boolean", "description": "Start in the background at once (stdin open for process write)." }
                },
                "required": ["command"],
            }),
        },
        ToolSpec {
            name: "process".into(),
            description: "Manage background exec sessions: list, poll (new output and status), log, write (stdin), kill, remove, clear.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": { "type": "string", "enum": ["list", "poll", "log", "write", "kill", "remove", "clear"] },
                    "sessionId": { "type": "string", "description": "The session id exec returned." },
                    "data": { "type": "string", "description": "Text to write to stdin (write)." },
                    "eof": { "type": "boolean", "description": "Close stdin after writing." },
                    "offset": { "type": "integer", "description": "First line (log)." },
                    "limit": { "type": "integer", "description": "Lines (log)." }
                },
                "required": ["action"],
            }),
        },
        ToolSpec {
            name: "nodes".into(),
            description: "Use the operator's paired nodes (other machines): status (list them), describe, run (a command on a node), invoke (any command the node offers), notify; camera_list, camera_snap, screen_snapshot and location_get where a node offers them.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": { "type": "string", "enum": ["status", "describe", "run", "invoke", "notify", "camera_list", "camera_snap", "screen_snapshot", "location_get"] },
                    "node": { "type": "string", "description": "Node id or name." },
                    "command": { "description": "run: argv array, or a shell line.", "anyOf": [{ "type": "array", "items": { "type": "string" } }, { "type": "string" }] },
                    "commandTimeoutMs": { "type": "integer" },
                    "invokeCommand": { "type": "string", "description": "invoke: the node command (e.g. system.which)." },
                    "invokeParams": { "type": "object" },
                    "invokeTimeoutMs": { "type": "integer" },
                    "title": { "type": "string" },
                    "body": { "type": "string" },
                    "params": { "type": "object" }
                },
                "required": ["action"],
            }),
        },
        ToolSpec {
            name: "read".into(),
            description: "Read a text file from the workspace.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "offset": { "type": "integer", "description": "First line (1-based)." },
                    "limit": { "type": "integer", "description": "Number of lines." }
                },
                "required": ["path"],
            }),
        },
        ToolSpec {
            name: "write".into(),
            description: "Create or replace a workspace file with the given content (folders are created).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path in the workspace." },
                    "content": { "type": "string", "description": "The whole new content." }
                },
                "required": ["path", "content"],
            }),
        },
        ToolSpec {
            name: "edit".into(),
            description: "Edit a workspace file with exact-text replacements; each oldText must occur exactly once.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path in the workspace." },
                    "edits": {
                        "type": "array",
                        "description": "Replacements, each matched against the original file; they must not overlap.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": { "type": "string", "description": "Exact text to replace; unique in the file." },
                                "newText": { "type": "string", "description": "Replacement text." }
                            },
                            "required": ["oldText", "newText"]
                        }
                    }
                },
                "required": ["path", "edits"],
            }),
        },
        ToolSpec {
            name: "apply_patch".into(),
            description: "Apply a multi-file patch: *** Begin Patch, then *** Add File: <path> (+lines), *** Update File: <path> (optional *** Move to:, @@ anchor, ' '/-/+ lines), *** Delete File: <path>, then *** End Patch. All or nothing.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "input": { "type": "string", "description": "The whole patch text." }
                },
                "required": ["input"],
            }),
        },
        ToolSpec {
            name: "ls".into(),
            description: "List a workspace directory (folders end with /).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Directory in the workspace (default: the workspace)." },
                    "limit": { "type": "integer", "description": "Entries to return (default 500)." }
                },
            }),
        },
        ToolSpec {
            name: "find".into(),
            description: "Find workspace files by glob pattern (respects .gitignore).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "description": "Glob, e.g. *.rs, src/**/*.md (no / matches file names)." },
                    "path": { "type": "string", "description": "Directory to search (default: the workspace)." },
                    "limit": { "type": "integer", "description": "Results to return (default 1000)." }
                },
                "required": ["pattern"],
            }),
        },
        ToolSpec {
            name: "grep".into(),
            description: "Search workspace file contents by regex (respects .gitignore); prints file:line: text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "description": "Regular expression (Rust regex syntax)." },
                    "path": { "type": "string", "description": "File or directory to search (default: the workspace)." },
                    "glob": { "type": "string", "description": "Only files matching this glob, e.g. *.ts." },
                    "ignoreCase": { "type": "boolean" },
                    "literal": { "type": "boolean", "description": "Treat the pattern as plain text." },
                    "context": { "type": "integer", "description": "Lines of context around each match (max 10)." },
                    "limit": { "type": "integer", "description": "Matches to return (default 100)." }
                },
                "required": ["pattern"],
            }),
        },
        ToolSpec {
            name: "sessions_list".into(),
            description: "List sessions (key, label, model, last message), newest first.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "limit": { "type": "integer", "description": "Rows (default 20)." } },
            }),
        },
        ToolSpec {
            name: "sessions_send".into(),
            description: "Send a message to another session and wait for its reply (timeoutSeconds 0: do not wait).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "sessionKey": { "type": "string" },
                    "message": { "type": "string" },
                    "timeoutSeconds": { "type": "integer", "description": "Seconds to wait for the reply (default 30)." }
                },
                "required": ["sessionKey", "message"],
            }),
        },
        ToolSpec {
            name: "sessions_spawn".into(),
            description: "Start a sub-agent on a task in the background; its result comes back to this session as a message.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "task": { "type": "string", "description": "What the sub-agent should do, with all the context it needs." },
                    "label": { "type": "string", "description": "A short name for it." },
                    "agentId": { "type": "string" },
                    "model": { "type": "string", "description": "provider/model for the sub-agent." },
                    "skills": { "type": "array", "items": { "type": "string" }, "description": "Only these skills for the sub-agent." },
                    "runTimeoutSeconds": { "type": "integer" }
                },
                "required": ["task"],
            }),
        },
        ToolSpec {
            name: "session_status".into(),
            description: "Status of this (or another) session: model, thinking, tokens, context use, time.".into(),
            parameters: json!({
                "type": "object",
                "properties": { "sessionKey": { "type": "string" } },
            }),
        },
        ToolSpec {
            name: "subagents".into(),
            description: "List, steer or kill the sub-agents this session spawned.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": { "type": "string", "enum": ["list", "steer", "kill"] },
                    "target": { "type": "string", "description": "Sub-agent session key or label." },
                    "message": { "type": "string", "description": "Steering text (steer)." }
                },
                "required": ["action"],
            }),
        },
        ToolSpec {
            name: "memory_search".into(),
            description: "Mandatory recall step: search MEMORY.md, USER.md and memory/*.md (keywords and meaning) before answering questions about prior work, decisions, dates, people, preferences or todos. Returns snippets with path and line range.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" },
                    "maxResults": { "type": "integer", "minimum": 1 },
                    "minScore": { "type": "number" },
                    "corpus": { "type": "string", "enum": ["memory", "all"] }
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "memory_get".into(),
            description: "Safe exact excerpt read from MEMORY.md, USER.md or memory/*.md: pull only the lines you need after memory_search (a bounded excerpt with where to continue when lines are omitted).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "from": { "type": "integer", "minimum": 1 },
                    "lines": { "type": "integer", "minimum": 1 }
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch a public http(s) URL and return its readable content as markdown or text (no JavaScript).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "http(s) URL." },
                    "extractMode": { "type": "string", "enum": ["markdown", "text"], "description": "Output format (default markdown)." },
                    "maxChars": { "type": "integer", "description": "Truncate the output to this many characters." }
                },
                "required": ["url"],
            }),
        },
    ]
}
