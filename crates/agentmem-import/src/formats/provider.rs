//! What an agent sends and gets back in its provider's own shapes, as
//! events (the public face is [`crate::native`]; files of these shapes are
//! read here too, see [`file_events`]).

use agentmem::{Event, Usage};
use serde_json::Value;

use super::{anthropic, openai_messages, responses};
use crate::imported::Imported;
use crate::record::stable_id;
use crate::shape::Shape;

/// Where in the input a message could not be read, and why.
pub(crate) struct Unreadable {
    pub(crate) at: String,
    pub(crate) reason: String,
}

/// The events of `messages`: see [`crate::native::events_from_messages`].
pub(crate) fn message_events(shape: Shape, messages: &Value) -> Result<Vec<Event>, Unreadable> {
    let (system, list) = message_list(shape, messages).map_err(|reason| Unreadable {
        at: "the input".into(),
        reason,
    })?;
    let mut events = system.into_iter().map(Event::system).collect::<Vec<_>>();
    for (index, message) in list.iter().enumerate() {
        let read = match shape {
            Shape::OpenAiChat => openai_messages::message_events(message),
            Shape::OpenAiResponses => responses::item_events(message, index + 1),
            Shape::AnthropicMessages => anthropic::message_events(message),
        };
        let mut read = read.map_err(|reason| Unreadable {
            at: format!("message {index}"),
            reason,
        })?;
        if shape == Shape::OpenAiResponses {
            keep_item_id(message, &mut read);
        }
        events.extend(read);
    }
    Ok(events)
}

/// The events of a model's `response`: see
/// [`crate::native::events_from_response`].
pub(crate) fn response_events(shape: Shape, response: &Value) -> Result<Vec<Event>, String> {
    let (mut events, usage) = match shape {
        Shape::OpenAiChat => {
            let message = response
                .pointer("/choices/0/message")
                .ok_or("no choices[0].message: is it a chat completion?")?;
            (
                openai_messages::message_events(message)?,
                chat_usage(response),
            )
        }
        Shape::OpenAiResponses => {
            let output = response
                .get("output")
                .and_then(Value::as_array)
                .ok_or("no \"output\" list: is it a Responses API response?")?;
            let mut events = Vec::new();
            for (index, item) in output.iter().enumerate() {
                let mut read = responses::item_events(item, index + 1)
                    .map_err(|reason| format!("output item {index}: {reason}"))?;
                keep_item_id(item, &mut read);
                events.extend(read);
            }
            (events, responses_usage(response))
        }
        Shape::AnthropicMessages => {
            let mut message = response.clone();
            if message.get("role").is_none() {
                message["role"] = Value::from("assistant");
            }
            let events = anthropic::message_events(&message)?;
            let usage = response.as_object().and_then(anthropic::usage);
            (events, usage)
        }
    };
    let model = response.get("model").and_then(Value::as_str);
    if let Some(response_id) = response.get("id").and_then(Value::as_str) {
        for (index, event) in events.iter_mut().enumerate() {
            if event.id.is_empty() {
                event.id = format!("{response_id}-{index}");
            }
            event.correlation_id = Some(response_id.to_owned());
        }
    }
    if let (Some(last), Some(mut usage)) = (events.last_mut(), usage) {
        usage.model = usage.model.or_else(|| model.map(str::to_owned));
        last.usage = Some(usage);
    }
    Ok(events)
}

/// The system text (Anthropic's top-level `system`) and the list of messages
/// in `messages`.
fn message_list(shape: Shape, messages: &Value) -> Result<(Option<String>, Vec<Value>), String> {
    let list_key = match shape {
        Shape::OpenAiChat | Shape::AnthropicMessages => "messages",
        Shape::OpenAiResponses => "input",
    };
    match messages {
        Value::Array(list) => Ok((None, list.clone())),
        Value::Object(map) => match map.get(list_key) {
            Some(Value::Array(list)) => {
                let system = map
                    .get("system")
                    .map(|system| openai_messages::content_text(Some(system)))
                    .filter(|text| !text.is_empty());
                Ok((system, list.clone()))
            }
            Some(Value::String(text)) if shape == Shape::OpenAiResponses => Ok((
                None,
                vec![serde_json::json!({"role": "user", "content": text})],
            )),
            _ => Ok((None, vec![messages.clone()])),
        },
        Value::String(text) => Ok((
            None,
            vec![serde_json::json!({"role": "user", "content": text})],
        )),
        other => Err(format!(
            "expected a list of messages, one message or a string, not {}",
            agentmem::base::json::kind_of(other)
        )),
    }
}

/// A Responses item's own `id` names the event made from it (the first, when
/// a provider-run call makes two), so the item sent again is not added twice.
fn keep_item_id(item: &Value, events: &mut [Event]) {
    let Some(id) = item
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
    else {
        return;
    };
    for (index, event) in events.iter_mut().enumerate() {
        event.id = match index {
            0 => id.to_owned(),
            n => format!("{id}-{n}"),
        };
    }
}

/// `usage` of a chat completion: the prompt includes its cached tokens.
fn chat_usage(response: &Value) -> Option<Usage> {
    let usage = response.get("usage")?;
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        prompt_tokens: count("/prompt_tokens"),
        completion_tokens: count("/completion_tokens"),
        cached_tokens: count("/prompt_tokens_details/cached_tokens"),
        ..Usage::default()
    })
}

/// `usage` of a Responses API response: input includes its cached tokens.
fn responses_usage(response: &Value) -> Option<Usage> {
    let usage = response.get("usage")?;
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        prompt_tokens: count("/input_tokens"),
        completion_tokens: count("/output_tokens"),
        cached_tokens: count("/input_tokens_details/cached_tokens"),
        ..Usage::default()
    })
}

/// A file holding what an agent sends in `shape`: the events a live call
/// would give, each without a provider id given a stable one from its place
/// and its text, so importing the file again after it grew adds only the
/// events that are new.
pub(crate) fn file_events(shape: Shape, prefix: &str, text: &str) -> Result<Imported, String> {
    let document: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let mut events = message_events(shape, &document)
        .map_err(|unreadable| format!("{}: {}", unreadable.at, unreadable.reason))?;
    for (position, event) in events.iter_mut().enumerate() {
        if event.id.is_empty() {
            let record = format!("{}\u{0}{}", event.trace_type.as_str(), event.text());
            event.id = stable_id(prefix, position + 1, &record);
        }
    }
    Ok(Imported {
        records: events.len(),
        events,
        ..Imported::default()
    })
}
