//! The HTTP API end to end on loopback: an agent loop, the errors a client
//! can meet (with nothing changed), the token, MCP over streamable HTTP,
//! metrics, and the OpenAPI document against the route table.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};

use agentmem_server::http::routes::ROUTES;
use agentmem_server::http::{HttpServer, ServeError, ServerOptions};
use serde_json::{json, Value};
use support::TestServer;

fn events(session: &TestServer, id: &str) -> Vec<Value> {
    let (status, body) = session.call("GET", &format!("/v1/sessions/{id}/events"), None);
    assert_eq!(status, 200, "{body}");
    body["events"].as_array().unwrap().clone()
}

#[test]
fn a_client_walks_a_whole_agent_loop() {
    let server = TestServer::start();
    let (status, created) = server.call("POST", "/v1/sessions", Some(&json!({"session": "s1"})));
    assert_eq!(status, 201, "{created}");

    let turn = json!({"events": [
        {"id": "u1", "trace_type": "user", "content": "The build fails in src/parser.rs with E0308"},
        {"id": "c1", "trace_type": "tool_call", "tool_name": "shell", "tool_call_id": "call_1", "tool_args": {"cmd": "cargo build"}},
        {"id": "r1", "trace_type": "tool_result", "tool_name": "shell", "tool_call_id": "call_1", "content": "error[E0308]: mismatched types --> src/parser.rs:42"},
    ]});
    let (status, appended) = server.call("POST", "/v1/sessions/s1/events", Some(&turn));
    assert_eq!(
        (status, appended["appended"].as_u64()),
        (200, Some(3)),
        "{appended}"
    );
    // A retry of the same batch is recognised by its ids.
    let (_, retried) = server.call("POST", "/v1/sessions/s1/events", Some(&turn));
    assert_eq!(
        (retried["appended"].as_u64(), retried["duplicates"].as_u64()),
        (Some(0), Some(3))
    );

    let (status, prepared) = server.call(
        "POST",
        "/v1/sessions/s1/prepare",
        Some(&json!({"model": "claude-sonnet-4-5", "system": "Be brief."})),
    );
    assert_eq!(status, 200, "{prepared}");
    assert_eq!(
        prepared["payload"]["system"][0]["text"], "Be brief.",
        "Anthropic shape, cache marked: {prepared}"
    );
    let unmarked =
        json!({"model": "claude-sonnet-4-5", "system": "Be brief.", "prompt_cache": "off"});
    let (_, plain) = server.call("POST", "/v1/sessions/s1/prepare", Some(&unmarked));
    assert_eq!(plain["payload"]["system"], "Be brief.", "{plain}");
    let live = json!({"model": "gpt-4o", "live_context": "Today is Tuesday."});
    let (_, closed) = server.call("POST", "/v1/sessions/s1/prepare", Some(&live));
    let messages = closed["payload"]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "Today is Tuesday.",
        "{closed}"
    );
    let counted = prepared["stats"]["counted_tokens"].as_u64().unwrap();

    // Usage rides on the answer's first event, and the calibration learns from it.
    let answer = json!({"events": [{"id": "a1", "trace_type": "assistant", "content": "Line 42 returns a String where &str is expected.",
        "usage": {"prompt_tokens": counted + 10, "completion_tokens": 12, "model": "claude-sonnet-4-5"}}]});
    assert_eq!(
        server
            .call("POST", "/v1/sessions/s1/events", Some(&answer))
            .0,
        200
    );
    let (_, resumed) = server.call("GET", "/v1/sessions/s1", None);
    assert_eq!(resumed["meta"]["events"], 4, "{resumed}");
    assert_eq!(
        resumed["calibration"][0]["model"], "claude-sonnet-4-5",
        "{resumed}"
    );

    let (status, compacted) = server.call(
        "POST",
        "/v1/sessions/s1/compact",
        Some(&json!({"focus": "the parser error"})),
    );
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["focus"], "the parser error");

    let (status, recovered) = server.call(
        "POST",
        "/v1/sessions/s1/recover",
        Some(&json!({"model": "gpt-4o", "status": 400, "error_body": "{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"maximum context length is 128000 tokens\"}}"})),
    );
    assert_eq!(status, 200, "{recovered}");
    assert!(recovered["payload"]["messages"].is_array());

    let (_, hits) = server.call("POST", "/v1/search", Some(&json!({"query": "E0308"})));
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");

    let (_, memory) = server.call(
        "POST",
        "/v1/memory",
        Some(&json!({"text": "- The parser lives in src/parser.rs."})),
    );
    let stale = json!({"text": "- another note", "expected_hash": "0000000000000000"});
    let (status, conflict) = server.call("POST", "/v1/memory", Some(&stale));
    assert_eq!(
        (status, conflict["error"]["kind"].as_str()),
        (409, Some("conflict"))
    );
    let (_, read) = server.call("GET", "/v1/memory", None);
    assert_eq!(
        read["hash"], memory["hash"],
        "a refused edit changes nothing"
    );

    let (_, fact) = server.call(
        "POST",
        "/v1/facts",
        Some(&json!({"fact": "The user wants small commits.", "tags": ["preference"]})),
    );
    assert_eq!(fact["outcome"], "added", "{fact}");
    let (_, facts) = server.call("GET", "/v1/facts?all=true", None);
    assert_eq!(facts.as_array().unwrap().len(), 1);
    let (_, recalled) = server.call(
        "POST",
        "/v1/recall",
        Some(&json!({"query": "small commits", "budget": 500})),
    );
    assert!(
        recalled["block"]
            .as_str()
            .unwrap()
            .contains("small commits"),
        "{recalled}"
    );

    let (_, tools) = server.call("GET", "/v1/tools", None);
    assert!(tools.as_array().unwrap().len() >= 7);
    let (_, read_tool) = server.call(
        "POST",
        "/v1/tools/read_memory",
        Some(&json!({"arguments": {}})),
    );
    assert!(read_tool["text"]
        .as_str()
        .unwrap()
        .contains("src/parser.rs"));

    let (status, fork) = server.call(
        "POST",
        "/v1/sessions/s1/fork",
        Some(&json!({"new_session": "s1-fork"})),
    );
    assert_eq!(status, 200, "{fork}");
    assert_eq!(
        events(&server, "s1-fork").len(),
        4,
        "the fork has the whole history"
    );
    assert_eq!(server.call("POST", "/v1/sessions/s1/end", None).0, 200);

    let (_, listed) = server.call("GET", "/v1/sessions", None);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(server.call("DELETE", "/v1/sessions/s1-fork", None).0, 200);
    assert_eq!(server.call("GET", "/v1/sessions/s1-fork", None).0, 404);
}

