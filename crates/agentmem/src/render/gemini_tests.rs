use super::*;

/// The whole body, as `render` makes it for this API.
fn render(request: &RenderRequest<'_>) -> Value {
    super::super::render(super::super::Target::Gemini, request)
}

fn request<'a>(
    system: Option<&'a str>,
    messages: &'a [Message],
    tools: &'a [ToolSchema],
) -> RenderRequest<'a> {
    RenderRequest {
        model: "gemini-test",
        system,
        messages,
        tools,
        max_output_tokens: 2048,
        cache: super::super::PromptCache::default(),
        live_context: None,
    }
}

fn call(id: &str, name: &str, arguments: Value) -> Part {
    Part::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn result(call_id: &str, name: Option<&str>, content: &str, is_error: bool) -> Message {
    Message {
        role: Role::Tool,
        parts: vec![Part::ToolResult {
            call_id: call_id.into(),
            name: name.map(str::to_owned),
            content: content.into(),
            is_error,
        }],
    }
}

#[test]
fn body_shape_without_model() {
    let messages = [
        Message::text(Role::System, "Run fmt."),
        Message::text(Role::User, "hi"),
    ];
    let body = render(&request(Some("Be brief."), &messages, &[]));
    assert!(body.get("model").is_none());
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}, {"text": "Run fmt."}]})
    );
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "hi"}]}])
    );
    assert_eq!(body["generationConfig"], json!({"maxOutputTokens": 2048}));
    assert!(body.get("tools").is_none());
}

#[test]
fn calls_and_responses_alternate_with_names_looked_up() {
    let messages = [
        Message::text(Role::User, "read both"),
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning {
                    text: "hm".into(),
                    opaque: None,
                },
                Part::Text("Reading.".into()),
                call("c1", "read", json!({"path": "a"})),
                call("c2", "grep", json!(r#"{"pattern": "x"}"#)),
            ],
        },
        result("c1", None, "A", false),
        result("c2", Some("grep"), "bad pattern", true),
        Message::text(Role::Assistant, "Done."),
    ];
    let body = render(&request(None, &messages, &[]));
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "read both"}]},
            {"role": "model", "parts": [
                {"text": "Reading."},
                {"functionCall": {"name": "read", "args": {"path": "a"}}},
                {"functionCall": {"name": "grep", "args": {"pattern": "x"}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read", "response": {"output": "A"}}},
                {"functionResponse": {"name": "grep", "response": {"error": "bad pattern"}}},
            ]},
            {"role": "model", "parts": [{"text": "Done."}]},
        ])
    );
}

#[test]
fn a_transcript_starting_with_the_model_gets_a_user_content_first() {
    let messages = [
        Message::text(Role::Assistant, "as I was saying"),
        Message::text(Role::Assistant, "and so"),
    ];
    let body = render(&request(None, &messages, &[]));
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 2);
    assert_eq!(contents[0]["parts"][0]["text"], CONTINUED);
    assert_eq!(contents[1]["parts"].as_array().unwrap().len(), 2);
}

#[test]
fn an_orphan_result_is_named_by_its_call_id() {
    let messages = [result("c9", None, "late", false)];
    let body = render(&request(None, &messages, &[]));
    assert_eq!(
        body["contents"][0]["parts"][0]["functionResponse"]["name"],
        "c9"
    );
}

#[test]
fn images() {
    assert_eq!(
        image_part("data:image/png;base64,iV"),
        json!({"inlineData": {"mimeType": "image/png", "data": "iV"}})
    );
    assert_eq!(
        image_part("https://example.com/a.JPG?x=1"),
        json!({"fileData": {"fileUri": "https://example.com/a.JPG?x=1", "mimeType": "image/jpeg"}})
    );
    assert_eq!(
        image_part("gs://bucket/blob"),
        json!({"fileData": {"fileUri": "gs://bucket/blob"}})
    );
    assert_eq!(
        image_part("/tmp/a.png"),
        json!({"text": "[image not sent: /tmp/a.png]"})
    );
}

#[test]
fn schema_cleanup() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": false,
        "$defs": {"Mode": {"type": "string", "enum": ["fast", "slow"], "description": "speed"}},
        "properties": {
            "path": {"type": "string", "examples": ["a"]},
            "timeout": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "mode": {"$ref": "#/$defs/Mode", "description": "how"},
            "level": {"enum": [1, 2]},
            "kind": {"const": "x"},
            "either": {"oneOf": [{"type": "string"}, {"type": "object", "additionalProperties": true}]},
            "list": {"type": "array", "items": {"$ref": "#/definitions/Missing"}},
            "additionalProperties": {"type": "string"}
        },
        "required": ["path"]
    });
    assert_eq!(
        clean_schema(&schema),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "timeout": {"type": "integer", "nullable": true},
                "mode": {"type": "string", "enum": ["fast", "slow"], "description": "how"},
                "level": {"enum": ["1", "2"]},
                "kind": {"enum": ["x"]},
                "either": {"anyOf": [{"type": "string"}, {"type": "object"}]},
                "list": {"type": "array", "items": {}},
                "additionalProperties": {"type": "string"}
            },
            "required": ["path"]
        })
    );
}

#[test]
fn recursive_refs_are_cut() {
    let schema = json!({
        "type": "object",
        "definitions": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
        "properties": {"head": {"$ref": "#/definitions/Node"}}
    });
    let cleaned = clean_schema(&schema);
    let mut node = &cleaned["properties"]["head"];
    let mut depth = 0;
    while let Some(next) = node.get("properties").map(|p| &p["next"]) {
        node = next;
        depth += 1;
    }
    assert_eq!(depth, MAX_REF_DEPTH);
}

#[test]
fn declarations_leave_out_empty_parameters() {
    let tools = [
        ToolSchema {
            name: "now".into(),
            description: "The time.".into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
        ToolSchema {
            name: "ls".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"dir": {"type": "string"}}}),
        },
    ];
    let body = render(&request(None, &[], &tools));
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [
            {"name": "now", "description": "The time."},
            {"name": "ls", "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}},
        ]}])
    );
}
