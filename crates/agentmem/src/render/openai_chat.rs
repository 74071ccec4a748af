//! OpenAI Chat Completions: `{"model", "messages", "tools"}`.
//!
//! The system prompt is the first message (`role: system`); an assistant
//! message carries its tool calls in `tool_calls` (arguments as a JSON
//! string); each result is a `role: tool` message with its `tool_call_id`.
//! Reasoning is not accepted back and is left out. The live context (see
//! [`RenderRequest::live_context`]) closes the list as a system message.

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{Frame, ListEnd, RenderRequest, ToolSchema};
use crate::base::json;
use crate::base::message::{Message, MessageRef, PartRef, Role};
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

/// The message list's entries, written straight from the messages: the
/// bytes `serde_json` writes for the same entries built as values (keys in
/// order), without building them. The list is most of what a call renders.
pub(super) fn raw_entries(messages: &[MessageRef<'_>]) -> Vec<Box<RawValue>> {
    messages
        .iter()
        .filter_map(entry_of)
        .map(|entry| json::raw_written(|out| write_entry(out, &entry)))
        .collect()
}

/// [`raw_entries`] as values.
pub(super) fn entries(messages: &[Message]) -> Vec<Value> {
    let messages: Vec<MessageRef<'_>> = messages.iter().map(MessageRef::from).collect();
    raw_entries(&messages)
        .iter()
        .map(|raw| serde_json::from_str(raw.get()).expect("an entry is JSON"))
        .collect()
}

/// What one message becomes in the list, borrowed from it.
enum Entry<'m> {
    System(Vec<&'m str>),
    User(&'m [PartRef<'m>]),
    Assistant {
        texts: Vec<&'m str>,
        calls: Vec<Call<'m>>,
    },
    Tool {
        call_id: &'m str,
        content: &'m str,
    },
}

struct Call<'m> {
    id: &'m str,
    name: &'m str,
    arguments: &'m Value,
}

/// The entry of `message`, if this API takes one: an assistant message of
/// reasoning only, or a tool message without a result, has none.
fn entry_of<'m>(message: &'m MessageRef<'_>) -> Option<Entry<'m>> {
    match message.role {
        Role::System => Some(Entry::System(texts_of(&message.parts))),
        Role::User => Some(Entry::User(&message.parts)),
        Role::Assistant => {
            let texts = texts_of(&message.parts);
            let calls: Vec<Call<'_>> = message.parts.iter().filter_map(call_of).collect();
            // Reasoning only: nothing this API accepts.
            (!texts.is_empty() || !calls.is_empty()).then_some(Entry::Assistant { texts, calls })
        }
        Role::Tool => message.parts.iter().find_map(|part| match part {
            PartRef::ToolResult {
                call_id, content, ..
            } => Some(Entry::Tool { call_id, content }),
            PartRef::Text(_)
            | PartRef::Image(_)
            | PartRef::ToolCall { .. }
            | PartRef::Reasoning { .. } => None,
        }),
    }
}

fn texts_of<'m>(parts: &'m [PartRef<'_>]) -> Vec<&'m str> {
    parts.iter().filter_map(text_of).collect()
}

fn text_of<'m>(part: &'m PartRef<'_>) -> Option<&'m str> {
    match part {
        PartRef::Text(text) => Some(text),
        PartRef::Image(_)
        | PartRef::ToolCall { .. }
        | PartRef::ToolResult { .. }
        | PartRef::Reasoning { .. } => None,
    }
}

fn call_of<'m>(part: &'m PartRef<'_>) -> Option<Call<'m>> {
    match part {
        PartRef::ToolCall {
            id,
            name,
            arguments,
        } => Some(Call {
            id,
            name,
            arguments,
        }),
        PartRef::Text(_)
        | PartRef::Image(_)
        | PartRef::ToolResult { .. }
        | PartRef::Reasoning { .. } => None,
    }
}

/// Writes `entry` with its keys in order, as a `serde_json` object writes them.
fn write_entry(out: &mut Vec<u8>, entry: &Entry<'_>) {
    out.extend_from_slice(b"{\"content\":");
    match entry {
        Entry::System(texts) => {
            json::write_joined(out, texts, "\n");
            out.extend_from_slice(b",\"role\":\"system\"}");
        }
        Entry::User(parts) => {
            write_user_content(out, parts);
            out.extend_from_slice(b",\"role\":\"user\"}");
        }
        Entry::Assistant { texts, calls } => {
            if texts.is_empty() {
                out.extend_from_slice(b"null");
            } else {
                json::write_joined(out, texts, "\n");
            }
            out.extend_from_slice(b",\"role\":\"assistant\"");
            if !calls.is_empty() {
                out.extend_from_slice(b",\"tool_calls\":[");
                for (index, call) in calls.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write_call(out, call);
                }
                out.push(b']');
            }
            out.push(b'}');
        }
        Entry::Tool { call_id, content } => {
            json::write_str(out, content);
            out.extend_from_slice(b",\"role\":\"tool\",\"tool_call_id\":");
            json::write_str(out, call_id);
            out.push(b'}');
        }
    }
}

