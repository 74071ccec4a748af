//! OpenAI Responses API items, as Codex rollouts log them and as an agent
//! sends them (the OpenAI Agents SDK's session items among them).
//!
//! | item                                   | events                                  |
//! |----------------------------------------|-----------------------------------------|
//! | `message` (or `{role, content}`)       | an event of its role; `input_image` parts in `media` |
//! | `function_call` / `custom_tool_call`   | `tool_call` (arguments parsed; a custom tool's input as a string) |
//! | `function_call_output` / `custom_tool_call_output` | `tool_result`               |
//! | `reasoning`                            | `reasoning`, the item verbatim in `opaque` (its `encrypted_content` must go back unchanged) |
//! | `web_search_call`, `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_call` | a tool the provider ran itself: its call and its result, paired |
//! | `computer_call` / `local_shell_call` and their `*_output` | `tool_call` and `tool_result` |
//!
//! An `item_reference` (an item kept by OpenAI, named by id) and a
//! `compaction` (a summary the provider encrypted) have no text here, and are
//! refused with the reason.

use agentmem::Event;
use serde_json::{json, Value};

use super::openai_messages::{content_text, parse_arguments};
use crate::record::{media, verbatim_reasoning};

/// The events of one Responses item at `position` in its list (the position
/// names provider-run calls that carry no id), or why it has none.
pub(crate) fn item_events(item: &Value, position: usize) -> Result<Vec<Event>, String> {
    let kind = match (str_of(item, "type"), item.get("role")) {
        ("", Some(_)) => "message",
        (kind, _) => kind,
    };
    let events = match kind {
        "message" => message_events(item)?,
        "function_call" => vec![Event::tool_call(
            call_id(item)?,
            str_of(item, "name"),
            parse_arguments(item.get("arguments")),
        )],
        "custom_tool_call" => vec![Event::tool_call(
            call_id(item)?,
            str_of(item, "name"),
            Value::String(str_of(item, "input").to_owned()),
        )],
        "computer_call" => vec![Event::tool_call(call_id(item)?, "computer", field(item, "action"))],
        "local_shell_call" => vec![Event::tool_call(call_id(item)?, "local_shell", field(item, "action"))],
        "function_call_output"
        | "custom_tool_call_output"
        | "computer_call_output"
        | "local_shell_call_output" => vec![output_event(item)?],
        "reasoning" => vec![reasoning_event(item)],
        "web_search_call" => web_search_events(item, position),
        "file_search_call" => provider_run(item, position, "file_search", json!({"queries": field(item, "queries")}), file_search_results(item)),
        "code_interpreter_call" => provider_run(item, position, "code_interpreter", json!({"code": field(item, "code")}), interpreter_outputs(item)),
        "image_generation_call" => image_generation_events(item, position),
        "mcp_call" => mcp_call_events(item, position),
        "item_reference" => return Err(format!(
            "an item_reference names an item OpenAI keeps ({:?}), whose content is not here; send the item itself",
            str_of(item, "id")
        )),
        "compaction" => return Err(
            "an encrypted compaction item: only the provider that wrote it can read it, so it has no text to keep"
                .into(),
        ),
        "" => return Err("an item without a \"type\" (and without a \"role\")".into()),
        other => return Err(format!("unsupported item type {other:?}")),
    };
    Ok(events)
}

/// A message: one event of its role, none when it says nothing.
fn message_events(item: &Value) -> Result<Vec<Event>, String> {
    let text = message_text(item.get("content"));
    let images = input_images(item.get("content"));
    if text.trim().is_empty() && images.is_empty() {
        return Ok(Vec::new());
    }
    let mut event = match str_of(item, "role") {
        "user" => Event::user(text),
        "assistant" => Event::assistant(text),
        "system" | "developer" => Event::system(text),
        other => return Err(format!("a message with unknown role {other:?}")),
    };
    event.media = media(images);
    Ok(vec![event])
}