#[test]
fn bad_requests_get_clear_errors_and_change_nothing() {
    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "s1"})));
    let expect = |(status, body): (u16, Value), want: u16, kind: &str| {
        assert_eq!(status, want, "{body}");
        assert_eq!(body["error"]["kind"], kind, "{body}");
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
    };
    let (status, text) = server.raw("POST", "/v1/sessions/s1/events", &[], b"{\"events\": [");
    expect(
        (status, serde_json::from_str(&text).unwrap()),
        400,
        "bad_request",
    );
    let invalid = json!({"events": [
        {"id": "ok", "trace_type": "user", "content": "fine"},
        {"id": "bad", "trace_type": "tool_result", "content": "no call id"},
    ]});
    expect(
        server.call("POST", "/v1/sessions/s1/events", Some(&invalid)),
        400,
        "bad_request",
    );
    expect(
        server.call(
            "POST",
            "/v1/sessions/s1/events",
            Some(&json!({"events": "x"})),
        ),
        400,
        "bad_request",
    );
    expect(
        server.call("POST", "/v1/sessions/s1/events", Some(&json!([1]))),
        400,
        "bad_request",
    );
    expect(
        server.call(
            "POST",
            "/v1/sessions/..%2Fetc/events",
            Some(&json!({"events": []})),
        ),
        400,
        "bad_request",
    );
    expect(
        server.call(
            "POST",
            "/v1/sessions/nope/prepare",
            Some(&json!({"model": "gpt-4o"})),
        ),
        404,
        "not_found",
    );
    expect(
        server.call("POST", "/v1/sessions/s1/prepare", Some(&json!({}))),
        400,
        "bad_request",
    );
    let misspelt = json!({"model": "claude-sonnet-4-5", "prompt_cache": "maybe"});
    expect(
        server.call("POST", "/v1/sessions/s1/prepare", Some(&misspelt)),
        400,
        "bad_request",
    );
    expect(
        server.call("POST", "/v1/sessions", Some(&json!({"session": "s1"}))),
        409,
        "conflict",
    );
    expect(
        server.call("GET", "/v1/nothing", None),
        404,
        "unknown_operation",
    );
    expect(
        server.call("PUT", "/v1/sessions", None),
        405,
        "method_not_allowed",
    );
    expect(
        server.call(
            "POST",
            "/v1/sessions/s1/events",
            Some(&json!({"session": "s2", "events": []})),
        ),
        400,
        "bad_request",
    );

    let huge = format!(
        "{{\"events\": [{{\"trace_type\": \"user\", \"content\": \"{}\"}}]}}",
        "x".repeat(9 * 1024 * 1024)
    );
    let (status, text) = server.raw("POST", "/v1/sessions/s1/events", &[], huge.as_bytes());
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("--max-body-bytes"), "{text}");

    assert!(
        events(&server, "s1").is_empty(),
        "no refused request wrote anything"
    );
}

