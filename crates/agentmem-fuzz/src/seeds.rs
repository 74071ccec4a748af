//! Seed inputs for each target, made from real agent transcripts (the
//! shared evaluation data's `trajectories/`): the fuzzer starts from what
//! agents really write and mutates from there.

use std::path::{Path, PathBuf};

use agentmem::files::jsonl;
use agentmem::{Event, TraceType};
use agentmem_import::{self as import, Format};
use serde_json::json;

/// Texts longer than this are cut in seeds: a fuzzer mutates short inputs
/// faster, and length adds no path.
const SEED_TEXT_BYTES: usize = 2_048;
/// Events in one seed of an event sequence.
const WINDOW_EVENTS: usize = 24;
/// The largest transcript given whole to the importers.
const WHOLE_FILE_BYTES: usize = 64 * 1024;

/// Where the shared evaluation data's transcripts are, seen from this crate.
pub fn trajectories_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval-data/trajectories")
}

/// The seeds of the target `name` (see [`crate::TARGETS`]), made from the
/// transcripts under `trajectories`.
pub fn for_target(name: &str, trajectories: &Path) -> Vec<Vec<u8>> {
    let transcripts = transcripts(trajectories);
    let windows = || {
        transcripts
            .iter()
            .flat_map(|t| t.events.chunks(WINDOW_EVENTS))
    };
    match name {
        "importers" => transcripts.iter().filter_map(importer_seed).collect(),
        "event" => windows()
            .flat_map(|window| window.iter().map(|e| jsonl::encode_lines([e])))
            .collect(),
        "log" | "render" | "pipeline" => windows().map(jsonl::encode_lines).collect(),
        "guard" => windows()
            .flatten()
            .filter(|e| e.trace_type == TraceType::ToolResult)
            .enumerate()
            .map(|(n, e)| {
                let cap = [64u16, 300, 1_000, 5_000][n % 4].to_be_bytes();
                [&cap[..], e.content.as_bytes()].concat()
            })
            .collect(),
        "service" => windows().map(service_script).collect(),
        "mcp" => windows().map(mcp_script).collect(),
        other => panic!("no target named {other}"),
    }
}

/// One transcript: its format, its text and the events it imports as
/// (their texts cut short).
struct Transcript {
    format: Format,
    text: String,
    events: Vec<Event>,
}

fn transcripts(dir: &Path) -> Vec<Transcript> {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    files.sort();
    files
        .iter()
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("LICENSE"))
        })
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let format = import::detect_format(path, &text).ok()?;
            let mut events = import::parse(format, path, &text).ok()?.events;
            events.iter_mut().for_each(cut_texts);
            Some(Transcript {
                format,
                text,
                events,
            })
        })
        .collect()
}

fn collect_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, into);
        } else {
            into.push(path);
        }
    }
}

fn cut_texts(event: &mut Event) {
    let cut = |text: &mut String| {
        if text.len() > SEED_TEXT_BYTES {
            let mut end = SEED_TEXT_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
    };
    cut(&mut event.content);
    if let Some(error) = &mut event.tool_error {
        cut(error);
    }
}

/// The byte that picks `format` in the importers target, then the
/// transcript: whole when small, else its first lines (line formats only).
fn importer_seed(transcript: &Transcript) -> Option<Vec<u8>> {
    let pick = Format::ALL.iter().position(|f| *f == transcript.format)? as u8;
    let text = transcript.text.as_bytes();
    let body = if text.len() <= WHOLE_FILE_BYTES {
        text
    } else {
        let line_based = matches!(
            transcript.format,
            Format::Events | Format::ClaudeCode | Format::Codex
        );
        if !line_based {
            return None;
        }
        let end = text[..WHOLE_FILE_BYTES].iter().rposition(|&b| b == b'\n')? + 1;
        &text[..end]
    };
    Some([&[pick][..], body].concat())
}

/// A `serve --stdio` session over `events`: every operation, once.
fn service_script(events: &[Event]) -> Vec<u8> {
    let events = serde_json::to_value(events).expect("events serialize");
    let question = events[0]["content"]
        .as_str()
        .unwrap_or("the build")
        .to_owned();
    let commands = [
        json!({"id": 1, "op": "create_session", "session": "s1"}),
        json!({"id": 2, "op": "append", "session": "s1", "events": events}),
        json!({"id": 3, "op": "prepare", "session": "s1", "model": "gpt-4o", "context_window": 4000, "max_output_tokens": 300}),
        json!({"id": 4, "op": "compact", "session": "s1", "focus": "the tests"}),
        json!({"id": 5, "op": "search", "query": question}),
        json!({"id": 6, "op": "recall", "query": question, "budget": 500}),
        json!({"id": 7, "op": "events", "session": "s1", "limit": 5}),
        json!({"id": 8, "op": "update_state", "session": "s1", "patch": {"plan": ["read", "fix"]}, "expected_version": 0}),
        json!({"id": 9, "op": "append_memory", "content": "- prefers small commits"}),
        json!({"id": 10, "op": "fork", "session": "s1", "new_session": "s2"}),
        json!({"id": 11, "op": "end_session", "session": "s1"}),
    ];
    lines_of(&commands)
}

/// An MCP client's messages about `events`: a handshake, the tool list,
/// each memory tool called, and a batch.
fn mcp_script(events: &[Event]) -> Vec<u8> {
    let note = events[0].content.clone();
    let call = |id: u32, name: &str, arguments: serde_json::Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        call(3, "write_memory", json!({"content": note})),
        call(4, "read_memory", json!({})),
        call(
            5,
            "update_memory",
            json!({"old_text": "a", "new_text": "b"}),
        ),
        call(6, "search_conversation_history", json!({"query": note})),
        call(7, "recall", json!({"query": note, "budget_tokens": 300})),
        json!([call(8, "read_memory", json!({})), {"jsonrpc": "2.0", "id": 9, "method": "ping"}]),
    ];
    lines_of(&messages)
}

fn lines_of(values: &[serde_json::Value]) -> Vec<u8> {
    values
        .iter()
        .map(|v| format!("{v}\n"))
        .collect::<String>()
        .into_bytes()
}
