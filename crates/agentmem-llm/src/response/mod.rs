//! Provider answers turned into agentmem events.
//!
//! Every API says the same few things in its own shape: reasoning, text, tool
//! calls, why the model stopped and what the call cost. [`parse_completion`]
//! reads a whole (non-streaming) answer; [`StreamAccumulator`] gathers a
//! streamed one message by message, rebuilds the body the same call would
//! have returned whole, and parses that with the same code, so a streamed
//! answer and a whole one become the same events.
//!
//! What the events look like:
//!
//! - Events keep the order their parts had in the answer (in practice
//!   reasoning, then text, then tool calls). Consecutive text parts become
//!   one assistant event, their texts concatenated: providers split one text
//!   at arbitrary points (stream chunks, citations), so a separator would
//!   change it. Empty text makes no event.
//! - Reasoning keeps the provider's item verbatim in `opaque` (a Responses
//!   `reasoning` item, an Anthropic `thinking` / `redacted_thinking` block, a
//!   Gemini thought part), so the renderers can send it back; its readable
//!   text, possibly empty, is the content. Chat Completions reasoning
//!   (`reasoning_content`) is text only: that API takes none back.
//! - Tool arguments are JSON values. Arguments sent as a JSON string are
//!   parsed; a string that is not JSON is kept as a string value (the
//!   renderers wrap it), and an empty one means no arguments (`{}`).
//! - A tool call without an id (Gemini before call ids; a few compatible
//!   servers) gets `call_<n>_<name>`, `n` counting the answer's tool calls
//!   from 0: deterministic, so a re-parsed answer pairs with the same results.
//! - Parts no agent acts on (provider-side tool runs such as web search,
//!   executable code, inline data) are skipped rather than refused, so a new
//!   part type does not break a call.
//! - `usage` is set on the [`Completion`], not on the events: the caller
//!   knows which event it measures. It is `None` when the provider sent none.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;

use agentmem::{Event, Target, TraceType, Usage};
use serde_json::{Map, Value};

use crate::error::LlmError;

use anthropic::AnthropicStream;
use gemini::GeminiStream;
use openai_chat::ChatStream;
use openai_responses::ResponsesStream;

/// One model answer: its events in order (reasoning, text, tool calls) and
/// the usage the provider reported.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub events: Vec<Event>,
    pub usage: Option<Usage>,
    /// Why the model stopped, as the provider said it (`stop`, `tool_use`, …).
    pub stop_reason: Option<String>,
}

/// Reads a whole answer of `target`'s API.
///
/// `stop_reason` is the provider's own word: Chat Completions'
/// `finish_reason`, Responses' `status`, Anthropic's `stop_reason`, Gemini's
/// `finishReason`.
///
/// Fails with [`LlmError::BadResponse`] when the body is not an answer of
/// that API, or is an error the provider sent with a success status.
///
/// ```
/// use agentmem::Target;
/// use agentmem_llm::response::parse_completion;
/// let body = serde_json::json!({
///     "model": "claude-sonnet-4-5",
///     "content": [{"type": "text", "text": "Done."}],
///     "stop_reason": "end_turn",
///     "usage": {"input_tokens": 10, "output_tokens": 2}
/// });
/// let completion = parse_completion(Target::Anthropic, &body).unwrap();
/// assert_eq!(completion.events[0].content, "Done.");
/// assert_eq!(completion.usage.unwrap().prompt_tokens, 10);
/// ```
pub fn parse_completion(target: Target, body: &Value) -> Result<Completion, LlmError> {
    if !body.is_object() {
        return Err(bad(format!(
            "expected a JSON object, got {}",
            excerpt(&body.to_string())
        )));
    }
    if let Some(message) = error_message(body) {
        return Err(bad(message));
    }
    match target {
        Target::OpenAiChat => openai_chat::parse_chat(body),
        Target::OpenAiResponses => openai_responses::parse_responses(body),
        Target::Anthropic => anthropic::parse_anthropic(body),
        Target::Gemini => gemini::parse_gemini(body),
    }
}

// ---------------------------------------------------------------------------
// Event building shared by every API.

/// The events of one answer as they are read.
#[derive(Debug, Default)]
struct Events {
    events: Vec<Event>,
    /// Tool calls so far, for ids made up for calls that have none.
    calls: usize,
}

