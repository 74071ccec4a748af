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

use std::collections::BTreeMap;

use agentmem::event::{Event, TraceType, Usage};
use agentmem::render::Target;
use serde_json::{json, Map, Value};

use crate::error::LlmError;

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
/// use agentmem::render::Target;
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
        Target::OpenAiChat => parse_chat(body),
        Target::OpenAiResponses => parse_responses(body),
        Target::Anthropic => parse_anthropic(body),
        Target::Gemini => parse_gemini(body),
    }
}

// ---------------------------------------------------------------------------
// Whole answers, one function per API.

/// Chat Completions: `choices[0].message`.
fn parse_chat(body: &Value) -> Result<Completion, LlmError> {
    let choice = first_choice(body)?.ok_or_else(|| bad("a chat completion without choices"))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| bad("a chat completion choice without a message"))?;
    let mut events = Events::default();
    events.reasoning(chat_reasoning(message).to_owned(), None);
    events.text(&chat_text(message));
    for call in array_of(message, "tool_calls")? {
        chat_tool_call(&mut events, call)?;
    }
    Ok(Completion {
        events: events.into_vec(),
        usage: object_of(body, "usage").map(|usage| chat_usage(usage, string(body, "model"))),
        stop_reason: string(choice, "finish_reason"),
    })
}

/// The choice of index 0 (the only one unless `n` was set), if any.
fn first_choice(body: &Value) -> Result<Option<&Value>, LlmError> {
    Ok(array_of(body, "choices")?
        .iter()
        .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0))
}

/// Reasoning text of a chat message or delta: `reasoning_content` (DeepSeek,
/// vLLM, llama.cpp) or `reasoning` (Ollama, OpenRouter, newer vLLM). Servers
/// that send both send the same text, so one is read.
fn chat_reasoning(message: &Value) -> &str {
    str_of(message, "reasoning_content")
        .or_else(|| str_of(message, "reasoning"))
        .unwrap_or_default()
}

/// The visible text of a chat message: its content (a string, or text parts
/// on some servers), else its refusal, which is what the model said.
fn chat_text(message: &Value) -> String {
    let text = chat_content(message.get("content"));
    if text.is_empty() {
        str_of(message, "refusal").unwrap_or_default().to_owned()
    } else {
        text
    }
}

fn chat_content(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| str_of(part, "text"))
            .collect(),
        Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_)) | None => {
            String::new()
        }
    }
}

/// One entry of `tool_calls`. Entries of another `type` than `function`
/// (custom tools, which agentmem does not declare) are skipped; a missing
/// `type` is read as `function`, as compatible servers often leave it out.
fn chat_tool_call(events: &mut Events, call: &Value) -> Result<(), LlmError> {
    if str_of(call, "type").unwrap_or("function") != "function" {
        return Ok(());
    }
    let function = call
        .get("function")
        .ok_or_else(|| bad("a chat tool call without a function"))?;
    let name = required_str(function, "name", "a chat tool call")?;
    events.tool_call(
        str_of(call, "id"),
        name,
        arguments(function.get("arguments")),
        None,
    );
    Ok(())
}

/// Chat usage: `prompt_tokens` counts cached tokens, `completion_tokens`
/// counts reasoning. The cached count is `prompt_tokens_details.cached_tokens`
/// (OpenAI) or `prompt_cache_hit_tokens` (DeepSeek).
fn chat_usage(usage: &Value, model: Option<String>) -> Usage {
    let details = usage
        .get("prompt_tokens_details")
        .map_or(0, |d| count(d, "cached_tokens"));
    Usage {
        prompt_tokens: count(usage, "prompt_tokens"),
        completion_tokens: count(usage, "completion_tokens"),
        cached_tokens: details.max(count(usage, "prompt_cache_hit_tokens")),
        model,
        estimated_prompt_tokens: None,
    }
}

/// Responses: the `output` items in order.
fn parse_responses(body: &Value) -> Result<Completion, LlmError> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("a response without an output list"))?;
    let mut events = Events::default();
    for item in output {
        responses_item(&mut events, item)?;
    }
    Ok(Completion {
        events: events.into_vec(),
        usage: object_of(body, "usage").map(|usage| responses_usage(usage, string(body, "model"))),
        stop_reason: string(body, "status"),
    })
}

/// One output item. Items of provider-side tools (`web_search_call`,
/// `file_search_call`, …) ran on the provider's side: nothing to answer.
fn responses_item(events: &mut Events, item: &Value) -> Result<(), LlmError> {
    match str_of(item, "type").unwrap_or_default() {
        "message" => {
            for part in array_of(item, "content")? {
                match str_of(part, "type").unwrap_or_default() {
                    "output_text" => events.text(str_of(part, "text").unwrap_or_default()),
                    "refusal" => events.text(str_of(part, "refusal").unwrap_or_default()),
                    _ => {}
                }
            }
        }
        "function_call" => {
            let name = required_str(item, "name", "a function_call item")?;
            // `call_id` pairs with the output; `id` (`fc_…`) names the item.
            events.tool_call(
                str_of(item, "call_id"),
                name,
                arguments(item.get("arguments")),
                None,
            );
        }
        "reasoning" => events.reasoning(reasoning_item_text(item), Some(item.clone())),
        _ => {}
    }
    Ok(())
}

/// The readable text of a reasoning item: its summary paragraphs, else its
/// raw reasoning text (open-weight models served through Responses).
fn reasoning_item_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<&str> {
        item.get(key)
            .and_then(Value::as_array)
            .map(|parts| parts.iter().filter_map(|p| str_of(p, "text")).collect())
            .unwrap_or_default()
    };
    let summary = texts("summary");
    if summary.is_empty() {
        texts("content").join("\n\n")
    } else {
        summary.join("\n\n")
    }
}

