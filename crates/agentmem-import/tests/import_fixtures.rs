//! Every importer against a realistic transcript in `tests/fixtures/`:
//! the format is detected from the file, every tool call pairs with exactly one
//! result, the events per trace type are exactly those the source holds, usage
//! is kept where the source reported it, and a Claude Code session that grew
//! keeps the ids of the events already imported.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use agentmem::base::tool_interaction::tool_interactions;
use agentmem::{Event, ToolStatus, TraceType};
use agentmem_import::{self as import, Format, Imported};

/// Detects and parses one fixture, checking what holds for every import.
fn import_fixture(name: &str, expected: Format) -> Imported {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", name]
        .iter()
        .collect();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let format = import::detect_format(&path, &text).unwrap();
    assert_eq!(format, expected, "{name}: detected format");
    let imported = import::parse(format, &path, &text).unwrap();
    let ids: HashSet<&str> = imported.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), imported.events.len(), "{name}: ids are unique");
    assert!(!ids.contains(""), "{name}: every event has an id");
    let source = format!("import:{}", format.name());
    assert!(
        imported.events.iter().all(|e| e.source_event == source),
        "{name}: source_event"
    );
    imported
}

/// Asserts the number of events of each trace type; types not listed must be absent.
fn assert_counts(name: &str, imported: &Imported, expected: &[(TraceType, usize)]) {
    let mut actual: BTreeMap<&str, usize> = BTreeMap::new();
    for event in &imported.events {
        *actual.entry(event.trace_type.as_str()).or_default() += 1;
    }
    let wanted: BTreeMap<&str, usize> = expected
        .iter()
        .map(|(t, n)| (t.as_str(), *n))
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(actual, wanted, "{name}: events per trace type");
}

/// Asserts every tool call has exactly one result and every result a call,
/// except the calls in `pending`, which must have none.
fn assert_paired(name: &str, events: &[Event], pending: &[&str]) {
    let mut results: HashMap<&str, usize> = HashMap::new();
    let mut calls: HashSet<&str> = HashSet::new();
    for event in events {
        let call_id = event.tool_call_id.as_deref();
        match event.trace_type {
            TraceType::ToolCall => assert!(
                calls.insert(call_id.unwrap()),
                "{name}: call {call_id:?} twice"
            ),
            TraceType::ToolResult => *results.entry(call_id.unwrap()).or_default() += 1,
            TraceType::User
            | TraceType::Assistant
            | TraceType::System
            | TraceType::Reasoning
            | TraceType::Summary
            | TraceType::TurnAborted
            | TraceType::WorkingMemory => {}
        }
    }
    for call in &calls {
        let expected = usize::from(!pending.contains(call));
        assert_eq!(
            results.get(call).copied().unwrap_or(0),
            expected,
            "{name}: results of call {call}"
        );
    }
    for result in results.keys() {
        assert!(
            calls.contains(result),
            "{name}: result for unknown call {result}"
        );
    }
    for call in pending {
        assert!(
            calls.contains(call),
            "{name}: the pending call {call} exists"
        );
    }
}

fn with_usage(imported: &Imported) -> Vec<&Event> {
    imported
        .events
        .iter()
        .filter(|e| e.usage.is_some())
        .collect()
}

fn tagged<'a>(imported: &'a Imported, tag: &str) -> Vec<&'a Event> {
    imported
        .events
        .iter()
        .filter(|e| e.tags.iter().any(|t| t == tag))
        .collect()
}

#[test]
fn claude_code_session() {
    let name = "claude-code-turn-1.jsonl";
    let imported = import_fixture(name, Format::ClaudeCode);
    assert_counts(
        name,
        &imported,
        &[
            // The session title (a `summary` line), display-only.
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Reasoning, 1),
            (TraceType::Assistant, 2),
            (TraceType::ToolCall, 1),
            (TraceType::ToolResult, 1),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    assert_eq!(imported.records, 8);
    assert_eq!(imported.skipped.len(), 1, "the file-history-snapshot");
    assert_eq!(
        imported.source_session_id.as_deref(),
        Some("7f3c2a1e-5b4d-4c8e-9a6f-1d2e3f4a5b6c")
    );
    // Each model response's usage is kept once, on its last event.
    let responses: std::collections::HashSet<_> = imported
        .events
        .iter()
        .filter_map(|e| e.correlation_id.as_deref())
        .collect();
    assert_eq!(with_usage(&imported).len(), responses.len());
    let call = imported
        .events
        .iter()
        .find(|e| e.trace_type == TraceType::ToolCall)
        .unwrap();
    let usage = call.usage.as_ref().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (4 + 2148 + 11930, 131, 11930)
    );
    assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-20250514"));
    let thinking = imported
        .events
        .iter()
        .find(|e| e.trace_type == TraceType::Reasoning)
        .unwrap();
    assert!(thinking.opaque.as_ref().unwrap()["signature"].is_string());
    assert_eq!(
        tool_interactions(&imported.events)[0].status,
        ToolStatus::Error
    );
}