impl Events {
    /// Text: appended to the assistant event just before, else a new one.
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.events.last_mut() {
            Some(last) if last.trace_type == TraceType::Assistant => last.content.push_str(text),
            Some(_) | None => self.events.push(Event::assistant(text)),
        }
    }

    /// Reasoning; skipped when it has neither text nor an item to send back.
    fn reasoning(&mut self, text: String, opaque: Option<Value>) {
        if text.is_empty() && opaque.is_none() {
            return;
        }
        let mut event = Event::new(TraceType::Reasoning, text);
        event.opaque = opaque;
        self.events.push(event);
    }

    /// A tool call; a missing or empty id becomes `call_<n>_<name>`.
    fn tool_call(&mut self, id: Option<&str>, name: &str, args: Value, opaque: Option<Value>) {
        let id = match id {
            Some(id) if !id.is_empty() => id.to_owned(),
            Some(_) | None => format!("call_{}_{name}", self.calls),
        };
        self.calls += 1;
        let mut event = Event::tool_call(id, name, args);
        event.opaque = opaque;
        self.events.push(event);
    }

    fn into_vec(self) -> Vec<Event> {
        self.events
    }
}

/// Tool arguments as a JSON value: a JSON string is parsed (see
/// [`arguments_from_str`]); a value sent as is (some compatible servers send
/// an object) is kept; none means no arguments.
fn arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(text)) => arguments_from_str(text),
        Some(Value::Null) | None => empty_object(),
        Some(value @ (Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_))) => {
            value.clone()
        }
    }
}

/// Arguments sent as JSON text: parsed; text that is not JSON (a model's
/// malformed call) stays a string so nothing is lost and the tool can report
/// it; blank text means no arguments.
fn arguments_from_str(text: &str) -> Value {
    if text.trim().is_empty() {
        return empty_object();
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

// ---------------------------------------------------------------------------
// Small readers of provider JSON: absent and mistyped fields read as absent.

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn str_of_map<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn string(value: &Value, key: &str) -> Option<String> {
    str_of(value, key).map(str::to_owned)
}

fn count(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn object_of<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| v.is_object())
}

/// The list under `key`: empty when absent or `null`, an error when it is
/// something else (the answer is not what the API documents).
fn array_of<'a>(value: &'a Value, key: &str) -> Result<&'a [Value], LlmError> {
    match value.get(key) {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Null) | None => Ok(&[]),
        Some(other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_))) => {
            Err(bad(format!(
                "`{key}` is not a list: {}",
                excerpt(&other.to_string())
            )))
        }
    }
}

/// A string field that must be there and not be empty (a tool's name).
fn required_str<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, LlmError> {
    match str_of(value, key) {
        Some(text) if !text.is_empty() => Ok(text),
        Some(_) | None => Err(bad(format!("{what} without a {key}"))),
    }
}

/// The message of an error sent where an answer was expected:
/// `{"error": {"message"}}` (OpenAI, Anthropic, Gemini), `{"error": "text"}`
/// (some compatible servers), or a Responses stream `error` event, which
/// has its `message` at the top.
fn error_message(value: &Value) -> Option<String> {
    match value.get("error") {
        Some(Value::Object(error)) => Some(match error.get("message").and_then(Value::as_str) {
            Some(message) => message.to_owned(),
            None => excerpt(&Value::Object(error.clone()).to_string()),
        }),
        Some(Value::String(message)) => Some(message.clone()),
        Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_)) | None => {
            (str_of(value, "type") == Some("error")).then(|| {
                str_of(value, "message")
                    .unwrap_or("the provider sent an error without a message")
                    .to_owned()
            })
        }
    }
}

fn bad(message: impl Into<String>) -> LlmError {
    LlmError::BadResponse {
        message: message.into(),
    }
}

/// At most 200 characters of `text`, for error messages.
fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

// ---------------------------------------------------------------------------
// Streaming.

/// Gathers a streamed answer, one server-sent event at a time.
///
/// Feed it every SSE message with [`push`](Self::push); print what it
/// returns as the visible text arrives; call [`finish`](Self::finish) when
/// the stream ends. The accumulator rebuilds the body the API would have
/// returned whole and reads it with [`parse_completion`], so both modes give
/// the same events.
///
/// A stream cut short gives what arrived, with `stop_reason: None` unless the
/// provider had already said why it stopped (a stop reason is how a caller
/// tells a finished answer from a truncated one); a stream that carried no
/// answer at all is an error.
///
/// ```
/// use agentmem::Target;
/// use agentmem_llm::response::StreamAccumulator;
/// let mut stream = StreamAccumulator::new(Target::OpenAiChat);
/// let shown = stream
///     .push(None, r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#)
///     .unwrap();
/// assert_eq!(shown.as_deref(), Some("Hi"));
/// stream.push(None, "[DONE]").unwrap();
/// assert_eq!(stream.finish().unwrap().events[0].content, "Hi");
/// ```
#[derive(Debug)]
pub struct StreamAccumulator {
    stream: Stream,
}

