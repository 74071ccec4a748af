use super::*;
use agentmem::base::tool_interaction::tool_interactions;
use agentmem::ToolStatus;

const ROLLOUT: &str = r#"{"timestamp":"2025-09-01T10:00:00.000Z","type":"session_meta","payload":{"id":"0199-abc","cwd":"/home/dev/proj","cli_version":"0.30.0"}}
{"timestamp":"2025-09-01T10:00:00.010Z","type":"turn_context","payload":{"cwd":"/home/dev/proj","model":"gpt-5-codex"}}
{"timestamp":"2025-09-01T10:00:00.020Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/dev/proj</cwd>\n</environment_context>"}]}}
{"timestamp":"2025-09-01T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count the files"}]}}
{"timestamp":"2025-09-01T10:00:01.001Z","type":"event_msg","payload":{"type":"user_message","message":"count the files"}}
{"timestamp":"2025-09-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls | wc -l\"]}","call_id":"call_1"}}
{"timestamp":"2025-09-01T10:00:02.500Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":800,"output_tokens":40,"reasoning_output_tokens":16}}}}
{"timestamp":"2025-09-01T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":{"content":"bash: ls: not found","success":false}}}
{broken"#;

#[test]
fn maps_a_rollout_with_usage_and_injected_context() {
    let imported = parse(ROLLOUT).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::System,
            TraceType::User,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert_eq!(imported.source_session_id.as_deref(), Some("0199-abc"));
    assert_eq!(imported.events[0].tags, ["injected_context"]);
    let usage = imported.events[2].usage.as_ref().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (900, 40, 800)
    );
    assert_eq!(usage.model.as_deref(), Some("gpt-5-codex"));
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].status, ToolStatus::Error);
    assert_eq!(view[0].arguments["command"][2], "ls | wc -l");
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [2, 5, 9]);
    assert_eq!(imported.records, 9);
}

#[test]
fn reasoning_keeps_the_encrypted_item() {
    let line = r#"{"timestamp":"2025-09-01T10:00:00Z","type":"response_item","payload":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Plan** list then count"}],"content":null,"encrypted_content":"gAAAAB"}}"#;
    let imported = parse(line).unwrap();
    let event = &imported.events[0];
    assert_eq!(event.trace_type, TraceType::Reasoning);
    assert_eq!(event.content, "**Plan** list then count");
    assert_eq!(
        event.opaque.as_ref().unwrap()["encrypted_content"],
        "gAAAAB"
    );
}

#[test]
fn reads_the_legacy_format() {
    let text = r#"{"id":"legacy-1","timestamp":"2025-04-20T09:00:00.000Z","instructions":"Prefer small diffs."}
{"record_type":"state"}
{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}
{"type":"local_shell_call","id":"lsh_1","call_id":"call_9","status":"completed","action":{"type":"exec","command":["pwd"]}}
{"type":"function_call_output","call_id":"call_9","output":"/home/dev/proj"}"#;
    let imported = parse(text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::System,
            TraceType::User,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert_eq!(imported.source_session_id.as_deref(), Some("legacy-1"));
    assert!(imported.events.iter().all(|e| e.ts > 1.7e9));
    assert_eq!(
        tool_interactions(&imported.events)[0].status,
        ToolStatus::Success
    );
    assert_eq!(imported.skipped.len(), 1);
}

#[test]
fn event_messages_are_imported_unless_a_response_item_repeats_them() {
    let text = r#"{"timestamp":"2026-01-03T04:05:10Z","type":"session_meta","payload":{"id":"child-1","source":{"subagent":"review"}}}
{"timestamp":"2026-01-03T04:05:11Z","type":"event_msg","payload":{"type":"user_message","message":"check the parser"}}
{"timestamp":"2026-01-03T04:05:12Z","type":"event_msg","payload":{"type":"agent_message","message":"The parser looks fine."}}
{"timestamp":"2026-01-03T04:05:13Z","type":"event_msg","payload":{"type":"user_message","message":"and the lexer?"}}
{"timestamp":"2026-01-03T04:05:13.001Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and the lexer?"}]}}
{"timestamp":"2026-01-03T04:05:14Z","type":"event_msg","payload":{"type":"agent_message","message":"The lexer drops tabs."}}
{"timestamp":"2026-01-03T04:05:14.001Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The lexer drops tabs."}]}}"#;
    let imported = parse(text).unwrap();
    let messages: Vec<(TraceType, &str)> = imported
        .events
        .iter()
        .map(|e| (e.trace_type, e.content.as_str()))
        .collect();
    assert_eq!(
        messages,
        [
            (TraceType::User, "check the parser"),
            (TraceType::Assistant, "The parser looks fine."),
            (TraceType::User, "and the lexer?"),
            (TraceType::Assistant, "The lexer drops tabs."),
        ]
    );
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [4, 6]);
}