#[test]
fn only_this_machine_may_call_a_loopback_server() {
    let server = TestServer::start();
    let (status, text) = server.raw(
        "GET",
        "/v1/sessions",
        &[("Host", "attacker.example:7077")],
        b"",
    );
    assert_eq!(status, 403, "DNS rebinding is refused: {text}");
    let (status, text) = server.raw(
        "POST",
        "/v1/memory",
        &[("Origin", "https://attacker.example")],
        br#"{"text": "x"}"#,
    );
    assert_eq!(status, 403, "a cross-site request is refused: {text}");
    let (status, _) = server.raw(
        "GET",
        "/v1/memory",
        &[("Origin", "http://localhost:3000")],
        b"",
    );
    assert_eq!(status, 200);
}

#[test]
fn a_token_is_required_beyond_loopback_and_checked_when_set() {
    let refused = HttpServer::bind(
        std::sync::Arc::new(agentmem_server::service::Service::new(
            agentmem::Store::open(
                tempfile::tempdir().unwrap().path(),
                agentmem::Durability::Batch,
            )
            .unwrap(),
            Default::default(),
        )),
        ServerOptions {
            addr: "0.0.0.0:0".parse().unwrap(),
            ..ServerOptions::default()
        },
    );
    assert!(matches!(refused, Err(ServeError::TokenRequired { .. })));

    let server = TestServer::with_options(ServerOptions {
        addr: "0.0.0.0:0".parse().unwrap(),
        token: Some("s3cret-token-for-tests".into()),
        ..ServerOptions::default()
    });
    let (status, text) = server.raw("GET", "/v1/sessions", &[], b"");
    assert_eq!(status, 401, "{text}");
    assert!(text.contains("Authorization: Bearer"), "{text}");
    let (status, _) = server.raw(
        "GET",
        "/v1/sessions",
        &[("Authorization", "Bearer wrong")],
        b"",
    );
    assert_eq!(status, 401);
    let (status, _) = server.raw(
        "GET",
        "/v1/sessions",
        &[("Authorization", "Bearer s3cret-token-for-tests")],
        b"",
    );
    assert_eq!(status, 200);
    let (status, _) = server.raw(
        "POST",
        "/mcp",
        &[],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(status, 401, "MCP needs the token too");
    assert_eq!(
        server.raw("GET", "/healthz", &[], b"").0,
        200,
        "liveness needs no token"
    );
}

#[test]
fn an_mcp_client_initializes_lists_and_calls_tools_over_http() {
    let server = TestServer::start();
    let post =
        |body: &str, headers: &[(&str, &str)]| server.raw("POST", "/mcp", headers, body.as_bytes());
    let (status, text) = post(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#,
        &[("Accept", "application/json, text/event-stream")],
    );
    assert_eq!(status, 200, "{text}");
    let init: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let version = [("MCP-Protocol-Version", "2025-06-18")];
    let (status, text) = post(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &version,
    );
    assert_eq!((status, text.as_str()), (202, ""));
    let (_, text) = post(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &version,
    );
    let listed: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let schemas = agentmem::tools::schemas();
    let expected: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, expected, "every memory tool, in order");
    let (_, text) = post(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_memory","arguments":{"text":"- Deploys go out on Tuesdays."}}}"#,
        &version,
    );
    let called: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(called["result"]["isError"], false, "{called}");
    let (_, memory) = server.call("GET", "/v1/memory", None);
    assert!(memory["content"].as_str().unwrap().contains("Tuesdays"));

    let (status, _) = post(
        r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        &[("MCP-Protocol-Version", "1999-01-01")],
    );
    assert_eq!(status, 400, "an unknown protocol version is refused");
    let (status, text) = post("{not json", &version);
    assert_eq!(status, 400);
    assert!(text.contains("-32700"), "{text}");
    assert_eq!(
        server.raw("GET", "/mcp", &[], b"").0,
        405,
        "no server-sent stream is offered"
    );
}

