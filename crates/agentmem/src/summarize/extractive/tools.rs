//! Tool classification: what a tool call does (read, write, command, finish),
//! the files and the command it names, and the telling line of a failure.

use serde_json::Value;

use crate::base::event::Event;
use crate::summarize::{args_text, one_line};

/// Tools an agent calls to finish, with its final message in an argument.
pub(super) const FINISH_TOOLS: &[&str] = &[
    "finish",
    "attempt_completion",
    "complete_task",
    "task_complete",
    "final_answer",
];
pub(super) const FINISH_TEXT_KEYS: &[&str] = &[
    "final_thought",
    "message",
    "result",
    "answer",
    "summary",
    "text",
];

/// The final message of a finishing tool call.
pub(super) fn finish_text(call: &Event) -> Option<String> {
    let name = call.tool_name.as_deref()?.to_lowercase();
    if !FINISH_TOOLS.contains(&name.as_str()) {
        return None;
    }
    let args = call.tool_args.as_ref()?;
    FINISH_TEXT_KEYS
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
}

/// What a tool does, judged from its name and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolKind {
    Read,
    Write,
    Command,
    Other,
}

pub(super) const WRITE_TOOL_WORDS: &[&str] = &[
    "apply_patch",
    "patch",
    "edit",
    "write",
    "str_replace",
    "replace",
    "create",
    "insert",
    "delete",
    "rename",
    "move",
];
pub(super) const READ_TOOL_WORDS: &[&str] = &["read", "cat", "view", "open", "head", "tail"];
pub(super) const COMMAND_TOOL_WORDS: &[&str] = &[
    "bash",
    "shell",
    "exec",
    "run",
    "terminal",
    "cmd",
    "command",
    "python",
    "powershell",
];

pub(super) fn tool_kind(call: &Event) -> ToolKind {
    let name = call.tool_name.as_deref().unwrap_or("").to_lowercase();
    let args = call.tool_args.as_ref();
    let sub_command = args
        .and_then(|a| a.get("command"))
        .and_then(Value::as_str)
        .map(str::to_lowercase);
    if name.contains("editor") {
        return match sub_command.as_deref() {
            Some("view") => ToolKind::Read,
            _ => ToolKind::Write,
        };
    }
    if WRITE_TOOL_WORDS.iter().any(|w| name.contains(w)) {
        return ToolKind::Write;
    }
    if READ_TOOL_WORDS.iter().any(|w| name.contains(w)) {
        return ToolKind::Read;
    }
    if name == "sh" || name == "zsh" || COMMAND_TOOL_WORDS.iter().any(|w| name.contains(w)) {
        return ToolKind::Command;
    }
    if args.is_some_and(|a| a.get("command").or_else(|| a.get("cmd")).is_some()) {
        return ToolKind::Command;
    }
    ToolKind::Other
}

/// The command line of a command tool: its `command`/`cmd`/`script`/`code`
/// argument (an argv array joined, a `bash -lc` wrapper dropped), else the
/// tool name and its scalar arguments.
pub(super) fn command_text(call: &Event) -> String {
    let name = call.tool_name.as_deref().unwrap_or("tool");
    let Some(args) = &call.tool_args else {
        return name.to_string();
    };
    if let Value::String(s) = args {
        return one_line(s);
    }
    for key in ["command", "cmd", "script", "code", "input"] {
        match args.get(key) {
            Some(Value::String(s)) => return one_line(s),
            Some(Value::Array(items)) => {
                let argv: Vec<String> = items.iter().map(args_text).collect();
                let argv = match argv.as_slice() {
                    [shell, flag, rest @ ..]
                        if matches!(shell.as_str(), "bash" | "sh" | "zsh")
                            && matches!(flag.as_str(), "-c" | "-lc" | "-ic") =>
                    {
                        rest.to_vec()
                    }
                    _ => argv,
                };
                return one_line(&argv.join(" "));
            }
            _ => {}
        }
    }
    let mut parts = vec![name.to_string()];
    if let Value::Object(map) = args {
        for (key, value) in map {
            match value {
                Value::String(s) if s.chars().count() <= 80 => parts.push(format!("{key}={s}")),
                Value::Number(n) => parts.push(format!("{key}={n}")),
                Value::Bool(b) => parts.push(format!("{key}={b}")),
                _ => {}
            }
        }
    }
    one_line(&parts.join(" "))
}

pub(super) const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "notebook_path",
    "target_file",
    "old_path",
    "new_path",
    "source",
    "destination",
    "paths",
    "files",
];

