use super::*;
use agentmem::base::tool_interaction::tool_interactions;
use agentmem::ToolStatus;

const SESSION: &str = r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"run the tests"},"uuid":"u1","timestamp":"2025-06-02T18:46:59.937Z","sessionId":"s-1"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"run cargo test","signature":"sig=="},{"type":"text","text":"Running them."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":50}},"uuid":"a1","timestamp":"2025-06-02T18:47:01.000Z","sessionId":"s-1"}
{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 failed","is_error":true}]},"uuid":"u2","timestamp":"2025-06-02T18:47:05.000Z","sessionId":"s-1"}
not json at all
{"type":"summary","summary":"Fix the failing test","leafUuid":"u2"}"#;

#[test]
fn blocks_become_events_with_usage_and_pairing() {
    let imported = parse(SESSION).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::User,
            TraceType::Reasoning,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::System
        ]
    );
    assert_eq!(imported.source_session_id.as_deref(), Some("s-1"));
    assert_eq!(imported.records, 6);
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [1, 5]);
    let usage = imported.events[3].usage.as_ref().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (1110, 50, 1000)
    );
    assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        imported.events[1].opaque.as_ref().unwrap()["signature"],
        "sig=="
    );
    assert_eq!(imported.events[3].id, "cc-a1-2");
    let view = tool_interactions(&imported.events);
    assert_eq!(view.len(), 1);
    assert_eq!(view[0].status, ToolStatus::Error);
    assert_eq!(view[0].arguments["command"], "cargo test");
}

#[test]
fn sidechain_meta_and_interrupts_are_marked() {
    let text = r#"{"type":"user","isSidechain":true,"uuid":"x1","message":{"role":"user","content":"explore"}}
{"type":"user","isMeta":true,"uuid":"x2","message":{"role":"user","content":"<command-name>/clear</command-name>"}}
{"type":"user","uuid":"x3","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}
{"type":"assistant","uuid":"x4","message":{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque"},{"type":"server_tool_use","id":"s"}]}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.events[0].tags, ["sidechain"]);
    assert_eq!(imported.events[1].tags, ["meta"]);
    assert_eq!(imported.events[2].trace_type, TraceType::TurnAborted);
    assert_eq!(
        imported.events[3].opaque.as_ref().unwrap()["data"],
        "opaque"
    );
    assert_eq!(imported.skipped.len(), 1);
    assert!(imported.skipped[0].reason.contains("server_tool_use"));
}

#[test]
fn empty_messages_and_system_lines_are_accounted_for() {
    let text = r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"y1"}
{"type":"system","subtype":"stop_hook_summary","uuid":"y2"}
{"type":"assistant","uuid":"y3","message":{"role":"assistant","content":[{"type":"text","text":"  "}]}}
{"type":"user","uuid":"y4","isCompactSummary":true,"message":{"role":"user","content":"Summary: fixed it"}}"#;
    let imported = parse(text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(kinds, [TraceType::System, TraceType::Summary]);
    assert!(!imported.events[0].is_in_model_view());
    assert!(imported.events[1].is_in_model_view());
    assert!(imported.events[1].replaces_history());
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [2, 3]);
}

#[test]
fn display_only_system_lines_stay_out_of_the_model_view() {
    let text = r#"{"type":"system","subtype":"away_summary","content":"Waiting on the log file path.","uuid":"d1","timestamp":"2026-05-06T08:30:00.000Z"}
{"type":"system","subtype":"local_command","content":"<local-command-stdout> Context Usage\n  88.7k/200k tokens (44%)\n</local-command-stdout>","level":"info","uuid":"d2"}
{"type":"system","subtype":"turn_duration","durationMs":42742,"uuid":"d3"}
{"type":"system","content":"Running PostToolUse hooks","level":"info","uuid":"d4"}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.events.len(), 3);
    for event in &imported.events {
        assert_eq!(event.trace_type, TraceType::System);
        assert!(event.tags.iter().any(|t| t == DISPLAY_ONLY_TAG));
        assert!(!event.is_in_model_view(), "{event:?}");
    }
    assert!(imported.events[1].tags.iter().any(|t| t == "local_command"));
    assert_eq!(imported.skipped[0].line, 3);
    assert!(imported.skipped[0].reason.contains("turn_duration"));
}

#[test]
fn api_errors_are_not_replayed_as_model_output() {
    let text = r#"{"type":"user","uuid":"e1","message":{"role":"user","content":"fix the lexer"}}
{"type":"assistant","isApiErrorMessage":true,"uuid":"e2","message":{"id":"msg_err","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"API Error: Connection closed mid-response"}],"usage":{"input_tokens":0,"output_tokens":0}}}
{"type":"assistant","uuid":"e3","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Fixed."}]}}"#;
    let imported = parse(text).unwrap();
    let error = &imported.events[1];
    assert_eq!(error.trace_type, TraceType::System);
    assert_eq!(error.content, "API Error: Connection closed mid-response");
    assert!(error.tags.iter().any(|t| t == API_ERROR_TAG));
    assert!(!error.is_in_model_view());
    assert!(error.usage.is_none());
    let in_view: Vec<&str> = imported
        .events
        .iter()
        .filter(|e| e.is_in_model_view())
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(in_view, ["fix the lexer", "Fixed."]);
}

