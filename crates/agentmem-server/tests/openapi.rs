//! The OpenAPI document against the server it describes, by other means
//! than the types it is built from: the checked-in copy is the generated
//! one; every example is a request the operation reads; real answers, of
//! every route and of errors, keep to the documented reply schemas; and the
//! schemas written for the engine's types name exactly the fields those
//! types write. (`tests/http.rs` checks that the routes are the documented
//! paths and that each operation's documented fields are the ones it
//! accepts, by the fields its refusals list.)

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use agentmem::base::event::Media;
use agentmem::files::meta::ImportRecord;
use agentmem::{Event, SessionMeta, TraceType, Usage};
use agentmem_server::http::routes::{Endpoint, ROUTES};
use agentmem_server::requests::Request;
use serde_json::{json, Value};
use support::TestServer;

const DOCUMENT_URL: &str = "https://agentmem.invalid/openapi.json";

#[test]
fn the_checked_in_document_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let generated = agentmem_server::openapi::text();
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, generated).unwrap();
            return;
        }
        panic!(
            "crates/agentmem-server/openapi.json is not the document the types make; \
             regenerate it with `UPDATE_OPENAPI=1 cargo test -p agentmem-server --test openapi`"
        );
    }
}

/// The documented schemas, compiled so values can be checked against them.
struct Validator {
    document: Value,
    schemas: boon::Schemas,
    compiler: boon::Compiler,
    compiled: BTreeMap<String, boon::SchemaIndex>,
}

impl Validator {
    fn new(document: Value) -> Validator {
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(DOCUMENT_URL, document.clone())
            .unwrap();
        Validator {
            document,
            schemas: boon::Schemas::new(),
            compiler,
            compiled: BTreeMap::new(),
        }
    }

    /// Fails unless `value` keeps to the schema at `pointer` (a JSON
    /// Pointer into the document).
    fn check(&mut self, pointer: &str, value: &Value, what: &str) {
        let index = match self.compiled.get(pointer) {
            Some(index) => *index,
            None => {
                let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
                let index = self
                    .compiler
                    .compile(&format!("{DOCUMENT_URL}#{fragment}"), &mut self.schemas)
                    .unwrap_or_else(|e| panic!("{pointer}: {e:#}"));
                self.compiled.insert(pointer.to_owned(), index);
                index
            }
        };
        if let Err(error) = self.schemas.validate(value, index) {
            panic!("{what} does not keep to {pointer}: {error:#}\n{value:#}");
        }
    }
}

/// A JSON Pointer's token for `key`.
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Where the operation of `method` on `path` is.
fn operation_pointer(method: &str, path: &str) -> String {
    format!("/paths/{}/{}", token(path), method.to_lowercase())
}

#[test]
fn every_documented_example_is_a_request_its_operation_reads() {
    let document = agentmem_server::openapi::document();
    let mut validator = Validator::new(document.clone());
    let mut shown = 0;
    for route in &ROUTES {
        let Endpoint::Op(op) = route.endpoint else {
            continue;
        };
        let pointer = operation_pointer(route.method, route.path);
        let operation = document.pointer(&pointer).unwrap();
        let mut args = serde_json::Map::new();
        for (i, parameter) in operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = parameter["name"].as_str().unwrap();
            let Some(example) = parameter.get("example") else {
                assert_ne!(
                    parameter["required"], true,
                    "{pointer}: {name} has no example"
                );
                continue;
            };
            validator.check(&format!("{pointer}/parameters/{i}/schema"), example, name);
            // A query string carries text, which the types read too.
            let text = match example {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let value = if parameter["in"] == "query" {
                Value::String(text)
            } else {
                example.clone()
            };
            args.insert(name.to_owned(), value);
        }
        let body = format!("{pointer}/requestBody/content/application~1json/schema");
        if let Some(schema) = document.pointer(&body) {
            let example = schema["examples"][0].clone();
            assert!(example.is_object(), "{body} has no example");
            validator.check(&body, &example, "the example");
            args.extend(example.as_object().unwrap().clone());
        }
        if let Err(error) = Request::read(op, &Value::Object(args.clone())) {
            panic!("{pointer}: the example {args:?} is refused: {error}");
        }
        shown += usize::from(!args.is_empty());
    }
    assert!(shown >= 20, "only {shown} operations have examples");
}

