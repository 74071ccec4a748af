//! Anthropic Messages content blocks, as Claude Code logs them and as an
//! agent sends them: one event per block.
//!
//! | block                          | event                                         |
//! |--------------------------------|-----------------------------------------------|
//! | `text`                         | an event of the message's role                |
//! | `tool_use {id, name, input}`   | `tool_call`                                   |
//! | `tool_result {tool_use_id, …}` | `tool_result`, `tool_error` set when `is_error` |
//! | `thinking` / `redacted_thinking` | `reasoning`, the block kept verbatim in `opaque` (its signature must go back unchanged) |
//! | `image`                        | an event of the message's role with the image in `media` |
//! | `document`                     | an event of the message's role naming the document (title, media type, size), or its text for a plain-text one; the block verbatim in `opaque` |

use agentmem::{Event, TraceType, Usage};
use serde_json::{Map, Value};

use super::openai_messages::content_text;
use crate::record::{media, verbatim_reasoning};

/// The event for one content block; `Ok(None)` for an empty text block, and
/// `Err` with the reason for a block this importer does not map.
pub(crate) fn block_event(role: &str, block: &Value) -> Result<Option<Event>, String> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let event = match kind {
        "text" => return Ok(text_event(role, str_of(block, "text"))),
        "tool_use" => Event::tool_call(
            str_of(block, "id"),
            str_of(block, "name"),
            object_or_empty(block.get("input")),
        ),
        "tool_result" => tool_result_event(block),
        "thinking" => verbatim_reasoning(str_of(block, "thinking"), block),
        "redacted_thinking" => verbatim_reasoning("", block),
        "image" => {
            let image = image_ref(block).ok_or("an image block without a usable source")?;
            let mut event = Event::new(role_type(role), "");
            event.media = media(vec![image]);
            event
        }
        "document" => document_event(role, block),
        other => return Err(format!("unsupported block type {other:?}")),
    };
    Ok(Some(event))
}

/// A `document` block (a PDF or text file the user attached). [`Media`] holds
/// images, audio and video only, and a document passed off as an image would
/// be sent as one; so the content says what was attached (title, media type,
/// size), or is the document's text when it is plain text, and the block is
/// kept verbatim in `opaque`, so nothing of it is lost and a replay to the
/// same provider can send it back unchanged.
fn document_event(role: &str, block: &Value) -> Event {
    let mut event = Event::new(role_type(role), document_text(block));
    event.opaque = Some(block.clone());
    event
}

/// What the model read of a document: its text for a plain-text source, else
/// a placeholder naming it, e.g. `[document attached: "spec.pdf",
/// application/pdf, 1.2 MB]`.
fn document_text(block: &Value) -> String {
    let source = block.get("source").unwrap_or(&Value::Null);
    let title = match str_of(block, "title") {
        "" => String::new(),
        title => format!("{title:?}, "),
    };
    let media_type = match str_of(source, "media_type") {
        "" => "unknown type",
        media_type => media_type,
    };
    match str_of(source, "type") {
        "base64" => {
            let size = readable_size(base64_decoded_len(str_of(source, "data")));
            format!("[document attached: {title}{media_type}, {size}]")
        }
        "url" => format!("[document attached: {title}{}]", str_of(source, "url")),
        "file" => format!(
            "[document attached: {title}file {}]",
            str_of(source, "file_id")
        ),
        "text" => format!(
            "[document attached: {title}{media_type}]\n{}",
            str_of(source, "data")
        ),
        "content" => format!(
            "[document attached: {title}content blocks]\n{}",
            content_text(source.get("content"))
        ),
        other => format!("[document attached: {title}a {other:?} source]"),
    }
}

/// The number of bytes base64 `data` decodes to.
fn base64_decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4 * 3 / 4)).saturating_sub(padding)
}

/// A byte count for a person or a model: `512 bytes`, `3.4 KB`, `1.2 MB`.
fn readable_size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    let size = bytes as f64;
    if size < KB {
        format!("{bytes} bytes")
    } else if size < KB * KB {
        format!("{:.1} KB", size / KB)
    } else {
        format!("{:.1} MB", size / (KB * KB))
    }
}

