use super::super::parse;
use super::*;
use agentmem::base::tool_interaction::tool_interactions;
use agentmem::ToolStatus;

fn kinds(imported: &Imported) -> Vec<TraceType> {
    imported.events.iter().map(|e| e.trace_type).collect()
}

#[test]
fn actions_pair_with_observations_by_cause() {
    let text = r#"[
          {"id":0,"timestamp":"2024-11-05T12:34:56.789012","source":"user","message":"list files","action":"message","args":{"content":"list files","image_urls":null}},
          {"id":1,"timestamp":"2024-11-05T12:34:57","source":"environment","message":"","observation":"agent_state_changed","content":"","extras":{"agent_state":"running"}},
          {"id":2,"timestamp":"2024-11-05T12:34:58","source":"agent","message":"Running command: ls","action":"run","args":{"command":"ls","thought":"Let me look."},
           "tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"toolu_1","model_response":{"id":"resp_1"},"total_calls_in_response":1},
           "llm_metrics":{"accumulated_token_usage":{"prompt_tokens":999},"token_usages":[{"model":"claude-x","prompt_tokens":120,"completion_tokens":30,"cache_read_tokens":100,"response_id":"resp_1"}]}},
          {"id":3,"timestamp":"2024-11-05T12:34:59","source":"agent","message":"Command `ls` executed with exit code 2.","cause":2,"observation":"run","content":"ls: cannot access","extras":{"command":"ls","metadata":{"exit_code":2}}}
        ]"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::User,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert!((imported.events[0].ts - 1730810096.789012).abs() < 1e-3);
    assert_eq!(imported.events[1].id, "oh-2-thought");
    assert_eq!(imported.events[2].id, "oh-2");
    let usage = imported.events[2].usage.as_ref().unwrap();
    assert_eq!((usage.prompt_tokens, usage.cached_tokens), (120, 100));
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].tool_name, "execute_bash");
    assert_eq!(view[0].status, ToolStatus::Error);
    assert_eq!(imported.skipped.len(), 1);
}

#[test]
fn tool_calls_carry_the_models_own_arguments() {
    let text = r#"[
          {"id":4,"source":"agent","action":"read","args":{"path":"/workspace/app/util.py","start":0,"end":-1,"thought":"Check the helper.","impl_source":"oh_aci","view_range":[10,30]},
           "tool_call_metadata":{"function_name":"str_replace_editor","tool_call_id":"toolu_r1","total_calls_in_response":2,
            "model_response":{"id":"resp_4","choices":[{"index":0,"message":{"role":"assistant","content":"Check the helper.","tool_calls":[
              {"id":"toolu_r0","type":"function","function":{"name":"execute_bash","arguments":"{\"command\": \"ls\"}"}},
              {"id":"toolu_r1","type":"function","function":{"name":"str_replace_editor","arguments":"{\"command\": \"view\", \"path\": \"/workspace/app/util.py\", \"view_range\": [10, 30]}"}}]}}]}}},
          {"id":5,"source":"agent","action":"run","args":{"command":"pytest -q","thought":"","is_input":false},
           "tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"toolu_r2",
            "model_response":{"id":"resp_5","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[
              {"id":"toolu_r2","type":"function","function":{"name":"execute_bash","arguments":"{not json"}}]}}]}}}
        ]"#;
    let imported = parse(text).unwrap();
    let calls: Vec<&Event> = imported
        .events
        .iter()
        .filter(|e| e.trace_type == TraceType::ToolCall)
        .collect();
    assert_eq!(
        calls[0].tool_args,
        Some(
            serde_json::json!({"command":"view","path":"/workspace/app/util.py","view_range":[10,30]})
        )
    );
    // Unparseable model arguments: OpenHands' own `args` are kept.
    assert_eq!(
        calls[1].tool_args,
        Some(serde_json::json!({"command":"pytest -q","thought":"","is_input":false}))
    );
}