#[test]
fn claude_code_session_that_grew_keeps_its_ids() {
    let first = import_fixture("claude-code-turn-1.jsonl", Format::ClaudeCode);
    let name = "claude-code-turn-2.jsonl";
    let grown = import_fixture(name, Format::ClaudeCode);
    assert_counts(
        name,
        &grown,
        &[
            (TraceType::User, 2),
            // The meta line, a system line and the session title.
            (TraceType::System, 3),
            (TraceType::Reasoning, 1),
            (TraceType::Assistant, 5),
            (TraceType::ToolCall, 4),
            (TraceType::ToolResult, 4),
        ],
    );
    assert_paired(name, &grown.events, &[]);
    assert_eq!(grown.records, 23);
    // Two file-history snapshots, a queue operation and a content-less system line.
    assert_eq!(grown.skipped.len(), 4);
    assert_eq!(tagged(&grown, "sidechain").len(), 4);
    assert_eq!(tagged(&grown, "meta").len(), 1);

    let grown_by_id: HashMap<&str, &Event> =
        grown.events.iter().map(|e| (e.id.as_str(), e)).collect();
    for event in &first.events {
        assert_eq!(
            grown_by_id.get(event.id.as_str()),
            Some(&event),
            "event {} unchanged",
            event.id
        );
    }
    assert_eq!(grown.events[..first.events.len()], first.events[..]);
    assert_eq!(grown.events.len() - first.events.len(), 12, "new events");
}

#[test]
fn codex_rollout() {
    let name = "codex-rollout.jsonl";
    let imported = import_fixture(name, Format::Codex);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 2),
            (TraceType::User, 2),
            (TraceType::Reasoning, 2),
            (TraceType::ToolCall, 4),
            (TraceType::ToolResult, 4),
            (TraceType::Assistant, 1),
            (TraceType::TurnAborted, 1),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    assert_eq!(imported.records, 26);
    // turn_context, three event_msg duplicates of response items plus one of
    // reasoning, and a rate-limits-only token count; the web search is kept
    // as a call and its result.
    assert_eq!(imported.skipped.len(), 6);
    let search = tool_interactions(&imported.events)
        .into_iter()
        .find(|i| i.tool_name == "web_search")
        .expect("the web search is imported");
    assert_eq!(
        search.arguments["query"],
        "rust E0432 unresolved import after renaming module"
    );
    assert_eq!(
        imported.source_session_id.as_deref(),
        Some("0199a2b4-6c1e-7d3f-9e80-5b7c2d4f6a18")
    );
    assert_eq!(tagged(&imported, "injected_context").len(), 2);
    // Four token counts, each on the model event just before it.
    let kinds: Vec<TraceType> = with_usage(&imported).iter().map(|e| e.trace_type).collect();
    assert_eq!(
        kinds,
        [
            TraceType::ToolCall,
            TraceType::ToolCall,
            TraceType::ToolCall,
            TraceType::Assistant
        ]
    );
    let usage = with_usage(&imported)[0].usage.clone().unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (5634, 187, 4992)
    );
    assert_eq!(usage.model.as_deref(), Some("gpt-5-codex"));
    let statuses: Vec<ToolStatus> = tool_interactions(&imported.events)
        .iter()
        .map(|i| i.status)
        .collect();
    assert_eq!(
        statuses,
        [
            ToolStatus::Success,
            ToolStatus::Success,
            ToolStatus::Error,
            ToolStatus::Success
        ]
    );
    let reasoning = imported
        .events
        .iter()
        .filter(|e| e.trace_type == TraceType::Reasoning);
    assert!(reasoning
        .clone()
        .all(|e| e.opaque.as_ref().unwrap()["encrypted_content"].is_string()));
}

#[test]
fn codex_legacy_rollout() {
    let name = "codex-legacy.jsonl";
    let imported = import_fixture(name, Format::Codex);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Reasoning, 1),
            (TraceType::ToolCall, 1),
            (TraceType::ToolResult, 1),
            (TraceType::Assistant, 1),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    assert_eq!(
        (imported.records, imported.skipped.len()),
        (10, 4),
        "four state records skipped"
    );
    assert_eq!(
        imported.source_session_id.as_deref(),
        Some("5d2c8e41-7a3b-4f6e-9c1d-2b8a7f6e5d4c")
    );
    assert!(
        with_usage(&imported).is_empty(),
        "the old format reported no usage"
    );
}

#[test]
fn swe_agent_trajectory() {
    let name = "swe-agent.traj";
    let imported = import_fixture(name, Format::SweAgent);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Assistant, 5),
            (TraceType::ToolCall, 5),
            (TraceType::ToolResult, 5),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    assert_eq!(
        (imported.records, imported.skipped.len()),
        (13, 1),
        "the demonstration is skipped"
    );
    assert!(imported.source_session_id.is_none());
    assert!(
        with_usage(&imported).is_empty(),
        "model_stats only totals the run"
    );
    let view = tool_interactions(&imported.events);
    assert_eq!(view[1].tool_name, "str_replace_editor");
    assert_eq!(view[1].arguments["command"], "view");
}

