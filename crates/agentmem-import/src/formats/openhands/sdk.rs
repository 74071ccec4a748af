//! OpenHands agent-SDK ("V1") event logs: a JSON list of events (or an object
//! holding one under `events`), or one event per line (JSONL).
//!
//! Every event is an object whose `kind` names its type. The mapping:
//!
//! | `kind`                       | events                                                 |
//! |------------------------------|--------------------------------------------------------|
//! | `SystemPromptEvent`          | `system` from `system_prompt.text` (the tool definitions in `tools` are not conversation and are left out) |
//! | `MessageEvent`               | reasoning, then `user`/`assistant`/`system` by `llm_message.role` from its text parts (and `extended_content`), images in `media` |
//! | `ActionEvent`                | reasoning, an assistant event with its `thought`, then a `tool_call` |
//! | `ObservationEvent`           | `tool_result` of its `tool_call_id`; `tool_error` when `observation.is_error` or a non-zero `exit_code` |
//! | `UserRejectObservation`      | `tool_error` of its call, with the `rejection_reason`  |
//! | `AgentErrorEvent`            | `tool_error` of its call, with the `error`             |
//! | `CondensationSummaryEvent`, `Condensation` with a `summary` | `summary`     |
//!
//! Reasoning comes from the `thinking_blocks` of an action or of a message's
//! `llm_message` (each block kept verbatim in `opaque`: a signature must go
//! back to the provider unchanged), else from a `responses_reasoning_item`
//! (kept verbatim too: it may be encrypted), else from `reasoning_content`.
//! Only one of them is used: they are views of the same reasoning.
//!
//! A tool call's arguments are the model's own: `tool_call.arguments` (a JSON
//! string) parsed, else the `action` without its `kind` discriminator.
//!
//! Bookkeeping (`ConversationStateUpdateEvent`, `PauseEvent`,
//! `CondensationRequest`, …) and conversation-level errors are reported as
//! skipped. `llm_response_id` becomes the `correlation_id`, grouping the
//! parallel tool calls of one response. Ids are `oh-<id>`, with a suffix for
//! the extra events of one source event (`-thought`, `-thinking-<n>`,
//! `-reasoning`).

use agentmem::base::event::Media;
use agentmem::{Event, TraceType};
use serde_json::{Map, Value};

use super::source::{timestamp, Source};
use crate::formats::openai_messages::content_text;
use crate::imported::{Imported, Skipped};
use crate::record::verbatim_reasoning;

/// The `kind` values of the SDK's events, which tell its logs apart.
const KINDS: [&str; 14] = [
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "UserRejectObservation",
    "AgentErrorEvent",
    "Condensation",
    "CondensationSummaryEvent",
    "CondensationRequest",
    "ConversationStateUpdateEvent",
    "ConversationErrorEvent",
    "PauseEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
];

/// The events made from one SDK event, in order, each with the suffix its id
/// takes after `oh-<id>` (`""` for the main event).
type Mapped = Result<Vec<(String, Event)>, String>;

/// Whether `map` is an SDK event: its `kind` is one the SDK writes.
pub(crate) fn is_sdk_event(map: &Map<String, Value>) -> bool {
    map.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| KINDS.contains(&kind))
}

/// Whether `text` is JSONL of SDK events: its first line that parses is
/// one (a torn or corrupt first line does not hide the rest).
pub(super) fn is_sdk_jsonl(text: &str) -> bool {
    text.lines()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .as_ref()
        .and_then(Value::as_object)
        .is_some_and(is_sdk_event)
}

/// A list of SDK events; skipped records are counted from 1 by list position.
pub(super) fn parse_list(events: &[Value]) -> Imported {
    let mut imported = Imported::default();
    for (index, record) in events.iter().enumerate() {
        import_record(&mut imported, index + 1, record);
    }
    imported
}

/// SDK events one per line; skipped records are counted by line number.
pub(super) fn parse_jsonl(text: &str) -> Imported {
    let mut imported = Imported::default();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(record) => import_record(&mut imported, index + 1, &record),
            Err(e) => {
                imported.records += 1;
                imported
                    .skipped
                    .push(Skipped::malformed(index + 1, format!("not JSON: {e}")));
            }
        }
    }
    imported
}

fn import_record(imported: &mut Imported, position: usize, record: &Value) {
    imported.records += 1;
    let Some(map) = record.as_object() else {
        let skipped = Skipped::malformed(position, "not a JSON object");
        return imported.skipped.push(skipped);
    };
    let source = Source::new(map, position, record);
    match map_event(&source).map(|events| source.stamp(events)) {
        Ok(events) => imported.events.extend(events),
        Err(reason) => imported.skipped.push(Skipped::left_out(position, reason)),
    }
}