#[test]
fn accumulated_usage_alone_is_not_kept_and_actions_without_metadata_get_ids() {
    let text = r#"{"events":[
          {"id":7,"source":"agent","action":"read","args":{"path":"/home/dev/proj/a.py","thought":""},"llm_metrics":{"accumulated_token_usage":{"prompt_tokens":50}}},
          {"id":8,"source":"agent","cause":7,"observation":"read","content":"print(1)","extras":{"path":"/home/dev/proj/a.py"}},
          {"id":9,"source":"agent","action":"think","args":{"thought":"a.py is fine"}},
          {"id":10,"source":"agent","observation":"error","content":"stray error"}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::Reasoning
        ]
    );
    assert!(imported.events[0].usage.is_none());
    assert_eq!(imported.events[0].tool_call_id.as_deref(), Some("oh-7"));
    assert_eq!(imported.events[1].tool_call_id.as_deref(), Some("oh-7"));
    assert!(imported.skipped[0]
        .reason
        .contains("answering no tool call"));
}

#[test]
fn finish_gets_a_result_and_its_final_answer_is_said() {
    let text = r#"[
          {"id":3,"timestamp":"2025-03-14T09:27:13","source":"agent","message":"Done.","action":"finish",
           "args":{"final_thought":"FINAL ANSWER: the parser now accepts trailing commas.","task_completed":"true","outputs":{},"thought":""},
           "tool_call_metadata":{"function_name":"finish","tool_call_id":"toolu_fin","model_response":{"id":"resp_9"},"total_calls_in_response":1},
           "llm_metrics":{"token_usages":[{"model":"claude-x","prompt_tokens":900,"completion_tokens":40,"response_id":"resp_9"}]}}
        ]"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::Assistant
        ]
    );
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].status, ToolStatus::Success);
    assert_eq!(
        view[0].result.as_deref(),
        Some("Finished (task_completed: true).")
    );
    let answer = &imported.events[2];
    assert_eq!(answer.id, "oh-3-final");
    assert!(answer.content.starts_with("FINAL ANSWER"));
    assert!(answer.usage.is_some());
    assert!(
        imported.events[1].usage.is_none(),
        "no model call made the result"
    );
}

#[test]
fn an_older_finish_says_its_message_once() {
    let text = r#"[
          {"id":5,"source":"agent","action":"finish","args":{"outputs":{},"thought":"Renamed the file."}},
          {"id":6,"source":"agent","action":"finish","args":{"message":"All three tests pass now.","outputs":{}}},
          {"id":7,"source":"agent","action":"finish","args":{"outputs":{"content":"42"},"thought":""}}
        ]"#;
    let imported = parse(text).unwrap();
    let said: Vec<&str> = imported
        .events
        .iter()
        .filter(|e| e.trace_type == TraceType::Assistant)
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(
        said,
        ["Renamed the file.", "All three tests pass now.", "42"]
    );
    let view = tool_interactions(&imported.events);
    assert!(view.iter().all(|i| i.status == ToolStatus::Success));
    assert_eq!(view[0].tool_call_id, "oh-5");
}

#[test]
fn opendevin_action_observation_pairs_are_flattened() {
    let text = r#"{"instance_id":"demo-1","history":[
          [{"id":0,"source":"user","message":"Rename a.py to b.py","action":"message","args":{"content":"Rename a.py to b.py","wait_for_response":false}},
           {"message":"No observation","observation":"null","content":"","extras":{}}],
          [{"id":3,"source":"agent","message":"Running command: mv a.py b.py","action":"run","args":{"command":"mv a.py b.py","thought":"Rename it."}},
           {"message":"Command `mv a.py b.py` executed with exit code 0.","observation":"run","content":"","extras":{"command_id":-1,"command":"mv a.py b.py","exit_code":0}}],
          [{"id":5,"source":"agent","message":"Done.","action":"finish","args":{"outputs":{},"thought":"Renamed."}},
           {"message":"No observation","observation":"null","content":"","extras":{}}]
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::User,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].tool_call_id, "oh-3");
    assert_eq!(view[0].status, ToolStatus::Success);
    assert_eq!(imported.records, 6);
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [2, 6]);
}

#[test]
fn a_document_of_the_wrong_shape_is_an_error() {
    assert!(parse("{\"messages\": []}")
        .unwrap_err()
        .contains("OpenHands events"));
    assert!(parse("[{").unwrap_err().starts_with("not JSON"));
}
