use super::*;

/// The whole body, as `render` makes it for this API.
fn render(request: &RenderRequest<'_>) -> Value {
    super::super::render(super::super::Target::OpenAiResponses, request)
}

fn request<'a>(
    system: Option<&'a str>,
    messages: &'a [Message],
    tools: &'a [ToolSchema],
) -> RenderRequest<'a> {
    RenderRequest {
        model: "gpt-test",
        system,
        messages,
        tools,
        max_output_tokens: 1024,
        cache: super::super::PromptCache::default(),
        live_context: None,
    }
}

fn reasoning_item() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "gAAA"})
}

#[test]
fn system_prompt_is_instructions_and_system_messages_are_developer_items() {
    let messages = [
        Message::text(Role::System, "Run fmt."),
        Message::text(Role::User, "hi"),
    ];
    let body = render(&request(Some("Be brief."), &messages, &[]));
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Run fmt."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ])
    );
    assert!(body.get("tools").is_none());
}

#[test]
fn a_response_becomes_reasoning_message_and_call_items_in_order() {
    let messages = [
        Message::text(Role::User, "list"),
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning {
                    text: "Plan.".into(),
                    opaque: Some(reasoning_item()),
                },
                Part::Text("Listing.".into()),
                Part::ToolCall {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: json!({"dir": "."}),
                },
            ],
        },
        Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: "c1".into(),
                name: None,
                content: "a.rs".into(),
                is_error: false,
            }],
        },
    ];
    let body = render(&request(None, &messages, &[]));
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[1], reasoning_item(), "verbatim");
    assert_eq!(
        input[2],
        json!({"type": "message", "role": "assistant", "content": "Listing."})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"dir\":\".\"}"})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "c1", "output": "a.rs"})
    );
    assert!(body.get("instructions").is_none());
}

#[test]
fn null_fields_of_a_reasoning_item_are_left_out() {
    let mut recorded = reasoning_item();
    recorded["content"] = Value::Null;
    let messages = [Message {
        role: Role::Assistant,
        parts: vec![
            Part::Reasoning {
                text: String::new(),
                opaque: Some(recorded),
            },
            Part::Text("Done.".into()),
        ],
    }];
    let body = render(&request(None, &messages, &[]));
    assert_eq!(body["input"][0], reasoning_item());
}

#[test]
fn foreign_and_trailing_reasoning_is_dropped() {
    let thinking = json!({"type": "thinking", "thinking": "hm", "signature": "sig"});
    let messages = [
        Message::text(Role::User, "go"),
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Reasoning {
                    text: "hm".into(),
                    opaque: Some(thinking),
                },
                Part::Reasoning {
                    text: "plain".into(),
                    opaque: None,
                },
                Part::Text("Done.".into()),
                Part::Reasoning {
                    text: String::new(),
                    opaque: Some(reasoning_item()),
                },
            ],
        },
    ];
    let body = render(&request(None, &messages, &[]));
    let types: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["message", "message"]);
}

#[test]
fn arguments_are_a_json_object_string() {
    assert_eq!(arguments_json(&json!({"a": 1})), r#"{"a":1}"#);
    assert_eq!(
        arguments_json(&json!(r#"{ "a": 1 }"#)),
        r#"{ "a": 1 }"#,
        "kept as written"
    );
    assert_eq!(
        arguments_json(&json!("*** Begin Patch")),
        r#"{"input":"*** Begin Patch"}"#
    );
    assert_eq!(arguments_json(&Value::Null), "{}");
}

#[test]
fn images_become_input_image_parts() {
    let messages = [Message {
        role: Role::User,
        parts: vec![
            Part::Text("what is this".into()),
            Part::Image("https://example.com/a.png".into()),
            Part::Image("data:image/png;base64,iV".into()),
            Part::Image("shot.png".into()),
        ],
    }];
    let body = render(&request(None, &messages, &[]));
    let content = &body["input"][0]["content"];
    assert_eq!(
        content[1],
        json!({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"})
    );
    assert_eq!(content[2]["image_url"], "data:image/png;base64,iV");
    assert_eq!(
        content[3],
        json!({"type": "input_text", "text": "[image not sent: shot.png]"})
    );
}

#[test]
fn images_of_a_tool_result_follow_it_as_a_user_message() {
    let messages = [Message {
        role: Role::Tool,
        parts: vec![
            Part::ToolResult {
                call_id: "c1".into(),
                name: None,
                content: "shot".into(),
                is_error: false,
            },
            Part::Image("https://example.com/s.png".into()),
        ],
    }];
    let body = render(&request(None, &messages, &[]));
    assert_eq!(body["input"][0]["type"], "function_call_output");
    assert_eq!(body["input"][1]["role"], "user");
    assert_eq!(body["input"][1]["content"][0]["type"], "input_image");
}

#[test]
fn tools_are_flat_and_not_strict() {
    let tools = [ToolSchema {
        name: "ls".into(),
        description: "List.".into(),
        parameters: json!({"type": "object"}),
    }];
    let body = render(&request(None, &[], &tools));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "ls", "description": "List.", "parameters": {"type": "object"}, "strict": false}])
    );
}
