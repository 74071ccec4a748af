//! OpenAI Chat Completions: `{"model", "messages", "tools"}`.
//!
//! The system prompt is the first message (`role: system`); an assistant
//! message carries its tool calls in `tool_calls` (arguments as a JSON
//! string); each result is a `role: tool` message with its `tool_call_id`.
//! Reasoning is not accepted back and is left out. The live context (see
//! [`RenderRequest::live_context`]) closes the list as a system message.

use serde_json::{json, Map, Value};

use super::{Frame, ListEnd, RenderRequest, ToolSchema};
use crate::message::{Message, Part, Role};
use crate::tokens::count::arguments_text;

pub(super) fn frame(request: &RenderRequest<'_>) -> Frame {
    let mut head = Map::new();
    head.insert("model".into(), request.model.into());
    if !request.tools.is_empty() {
        head.insert("tools".into(), request.tools.iter().map(tool).collect());
    }
    let lead = request
        .system
        .map(|system| json!({"role": "system", "content": system}))
        .into_iter()
        .collect();
    Frame {
        head,
        list_key: super::Target::OpenAiChat.list_key(),
        lead,
        end: ListEnd::of(super::Target::OpenAiChat, request),
    }
}

/// The live context closes the list as a system message of its own, as a
/// system message of the transcript is sent where it stands.
pub(super) fn close_list(live_context: Option<&str>) -> Vec<Value> {
    let message = |text| json!({"role": "system", "content": text});
    live_context.map(message).into_iter().collect()
}

pub(super) fn entries(messages: &[Message]) -> Vec<Value> {
    messages.iter().filter_map(message).collect()
}

fn message(message: &Message) -> Option<Value> {
    match message.role {
        Role::System => Some(json!({"role": "system", "content": message.joined_text()})),
        Role::User => Some(json!({"role": "user", "content": user_content(&message.parts)})),
        Role::Assistant => assistant(&message.parts),
        Role::Tool => message.parts.iter().find_map(|part| match part {
            Part::ToolResult {
                call_id, content, ..
            } => Some(json!({"role": "tool", "tool_call_id": call_id, "content": content})),
            Part::Text(_) | Part::Image(_) | Part::ToolCall { .. } | Part::Reasoning { .. } => None,
        }),
    }
}

/// Plain text stays a string; text with images becomes a list of content parts.
fn user_content(parts: &[Part]) -> Value {
    let has_images = parts.iter().any(|p| matches!(p, Part::Image(_)));
    if !has_images {
        let text: Vec<&str> = parts.iter().filter_map(text_of).collect();
        return Value::String(text.join("\n"));
    }
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(json!({"type": "text", "text": text})),
            Part::Image(url) => Some(json!({"type": "image_url", "image_url": {"url": url}})),
            Part::ToolCall { .. } | Part::ToolResult { .. } | Part::Reasoning { .. } => None,
        })
        .collect()
}

fn text_of(part: &Part) -> Option<&str> {
    match part {
        Part::Text(text) => Some(text),
        Part::Image(_)
        | Part::ToolCall { .. }
        | Part::ToolResult { .. }
        | Part::Reasoning { .. } => None,
    }
}

fn assistant(parts: &[Part]) -> Option<Value> {
    let text: Vec<&str> = parts.iter().filter_map(text_of).collect();
    let calls: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments_text(arguments)},
            })),
            Part::Text(_) | Part::Image(_) | Part::ToolResult { .. } | Part::Reasoning { .. } => {
                None
            }
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None; // reasoning only: nothing this API accepts
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            Value::String(text.join("\n"))
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(message))
}

fn tool(schema: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "function": {"name": schema.name, "description": schema.description, "parameters": schema.parameters},
    })
}
