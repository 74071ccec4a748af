//! What a live agent hands over in its provider's own shapes, as events: the
//! messages it sends (OpenAI Chat Completions messages, OpenAI Responses
//! items, Anthropic messages) and the responses it gets back, usage included.
//!
//! Files go through [`read()`](crate::read()), which gives every event a
//! stable id from its place in the file. Here the input is a live list: an
//! event keeps the id its provider gave the item (a Responses item's `id`, a
//! response's id with the part's index), so recording the same response twice
//! adds nothing, and has no id otherwise (the session assigns one).
//!
//! A whole call is refused when one item cannot be read, naming the item and
//! the reason, so nothing is half-ingested.
//!
//! ```
//! use agentmem_import::native::{events_from_messages, events_from_response, Shape};
//! use serde_json::json;
//! let messages = json!([{"role": "user", "content": "list the files"}]);
//! let events = events_from_messages(Shape::OpenAiChat, &messages).unwrap();
//! assert_eq!(events[0].content, "list the files");
//!
//! let response = json!({
//!     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
//!     "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}}],
//!     "usage": {"input_tokens": 120, "output_tokens": 9}
//! });
//! let events = events_from_response(Shape::AnthropicMessages, &response).unwrap();
//! assert_eq!(events[0].tool_name.as_deref(), Some("ls"));
//! assert_eq!(events[0].usage.as_ref().unwrap().prompt_tokens, 120);
//! ```

use agentmem::Event;
use serde_json::Value;

use crate::error::ImportError;
use crate::formats::provider;
use crate::record::keep_too_deep_values_as_text;
pub use crate::shape::Shape;

/// The events of `messages`: a list of messages (or items), one message, or
/// an object holding the list under `messages` (Chat, Anthropic) or `input`
/// (Responses). An Anthropic request's `system` becomes a system event first.
///
/// # Errors
///
/// [`ImportError::BadShape`] naming the first message that cannot be read and
/// why; no events are returned then.
pub fn events_from_messages(shape: Shape, messages: &Value) -> Result<Vec<Event>, ImportError> {
    let events =
        provider::message_events(shape, messages).map_err(|unreadable| ImportError::BadShape {
            shape,
            at: unreadable.at,
            reason: unreadable.reason,
        })?;
    Ok(finish(shape, events))
}

/// The events of a model's `response` (a Chat Completions `chat.completion`,
/// a Responses `response`, an Anthropic `message`), as dicts or JSON: what
/// the model said, its tool calls and reasoning, with the usage the provider
/// reported on the last event. Each event's id is the provider's id for the
/// item, else the response's id and the part's index, so recording a
/// response twice adds nothing.
///
/// # Errors
///
/// [`ImportError::BadShape`] when the response is not of `shape` (a Chat
/// response without `choices`, say) or holds an item that cannot be read.
pub fn events_from_response(shape: Shape, response: &Value) -> Result<Vec<Event>, ImportError> {
    let events =
        provider::response_events(shape, response).map_err(|reason| ImportError::BadShape {
            shape,
            at: "the response".into(),
            reason,
        })?;
    Ok(finish(shape, events))
}

/// Marks the events as handed over live in `shape`, with values too deep
/// for the engine kept as their text.
fn finish(shape: Shape, mut events: Vec<Event>) -> Vec<Event> {
    let source = shape.source_event();
    for event in &mut events {
        event.source_event.clone_from(&source);
        keep_too_deep_values_as_text(event);
    }
    events
}

#[cfg(test)]
mod tests;
