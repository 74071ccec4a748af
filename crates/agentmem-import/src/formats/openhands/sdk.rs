//! OpenHands agent-SDK ("V1") event logs: a JSON list of events (or an object
//! holding one under `events`), or one event per line (JSONL).
//!
//! Every event is an object whose `kind` names its type. The mapping:
//!
//! | `kind`                       | events                                                 |
//! |------------------------------|--------------------------------------------------------|
//! | `SystemPromptEvent`          | `system` from `system_prompt.text` (the tool definitions in `tools` are not conversation and are left out) |
//! | `MessageEvent`               | reasoning, then `user`/`assistant`/`system` by `llm_message.role` from its text parts (and `extended_content`), images in `media` |
//! | `ActionEvent`                | reasoning, an assistant event with its `thought`, then a `tool_call` |
//! | `ObservationEvent`           | `tool_result` of its `tool_call_id`; `tool_error` when `observation.is_error` or a non-zero `exit_code` |
//! | `UserRejectObservation`      | `tool_error` of its call, with the `rejection_reason`  |
//! | `AgentErrorEvent`            | `tool_error` of its call, with the `error`             |
//! | `CondensationSummaryEvent`, `Condensation` with a `summary` | `summary`     |
//!
//! Reasoning comes from the `thinking_blocks` of an action or of a message's
//! `llm_message` (each block kept verbatim in `opaque`: a signature must go
//! back to the provider unchanged), else from a `responses_reasoning_item`
//! (kept verbatim too: it may be encrypted), else from `reasoning_content`.
//! Only one of them is used: they are views of the same reasoning.
//!
//! A tool call's arguments are the model's own: `tool_call.arguments` (a JSON
//! string) parsed, else the `action` without its `kind` discriminator.
//!
//! Bookkeeping (`ConversationStateUpdateEvent`, `PauseEvent`,
//! `CondensationRequest`, …) and conversation-level errors are reported as
//! skipped. `llm_response_id` becomes the `correlation_id`, grouping the
//! parallel tool calls of one response. Ids are `oh-<id>`, with a suffix for
//! the extra events of one source event (`-thought`, `-thinking-<n>`,
//! `-reasoning`).

use agentmem::event::{Event, Media, TraceType};
use serde_json::{Map, Value};

use super::source::{timestamp, Source};
use crate::formats::openai_messages::content_text;
use crate::imported::{Imported, Skipped};
use crate::record::verbatim_reasoning;

/// The `kind` values of the SDK's events, which tell its logs apart.
const KINDS: [&str; 14] = [
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "UserRejectObservation",
    "AgentErrorEvent",
    "Condensation",
    "CondensationSummaryEvent",
    "CondensationRequest",
    "ConversationStateUpdateEvent",
    "ConversationErrorEvent",
    "PauseEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
];

/// The events made from one SDK event, in order, each with the suffix its id
/// takes after `oh-<id>` (`""` for the main event).
type Mapped = Result<Vec<(String, Event)>, String>;

/// Whether `map` is an SDK event: its `kind` is one the SDK writes.
pub(crate) fn is_sdk_event(map: &Map<String, Value>) -> bool {
    map.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| KINDS.contains(&kind))
}

/// Whether `text` is JSONL of SDK events: its first line that parses is
/// one (a torn or corrupt first line does not hide the rest).
pub(super) fn is_sdk_jsonl(text: &str) -> bool {
    text.lines()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .as_ref()
        .and_then(Value::as_object)
        .is_some_and(is_sdk_event)
}

/// A list of SDK events; skipped records are counted from 1 by list position.
pub(super) fn parse_list(events: &[Value]) -> Imported {
    let mut imported = Imported::default();
    for (index, record) in events.iter().enumerate() {
        import_record(&mut imported, index + 1, record);
    }
    imported
}

/// SDK events one per line; skipped records are counted by line number.
pub(super) fn parse_jsonl(text: &str) -> Imported {
    let mut imported = Imported::default();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(record) => import_record(&mut imported, index + 1, &record),
            Err(e) => {
                imported.records += 1;
                imported
                    .skipped
                    .push(Skipped::malformed(index + 1, format!("not JSON: {e}")));
            }
        }
    }
    imported
}

