use super::*;
use agentmem::base::tool_interaction::tool_interactions;
use agentmem::{ToolStatus, TraceType};

fn kinds(imported: &Imported) -> Vec<TraceType> {
    imported.events.iter().map(|e| e.trace_type).collect()
}

#[test]
fn function_calling_history_pairs_by_call_id() {
    let text = r#"{"history":[
          {"role":"system","content":"You are a helpful assistant.","agent":"main","message_type":"system_prompt"},
          {"role":"user","content":[{"type":"text","text":"Fix the off-by-one in range_sum."}],"agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Let me look.","thought":"Let me look.","action":"cat -n src/sum.py","agent":"main","message_type":"action",
           "tool_calls":[{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat -n src/sum.py\"}"}}]},
          {"role":"tool","content":[{"type":"text","text":"1 def range_sum(a, b):"}],"agent":"main","message_type":"observation","tool_call_ids":["call_a"]}
        ],"info":{"model_stats":{"tokens_sent":1000}}}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::System,
            TraceType::User,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    let view = tool_interactions(&imported.events);
    assert_eq!(view[0].status, ToolStatus::Success);
    assert_eq!(view[0].arguments["command"], "cat -n src/sum.py");
    assert_eq!(imported.records, 4);
    assert!(imported.source_session_id.is_none());
}

#[test]
fn thinking_blocks_become_signed_reasoning_before_the_text() {
    let text = r#"{"history":[
          {"role":"user","content":"check.py fails to parse.","agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Find the file first.","thought":"Find the file first.","action":"find_file check.py","agent":"main","message_type":"action",
           "thinking_blocks":[{"type":"thinking","thinking":"The colon is missing on line 4.","signature":"EqQBCkgIARAB=="},{"type":"redacted_thinking","data":"EmwKAhgB"}],
           "tool_calls":[{"id":"call_find","type":"function","function":{"name":"find_file","arguments":"{\"file_name\":\"check.py\"}"}}]},
          {"role":"tool","content":"Found 1 match","agent":"main","message_type":"observation","tool_call_ids":["call_find"]}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            TraceType::User,
            TraceType::Reasoning,
            TraceType::Reasoning,
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    let thinking = &imported.events[1];
    assert_eq!(thinking.content, "The colon is missing on line 4.");
    assert_eq!(
        thinking.opaque.as_ref().unwrap()["signature"],
        "EqQBCkgIARAB=="
    );
    assert_eq!(imported.events[2].content, "");
    assert_eq!(
        imported.events[2].opaque.as_ref().unwrap()["data"],
        "EmwKAhgB"
    );
}

#[test]
fn legacy_history_synthesizes_calls_and_skips_demos() {
    let text = r#"{"history":[
          {"role":"system","content":"SETTING: ...","agent":"primary"},
          {"role":"user","content":"Here is a demonstration ...","agent":"primary","is_demo":true},
          {"role":"user","content":"ISSUE: sum is wrong","agent":"primary"},
          {"role":"assistant","content":"DISCUSSION\nopen it\n```\nopen src/sum.py\n```","thought":"DISCUSSION\nopen it","action":"open src/sum.py\n","agent":"primary"},
          {"role":"user","content":"[File: src/sum.py (3 lines total)]","agent":"primary"},
          {"role":"assistant","content":"submit","thought":"","action":"submit","agent":"primary"}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(imported.skipped.len(), 1);
    let view = tool_interactions(&imported.events);
    assert_eq!(view.len(), 2);
    assert_eq!(view[0].tool_call_id, "swe-call-1");
    assert_eq!(view[0].tool_name, "open");
    assert_eq!(view[0].status, ToolStatus::Success);
    assert_eq!(view[1].tool_name, "submit");
    assert_eq!(view[1].status, ToolStatus::Pending);
    assert_eq!(imported.events[1].content, "ISSUE: sum is wrong");
}

#[test]
fn the_final_step_missing_from_a_history_comes_from_the_trajectory() {
    // SWE-agent 1.x: the `submit` step is in the trajectory only.
    let text = r#"{"trajectory":[
          {"action":"python3 check.py","observation":"8.2","response":"Run it.","thought":"Run it.","execution_time":0.3,"state":{}},
          {"action":"submit","observation":"diff --git a/check.py b/check.py\n+fixed","response":"It works; submitting.","thought":"It works; submitting.","execution_time":0.2,"state":{}}
        ],"history":[
          {"role":"system","content":"You are a helpful assistant.","agent":"main","message_type":"system_prompt"},
          {"role":"user","content":"check.py fails to parse.","agent":"main","message_type":"observation"},
          {"role":"assistant","content":"Run it.","thought":"Run it.","action":"python3 check.py","agent":"main","message_type":"action",
           "tool_calls":[{"id":"call_run","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python3 check.py\"}"}}]},
          {"role":"tool","content":"8.2","agent":"main","message_type":"observation","tool_call_ids":["call_run"]}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(
        kinds(&imported)[5..],
        [
            TraceType::Assistant,
            TraceType::ToolCall,
            TraceType::ToolResult
        ]
    );
    assert_eq!(imported.events[5].content, "It works; submitting.");
    let view = tool_interactions(&imported.events);
    assert_eq!(view[1].tool_call_id, "swe-call-1");
    assert_eq!(view[1].tool_name, "submit");
    assert_eq!(view[1].status, ToolStatus::Success);
    assert!(view[1].result.as_deref().unwrap().contains("+fixed"));
    assert_eq!(imported.records, 5);
    assert!(imported.events[7].id.starts_with("swe-step-2-2-"));
}

