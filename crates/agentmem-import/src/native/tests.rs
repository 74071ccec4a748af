use agentmem::base::tool_interaction::tool_interactions;
use agentmem::{ToolStatus, TraceType};
use serde_json::{json, Value};

use super::*;

fn kinds(events: &[Event]) -> Vec<TraceType> {
    events.iter().map(|e| e.trace_type).collect()
}

#[test]
fn chat_messages_keep_calls_paired_and_images_in_media() {
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
        ]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "zoom", "arguments": "{\"x\": 2}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"}
    ]);
    let events = events_from_messages(Shape::OpenAiChat, &messages).unwrap();
    assert_eq!(
        kinds(&events),
        [
            TraceType::System,
            TraceType::User,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert_eq!(
        events[1].media.as_ref().unwrap().images,
        ["https://example.com/cat.png"]
    );
    let pairs = tool_interactions(&events);
    assert_eq!(pairs[0].arguments["x"], 2);
    assert_eq!(pairs[0].status, ToolStatus::Success);
    assert!(events
        .iter()
        .all(|e| e.id.is_empty() && e.source_event == "native:openai-chat"));
}

#[test]
fn responses_items_keep_their_ids_and_reasoning_verbatim() {
    let items = json!([
        {"role": "user", "content": "weather in Paris?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look it up"}],
         "encrypted_content": "gAAAA"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "weather",
         "arguments": "{\"city\": \"Paris\"}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "18°C"},
        {"type": "message", "id": "msg_1", "role": "assistant",
         "content": [{"type": "output_text", "text": "It is 18°C."}]}
    ]);
    let events = events_from_messages(Shape::OpenAiResponses, &items).unwrap();
    assert_eq!(
        kinds(&events),
        [
            TraceType::User,
            TraceType::Reasoning,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::Assistant
        ]
    );
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["", "rs_1", "fc_1", "", "msg_1"]);
    assert_eq!(
        events[1].opaque.as_ref().unwrap()["encrypted_content"],
        "gAAAA"
    );
    assert_eq!(
        tool_interactions(&events)[0].result.as_deref(),
        Some("18°C")
    );
}

#[test]
fn responses_input_may_be_a_request_or_a_string() {
    let request = json!({"model": "gpt-4.1", "input": "hello"});
    let events = events_from_messages(Shape::OpenAiResponses, &request).unwrap();
    assert_eq!(events[0].content, "hello");
    assert_eq!(events[0].trace_type, TraceType::User);
}

#[test]
fn provider_run_tools_become_pairs() {
    let items = json!([
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "rust 2026"}},
        {"type": "mcp_call", "id": "mcp_1", "name": "get_issue", "server_label": "gh",
         "arguments": "{\"n\": 3}", "output": "issue 3 is open"},
        {"type": "file_search_call", "id": "fs_1", "queries": ["budget"],
         "results": [{"filename": "plan.md", "text": "budget is 16k"}]}
    ]);
    let events = events_from_messages(Shape::OpenAiResponses, &items).unwrap();
    let pairs = tool_interactions(&events);
    let names: Vec<&str> = pairs.iter().map(|p| p.tool_name.as_str()).collect();
    assert_eq!(names, ["web_search", "get_issue", "file_search"]);
    assert!(pairs.iter().all(|p| p.status == ToolStatus::Success));
    assert_eq!(pairs[1].result.as_deref(), Some("issue 3 is open"));
    assert_eq!(pairs[2].result.as_deref(), Some("plan.md: budget is 16k"));
}

#[test]
fn anthropic_requests_bring_their_system_and_blocks() {
    let request = json!({
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "read a.txt"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "use read", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true}
            ]}
        ]
    });
    let events = events_from_messages(Shape::AnthropicMessages, &request).unwrap();
    assert_eq!(
        kinds(&events),
        [
            TraceType::System,
            TraceType::User,
            TraceType::Reasoning,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert_eq!(events[2].opaque.as_ref().unwrap()["signature"], "sig");
    assert_eq!(tool_interactions(&events)[0].status, ToolStatus::Error);
}

#[test]
fn one_unreadable_message_refuses_the_whole_call_naming_it() {
    let items = json!([
        {"role": "user", "content": "hi"},
        {"type": "item_reference", "id": "msg_old"}
    ]);
    let error = events_from_messages(Shape::OpenAiResponses, &items).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("message 1") && text.contains("send the item itself"),
        "{text}"
    );
    let error = events_from_messages(
        Shape::AnthropicMessages,
        &json!([{"role": "system", "content": "x"}]),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("\"user\" or \"assistant\""),
        "{error}"
    );
    let error = events_from_messages(Shape::OpenAiChat, &json!(42)).unwrap_err();
    assert!(error.to_string().contains("not a number"), "{error}");
}