/// Responses usage: `input_tokens` counts cached tokens, `output_tokens`
/// counts reasoning.
fn responses_usage(usage: &Value, model: Option<String>) -> Usage {
    Usage {
        prompt_tokens: count(usage, "input_tokens"),
        completion_tokens: count(usage, "output_tokens"),
        cached_tokens: usage
            .get("input_tokens_details")
            .map_or(0, |d| count(d, "cached_tokens")),
        model,
        estimated_prompt_tokens: None,
    }
}

/// Anthropic Messages: the `content` blocks in order.
fn parse_anthropic(body: &Value) -> Result<Completion, LlmError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("a message without a content list"))?;
    let mut events = Events::default();
    for block in content {
        anthropic_block(&mut events, block)?;
    }
    Ok(Completion {
        events: events.into_vec(),
        usage: object_of(body, "usage").map(|usage| anthropic_usage(usage, string(body, "model"))),
        stop_reason: string(body, "stop_reason"),
    })
}

/// One content block. Server tool blocks (`server_tool_use`,
/// `web_search_tool_result`, …) ran on Anthropic's side: nothing to answer.
fn anthropic_block(events: &mut Events, block: &Value) -> Result<(), LlmError> {
    match str_of(block, "type").unwrap_or_default() {
        "text" => events.text(str_of(block, "text").unwrap_or_default()),
        "tool_use" => {
            let name = required_str(block, "name", "a tool_use block")?;
            let input = block.get("input").cloned().unwrap_or_else(empty_object);
            events.tool_call(str_of(block, "id"), name, input, None);
        }
        "thinking" => events.reasoning(
            str_of(block, "thinking").unwrap_or_default().to_owned(),
            Some(block.clone()),
        ),
        // Encrypted by Anthropic: nothing readable, but it must go back.
        "redacted_thinking" => events.reasoning(String::new(), Some(block.clone())),
        _ => {}
    }
    Ok(())
}

/// Anthropic usage: `input_tokens` counts only the uncached tail of the
/// prompt, so the prompt is input + cache reads + cache writes; the cached
/// part is the cache reads. `output_tokens` counts thinking.
fn anthropic_usage(usage: &Value, model: Option<String>) -> Usage {
    let cache_read = count(usage, "cache_read_input_tokens");
    Usage {
        prompt_tokens: count(usage, "input_tokens")
            + cache_read
            + count(usage, "cache_creation_input_tokens"),
        completion_tokens: count(usage, "output_tokens"),
        cached_tokens: cache_read,
        model,
        estimated_prompt_tokens: None,
    }
}

/// Gemini generateContent: `candidates[0].content.parts` in order. A
/// candidate without content (stopped by a safety filter, or out of tokens
/// while thinking) is an answer with no events; no candidate at all is an
/// error (a blocked prompt says why in `promptFeedback`).
fn parse_gemini(body: &Value) -> Result<Completion, LlmError> {
    let candidate = match body.get("candidates").and_then(|c| c.get(0)) {
        Some(candidate) => candidate,
        None => return Err(bad(gemini_without_candidate(body))),
    };
    let parts = match candidate.get("content") {
        Some(content) => array_of(content, "parts")?,
        None => &[],
    };
    let mut events = Events::default();
    for part in merge_text_parts(parts) {
        gemini_part(&mut events, &part)?;
    }
    Ok(Completion {
        events: events.into_vec(),
        usage: object_of(body, "usageMetadata")
            .map(|usage| gemini_usage(usage, string(body, "modelVersion"))),
        stop_reason: string(candidate, "finishReason"),
    })
}

fn gemini_without_candidate(body: &Value) -> String {
    match body
        .get("promptFeedback")
        .and_then(|feedback| str_of(feedback, "blockReason"))
    {
        Some(reason) => format!("Gemini blocked the prompt ({reason})"),
        None => "a Gemini answer without candidates".to_owned(),
    }
}

/// The parts with each run of text parts of one kind (thought or not) made
/// one part, its texts concatenated and its other fields (a
/// `thoughtSignature`) kept. Gemini splits thoughts and text over parts
/// freely, more so when streaming; one thought part gives one reasoning
/// event whose `opaque` is the whole thought.
fn merge_text_parts(parts: &[Value]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for part in parts {
        match (merged.last_mut(), str_of(part, "text")) {
            (Some(last), Some(text))
                if is_text_part(last) && is_thought(last) == is_thought(part) =>
            {
                merge_into(last, part, text);
            }
            (Some(_) | None, Some(_) | None) => merged.push(part.clone()),
        }
    }
    merged
}

/// Appends `part`'s `text` to `into`'s and copies its other fields over.
fn merge_into(into: &mut Value, part: &Value, text: &str) {
    if let (Some(into), Some(fields)) = (into.as_object_mut(), part.as_object()) {
        let mut joined = str_of_map(into, "text").to_owned();
        joined.push_str(text);
        for (key, value) in fields {
            into.insert(key.clone(), value.clone());
        }
        into.insert("text".to_owned(), Value::String(joined));
    }
}

fn is_text_part(part: &Value) -> bool {
    str_of(part, "text").is_some() && part.get("functionCall").is_none()
}

fn is_thought(part: &Value) -> bool {
    part.get("thought").and_then(Value::as_bool) == Some(true)
}

/// One (merged) part. A function call that carries a `thoughtSignature`
/// keeps its whole part in the event's `opaque`: Gemini 3 wants that
/// signature back with the call.
fn gemini_part(events: &mut Events, part: &Value) -> Result<(), LlmError> {
    if let Some(call) = part.get("functionCall") {
        let name = required_str(call, "name", "a Gemini functionCall")?;
        let args = call.get("args").cloned().unwrap_or_else(empty_object);
        let opaque = part.get("thoughtSignature").map(|_| part.clone());
        events.tool_call(str_of(call, "id"), name, args, opaque);
    } else if let Some(text) = str_of(part, "text") {
        if is_thought(part) {
            events.reasoning(text.to_owned(), Some(part.clone()));
        } else {
            events.text(text);
        }
    }
    Ok(())
}