/// A server, a validator of its document, and the routes answered so far.
struct Walk {
    server: TestServer,
    validator: Validator,
    answered: BTreeSet<(String, String)>,
}

impl Walk {
    fn new() -> Walk {
        let server = TestServer::start();
        let (status, text) = server.raw("GET", "/openapi.json", &[], b"");
        assert_eq!(status, 200);
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            document,
            agentmem_server::openapi::document(),
            "served as generated"
        );
        Walk {
            server,
            validator: Validator::new(document),
            answered: BTreeSet::new(),
        }
    }

    /// Sends the request and checks the answer against the documented reply
    /// of its route and status; the answer's body.
    fn call(&mut self, method: &str, path: &str, body: Option<Value>, expected: u16) -> Value {
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        let (status, answer) = self.server.raw(method, path, &[], text.as_bytes());
        assert_eq!(status, expected, "{method} {path}: {answer}");
        let route_path = path.split('?').next().unwrap();
        let route = agentmem_server::http::routes::find(method, route_path)
            .unwrap()
            .route;
        self.answered
            .insert((route.method.to_owned(), route.path.to_owned()));
        let operation = operation_pointer(route.method, route.path);
        let responses = self
            .validator
            .document
            .pointer(&format!("{operation}/responses"))
            .unwrap()
            .clone();
        let status_text = status.to_string();
        let class = format!("{}XX", status / 100);
        let (key, response) = [status_text.as_str(), class.as_str()]
            .into_iter()
            .find_map(|key| responses.get(key).map(|r| (key.to_owned(), r.clone())))
            .unwrap_or_else(|| panic!("{operation} documents no {status}"));
        let (schema_pointer, content) = match response.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let pointer = reference.trim_start_matches('#').to_owned();
                let response = self.validator.document.pointer(&pointer).unwrap().clone();
                (pointer, response["content"].clone())
            }
            None => (
                format!("{operation}/responses/{}", token(&key)),
                response["content"].clone(),
            ),
        };
        let Some(json) = content.get("application/json") else {
            assert!(
                content.is_null() || content.get("text/plain").is_some(),
                "{operation} {status}: {content}"
            );
            return Value::String(answer);
        };
        assert!(json.get("schema").is_some());
        let value: Value = serde_json::from_str(&answer).unwrap();
        self.validator.check(
            &format!("{schema_pointer}/content/application~1json/schema"),
            &value,
            &format!("{method} {path}'s {status}"),
        );
        value
    }
}

