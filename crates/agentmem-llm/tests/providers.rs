//! The clients against loopback servers speaking each provider's protocol:
//! what is sent, what comes back as events, and how failures are handled.

mod support;

use std::time::Duration;

use agentmem::{AgentId, Durability, Event, PrepareRequest, Store, Target, TraceType};
use agentmem_llm::{call_model, Client, Delivery, Endpoint, LlmError, RetryPolicy};
use serde_json::json;
use support::{Loopback, Reply};

/// A fast retry policy, so retries are tested without waiting.
fn quick() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        first_backoff: Duration::from_millis(1),
        max_retry_after: Duration::from_millis(50),
    }
}

/// An endpoint at `server` whose key is in a variable of this test's own.
fn endpoint(target: Target, server: &Loopback, key_env: &str) -> Endpoint {
    std::env::set_var(key_env, "test-key-123");
    Endpoint {
        base_url: format!("{}/v1", server.url),
        api_key_env: key_env.into(),
        ..Endpoint::official(target, "test-model")
    }
}

fn chat_answer(text: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49,
                  "prompt_tokens_details": {"cached_tokens": 0}}
    })
}

fn session_with_question(question: &str) -> (tempfile::TempDir, agentmem::Session) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.ingest(vec![Event::user(question)]).unwrap();
    (dir, session)
}

#[test]
fn openai_chat_sends_the_prepared_payload_and_records_the_answer_with_usage() {
    let server = Loopback::start(vec![Reply::json(200, chat_answer("Paris."))]);
    let client = Client::new(endpoint(Target::OpenAiChat, &server, "AM_TEST_KEY_CHAT")).unwrap();
    let (_dir, mut session) = session_with_question("Capital of France?");
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let expected = session.prepare(&request).unwrap().payload;

    let completion = call_model(&mut session, &client, &request, Delivery::Whole).unwrap();
    assert_eq!(completion.events[0].content, "Paris.");
    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer test-key-123"));
    assert_eq!(sent.body, expected);
    let answer = session.events().last().unwrap();
    assert_eq!(answer.trace_type, TraceType::Assistant);
    let usage = answer.usage.as_ref().unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (42, 7));
    assert!(
        usage.estimated_prompt_tokens.is_some(),
        "paired with our count"
    );
}