fn import_record(imported: &mut Imported, position: usize, record: &Value) {
    imported.records += 1;
    let Some(map) = record.as_object() else {
        let skipped = Skipped::malformed(position, "not a JSON object");
        return imported.skipped.push(skipped);
    };
    let source = Source::new(map, position, record);
    match map_event(&source).map(|events| source.stamp(events)) {
        Ok(events) => imported.events.extend(events),
        Err(reason) => imported.skipped.push(Skipped::left_out(position, reason)),
    }
}

/// What the agent-SDK reads of a source event beyond the shared accessors.
impl<'a> Source<'a> {
    /// The string under `key`, when it is one and not empty.
    fn non_empty(&self, key: &str) -> Option<&'a str> {
        self.map
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    }

    fn tool_call_id(&self) -> Option<&'a str> {
        self.non_empty("tool_call_id")
    }

    /// Gives each event its id, the event's time and its response's id.
    fn stamp(&self, events: Vec<(String, Event)>) -> Vec<Event> {
        let ts = timestamp(self.text("timestamp"));
        let response = self.map.get("llm_response_id").and_then(Value::as_str);
        events
            .into_iter()
            .map(|(suffix, event)| {
                let mut event = event
                    .with_id(format!("{}{suffix}", self.base_id))
                    .with_ts(ts);
                event.correlation_id = response.map(str::to_owned);
                event
            })
            .collect()
    }
}

fn map_event(source: &Source<'_>) -> Mapped {
    let main = |event: Event| vec![(String::new(), event)];
    let kind = source.text("kind");
    match kind {
        "SystemPromptEvent" => system_prompt(source).map(main),
        "MessageEvent" => message(source),
        "ActionEvent" => action(source),
        "ObservationEvent" => observation(source).map(main),
        "UserRejectObservation" => rejection(source).map(main),
        "AgentErrorEvent" => agent_error(source).map(main),
        "Condensation" | "CondensationSummaryEvent" => match source.text("summary") {
            summary if summary.trim().is_empty() => Err(format!("a {kind} without a summary")),
            summary => Ok(main(Event::new(TraceType::Summary, summary))),
        },
        "ConversationErrorEvent" => Err(format!(
            "a conversation error ({}), not conversation: {}",
            source.text("code"),
            source.text("detail")
        )),
        "CondensationRequest"
        | "ConversationStateUpdateEvent"
        | "PauseEvent"
        | "TokenEvent"
        | "LLMCompletionLogEvent" => Err(format!("agent bookkeeping ({kind}), not conversation")),
        "" => Err("an event without a \"kind\"".into()),
        other => Err(format!("an unknown event kind {other:?}")),
    }
}

/// `system_prompt` is a text content part (`{type, text}`), or a string.
fn system_prompt(source: &Source<'_>) -> Result<Event, String> {
    let prompt = source.map.get("system_prompt");
    let text = match prompt {
        Some(Value::String(text)) => text.as_str(),
        Some(part) => part.get("text").and_then(Value::as_str).unwrap_or_default(),
        None => "",
    };
    if text.trim().is_empty() {
        return Err("a system prompt without text".into());
    }
    Ok(Event::system(text))
}

/// A `MessageEvent`: the reasoning of its `llm_message`, then its text.
fn message(source: &Source<'_>) -> Mapped {
    let Some(message) = source.map.get("llm_message").and_then(Value::as_object) else {
        return Err("a message without an \"llm_message\"".into());
    };
    let mut events = reasoning_events(message);
    let parts: Vec<Value> = [message.get("content"), source.map.get("extended_content")]
        .into_iter()
        .flatten()
        .flat_map(parts_of)
        .collect();
    let text = content_text(Some(&Value::Array(parts.clone())));
    let media = image_media(&parts);
    if !text.trim().is_empty() || media.is_some() {
        let mut event = Event::new(message_type(message, source), text);
        event.media = media;
        events.push((String::new(), event));
    }
    if events.is_empty() {
        return Err("an empty message".into());
    }
    Ok(events)
}

