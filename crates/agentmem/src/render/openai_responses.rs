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
//!   a list of `input_text` / `input_image` parts; assistant text is an
//!   `output_text` part of an assistant message item.
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
use crate::message::{Message, Part, Role};

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
                    "content": [{"type": "output_text", "text": text}],
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
        | Value::Object(_) => crate::json::to_string(&tool_input(arguments)),
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
mod tests {
    use super::*;

    /// The whole body, as `render` makes it for this API.
    fn render(request: &RenderRequest<'_>) -> Value {
        super::super::render(super::super::Target::OpenAiResponses, request)
    }

    fn request<'a>(
        system: Option<&'a str>,
        messages: &'a [Message],
        tools: &'a [ToolSchema],
    ) -> RenderRequest<'a> {
        RenderRequest {
            model: "gpt-test",
            system,
            messages,
            tools,
            max_output_tokens: 1024,
            cache: super::super::PromptCache::default(),
            live_context: None,
        }
    }

    fn reasoning_item() -> Value {
        json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "gAAA"})
    }

    #[test]
    fn system_prompt_is_instructions_and_system_messages_are_developer_items() {
        let messages = [
            Message::text(Role::System, "Run fmt."),
            Message::text(Role::User, "hi"),
        ];
        let body = render(&request(Some("Be brief."), &messages, &[]));
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Run fmt."}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ])
        );
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn a_response_becomes_reasoning_message_and_call_items_in_order() {
        let messages = [
            Message::text(Role::User, "list"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning {
                        text: "Plan.".into(),
                        opaque: Some(reasoning_item()),
                    },
                    Part::Text("Listing.".into()),
                    Part::ToolCall {
                        id: "c1".into(),
                        name: "ls".into(),
                        arguments: json!({"dir": "."}),
                    },
                ],
            },
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    call_id: "c1".into(),
                    name: None,
                    content: "a.rs".into(),
                    is_error: false,
                }],
            },
        ];
        let body = render(&request(None, &messages, &[]));
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[1], reasoning_item(), "verbatim");
        assert_eq!(
            input[2],
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]})
        );
        assert_eq!(
            input[3],
            json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"dir\":\".\"}"})
        );
        assert_eq!(
            input[4],
            json!({"type": "function_call_output", "call_id": "c1", "output": "a.rs"})
        );
        assert!(body.get("instructions").is_none());
    }

    #[test]
    fn null_fields_of_a_reasoning_item_are_left_out() {
        let mut recorded = reasoning_item();
        recorded["content"] = Value::Null;
        let messages = [Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning {
                    text: String::new(),
                    opaque: Some(recorded),
                },
                Part::Text("Done.".into()),
            ],
        }];
        let body = render(&request(None, &messages, &[]));
        assert_eq!(body["input"][0], reasoning_item());
    }

    #[test]
    fn foreign_and_trailing_reasoning_is_dropped() {
        let thinking = json!({"type": "thinking", "thinking": "hm", "signature": "sig"});
        let messages = [
            Message::text(Role::User, "go"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning {
                        text: "hm".into(),
                        opaque: Some(thinking),
                    },
                    Part::Reasoning {
                        text: "plain".into(),
                        opaque: None,
                    },
                    Part::Text("Done.".into()),
                    Part::Reasoning {
                        text: String::new(),
                        opaque: Some(reasoning_item()),
                    },
                ],
            },
        ];
        let body = render(&request(None, &messages, &[]));
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["message", "message"]);
    }

    #[test]
    fn arguments_are_a_json_object_string() {
        assert_eq!(arguments_json(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(
            arguments_json(&json!(r#"{ "a": 1 }"#)),
            r#"{ "a": 1 }"#,
            "kept as written"
        );
        assert_eq!(
            arguments_json(&json!("*** Begin Patch")),
            r#"{"input":"*** Begin Patch"}"#
        );
        assert_eq!(arguments_json(&Value::Null), "{}");
    }

    #[test]
    fn images_become_input_image_parts() {
        let messages = [Message {
            role: Role::User,
            parts: vec![
                Part::Text("what is this".into()),
                Part::Image("https://example.com/a.png".into()),
                Part::Image("data:image/png;base64,iV".into()),
                Part::Image("shot.png".into()),
            ],
        }];
        let body = render(&request(None, &messages, &[]));
        let content = &body["input"][0]["content"];
        assert_eq!(
            content[1],
            json!({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"})
        );
        assert_eq!(content[2]["image_url"], "data:image/png;base64,iV");
        assert_eq!(
            content[3],
            json!({"type": "input_text", "text": "[image not sent: shot.png]"})
        );
    }

    #[test]
    fn images_of_a_tool_result_follow_it_as_a_user_message() {
        let messages = [Message {
            role: Role::Tool,
            parts: vec![
                Part::ToolResult {
                    call_id: "c1".into(),
                    name: None,
                    content: "shot".into(),
                    is_error: false,
                },
                Part::Image("https://example.com/s.png".into()),
            ],
        }];
        let body = render(&request(None, &messages, &[]));
        assert_eq!(body["input"][0]["type"], "function_call_output");
        assert_eq!(body["input"][1]["role"], "user");
        assert_eq!(body["input"][1]["content"][0]["type"], "input_image");
    }

    #[test]
    fn tools_are_flat_and_not_strict() {
        let tools = [ToolSchema {
            name: "ls".into(),
            description: "List.".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = render(&request(None, &[], &tools));
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "name": "ls", "description": "List.", "parameters": {"type": "object"}, "strict": false}])
        );
    }
}
