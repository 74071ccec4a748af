//! `agentmem mcp` through a scripted MCP client exchange on stdio.

mod common;

use std::path::Path;

use serde_json::{json, Value};

/// Sends `messages` (one per line) and returns the server's replies, in order.
fn exchange(dir: &Path, extra: &[&str], messages: &[String]) -> Vec<Value> {
    let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
    let mut arguments = common::args(&["mcp"]);
    arguments.extend(common::args(extra));
    let output = common::agentmem_with_input(dir, &arguments, &[], &input);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn a_client_initializes_lists_the_tools_and_calls_them() {
    let dir = tempfile::tempdir().unwrap();
    common::agentmem_with_input(
        dir.path(),
        &common::args(&["ingest", "--session", "past"]),
        &[],
        "{\"trace_type\":\"user\",\"content\":\"The staging database listens on port 6432.\"}\n",
    );

    let replies = exchange(
        dir.path(),
        &["--session", "current"],
        &[
            request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-client", "version": "1"}}),
            ),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            request(2, "tools/list", json!({})),
            call(
                3,
                "write_memory",
                json!({"text": "- Deploys go through staging."}),
            ),
            call(4, "read_memory", json!({})),
            call(
                5,
                "remember_fact",
                json!({"fact": "The team deploys on Tuesdays."}),
            ),
            call(
                6,
                "remember_fact",
                json!({"fact": "The team deploys on Tuesdays"}),
            ),
            call(
                7,
                "search_conversation_history",
                json!({"query": "staging port"}),
            ),
            call(
                8,
                "recall",
                json!({"query": "which port does staging use?"}),
            ),
            call(
                9,
                "update_memory",
                json!({"old": "nowhere to be found", "new": "x"}),
            ),
            call(10, "bash", json!({})),
            "{not json".to_owned(),
            request(11, "resources/list", json!({})),
            request(12, "ping", json!({})),
        ],
    );
    assert_eq!(replies.len(), 13, "the notification is not answered");
    let init = &replies[0]["result"];
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "agentmem");
    assert!(init["capabilities"]["tools"].is_object());

    let names: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "read_memory",
        "write_memory",
        "update_memory",
        "search_conversation_history",
        "recall",
        "read_evicted_output",
        "remember_fact",
    ] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    assert!(replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["inputSchema"]["type"] == "object"));

    assert!(text(&replies[2]).starts_with("Appended."));
    assert!(text(&replies[3]).contains("- Deploys go through staging."));
    assert!(text(&replies[4]).starts_with("Remembered as fact"));
    assert!(text(&replies[5]).starts_with("Already known: merged"));
    assert!(text(&replies[6])
        .contains("> [turn_0001] User: The [staging] database listens on [port] 6432."));
    assert!(
        text(&replies[7]).contains("port 6432"),
        "{}",
        text(&replies[7])
    );
    assert_eq!(
        replies[8]["result"]["isError"], true,
        "a tool's mistake is a result the model reads"
    );
    assert_eq!(replies[9]["error"]["code"], -32602);
    assert_eq!(replies[10]["error"]["code"], -32700);
    assert_eq!(replies[11]["error"]["code"], -32601);
    assert_eq!(replies[12]["result"], json!({}));
}

#[test]
fn a_search_answer_shows_the_text_that_matched_not_the_start_of_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let log: String = (0..40)
        .map(|i| format!("test parser::case_{i} ... ok\n"))
        .collect();
    let output =
        format!("{log}thread 'main' panicked at src/lexer.rs:88: unterminated heredoc\n{log}");
    let events = [
        json!({"trace_type": "user", "content": "run the tests"}),
        json!({"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "bash", "tool_args": {"cmd": "cargo test"}}),
        json!({"trace_type": "tool_result", "tool_call_id": "c1", "content": output}),
    ];
    let input: String = events.iter().map(|e| format!("{e}\n")).collect();
    common::agentmem_with_input(
        dir.path(),
        &common::args(&["ingest", "--session", "past"]),
        &[],
        &input,
    );
    let replies = exchange(
        dir.path(),
        &[],
        &[call(
            1,
            "search_conversation_history",
            json!({"query": "unterminated heredoc"}),
        )],
    );
    let answer = text(&replies[0]);
    let hit = answer.lines().find(|l| l.starts_with('>')).unwrap();
    assert!(
        hit.contains("[unterminated] [heredoc]") && hit.contains("lexer.rs:88"),
        "{answer}"
    );
}

#[test]
fn the_notebook_tools_take_seed_names_and_still_take_the_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let replies = exchange(
        dir.path(),
        &[],
        &[
            request(1, "tools/list", json!({})),
            call(
                2,
                "write_memory",
                json!({"content": "- Deploys go through staging."}),
            ),
            call(
                3,
                "update_memory",
                json!({"old_text": "staging", "new_text": "canary"}),
            ),
            call(4, "write_memory", json!({"text": "- Tests run nightly."})),
            call(
                5,
                "update_memory",
                json!({"old": "nightly", "new": "hourly"}),
            ),
            call(
                6,
                "write_memory",
                json!({"content": "- x", "colour": "red"}),
            ),
            call(7, "write_memory", json!({"content": "- y", "text": "- y"})),
            call(8, "read_memory", json!({})),
        ],
    );
    let tools = replies[0]["result"]["tools"].as_array().unwrap();
    let schema =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"].clone();
    assert_eq!(schema("write_memory")["required"], json!(["content"]));
    assert_eq!(
        schema("update_memory")["required"],
        json!(["old_text", "new_text"])
    );
    for (i, reply) in replies[1..5].iter().enumerate() {
        assert_eq!(reply["result"]["isError"], false, "call {}: {reply}", i + 2);
    }
    assert_eq!(replies[5]["result"]["isError"], true);
    assert!(
        text(&replies[5]).contains("colour"),
        "{}",
        text(&replies[5])
    );
    assert_eq!(
        replies[6]["result"]["isError"], true,
        "a name and its alias together are refused: {}",
        replies[6]
    );
    let memory = text(&replies[7]);
    assert!(
        memory.contains("- Deploys go through canary.\n- Tests run hourly.\n"),
        "{memory}"
    );
    assert!(
        !memory.contains("- x") && !memory.contains("- y"),
        "{memory}"
    );
}

#[test]
fn a_batch_on_stdio_is_answered_in_order_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let too_many = Value::Array((0..65).map(ping).collect());
    let replies = exchange(
        dir.path(),
        &[],
        &[json!([ping(1), ping(2)]).to_string(), too_many.to_string()],
    );
    assert_eq!(
        replies[0],
        json!([{"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "id": 2, "result": {}}])
    );
    assert_eq!(replies[1]["error"]["code"], -32600, "{}", replies[1]);
    assert!(replies[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 64"));
}
