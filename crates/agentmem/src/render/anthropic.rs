//! Anthropic Messages: `{"model", "max_tokens", "system", "messages", "tools"}`.
//!
//! The API's rules, and how this renderer meets them:
//!
//! - **System text** has no role of its own: it is the top-level `system`
//!   string. The request's system prompt comes first, then every
//!   `Role::System` message of the transcript, in order, joined by a blank
//!   line. A mid-conversation system message thus loses its position; the
//!   alternative (a `<system-reminder>` user block) would split tool-result
//!   turns and make instructions look like the user's words.
//! - **Roles** are only `user` and `assistant`; they must alternate and the
//!   first message must be the user's. Tool results are user content, so
//!   consecutive messages of one role merge into one message's content blocks.
//!   When the transcript starts with the assistant (a window cut after a user
//!   message, say), a user message `(continued)` goes in front. A message left
//!   with no blocks is dropped before merging.
//! - **Assistant content**: signed `thinking` / `redacted_thinking` blocks,
//!   sent back verbatim and first in the message, as the API requires. Only a
//!   reasoning part whose `opaque` is such a block qualifies; other reasoning
//!   (OpenAI's encrypted items, plain text) is dropped, and so is reasoning
//!   that is all a message holds (an interrupted response: nothing to answer).
//!   Then `text` blocks (empty or blank text is skipped: the API rejects it)
//!   and `tool_use {id, name, input}`. `input` must be an object, see
//!   [`tool_input`]. Images cannot be assistant content and are dropped.
//! - **Tool results** are `tool_result {tool_use_id, content, is_error}`
//!   blocks of a user message (`is_error` only when true, `content` left out
//!   when empty). Merging puts all results that answer one assistant message
//!   into the next user message, and the `tool_result` blocks are moved before
//!   any text or image in it, as the API requires. Images that came with a
//!   result go inside its `content`.
//! - **Images**: `{type: "image", source: {type: "url", url}}` for http(s)
//!   URLs, `{type: "base64", media_type, data}` for base64 data URIs (see
//!   [`data_uri`]). A local path or another URI cannot be sent without reading
//!   it, which a renderer does not do: it becomes a text block naming it.
//!
//! - **Prompt caching** ([`PromptCache::On`]): Anthropic caches a prefix
//!   only up to a block marked `cache_control: {type: "ephemeral"}`, in the
//!   order tools, system, messages. Two of the four marks the API allows are
//!   used: the system prompt goes as one text block carrying a mark (or, with
//!   no system prompt, the last tool does), and the conversation's last block
//!   carries the other. The next call of a tool loop then reads all it shares
//!   with this one from the cache. Signed thinking blocks cannot carry a mark,
//!   so the last block that can does.
//! - **Live context** (see [`RenderRequest::live_context`]): a text block
//!   after the mark in the closing user message, so it is never part of the
//!   cached prefix; when the assistant closes the list, the system prompt's
//!   last part.
//!
//! Pairing (every `tool_use` answered in the next user message) is the
//! transcript's business: a call whose result is missing or comes later is
//! rendered where it is, and the pair-repair pass must fix it first.
//!
//! [`tool_input`] and [`data_uri`] are shared with the other renderers.

use serde_json::{json, Map, Value};

use super::{Frame, ListEnd, Place, PromptCache, RenderRequest, ToolSchema};
use crate::base::message::{Message, Part, Role};

/// The user message put in front of a transcript that starts with the assistant.
const CONTINUED: &str = "(continued)";

pub(super) fn frame(request: &RenderRequest<'_>) -> Frame {
    let mut head = Map::new();
    head.insert("model".into(), request.model.into());
    head.insert("max_tokens".into(), request.max_output_tokens.into());
    let system = system_text(request);
    let mut tools: Vec<Value> = request.tools.iter().map(tool).collect();
    match request.cache {
        PromptCache::On => {
            // The system prompt comes after the tools: one mark covers both.
            if system.is_empty() {
                tools.last_mut().into_iter().for_each(mark);
            } else {
                let mut block = json!({"type": "text", "text": system});
                mark(&mut block);
                head.insert("system".into(), Value::Array(vec![block]));
            }
        }
        PromptCache::Off => {
            if !system.is_empty() {
                head.insert("system".into(), Value::String(system));
            }
        }
    }
    if !tools.is_empty() {
        head.insert("tools".into(), Value::Array(tools));
    }
    Frame {
        head,
        list_key: super::Target::Anthropic.list_key(),
        lead: Vec::new(),
        end: ListEnd::of(super::Target::Anthropic, request),
    }
}