#[test]
fn metrics_count_requests_compactions_and_events() {
    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "m"})));
    server.call(
        "POST",
        "/v1/sessions/m/events",
        Some(&json!({"events": [{"trace_type": "user", "content": "hello there, general"}]})),
    );
    server.call("POST", "/v1/sessions/m/compact", Some(&json!({})));
    server.call("GET", "/v1/nothing", None);
    let (status, text) = server.raw("GET", "/metrics", &[], b"");
    assert_eq!(status, 200);
    assert!(
        text.contains("agentmem_requests_total{operation=\"append\",status=\"200\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("agentmem_requests_total{operation=\"unrouted\",status=\"404\"} 1"),
        "{text}"
    );
    assert!(text.contains("agentmem_events_appended_total 1"), "{text}");
    assert!(text.contains("agentmem_request_duration_seconds_bucket{operation=\"create_session\",status=\"201\",le=\"+Inf\"} 1"), "{text}");
    assert!(text.contains("agentmem_open_sessions 1"), "{text}");
}

#[test]
fn the_openapi_document_describes_every_route_and_no_other() {
    let server = TestServer::start();
    let (status, text) = server.raw("GET", "/openapi.json", &[], b"");
    assert_eq!(status, 200);
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "parameters")
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(documented, routed);
}

#[test]
fn working_memory_is_patched_checked_and_offered_to_mcp_clients_over_http() {
    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "w"})));
    let schema = json!({"type": "object", "properties": {"files_reviewed": {"type": "array", "items": {"type": "string"}}}});
    let (status, body) = server.call(
        "PUT",
        "/v1/sessions/w/state/schema",
        Some(&json!({"schema": schema})),
    );
    assert_eq!(status, 200, "{body}");

    let patch = json!({"patch": {"files_reviewed": ["src/parser.rs"]}, "expected_version": 0});
    let (status, state) = server.call("PATCH", "/v1/sessions/w/state", Some(&patch));
    assert_eq!(
        (status, state["version"].as_u64()),
        (200, Some(1)),
        "{state}"
    );
    let (status, stale) = server.call("PATCH", "/v1/sessions/w/state", Some(&patch));
    assert_eq!(
        (status, stale["error"]["kind"].as_str()),
        (409, Some("conflict")),
        "{stale}"
    );
    let invalid = json!({"patch": [{"op": "add", "path": "/files_reviewed/-", "value": 7}]});
    let (status, refused) = server.call("PATCH", "/v1/sessions/w/state", Some(&invalid));
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/files_reviewed/1"),
        "{refused}"
    );

    let (_, current) = server.call("GET", "/v1/sessions/w/state", None);
    assert_eq!(current["version"], 1, "refused patches changed nothing");
    assert_eq!(current["schema"], schema);
    let (_, prepared) = server.call(
        "POST",
        "/v1/sessions/w/prepare",
        Some(&json!({"model": "gpt-4o"})),
    );
    assert!(
        prepared["stats"]["sections"]["working_memory"]
            .as_u64()
            .unwrap()
            > 0,
        "{prepared}"
    );

    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "update_working_memory",
        "arguments": {"patch": {"plan": "fix the parser"}, "expected_version": 1}}});
    let (status, text) = server.raw("POST", "/mcp?session=w", &[], call.to_string().as_bytes());
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let (_, history) = server.call("GET", "/v1/sessions/w/state/history", None);
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[1]["document"]["plan"], "fix the parser");
    assert_eq!(versions[1]["event"]["trace_type"], "working_memory");

    let (_, plain) = server.call("GET", "/v1/tools", None);
    let (_, with_session) = server.call("GET", "/v1/tools?session=w", None);
    assert_eq!(
        with_session.as_array().unwrap().len(),
        plain.as_array().unwrap().len() + 2
    );
}

