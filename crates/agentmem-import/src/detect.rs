//! Telling a transcript's format from its file name and its contents.
//!
//! `.traj` files are SWE-agent trajectories. Otherwise the text is first read
//! as one JSON document: a list of chat messages, an OpenHands event list, or a
//! trajectory object are recognized by the fields of their items. A document
//! that matches none of those (a JSONL file of one line also parses as one
//! value) is then read as JSONL, and its first few parseable lines decide:
//! OpenHands agent-SDK events carry a `kind` the SDK writes (`MessageEvent`,
//! `ActionEvent`, …; also how an SDK event list is recognized), agentmem
//! events carry `trace_type` (or `kind` and `content`), Codex lines
//! are `{type, payload}` (or start with the old `{id, timestamp, instructions}`
//! header), Claude Code lines carry `sessionId` or `uuid`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::ImportError;
use crate::format::Format;
use crate::formats::openhands::is_sdk_event;

/// How many items of a list, or parseable lines of a JSONL file, are looked at.
const SNIFF: usize = 20;

/// Codex rollout line types (`{"type", "payload"}`).
const CODEX_LINE_TYPES: [&str; 5] = [
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Response items an early-2025 Codex rollout writes bare, one a line, after
/// its header.
const CODEX_LEGACY_ITEM_TYPES: [&str; 6] = [
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "local_shell_call",
    "custom_tool_call",
];

/// Item types only the Responses API writes (a chat message has no `type`).
const RESPONSES_ITEM_TYPES: [&str; 5] = [
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "web_search_call",
];

/// Content blocks only Anthropic messages hold.
const ANTHROPIC_BLOCK_TYPES: [&str; 4] =
    ["tool_use", "tool_result", "thinking", "redacted_thinking"];

/// Claude Code line types that identify a session log on their own.
const CLAUDE_LINE_TYPES: [&str; 4] = ["user", "assistant", "summary", "file-history-snapshot"];

/// The format of `text`, the contents of `path`.
///
/// # Errors
///
/// [`ImportError::UnknownFormat`] when neither the name nor the contents tell,
/// naming the formats there are, so the caller can pass one explicitly.
///
/// ```
/// use agentmem_import::{detect_format, Format};
/// let line = r#"{"type":"session_meta","payload":{"id":"0199"}}"#;
/// assert_eq!(detect_format("rollout.jsonl".as_ref(), line).unwrap(), Format::Codex);
/// ```
pub fn detect_format(path: &Path, text: &str) -> Result<Format, ImportError> {
    let is_traj = path
        .extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| ext.eq_ignore_ascii_case("traj"));
    if is_traj {
        return Ok(Format::SweAgent);
    }
    whole_document(text)
        .as_ref()
        .and_then(document_format)
        .or_else(|| jsonl_format(text))
        .ok_or_else(|| ImportError::UnknownFormat {
            path: path.display().to_string(),
            known: Format::names(),
        })
}

/// The text as one JSON value, when it looks like and parses as one.
fn whole_document(text: &str) -> Option<Value> {
    let start = text.trim_start();
    if start.starts_with('[') || start.starts_with('{') {
        serde_json::from_str(text).ok()
    } else {
        None
    }
}

fn document_format(document: &Value) -> Option<Format> {
    match document {
        Value::Array(items) => list_format(items),
        Value::Object(map) => object_format(map),
        _ => None,
    }
}

fn list_format(items: &[Value]) -> Option<Format> {
    let items = || items.iter().take(SNIFF).filter_map(Value::as_object);
    if items().any(is_responses_item) {
        Some(Format::OpenAiResponses)
    } else if items().any(is_anthropic_message) {
        Some(Format::AnthropicMessages)
    } else if items().any(|item| item.contains_key("role")) {
        Some(Format::OpenAiMessages)
    } else if items().any(is_openhands_event) {
        Some(Format::OpenHands)
    } else {
        None
    }
}