#[test]
fn a_non_zero_exit_code_in_the_output_is_a_failed_result() {
    let text = r#"{"timestamp":"2026-04-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"pytest\"]}","call_id":"c1"}}
{"timestamp":"2026-04-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed"}}
{"timestamp":"2026-04-01T00:00:06Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cargo build\"}","call_id":"c2"}}
{"timestamp":"2026-04-01T00:00:07Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Chunk ID: 1\nWall time: 2.0 seconds\nProcess exited with code 101\nOutput:\nerror[E0425]"}}
{"timestamp":"2026-04-01T00:00:08Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c3"}}
{"timestamp":"2026-04-01T00:00:09Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"{\"output\":\"a.rs\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}}
{"timestamp":"2026-04-01T00:00:10Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"false\"]}","call_id":"c4"}}
{"timestamp":"2026-04-01T00:00:11Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c4","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":2.8}}"}}
{"timestamp":"2026-04-01T00:00:12Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"cat\",\"notes\"]}","call_id":"c5"}}
{"timestamp":"2026-04-01T00:00:13Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c5","output":"Exit code: 0\nWall time: 0.1 seconds\nOutput:\nProcess exited with code 2"}}"#;
    let imported = parse(text).unwrap();
    let statuses: Vec<ToolStatus> = tool_interactions(&imported.events)
        .iter()
        .map(|view| view.status)
        .collect();
    assert_eq!(
        statuses,
        [
            ToolStatus::Error,
            ToolStatus::Error,
            ToolStatus::Success,
            ToolStatus::Error,
            ToolStatus::Success
        ]
    );
    assert_eq!(imported.events[5].content, "a.rs\n");
    assert_eq!(imported.events[7].content, "exit code 1");
    assert_eq!(
        imported.events[7].tool_error.as_deref(),
        Some("exit code 1")
    );
}

#[test]
fn harness_messages_do_not_open_turns() {
    let user = |text: &str| {
        let item = serde_json::json!({"timestamp":"2026-04-01T00:00:13Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":text}]}});
        item.to_string()
    };
    let text = [
            user("<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"),
            user("<user_shell_command>\n<command>git status</command>\n<result>clean</result>\n</user_shell_command>"),
            user("<skill>\n<name>release</name>\nTag, then push.\n</skill>"),
            user("<codex_internal_context>\nresumed\n</codex_internal_context>"),
            user("<recommended_plugins>\n- lint\n</recommended_plugins>"),
            user("tag the release"),
        ]
        .join("\n");
    let imported = parse(&text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(kinds[..5], [TraceType::System; 5]);
    assert!(imported.events[..5]
        .iter()
        .all(|e| e.tags == ["injected_context"]));
    assert_eq!(kinds[5], TraceType::User);
}

#[test]
fn session_meta_instructions_are_the_system_prompt() {
    let text = r#"{"timestamp":"2026-04-01T00:00:00Z","type":"session_meta","payload":{"id":"s-meta","cwd":"/w","base_instructions":{"text":"You are a coding agent."},"instructions":"Prefer small diffs."}}
{"timestamp":"2026-04-01T00:00:01Z","type":"session_meta","payload":{"id":"s-meta-2","instructions":null}}
{"timestamp":"2026-04-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}"#;
    let imported = parse(text).unwrap();
    let events: Vec<(TraceType, &str)> = imported
        .events
        .iter()
        .map(|e| (e.trace_type, e.content.as_str()))
        .collect();
    assert_eq!(
        events,
        [
            (TraceType::System, "You are a coding agent."),
            (TraceType::System, "Prefer small diffs."),
            (TraceType::User, "hello"),
        ]
    );
    assert!(imported.events[..2]
        .iter()
        .all(|e| e.tags == ["injected_context"]));
    assert_eq!(
        imported.events[1].id,
        format!("{}-1", imported.events[0].id)
    );
    assert_eq!(imported.source_session_id.as_deref(), Some("s-meta"));
}

#[test]
fn a_web_search_is_kept_as_a_paired_call() {
    let text = r#"{"timestamp":"2026-04-01T00:00:10Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"type":"search","query":"pytest assertion rewrite","queries":["pytest assertion rewrite"]}}}
{"timestamp":"2026-04-01T00:00:11Z","type":"response_item","payload":{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"open_page","url":"https://docs.pytest.org/"}}}"#;
    let imported = parse(text).unwrap();
    assert!(imported.skipped.is_empty());
    let view = tool_interactions(&imported.events);
    assert_eq!(view.len(), 2);
    assert_eq!(view[0].status, ToolStatus::Success);
    assert_eq!(view[0].arguments["query"], "pytest assertion rewrite");
    assert_eq!(
        imported.events[1].content,
        "searched the web for \"pytest assertion rewrite\""
    );
    assert_eq!(
        imported.events[0].tool_call_id.as_deref(),
        Some("web_search_1")
    );
    assert_eq!(imported.events[2].tool_call_id.as_deref(), Some("ws_2"));
    assert_eq!(
        imported.events[3].content,
        "opened the page https://docs.pytest.org/"
    );
    let ids: std::collections::HashSet<&str> =
        imported.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), 4);
}

