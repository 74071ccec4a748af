use super::super::parse;
use super::*;
use agentmem::base::tool_interaction::tool_interactions;
use agentmem::ToolStatus;

fn kinds(imported: &Imported) -> Vec<TraceType> {
    imported.events.iter().map(|e| e.trace_type).collect()
}

/// A short session: prompt, task, a signed-thinking action with a failing
/// command, a parallel pair of calls (one refused by the user, one whose
/// arguments the SDK could not use), a condensation and the answer.
const SESSION: &str = r#"[
      {"id":"a1f0","timestamp":"2025-11-02T08:00:00.000000","source":"agent","kind":"SystemPromptEvent",
       "system_prompt":{"type":"text","text":"You are a careful coding agent."},"tools":[{"name":"terminal"}]},
      {"id":"a1f1","timestamp":"2025-11-02T08:00:01.000000","source":"user","kind":"MessageEvent",
       "llm_message":{"role":"user","content":[{"type":"text","text":"Why does test_parse fail?"},{"type":"image","image_urls":["https://example.test/trace.png"]}],"thinking_blocks":[]},
       "activated_skills":[],"extended_content":[{"type":"text","text":"<repo>parser</repo>"}]},
      {"id":"a1f2","timestamp":"2025-11-02T08:00:02.000000","source":"environment","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"running"},
      {"id":"a1f3","timestamp":"2025-11-02T08:00:05.000000","source":"agent","kind":"ActionEvent",
       "thought":[{"type":"text","text":"Run the failing test first."}],"reasoning_content":"The user wants the cause.",
       "thinking_blocks":[{"type":"thinking","thinking":"The user wants the cause.","signature":"sig-AbC="}],
       "action":{"kind":"TerminalAction","command":"pytest -q tests/test_parse.py","is_input":false,"timeout":null,"reset":false},
       "tool_name":"terminal","tool_call_id":"toolu_01","tool_call":{"id":"toolu_01","name":"terminal","arguments":"{\"command\": \"pytest -q tests/test_parse.py\"}"},
       "llm_response_id":"resp_1","security_risk":"LOW"},
      {"id":"a1f4","timestamp":"2025-11-02T08:00:09.000000","source":"environment","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"toolu_01",
       "observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"1 failed"}],"is_error":false,"command":"pytest -q tests/test_parse.py","exit_code":1,"metadata":{"exit_code":1}},
       "action_id":"a1f3"},
      {"id":"a1f5","timestamp":"2025-11-02T08:00:12.000000","source":"agent","kind":"ActionEvent","thought":[],"reasoning_content":"Two reads at once.",
       "action":{"kind":"FileEditorAction","command":"view","path":"/work/parser.py"},
       "tool_name":"file_editor","tool_call_id":"toolu_02","tool_call":{"id":"toolu_02","name":"file_editor","arguments":"{\"command\": \"view\", \"path\": \"/work/parser.py\"}"},
       "llm_response_id":"resp_2"},
      {"id":"a1f6","timestamp":"2025-11-02T08:00:12.000000","source":"agent","kind":"ActionEvent","thought":[],
       "action":{"kind":"TerminalAction","command":"rm -rf build"},
       "tool_name":"terminal","tool_call_id":"toolu_03","tool_call":{"id":"toolu_03","name":"terminal","arguments":"{\"command\": \"rm -rf build\""},
       "llm_response_id":"resp_2"},
      {"id":"a1f7","timestamp":"2025-11-02T08:00:13.000000","source":"user","kind":"UserRejectObservation","tool_name":"terminal","tool_call_id":"toolu_03",
       "rejection_reason":"do not delete the build","action_id":"a1f6"},
      {"id":"a1f8","timestamp":"2025-11-02T08:00:14.000000","source":"agent","kind":"AgentErrorEvent","tool_name":"file_editor","tool_call_id":"toolu_02",
       "error":"Path /work/parser.py does not exist."},
      {"id":"a1f9","timestamp":"2025-11-02T08:00:20.000000","source":"environment","kind":"Condensation","forgotten_event_ids":["a1f3","a1f4"],"summary":"The test fails on trailing commas.","summary_offset":1},
      {"id":"a1fa","timestamp":"2025-11-02T08:00:21.000000","source":"user","kind":"PauseEvent"},
      {"id":"a1fb","timestamp":"2025-11-02T08:00:30.000000","source":"agent","kind":"MessageEvent",
       "llm_message":{"role":"assistant","content":[{"type":"text","text":"The tokenizer rejects trailing commas."}]},"llm_response_id":"resp_3"}
    ]"#;