/// A message's text: its text parts, a refusal's words, and what files it
/// attached, one a line.
fn message_text(content: Option<&Value>) -> String {
    let Some(Value::Array(parts)) = content else {
        return content_text(content);
    };
    parts
        .iter()
        .filter_map(|part| match str_of(part, "type") {
            "refusal" => Some(str_of(part, "refusal").to_owned()),
            "input_file" => Some(format!("[file attached: {}]", file_name(part))),
            _ => part.get("text").and_then(Value::as_str).map(str::to_owned),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn file_name(part: &Value) -> &str {
    ["filename", "file_id", "file_url"]
        .into_iter()
        .map(|key| str_of(part, key))
        .find(|name| !name.is_empty())
        .unwrap_or("a file")
}

/// A tool output: a string, a list of content parts (text kept as the text,
/// images in `media`), or a computer call's screenshot.
fn output_event(item: &Value) -> Result<Event, String> {
    let call_id = call_id(item)?;
    let output = item.get("output");
    let (text, images) = match output {
        Some(Value::Object(screenshot)) => (
            String::new(),
            screenshot
                .get("image_url")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .into_iter()
                .collect(),
        ),
        Some(Value::Array(_)) => (message_text(output), input_images(output)),
        _ => (content_text(output), Vec::new()),
    };
    let mut event = Event::tool_result(call_id, text);
    event.media = media(images);
    Ok(event)
}

/// A tool the provider ran itself, as a call and its result, named by the
/// item's id (or its position when it has none).
fn provider_run(
    item: &Value,
    position: usize,
    tool: &str,
    arguments: Value,
    result: String,
) -> Vec<Event> {
    let call_id = match str_of(item, "id") {
        "" => format!("{tool}_{position}"),
        id => id.to_owned(),
    };
    let result = match str_of(item, "status") {
        "failed" => Event::tool_error(call_id.as_str(), format!("{result} (failed)")),
        _ => Event::tool_result(call_id.as_str(), result),
    };
    vec![Event::tool_call(call_id, tool, arguments), result]
}

fn file_search_results(item: &Value) -> String {
    let Some(Value::Array(results)) = item.get("results") else {
        return "searched the files".to_owned();
    };
    results
        .iter()
        .map(|hit| format!("{}: {}", str_of(hit, "filename"), str_of(hit, "text")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn interpreter_outputs(item: &Value) -> String {
    let Some(Value::Array(outputs)) = item.get("outputs") else {
        return String::new();
    };
    outputs
        .iter()
        .map(|output| match str_of(output, "type") {
            "image" => format!("[image: {}]", str_of(output, "url")),
            _ => str_of(output, "logs").to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An image the provider generated: the call, and a result holding the image.
fn image_generation_events(item: &Value, position: usize) -> Vec<Event> {
    let mut events = provider_run(
        item,
        position,
        "image_generation",
        json!({}),
        "[image generated]".to_owned(),
    );
    if let (Some(result), data) = (events.last_mut(), str_of(item, "result")) {
        if !data.is_empty() {
            result.media = media(vec![format!("data:image/png;base64,{data}")]);
        }
    }
    events
}

/// A call of a remote MCP server's tool that the provider made: the call with
/// its arguments, and its output or error.
fn mcp_call_events(item: &Value, position: usize) -> Vec<Event> {
    let name = str_of(item, "name");
    let mut events = provider_run(
        item,
        position,
        name,
        parse_arguments(item.get("arguments")),
        String::new(),
    );
    if let Some(result) = events.last_mut() {
        match (str_of(item, "error"), item.get("output")) {
            ("", output) => result.content = content_text(output),
            (error, _) => {
                *result = Event::tool_error(result.tool_call_id.clone().unwrap_or_default(), error)
            }
        }
    }
    events
}

fn field(item: &Value, key: &str) -> Value {
    item.get(key).cloned().unwrap_or(Value::Null)
}

/// `input_image` parts of a message, as their URLs (usually data URIs).
pub(crate) fn input_images(content: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(parts)) = content else {
        return Vec::new();
    };
    parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("input_image"))
        .filter_map(|part| {
            part.get("image_url")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// A web search the provider ran itself, as a `web_search` call (its action
/// as the arguments) and its result. A log keeps the query but not what the
/// search returned, so the result says what ran; the pair keeps the search
/// visible to history and to the model without an unanswered call. Items
/// without an id are named by their `position`.
pub(crate) fn web_search_events(item: &Value, position: usize) -> Vec<Event> {
    let action = field(item, "action");
    let summary = web_search_summary(&action);
    provider_run(item, position, "web_search", action, summary)
}

/// What a web search action did, in words.
fn web_search_summary(action: &Value) -> String {
    let url = str_of(action, "url");
    match str_of(action, "type") {
        "search" => match str_of(action, "query") {
            "" => "searched the web".to_owned(),
            query => format!("searched the web for {query:?}"),
        },
        "open_page" => format!("opened the page {url}"),
        "find_in_page" => format!(
            "searched the page {url} for {:?}",
            str_of(action, "pattern")
        ),
        _ => "ran a web search".to_owned(),
    }
}

/// Reasoning: the summary text (else the raw reasoning text) as content, the
/// whole item in `opaque`.
pub(crate) fn reasoning_event(item: &Value) -> Event {
    let mut text = content_text(item.get("summary"));
    if text.is_empty() {
        text = content_text(item.get("content"));
    }
    verbatim_reasoning(&text, item)
}

pub(crate) fn call_id(item: &Value) -> Result<&str, String> {
    match str_of(item, "call_id") {
        "" => match str_of(item, "id") {
            "" => Err(format!("a {} without a call_id", str_of(item, "type"))),
            id => Ok(id),
        },
        id => Ok(id),
    }
}

pub(crate) fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}