#[test]
fn a_token_count_without_model_output_is_skipped() {
    let text = r#"{"timestamp":"2025-09-01T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1,"output_tokens":1}}}}
{"timestamp":"2025-09-01T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"2025-09-01T10:00:01Z","type":"compacted","payload":{"message":"We counted the files."}}
{"timestamp":"2025-09-01T10:00:02Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#;
    let imported = parse(text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(kinds, [TraceType::Summary, TraceType::TurnAborted]);
    assert!(imported.events[0].replaces_history());
    assert_eq!(imported.skipped.len(), 2);
    let unclaimed = imported
        .skipped
        .iter()
        .find(|s| s.reason.contains("no model output followed"))
        .unwrap();
    assert_eq!(unclaimed.line, 1);
}

#[test]
fn instructions_a_message_repeats_are_imported_once() {
    let text = r#"{"timestamp":"2025-12-28T12:18:30Z","type":"session_meta","payload":{"id":"s","base_instructions":{"text":"You are Codex."},"instructions":"Use 4 spaces."}}
{"timestamp":"2025-12-28T12:18:30Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\n\nUse 4 spaces.\n\n</user_instructions>"}]}}"#;
    let imported = parse(text).unwrap();
    let texts: Vec<&str> = imported.events.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(
        texts,
        [
            "You are Codex.",
            "<user_instructions>\n\nUse 4 spaces.\n\n</user_instructions>"
        ]
    );
}

#[test]
fn a_token_count_written_again_counts_once() {
    let count = r#"{"timestamp":"2025-11-23T19:30:30Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":120,"output_tokens":5},"last_token_usage":{"input_tokens":120,"output_tokens":5}}}}"#;
    let reply = |text: &str| {
        format!(
            r#"{{"timestamp":"2025-11-23T19:30:31Z","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}}}"#
        )
    };
    let text = [
        reply("one"),
        count.to_owned(),
        count.to_owned(),
        reply("two"),
    ]
    .join("\n");
    let imported = parse(&text).unwrap();
    let measured: Vec<Option<u64>> = imported
        .events
        .iter()
        .map(|e| e.usage.as_ref().map(|u| u.prompt_tokens))
        .collect();
    assert_eq!(measured, [Some(120), None]);
    assert!(imported.skipped.iter().any(|s| s.reason.contains("repeat")));
}

#[test]
fn a_token_count_written_before_its_output_measures_that_output() {
    let usage = |input: u64| {
        format!(
            r#"{{"timestamp":"2025-11-23T19:30:30Z","type":"event_msg","payload":{{"type":"token_count","info":{{"last_token_usage":{{"input_tokens":{input},"output_tokens":13}}}}}}}}"#
        )
    };
    let assistant = |text: &str| {
        format!(
            r#"{{"timestamp":"2025-11-23T19:30:30Z","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}}}"#
        )
    };
    let user = r#"{"timestamp":"2025-11-23T19:30:19Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"a test prompt"}]}}"#;
    let echo = r#"{"timestamp":"2025-11-23T19:30:30Z","type":"event_msg","payload":{"type":"agent_message","message":"acknowledged"}}"#;
    let text = [
        usage(1_000),
        assistant("first answer"),
        user.to_owned(),
        echo.to_owned(),
        usage(194_558),
        assistant("acknowledged"),
    ]
    .join("\n");
    let imported = parse(&text).unwrap();
    let measured: Vec<(&str, Option<u64>)> = imported
        .events
        .iter()
        .map(|e| {
            (
                e.content.as_str(),
                e.usage.as_ref().map(|u| u.prompt_tokens),
            )
        })
        .collect();
    assert_eq!(
        measured,
        [
            ("first answer", Some(1_000)),
            ("a test prompt", None),
            ("acknowledged", Some(194_558))
        ]
    );
}

