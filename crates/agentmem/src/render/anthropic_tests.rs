use super::*;

/// The whole body, as `render` makes it for this API.
fn render(request: &RenderRequest<'_>) -> Value {
    super::super::render(super::super::Target::Anthropic, request)
}

fn request<'a>(
    system: Option<&'a str>,
    messages: &'a [Message],
    tools: &'a [ToolSchema],
) -> RenderRequest<'a> {
    RenderRequest {
        model: "claude-test",
        system,
        messages,
        tools,
        max_output_tokens: 1024,
        cache: PromptCache::Off,
        live_context: None,
    }
}

fn assistant(parts: Vec<Part>) -> Message {
    Message {
        role: Role::Assistant,
        parts,
    }
}

fn call(id: &str, name: &str, arguments: Value) -> Part {
    Part::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn result(call_id: &str, content: &str, is_error: bool) -> Message {
    Message {
        role: Role::Tool,
        parts: vec![Part::ToolResult {
            call_id: call_id.into(),
            name: None,
            content: content.into(),
            is_error,
        }],
    }
}

fn thinking() -> Value {
    json!({"type": "thinking", "thinking": "look first", "signature": "sig=="})
}

#[test]
fn all_system_text_goes_to_the_top_level_in_order() {
    let messages = [
        Message::text(Role::System, "from the transcript"),
        Message::text(Role::User, "hi"),
        Message::text(Role::System, "mid-conversation"),
        Message::text(Role::User, "again"),
    ];
    let body = render(&request(Some("prompt"), &messages, &[]));
    assert_eq!(
        body["system"],
        "prompt\n\nfrom the transcript\n\nmid-conversation"
    );
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["model"], "claude-test");
    // The two user messages around the system message merge.
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["messages"][0]["content"][1]["text"], "again");
}

#[test]
fn cache_marks_go_after_the_system_prompt_and_on_the_last_block() {
    let tools = [ToolSchema {
        name: "ls".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }];
    let messages = [
        Message::text(Role::User, "list"),
        assistant(vec![
            Part::Text("Listing.".into()),
            call("c1", "ls", json!({})),
        ]),
        result("c1", "a.rs", false),
    ];
    let marked = RenderRequest {
        cache: PromptCache::On,
        live_context: None,
        ..request(Some("prompt"), &messages, &tools)
    };
    let mark = json!({"type": "ephemeral"});
    let body = render(&marked);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "prompt", "cache_control": mark}])
    );
    assert!(
        body["tools"][0].get("cache_control").is_none(),
        "the system mark covers tools"
    );
    let text = body.to_string();
    assert_eq!(text.matches("cache_control").count(), 2, "{text}");
    assert_eq!(body["messages"][2]["content"][0]["cache_control"], mark);

    let body = render(&RenderRequest {
        system: None,
        ..marked
    });
    assert!(body.get("system").is_none());
    assert_eq!(body["tools"][0]["cache_control"], mark);
}

#[test]
fn a_cache_mark_skips_signed_thinking() {
    let mut message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "answer"},
        thinking(),
    ]});
    mark_cache_breakpoint(&mut message);
    assert!(message["content"][0].get("cache_control").is_some());
    assert!(message["content"][1].get("cache_control").is_none());
}

#[test]
fn no_system_key_without_system_text() {
    let messages = [Message::text(Role::User, "hi")];
    let body = render(&request(None, &messages, &[]));
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
}

#[test]
fn a_transcript_starting_with_the_assistant_gets_a_user_message_first() {
    let messages = [
        Message::text(Role::Assistant, "as I was saying"),
        Message::text(Role::User, "go on"),
    ];
    let body = render(&request(None, &messages, &[]));
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(body["messages"][0]["content"][0]["text"], CONTINUED);
}

#[test]
fn tool_results_of_one_call_turn_share_the_next_user_message_before_its_text() {
    let messages = [
        Message::text(Role::User, "read both"),
        assistant(vec![
            Part::Text("Reading.".into()),
            call("c1", "read", json!({"path": "a"})),
            call("c2", "read", json!({"path": "b"})),
        ]),
        result("c1", "A", false),
        Message::text(Role::User, "and hurry"),
        result("c2", "no such file", true),
    ];
    let body = render(&request(None, &messages, &[]));
    let user = &body["messages"][2];
    assert_eq!(user["role"], "user");
    let content = user["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(
        content[0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": "A"})
    );
    assert_eq!(
        content[1],
        json!({"type": "tool_result", "tool_use_id": "c2", "content": "no such file", "is_error": true})
    );
    assert_eq!(content[2], json!({"type": "text", "text": "and hurry"}));
}

#[test]
fn signed_thinking_goes_first_and_other_reasoning_is_dropped() {
    let messages = [
        Message::text(Role::User, "go"),
        assistant(vec![
            Part::Reasoning {
                text: "plain".into(),
                opaque: None,
            },
            Part::Text("Running.".into()),
            Part::Reasoning {
                text: String::new(),
                opaque: Some(
                    json!({"type": "reasoning", "encrypted_content": "gAAA", "summary": []}),
                ),
            },
            Part::Reasoning {
                text: String::new(),
                opaque: Some(json!({"type": "redacted_thinking", "data": "xyz"})),
            },
            Part::Reasoning {
                text: "look first".into(),
                opaque: Some(thinking()),
            },
            call("c1", "run", json!({})),
        ]),
    ];
    let body = render(&request(None, &messages, &[]));
    let content = body["messages"][1]["content"].as_array().unwrap();
    let types: Vec<&str> = content
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["redacted_thinking", "thinking", "text", "tool_use"]);
    assert_eq!(content[1], thinking(), "sent verbatim");
}