fn object_format(map: &Map<String, Value>) -> Option<Format> {
    for key in ["history", "trajectory"] {
        let Some(list) = map.get(key).and_then(Value::as_array) else {
            continue;
        };
        let items = || list.iter().take(SNIFF).filter_map(Value::as_object);
        if items().any(is_swe_agent_entry) {
            return Some(Format::SweAgent);
        }
        if items().any(is_openhands_event) || is_opendevin_pairs(list) {
            return Some(Format::OpenHands);
        }
    }
    if map.get("events").is_some_and(Value::is_array) {
        return Some(Format::OpenHands);
    }
    ["messages", "input"]
        .into_iter()
        .filter_map(|key| map.get(key).and_then(Value::as_array))
        .find_map(|messages| list_format(messages))
        .filter(|format| {
            matches!(
                format,
                Format::OpenAiMessages | Format::OpenAiResponses | Format::AnthropicMessages
            )
        })
}

/// A Responses API item: typed as one, or a message whose parts are
/// Responses parts (`input_text`, `output_text`).
fn is_responses_item(item: &Map<String, Value>) -> bool {
    let typed = item
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|kind| RESPONSES_ITEM_TYPES.contains(&kind));
    typed || content_part_types(item).any(|kind| kind == "input_text" || kind == "output_text")
}

/// An Anthropic message: one whose content holds Anthropic-only blocks.
fn is_anthropic_message(item: &Map<String, Value>) -> bool {
    content_part_types(item).any(|kind| ANTHROPIC_BLOCK_TYPES.contains(&kind))
}

fn content_part_types(item: &Map<String, Value>) -> impl Iterator<Item = &str> {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("type").and_then(Value::as_str))
}

/// A SWE-agent history message (`role`, `message_type`) or trajectory step
/// (`action` with `thought` or `response`, and no OpenHands `source`).
fn is_swe_agent_entry(item: &Map<String, Value>) -> bool {
    let message = item.contains_key("role") || item.contains_key("message_type");
    let step = item.contains_key("action")
        && (item.contains_key("thought") || item.contains_key("response"))
        && !item.contains_key("source");
    message || step
}

/// OpenDevin's history: `[action, observation]` pairs of OpenHands events.
fn is_opendevin_pairs(items: &[Value]) -> bool {
    items
        .iter()
        .take(SNIFF)
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_object)
        .any(is_openhands_event)
}

/// A classic OpenHands event (`action`, `observation`, `source`), or one of
/// the agent SDK (a `kind` such as `ActionEvent`).
fn is_openhands_event(item: &Map<String, Value>) -> bool {
    ["action", "observation", "source"]
        .iter()
        .any(|key| item.contains_key(*key))
        || is_sdk_event(item)
}

/// The format named by the first JSONL line that tells.
fn jsonl_format(text: &str) -> Option<Format> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .take(SNIFF)
        .find_map(|line| line_format(&line))
}

fn line_format(line: &Map<String, Value>) -> Option<Format> {
    let kind = line.get("type").and_then(Value::as_str);
    // Before agentmem events: both name their type under `kind`, but only
    // the SDK's kinds are class names such as `MessageEvent`.
    if is_sdk_event(line) {
        return Some(Format::OpenHands);
    }
    if line.contains_key("trace_type")
        || (line.contains_key("kind") && line.contains_key("content"))
    {
        return Some(Format::Events);
    }
    let codex_item =
        kind.is_some_and(|k| CODEX_LINE_TYPES.contains(&k)) && line.contains_key("payload");
    let codex_header = kind.is_none()
        && ["id", "timestamp", "instructions"]
            .iter()
            .all(|k| line.contains_key(*k));
    let codex_legacy_item =
        kind.is_some_and(|k| CODEX_LEGACY_ITEM_TYPES.contains(&k)) && !line.contains_key("payload");
    if codex_item || codex_header || codex_legacy_item {
        return Some(Format::Codex);
    }
    let claude_type = kind.is_some_and(|k| CLAUDE_LINE_TYPES.contains(&k));
    if claude_type || line.contains_key("sessionId") || line.contains_key("uuid") {
        return Some(Format::ClaudeCode);
    }
    None
}

#[cfg(test)]
mod tests;