#[test]
fn a_compaction_without_a_message_is_its_replacement_history() {
    let text = r#"{"timestamp":"2026-06-10T09:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"make the lexer handle tabs"}]}}
{"timestamp":"2026-06-10T09:00:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done: tabs are whitespace now."}]}}
{"timestamp":"2026-06-10T09:05:00Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"make the lexer handle tabs"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Another model worked on this task; its summary:\nThe lexer treats tabs as whitespace; tests pass."}]}]}}
{"timestamp":"2026-06-10T09:06:00Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"now the parser"}]},{"type":"compaction","encrypted_content":"gAAAAbc"}]}}
{"timestamp":"2026-06-10T09:07:00Z","type":"compacted","payload":{"message":"","replacement_history":[]}}
{"timestamp":"2026-06-10T09:08:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and the parser?"}]}}"#;
    let imported = parse(text).unwrap();
    let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::User,
            TraceType::Assistant,
            TraceType::Summary,
            TraceType::Summary,
            TraceType::User
        ]
    );
    let handoff = &imported.events[2];
    assert!(handoff.replaces_history());
    assert_eq!(
            handoff.content,
            "user: make the lexer handle tabs\n\nuser: Another model worked on this task; its summary:\nThe lexer treats tabs as whitespace; tests pass."
        );
    assert!(handoff.opaque.is_none());
    let encrypted = &imported.events[3];
    assert!(encrypted.replaces_history());
    assert_eq!(
            encrypted.content,
            "user: now the parser\n\n[earlier conversation, compacted into a summary only the provider can read]"
        );
    assert_eq!(
        encrypted.opaque.as_ref().unwrap()[0]["encrypted_content"],
        "gAAAAbc"
    );
    assert_eq!(imported.skipped.len(), 1);
    assert_eq!(imported.skipped[0].line, 5);
    assert!(imported.skipped[0].reason.contains("neither"));
}

#[test]
fn a_compaction_message_comes_first_and_is_not_repeated() {
    let text = r#"{"timestamp":"2026-06-10T09:05:00Z","type":"compacted","payload":{"message":"The lexer treats tabs as whitespace.","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"make the lexer handle tabs"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Another model worked on this task; its summary:\nThe lexer treats tabs as whitespace."}]}]}}
{"timestamp":"2026-06-10T09:06:00Z","type":"compacted","payload":{"message":"Only the summary.","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Only the summary."}]}]}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
            imported.events[0].content,
            "The lexer treats tabs as whitespace.\n\nKept from before the compaction:\n\nuser: make the lexer handle tabs"
        );
    assert_eq!(imported.events[1].content, "Only the summary.");
    assert!(imported.events.iter().all(Event::replaces_history));
}

#[test]
fn an_encrypted_compaction_item_is_skipped_with_its_reason() {
    let text = r#"{"timestamp":"2026-06-10T09:05:00Z","type":"response_item","payload":{"type":"compaction","encrypted_content":"gAAAAxyz"}}"#;
    let imported = parse(text).unwrap();
    assert!(imported.events.is_empty());
    assert_eq!(imported.skipped.len(), 1);
    assert!(imported.skipped[0].reason.contains("encrypted compaction"));
}

#[test]
fn images_in_a_tool_output_become_media() {
    let text = r#"{"timestamp":"2026-04-01T00:00:08Z","type":"response_item","payload":{"type":"function_call","name":"view_image","arguments":"{\"path\":\"shot.png\"}","call_id":"c_img"}}
{"timestamp":"2026-04-01T00:00:09Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c_img","output":[{"type":"input_text","text":"shot.png (800x600)"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0K"}]}}
{"timestamp":"2026-04-01T00:00:10Z","type":"response_item","payload":{"type":"function_call","name":"view_image","arguments":"{\"path\":\"b.png\"}","call_id":"c_only"}}
{"timestamp":"2026-04-01T00:00:11Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c_only","output":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}}"#;
    let imported = parse(text).unwrap();
    let result = &imported.events[1];
    assert_eq!(result.content, "shot.png (800x600)");
    assert_eq!(
        result.media.as_ref().unwrap().images,
        ["data:image/png;base64,iVBORw0K"]
    );
    let image_only = &imported.events[3];
    assert_eq!(image_only.content, "");
    assert_eq!(
        image_only.media.as_ref().unwrap().images,
        ["data:image/png;base64,AAAA"]
    );
    let view = tool_interactions(&imported.events);
    assert!(view.iter().all(|v| v.status == ToolStatus::Success));
}
