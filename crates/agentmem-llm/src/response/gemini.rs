//! Gemini generateContent: a whole answer's `candidates[0].content.parts`,
//! and the streamed chunks, each a partial answer of the same shape.

use agentmem::Usage;
use serde_json::{json, Value};

use super::{
    array_of, bad, count, empty_object, no_answer, non_empty, object_of, required_str, str_of,
    str_of_map, string, Completion, Events,
};
use crate::error::LlmError;

/// Gemini generateContent: `candidates[0].content.parts` in order. A
/// candidate without content (stopped by a safety filter, or out of tokens
/// while thinking) is an answer with no events; no candidate at all is an
/// error (a blocked prompt says why in `promptFeedback`).
pub(super) fn parse_gemini(body: &Value) -> Result<Completion, LlmError> {
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
        estimated_view_tokens: None,
    }
}

/// Gemini chunks: each a GenerateContentResponse holding the next parts.
/// The parts are gathered in order (the parser merges text runs); the
/// finish reason, usage and model are the last ones sent.
#[derive(Debug, Default)]
pub(super) struct GeminiStream {
    started: bool,
    parts: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    model: Option<String>,
}

impl GeminiStream {
    pub(super) fn push(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
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

    pub(super) fn finish(self) -> Result<Completion, LlmError> {
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
    use agentmem::{Event, Target};
    use serde_json::json;

    use crate::response::tests::{bad_message, reasoning, stream, usage};
    use crate::response::{parse_completion, Completion, StreamAccumulator};

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
}
