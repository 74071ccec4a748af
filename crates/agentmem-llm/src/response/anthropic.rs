//! Anthropic Messages: a whole answer's `content` blocks, and the streamed
//! `message_*` / `content_block_*` events.

use std::collections::BTreeMap;

use agentmem::Usage;
use serde_json::{json, Map, Value};

use super::{
    arguments_from_str, bad, count, empty_object, no_answer, non_empty, object_of, required_str,
    str_of, string, Completion, Events,
};
use crate::error::LlmError;

/// Anthropic Messages: the `content` blocks in order.
pub(super) fn parse_anthropic(body: &Value) -> Result<Completion, LlmError> {
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
        estimated_view_tokens: None,
    }
}

/// Anthropic events: `message_start` (model, prompt usage), content blocks
/// started, grown by deltas and stopped by index, `message_delta` (stop
/// reason, output usage).
#[derive(Debug, Default)]
pub(super) struct AnthropicStream {
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
    pub(super) fn push(&mut self, kind: &str, chunk: &Value) -> Result<Option<String>, LlmError> {
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

    pub(super) fn finish(mut self) -> Result<Completion, LlmError> {
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

#[cfg(test)]
mod tests {
    use agentmem::{Event, Target};
    use serde_json::{json, Value};

    use crate::response::tests::{bad_message, reasoning, stream, usage};
    use crate::response::{parse_completion, Completion, StreamAccumulator};

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
}