#[test]
fn a_rate_limit_is_waited_out_as_the_provider_asks() {
    let server = Loopback::start(vec![
        Reply::json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .with_header("retry-after", "0.01"),
        Reply::json(200, chat_answer("ok")),
    ]);
    let client = Client::new(endpoint(Target::OpenAiChat, &server, "AM_TEST_KEY_429"))
        .unwrap()
        .with_retry_policy(quick());
    let completion = client
        .complete(&json!({"model": "m", "messages": []}))
        .unwrap();
    assert_eq!(completion.events[0].content, "ok");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn server_errors_are_retried_a_bounded_number_of_times() {
    let failure = Reply::json(503, json!({"error": {"message": "overloaded"}}));
    let server = Loopback::start(vec![
        failure.clone(),
        failure.clone(),
        failure.clone(),
        failure,
    ]);
    let client = Client::new(endpoint(Target::OpenAiChat, &server, "AM_TEST_KEY_503"))
        .unwrap()
        .with_retry_policy(quick());
    let error = client.complete(&json!({"messages": []})).unwrap_err();
    assert!(
        matches!(error, LlmError::Server { status: 503, .. }),
        "{error}"
    );
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn a_refused_key_is_an_auth_error_at_once_and_a_missing_key_is_named() {
    let server = Loopback::start(vec![Reply::json(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )]);
    let client = Client::new(endpoint(Target::Anthropic, &server, "AM_TEST_KEY_401"))
        .unwrap()
        .with_retry_policy(quick());
    let error = client.complete(&json!({"messages": []})).unwrap_err();
    assert!(
        matches!(error, LlmError::Auth { status: 401, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("$AM_TEST_KEY_401"));
    assert!(
        !format!("{client:?}").contains("test-key-123"),
        "the key is never printed"
    );
    assert_eq!(server.requests().len(), 1);

    let missing = Endpoint {
        api_key_env: "AM_TEST_KEY_NEVER_SET".into(),
        ..Endpoint::official(Target::Anthropic, "claude")
    };
    let error = Client::new(missing).unwrap_err();
    assert!(error.to_string().contains("$AM_TEST_KEY_NEVER_SET"));
    // A local OpenAI-compatible server needs no key.
    assert!(Client::new(Endpoint::openai_compatible(
        "http://127.0.0.1:9/v1",
        "llama3"
    ))
    .is_ok());
}

#[test]
fn an_overflow_is_recovered_from_and_the_call_retried_once() {
    let server = Loopback::start(vec![
        Reply::json(
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 150000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        ),
        Reply::json(200, chat_answer("Done.")),
    ]);
    let client = Client::new(endpoint(
        Target::OpenAiChat,
        &server,
        "AM_TEST_KEY_OVERFLOW",
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    for t in 0..12 {
        session
            .ingest(vec![
                Event::user(format!("step {t}: refactor module_{t}.rs")),
                Event::assistant(format!("Refactored module_{t}.rs. ").repeat(40)),
            ])
            .unwrap();
    }
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let completion = call_model(&mut session, &client, &request, Delivery::Whole).unwrap();
    assert_eq!(completion.events[0].content, "Done.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].body["messages"].as_array().unwrap().len();
    let retried = requests[1].body["messages"].as_array().unwrap().len();
    assert!(
        retried < first,
        "the retry sent a smaller context ({retried} < {first})"
    );
    assert!(
        session.snapshot().is_some(),
        "recovery compacted the session"
    );
}

#[test]
fn openai_chat_streams_text_and_assembles_tool_calls() {
    let chunk = |delta: serde_json::Value| {
        (
            None,
            json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        )
    };
    let server = Loopback::start(vec![Reply::sse(&[
        chunk(json!({"role": "assistant", "content": "Let me "})),
        chunk(json!({"content": "look."})),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"a.rs\"}"}}]})),
        (
            None,
            json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": [],
                      "usage": {"prompt_tokens": 30, "completion_tokens": 12}}),
        ),
    ])]);
    let client = Client::new(endpoint(Target::OpenAiChat, &server, "AM_TEST_KEY_STREAM")).unwrap();
    let mut pieces = Vec::new();
    let completion = client
        .stream(&json!({"model": "gpt-4o", "messages": []}), &mut |text| {
            pieces.push(text.to_owned())
        })
        .unwrap();
    assert_eq!(pieces, ["Let me ", "look."]);
    let sent = &server.requests()[0].body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    let call = completion
        .events
        .iter()
        .find(|e| e.trace_type == TraceType::ToolCall)
        .unwrap();
    assert_eq!(call.tool_call_id.as_deref(), Some("call_7"));
    assert_eq!(call.tool_args, Some(json!({"path": "a.rs"})));
    assert_eq!(completion.usage.unwrap().prompt_tokens, 30);
}

#[test]
fn anthropic_gets_its_headers_and_its_streamed_answer_becomes_events() {
    let server = Loopback::start(vec![Reply::sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])]);
    let client = Client::new(endpoint(
        Target::Anthropic,
        &server,
        "AM_TEST_KEY_ANTHROPIC",
    ))
    .unwrap();
    let (_dir, mut session) = session_with_question("Say hello");
    let request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    let mut printed = String::new();
    let mut print = |text: &str| printed.push_str(text);
    call_model(
        &mut session,
        &client,
        &request,
        Delivery::Streamed(&mut print),
    )
    .unwrap();
    assert_eq!(printed, "Hello");
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("test-key-123"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["messages"][0]["content"][0]["text"], "Say hello");
    let answer = session.events().last().unwrap();
    assert_eq!(answer.content, "Hello");
    assert_eq!(answer.usage.as_ref().unwrap().completion_tokens, 5);
}

/// An Anthropic answer with the usage of a prompt partly read from the cache.
fn anthropic_answer(text: &str, cache_read: u64) -> Reply {
    Reply::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 20, "cache_creation_input_tokens": 30,
                         "cache_read_input_tokens": cache_read, "output_tokens": 5}}),
    )
}

#[test]
fn anthropic_calls_mark_the_prefix_to_cache_and_the_cached_share_is_recorded() {
    let server = Loopback::start(vec![
        anthropic_answer("Paris.", 0),
        anthropic_answer("Tokyo.", 1_200),
    ]);
    let client = Client::new(endpoint(Target::Anthropic, &server, "AM_TEST_KEY_CACHE")).unwrap();
    let (_dir, mut session) = session_with_question("Capital of France?");
    let mut request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    request.system = Some("Answer in one word.".into());
    call_model(&mut session, &client, &request, Delivery::Whole).unwrap();
    session.ingest(vec![Event::user("And of Japan?")]).unwrap();
    call_model(&mut session, &client, &request, Delivery::Whole).unwrap();

    let mark = json!({"type": "ephemeral"});
    let sent = server.requests();
    assert_eq!(sent[1].body["system"][0]["cache_control"], mark);
    let messages = sent[1].body["messages"].as_array().unwrap();
    let marked: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i]["content"][0].get("cache_control").is_some())
        .collect();
    assert_eq!(
        marked,
        [2],
        "only the end of the conversation: {messages:?}"
    );
    assert_eq!(messages[2]["content"][0]["text"], "And of Japan?");
    let usage = session.events().last().unwrap().usage.clone().unwrap();
    assert_eq!((usage.prompt_tokens, usage.cached_tokens), (1_250, 1_200));
}