#[test]
fn requests_for_sessions_that_do_not_exist_leave_nothing_open() {
    let server = TestServer::start();
    for n in 0..20 {
        let path = format!("/v1/sessions/ghost-{n}/prepare");
        assert_eq!(
            server
                .call("POST", &path, Some(&json!({"model": "gpt-4o"})))
                .0,
            404
        );
    }
    server.call("POST", "/v1/sessions", Some(&json!({"session": "real"})));
    assert_eq!(server.service.open_sessions(), 1);
    assert_eq!(
        server.service.known_slots(),
        1,
        "no slot kept for the ghosts"
    );
}

#[test]
fn a_field_of_the_wrong_type_is_refused_not_ignored() {
    let server = TestServer::start();
    let (_, first) = server.call("POST", "/v1/memory", Some(&json!({"text": "- one"})));
    // A hash that is not a string must not turn compare-and-swap off.
    let (status, body) = server.call(
        "POST",
        "/v1/memory",
        Some(&json!({"text": "- two", "expected_hash": {"oops": 1}})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("expected_hash"));
    let (_, read) = server.call("GET", "/v1/memory", None);
    assert_eq!(read["hash"], first["hash"], "nothing was appended");

    let (status, _) = server.call("POST", "/v1/sessions", Some(&json!({"session": 5})));
    assert_eq!(
        status, 400,
        "a numeric id is not quietly replaced by a generated one"
    );
    let (_, listed) = server.call("GET", "/v1/sessions", None);
    assert!(listed.as_array().unwrap().is_empty());
    let (status, body) = server.call("GET", "/v1/facts?all=maybe", None);
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.call(
        "POST",
        "/v1/search",
        Some(&json!({"query": "x", "limit": 12.0})),
    );
    assert_eq!(
        status, 200,
        "a whole number written as a float is a count: {body}"
    );
    let (status, body) = server.call(
        "POST",
        "/v1/search",
        Some(&json!({"query": "x", "limit": 1e300})),
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn query_strings_keep_ids_as_text_and_405_names_the_allowed_methods() {
    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "123"})));
    let (status, body) = server.call("GET", "/v1/tools?session=123", None);
    assert_eq!(
        status, 200,
        "a numeric session id in a query is still an id: {body}"
    );
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    write!(
        stream,
        "PUT /v1/memory HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        server.addr
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("allow: get, post, patch"),
        "{response}"
    );
}

#[test]
fn the_notebook_takes_content_old_text_and_new_text_and_the_old_names_too() {
    let server = TestServer::start();
    let ok = |(status, body): (u16, Value)| {
        assert_eq!(status, 200, "{body}");
        body
    };
    ok(server.call(
        "POST",
        "/v1/memory",
        Some(&json!({"content": "- Deploys go through staging."})),
    ));
    ok(server.call(
        "PATCH",
        "/v1/memory",
        Some(&json!({"old_text": "staging", "new_text": "canary"})),
    ));
    ok(server.call(
        "POST",
        "/v1/memory",
        Some(&json!({"text": "- Tests run nightly."})),
    ));
    ok(server.call(
        "PATCH",
        "/v1/memory",
        Some(&json!({"old": "nightly", "new": "hourly"})),
    ));
    let tool = json!({"arguments": {"old_text": "hourly", "new_text": "every hour"}});
    let ran = ok(server.call("POST", "/v1/tools/update_memory", Some(&tool)));
    assert!(
        ran["text"].as_str().unwrap().starts_with("Replaced."),
        "{ran}"
    );
    let read = ok(server.call("GET", "/v1/memory", None));
    assert_eq!(
        read["content"],
        "- Deploys go through canary.\n- Tests run every hour.\n"
    );
    let (status, body) = server.call(
        "POST",
        "/v1/memory",
        Some(&json!({"content": "- x", "text": "- x"})),
    );
    assert_eq!(status, 400, "a name and its alias together: {body}");

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (_, listed) = server.call("POST", "/mcp", Some(&list));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let update = tools.iter().find(|t| t["name"] == "update_memory").unwrap();
    assert_eq!(
        update["inputSchema"]["required"],
        json!(["old_text", "new_text"])
    );
    let document: Value =
        serde_json::from_str(&server.raw("GET", "/openapi.json", &[], b"").1).unwrap();
    let body = |method: &str| {
        document["paths"]["/v1/memory"][method]["requestBody"]["content"]["application/json"]
            ["schema"]
            .clone()
    };
    assert_eq!(body("post")["required"], json!(["content"]));
    assert_eq!(body("patch")["required"], json!(["old_text"]));
}