#[test]
fn every_route_answers_as_its_reply_schema_says() {
    let mut walk = Walk::new();
    walk.call("GET", "/healthz", None, 200);
    walk.call("GET", "/metrics", None, 200);
    walk.call("GET", "/openapi.json", None, 200);
    walk.call("POST", "/v1/sessions", Some(json!({"session": "s1"})), 201);
    walk.call("POST", "/v1/sessions", Some(json!({"session": "s1"})), 409);
    walk.call("GET", "/v1/sessions/s1", None, 200);
    let state = json!({"scope": "session", "schema": {"type": "object"}});
    walk.call("PUT", "/v1/sessions/s1/state/schema", Some(state), 200);
    walk.call("GET", "/v1/sessions/s1/state", None, 200);
    let patch = json!({"patch": {"goal": "fix the build"}, "expected_version": 0});
    walk.call("PATCH", "/v1/sessions/s1/state", Some(patch), 200);
    walk.call(
        "PATCH",
        "/v1/sessions/s1/state",
        Some(json!({"patch": {}, "expected_version": 0})),
        409,
    );
    let turn = json!({"events": [
        {"id": "u1", "trace_type": "user", "content": "The build fails in src/parser.rs", "ts": "2026-01-31T10:00:00Z", "tags": ["build"], "media": {"images": ["shot.png"]}},
        {"id": "c1", "trace_type": "tool_call", "tool_name": "shell", "tool_call_id": "call_1", "tool_args": {"cmd": "cargo build"}, "correlation_id": "k1", "vendor_field": 7},
        {"id": "r1", "trace_type": "tool_result", "tool_name": "shell", "tool_call_id": "call_1", "content": "error[E0308]".repeat(5000), "tool_result": {"exit": 101}, "tool_error": "exit 101"},
        {"id": "a1", "trace_type": "assistant", "content": "Fixing it.", "usage": {"prompt_tokens": 900, "completion_tokens": 12, "cached_tokens": 100, "model": "gpt-4o"}},
        {"id": "t1", "trace_type": "reasoning", "content": "", "opaque": {"type": "reasoning", "encrypted_content": "x"}},
        {"id": "w1", "trace_type": "working_memory", "working_memory": {"kind": "merge_patch", "patch": {"done": ["reproduced"]}}},
    ]});
    walk.call("POST", "/v1/sessions/s1/events", Some(turn), 200);
    walk.call(
        "POST",
        "/v1/sessions/s1/events",
        Some(json!({"events": [{"content": "x"}]})),
        400,
    );
    let events = walk.call(
        "GET",
        "/v1/sessions/s1/events?after_seq=0&limit=50",
        None,
        200,
    );
    assert!(events["events"].as_array().unwrap().len() >= 5, "{events}");
    walk.call("GET", "/v1/sessions/s1/state/history", None, 200);
    walk.call(
        "POST",
        "/v1/sessions/s1/fork",
        Some(json!({"at_turn": "turn_0001", "new_session": "s2"})),
        200,
    );
    let tools = json!([{"name": "bash", "description": "Run a command.", "parameters": {"type": "object"}}]);
    let prepare = json!({"model": "gpt-4o", "system": "Be brief.", "tools": tools});
    walk.call("POST", "/v1/sessions/s1/prepare", Some(prepare), 200);
    let dry = json!({"model": "claude-sonnet-4-5", "dry_run": true, "context_window": 2000, "max_output_tokens": 100});
    walk.call("POST", "/v1/sessions/s1/prepare", Some(dry), 200);
    walk.call(
        "POST",
        "/v1/sessions/s1/prepare",
        Some(json!({"model": "gpt-4o", "budget": 1})),
        400,
    );
    let overflow = json!({"model": "gpt-4o", "status": 400, "error_body": "{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"maximum context length is 128000 tokens\"}}"});
    walk.call("POST", "/v1/sessions/s1/recover", Some(overflow), 200);
    walk.call(
        "POST",
        "/v1/sessions/s1/compact",
        Some(json!({"focus": "the parser"})),
        200,
    );
    walk.call("GET", "/v1/sessions", None, 200);
    walk.call(
        "POST",
        "/v1/search",
        Some(json!({"query": "parser", "limit": 3})),
        200,
    );
    walk.call(
        "POST",
        "/v1/recall",
        Some(json!({"query": "What failed in the build?"})),
        200,
    );
    walk.call("GET", "/v1/memory", None, 200);
    walk.call(
        "POST",
        "/v1/memory",
        Some(json!({"content": "- Deploys go through staging."})),
        200,
    );
    walk.call(
        "PATCH",
        "/v1/memory",
        Some(json!({"old": "staging", "new": "canary"})),
        200,
    );
    walk.call(
        "POST",
        "/v1/memory",
        Some(json!({"content": "- x", "expected_hash": "0"})),
        409,
    );
    walk.call(
        "POST",
        "/v1/facts",
        Some(json!({"fact": "The parser lives in src/parser.rs.", "tags": ["code"]})),
        200,
    );
    walk.call("GET", "/v1/facts?all=true", None, 200);
    walk.call("GET", "/v1/tools?session=s1", None, 200);
    walk.call(
        "POST",
        "/v1/tools/read_memory",
        Some(json!({"arguments": {}})),
        200,
    );
    walk.call("POST", "/v1/tools/bash", Some(json!({})), 404);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    walk.call("POST", "/mcp?session=s1", Some(list), 200);
    walk.call(
        "POST",
        "/mcp",
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        202,
    );
    walk.call("POST", "/mcp", Some(json!("not a message")), 400);
    walk.call("POST", "/v1/sessions/s2/end", None, 200);
    walk.call("DELETE", "/v1/sessions/s2", None, 200);
    walk.call("GET", "/v1/sessions/s2", None, 404);
    // The checks bite: a wrong answer is caught.
    let appended = "/paths/~1v1~1sessions~1{session}~1events/post/responses/200/content/application~1json/schema";
    let wrong = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        walk.validator
            .check(appended, &json!({"appended": "3"}), "a wrong answer")
    }));
    assert!(wrong.is_err(), "a wrong answer passed");
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    let missed: Vec<_> = routed.difference(&walk.answered).collect();
    assert!(missed.is_empty(), "routes not walked: {missed:?}");
}