/// Gemini usage: `promptTokenCount` counts cached content; the completion is
/// the candidates' tokens plus the thoughts' (counted apart).
fn gemini_usage(usage: &Value, model: Option<String>) -> Usage {
    Usage {
        prompt_tokens: count(usage, "promptTokenCount"),
        completion_tokens: count(usage, "candidatesTokenCount")
            + count(usage, "thoughtsTokenCount"),
        cached_tokens: count(usage, "cachedContentTokenCount"),
        model,
        estimated_prompt_tokens: None,
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
/// use agentmem::render::Target;
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

/// Chat Completions chunks: `choices[0].delta` pieces, tool calls by index,
/// usage in a last chunk with no choices (`stream_options.include_usage`).
#[derive(Debug, Default)]
struct ChatStream {
    started: bool,
    model: Option<String>,
    reasoning: String,
    text: String,
    /// Tool calls by their `index`, in index order.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

/// A streamed chat tool call: the id and name come once, the arguments in
/// pieces.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl ChatStream {
    fn push(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
        self.started = true;
        if let Some(model) = string(chunk, "model") {
            self.model = Some(model);
        }
        if let Some(usage) = object_of(chunk, "usage") {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = first_choice(chunk)? else {
            return Ok(None);
        };
        if let Some(reason) = string(choice, "finish_reason") {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(None);
        };
        self.reasoning.push_str(chat_reasoning(delta));
        for call in array_of(delta, "tool_calls")? {
            self.push_call(call);
        }
        let text = chat_content(delta.get("content"));
        self.text.push_str(&text);
        Ok(non_empty(&text))
    }

    fn push_call(&mut self, call: &Value) {
        let id = str_of(call, "id").filter(|id| !id.is_empty());
        let index = match call.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => self.index_of_unindexed(id),
        };
        let entry = self.calls.entry(index).or_default();
        if let Some(id) = id {
            entry.id = id.to_owned();
        }
        let Some(function) = call.get("function") else {
            return;
        };
        if let Some(name) = str_of(function, "name").filter(|name| !name.is_empty()) {
            entry.name = name.to_owned();
        }
        match function.get("arguments") {
            Some(Value::String(piece)) => entry.arguments.push_str(piece),
            Some(
                value @ (Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_)),
            ) => {
                entry.arguments = value.to_string();
            }
            Some(Value::Null) | None => {}
        }
    }

    /// Where a tool call piece without an `index` goes (some compatible
    /// servers leave it out): a new id starts a call, else it continues the
    /// last one.
    fn index_of_unindexed(&self, id: Option<&str>) -> u64 {
        match self.calls.iter().next_back() {
            None => 0,
            Some((&index, last)) => match id {
                Some(id) if id != last.id => index + 1,
                Some(_) | None => index,
            },
        }
    }

    fn finish(self) -> Result<Completion, LlmError> {
        if !self.started {
            return Err(no_answer());
        }
        let tool_calls: Vec<Value> = self
            .calls
            .into_values()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
        let body = json!({
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": self.text,
                    "reasoning_content": self.reasoning,
                    "tool_calls": tool_calls,
                },
                "finish_reason": self.finish_reason,
            }],
            "usage": self.usage,
        });
        parse_chat(&body)
    }
}

/// Responses events. The items come whole in `response.output_item.done`
/// and again in `response.completed`, whose `response` is the body a
/// non-streaming call returns: when it arrives it is the answer. The items
/// and the text deltas are the fallback for servers whose final response
/// lists no output, and for streams cut short.
#[derive(Debug, Default)]
struct ResponsesStream {
    started: bool,
    /// Finished items with their `output_index`.
    items: Vec<(u64, Value)>,
    /// Text of the message item in progress (no `output_item.done` yet).
    pending_text: String,
    /// The `response` of `response.completed` or `response.incomplete`.
    response: Option<Value>,
}

impl ResponsesStream {
    fn push(&mut self, kind: &str, chunk: &Value) -> Result<Option<String>, LlmError> {
        self.started = true;
        match kind {
            "response.output_text.delta" => {
                let delta = str_of(chunk, "delta").unwrap_or_default();
                self.pending_text.push_str(delta);
                Ok(non_empty(delta))
            }
            "response.output_item.done" => {
                let item = object_of(chunk, "item")
                    .ok_or_else(|| bad("response.output_item.done without an item"))?;
                if str_of(item, "type") == Some("message") {
                    self.pending_text.clear();
                }
                let index = chunk
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.items.len() as u64);
                self.items.push((index, item.clone()));
                Ok(None)
            }
            "response.completed" | "response.incomplete" => {
                let response = object_of(chunk, "response")
                    .ok_or_else(|| bad(format!("{kind} without a response")))?;
                self.response = Some(response.clone());
                Ok(None)
            }
            "response.failed" => Err(bad(chunk
                .get("response")
                .and_then(error_message)
                .unwrap_or_else(|| "the response failed without an error message".to_owned()))),
            // created, in_progress, *.added, *.delta of arguments and
            // reasoning: the done items and the final response carry the same.
            _ => Ok(None),
        }
    }

    fn finish(self) -> Result<Completion, LlmError> {
        if !self.started {
            return Err(no_answer());
        }
        let mut body = self.response.unwrap_or_else(empty_object);
        let has_output = body
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|output| !output.is_empty());
        if !has_output {
            let mut items = self.items;
            items.sort_by_key(|(index, _)| *index);
            let mut output: Vec<Value> = items.into_iter().map(|(_, item)| item).collect();
            if !self.pending_text.is_empty() {
                output.push(json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": self.pending_text}],
                }));
            }
            if let Some(fields) = body.as_object_mut() {
                fields.insert("output".to_owned(), Value::Array(output));
            }
        }
        parse_responses(&body)
    }
}