/// Every file of a session folder with its bytes.
fn session_files(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn memory_injection_is_chosen_per_request_over_the_session_over_the_agent() {
    let server = TestServer::start();
    let agent_dir = server.dir.path().join("agents/default");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join("config.toml"),
        "[context]\nmemory = \"off\"\n",
    )
    .unwrap();
    let store = agentmem::Store::open(server.dir.path(), agentmem::Durability::Os).unwrap();
    for id in ["agent-off", "session-on"] {
        let id = agentmem::SessionId::new(id).unwrap();
        drop(store.create_session(&Default::default(), Some(id)).unwrap());
    }
    std::fs::write(
        agent_dir.join("sessions/session-on/config.toml"),
        "[context]\nmemory = \"on\"\n",
    )
    .unwrap();
    let note = json!({"content": "- The deploy key rotates on Fridays."});
    assert_eq!(server.call("POST", "/v1/memory", Some(&note)).0, 200);
    let injected = |session: &str, extra: Value| {
        let user =
            json!({"events": [{"trace_type": "user", "content": "When does the key rotate?"}]});
        server.call(
            "POST",
            &format!("/v1/sessions/{session}/events"),
            Some(&user),
        );
        let mut request = json!({"model": "gpt-4o"});
        request
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, prepared) = server.call(
            "POST",
            &format!("/v1/sessions/{session}/prepare"),
            Some(&request),
        );
        assert_eq!(status, 200, "{prepared}");
        prepared["payload"]
            .to_string()
            .contains("rotates on Fridays")
    };
    assert!(!injected("agent-off", json!({})), "the agent's setting");
    assert!(
        injected("agent-off", json!({"memory": "on"})),
        "request over agent"
    );
    assert!(injected("session-on", json!({})), "session over agent");
    assert!(
        !injected("session-on", json!({"memory": "off"})),
        "request over session"
    );
}

/// A server with session `s`: 12 turns, about 4,700 tokens.
fn server_with_a_long_session() -> TestServer {
    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "s"})));
    let turns: Vec<Value> = (0..12)
        .flat_map(|t| {
            [
                json!({"trace_type": "user", "content": format!("Question {t}: why does the parser fail?")}),
                json!({"trace_type": "assistant", "content": "It fails on nested quotes. ".repeat(60)}),
            ]
        })
        .collect();
    let (status, _) = server.call(
        "POST",
        "/v1/sessions/s/events",
        Some(&json!({"events": turns})),
    );
    assert_eq!(status, 200);
    server
}

#[test]
fn strategy_budget_and_trigger_are_chosen_per_request_and_unknown_fields_are_refused() {
    let server = server_with_a_long_session();
    let small = |strategy: &str| {
        json!({"model": "gpt-4o", "strategy": strategy, "context_window": 4000,
               "max_output_tokens": 500, "safety_margin": 0, "trigger_ratio": 0.5})
    };
    let (status, none) = server.call("POST", "/v1/sessions/s/prepare", Some(&small("none")));
    assert_eq!(status, 200, "{none}");
    assert_eq!(none["stats"]["input_budget"], 3500, "{}", none["stats"]);
    assert_eq!(none["stats"]["trigger_tokens"], 1750, "{}", none["stats"]);
    assert_eq!(none["stats"]["over_budget"], true, "none sends everything");
    assert_eq!(none["stats"]["actions"], json!([]));
    let (_, trimmed) = server.call("POST", "/v1/sessions/s/prepare", Some(&small("trim")));
    let actions = trimmed["stats"]["actions"].as_array().unwrap();
    assert!(
        actions.iter().any(|a| a["action"] == "turns_trimmed"),
        "{actions:?}"
    );
    assert_eq!(trimmed["stats"]["over_budget"], false);

    for (path, body) in [
        (
            "/v1/sessions/s/prepare",
            json!({"model": "gpt-4o", "strategey": "trim"}),
        ),
        ("/v1/sessions/s/compact", json!({"focus": "x", "keep": 1})),
        ("/v1/search", json!({"query": "parser", "limt": 3})),
        ("/v1/sessions/s/events", json!({"events": [], "event": []})),
    ] {
        let (status, refused) = server.call("POST", path, Some(&body));
        assert_eq!(status, 400, "{path}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("unknown field"), "{path}: {message}");
    }
    let (status, refused) = server.call("GET", "/v1/sessions/s/events?after=3", None);
    assert_eq!(status, 400, "a misspelt query parameter: {refused}");
    let (_, listed) = server.call("GET", "/v1/sessions/s/events", None);
    assert_eq!(
        listed["events"].as_array().unwrap().len(),
        24,
        "nothing was compacted"
    );
}

#[test]
fn a_dry_run_prepare_reports_what_it_would_do_and_changes_no_file() {
    let server = server_with_a_long_session();
    let small = json!({"model": "gpt-4o", "strategy": "summarize", "context_window": 4000,
                       "max_output_tokens": 500, "safety_margin": 0, "dry_run": true});
    let folder = server.dir.path().join("agents/default/sessions/s");
    let before = session_files(&folder);
    let (status, dry) = server.call("POST", "/v1/sessions/s/prepare", Some(&small));
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["would_compact"], true, "{}", dry["stats"]);
    assert!(dry["payload"]["messages"].is_array());
    assert_eq!(session_files(&folder), before, "a dry run writes nothing");

    let mut real = small.clone();
    real["dry_run"] = json!(false);
    let (_, prepared) = server.call("POST", "/v1/sessions/s/prepare", Some(&real));
    let actions = prepared["stats"]["actions"].as_array().unwrap();
    assert!(
        actions.iter().any(|a| a["action"] == "compacted"),
        "{actions:?}"
    );
    assert_ne!(session_files(&folder), before, "the real call compacted");
}