#[test]
fn sdk_events_map_to_a_conversation() {
    let imported = parse(SESSION).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::System,
            TraceType::User,
            TraceType::Reasoning,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::Reasoning,
            TraceType::ToolCall,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::ToolResult,
            TraceType::Summary,
            TraceType::Assistant,
        ]
    );
    assert_eq!(imported.records, 12);
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [3, 11]);
    assert!(imported.skipped[1].reason.contains("PauseEvent"));

    let user = &imported.events[1];
    assert_eq!(
        user.content,
        "Why does test_parse fail?\n<repo>parser</repo>"
    );
    assert_eq!(user.media.as_ref().unwrap().images.len(), 1);
    assert!((user.ts - 1762070401.0).abs() < 1e-3);

    // Signed thinking is kept verbatim; reasoning_content repeats it and is not kept again.
    let thinking = &imported.events[2];
    assert_eq!(thinking.id, "oh-a1f3-thinking-0");
    assert_eq!(thinking.opaque.as_ref().unwrap()["signature"], "sig-AbC=");
    assert_eq!(imported.events[3].id, "oh-a1f3-thought");
    assert_eq!(imported.events[6].content, "Two reads at once.");
    assert!(imported.events[6].opaque.is_none());

    let call = &imported.events[4];
    assert_eq!(call.id, "oh-a1f3");
    assert_eq!(
        call.tool_args,
        Some(serde_json::json!({"command": "pytest -q tests/test_parse.py"}))
    );
    // Arguments that are not JSON: the action, without its kind.
    assert_eq!(
        imported.events[8].tool_args,
        Some(serde_json::json!({"command": "rm -rf build"}))
    );
    assert_eq!(imported.events[7].correlation_id.as_deref(), Some("resp_2"));
    assert_eq!(imported.events[8].correlation_id.as_deref(), Some("resp_2"));

    let view = tool_interactions(&imported.events);
    let status: Vec<(&str, ToolStatus)> = view
        .iter()
        .map(|i| (i.tool_call_id.as_str(), i.status))
        .collect();
    assert_eq!(
        status,
        [
            ("toolu_01", ToolStatus::Error),
            ("toolu_02", ToolStatus::Error),
            ("toolu_03", ToolStatus::Error),
        ]
    );
    assert_eq!(view[0].tool_name, "terminal");
    assert_eq!(
        view[2].result.as_deref(),
        Some("Rejected by the user: do not delete the build")
    );
    assert_eq!(
        imported.events[12].content,
        "The tokenizer rejects trailing commas."
    );
}

#[test]
fn jsonl_and_single_event_files_import() {
    let jsonl = concat!(
        r#"{"id":"b0","timestamp":"2025-11-02T09:00:00","source":"user","kind":"MessageEvent","llm_message":{"role":"user","content":[{"type":"text","text":"list files"}]}}"#,
        "\n",
        r#"{"id":"b1","timestamp":"2025-11-02T09:00:01","source":"agent","kind":"ActionEvent","thought":[],"action":{"kind":"TerminalAction","command":"ls"},"tool_name":"terminal","tool_call_id":"c1"}"#,
        "\n{truncated\n\n",
        r#"{"id":"b3","timestamp":"2025-11-02T09:00:02","source":"environment","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"c1","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"a.py"}],"is_error":false,"exit_code":0}}"#,
        "\n"
    );
    let imported = parse(jsonl).unwrap();
    assert_eq!(
        kinds(&imported),
        [TraceType::User, TraceType::ToolCall, TraceType::ToolResult]
    );
    assert_eq!(
        imported.events[1].tool_args,
        Some(serde_json::json!({"command": "ls"}))
    );
    assert_eq!(imported.records, 4);
    assert_eq!(imported.skipped[0].line, 3);
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].status, ToolStatus::Success);

    let torn_first = format!("{{\"id\":\"b\n{jsonl}");
    let imported = parse(&torn_first).unwrap();
    assert_eq!(imported.events.len(), 3, "a torn first line hides nothing");
    assert_eq!(imported.skipped[0].line, 1);

    let single = r#"{"id":"s0","source":"agent","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"Be brief."},"tools":[]}"#;
    let imported = parse(single).unwrap();
    assert_eq!(kinds(&imported), [TraceType::System]);
    assert_eq!(imported.events[0].id, "oh-s0");
}

#[test]
fn events_answering_no_call_and_unknown_kinds_are_skipped_with_reasons() {
    let text = r#"{"events":[
          {"id":"e0","source":"agent","kind":"AgentErrorEvent","tool_name":"terminal","error":"boom"},
          {"id":"e1","source":"environment","kind":"ConversationErrorEvent","code":"LLMError","detail":"rate limited"},
          {"id":"e2","source":"agent","kind":"Condensation","forgotten_event_ids":[]},
          {"id":"e3","source":"agent","kind":"MessageEvent","llm_message":{"role":"assistant","content":[]}},
          {"id":"e3b","source":"agent","kind":"ActionEvent","thought":[],"action":null},
          {"id":"e4","source":"agent","kind":"ActionEvent","action":{"kind":"ThinkAction"},"thinking_blocks":[{"type":"redacted_thinking","data":"enc=="}],"tool_name":"think","tool_call_id":"t9","tool_call":{"id":"t9","name":"think","arguments":"{\"thought\": \"check\"}"}}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [TraceType::Reasoning, TraceType::ToolCall]
    );
    assert_eq!(imported.events[0].opaque.as_ref().unwrap()["data"], "enc==");
    let reasons: Vec<&str> = imported.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert!(reasons[0].contains("answers no tool call"), "{reasons:?}");
    assert!(reasons[1].contains("rate limited"), "{reasons:?}");
    assert!(reasons[2].contains("without a summary"), "{reasons:?}");
    assert!(reasons[3].contains("empty message"), "{reasons:?}");
    assert!(reasons[4].contains("naming no tool"), "{reasons:?}");
}

#[test]
fn text_that_is_neither_json_nor_sdk_jsonl_says_what_was_expected() {
    let err = parse("{\"id\":1}\n{\"id\":2}\n").unwrap_err();
    assert!(
        err.starts_with("not JSON") && err.contains("JSONL"),
        "{err}"
    );
}