/// The paths a tool call read or modified, with `true` for modified.
pub(super) fn call_paths(call: &Event) -> Vec<(String, bool)> {
    let kind = tool_kind(call);
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut push = |path: &str, modified: bool| {
        let path = path.trim();
        if looks_like_path(path) && !out.iter().any(|(p, m)| p == path && *m == modified) {
            out.push((path.to_string(), modified));
        }
    };
    let args = call.tool_args.as_ref();
    match kind {
        ToolKind::Read | ToolKind::Write => {
            let modified = kind == ToolKind::Write;
            if let Some(Value::Object(map)) = args {
                for key in PATH_KEYS {
                    match map.get(*key) {
                        Some(Value::String(s)) => push(s, modified),
                        Some(Value::Array(items)) => {
                            for item in items.iter().filter_map(Value::as_str) {
                                push(item, modified);
                            }
                        }
                        _ => {}
                    }
                }
                for key in ["patch", "input", "diff"] {
                    if let Some(Value::String(s)) = map.get(key) {
                        for path in patch_paths(s) {
                            push(&path, true);
                        }
                    }
                }
                // `create reproduce.py`, `open src/x.py 40` (SWE-agent style).
                if let Some(Value::String(command)) = map.get("command") {
                    let mut words = command.split_whitespace();
                    let verb = words.next().unwrap_or("");
                    if matches!(verb, "create" | "open") {
                        if let Some(path) = words.next() {
                            push(path, verb == "create");
                        }
                    }
                }
            } else if let Some(Value::String(s)) = args {
                for path in patch_paths(s) {
                    push(&path, true);
                }
            }
        }
        ToolKind::Command => {
            let command = command_text(call);
            for path in patch_paths(&command) {
                push(&path, true);
            }
            for segment in command.split(['&', '|', ';']) {
                let words: Vec<&str> = segment.split_whitespace().collect();
                let (verb, rest) = match words.as_slice() {
                    ["git", verb, rest @ ..] if matches!(*verb, "mv" | "rm") => (*verb, rest),
                    ["sed", "-i", rest @ ..] => ("sed -i", rest),
                    [verb, rest @ ..] => (*verb, rest),
                    [] => continue,
                };
                let modified = match verb {
                    "cat" | "head" | "tail" | "less" | "more" | "bat" | "nl" | "wc" => false,
                    "mv" | "cp" | "rm" | "touch" | "tee" | "sed -i" | "mkdir" => true,
                    _ => continue,
                };
                for word in rest.iter().filter(|w| !w.starts_with('-')) {
                    push(word.trim_matches(['\'', '"']), modified);
                }
            }
        }
        ToolKind::Other => {}
    }
    out
}

/// Paths named by `*** Update File: x` / `*** Add File: x` / `*** Delete File: x`.
pub(super) fn patch_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            [
                "*** Update File: ",
                "*** Add File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .map(|p| p.trim().to_string())
        })
        .collect()
}

pub(super) fn looks_like_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 300
        && !path.contains(char::is_whitespace)
        && !path.contains(['`', '<', '>', '|', '*'])
        && path.chars().any(char::is_alphanumeric)
}

/// The telling line of a failed tool result, or `None` if it succeeded: a
/// result with `tool_error`; for commands, output with a failure marker; for
/// other tools (whose output is data: file text, search hits, diffs), output
/// whose first line says it failed.
pub(super) fn failure_line(result: &Event, kind: ToolKind) -> Option<String> {
    let marked = match (&result.tool_error, kind) {
        (Some(error), _) => error_line(error).or_else(|| error_line(&result.content)),
        (None, ToolKind::Command) => error_line(&result.content),
        (None, _) => {
            let first = result
                .content
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty());
            first
                .filter(|l| is_error_prefix(l))
                .and_then(|_| error_line(&result.content))
        }
    };
    match (marked, &result.tool_error) {
        (Some(line), _) => Some(line),
        (None, Some(error)) => error
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(one_line)
            .or_else(|| Some("failed".to_string())),
        (None, None) => None,
    }
}

pub(super) const ERROR_PREFIXES: &[&str] = &[
    "error:",
    "error[",
    "fatal:",
    "fatal error",
    "traceback (most recent call last)",
    "panic:",
    "npm err!",
    "make: ***",
    "exception in thread",
    "assertionerror",
];

pub(super) const ERROR_MARKS: &[&str] = &[
    "panicked at",
    "test result: failed",
    " failed",
    "command not found",
    "no such file or directory",
    "not a directory",
    "is a directory",
    "permission denied",
    "segmentation fault",
    "cannot create",
    "cannot find",
    "cannot open",
    "] error ",
];

pub(super) fn is_error_prefix(line: &str) -> bool {
    let lower = line.to_lowercase();
    ERROR_PREFIXES.iter().any(|p| lower.starts_with(p))
}

/// `Error: …` as a word of its own, or an exception name (`ValueError:`,
/// `RuntimeException:`), not `worker_error:` in code.
pub(super) fn has_error_label(line: &str) -> bool {
    line.split_whitespace().any(|word| {
        let Some(name) = word.strip_suffix(':') else {
            return false;
        };
        (name.ends_with("Error") || name.ends_with("Exception"))
            && name.starts_with(|c: char| c.is_ascii_uppercase())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
    })
}

/// The first line with an error marker, with the next line appended when it
/// is a bare label (`ERROR:`).
pub(super) fn error_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for (i, line) in lines.iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let lower = line.to_lowercase();
        let marked = is_error_prefix(line)
            || ERROR_MARKS.iter().any(|m| lower.contains(m))
            || line.ends_with(" FAILED")
            || line.contains(" FAILED ")
            || has_error_label(line);
        if !marked {
            continue;
        }
        let mut out = one_line(line);
        if out.chars().filter(|c| c.is_alphanumeric()).count() < 12 {
            if let Some(next) = lines[i + 1..].iter().find(|l| !l.is_empty()) {
                out = format!("{out} {}", one_line(next));
            }
        }
        return Some(out);
    }
    None
}
