//! A transcript's values nest at most `json::MAX_NESTING` levels once
//! imported: a deeper one is kept as its JSON text, which ingest accepts,
//! rather than refused with the whole file.

use agentmem::{AgentId, Durability, SessionId, Store, TraceType};
use agentmem_import::Format;
use serde_json::{json, Value};

/// `1` wrapped in `levels` arrays.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

#[test]
fn imported_values_too_deep_to_keep_are_kept_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let arguments = json!({"spec": nested(126)}).to_string();
    let messages = json!([
        {"role": "user", "content": "deploy"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "deploy", "arguments": arguments}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "deployed"}
    ]);
    let path = dir.path().join("messages.json");
    let text = messages.to_string();
    let imported = agentmem_import::parse(Format::OpenAiMessages, &path, &text).unwrap();
    let call = imported
        .events
        .iter()
        .find(|e| e.trace_type == TraceType::ToolCall)
        .unwrap();
    assert_eq!(call.tool_args, Some(Value::String(arguments)));

    let mut line = json!({"trace_type": "user", "content": "hello"});
    line["vendor"] = nested(100);
    let events_path = dir.path().join("events.jsonl");
    let imported_events =
        agentmem_import::parse(Format::Events, &events_path, &format!("{line}\n")).unwrap();
    assert_eq!(
        imported_events.events[0].extra.get("vendor").unwrap(),
        Value::String(nested(100).to_string())
    );

    let store = Store::open(dir.path().join("data"), Durability::Batch).unwrap();
    let id = SessionId::new("deep").unwrap();
    let mut session = store.open_or_create(&AgentId::default(), &id).unwrap();
    session.ingest(imported.events).unwrap();
    session.ingest(imported_events.events).unwrap();
    drop(session);
    let reopened = store.open_session(&AgentId::default(), &id).unwrap();
    assert!(
        reopened.recoveries().is_empty(),
        "{:?}",
        reopened.recoveries()
    );
    assert_eq!(reopened.events().len(), 4);
}
