//! Exports of a session's history.

use serde_json::{json, Value};

use crate::base::event::{Event, TraceType};

/// The history as OpenAI Chat Completions messages.
///
/// Tool calls join the assistant message before them (or a new one with null
/// content), results become `role: tool` messages. Summaries and turn-aborted
/// markers are user-visible facts of the history, so they become user
/// messages; reasoning has no place in this format and is left out, and so
/// are working-memory updates (the events export keeps them).
///
/// ```
/// use agentmem::Event;
/// use agentmem::export::to_openai_messages;
/// let messages = to_openai_messages(&[
///     Event::user("list files"),
///     Event::tool_call("c1", "ls", serde_json::json!({})),
///     Event::tool_result("c1", "a.rs"),
/// ]);
/// assert_eq!(messages[1]["tool_calls"][0]["id"], "c1");
/// assert_eq!(messages[2]["role"], "tool");
/// ```
pub fn to_openai_messages(events: &[Event]) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    for event in events {
        match event.trace_type {
            TraceType::System => messages.push(json!({"role": "system", "content": event.content})),
            TraceType::User => messages.push(json!({"role": "user", "content": event.content})),
            TraceType::Assistant => {
                messages.push(json!({"role": "assistant", "content": event.content}))
            }
            TraceType::ToolCall => attach_tool_call(&mut messages, event),
            TraceType::ToolResult => messages.push(json!({
                "role": "tool",
                "tool_call_id": event.tool_call_id,
                "content": event.content,
            })),
            TraceType::Summary => messages.push(json!({
                "role": "user",
                "content": format!("[summary of earlier conversation]\n{}", event.content),
            })),
            TraceType::TurnAborted => messages.push(json!({
                "role": "user",
                "content": format!("<turn_aborted>{}</turn_aborted>", event.content),
            })),
            TraceType::Reasoning | TraceType::WorkingMemory => {}
        }
    }
    messages
}

fn attach_tool_call(messages: &mut Vec<Value>, event: &Event) {
    let arguments = match &event.tool_args {
        Some(Value::String(raw)) => raw.clone(),
        Some(args) => args.to_string(),
        None => "{}".to_owned(),
    };
    let call = json!({
        "id": event.tool_call_id,
        "type": "function",
        "function": {"name": event.tool_name, "arguments": arguments},
    });
    let joins_last = messages.last().is_some_and(|m| m["role"] == "assistant");
    if !joins_last {
        messages.push(json!({"role": "assistant", "content": null}));
    }
    let last = messages
        .last_mut()
        .expect("an assistant message was just ensured");
    match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
        Some(calls) => calls.push(call),
        None => last["tool_calls"] = json!([call]),
    }
}