/// The state of one API's stream.
#[derive(Debug)]
enum Stream {
    OpenAiChat(ChatStream),
    OpenAiResponses(ResponsesStream),
    Anthropic(AnthropicStream),
    Gemini(GeminiStream),
}

impl StreamAccumulator {
    /// An empty accumulator for a stream of `target`'s API.
    pub fn new(target: Target) -> Self {
        let stream = match target {
            Target::OpenAiChat => Stream::OpenAiChat(ChatStream::default()),
            Target::OpenAiResponses => Stream::OpenAiResponses(ResponsesStream::default()),
            Target::Anthropic => Stream::Anthropic(AnthropicStream::default()),
            Target::Gemini => Stream::Gemini(GeminiStream::default()),
        };
        StreamAccumulator { stream }
    }

    /// Takes one SSE message: its `event:` name, if any, and its `data:`
    /// payload. Returns the answer text it adds, to show as it arrives
    /// (reasoning and tool arguments are not returned).
    ///
    /// Empty data, `[DONE]` and keep-alives (`ping`) are ignored. Fails with
    /// [`LlmError::BadResponse`] on data that is not JSON, on an error the
    /// provider sent mid-stream (its message), and on messages that break
    /// the API's protocol.
    pub fn push(&mut self, event: Option<&str>, data: &str) -> Result<Option<String>, LlmError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" || event == Some("ping") {
            return Ok(None);
        }
        let chunk: Value = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(_) if event == Some("error") => return Err(bad(excerpt(data))),
            Err(error) => {
                return Err(bad(format!(
                    "a stream message is not JSON ({error}): {}",
                    excerpt(data)
                )))
            }
        };
        if let Some(message) = error_message(&chunk) {
            return Err(bad(message));
        }
        // Responses and Anthropic name each message in its data's `type`
        // too; the data wins, so a relay that drops `event:` lines still works.
        let kind = str_of(&chunk, "type").or(event).unwrap_or_default();
        match &mut self.stream {
            Stream::OpenAiChat(stream) => stream.push(&chunk),
            Stream::OpenAiResponses(stream) => stream.push(kind, &chunk),
            Stream::Anthropic(stream) => stream.push(kind, &chunk),
            Stream::Gemini(stream) => stream.push(&chunk),
        }
    }

    /// The answer the stream carried.
    pub fn finish(self) -> Result<Completion, LlmError> {
        match self.stream {
            Stream::OpenAiChat(stream) => stream.finish(),
            Stream::OpenAiResponses(stream) => stream.finish(),
            Stream::Anthropic(stream) => stream.finish(),
            Stream::Gemini(stream) => stream.finish(),
        }
    }
}

fn no_answer() -> LlmError {
    bad("the stream ended before any answer arrived")
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of a `BadResponse`, failing on anything else.
    pub(super) fn bad_message<T: std::fmt::Debug>(result: Result<T, LlmError>) -> String {
        match result {
            Err(LlmError::BadResponse { message }) => message,
            other => panic!("expected BadResponse, got {other:?}"),
        }
    }

    pub(super) fn usage(prompt: u64, completion: u64, cached: u64, model: &str) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            model: Some(model.to_owned()),
            estimated_prompt_tokens: None,
            estimated_view_tokens: None,
        })
    }

    pub(super) fn reasoning(text: &str, opaque: Option<Value>) -> Event {
        let mut event = Event::new(TraceType::Reasoning, text);
        event.opaque = opaque;
        event
    }

    /// Feeds `(event, data)` messages; returns the shown text and the answer.
    pub(super) fn stream(
        target: Target,
        messages: &[(Option<&str>, &str)],
    ) -> (String, Completion) {
        let mut accumulator = StreamAccumulator::new(target);
        let mut shown = String::new();
        for (event, data) in messages {
            if let Some(text) = accumulator.push(*event, data).unwrap() {
                shown.push_str(&text);
            }
        }
        (shown, accumulator.finish().unwrap())
    }

    #[test]
    fn keep_alives_and_done_are_ignored() {
        for target in Target::ALL {
            let mut accumulator = StreamAccumulator::new(target);
            assert_eq!(accumulator.push(None, "[DONE]").unwrap(), None);
            assert_eq!(
                accumulator
                    .push(Some("ping"), r#"{"type":"ping"}"#)
                    .unwrap(),
                None
            );
            assert_eq!(accumulator.push(None, "  ").unwrap(), None);
            assert_eq!(
                bad_message(accumulator.finish()),
                "the stream ended before any answer arrived",
                "{target}"
            );
        }
    }
}