#[test]
fn swe_agent_legacy_trajectory() {
    let name = "swe-agent-legacy.traj";
    let imported = import_fixture(name, Format::SweAgent);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Assistant, 4),
            (TraceType::ToolCall, 4),
            (TraceType::ToolResult, 4),
        ],
    );
    // SWE-agent 0.x ends the history on `submit` without an observation; the
    // diff it returned is the last trajectory step's observation.
    assert_paired(name, &imported.events, &[]);
    assert_eq!((imported.records, imported.skipped.len()), (11, 1));
    let names: Vec<String> = tool_interactions(&imported.events)
        .into_iter()
        .map(|i| i.tool_name)
        .collect();
    assert_eq!(names, ["create", "edit", "python", "submit"]);
    let submit = &tool_interactions(&imported.events)[3];
    assert!(submit.result.as_deref().unwrap().contains("diff --git"));
}

#[test]
fn openhands_events() {
    let name = "openhands.json";
    let imported = import_fixture(name, Format::OpenHands);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Assistant, 4),
            (TraceType::ToolCall, 6),
            (TraceType::ToolResult, 6),
        ],
    );
    // OpenHands answers `finish` with no observation: the importer gives it a
    // result, and its final thought is the last thing the agent says.
    assert_paired(name, &imported.events, &[]);
    let last = imported.events.last().unwrap();
    assert_eq!(
        (last.id.as_str(), last.trace_type),
        ("oh-14-final", TraceType::Assistant)
    );
    assert!(last.content.contains("[^a-z0-9-]"));
    // A recall and two agent-state changes.
    assert_eq!((imported.records, imported.skipped.len()), (16, 3));
    let statuses: Vec<ToolStatus> = tool_interactions(&imported.events)
        .iter()
        .map(|i| i.status)
        .collect();
    assert_eq!(
        statuses,
        [
            ToolStatus::Success,
            ToolStatus::Success,
            ToolStatus::Error,
            ToolStatus::Success,
            ToolStatus::Success,
            ToolStatus::Success
        ]
    );
    // Per-call usage on the five actions that have it (and on their thoughts);
    // `finish` only has the running total, which is not kept.
    assert_eq!(with_usage(&imported).len(), 8);
    let first_call = imported.events.iter().find(|e| e.id == "oh-4").unwrap();
    let usage = first_call.usage.as_ref().unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (4812, 96));
    assert!(imported
        .events
        .iter()
        .find(|e| e.id == "oh-14")
        .unwrap()
        .usage
        .is_none());
    assert!(
        imported.events.iter().all(|e| e.ts > 1.74e9),
        "zone-less timestamps read as UTC"
    );
}

#[test]
fn openai_messages() {
    let name = "openai-messages.json";
    let imported = import_fixture(name, Format::OpenAiMessages);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Assistant, 2),
            (TraceType::ToolCall, 2),
            (TraceType::ToolResult, 2),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    assert!(with_usage(&imported).is_empty());
}

#[test]
fn openai_responses_items() {
    let name = "openai-responses.json";
    let imported = import_fixture(name, Format::OpenAiResponses);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::User, 2),
            (TraceType::Reasoning, 1),
            (TraceType::Assistant, 2),
            (TraceType::ToolCall, 3),
            (TraceType::ToolResult, 3),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    let reasoning = &imported.events[1];
    assert_eq!(reasoning.id, "rs_01");
    assert_eq!(
        reasoning.opaque.as_ref().unwrap()["encrypted_content"],
        "gAAAAABo1"
    );
}

#[test]
fn anthropic_messages_request() {
    let name = "anthropic-messages.json";
    let imported = import_fixture(name, Format::AnthropicMessages);
    assert_counts(
        name,
        &imported,
        &[
            (TraceType::System, 1),
            (TraceType::User, 1),
            (TraceType::Reasoning, 1),
            (TraceType::Assistant, 2),
            (TraceType::ToolCall, 2),
            (TraceType::ToolResult, 2),
        ],
    );
    assert_paired(name, &imported.events, &[]);
    let failed: Vec<_> = tool_interactions(&imported.events)
        .into_iter()
        .filter(|pair| pair.status == ToolStatus::Error)
        .map(|pair| pair.tool_call_id)
        .collect();
    assert_eq!(failed, ["toolu_02"]);
}

#[test]
fn a_messages_file_that_grew_keeps_the_ids_of_what_it_held() {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "anthropic-messages.json",
    ]
    .iter()
    .collect();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut request: serde_json::Value = serde_json::from_str(&text).unwrap();
    let whole = import::parse(Format::AnthropicMessages, &path, &text).unwrap();
    request["messages"].as_array_mut().unwrap().truncate(3);
    let shorter = import::parse(Format::AnthropicMessages, &path, &request.to_string()).unwrap();
    let ids = |imported: &Imported| {
        imported
            .events
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&shorter)[..], ids(&whole)[..shorter.events.len()]);
}