#[test]
fn a_message_of_thinking_alone_is_dropped() {
    let messages = [
        Message::text(Role::User, "go"),
        assistant(vec![Part::Reasoning {
            text: "hm".into(),
            opaque: Some(thinking()),
        }]),
        Message::text(Role::User, "interrupted"),
    ];
    let body = render(&request(None, &messages, &[]));
    let all = body["messages"].as_array().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["content"].as_array().unwrap().len(), 2);
}

#[test]
fn blank_text_is_skipped_and_empty_messages_vanish() {
    let messages = [
        Message::text(Role::User, "hi"),
        assistant(vec![Part::Text(String::new()), call("c1", "ls", json!({}))]),
        result("c1", "", false),
        Message::text(Role::User, "  "),
    ];
    let body = render(&request(None, &messages, &[]));
    let all = body["messages"].as_array().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        all[1]["content"].as_array().unwrap().len(),
        1,
        "no empty text block"
    );
    assert_eq!(
        all[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "c1"}])
    );
}

#[test]
fn tool_input_is_always_an_object() {
    assert_eq!(tool_input(&json!({"a": 1})), json!({"a": 1}));
    assert_eq!(tool_input(&json!(r#"{"a": 1}"#)), json!({"a": 1}));
    assert_eq!(
        tool_input(&json!("*** Begin Patch")),
        json!({"input": "*** Begin Patch"})
    );
    assert_eq!(tool_input(&json!("[1, 2]")), json!({"input": "[1, 2]"}));
    assert_eq!(tool_input(&json!("")), json!({}));
    assert_eq!(tool_input(&Value::Null), json!({}));
    assert_eq!(tool_input(&json!([1])), json!({"input": [1]}));
}

#[test]
fn images_by_url_by_data_uri_and_by_path() {
    let messages = [Message {
        role: Role::User,
        parts: vec![
            Part::Text("look".into()),
            Part::Image("https://example.com/a.png".into()),
            Part::Image("data:image/png;base64,iVBORw0=".into()),
            Part::Image("/tmp/shot.png".into()),
        ],
    }];
    let body = render(&request(None, &messages, &[]));
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[1]["source"],
        json!({"type": "url", "url": "https://example.com/a.png"})
    );
    assert_eq!(
        content[2]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0="})
    );
    assert_eq!(
        content[3],
        json!({"type": "text", "text": "[image not sent: /tmp/shot.png]"})
    );
}

#[test]
fn images_of_a_tool_result_go_inside_it() {
    let mut message = result("c1", "screenshot taken", false);
    message
        .parts
        .push(Part::Image("https://example.com/s.png".into()));
    let messages = [
        Message::text(Role::User, "shoot"),
        assistant(vec![call("c1", "screenshot", json!({}))]),
        message,
    ];
    let body = render(&request(None, &messages, &[]));
    let block = &body["messages"][2]["content"][0];
    assert_eq!(
        block["content"][0],
        json!({"type": "text", "text": "screenshot taken"})
    );
    assert_eq!(block["content"][1]["type"], "image");
}

#[test]
fn data_uris() {
    assert_eq!(
        data_uri("data:image/jpeg;base64,/9j/"),
        Some(("image/jpeg", "/9j/"))
    );
    assert_eq!(
        data_uri("data:image/png;name=a.png;base64,iV"),
        Some(("image/png", "iV"))
    );
    assert_eq!(data_uri("data:image/svg+xml,%3Csvg%3E"), None);
    assert_eq!(data_uri("https://example.com/a.png"), None);
}

#[test]
fn tools_use_input_schema() {
    let tools = [ToolSchema {
        name: "ls".into(),
        description: "List files.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }];
    let body = render(&request(None, &[], &tools));
    assert_eq!(
        body["tools"],
        json!([{"name": "ls", "description": "List files.", "input_schema": {"type": "object", "properties": {}}}])
    );
}