/// Anthropic events: `message_start` (model, prompt usage), content blocks
/// started, grown by deltas and stopped by index, `message_delta` (stop
/// reason, output usage).
#[derive(Debug, Default)]
struct AnthropicStream {
    started: bool,
    model: Option<String>,
    /// Usage fields: `message_start`'s, overwritten by `message_delta`'s
    /// (cumulative counts).
    usage: Map<String, Value>,
    /// Content blocks by index, as started and grown by their deltas.
    blocks: BTreeMap<u64, Value>,
    /// The `input` of tool_use blocks, as the JSON text pieces sent so far.
    partial_json: BTreeMap<u64, String>,
    stop_reason: Option<String>,
}

impl AnthropicStream {
    fn push(&mut self, kind: &str, chunk: &Value) -> Result<Option<String>, LlmError> {
        match kind {
            "message_start" => {
                let message = object_of(chunk, "message")
                    .ok_or_else(|| bad("message_start without a message"))?;
                self.started = true;
                self.model = string(message, "model");
                self.merge_usage(message.get("usage"));
                Ok(None)
            }
            "content_block_start" => {
                let index = block_index(chunk)?;
                let block = object_of(chunk, "content_block")
                    .ok_or_else(|| bad("content_block_start without a content_block"))?;
                self.started = true;
                self.blocks.insert(index, block.clone());
                Ok(None)
            }
            "content_block_delta" => self.delta(chunk),
            "message_delta" => {
                if let Some(reason) = chunk.get("delta").and_then(|d| string(d, "stop_reason")) {
                    self.stop_reason = Some(reason);
                }
                self.merge_usage(chunk.get("usage"));
                Ok(None)
            }
            // content_block_stop, message_stop, ping: nothing to take.
            _ => Ok(None),
        }
    }

    fn merge_usage(&mut self, usage: Option<&Value>) {
        if let Some(Value::Object(fields)) = usage {
            for (key, value) in fields {
                if !value.is_null() {
                    self.usage.insert(key.clone(), value.clone());
                }
            }
        }
    }

    fn delta(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
        let index = block_index(chunk)?;
        let delta = chunk
            .get("delta")
            .ok_or_else(|| bad("content_block_delta without a delta"))?;
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            bad(format!(
                "a delta for content block {index}, which never started"
            ))
        })?;
        let piece = |key: &str| str_of(delta, key).unwrap_or_default();
        match str_of(delta, "type").unwrap_or_default() {
            "text_delta" => {
                append(block, "text", piece("text"));
                Ok(non_empty(piece("text")))
            }
            "input_json_delta" => {
                self.partial_json
                    .entry(index)
                    .or_default()
                    .push_str(piece("partial_json"));
                Ok(None)
            }
            "thinking_delta" => {
                append(block, "thinking", piece("thinking"));
                Ok(None)
            }
            "signature_delta" => {
                append(block, "signature", piece("signature"));
                Ok(None)
            }
            // citations_delta and later kinds: not part of the events.
            _ => Ok(None),
        }
    }

    fn finish(mut self) -> Result<Completion, LlmError> {
        if !self.started {
            return Err(no_answer());
        }
        let mut content = Vec::with_capacity(self.blocks.len());
        for (index, mut block) in self.blocks {
            if let (Some(json), Some(fields)) =
                (self.partial_json.remove(&index), block.as_object_mut())
            {
                fields.insert("input".to_owned(), arguments_from_str(&json));
            }
            content.push(block);
        }
        let usage = if self.usage.is_empty() {
            Value::Null
        } else {
            Value::Object(self.usage)
        };
        let body = json!({
            "model": self.model,
            "content": content,
            "stop_reason": self.stop_reason,
            "usage": usage,
        });
        parse_anthropic(&body)
    }
}

fn block_index(chunk: &Value) -> Result<u64, LlmError> {
    chunk
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("a content block event without an index"))
}

/// Appends `piece` to the string field `key` of the object `block`.
fn append(block: &mut Value, key: &str, piece: &str) {
    if let Some(fields) = block.as_object_mut() {
        match fields.get_mut(key) {
            Some(Value::String(text)) => text.push_str(piece),
            Some(_) | None => {
                fields.insert(key.to_owned(), Value::String(piece.to_owned()));
            }
        }
    }
}

/// Gemini chunks: each a GenerateContentResponse holding the next parts.
/// The parts are gathered in order (the parser merges text runs); the
/// finish reason, usage and model are the last ones sent.
#[derive(Debug, Default)]
struct GeminiStream {
    started: bool,
    parts: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    model: Option<String>,
}

impl GeminiStream {
    fn push(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
        self.started = true;
        if let Some(model) = string(chunk, "modelVersion") {
            self.model = Some(model);
        }
        if let Some(usage) = object_of(chunk, "usageMetadata") {
            self.usage = Some(usage.clone());
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
            return match chunk
                .get("promptFeedback")
                .and_then(|f| f.get("blockReason"))
            {
                Some(_) => Err(bad(gemini_without_candidate(chunk))),
                None => Ok(None),
            };
        };
        if let Some(reason) = string(candidate, "finishReason") {
            self.finish_reason = Some(reason);
        }
        let parts = match candidate.get("content") {
            Some(content) => array_of(content, "parts")?,
            None => &[],
        };
        let mut shown = String::new();
        for part in parts {
            if is_text_part(part) && !is_thought(part) {
                shown.push_str(str_of(part, "text").unwrap_or_default());
            }
            self.parts.push(part.clone());
        }
        Ok(non_empty(&shown))
    }