/// What the agent-SDK reads of a source event beyond the shared accessors.
impl<'a> Source<'a> {
    /// The string under `key`, when it is one and not empty.
    fn non_empty(&self, key: &str) -> Option<&'a str> {
        self.map
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    }

    fn tool_call_id(&self) -> Option<&'a str> {
        self.non_empty("tool_call_id")
    }

    /// Gives each event its id, the event's time and its response's id.
    fn stamp(&self, events: Vec<(String, Event)>) -> Vec<Event> {
        let ts = timestamp(self.text("timestamp"));
        let response = self.map.get("llm_response_id").and_then(Value::as_str);
        events
            .into_iter()
            .map(|(suffix, event)| {
                let mut event = event
                    .with_id(format!("{}{suffix}", self.base_id))
                    .with_ts(ts);
                event.correlation_id = response.map(str::to_owned);
                event
            })
            .collect()
    }
}

fn map_event(source: &Source<'_>) -> Mapped {
    let main = |event: Event| vec![(String::new(), event)];
    let kind = source.text("kind");
    match kind {
        "SystemPromptEvent" => system_prompt(source).map(main),
        "MessageEvent" => message(source),
        "ActionEvent" => action(source),
        "ObservationEvent" => observation(source).map(main),
        "UserRejectObservation" => rejection(source).map(main),
        "AgentErrorEvent" => agent_error(source).map(main),
        "Condensation" | "CondensationSummaryEvent" => match source.text("summary") {
            summary if summary.trim().is_empty() => Err(format!("a {kind} without a summary")),
            summary => Ok(main(Event::new(TraceType::Summary, summary))),
        },
        "ConversationErrorEvent" => Err(format!(
            "a conversation error ({}), not conversation: {}",
            source.text("code"),
            source.text("detail")
        )),
        "CondensationRequest"
        | "ConversationStateUpdateEvent"
        | "PauseEvent"
        | "TokenEvent"
        | "LLMCompletionLogEvent" => Err(format!("agent bookkeeping ({kind}), not conversation")),
        "" => Err("an event without a \"kind\"".into()),
        other => Err(format!("an unknown event kind {other:?}")),
    }
}

/// `system_prompt` is a text content part (`{type, text}`), or a string.
fn system_prompt(source: &Source<'_>) -> Result<Event, String> {
    let prompt = source.map.get("system_prompt");
    let text = match prompt {
        Some(Value::String(text)) => text.as_str(),
        Some(part) => part.get("text").and_then(Value::as_str).unwrap_or_default(),
        None => "",
    };
    if text.trim().is_empty() {
        return Err("a system prompt without text".into());
    }
    Ok(Event::system(text))
}

/// A `MessageEvent`: the reasoning of its `llm_message`, then its text.
fn message(source: &Source<'_>) -> Mapped {
    let Some(message) = source.map.get("llm_message").and_then(Value::as_object) else {
        return Err("a message without an \"llm_message\"".into());
    };
    let mut events = reasoning_events(message);
    let parts: Vec<Value> = [message.get("content"), source.map.get("extended_content")]
        .into_iter()
        .flatten()
        .flat_map(parts_of)
        .collect();
    let text = content_text(Some(&Value::Array(parts.clone())));
    let media = image_media(&parts);
    if !text.trim().is_empty() || media.is_some() {
        let mut event = Event::new(message_type(message, source), text);
        event.media = media;
        events.push((String::new(), event));
    }
    if events.is_empty() {
        return Err("an empty message".into());
    }
    Ok(events)
}

