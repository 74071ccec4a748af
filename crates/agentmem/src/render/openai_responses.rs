//! OpenAI Responses: `{"model", "instructions", "input", "tools"}`.
//!
//! The API's rules, and how this renderer meets them:
//!
//! - **System prompt**: the request's goes to `instructions`. System
//!   messages of the transcript stay where they are, as `developer` messages
//!   (the role the Responses API gives instructions; `system` is accepted too
//!   but means the same on current models). The live context (see
//!   [`RenderRequest::live_context`]) closes the list as one more.
//! - **Input** is a flat list of items, no alternation rule: every message is
//!   a `{"type": "message", role, content}` item. User and developer content is
//!   a list of `input_text` / `input_image` parts; assistant text is the
//!   message's `content` string (the API's easy input shape, which every
//!   client's converter reads, where an `output_text` part without the
//!   item's id is read by some and not others).
//! - **Tool calls** are `function_call {call_id, name, arguments}` items, the
//!   arguments a JSON string of an object: a string holding a JSON object is
//!   sent as it is, anything else as the object
//!   [`tool_input`](super::anthropic::tool_input) makes of it (free-form input
//!   such as Codex's `apply_patch` becomes `{"input": "…"}`).
//! - **Tool results** are `function_call_output {call_id, output}` items with
//!   the result text as `output`. The API has no error flag: the text says it.
//!   Images that came with a result follow it as a user message.
//! - **Reasoning** items go back verbatim (`id`, `summary`,
//!   `encrypted_content` and all; only `null` fields such as Codex's
//!   `"content": null` are left out) when a reasoning part's `opaque` is a
//!   Responses item (`type: "reasoning"`), so a stateless (`store: false`)
//!   request keeps the model's reasoning. Other reasoning (Anthropic thinking,
//!   plain text) is dropped, and so is reasoning that no text or tool call
//!   follows in its response (an interrupted turn): the API rejects a reasoning
//!   item without the item it produced.
//! - **Images**: `input_image` parts with `image_url` set to the http(s) URL
//!   or data URI; a local path cannot be sent without reading it and becomes
//!   an `input_text` naming it. Assistant images are dropped.
//! - **Tools**: `{type: "function", name, description, parameters, strict:
//!   false}`. `strict` is set because the Responses API, unlike Chat
//!   Completions, tries strict mode when it is left out, which changes how the
//!   model fills optional arguments of a schema written for best effort.
//!
//! `max_output_tokens`, `store` and `include` are left to the caller, as in
//! the Chat Completions renderer: for reasoning models the token cap also
//! bounds reasoning, and `include: ["reasoning.encrypted_content"]` is
//! refused by models that do not reason.

use serde_json::{json, Map, Value};

use super::anthropic::{image_placeholder, tool_input};
use super::{Frame, ListEnd, RenderRequest, ToolSchema};
use crate::base::message::{Message, Part, Role};

pub(super) fn frame(request: &RenderRequest<'_>) -> Frame {
    let mut head = Map::new();
    head.insert("model".into(), request.model.into());
    if let Some(system) = request.system.filter(|s| !s.trim().is_empty()) {
        head.insert("instructions".into(), system.into());
    }
    if !request.tools.is_empty() {
        head.insert("tools".into(), request.tools.iter().map(tool).collect());
    }
    Frame {
        head,
        list_key: super::Target::OpenAiResponses.list_key(),
        lead: Vec::new(),
        end: ListEnd::of(super::Target::OpenAiResponses, request),
    }
}

/// The live context closes the list as a developer message, the role a
/// system message of the transcript gets.
pub(super) fn close_list(live_context: Option<&str>) -> Vec<Value> {
    let message = |text: &str| input_message("developer", &[Part::Text(text.to_owned())]);
    live_context.and_then(message).into_iter().collect()
}

pub(super) fn entries(messages: &[Message]) -> Vec<Value> {
    messages.iter().flat_map(items).collect()
}