/// Content as a list of parts: a string is one text part.
fn parts_of(content: &Value) -> Vec<Value> {
    match content {
        Value::Array(parts) => parts.clone(),
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

/// The message's `role`, else who its `source` says sent it.
fn message_type(message: &Map<String, Value>, source: &Source<'_>) -> TraceType {
    let role = message.get("role").and_then(Value::as_str);
    match (role, source.text("source")) {
        (Some("system"), _) => TraceType::System,
        (Some("user"), _) | (None, "user") => TraceType::User,
        _ => TraceType::Assistant,
    }
}

/// An `ActionEvent`: its reasoning, its thought, then the call.
fn action(source: &Source<'_>) -> Mapped {
    let mut events = reasoning_events(source.map);
    let thought = content_text(source.map.get("thought"));
    if !thought.trim().is_empty() {
        events.push(("-thought".into(), Event::assistant(thought)));
    }
    let tool_call = source.map.get("tool_call");
    let field = |key: &str| {
        tool_call
            .and_then(|call| call.get(key))
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    };
    let call_id = source
        .tool_call_id()
        .or_else(|| field("id"))
        .unwrap_or(&source.base_id);
    let action_kind = source
        .map
        .get("action")
        .and_then(|action| action.get("kind"))
        .and_then(Value::as_str);
    let tool_name = field("name")
        .or_else(|| source.non_empty("tool_name"))
        .or(action_kind)
        .ok_or("an action naming no tool (no \"tool_call\", \"tool_name\" or \"action.kind\")")?;
    let args = call_arguments(source.map);
    events.push((String::new(), Event::tool_call(call_id, tool_name, args)));
    Ok(events)
}

/// What the model called with: `tool_call.arguments` (a JSON string, parsed),
/// else the `action` the SDK made of them, without its `kind`, which names
/// the SDK's action class rather than an argument.
fn call_arguments(map: &Map<String, Value>) -> Value {
    let from_model = match map.get("tool_call").and_then(|call| call.get("arguments")) {
        Some(Value::String(arguments)) => agentmem::json::parse_within_nesting(arguments),
        Some(arguments @ Value::Object(_)) => Some(arguments.clone()),
        _ => None,
    };
    from_model.unwrap_or_else(|| {
        let mut action = map
            .get("action")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        action.remove("kind");
        Value::Object(action)
    })
}

/// An `ObservationEvent`: the result of the call its `tool_call_id` names.
fn observation(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "an observation")?;
    let observation = source.map.get("observation");
    let parts = observation
        .and_then(|o| o.get("content"))
        .map(parts_of)
        .unwrap_or_default();
    let text = content_text(Some(&Value::Array(parts.clone())));
    let mut event = match observation {
        Some(o) if is_error(o) => Event::tool_error(call_id, text),
        _ => Event::tool_result(call_id, text),
    };
    event.media = image_media(&parts);
    Ok(event)
}

/// `is_error`, or a command that exited non-zero (`exit_code`, or
/// `metadata.exit_code`; `-1` is a command that timed out or still runs,
/// which the model has to deal with as a failure too).
fn is_error(observation: &Value) -> bool {
    let flagged = observation
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let exit_code = observation
        .get("exit_code")
        .or_else(|| observation.get("metadata")?.get("exit_code"))
        .and_then(Value::as_i64);
    flagged || exit_code.is_some_and(|code| code != 0)
}

/// A `UserRejectObservation`: the call failed because the user refused it.
fn rejection(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "a rejection")?;
    let text = match source.text("rejection_reason").trim() {
        "" => "Rejected by the user.".to_owned(),
        reason => format!("Rejected by the user: {reason}"),
    };
    Ok(Event::tool_error(call_id, text))
}

/// An `AgentErrorEvent`: the call could not run (unknown tool, bad arguments).
fn agent_error(source: &Source<'_>) -> Result<Event, String> {
    let call_id = answered_call(source, "an agent error")?;
    Ok(Event::tool_error(call_id, source.text("error")))
}

fn answered_call<'a>(source: &Source<'a>, what: &str) -> Result<&'a str, String> {
    source
        .tool_call_id()
        .ok_or_else(|| format!("{what} without a \"tool_call_id\" answers no tool call"))
}