/// The properties a component schema of the document names.
fn documented_fields(name: &str) -> BTreeSet<String> {
    let document = agentmem_server::openapi::document();
    document["components"]["schemas"][name]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no component {name}"))
        .keys()
        .cloned()
        .collect()
}

/// The fields `value` writes.
fn written_fields(value: impl serde::Serialize) -> BTreeSet<String> {
    serde_json::to_value(value)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn the_schemas_of_engine_types_name_every_field_they_write() {
    let usage = Usage {
        prompt_tokens: 1,
        completion_tokens: 1,
        cached_tokens: 1,
        model: Some("gpt-4o".into()),
        estimated_prompt_tokens: Some(1),
        estimated_view_tokens: Some(1),
    };
    assert_eq!(documented_fields("Usage"), written_fields(&usage));
    // Every field named, so a field added to the engine's type does not
    // build here until the schema names it too.
    let event = Event {
        id: "e".into(),
        ts: 1.0,
        turn_id: "turn_0001".into(),
        seq: 1,
        trace_type: TraceType::ToolCall,
        content: "x".into(),
        source_event: "ingest".into(),
        media: Some(Media::default()),
        tool_name: Some("bash".into()),
        tool_call_id: Some("c".into()),
        tool_args: Some(json!({})),
        tool_result: Some(json!({})),
        tool_error: Some("e".into()),
        correlation_id: Some("k".into()),
        tags: vec!["t".into()],
        tool_result_ref: Some("r".into()),
        usage: Some(usage),
        opaque: Some(json!({})),
        working_memory: None,
        extra: Default::default(),
    };
    let mut written = written_fields(&event);
    written.insert("working_memory".into());
    written.insert("kind".into()); // what reading takes for trace_type
    assert_eq!(documented_fields("Event"), written);
    let meta = SessionMeta {
        id: "s".into(),
        agent_id: "a".into(),
        title: Some("t".into()),
        created: 1.0,
        updated: 1.0,
        events: 1,
        archived_events: 1,
        compactions_finished: 1,
        turns: 1,
        log_bytes: 1,
        forked_from: Some("f".into()),
        forked_at_turn: Some("turn_0001".into()),
        imports: vec![ImportRecord {
            path: "p".into(),
            format: "codex".into(),
            ts: 1.0,
            events_added: 1,
        }],
    };
    assert_eq!(documented_fields("SessionMeta"), written_fields(&meta));

    let server = TestServer::start();
    server.call("POST", "/v1/sessions", Some(&json!({"session": "s"})));
    let (_, prepared) = server.call(
        "POST",
        "/v1/sessions/s/prepare",
        Some(&json!({"model": "gpt-4o"})),
    );
    assert_eq!(
        documented_fields("ContextStats"),
        written_fields(&prepared["stats"])
    );
    let (_, notebook) = server.call("GET", "/v1/memory", None);
    assert_eq!(
        documented_fields("MemoryVersion"),
        written_fields(&notebook)
    );
}