pub(crate) fn role_type(role: &str) -> TraceType {
    if role == "assistant" {
        TraceType::Assistant
    } else {
        TraceType::User
    }
}

fn tool_result_event(block: &Value) -> Event {
    let call_id = str_of(block, "tool_use_id");
    let content = block.get("content");
    let text = tool_result_text(content);
    let is_error = block
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut event = if is_error {
        Event::tool_error(call_id, text)
    } else {
        Event::tool_result(call_id, text)
    };
    let images: Vec<String> = match content {
        Some(Value::Array(parts)) => parts.iter().filter_map(image_ref).collect(),
        _ => Vec::new(),
    };
    event.media = media(images);
    event
}

/// A tool result's content as text: a string, or its parts joined by
/// newlines. A `tool_reference` part (a tool search naming the tool it
/// loaded) has no text of its own, so it is written as `tool reference: Name`
/// rather than leaving the result empty; images ride in `media`.
fn tool_result_text(content: Option<&Value>) -> String {
    let Some(Value::Array(parts)) = content else {
        return content_text(content);
    };
    parts
        .iter()
        .filter_map(|part| match str_of(part, "type") {
            "tool_reference" => Some(format!("tool reference: {}", str_of(part, "tool_name"))),
            _ => part
                .get("text")
                .and_then(Value::as_str)
                .or_else(|| part.as_str())
                .map(str::to_owned),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An image block as a reference: a data URI for inline base64, else its URL.
fn image_ref(block: &Value) -> Option<String> {
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let source = block.get("source")?;
    match source.get("type").and_then(Value::as_str)? {
        "base64" => {
            let media_type = source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image/png");
            let data = source.get("data").and_then(Value::as_str)?;
            Some(format!("data:{media_type};base64,{data}"))
        }
        "url" => source.get("url").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// `message.usage`: the prompt is input plus both cache counts (Anthropic
/// reports them apart; the prompt the model read holds all three).
pub(crate) fn usage(message: &Map<String, Value>) -> Option<Usage> {
    let usage = message.get("usage")?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = count("cache_read_input_tokens");
    Some(Usage {
        estimated_prompt_tokens: None,
        estimated_view_tokens: None,
        prompt_tokens: count("input_tokens") + count("cache_creation_input_tokens") + cache_read,
        completion_tokens: count("output_tokens"),
        cached_tokens: cache_read,
        model: message
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

pub(crate) fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) fn object_or_empty(value: Option<&Value>) -> Value {
    value.cloned().unwrap_or_else(|| Value::Object(Map::new()))
}

/// The events of one message (`{role, content}`), a string or a list of
/// blocks; or why it has none.
pub(crate) fn message_events(message: &Value) -> Result<Vec<Event>, String> {
    let role = match str_of(message, "role") {
        role @ ("user" | "assistant") => role,
        other => {
            return Err(format!(
                "unknown role {other:?}: a message's role is \"user\" or \"assistant\""
            ))
        }
    };
    match message.get("content") {
        Some(Value::String(text)) => Ok(text_event(role, text).into_iter().collect()),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .filter_map(|(index, block)| {
                block_event(role, block)
                    .map_err(|reason| format!("content block {index}: {reason}"))
                    .transpose()
            })
            .collect(),
        _ => Err("a message without content".into()),
    }
}

/// A text block as an event of `role`, or none when it holds only blanks.
fn text_event(role: &str, text: &str) -> Option<Event> {
    (!text.trim().is_empty()).then(|| Event::new(role_type(role), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_sizes_read_well() {
        assert_eq!(base64_decoded_len("JVBERi0x"), 6);
        assert_eq!(base64_decoded_len("JVBERi0="), 5);
        assert_eq!(base64_decoded_len("JVBERg=="), 4);
        assert_eq!(readable_size(512), "512 bytes");
        assert_eq!(readable_size(3 * 1024 + 512), "3.5 KB");
        assert_eq!(readable_size(5 * 1024 * 1024), "5.0 MB");
    }
}