fn items(message: &Message) -> Vec<Value> {
    match message.role {
        Role::System => input_message("developer", &message.parts)
            .into_iter()
            .collect(),
        Role::User => input_message("user", &message.parts).into_iter().collect(),
        Role::Assistant => assistant_items(&message.parts),
        Role::Tool => tool_items(&message.parts),
    }
}

/// A user or developer message of its text and images; none when it has neither.
fn input_message(role: &str, parts: &[Part]) -> Option<Value> {
    let content: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => input_text(text),
            Part::Image(url) => Some(input_image(url)),
            Part::ToolCall { .. } | Part::ToolResult { .. } | Part::Reasoning { .. } => None,
        })
        .collect();
    (!content.is_empty()).then(|| json!({"type": "message", "role": role, "content": content}))
}

fn input_text(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "input_text", "text": text}))
}

fn input_image(url: &str) -> Value {
    let sendable =
        url.starts_with("http://") || url.starts_with("https://") || url.starts_with("data:");
    if sendable {
        json!({"type": "input_image", "image_url": url, "detail": "auto"})
    } else {
        json!({"type": "input_text", "text": image_placeholder(url)})
    }
}

/// One item per part of the response, in order.
fn assistant_items(parts: &[Part]) -> Vec<Value> {
    // Reasoning after the last output has nothing to precede: left out.
    let last_output = parts.iter().rposition(|part| match part {
        Part::Text(text) => !text.is_empty(),
        Part::ToolCall { .. } => true,
        Part::Image(_) | Part::ToolResult { .. } | Part::Reasoning { .. } => false,
    });
    parts
        .iter()
        .enumerate()
        .filter_map(|(index, part)| match part {
            Part::Reasoning { opaque, .. } => opaque
                .as_ref()
                .filter(|item| {
                    is_reasoning_item(item) && last_output.is_some_and(|last| index < last)
                })
                .map(reasoning_input),
            Part::Text(text) => (!text.is_empty()).then(|| {
                json!({
                    "type": "message",
                    "role": "assistant",
                    "content": text,
                })
            }),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(function_call(id, name, arguments)),
            Part::ToolResult {
                call_id, content, ..
            } => Some(function_call_output(call_id, content)),
            Part::Image(_) => None,
        })
        .collect()
}

/// Whether `item` is a Responses reasoning item that can go back as input.
fn is_reasoning_item(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("reasoning")
}

/// The reasoning item as it was recorded, less its `null` fields: Codex
/// records `"content": null` but sends the field absent, as the API expects.
fn reasoning_input(item: &Value) -> Value {
    let mut item = item.clone();
    if let Value::Object(fields) = &mut item {
        fields.retain(|_, value| !value.is_null());
    }
    item
}

fn function_call(id: &str, name: &str, arguments: &Value) -> Value {
    json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments_json(arguments)})
}

/// The arguments as a JSON string of an object.
fn arguments_json(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) if matches!(serde_json::from_str(raw), Ok(Value::Object(_))) => {
            raw.clone()
        }
        Value::String(_)
        | Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::Array(_)
        | Value::Object(_) => crate::base::json::to_string(&tool_input(arguments)),
    }
}

fn function_call_output(call_id: &str, content: &str) -> Value {
    json!({"type": "function_call_output", "call_id": call_id, "output": content})
}

/// The result, then the text and images that came with it as a user message.
fn tool_items(parts: &[Part]) -> Vec<Value> {
    let outputs = parts.iter().filter_map(|part| match part {
        Part::ToolResult {
            call_id, content, ..
        } => Some(function_call_output(call_id, content)),
        Part::Text(_) | Part::Image(_) | Part::ToolCall { .. } | Part::Reasoning { .. } => None,
    });
    outputs.chain(input_message("user", parts)).collect()
}

fn tool(schema: &ToolSchema) -> Value {
    let mut tool = json!({"type": "function", "name": schema.name, "parameters": schema.parameters, "strict": false});
    if !schema.description.is_empty() {
        tool["description"] = Value::String(schema.description.clone());
    }
    tool
}

#[cfg(test)]
#[path = "openai_responses_tests.rs"]
mod tests;