/// Marks the conversation's last block for the cache, then adds the live
/// context after it: as a text block of the closing user message (text may
/// follow tool results there), or, when the assistant closes the list (a
/// reply to continue), at the end of the system prompt.
pub(super) fn close_list(
    head: &mut Map<String, Value>,
    mut last: Option<&mut Value>,
    live_context: Option<&str>,
    cache: PromptCache,
) -> Vec<Value> {
    if let (PromptCache::On, Some(message)) = (cache, last.as_deref_mut()) {
        mark_cache_breakpoint(message);
    }
    let Some(text) = live_context else {
        return Vec::new();
    };
    let block = json!({"type": "text", "text": text});
    match last.filter(|message| message["role"] == "user") {
        Some(message) => push_block(&mut message["content"], block),
        None => match head.remove("system") {
            Some(Value::String(system)) => {
                head.insert("system".into(), format!("{system}\n\n{text}").into());
            }
            Some(mut blocks) => {
                push_block(&mut blocks, block);
                head.insert("system".into(), blocks);
            }
            None => {
                head.insert("system".into(), text.into());
            }
        },
    }
    Vec::new()
}

fn push_block(blocks: &mut Value, block: Value) {
    if let Some(blocks) = blocks.as_array_mut() {
        blocks.push(block);
    }
}

/// Marks the last block of `message` that can carry a cache breakpoint
/// (any but signed thinking), so the prefix up to it is cached.
pub(super) fn mark_cache_breakpoint(message: &mut Value) {
    let blocks = message.get_mut("content").and_then(Value::as_array_mut);
    let last = blocks.and_then(|blocks| blocks.iter_mut().rev().find(|b| !is_thinking(b)));
    last.into_iter().for_each(mark);
}

/// Puts a cache breakpoint on `block`.
fn mark(block: &mut Value) {
    if let Some(fields) = block.as_object_mut() {
        fields.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// The request's system prompt, then every system message, blank-line separated.
fn system_text(request: &RenderRequest<'_>) -> String {
    let transcript = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::joined_text);
    let texts: Vec<String> = request
        .system
        .map(str::to_owned)
        .into_iter()
        .chain(transcript)
        .filter(|text| !text.trim().is_empty())
        .collect();
    texts.join("\n\n")
}

/// The two roles of this API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

/// One message being built: its role and content blocks.
struct Turn {
    side: Side,
    blocks: Vec<Value>,
}

pub(super) fn entries(transcript: &[Message], place: Place) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::with_capacity(transcript.len());
    for message in transcript {
        let Some(Turn { side, blocks }) = turn(message) else {
            continue;
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.side == side => last.blocks.extend(blocks),
            _ => turns.push(Turn { side, blocks }),
        }
    }
    if place == Place::Start && turns.first().is_some_and(|t| t.side == Side::Assistant) {
        let blocks = vec![json!({"type": "text", "text": CONTINUED})];
        turns.insert(
            0,
            Turn {
                side: Side::User,
                blocks,
            },
        );
    }
    turns.into_iter().map(message_json).collect()
}

/// The blocks of one message; system messages have none (they went to `system`).
fn turn(message: &Message) -> Option<Turn> {
    let (side, blocks) = match message.role {
        Role::System => return None,
        Role::User => (Side::User, user_blocks(&message.parts)),
        Role::Tool => (Side::User, tool_blocks(&message.parts)),
        Role::Assistant => (Side::Assistant, assistant_blocks(&message.parts)),
    };
    Some(Turn { side, blocks })
}

/// The message, with the blocks the API wants first moved to the front:
/// thinking in assistant messages, tool results in user messages.
fn message_json(turn: Turn) -> Value {
    let (role, leads): (&str, fn(&Value) -> bool) = match turn.side {
        Side::User => ("user", is_tool_result),
        Side::Assistant => ("assistant", is_thinking),
    };
    let (mut content, rest): (Vec<Value>, Vec<Value>) = turn.blocks.into_iter().partition(leads);
    content.extend(rest);
    json!({"role": role, "content": content})
}