#[test]
fn a_pending_submit_is_answered_by_the_trajectory() {
    // SWE-agent 0.x: `submit` is in the history, its diff only in the trajectory.
    let text = r#"{"trajectory":[
          {"action":"open a.py\n","observation":"[File: a.py]","response":"","thought":"open it","state":"{}"},
          {"action":"submit\n","observation":"\ndiff --git a/a.py b/a.py\n+fixed","response":"","thought":"done","state":"{}"}
        ],"history":[
          {"role":"system","content":"SETTING: ...","agent":"primary"},
          {"role":"user","content":"ISSUE: a.py is wrong","agent":"primary"},
          {"role":"assistant","content":"open it","thought":"open it","action":"open a.py\n","agent":"primary"},
          {"role":"user","content":"[File: a.py]","agent":"primary"},
          {"role":"assistant","content":"done","thought":"done","action":"submit\n","agent":"primary"}
        ]}"#;
    let imported = parse(text).unwrap();
    let view = tool_interactions(&imported.events);
    assert_eq!(view.len(), 2);
    assert_eq!(view[1].tool_call_id, "swe-call-2");
    assert_eq!(view[1].status, ToolStatus::Success);
    assert!(view[1].result.as_deref().unwrap().contains("+fixed"));
    assert_eq!(
        imported
            .events
            .iter()
            .filter(|e| e.content == "done")
            .count(),
        1,
        "the thought is not repeated"
    );
    assert_eq!(imported.records, 6);
    assert!(imported.skipped.is_empty());
}

#[test]
fn a_trajectory_that_does_not_line_up_with_the_history_adds_nothing() {
    let text = r#"{"trajectory":[
          {"action":"ls","observation":"a.py","thought":"look"},
          {"action":"submit","observation":"diff","thought":"done"}
        ],"history":[
          {"role":"user","content":"ISSUE: a.py is wrong","agent":"primary"},
          {"role":"assistant","content":"cat","thought":"","action":"cat a.py","agent":"primary"},
          {"role":"user","content":"print(1)","agent":"primary"}
        ]}"#;
    let imported = parse(text).unwrap();
    assert_eq!(tool_interactions(&imported.events).len(), 1);
    assert!(imported.skipped[0].reason.contains("left out"));
}

/// One attempt of a retry loop, its problem statement and command named `tag`.
fn attempt(tag: &str) -> String {
    format!(
        r#"{{"trajectory":[{{"action":"ls {tag}","observation":"{tag}.py","thought":"look"}}],
              "history":[{{"role":"user","content":"ISSUE {tag}","agent":"main","message_type":"observation"}},
                         {{"role":"assistant","content":"look","thought":"look","action":"ls {tag}","agent":"main","message_type":"action"}},
                         {{"role":"user","content":"{tag}.py","agent":"main","message_type":"observation"}}],
              "info":{{"exit_status":"submitted"}}}}"#
    )
}

#[test]
fn a_retry_loop_under_way_imports_its_last_attempt() {
    let text = format!(r#"{{"attempts":[{}, {}]}}"#, attempt("a"), attempt("b"));
    let imported = parse(&text).unwrap();
    assert_eq!(imported.events[0].content, "ISSUE b");
    assert_eq!(tool_interactions(&imported.events).len(), 1);
    assert_eq!(imported.skipped.len(), 1);
    assert_eq!(imported.skipped[0].line, 1);
    assert!(imported.skipped[0].reason.contains("attempt 1"));
    assert!(parse(r#"{"attempts":[]}"#).unwrap().events.is_empty());
    assert!(parse(r#"{"attempts":[7]}"#)
        .unwrap_err()
        .contains("attempt 1"));
}

#[test]
fn a_finished_retry_loop_imports_the_chosen_run_and_skips_the_others() {
    let chosen = attempt("a");
    let top: Value = serde_json::from_str(&chosen).unwrap();
    let mut root = top.as_object().unwrap().clone();
    root.insert("info".into(), json!({"best_attempt_idx": 0}));
    let attempts: Vec<Value> = [chosen, attempt("b"), attempt("c")]
        .iter()
        .map(|a| serde_json::from_str(a).unwrap())
        .collect();
    root.insert("attempts".into(), Value::Array(attempts));
    let imported = parse(&Value::Object(root).to_string()).unwrap();
    assert_eq!(imported.events[0].content, "ISSUE a");
    let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, [2, 3]);
}

#[test]
fn trajectory_steps_without_history() {
    let text = r#"{"trajectory":[
          {"action":"ls","observation":"a.py","response":"ls","thought":"look around","state":"{}",
           "query":[{"role":"system","content":"sys"},{"role":"user","content":"Problem: fix a.py"}]},
          {"action":"","observation":"","response":"","thought":""}
        ]}"#;
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
    assert_eq!(imported.records, 2);
    assert_eq!(imported.skipped[0].line, 2);
}

#[test]
fn a_document_that_is_not_a_trajectory_is_an_error() {
    assert!(parse("[1, 2]").unwrap_err().contains("trajectory"));
    assert!(parse("{\"history\": ").unwrap_err().starts_with("not JSON"));
    assert!(parse("{\"info\": {}}").is_err());
}
