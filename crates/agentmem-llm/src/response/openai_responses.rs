//! OpenAI Responses: a whole answer's `output` items, and the streamed
//! `response.*` events.

use agentmem::Usage;
use serde_json::{json, Value};

use super::{
    arguments, array_of, bad, count, empty_object, error_message, no_answer, non_empty, object_of,
    required_str, str_of, string, Completion, Events,
};
use crate::error::LlmError;

/// Responses: the `output` items in order.
pub(super) fn parse_responses(body: &Value) -> Result<Completion, LlmError> {
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
        estimated_view_tokens: None,
    }
}

/// Responses events. The items come whole in `response.output_item.done`
/// and again in `response.completed`, whose `response` is the body a
/// non-streaming call returns: when it arrives it is the answer. The items
/// and the text deltas are the fallback for servers whose final response
/// lists no output, and for streams cut short.
#[derive(Debug, Default)]
pub(super) struct ResponsesStream {
    started: bool,
    /// Finished items with their `output_index`.
    items: Vec<(u64, Value)>,
    /// Text of the message item in progress (no `output_item.done` yet).
    pending_text: String,
    /// The `response` of `response.completed` or `response.incomplete`.
    response: Option<Value>,
}

impl ResponsesStream {
    pub(super) fn push(&mut self, kind: &str, chunk: &Value) -> Result<Option<String>, LlmError> {
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

    pub(super) fn finish(self) -> Result<Completion, LlmError> {
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

#[cfg(test)]
mod tests {
    use agentmem::{Event, Target};
    use serde_json::{json, Value};

    use crate::response::tests::{bad_message, reasoning, stream, usage};
    use crate::response::{parse_completion, Completion, StreamAccumulator};

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
}