/// The reasoning of an action or message, from the first of its
/// `thinking_blocks`, `responses_reasoning_item` and `reasoning_content` that
/// is present: they are views of the same reasoning, so only one is kept.
fn reasoning_events(map: &Map<String, Value>) -> Vec<(String, Event)> {
    let blocks: Vec<&Value> = map
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.is_object())
        .collect();
    if !blocks.is_empty() {
        return blocks
            .into_iter()
            .enumerate()
            .map(|(index, block)| {
                let text = block.get("thinking").and_then(Value::as_str);
                let event = verbatim_reasoning(text.unwrap_or_default(), block);
                (format!("-thinking-{index}"), event)
            })
            .collect();
    }
    if let Some(item) = map
        .get("responses_reasoning_item")
        .filter(|item| item.is_object())
    {
        let summary = content_text(item.get("summary"));
        return vec![("-reasoning".into(), verbatim_reasoning(&summary, item))];
    }
    match map.get("reasoning_content").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => {
            vec![("-reasoning".into(), Event::new(TraceType::Reasoning, text))]
        }
        _ => Vec::new(),
    }
}

/// The images of content parts (`{type: "image", image_urls: [...]}`).
fn image_media(parts: &[Value]) -> Option<Media> {
    let images: Vec<String> = parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|part| part.get("image_urls").and_then(Value::as_array))
        .flatten()
        .filter_map(|url| url.as_str().map(str::to_owned))
        .collect();
    (!images.is_empty()).then(|| Media {
        images,
        ..Media::default()
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;
    use agentmem::tool_interaction::{tool_interactions, ToolStatus};

    fn kinds(imported: &Imported) -> Vec<TraceType> {
        imported.events.iter().map(|e| e.trace_type).collect()
    }

    /// A short session: prompt, task, a signed-thinking action with a failing
    /// command, a parallel pair of calls (one refused by the user, one whose
    /// arguments the SDK could not use), a condensation and the answer.
    const SESSION: &str = r#"[
      {"id":"a1f0","timestamp":"2025-11-02T08:00:00.000000","source":"agent","kind":"SystemPromptEvent",
       "system_prompt":{"type":"text","text":"You are a careful coding agent."},"tools":[{"name":"terminal"}]},
      {"id":"a1f1","timestamp":"2025-11-02T08:00:01.000000","source":"user","kind":"MessageEvent",
       "llm_message":{"role":"user","content":[{"type":"text","text":"Why does test_parse fail?"},{"type":"image","image_urls":["https://example.test/trace.png"]}],"thinking_blocks":[]},
       "activated_skills":[],"extended_content":[{"type":"text","text":"<repo>parser</repo>"}]},
      {"id":"a1f2","timestamp":"2025-11-02T08:00:02.000000","source":"environment","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"running"},
      {"id":"a1f3","timestamp":"2025-11-02T08:00:05.000000","source":"agent","kind":"ActionEvent",
       "thought":[{"type":"text","text":"Run the failing test first."}],"reasoning_content":"The user wants the cause.",
       "thinking_blocks":[{"type":"thinking","thinking":"The user wants the cause.","signature":"sig-AbC="}],
       "action":{"kind":"TerminalAction","command":"pytest -q tests/test_parse.py","is_input":false,"timeout":null,"reset":false},
       "tool_name":"terminal","tool_call_id":"toolu_01","tool_call":{"id":"toolu_01","name":"terminal","arguments":"{\"command\": \"pytest -q tests/test_parse.py\"}"},
       "llm_response_id":"resp_1","security_risk":"LOW"},
      {"id":"a1f4","timestamp":"2025-11-02T08:00:09.000000","source":"environment","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"toolu_01",
       "observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"1 failed"}],"is_error":false,"command":"pytest -q tests/test_parse.py","exit_code":1,"metadata":{"exit_code":1}},
       "action_id":"a1f3"},
      {"id":"a1f5","timestamp":"2025-11-02T08:00:12.000000","source":"agent","kind":"ActionEvent","thought":[],"reasoning_content":"Two reads at once.",
       "action":{"kind":"FileEditorAction","command":"view","path":"/work/parser.py"},
       "tool_name":"file_editor","tool_call_id":"toolu_02","tool_call":{"id":"toolu_02","name":"file_editor","arguments":"{\"command\": \"view\", \"path\": \"/work/parser.py\"}"},
       "llm_response_id":"resp_2"},
      {"id":"a1f6","timestamp":"2025-11-02T08:00:12.000000","source":"agent","kind":"ActionEvent","thought":[],
       "action":{"kind":"TerminalAction","command":"rm -rf build"},
       "tool_name":"terminal","tool_call_id":"toolu_03","tool_call":{"id":"toolu_03","name":"terminal","arguments":"{\"command\": \"rm -rf build\""},
       "llm_response_id":"resp_2"},
      {"id":"a1f7","timestamp":"2025-11-02T08:00:13.000000","source":"user","kind":"UserRejectObservation","tool_name":"terminal","tool_call_id":"toolu_03",
       "rejection_reason":"do not delete the build","action_id":"a1f6"},
      {"id":"a1f8","timestamp":"2025-11-02T08:00:14.000000","source":"agent","kind":"AgentErrorEvent","tool_name":"file_editor","tool_call_id":"toolu_02",
       "error":"Path /work/parser.py does not exist."},
      {"id":"a1f9","timestamp":"2025-11-02T08:00:20.000000","source":"environment","kind":"Condensation","forgotten_event_ids":["a1f3","a1f4"],"summary":"The test fails on trailing commas.","summary_offset":1},
      {"id":"a1fa","timestamp":"2025-11-02T08:00:21.000000","source":"user","kind":"PauseEvent"},
      {"id":"a1fb","timestamp":"2025-11-02T08:00:30.000000","source":"agent","kind":"MessageEvent",
       "llm_message":{"role":"assistant","content":[{"type":"text","text":"The tokenizer rejects trailing commas."}]},"llm_response_id":"resp_3"}
    ]"#;

    #[test]
    fn sdk_events_map_to_a_conversation() {
        let imported = parse(SESSION).unwrap();
        assert_eq!(
            kinds(&imported),
            [
                TraceType::System,
                TraceType::User,
                TraceType::Reasoning,
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult,
                TraceType::Reasoning,
                TraceType::ToolCall,
                TraceType::ToolCall,
                TraceType::ToolResult,
                TraceType::ToolResult,
                TraceType::Summary,
                TraceType::Assistant,
            ]
        );
        assert_eq!(imported.records, 12);
        let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
        assert_eq!(skipped, [3, 11]);
        assert!(imported.skipped[1].reason.contains("PauseEvent"));

        let user = &imported.events[1];
        assert_eq!(
            user.content,
            "Why does test_parse fail?\n<repo>parser</repo>"
        );
        assert_eq!(user.media.as_ref().unwrap().images.len(), 1);
        assert!((user.ts - 1762070401.0).abs() < 1e-3);

        // Signed thinking is kept verbatim; reasoning_content repeats it and is not kept again.
        let thinking = &imported.events[2];
        assert_eq!(thinking.id, "oh-a1f3-thinking-0");
        assert_eq!(thinking.opaque.as_ref().unwrap()["signature"], "sig-AbC=");
        assert_eq!(imported.events[3].id, "oh-a1f3-thought");
        assert_eq!(imported.events[6].content, "Two reads at once.");
        assert!(imported.events[6].opaque.is_none());

        let call = &imported.events[4];
        assert_eq!(call.id, "oh-a1f3");
        assert_eq!(
            call.tool_args,
            Some(serde_json::json!({"command": "pytest -q tests/test_parse.py"}))
        );
        // Arguments that are not JSON: the action, without its kind.
        assert_eq!(
            imported.events[8].tool_args,
            Some(serde_json::json!({"command": "rm -rf build"}))
        );
        assert_eq!(imported.events[7].correlation_id.as_deref(), Some("resp_2"));
        assert_eq!(imported.events[8].correlation_id.as_deref(), Some("resp_2"));

        let view = tool_interactions(&imported.events);
        let status: Vec<(&str, ToolStatus)> = view
            .iter()
            .map(|i| (i.tool_call_id.as_str(), i.status))
            .collect();
        assert_eq!(
            status,
            [
                ("toolu_01", ToolStatus::Error),
                ("toolu_02", ToolStatus::Error),
                ("toolu_03", ToolStatus::Error),
            ]
        );
        assert_eq!(view[0].tool_name, "terminal");
        assert_eq!(
            view[2].result.as_deref(),
            Some("Rejected by the user: do not delete the build")
        );
        assert_eq!(
            imported.events[12].content,
            "The tokenizer rejects trailing commas."
        );
    }

    #[test]
    fn jsonl_and_single_event_files_import() {
        let jsonl = concat!(
            r#"{"id":"b0","timestamp":"2025-11-02T09:00:00","source":"user","kind":"MessageEvent","llm_message":{"role":"user","content":[{"type":"text","text":"list files"}]}}"#,
            "\n",
            r#"{"id":"b1","timestamp":"2025-11-02T09:00:01","source":"agent","kind":"ActionEvent","thought":[],"action":{"kind":"TerminalAction","command":"ls"},"tool_name":"terminal","tool_call_id":"c1"}"#,
            "\n{truncated\n\n",
            r#"{"id":"b3","timestamp":"2025-11-02T09:00:02","source":"environment","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"c1","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"a.py"}],"is_error":false,"exit_code":0}}"#,
            "\n"
        );
        let imported = parse(jsonl).unwrap();
        assert_eq!(
            kinds(&imported),
            [TraceType::User, TraceType::ToolCall, TraceType::ToolResult]
        );
        assert_eq!(
            imported.events[1].tool_args,
            Some(serde_json::json!({"command": "ls"}))
        );
        assert_eq!(imported.records, 4);
        assert_eq!(imported.skipped[0].line, 3);
        let view = tool_interactions(&imported.events);
        assert_eq!(view[0].status, ToolStatus::Success);

        let torn_first = format!("{{\"id\":\"b\n{jsonl}");
        let imported = parse(&torn_first).unwrap();
        assert_eq!(imported.events.len(), 3, "a torn first line hides nothing");
        assert_eq!(imported.skipped[0].line, 1);

        let single = r#"{"id":"s0","source":"agent","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"Be brief."},"tools":[]}"#;
        let imported = parse(single).unwrap();
        assert_eq!(kinds(&imported), [TraceType::System]);
        assert_eq!(imported.events[0].id, "oh-s0");
    }

    #[test]
    fn events_answering_no_call_and_unknown_kinds_are_skipped_with_reasons() {
        let text = r#"{"events":[
          {"id":"e0","source":"agent","kind":"AgentErrorEvent","tool_name":"terminal","error":"boom"},
          {"id":"e1","source":"environment","kind":"ConversationErrorEvent","code":"LLMError","detail":"rate limited"},
          {"id":"e2","source":"agent","kind":"Condensation","forgotten_event_ids":[]},
          {"id":"e3","source":"agent","kind":"MessageEvent","llm_message":{"role":"assistant","content":[]}},
          {"id":"e3b","source":"agent","kind":"ActionEvent","thought":[],"action":null},
          {"id":"e4","source":"agent","kind":"ActionEvent","action":{"kind":"ThinkAction"},"thinking_blocks":[{"type":"redacted_thinking","data":"enc=="}],"tool_name":"think","tool_call_id":"t9","tool_call":{"id":"t9","name":"think","arguments":"{\"thought\": \"check\"}"}}
        ]}"#;
        let imported = parse(text).unwrap();
        assert_eq!(
            kinds(&imported),
            [TraceType::Reasoning, TraceType::ToolCall]
        );
        assert_eq!(imported.events[0].opaque.as_ref().unwrap()["data"], "enc==");
        let reasons: Vec<&str> = imported.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert!(reasons[0].contains("answers no tool call"), "{reasons:?}");
        assert!(reasons[1].contains("rate limited"), "{reasons:?}");
        assert!(reasons[2].contains("without a summary"), "{reasons:?}");
        assert!(reasons[3].contains("empty message"), "{reasons:?}");
        assert!(reasons[4].contains("naming no tool"), "{reasons:?}");
    }

    #[test]
    fn text_that_is_neither_json_nor_sdk_jsonl_says_what_was_expected() {
        let err = parse("{\"id\":1}\n{\"id\":2}\n").unwrap_err();
        assert!(
            err.starts_with("not JSON") && err.contains("JSONL"),
            "{err}"
        );
    }
}