    fn finish(self) -> Result<Completion, LlmError> {
        if !self.started {
            return Err(no_answer());
        }
        let body = json!({
            "candidates": [{
                "content": {"role": "model", "parts": self.parts},
                "finishReason": self.finish_reason,
            }],
            "usageMetadata": self.usage,
            "modelVersion": self.model,
        });
        parse_gemini(&body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of a `BadResponse`, failing on anything else.
    fn bad_message<T: std::fmt::Debug>(result: Result<T, LlmError>) -> String {
        match result {
            Err(LlmError::BadResponse { message }) => message,
            other => panic!("expected BadResponse, got {other:?}"),
        }
    }

    fn usage(prompt: u64, completion: u64, cached: u64, model: &str) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            model: Some(model.to_owned()),
            estimated_prompt_tokens: None,
        })
    }

    fn reasoning(text: &str, opaque: Option<Value>) -> Event {
        let mut event = Event::new(TraceType::Reasoning, text);
        event.opaque = opaque;
        event
    }

    /// Feeds `(event, data)` messages; returns the shown text and the answer.
    fn stream(target: Target, messages: &[(Option<&str>, &str)]) -> (String, Completion) {
        let mut accumulator = StreamAccumulator::new(target);
        let mut shown = String::new();
        for (event, data) in messages {
            if let Some(text) = accumulator.push(*event, data).unwrap() {
                shown.push_str(&text);
            }
        }
        (shown, accumulator.finish().unwrap())
    }

    // --- OpenAI Chat Completions -------------------------------------------

    #[test]
    fn chat_text_answer() {
        let body = json!({
            "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
            "object": "chat.completion",
            "created": 1741569952,
            "model": "gpt-4.1-2025-04-14",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hello! How can I assist you today?",
                    "refusal": null,
                    "annotations": []
                },
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {
                "prompt_tokens": 19,
                "completion_tokens": 10,
                "total_tokens": 29,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}
            },
            "service_tier": "default"
        });
        let completion = parse_completion(Target::OpenAiChat, &body).unwrap();
        assert_eq!(
            completion,
            Completion {
                events: vec![Event::assistant("Hello! How can I assist you today?")],
                usage: usage(19, 10, 0, "gpt-4.1-2025-04-14"),
                stop_reason: Some("stop".to_owned()),
            }
        );
    }

    #[test]
    fn chat_tool_calls_with_reasoning_and_usage() {
        let body = json!({
            "id": "chatcmpl-abc123",
            "object": "chat.completion",
            "model": "deepseek-reasoner",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "reasoning_content": "The user wants the weather in two cities.",
                    "tool_calls": [
                        {"id": "call_abc", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}},
                        {"id": "call_def", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"location\": \"Bog"}},
                        {"id": "call_ghi", "type": "function",
                         "function": {"name": "list_cities", "arguments": ""}}
                    ]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {
                "prompt_tokens": 82,
                "completion_tokens": 17,
                "total_tokens": 99,
                "prompt_tokens_details": {"cached_tokens": 64}
            }
        });
        let completion = parse_completion(Target::OpenAiChat, &body).unwrap();
        assert_eq!(
            completion.events,
            vec![
                reasoning("The user wants the weather in two cities.", None),
                Event::tool_call("call_abc", "get_weather", json!({"location": "Paris"})),
                // Not JSON: kept as the string the model wrote.
                Event::tool_call("call_def", "get_weather", json!("{\"location\": \"Bog")),
                Event::tool_call("call_ghi", "list_cities", json!({})),
            ]
        );
        assert_eq!(completion.usage, usage(82, 17, 64, "deepseek-reasoner"));
        assert_eq!(completion.stop_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn chat_call_without_id_gets_a_deterministic_one() {
        let body = json!({
            "choices": [{"message": {"content": "Checking.", "tool_calls": [
                {"function": {"name": "ls", "arguments": {"path": "."}}}
            ]}, "finish_reason": "tool_calls"}]
        });
        let completion = parse_completion(Target::OpenAiChat, &body).unwrap();
        assert_eq!(
            completion.events,
            vec![
                Event::assistant("Checking."),
                Event::tool_call("call_0_ls", "ls", json!({"path": "."})),
            ]
        );
        assert_eq!(completion.usage, None);
    }

    #[test]
    fn chat_stream_text_and_usage() {
        let (shown, completion) = stream(
            Target::OpenAiChat,
            &[
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":" there!"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}"#,
                ),
                (None, "[DONE]"),
            ],
        );
        assert_eq!(shown, "Hello there!");
        assert_eq!(
            completion,
            Completion {
                events: vec![Event::assistant("Hello there!")],
                usage: usage(9, 3, 0, "gpt-4o-mini-2024-07-18"),
                stop_reason: Some("stop".to_owned()),
            }
        );
    }

    #[test]
    fn chat_stream_assembles_tool_calls_by_index() {
        let (shown, completion) = stream(
            Target::OpenAiChat,
            &[
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Two lookups"}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"reasoning_content":" needed."}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"loc"}}]}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ation\": \"Paris\"}"}}]}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" \"CET\"}"}}]}}]}"#,
                ),
                (
                    None,
                    r#"{"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160}}"#,
                ),
                (None, "[DONE]"),
            ],
        );
        assert_eq!(shown, "");
        assert_eq!(
            completion,
            Completion {
                events: vec![
                    reasoning("Two lookups needed.", None),
                    Event::tool_call("call_a", "get_weather", json!({"location": "Paris"})),
                    Event::tool_call("call_b", "get_time", json!({"tz": "CET"})),
                ],
                usage: usage(120, 40, 0, "qwen3"),
                stop_reason: Some("tool_calls".to_owned()),
            }
        );
    }

    #[test]
    fn chat_malformed_answers_are_bad_responses() {
        let no_choices = json!({"id": "chatcmpl-1", "choices": []});
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiChat, &no_choices)),
            "a chat completion without choices"
        );
        let not_a_list = json!({"choices": [{"message": {"content": "x", "tool_calls": "none"}}]});
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiChat, &not_a_list)),
            "`tool_calls` is not a list: \"none\""
        );
        let nameless = json!({"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]});
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiChat, &nameless)),
            "a chat tool call without a name"
        );
        let error = json!({"error": {"message": "The model `gpt-9` does not exist", "type": "invalid_request_error"}});
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiChat, &error)),
            "The model `gpt-9` does not exist"
        );
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiChat, &json!([1, 2]))),
            "expected a JSON object, got [1,2]"
        );
        let mut accumulator = StreamAccumulator::new(Target::OpenAiChat);
        let message = bad_message(accumulator.push(None, "{\"choices\": ["));
        assert!(
            message.starts_with("a stream message is not JSON"),
            "{message}"
        );
        assert_eq!(
            bad_message(StreamAccumulator::new(Target::OpenAiChat).finish()),
            "the stream ended before any answer arrived"
        );
    }

    // --- OpenAI Responses --------------------------------------------------

    fn responses_text_body() -> Value {
        json!({
            "id": "resp_67ccd2bed1ec8190b14f964abc054267",
            "object": "response",
            "created_at": 1741476542,
            "status": "completed",
            "error": null,
            "incomplete_details": null,
            "model": "gpt-4.1-2025-04-14",
            "output": [{
                "type": "message",
                "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "In a peaceful grove, ", "annotations": []},
                    {"type": "output_text", "text": "a unicorn slept.", "annotations": []}
                ]
            }],
            "usage": {
                "input_tokens": 36,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 87,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 123
            }
        })
    }

    fn responses_reasoning_item() -> Value {
        json!({
            "type": "reasoning",
            "id": "rs_6820f382ee1c8191bc096bee70894d040ac5ba57aafcbac7",
            "summary": [
                {"type": "summary_text", "text": "**Checking the weather**"},
                {"type": "summary_text", "text": "I should call get_weather."}
            ],
            "encrypted_content": "gAAAAABoIPOD_encrypted"
        })
    }

    fn responses_call_body() -> Value {
        json!({
            "id": "resp_2",
            "object": "response",
            "status": "completed",
            "error": null,
            "model": "o4-mini-2025-04-16",
            "output": [
                responses_reasoning_item(),
                {
                    "type": "function_call",
                    "id": "fc_12345xyz",
                    "call_id": "call_12345xyz",
                    "name": "get_weather",
                    "arguments": "{\"location\":\"Paris, France\"}",
                    "status": "completed"
                }
            ],
            "usage": {
                "input_tokens": 1200,
                "input_tokens_details": {"cached_tokens": 1024},
                "output_tokens": 150,
                "output_tokens_details": {"reasoning_tokens": 128},
                "total_tokens": 1350
            }
        })
    }

    #[test]
    fn responses_text_answer() {
        let completion = parse_completion(Target::OpenAiResponses, &responses_text_body()).unwrap();
        assert_eq!(
            completion,
            Completion {
                events: vec![Event::assistant("In a peaceful grove, a unicorn slept.")],
                usage: usage(36, 87, 0, "gpt-4.1-2025-04-14"),
                stop_reason: Some("completed".to_owned()),
            }
        );
    }

    #[test]
    fn responses_reasoning_is_kept_whole_before_the_call() {
        let completion = parse_completion(Target::OpenAiResponses, &responses_call_body()).unwrap();
        assert_eq!(
            completion.events,
            vec![
                reasoning(
                    "**Checking the weather**\n\nI should call get_weather.",
                    Some(responses_reasoning_item())
                ),
                Event::tool_call(
                    "call_12345xyz",
                    "get_weather",
                    json!({"location": "Paris, France"})
                ),
            ]
        );
        assert_eq!(
            completion.usage,
            usage(1200, 150, 1024, "o4-mini-2025-04-16")
        );
    }

    #[test]
    fn responses_stream_prefers_the_completed_response() {
        let completed = json!({"type": "response.completed", "sequence_number": 9, "response": responses_call_body()}).to_string();
        let item_done = json!({"type": "response.output_item.done", "output_index": 0, "item": responses_reasoning_item()}).to_string();
        let (shown, completion) = stream(
            Target::OpenAiResponses,
            &[
                (
                    Some("response.created"),
                    r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_2","object":"response","status":"in_progress","output":[],"usage":null}}"#,
                ),
                (
                    Some("response.output_item.added"),
                    r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
                ),
                (
                    Some("response.reasoning_summary_text.delta"),
                    r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Checking"}"#,
                ),
                (Some("response.output_item.done"), &item_done),
                (
                    Some("response.function_call_arguments.delta"),
                    r#"{"type":"response.function_call_arguments.delta","item_id":"fc_12345xyz","output_index":1,"delta":"{\"location\":"}"#,
                ),
                (Some("response.completed"), &completed),
            ],
        );
        assert_eq!(shown, "");
        assert_eq!(
            completion,
            parse_completion(Target::OpenAiResponses, &responses_call_body()).unwrap()
        );
    }

    #[test]
    fn responses_stream_falls_back_to_done_items() {
        // A compatible server whose final response lists no output.
        let (shown, completion) = stream(
            Target::OpenAiResponses,
            &[
                (
                    Some("response.output_text.delta"),
                    r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hi"}"#,
                ),
                (
                    Some("response.output_text.delta"),
                    r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":" there"}"#,
                ),
                (
                    Some("response.output_item.done"),
                    r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi there"}]}}"#,
                ),
                (
                    Some("response.output_item.done"),
                    r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"}}"#,
                ),
                (
                    Some("response.completed"),
                    r#"{"type":"response.completed","response":{"status":"completed","model":"gpt-oss-20b","output":[],"usage":{"input_tokens":5,"output_tokens":7}}}"#,
                ),
            ],
        );
        assert_eq!(shown, "Hi there");
        assert_eq!(
            completion,
            Completion {
                events: vec![
                    reasoning(
                        "",
                        Some(
                            json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"})
                        )
                    ),
                    Event::assistant("Hi there"),
                ],
                usage: usage(5, 7, 0, "gpt-oss-20b"),
                stop_reason: Some("completed".to_owned()),
            }
        );
    }

    #[test]
    fn responses_cut_stream_keeps_the_text_so_far() {
        let (_, completion) = stream(
            Target::OpenAiResponses,
            &[(
                None,
                r#"{"type":"response.output_text.delta","output_index":0,"delta":"Par"}"#,
            )],
        );
        assert_eq!(completion.events, vec![Event::assistant("Par")]);
        assert_eq!(completion.stop_reason, None);
        assert_eq!(completion.usage, None);
    }

    #[test]
    fn responses_errors_are_bad_responses() {
        let failed = json!({"id": "resp_3", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": "The server had an error"}});
        assert_eq!(
            bad_message(parse_completion(Target::OpenAiResponses, &failed)),
            "The server had an error"
        );
        assert_eq!(
            bad_message(parse_completion(
                Target::OpenAiResponses,
                &json!({"id": "resp_4"})
            )),
            "a response without an output list"
        );
        let mut accumulator = StreamAccumulator::new(Target::OpenAiResponses);
        assert_eq!(
            bad_message(accumulator.push(
                Some("response.failed"),
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Slow down"}}}"#
            )),
            "Slow down"
        );
        let mut accumulator = StreamAccumulator::new(Target::OpenAiResponses);
        assert_eq!(
            bad_message(accumulator.push(
                Some("error"),
                r#"{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null}"#
            )),
            "Something went wrong"
        );
    }

    // --- Anthropic Messages ------------------------------------------------

    #[test]
    fn anthropic_text_answer() {
        let body = json!({
            "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Hi! My name is Claude."}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": 2095, "output_tokens": 503,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        });
        let completion = parse_completion(Target::Anthropic, &body).unwrap();
        assert_eq!(
            completion,
            Completion {
                events: vec![Event::assistant("Hi! My name is Claude.")],
                usage: usage(2095, 503, 0, "claude-sonnet-4-5-20250929"),
                stop_reason: Some("end_turn".to_owned()),
            }
        );
    }

    fn thinking_block() -> Value {
        json!({"type": "thinking", "thinking": "Let me check the weather.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
    }

    #[test]
    fn anthropic_thinking_text_and_tool_use_with_cache_usage() {
        let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"});
        let body = json!({
            "id": "msg_01Aq9w938a90dw8q",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-1-20250805",
            "content": [
                thinking_block(),
                redacted,
                {"type": "text", "text": "I'll check "},
                {"type": "text", "text": "the weather."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                 "input": {"location": "San Francisco, CA", "unit": "celsius"}}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 50, "cache_creation_input_tokens": 200,
                      "cache_read_input_tokens": 1800, "output_tokens": 120}
        });
        let completion = parse_completion(Target::Anthropic, &body).unwrap();
        assert_eq!(
            completion.events,
            vec![
                reasoning("Let me check the weather.", Some(thinking_block())),
                reasoning("", Some(redacted)),
                Event::assistant("I'll check the weather."),
                Event::tool_call(
                    "toolu_01A09q90qw90lq917835lq9",
                    "get_weather",
                    json!({"location": "San Francisco, CA", "unit": "celsius"})
                ),
            ]
        );
        assert_eq!(
            completion.usage,
            usage(2050, 120, 1800, "claude-opus-4-1-20250805")
        );
        assert_eq!(completion.stop_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn anthropic_stream_assembles_thinking_text_and_tool_input() {
        let messages: &[(Option<&str>, &str)] = &[
            (
                Some("message_start"),
                r#"{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":2},"content":[],"stop_reason":null}}"#,
            ),
            (
                Some("content_block_start"),
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me check "}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"the weather."}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}"#,
            ),
            (
                Some("content_block_stop"),
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                Some("content_block_start"),
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            ),
            (Some("ping"), r#"{"type": "ping"}"#),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Okay, let's check "}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"the weather:"}}"#,
            ),
            (
                Some("content_block_stop"),
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                Some("content_block_start"),
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}"#,
            ),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\", \"unit\": \"fahrenheit\"}"}}"#,
            ),
            (
                Some("content_block_stop"),
                r#"{"type":"content_block_stop","index":2}"#,
            ),
            (
                Some("message_delta"),
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
            ),
            (Some("message_stop"), r#"{"type":"message_stop"}"#),
        ];
        let (shown, completion) = stream(Target::Anthropic, messages);
        assert_eq!(shown, "Okay, let's check the weather:");
        assert_eq!(
            completion,
            Completion {
                events: vec![
                    reasoning("Let me check the weather.", Some(thinking_block())),
                    Event::assistant("Okay, let's check the weather:"),
                    Event::tool_call(
                        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                        "get_weather",
                        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
                    ),
                ],
                usage: usage(772, 89, 300, "claude-sonnet-4-5-20250929"),
                stop_reason: Some("tool_use".to_owned()),
            }
        );
    }

    #[test]
    fn anthropic_stream_tool_without_input_deltas_has_empty_input() {
        let (_, completion) = stream(
            Target::Anthropic,
            &[
                (
                    None,
                    r#"{"type":"message_start","message":{"model":"claude-haiku-4-5","usage":{"input_tokens":10,"output_tokens":1}}}"#,
                ),
                (
                    None,
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"list_files","input":{}}}"#,
                ),
                (None, r#"{"type":"content_block_stop","index":0}"#),
                (
                    None,
                    r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}"#,
                ),
            ],
        );
        assert_eq!(
            completion.events,
            vec![Event::tool_call("toolu_1", "list_files", json!({}))]
        );
        assert_eq!(completion.usage, usage(10, 12, 0, "claude-haiku-4-5"));
    }

    #[test]
    fn anthropic_errors_are_bad_responses() {
        let mut accumulator = StreamAccumulator::new(Target::Anthropic);
        accumulator
            .push(Some("message_start"), r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":1}}}"#)
            .unwrap();
        assert_eq!(
            bad_message(accumulator.push(
                Some("error"),
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
            )),
            "Overloaded"
        );
        let mut accumulator = StreamAccumulator::new(Target::Anthropic);
        assert_eq!(
            bad_message(accumulator.push(
                None,
                r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#
            )),
            "a delta for content block 3, which never started"
        );
        let no_content = json!({"id": "msg_1", "type": "message", "content": "hello"});
        assert_eq!(
            bad_message(parse_completion(Target::Anthropic, &no_content)),
            "a message without a content list"
        );
        let nameless = json!({"content": [{"type": "tool_use", "id": "toolu_1", "input": {}}]});
        assert_eq!(
            bad_message(parse_completion(Target::Anthropic, &nameless)),
            "a tool_use block without a name"
        );
    }

    // --- Gemini --------------------------------------------------------------

    #[test]
    fn gemini_text_answer() {
        let body = json!({
            "candidates": [{
                "content": {"parts": [{"text": "AI learns "}, {"text": "patterns from data."}], "role": "model"},
                "finishReason": "STOP",
                "avgLogprobs": -0.2
            }],
            "usageMetadata": {
                "promptTokenCount": 8,
                "candidatesTokenCount": 12,
                "totalTokenCount": 20,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]
            },
            "modelVersion": "gemini-2.0-flash",
            "responseId": "abc123"
        });
        let completion = parse_completion(Target::Gemini, &body).unwrap();
        assert_eq!(
            completion,
            Completion {
                events: vec![Event::assistant("AI learns patterns from data.")],
                usage: usage(8, 12, 0, "gemini-2.0-flash"),
                stop_reason: Some("STOP".to_owned()),
            }
        );
    }

    #[test]
    fn gemini_thoughts_and_calls_without_ids() {
        let call = json!({"functionCall": {"name": "get_weather", "args": {"location": "Boston"}}, "thoughtSignature": "CiQB0e2Kb"});
        let body = json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": "**Weather lookup** The user wants ", "thought": true},
                    {"text": "two cities.", "thought": true},
                    {"text": "Let me look."},
                    call,
                    {"functionCall": {"name": "get_weather", "args": {"location": "Austin"}}},
                    {"functionCall": {"id": "fc-7", "name": "get_time"}}
                ]},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {
                "promptTokenCount": 4000,
                "candidatesTokenCount": 40,
                "thoughtsTokenCount": 210,
                "cachedContentTokenCount": 3000,
                "totalTokenCount": 4250
            },
            "modelVersion": "gemini-2.5-pro"
        });
        let completion = parse_completion(Target::Gemini, &body).unwrap();
        let mut signed = Event::tool_call(
            "call_0_get_weather",
            "get_weather",
            json!({"location": "Boston"}),
        );
        signed.opaque = Some(call);
        assert_eq!(
            completion.events,
            vec![
                reasoning(
                    "**Weather lookup** The user wants two cities.",
                    Some(
                        json!({"text": "**Weather lookup** The user wants two cities.", "thought": true})
                    )
                ),
                Event::assistant("Let me look."),
                signed,
                Event::tool_call(
                    "call_1_get_weather",
                    "get_weather",
                    json!({"location": "Austin"})
                ),
                Event::tool_call("fc-7", "get_time", json!({})),
            ]
        );
        assert_eq!(completion.usage, usage(4000, 250, 3000, "gemini-2.5-pro"));
    }

    #[test]
    fn gemini_stream_gathers_chunks() {
        let (shown, completion) = stream(
            Target::Gemini,
            &[
                (
                    None,
                    r#"{"candidates":[{"content":{"parts":[{"text":"Planning the answer.","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":11,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
                ),
                (
                    None,
                    r#"{"candidates":[{"content":{"parts":[{"text":"The sky "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":2,"totalTokenCount":13},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
                ),
                (
                    None,
                    r#"{"candidates":[{"content":{"parts":[{"text":"is blue."}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
                ),
                (
                    None,
                    r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"save_note","args":{"text":"sky"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":9,"thoughtsTokenCount":30,"totalTokenCount":50},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#,
                ),
            ],
        );
        assert_eq!(shown, "The sky is blue.");
        assert_eq!(
            completion,
            Completion {
                events: vec![
                    reasoning(
                        "Planning the answer.",
                        Some(json!({"text": "Planning the answer.", "thought": true}))
                    ),
                    Event::assistant("The sky is blue."),
                    Event::tool_call("call_0_save_note", "save_note", json!({"text": "sky"})),
                ],
                usage: usage(11, 39, 0, "gemini-2.5-flash"),
                stop_reason: Some("STOP".to_owned()),
            }
        );
    }

    #[test]
    fn gemini_errors_are_bad_responses() {
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}});
        assert_eq!(
            bad_message(parse_completion(Target::Gemini, &blocked)),
            "Gemini blocked the prompt (SAFETY)"
        );
        assert_eq!(
            bad_message(StreamAccumulator::new(Target::Gemini).push(None, &blocked.to_string())),
            "Gemini blocked the prompt (SAFETY)"
        );
        let error = json!({"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}});
        assert_eq!(
            bad_message(parse_completion(Target::Gemini, &error)),
            "API key not valid."
        );
        let parts_not_list = json!({"candidates": [{"content": {"parts": {"text": "x"}}}]});
        assert_eq!(
            bad_message(parse_completion(Target::Gemini, &parts_not_list)),
            "`parts` is not a list: {\"text\":\"x\"}"
        );
    }

    #[test]
    fn gemini_candidate_without_content_is_an_empty_answer() {
        let body = json!({"candidates": [{"finishReason": "MAX_TOKENS", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "thoughtsTokenCount": 100}, "modelVersion": "gemini-2.5-pro"});
        let completion = parse_completion(Target::Gemini, &body).unwrap();
        assert_eq!(completion.events, Vec::<Event>::new());
        assert_eq!(completion.usage, usage(10, 100, 0, "gemini-2.5-pro"));
        assert_eq!(completion.stop_reason.as_deref(), Some("MAX_TOKENS"));
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