/// Content as a list of parts: a string is one text part.
fn parts_of(content: &Value) -> Vec<Value> {
    match content {
        Value::Array(parts) => parts.clone(),
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

/// The message's `role`, else who its `source` says sent it.
fn message_type(message: &Map<String, Value>, source: &Source<'_>) -> TraceType {
    let role = message.get("role").and_then(Value::as_str);
    match (role, source.text("source")) {
        (Some("system"), _) => TraceType::System,
        (Some("user"), _) | (None, "user") => TraceType::User,
        _ => TraceType::Assistant,
    }
}

/// An `ActionEvent`: its reasoning, its thought, then the call.
fn action(source: &Source<'_>) -> Mapped {
    let mut events = reasoning_events(source.map);
    let thought = content_text(source.map.get("thought"));
    if !thought.trim().is_empty() {
        events.push(("-thought".into(), Event::assistant(thought)));
    }
    let tool_call = source.map.get("tool_call");
    let field = |key: &str| {
        tool_call
            .and_then(|call| call.get(key))
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    };
    let call_id = source
        .tool_call_id()
        .or_else(|| field("id"))
        .unwrap_or(&source.base_id);
    let action_kind = source
        .map
        .get("action")
        .and_then(|action| action.get("kind"))
        .and_then(Value::as_str);
    let tool_name = field("name")
        .or_else(|| source.non_empty("tool_name"))
        .or(action_kind)
        .ok_or("an action naming no tool (no \"tool_call\", \"tool_name\" or \"action.kind\")")?;
    let args = call_arguments(source.map);
    events.push((String::new(), Event::tool_call(call_id, tool_name, args)));
    Ok(events)
}

/// What the model called with: `tool_call.arguments` (a JSON string, parsed),
/// else the `action` the SDK made of them, without its `kind`, which names
/// the SDK's action class rather than an argument.
fn call_arguments(map: &Map<String, Value>) -> Value {
    let from_model = match map.get("tool_call").and_then(|call| call.get("arguments")) {
        Some(Value::String(arguments)) => agentmem::base::json::parse_within_nesting(arguments),
        Some(arguments @ Value::Object(_)) => Some(arguments.clone()),
        _ => None,
    };
    from_model.unwrap_or_else(|| {
        let mut action = map
            .get("action")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        action.remove("kind");
        Value::Object(action)
    })
}

/// An `ObservationEvent`: the result of the call its `tool_call_id` names.
fn observation(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "an observation")?;
    let observation = source.map.get("observation");
    let parts = observation
        .and_then(|o| o.get("content"))
        .map(parts_of)
        .unwrap_or_default();
    let text = content_text(Some(&Value::Array(parts.clone())));
    let mut event = match observation {
        Some(o) if is_error(o) => Event::tool_error(call_id, text),
        _ => Event::tool_result(call_id, text),
    };
    event.media = image_media(&parts);
    Ok(event)
}

/// `is_error`, or a command that exited non-zero (`exit_code`, or
/// `metadata.exit_code`; `-1` is a command that timed out or still runs,
/// which the model has to deal with as a failure too).
fn is_error(observation: &Value) -> bool {
    let flagged = observation
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let exit_code = observation
        .get("exit_code")
        .or_else(|| observation.get("metadata")?.get("exit_code"))
        .and_then(Value::as_i64);
    flagged || exit_code.is_some_and(|code| code != 0)
}

/// A `UserRejectObservation`: the call failed because the user refused it.
fn rejection(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "a rejection")?;
    let text = match source.text("rejection_reason").trim() {
        "" => "Rejected by the user.".to_owned(),
        reason => format!("Rejected by the user: {reason}"),
    };
    Ok(Event::tool_error(call_id, text))
}

/// An `AgentErrorEvent`: the call could not run (unknown tool, bad arguments).
fn agent_error(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "an agent error")?;
    Ok(Event::tool_error(call_id, source.text("error")))
}

fn answered_call<'a>(source: &Source<'a>, what: &str) -> Result<&'a str, String> {
    source
        .tool_call_id()
        .ok_or_else(|| format!("{what} without a \"tool_call_id\" answers no tool call"))
}

/// The reasoning of an action or message, from the first of its
/// `thinking_blocks`, `responses_reasoning_item` and `reasoning_content` that
/// is present: they are views of the same reasoning, so only one is kept.
fn reasoning_events(map: &Map<String, Value>) -> Vec<(String, Event)> {
    let blocks: Vec<&Value> = map
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.is_object())
        .collect();
    if !blocks.is_empty() {
        return blocks
            .into_iter()
            .enumerate()
            .map(|(index, block)| {
                let text = block.get("thinking").and_then(Value::as_str);
                let event = verbatim_reasoning(text.unwrap_or_default(), block);
                (format!("-thinking-{index}"), event)
            })
            .collect();
    }
    if let Some(item) = map
        .get("responses_reasoning_item")
        .filter(|item| item.is_object())
    {
        let summary = content_text(item.get("summary"));
        return vec![("-reasoning".into(), verbatim_reasoning(&summary, item))];
    }
    match map.get("reasoning_content").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => {
            vec![("-reasoning".into(), Event::new(TraceType::Reasoning, text))]
        }
        _ => Vec::new(),
    }
}

/// The images of content parts (`{type: "image", image_urls: [...]}`).
fn image_media(parts: &[Value]) -> Option<Media> {
    let images: Vec<String> = parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|part| part.get("image_urls").and_then(Value::as_array))
        .flatten()
        .filter_map(|url| url.as_str().map(str::to_owned))
        .collect();
    (!images.is_empty()).then(|| Media {
        images,
        ..Media::default()
    })
}

#[cfg(test)]
mod tests;
