use super::*;

fn detect(name: &str, text: &str) -> Format {
    detect_format(Path::new(name), text).unwrap()
}

#[test]
fn json_documents_are_told_apart_by_their_items() {
    assert_eq!(detect("x.traj", "not even json"), Format::SweAgent);
    assert_eq!(
        detect(
            "t.json",
            r#"{"history":[{"role":"system","content":"s"}],"trajectory":[]}"#
        ),
        Format::SweAgent
    );
    assert_eq!(
        detect(
            "t.json",
            r#"{"trajectory":[{"action":"ls","observation":"","thought":"t"}]}"#
        ),
        Format::SweAgent
    );
    assert_eq!(
        detect("m.json", r#"[{"role":"user","content":"hi"}]"#),
        Format::OpenAiMessages
    );
    assert_eq!(
        detect("m.json", r#"{"messages":[{"role":"user","content":"hi"}]}"#),
        Format::OpenAiMessages
    );
    assert_eq!(
        detect("o.json", r#"[{"id":0,"source":"user","action":"message"}]"#),
        Format::OpenHands
    );
    assert_eq!(detect("o.json", r#"{"events":[]}"#), Format::OpenHands);
    assert_eq!(
        detect(
            "o.json",
            r#"{"history":[{"id":1,"source":"agent","observation":"run"}]}"#
        ),
        Format::OpenHands
    );
    assert_eq!(
        detect(
            "o.json",
            r#"{"history":[[{"id":1,"source":"agent","action":"run"},{"observation":"run"}]]}"#
        ),
        Format::OpenHands
    );
}

#[test]
fn jsonl_files_are_told_apart_by_their_first_lines() {
    assert_eq!(
        detect("e.jsonl", "{\"trace_type\":\"user\",\"content\":\"a\"}\n"),
        Format::Events
    );
    assert_eq!(
        detect(
            "w.jsonl",
            "{\"turn\":1,\"kind\":\"user\",\"content\":\"a\"}\n"
        ),
        Format::Events
    );
    let codex = "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\n{\"type\":\"event_msg\",\"payload\":{}}\n";
    assert_eq!(detect("r.jsonl", codex), Format::Codex);
    let legacy =
        "{\"id\":\"x\",\"timestamp\":\"t\",\"instructions\":null}\n{\"record_type\":\"state\"}\n";
    assert_eq!(detect("r.jsonl", legacy), Format::Codex);
    let bare_items = "{\"id\":\"x\",\"timestamp\":\"t\"}\n{\"type\":\"message\",\"role\":\"user\",\"content\":[]}\n";
    assert_eq!(detect("r.jsonl", bare_items), Format::Codex);
    let claude = "garbage line\n{\"type\":\"file-history-snapshot\",\"messageId\":\"m\"}\n";
    assert_eq!(detect("s.jsonl", claude), Format::ClaudeCode);
    let one_line =
        r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}"#;
    assert_eq!(detect("s.jsonl", one_line), Format::ClaudeCode);
}

#[test]
fn openhands_sdk_events_are_recognized_as_a_list_and_as_jsonl() {
    let list = r#"[{"id":"e0","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"s"},"tools":[]}]"#;
    assert_eq!(detect("events.json", list), Format::OpenHands);
    let jsonl = concat!(
        r#"{"id":"e0","timestamp":"t","kind":"ConversationStateUpdateEvent","key":"k","value":1}"#,
        "\n",
        r#"{"id":"e1","kind":"ObservationEvent","tool_call_id":"c1","observation":{"content":[]}}"#,
        "\n"
    );
    assert_eq!(detect("events.jsonl", jsonl), Format::OpenHands);
    let one_line =
        r#"{"id":"e1","kind":"MessageEvent","llm_message":{"role":"user","content":[]}}"#;
    assert_eq!(detect("event.jsonl", one_line), Format::OpenHands);
}

#[test]
fn an_unknown_format_names_the_known_ones() {
    let err = detect_format(Path::new("notes.txt"), "hello\nworld\n").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("notes.txt"), "{message}");
    assert!(message.contains("claude-code"), "{message}");
    assert!(detect_format(Path::new("x.json"), "[]").is_err());
}
