//! A JSON list of OpenAI Chat Completions messages.
//!
//! `{"role": "assistant", "tool_calls": [{"id", "function": {"name", "arguments"}}]}`
//! becomes one assistant event (when it has text) and one tool call event per
//! call; `{"role": "tool", "tool_call_id"}` becomes the tool result.

use agentmem::{Event, TraceType};
use serde_json::Value;

use crate::imported::{Imported, Skipped};
use crate::record::{media, stable_id};

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let messages = match &root {
        Value::Array(list) => list,
        Value::Object(map) => map
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("expected a list of messages, or an object with a \"messages\" list")?,
        _ => return Err("expected a list of messages".into()),
    };
    let mut imported = Imported::default();
    for (index, message) in messages.iter().enumerate() {
        imported.records += 1;
        let position = index + 1;
        let record = message.to_string();
        match message_events(message) {
            Ok(events) => {
                let mut calls = 0;
                for event in events {
                    let part = match event.trace_type {
                        TraceType::ToolCall => {
                            calls += 1;
                            calls
                        }
                        _ => 0,
                    };
                    let id = stable_id("oai", position * 100 + part, &record);
                    imported.events.push(event.with_id(id));
                }
            }
            Err(reason) => imported.skipped.push(Skipped::malformed(position, reason)),
        }
    }
    Ok(imported)
}

/// The events of one chat message: its text as an event of its role (an
/// assistant's only when it has text), then one event per tool call; or why
/// it has none.
pub(crate) fn message_events(message: &Value) -> Result<Vec<Event>, String> {
    let content = content_text(message.get("content"));
    let images = image_urls(message.get("content"));
    let with_images = |mut event: Event| {
        event.media = media(images.clone());
        event
    };
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let events = match role {
        "system" | "developer" => vec![Event::system(content)],
        "user" => vec![with_images(Event::user(content))],
        "assistant" => {
            let text = (!content.is_empty()).then(|| Event::assistant(content));
            let calls = message.get("tool_calls").and_then(Value::as_array);
            text.into_iter()
                .chain(calls.into_iter().flatten().map(tool_call))
                .collect()
        }
        "tool" | "function" => {
            let call_id = message
                .get("tool_call_id")
                .or_else(|| message.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![with_images(Event::tool_result(call_id, content))]
        }
        other => return Err(format!("unknown role {other:?}")),
    };
    Ok(events)
}

/// The `image_url` parts of a message's content, as their URLs.
fn image_urls(content: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(parts)) = content else {
        return Vec::new();
    };
    parts
        .iter()
        .filter_map(|part| part.get("image_url"))
        .filter_map(|image| image.get("url").or(Some(image)).and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn tool_call(call: &Value) -> Event {
    let function = call.get("function").unwrap_or(&Value::Null);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let call_id = call.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut event = Event::tool_call(call_id, name, parse_arguments(function.get("arguments")));
    event.trace_type = TraceType::ToolCall;
    event
}

/// Arguments arrive as a JSON string; parse it, keep the raw text if it is not JSON.
pub(crate) fn parse_arguments(arguments: Option<&Value>) -> Value {
    match arguments {
        Some(Value::String(raw)) => agentmem::base::json::parse_within_nesting(raw)
            .unwrap_or_else(|| Value::String(raw.clone())),
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    }
}

/// Message content as text: a string, or the text parts of a list joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| {
                part.get("text")
                    .and_then(Value::as_str)
                    .or_else(|| part.as_str())
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem::base::tool_interaction::tool_interactions;
    use agentmem::ToolStatus;

    #[test]
    fn tool_calls_pair_with_their_results() {
        let text = r#"[
          {"role":"system","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"list files"}]},
          {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]},
          {"role":"tool","tool_call_id":"call_1","content":"a.rs\nb.rs"},
          {"role":"assistant","content":"two files"}
        ]"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 5);
        let view = tool_interactions(&imported.events);
        assert_eq!(view.len(), 1);
        assert_eq!(view[0].status, ToolStatus::Success);
        assert_eq!(view[0].arguments["path"], ".");
        assert_eq!(imported.events[1].content, "list files");
    }
}