/// The fields an operation's type takes, as its refusal of an unknown one
/// lists them.
fn accepted_fields(message: &str) -> BTreeSet<String> {
    let listed = message.split_once("expected").map_or("", |(_, list)| list);
    listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_openapi_document_names_exactly_the_fields_each_operation_takes() {
    let server = TestServer::start();
    let (_, text) = server.raw("GET", "/openapi.json", &[], b"");
    let document: Value = serde_json::from_str(&text).unwrap();
    for route in ROUTES.iter() {
        let agentmem_server::http::routes::Endpoint::Op(op) = route.endpoint else {
            continue;
        };
        let item = &document["paths"][route.path];
        let operation = &item[route.method.to_lowercase()];
        let parameters = item["parameters"]
            .as_array()
            .into_iter()
            .chain(operation["parameters"].as_array())
            .flatten()
            .map(|p| p["name"].as_str().unwrap().to_owned());
        let body = &operation["requestBody"]["content"]["application/json"]["schema"];
        let mut documented: BTreeSet<String> = parameters.collect();
        documented.extend(
            body["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone()),
        );
        if body.is_object() {
            assert_eq!(
                body["additionalProperties"], false,
                "{} {}",
                route.method, route.path
            );
        }
        let path = route
            .path
            .replace("{session}", "s")
            .replace("{name}", "read_memory");
        let (status, answer) = match route.method {
            "GET" | "DELETE" => server.raw(route.method, &format!("{path}?zz_probe=1"), &[], b""),
            _ => server.raw(route.method, &path, &[], br#"{"zz_probe": 1}"#),
        };
        assert_eq!(status, 400, "{} {path}: {answer}", route.method);
        let mut accepted = accepted_fields(&answer);
        match op {
            agentmem_server::service::Op::RecoverOverflow => {
                accepted.extend(agentmem_server::requests::OVERFLOW_FIELDS.map(str::to_owned))
            }
            agentmem_server::service::Op::Prepare => {
                accepted.extend(agentmem_server::requests::DRY_RUN_FIELDS.map(str::to_owned))
            }
            _ => {}
        }
        assert_eq!(documented, accepted, "{} {path}: {answer}", route.method);
    }
}

#[test]
fn an_mcp_batch_is_bounded_in_messages_and_in_answer_bytes() {
    let server = TestServer::start();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let batch = Value::Array(vec![list; 65]);
    let (status, refused) = server.call("POST", "/mcp", Some(&batch));
    assert_eq!(status, 413, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 64"),
        "{refused}"
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, misspelt) = server.call("POST", "/mcp?sesion=s", Some(&ping));
    assert_eq!(status, 400, "an unknown query field: {misspelt}");
    let (status, empty) = server.call("POST", "/mcp", Some(&json!([])));
    assert_eq!(
        (status, &empty["error"]["code"]),
        (400, &json!(-32600)),
        "{empty}"
    );

    // A notebook of 1 MiB read 64 times would answer 64 MiB.
    let note = "- a long note about the deploy pipeline\n".repeat(26_000);
    assert_eq!(
        server
            .call("POST", "/v1/memory", Some(&json!({"content": note})))
            .0,
        200
    );
    let reads: Vec<Value> = (0..64)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "read_memory", "arguments": {}}}))
        .collect();
    let (status, text) = server.raw(
        "POST",
        "/mcp",
        &[],
        Value::Array(reads).to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    let limit = agentmem_server::mcp::MAX_BATCH_ANSWER_BYTES;
    assert!(text.len() < limit + 2 * note.len(), "{} bytes", text.len());
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(answers.len(), 64, "every request is answered");
    let ran = answers
        .iter()
        .take_while(|a| a["result"].is_object())
        .count();
    assert!((1..64).contains(&ran), "{ran} ran");
    for (id, answer) in answers.iter().enumerate().skip(ran) {
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32001, "{answer}");
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send this message again"));
    }
}