#[test]
fn a_queued_command_is_a_user_message() {
    let text = r#"{"type":"attachment","uuid":"q1","timestamp":"2026-05-06T08:14:57.000Z","attachment":{"type":"queued_command","prompt":"also push it"}}
{"type":"attachment","uuid":"q2","attachment":{"type":"nested_memory","path":"CLAUDE.md","content":{"content":"Always run cargo fmt."}}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.events.len(), 1);
    assert_eq!(imported.events[0].trace_type, TraceType::User);
    assert_eq!(imported.events[0].content, "also push it");
    assert_eq!(imported.events[0].id, "cc-q1-0");
    assert!(imported.events[0].ts > 1.7e9);
    assert_eq!(imported.skipped[0].line, 2);
    assert!(imported.skipped[0].reason.contains("nested_memory"));
}

#[test]
fn text_beside_a_tool_result_stays_in_the_turn() {
    let text = r#"{"type":"user","uuid":"t1","message":{"role":"user","content":"read the parser"}}
{"type":"assistant","uuid":"t2","message":{"id":"msg_t","role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"ToolSearch","input":{"query":"select:Read"}}]}}
{"type":"user","uuid":"t3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"Read"}]},{"type":"text","text":"Tool loaded."}]}}
{"type":"assistant","uuid":"t4","message":{"id":"msg_u","role":"assistant","content":[{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"sleep 100"}}]}}
{"type":"user","uuid":"t5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"The user doesn't want to proceed with this tool use.","is_error":true},{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
    let imported = parse(text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::User,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::TurnAborted
        ]
    );
    assert_eq!(
        imported.events[2].content,
        "tool reference: Read\n\nTool loaded."
    );
    let mut tracker = agentmem::base::turn::TurnTracker::default();
    let turns: std::collections::HashSet<String> = imported
        .events
        .into_iter()
        .map(|mut event| {
            tracker.assign(&mut event);
            event.turn_id
        })
        .collect();
    assert_eq!(turns.len(), 1, "{turns:?}");
}

#[test]
fn a_rewound_branch_stays_in_the_log_but_out_of_the_view() {
    let line = |uuid: &str, parent: &str, kind: &str, text: &str| {
        format!(
            r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"message":{{"role":"{kind}","content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    };
    let text = [
            line("u1", "null", "user", "Start"),
            line("a1", r#""u1""#, "assistant", "Ready"),
            line("b1u", r#""a1""#, "user", "First attempt"),
            line("b1a", r#""b1u""#, "assistant", "First answer"),
            line("b2u", r#""a1""#, "user", "Second attempt"),
            line("b2a", r#""b2u""#, "assistant", "Second answer"),
            r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"cb","parentUuid":null,"logicalParentUuid":"b2a"}"#.to_owned(),
            line("p1u", r#""cb""#, "user", "After compaction"),
        ]
        .join("\n");
    let imported = parse(&text).unwrap();
    let abandoned: Vec<&str> = imported
        .events
        .iter()
        .filter(|e| e.tags.iter().any(|t| t == ABANDONED_BRANCH_TAG))
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(abandoned, ["First attempt", "First answer"]);
    let viewed = imported.events.iter().filter(|e| e.is_in_model_view());
    let viewed: Vec<&str> = viewed.map(|e| e.content.as_str()).collect();
    assert_eq!(
        viewed,
        [
            "Start",
            "Ready",
            "Second attempt",
            "Second answer",
            "After compaction"
        ]
    );
}

#[test]
fn results_written_beside_their_calls_are_not_a_rewind() {
    let text = r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"read both"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{}}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"}]}}
{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"two"}]}}
{"type":"user","uuid":"m1","parentUuid":"xx-in-another-file","message":{"role":"user","content":"a prompt whose parent is elsewhere"}}"#;
    let imported = parse(text).unwrap();
    assert!(imported.events.iter().all(|e| e.is_in_model_view()));
}

#[test]
fn an_image_beside_a_tool_result_joins_it() {
    let text = r#"{"type":"assistant","uuid":"i1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Screenshot","input":{}}]}}
{"type":"user","uuid":"i2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"captured"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"Here it is."}]}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.events.len(), 2, "{:?}", imported.events);
    let result = &imported.events[1];
    assert_eq!(result.content, "captured\n\nHere it is.");
    assert_eq!(result.media.as_ref().unwrap().images.len(), 1);
    assert!(imported.skipped.is_empty());
}

#[test]
fn a_tool_reference_result_names_the_tool() {
    let text = r#"{"type":"assistant","uuid":"r1","message":{"id":"msg_r","role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"ToolSearch","input":{"query":"select:Read"}}]}}
{"type":"user","uuid":"r2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"Read"}]}]}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.events[1].content, "tool reference: Read");
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].status, ToolStatus::Success);
}

#[test]
fn tool_result_images_become_media() {
    let text = r#"{"type":"user","uuid":"z1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}}"#;
    let imported = parse(text).unwrap();
    let event = &imported.events[0];
    assert_eq!(event.content, "screenshot");
    assert_eq!(
        event.media.as_ref().unwrap().images,
        ["data:image/png;base64,iVBO"]
    );
}

#[test]
fn a_summary_line_is_a_display_only_session_title() {
    let text = r#"{"type":"user","uuid":"s1","timestamp":"2026-05-06T08:00:00.000Z","message":{"role":"user","content":"split the auth module"}}
{"type":"summary","summary":"Refactoring auth module","leafUuid":"s1"}
{"type":"summary","summary":"  ","leafUuid":"s1"}"#;
    let imported = parse(text).unwrap();
    let title = &imported.events[1];
    assert_eq!(title.trace_type, TraceType::System);
    assert_eq!(title.content, "Refactoring auth module");
    assert_eq!(title.tags, [SESSION_TITLE_TAG, DISPLAY_ONLY_TAG]);
    assert!(!title.is_in_model_view());
    assert!(!title.replaces_history());
    assert_eq!(imported.skipped.len(), 1);
    assert_eq!(imported.skipped[0].line, 3);
    assert!(imported.skipped[0].reason.contains("session title"));
}

#[test]
fn a_document_is_named_and_kept_whole() {
    let text = r#"{"type":"user","uuid":"p1","timestamp":"2026-05-06T08:32:00.000Z","message":{"role":"user","content":[{"type":"document","title":"spec.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}},{"type":"text","text":"summarize this spec"}]}}
{"type":"user","uuid":"p2","message":{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"TODO: tabs"}}]}}"#;
    let imported = parse(text).unwrap();
    assert!(imported.skipped.is_empty());
    let pdf = &imported.events[0];
    assert_eq!(pdf.trace_type, TraceType::User);
    assert_eq!(
        pdf.content,
        "[document attached: \"spec.pdf\", application/pdf, 9 bytes]"
    );
    assert_eq!(
        pdf.opaque.as_ref().unwrap()["source"]["data"],
        "JVBERi0xLjQK"
    );
    assert_eq!(imported.events[1].content, "summarize this spec");
    assert_eq!(
        imported.events[2].content,
        "[document attached: text/plain]\nTODO: tabs"
    );
}