/// Plain text stays a string; text with images becomes a list of content parts.
fn write_user_content(out: &mut Vec<u8>, parts: &[PartRef<'_>]) {
    if !parts.iter().any(|p| matches!(p, PartRef::Image(_))) {
        json::write_joined(out, &texts_of(parts), "\n");
        return;
    }
    out.push(b'[');
    let mut first = true;
    for part in parts {
        let (key, text, kind, wrapped): (_, &str, _, _) = match part {
            PartRef::Text(text) => ("text", text, "text", false),
            PartRef::Image(url) => ("image_url", url, "image_url", true),
            PartRef::ToolCall { .. } | PartRef::ToolResult { .. } | PartRef::Reasoning { .. } => {
                continue
            }
        };
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'{');
        json::write_str(out, key);
        out.push(b':');
        if wrapped {
            out.extend_from_slice(b"{\"url\":");
            json::write_str(out, text);
            out.push(b'}');
        } else {
            json::write_str(out, text);
        }
        out.extend_from_slice(b",\"type\":");
        json::write_str(out, kind);
        out.push(b'}');
    }
    out.push(b']');
}

/// `{"function": {"arguments": "…", "name": …}, "id": …, "type": "function"}`,
/// the arguments as a JSON string.
fn write_call(out: &mut Vec<u8>, call: &Call<'_>) {
    out.extend_from_slice(b"{\"function\":{\"arguments\":");
    json::write_str(out, &arguments_text(call.arguments));
    out.extend_from_slice(b",\"name\":");
    json::write_str(out, call.name);
    out.extend_from_slice(b"},\"id\":");
    json::write_str(out, call.id);
    out.extend_from_slice(b",\"type\":\"function\"}");
}

fn tool(schema: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "function": {"name": schema.name, "description": schema.description, "parameters": schema.parameters},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::message::Part;

    #[test]
    fn entries_are_written_as_serde_json_writes_the_same_values() {
        let call = |id: &str, arguments: Value| Part::ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments,
        };
        let messages = [
            Message::text(Role::System, "Be brief.\u{1}"),
            Message {
                role: Role::User,
                parts: vec![Part::Text("a \"b\"".into()), Part::Text("c\nd".into())],
            },
            Message {
                role: Role::User,
                parts: vec![
                    Part::Text("look".into()),
                    Part::Image("data:image/png;base64,AAAA".into()),
                ],
            },
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Text("Reading.".into()),
                    call("c1", json!({"path": "src/é.rs", "n": 2})),
                    call("c2", Value::String("{\"raw\": true}".into())),
                ],
            },
            Message {
                role: Role::Assistant,
                parts: vec![call("c3", json!({}))],
            },
            Message {
                role: Role::Assistant,
                parts: vec![Part::Reasoning {
                    text: "hidden".into(),
                    opaque: None,
                }],
            },
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    call_id: "c1".into(),
                    name: Some("read".into()),
                    content: "fn main() {}\t😀".into(),
                    is_error: false,
                }],
            },
        ];
        let refs: Vec<MessageRef<'_>> = messages.iter().map(MessageRef::from).collect();
        let raw = raw_entries(&refs);
        assert_eq!(raw.len(), 6, "reasoning alone has no entry");
        for entry in &raw {
            let value: Value = serde_json::from_str(entry.get()).unwrap();
            assert_eq!(entry.get(), serde_json::to_string(&value).unwrap());
        }
        assert_eq!(
            entries(&messages)[3],
            json!({"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"n\":2,\"path\":\"src/é.rs\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{\"raw\": true}"}},
            ]})
        );
        assert_eq!(entries(&messages)[4]["content"], Value::Null);
        assert_eq!(
            entries(&messages)[2]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        );
    }
}