#[test]
fn a_host_or_origin_that_is_not_ascii_is_refused_not_taken_as_absent() {
    let server = TestServer::start();
    for headers in [
        [("Host", "évil.example")],
        [("Origin", "https://évil.example")],
    ] {
        let (status, text) = server.raw("GET", "/v1/sessions", &headers, b"");
        assert_eq!(status, 403, "{headers:?}: {text}");
        assert!(text.contains("not ASCII"), "{text}");
    }
}

#[test]
fn every_id_the_api_takes_is_reached_by_its_percent_encoded_path() {
    let server = TestServer::start();
    for id in ["café 50%", "a?b#c", "plus+sign"] {
        let (status, created) = server.call("POST", "/v1/sessions", Some(&json!({"session": id})));
        assert_eq!(status, 201, "{created}");
        let encoded: String = id
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect();
        let (status, resumed) = server.call("GET", &format!("/v1/sessions/{encoded}"), None);
        assert_eq!(status, 200, "{id}: {resumed}");
        assert_eq!(resumed["meta"]["id"], id);
        let append = json!({"events": [{"trace_type": "user", "content": "hi"}]});
        let (status, appended) = server.call(
            "POST",
            &format!("/v1/sessions/{encoded}/events"),
            Some(&append),
        );
        assert_eq!(
            (status, &appended["appended"]),
            (200, &json!(1)),
            "{appended}"
        );
    }
    let (status, text) = server.raw("GET", "/v1/sessions/%FF%FE", &[], b"");
    assert_eq!(status, 400, "not UTF-8 once decoded: {text}");
}

/// An appended event's unknown fields reach the log as the request wrote
/// them: a number beyond 64 bits is not rounded to a float.
#[test]
fn appended_unknown_numbers_are_logged_as_written() {
    let server = TestServer::start();
    let (status, _) = server.call("POST", "/v1/sessions", Some(&json!({"session": "big"})));
    assert_eq!(status, 201);
    let body = r#"{"events": [{"id": "u1", "trace_type": "user", "content": "hi", "vendor": 123456789012345678901234567890}]}"#;
    let (status, text) = server.raw("POST", "/v1/sessions/big/events", &[], body.as_bytes());
    assert_eq!(status, 200, "{text}");
    let log = server
        .dir
        .path()
        .join("agents/default/sessions/big/raw_traces.jsonl");
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains(r#""vendor":123456789012345678901234567890"#),
        "{log}"
    );
}

/// An event's unknown fields keep their numbers as written when the
/// service reads the history back: beyond 64 bits, beyond a float's range,
/// or with more digits than a float holds.
#[test]
fn reading_events_keeps_unknown_numbers_as_written() {
    let server = TestServer::start();
    let line = r#"{"id":"x","trace_type":"user","content":"hi","huge":123456789012345678901234567890,"far":1e400,"exact":0.10000000000000000000001}"#;
    let event: agentmem::Event = serde_json::from_str(line).unwrap();
    let mut session = server
        .service
        .store()
        .create_session(server.service.agent(), Some("s".parse().unwrap()))
        .unwrap();
    session.ingest(vec![event]).unwrap();
    session.close().unwrap();
    let (status, body) = server.raw("GET", "/v1/sessions/s/events", &[], b"");
    assert_eq!(status, 200, "{body}");
    for number in [
        r#""huge":123456789012345678901234567890"#,
        r#""far":1e400"#,
        r#""exact":0.10000000000000000000001"#,
    ] {
        assert!(body.contains(number), "{number} in {body}");
    }
}