#[test]
fn chat_responses_carry_usage_and_ids_that_make_recording_idempotent() {
    let response = json!({
        "id": "chatcmpl-7", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Checking.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
        }}],
        "usage": {"prompt_tokens": 812, "completion_tokens": 14, "total_tokens": 826,
                  "prompt_tokens_details": {"cached_tokens": 512}}
    });
    let first = events_from_response(Shape::OpenAiChat, &response).unwrap();
    let again = events_from_response(Shape::OpenAiChat, &response).unwrap();
    assert_eq!(kinds(&first), [TraceType::Assistant, TraceType::ToolCall]);
    let ids: Vec<&str> = first.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["chatcmpl-7-0", "chatcmpl-7-1"]);
    assert_eq!(ids, again.iter().map(|e| e.id.as_str()).collect::<Vec<_>>());
    assert!(first[0].usage.is_none());
    let usage = first[1].usage.as_ref().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (812, 14, 512)
    );
    assert_eq!(usage.model.as_deref(), Some("gpt-4o-2024-08-06"));
}

#[test]
fn responses_and_anthropic_responses_carry_usage() {
    let response = json!({
        "id": "resp_1", "object": "response", "model": "gpt-4.1",
        "output": [
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "message", "id": "msg_2", "role": "assistant",
             "content": [{"type": "output_text", "text": "done"}]}
        ],
        "usage": {"input_tokens": 300, "output_tokens": 20,
                  "input_tokens_details": {"cached_tokens": 256}}
    });
    let events = events_from_response(Shape::OpenAiResponses, &response).unwrap();
    assert_eq!(events[1].id, "msg_2");
    assert_eq!(events[1].usage.as_ref().unwrap().cached_tokens, 256);
    assert_eq!(events[1].correlation_id.as_deref(), Some("resp_1"));

    let message = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hello"}],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 3}
    });
    let events = events_from_response(Shape::AnthropicMessages, &message).unwrap();
    let usage = events[0].usage.as_ref().unwrap();
    assert_eq!((usage.prompt_tokens, usage.cached_tokens), (100, 90));
    assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-5"));
}

#[test]
fn a_response_of_another_shape_is_refused_saying_which() {
    let chat = json!({"choices": [{"message": {"role": "assistant", "content": "x"}}]});
    let error = events_from_response(Shape::OpenAiResponses, &chat).unwrap_err();
    assert!(
        error.to_string().contains("Responses API response"),
        "{error}"
    );
    let error = events_from_response(Shape::OpenAiChat, &json!({"output": []})).unwrap_err();
    assert!(error.to_string().contains("chat completion"), "{error}");
}

/// A real Codex rollout's Responses items, handed over live, pair every tool
/// call with its result as the rollout importer does (a web search without an
/// id is named by its place: its line there, its index here).
#[test]
fn a_real_rollouts_items_pair_as_the_rollout_importer_pairs_them() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/trajectories/codex");
    let path = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rollout-")
        })
        .expect("a rollout in the eval data");
    let text = std::fs::read_to_string(&path).unwrap();
    let items: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["type"] == "response_item")
        .map(|record| record["payload"].clone())
        .filter(|item| item["type"] != "compaction")
        .collect();
    assert!(items.len() > 20, "{} items", items.len());
    let live = events_from_messages(Shape::OpenAiResponses, &Value::Array(items)).unwrap();
    let (_, imported) = crate::read(&path, Some(crate::Format::Codex)).unwrap();
    let calls = |events: &[Event]| {
        tool_interactions(events)
            .into_iter()
            .map(|p| {
                let id = match p.tool_call_id.starts_with("web_search_") {
                    true => "web_search".to_owned(),
                    false => p.tool_call_id,
                };
                (id, p.tool_name, p.result.is_some() || p.error.is_some())
            })
            .collect::<Vec<_>>()
    };
    let live_calls = calls(&live);
    assert!(!live_calls.is_empty());
    assert!(live_calls.iter().all(|(_, _, answered)| *answered));
    assert_eq!(live_calls, calls(&imported.events));
}
