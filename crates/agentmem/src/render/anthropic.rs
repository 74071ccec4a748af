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
use crate::message::{Message, Part, Role};

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
        Value::String(raw) => match crate::json::parse_within_nesting(raw) {
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
mod tests {
    use super::*;

    /// The whole body, as `render` makes it for this API.
    fn render(request: &RenderRequest<'_>) -> Value {
        super::super::render(super::super::Target::Anthropic, request)
    }

    fn request<'a>(
        system: Option<&'a str>,
        messages: &'a [Message],
        tools: &'a [ToolSchema],
    ) -> RenderRequest<'a> {
        RenderRequest {
            model: "claude-test",
            system,
            messages,
            tools,
            max_output_tokens: 1024,
            cache: PromptCache::Off,
            live_context: None,
        }
    }

    fn assistant(parts: Vec<Part>) -> Message {
        Message {
            role: Role::Assistant,
            parts,
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> Part {
        Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    fn result(call_id: &str, content: &str, is_error: bool) -> Message {
        Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: call_id.into(),
                name: None,
                content: content.into(),
                is_error,
            }],
        }
    }

    fn thinking() -> Value {
        json!({"type": "thinking", "thinking": "look first", "signature": "sig=="})
    }

    #[test]
    fn all_system_text_goes_to_the_top_level_in_order() {
        let messages = [
            Message::text(Role::System, "from the transcript"),
            Message::text(Role::User, "hi"),
            Message::text(Role::System, "mid-conversation"),
            Message::text(Role::User, "again"),
        ];
        let body = render(&request(Some("prompt"), &messages, &[]));
        assert_eq!(
            body["system"],
            "prompt\n\nfrom the transcript\n\nmid-conversation"
        );
        assert_eq!(body["max_tokens"], 1024);
        assert_eq!(body["model"], "claude-test");
        // The two user messages around the system message merge.
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["messages"][0]["content"][1]["text"], "again");
    }

    #[test]
    fn cache_marks_go_after_the_system_prompt_and_on_the_last_block() {
        let tools = [ToolSchema {
            name: "ls".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }];
        let messages = [
            Message::text(Role::User, "list"),
            assistant(vec![
                Part::Text("Listing.".into()),
                call("c1", "ls", json!({})),
            ]),
            result("c1", "a.rs", false),
        ];
        let marked = RenderRequest {
            cache: PromptCache::On,
            live_context: None,
            ..request(Some("prompt"), &messages, &tools)
        };
        let mark = json!({"type": "ephemeral"});
        let body = render(&marked);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "prompt", "cache_control": mark}])
        );
        assert!(
            body["tools"][0].get("cache_control").is_none(),
            "the system mark covers tools"
        );
        let text = body.to_string();
        assert_eq!(text.matches("cache_control").count(), 2, "{text}");
        assert_eq!(body["messages"][2]["content"][0]["cache_control"], mark);

        let body = render(&RenderRequest {
            system: None,
            ..marked
        });
        assert!(body.get("system").is_none());
        assert_eq!(body["tools"][0]["cache_control"], mark);
    }

    #[test]
    fn a_cache_mark_skips_signed_thinking() {
        let mut message = json!({"role": "assistant", "content": [
            {"type": "text", "text": "answer"},
            thinking(),
        ]});
        mark_cache_breakpoint(&mut message);
        assert!(message["content"][0].get("cache_control").is_some());
        assert!(message["content"][1].get("cache_control").is_none());
    }

    #[test]
    fn no_system_key_without_system_text() {
        let messages = [Message::text(Role::User, "hi")];
        let body = render(&request(None, &messages, &[]));
        assert!(body.get("system").is_none());
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn a_transcript_starting_with_the_assistant_gets_a_user_message_first() {
        let messages = [
            Message::text(Role::Assistant, "as I was saying"),
            Message::text(Role::User, "go on"),
        ];
        let body = render(&request(None, &messages, &[]));
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(body["messages"][0]["content"][0]["text"], CONTINUED);
    }

    #[test]
    fn tool_results_of_one_call_turn_share_the_next_user_message_before_its_text() {
        let messages = [
            Message::text(Role::User, "read both"),
            assistant(vec![
                Part::Text("Reading.".into()),
                call("c1", "read", json!({"path": "a"})),
                call("c2", "read", json!({"path": "b"})),
            ]),
            result("c1", "A", false),
            Message::text(Role::User, "and hurry"),
            result("c2", "no such file", true),
        ];
        let body = render(&request(None, &messages, &[]));
        let user = &body["messages"][2];
        assert_eq!(user["role"], "user");
        let content = user["content"].as_array().unwrap();
        assert_eq!(content.len(), 3);
        assert_eq!(
            content[0],
            json!({"type": "tool_result", "tool_use_id": "c1", "content": "A"})
        );
        assert_eq!(
            content[1],
            json!({"type": "tool_result", "tool_use_id": "c2", "content": "no such file", "is_error": true})
        );
        assert_eq!(content[2], json!({"type": "text", "text": "and hurry"}));
    }

    #[test]
    fn signed_thinking_goes_first_and_other_reasoning_is_dropped() {
        let messages = [
            Message::text(Role::User, "go"),
            assistant(vec![
                Part::Reasoning {
                    text: "plain".into(),
                    opaque: None,
                },
                Part::Text("Running.".into()),
                Part::Reasoning {
                    text: String::new(),
                    opaque: Some(
                        json!({"type": "reasoning", "encrypted_content": "gAAA", "summary": []}),
                    ),
                },
                Part::Reasoning {
                    text: String::new(),
                    opaque: Some(json!({"type": "redacted_thinking", "data": "xyz"})),
                },
                Part::Reasoning {
                    text: "look first".into(),
                    opaque: Some(thinking()),
                },
                call("c1", "run", json!({})),
            ]),
        ];
        let body = render(&request(None, &messages, &[]));
        let content = body["messages"][1]["content"].as_array().unwrap();
        let types: Vec<&str> = content
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["redacted_thinking", "thinking", "text", "tool_use"]);
        assert_eq!(content[1], thinking(), "sent verbatim");
    }

    #[test]
    fn a_message_of_thinking_alone_is_dropped() {
        let messages = [
            Message::text(Role::User, "go"),
            assistant(vec![Part::Reasoning {
                text: "hm".into(),
                opaque: Some(thinking()),
            }]),
            Message::text(Role::User, "interrupted"),
        ];
        let body = render(&request(None, &messages, &[]));
        let all = body["messages"].as_array().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn blank_text_is_skipped_and_empty_messages_vanish() {
        let messages = [
            Message::text(Role::User, "hi"),
            assistant(vec![Part::Text(String::new()), call("c1", "ls", json!({}))]),
            result("c1", "", false),
            Message::text(Role::User, "  "),
        ];
        let body = render(&request(None, &messages, &[]));
        let all = body["messages"].as_array().unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(
            all[1]["content"].as_array().unwrap().len(),
            1,
            "no empty text block"
        );
        assert_eq!(
            all[2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "c1"}])
        );
    }

    #[test]
    fn tool_input_is_always_an_object() {
        assert_eq!(tool_input(&json!({"a": 1})), json!({"a": 1}));
        assert_eq!(tool_input(&json!(r#"{"a": 1}"#)), json!({"a": 1}));
        assert_eq!(
            tool_input(&json!("*** Begin Patch")),
            json!({"input": "*** Begin Patch"})
        );
        assert_eq!(tool_input(&json!("[1, 2]")), json!({"input": "[1, 2]"}));
        assert_eq!(tool_input(&json!("")), json!({}));
        assert_eq!(tool_input(&Value::Null), json!({}));
        assert_eq!(tool_input(&json!([1])), json!({"input": [1]}));
    }

    #[test]
    fn images_by_url_by_data_uri_and_by_path() {
        let messages = [Message {
            role: Role::User,
            parts: vec![
                Part::Text("look".into()),
                Part::Image("https://example.com/a.png".into()),
                Part::Image("data:image/png;base64,iVBORw0=".into()),
                Part::Image("/tmp/shot.png".into()),
            ],
        }];
        let body = render(&request(None, &messages, &[]));
        let content = &body["messages"][0]["content"];
        assert_eq!(
            content[1]["source"],
            json!({"type": "url", "url": "https://example.com/a.png"})
        );
        assert_eq!(
            content[2]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0="})
        );
        assert_eq!(
            content[3],
            json!({"type": "text", "text": "[image not sent: /tmp/shot.png]"})
        );
    }

    #[test]
    fn images_of_a_tool_result_go_inside_it() {
        let mut message = result("c1", "screenshot taken", false);
        message
            .parts
            .push(Part::Image("https://example.com/s.png".into()));
        let messages = [
            Message::text(Role::User, "shoot"),
            assistant(vec![call("c1", "screenshot", json!({}))]),
            message,
        ];
        let body = render(&request(None, &messages, &[]));
        let block = &body["messages"][2]["content"][0];
        assert_eq!(
            block["content"][0],
            json!({"type": "text", "text": "screenshot taken"})
        );
        assert_eq!(block["content"][1]["type"], "image");
    }

    #[test]
    fn data_uris() {
        assert_eq!(
            data_uri("data:image/jpeg;base64,/9j/"),
            Some(("image/jpeg", "/9j/"))
        );
        assert_eq!(
            data_uri("data:image/png;name=a.png;base64,iV"),
            Some(("image/png", "iV"))
        );
        assert_eq!(data_uri("data:image/svg+xml,%3Csvg%3E"), None);
        assert_eq!(data_uri("https://example.com/a.png"), None);
    }

    #[test]
    fn tools_use_input_schema() {
        let tools = [ToolSchema {
            name: "ls".into(),
            description: "List files.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }];
        let body = render(&request(None, &[], &tools));
        assert_eq!(
            body["tools"],
            json!([{"name": "ls", "description": "List files.", "input_schema": {"type": "object", "properties": {}}}])
        );
    }
}
