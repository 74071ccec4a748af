//! OpenAI Chat Completions (and every compatible server): a whole answer's
//! `choices[0].message`, and the streamed `choices[0].delta` chunks.

use std::collections::BTreeMap;

use agentmem::Usage;
use serde_json::{json, Value};

use super::{
    arguments, array_of, bad, count, no_answer, non_empty, object_of, required_str, str_of, string,
    Completion, Events,
};
use crate::error::LlmError;

/// Chat Completions: `choices[0].message`.
pub(super) fn parse_chat(body: &Value) -> Result<Completion, LlmError> {
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
        estimated_view_tokens: None,
    }
}

/// Chat Completions chunks: `choices[0].delta` pieces, tool calls by index,
/// usage in a last chunk with no choices (`stream_options.include_usage`).
#[derive(Debug, Default)]
pub(super) struct ChatStream {
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
    pub(super) fn push(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
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

    pub(super) fn finish(self) -> Result<Completion, LlmError> {
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

#[cfg(test)]
mod tests {
    use agentmem::{Event, Target};
    use serde_json::json;

    use crate::response::tests::{bad_message, reasoning, stream, usage};
    use crate::response::{parse_completion, Completion, StreamAccumulator};

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
}