#[test]
fn gemini_is_called_at_its_model_url_with_its_key_header() {
    let server = Loopback::start(vec![Reply::json(
        200,
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Bonjour"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "totalTokenCount": 11},
               "modelVersion": "gemini-2.5-flash"}),
    )]);
    let mut endpoint = endpoint(Target::Gemini, &server, "AM_TEST_KEY_GEMINI");
    endpoint.model = "gemini-2.5-flash".into();
    let client = Client::new(endpoint).unwrap();
    let (_dir, mut session) = session_with_question("Say hello in French");
    let request = PrepareRequest::new("gemini-2.5-flash", Target::Gemini);
    call_model(&mut session, &client, &request, Delivery::Whole).unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/models/gemini-2.5-flash:generateContent");
    assert_eq!(sent.header("x-goog-api-key"), Some("test-key-123"));
    assert_eq!(
        sent.body["contents"][0]["parts"][0]["text"],
        "Say hello in French"
    );
    assert_eq!(session.events().last().unwrap().content, "Bonjour");
}

#[test]
fn gemini_and_openai_responses_stream_from_their_own_endpoints() {
    let server = Loopback::start(vec![
        Reply::sse(&[
            (
                None,
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Bon"}]}}]}),
            ),
            (
                None,
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "jour"}]}, "finishReason": "STOP"}],
                          "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2}}),
            ),
        ]),
        Reply::sse(&[
            (
                Some("response.output_text.delta"),
                json!({"type": "response.output_text.delta", "delta": "Hel"}),
            ),
            (
                Some("response.output_text.delta"),
                json!({"type": "response.output_text.delta", "delta": "lo"}),
            ),
            (
                Some("response.completed"),
                json!({"type": "response.completed", "response": {
                "id": "resp_1", "status": "completed", "model": "gpt-4.1",
                "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}],
                "usage": {"input_tokens": 11, "output_tokens": 2}}}),
            ),
        ]),
    ]);
    let mut gemini = endpoint(Target::Gemini, &server, "AM_TEST_KEY_GEMINI_STREAM");
    gemini.model = "gemini-2.5-flash".into();
    let mut pieces = Vec::new();
    let completion = Client::new(gemini)
        .unwrap()
        .stream(&json!({"contents": []}), &mut |t| pieces.push(t.to_owned()))
        .unwrap();
    assert_eq!(pieces, ["Bon", "jour"]);
    assert_eq!(completion.events[0].content, "Bonjour");
    assert_eq!(
        server.requests()[0].path,
        "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );

    let responses = endpoint(
        Target::OpenAiResponses,
        &server,
        "AM_TEST_KEY_RESPONSES_STREAM",
    );
    let mut pieces = Vec::new();
    let completion = Client::new(responses)
        .unwrap()
        .stream(&json!({"model": "gpt-4.1", "input": []}), &mut |t| {
            pieces.push(t.to_owned())
        })
        .unwrap();
    assert_eq!(pieces, ["Hel", "lo"]);
    assert_eq!(completion.events[0].content, "Hello");
    assert_eq!(completion.usage.unwrap().prompt_tokens, 11);
    let sent = &server.requests()[1];
    assert_eq!(
        (sent.path.as_str(), &sent.body["stream"]),
        ("/v1/responses", &json!(true))
    );
}

#[test]
fn an_embedder_sends_its_key_and_a_refusal_names_the_model_and_the_reason() {
    use agentmem::Embedder;
    let server = Loopback::start(vec![Reply::json(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    )]);
    let client = Client::new(endpoint(Target::OpenAiChat, &server, "AM_TEST_KEY_EMBED")).unwrap();
    let embedder = agentmem_llm::OpenAiEmbedder::new(client, "text-embedding-3-small");
    let error = embedder.embed(&["hello"]).unwrap_err();
    assert!(
        matches!(&error, agentmem::Error::Embedder { model, message }
            if model == "text-embedding-3-small" && message.contains("Incorrect API key provided")),
        "{error}"
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(sent.header("authorization"), Some("Bearer test-key-123"));
}
