//! A tool result given only as a structured `tool_result` or as a
//! `tool_error`, with an empty `content` (the RAW_TRACE schema allows both):
//! the model, token counting and history search see that text, exactly as
//! if it had been given as the content.

mod common;

use agentmem::{Event, PrepareRequest, SearchFilter, Target};

/// Lines of a RAW_TRACE log whose tool results carry no `content`: one
/// structured result, one failure, one failure with a structured result.
const STRUCTURED: &str = r#"{"id":"rt_1","ts":1767225600.0,"turn_id":"turn_0001","seq":1,"trace_type":"user","content":"What is in the project folder, and what does config.yaml say?","source_event":"UserInputEvent"}
{"id":"rt_2","ts":1767225601.0,"turn_id":"turn_0001","seq":2,"trace_type":"tool_call","content":"","source_event":"LLMCompleteResponseReceivedEvent","tool_name":"list_dir","tool_call_id":"c1","tool_args":{"path":"."}}
{"id":"rt_3","ts":1767225602.0,"turn_id":"turn_0001","seq":3,"trace_type":"tool_result","content":"","source_event":"ToolExecutionCompletedEvent","tool_call_id":"c1","tool_result":{"files":["quarterly_ledger_2024.md","budget.xlsx"],"truncated":false},"tool_error":null}
{"id":"rt_4","ts":1767225603.0,"turn_id":"turn_0001","seq":4,"trace_type":"tool_call","content":"","source_event":"LLMCompleteResponseReceivedEvent","tool_name":"read_file","tool_call_id":"c2","tool_args":{"path":"config.yaml"}}
{"id":"rt_5","ts":1767225604.0,"turn_id":"turn_0001","seq":5,"trace_type":"tool_result","content":"","source_event":"ToolExecutionCompletedEvent","tool_call_id":"c2","tool_result":null,"tool_error":"FileNotFoundError: no such file or directory"}
{"id":"rt_6","ts":1767225605.0,"turn_id":"turn_0001","seq":6,"trace_type":"tool_call","content":"","source_event":"LLMCompleteResponseReceivedEvent","tool_name":"bash","tool_call_id":"c3","tool_args":{"cmd":"make lint"}}
{"id":"rt_7","ts":1767225606.0,"turn_id":"turn_0001","seq":7,"trace_type":"tool_result","content":"","source_event":"ToolExecutionCompletedEvent","tool_call_id":"c3","tool_result":{"exit_code":2,"stderr":"Makefile: no rule to make target lint"},"tool_error":"command failed"}
{"id":"rt_8","ts":1767225607.0,"turn_id":"turn_0001","seq":8,"trace_type":"assistant","content":"The folder holds a ledger and a budget; config.yaml is missing.","source_event":"LLMCompleteResponseReceivedEvent"}
"#;

/// The text each of those results stands for: a structured result as its
/// JSON, an error as its text, an error with a structured result as both.
const AS_TEXT: [(&str, &str); 3] = [
    (
        "rt_3",
        r#"{"files":["quarterly_ledger_2024.md","budget.xlsx"],"truncated":false}"#,
    ),
    ("rt_5", "FileNotFoundError: no such file or directory"),
    (
        "rt_7",
        "command failed\n{\"exit_code\":2,\"stderr\":\"Makefile: no rule to make target lint\"}",
    ),
];

fn structured() -> Vec<Event> {
    STRUCTURED
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The same results given as plain content.
fn as_content() -> Vec<Event> {
    structured()
        .into_iter()
        .map(|mut event| {
            if let Some((_, text)) = AS_TEXT.iter().find(|(id, _)| *id == event.id) {
                event.content = (*text).to_owned();
                event.tool_result = None;
            }
            event
        })
        .collect()
}

/// `events` in a fresh store's session, prepared for `target`.
fn prepared(events: Vec<Event>, target: Target) -> agentmem::Prepared {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    session.ingest(events).unwrap();
    session
        .prepare(&PrepareRequest::new("gpt-4o", target))
        .unwrap()
}

#[test]
fn every_renderer_sends_a_structured_result_as_the_same_text_given_as_content() {
    for target in Target::ALL {
        let from_structured = prepared(structured(), target);
        let from_content = prepared(as_content(), target);
        assert_eq!(
            from_structured.payload.to_value(),
            from_content.payload.to_value(),
            "{target:?}"
        );
        let body = serde_json::to_string(&from_structured.payload.to_value()).unwrap();
        for needle in [
            "quarterly_ledger_2024.md",
            "FileNotFoundError",
            "no rule to make target",
        ] {
            assert!(
                body.contains(needle),
                "{target:?} sends no {needle:?}: {body}"
            );
        }
    }
}

#[test]
fn a_structured_result_is_counted_as_the_same_text_given_as_content() {
    let from_structured = prepared(structured(), Target::OpenAiChat).stats;
    let from_content = prepared(as_content(), Target::OpenAiChat).stats;
    assert_eq!(from_structured.context_tokens, from_content.context_tokens);
    assert_eq!(
        from_structured.sections.tool_outputs,
        from_content.sections.tool_outputs
    );
    assert!(from_structured.sections.tool_outputs > 40);
}

#[test]
fn history_search_finds_a_structured_result_and_an_error_text() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    session.ingest(structured()).unwrap();
    session.flush_index();
    for (query, id) in [
        ("quarterly ledger", "rt_3"),
        ("FileNotFoundError", "rt_5"),
        ("no rule to make target", "rt_7"),
    ] {
        let hits = store
            .search(&agent, query, &SearchFilter::default())
            .unwrap();
        assert!(
            hits.iter().any(|hit| hit.event_id == id),
            "{query:?} finds {:?}",
            hits.iter().map(|h| &h.event_id).collect::<Vec<_>>()
        );
    }
}

/// The write-time guard reads the same text: a structured result too large
/// for the context is evicted to its file, and the model sees the preview.
#[test]
fn a_huge_structured_result_is_evicted_like_huge_content() {
    let rows: Vec<serde_json::Value> = (0..4_000)
        .map(|i| serde_json::json!({"row": i, "name": format!("customer_{i}"), "balance": i * 7}))
        .collect();
    let rows = serde_json::Value::Array(rows);
    let expected = serde_json::to_string(&rows).unwrap();
    let mut result = Event::tool_result("c1", "");
    result.tool_result = Some(rows);
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let report = session
        .ingest(vec![
            Event::user("Dump the customers table."),
            Event::tool_call(
                "c1",
                "sql",
                serde_json::json!({"query": "select * from customers"}),
            ),
            result,
        ])
        .unwrap();
    assert_eq!(report.evicted, 1);
    let evicted = agentmem::files::evicted::evicted_path(
        &store.session_paths(&agent, session.id()).evicted(),
        "c1",
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(evicted).unwrap(), expected);
    let prepared = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    assert!(prepared.stats.sections.tool_outputs < 2_000);
    let body = serde_json::to_string(&prepared.payload.to_value()).unwrap();
    assert!(body.contains("tool output evicted"), "{body}");
}