fn user_blocks(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => text_block(text),
            Part::Image(url) => Some(image_block(url)),
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some(tool_result(call_id, content, *is_error, Vec::new())),
            Part::ToolCall { .. } | Part::Reasoning { .. } => None,
        })
        .collect()
}

/// A tool message: its result, with the images that came with it inside.
fn tool_blocks(parts: &[Part]) -> Vec<Value> {
    let images: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Image(url) => Some(image_block(url)),
            Part::Text(_)
            | Part::ToolCall { .. }
            | Part::ToolResult { .. }
            | Part::Reasoning { .. } => None,
        })
        .collect();
    parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some(tool_result(call_id, content, *is_error, images.clone())),
            Part::Text(text) => text_block(text),
            Part::Image(_) | Part::ToolCall { .. } | Part::Reasoning { .. } => None,
        })
        .collect()
}

fn tool_result(call_id: &str, content: &str, is_error: bool, images: Vec<Value>) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": call_id});
    if images.is_empty() {
        if !content.trim().is_empty() {
            block["content"] = Value::String(content.to_owned());
        }
    } else {
        let text = text_block(content).into_iter();
        block["content"] = text.chain(images).collect();
    }
    if is_error {
        block["is_error"] = Value::Bool(true);
    }
    block
}

fn assistant_blocks(parts: &[Part]) -> Vec<Value> {
    let blocks: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => text_block(text),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(json!({
                "type": "tool_use",
                "id": id,
                "name": name,
                "input": tool_input(arguments),
            })),
            Part::Reasoning { opaque, .. } => opaque.as_ref().filter(|o| is_thinking(o)).cloned(),
            Part::Image(_) | Part::ToolResult { .. } => None,
        })
        .collect();
    if blocks.iter().all(is_thinking) {
        return Vec::new(); // thinking alone: an interrupted response, nothing to send
    }
    blocks
}

/// A text block, or none for blank text (the API rejects it).
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// Whether `block` is a thinking block Anthropic signed: `thinking` with its
/// `signature`, or `redacted_thinking` with its `data`.
fn is_thinking(block: &Value) -> bool {
    let has = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    match block.get("type").and_then(Value::as_str) {
        Some("thinking") => has("signature") && block.get("thinking").is_some_and(Value::is_string),
        Some("redacted_thinking") => has("data"),
        _ => false,
    }
}

fn is_tool_result(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_result")
}

fn image_block(url: &str) -> Value {
    if url.starts_with("http://") || url.starts_with("https://") {
        return json!({"type": "image", "source": {"type": "url", "url": url}});
    }
    match data_uri(url) {
        Some((media_type, data)) => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
        None => json!({"type": "text", "text": image_placeholder(url)}),
    }
}

/// The text that stands for an image a renderer cannot send.
pub(super) fn image_placeholder(url: &str) -> String {
    if url.starts_with("data:") {
        "[image not sent: a data URI that is not base64]".to_owned()
    } else {
        format!("[image not sent: {url}]")
    }
}

/// The media type and base64 payload of a `data:<type>[;params];base64,<data>` URI.
///
/// Other data URIs (percent-encoded ones) give `None`: the APIs take base64 only.
pub(super) fn data_uri(url: &str) -> Option<(&str, &str)> {
    let (meta, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?.split(';').next()?;
    (!media_type.is_empty() && !data.is_empty()).then_some((media_type, data))
}

/// A tool call's arguments as the JSON object the APIs want.
///
/// An object is kept; a string holding a JSON object is parsed; a blank string
/// or null means no arguments (`{}`); anything else (free-form input, as in
/// Codex's `apply_patch`) is wrapped as `{"input": …}`.
pub(super) fn tool_input(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => json!({}),
        Value::String(raw) if raw.trim().is_empty() => json!({}),
        Value::String(raw) => match crate::base::json::parse_within_nesting(raw) {
            Some(parsed @ Value::Object(_)) => parsed,
            Some(_) | None => json!({"input": raw}),
        },
        Value::Bool(_) | Value::Number(_) | Value::Array(_) => json!({"input": arguments}),
    }
}

fn tool(schema: &ToolSchema) -> Value {
    let mut tool = json!({"name": schema.name, "input_schema": schema.parameters});
    if !schema.description.is_empty() {
        tool["description"] = Value::String(schema.description.clone());
    }
    tool
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
