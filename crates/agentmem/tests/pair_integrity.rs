//! Property tests of tool call / result pair integrity
//! (`agentmem::pipeline::normalize`).
//!
//! Random transcripts mix user, assistant, system, summary and turn-aborted
//! events, reasoning, tool calls whose ids come from a small pool (so ids get
//! reused), results for random ids (so results come late, early, twice or
//! for no call) and subagent (sidechain) events. After `normalize_pairs`:
//!
//! - the pairs are intact, and a second run changes nothing;
//! - nothing but tool events changed: every other event is still there, in
//!   order; a call reusing the id of an answered call is a new call under an
//!   id of its own, and calls are only removed when they copy a call still
//!   waiting for its result;
//!   results are only moved or removed; only synthetic "aborted" results,
//!   with deterministic ids, are added; the first result after each kept call
//!   is the one kept; results keep their order;
//! - the same input gives the same output and reports;
//! - every renderer's output follows its API's pairing rules.

use std::collections::{HashMap, HashSet};

use agentmem::base::event::SIDECHAIN_TAG;
use agentmem::base::message::messages_from_events;
use agentmem::pipeline::normalize::{
    normalize_pairs, pairs_are_intact, synthetic_result_id, PassReport, ABORTED_ERROR,
    SYNTHETIC_SOURCE, SYNTHETIC_TAG,
};
use agentmem::render::{render, RenderRequest};
use agentmem::{Event, TraceType};
use agentmem::{PromptCache, Target, ToolSchema};
use proptest::prelude::*;
use serde_json::{json, Value};

/// How many distinct call ids the generator draws from.
const ID_POOL: u8 = 6;

const TOOLS: [&str; 3] = ["bash", "read_file", "edit"];

/// One generated event, before it gets its id.
#[derive(Debug, Clone)]
enum Step {
    User(&'static str),
    Assistant(&'static str),
    /// 0: plain text, 1: a signed Anthropic thinking block, 2: a Responses item.
    Reasoning(u8),
    System,
    Summary,
    TurnAborted,
    Call(u8),
    /// Call id, failed, carries the tool's name.
    Result(u8, bool, bool),
}

fn step() -> impl Strategy<Value = Step> {
    let text = || prop::sample::select(vec!["Done.", "Looking at it.", "", "  "]);
    prop_oneof![
        3 => text().prop_map(Step::User),
        3 => text().prop_map(Step::Assistant),
        2 => (0u8..3).prop_map(Step::Reasoning),
        1 => Just(Step::System),
        1 => Just(Step::Summary),
        1 => Just(Step::TurnAborted),
        6 => (0..ID_POOL).prop_map(Step::Call),
        6 => (0..ID_POOL, any::<bool>(), any::<bool>()).prop_map(|(id, failed, named)| Step::Result(id, failed, named)),
    ]
}

fn call_id(n: u8) -> String {
    format!("call_{n}")
}

/// Calls of one id always name the same tool, so a result may name it too.
fn tool_name(n: u8) -> &'static str {
    TOOLS[usize::from(n) % TOOLS.len()]
}

fn event(step: &Step) -> Event {
    match *step {
        Step::User(text) => Event::user(text),
        Step::Assistant(text) => Event::assistant(text),
        Step::Reasoning(kind) => {
            let mut event = Event::new(TraceType::Reasoning, "thinking it over");
            event.opaque = match kind {
                0 => None,
                1 => Some(
                    json!({"type": "thinking", "thinking": "thinking it over", "signature": "c2ln"}),
                ),
                _ => Some(
                    json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}),
                ),
            };
            event
        }
        Step::System => Event::system("Follow the repository's style."),
        Step::Summary => Event::new(TraceType::Summary, "Earlier, the tests were fixed."),
        Step::TurnAborted => Event::new(TraceType::TurnAborted, ""),
        Step::Call(n) => Event::tool_call(call_id(n), tool_name(n), json!({"n": n})),
        Step::Result(n, failed, named) => {
            let mut event = if failed {
                Event::tool_error(call_id(n), "exit status 1")
            } else {
                Event::tool_result(call_id(n), format!("output of {}", call_id(n)))
            };
            if named {
                event.tool_name = Some(tool_name(n).to_owned());
            }
            event
        }
    }
}

fn transcript() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((step(), prop::bool::weighted(0.12)), 0..40).prop_map(|steps| {
        steps
            .iter()
            .enumerate()
            .map(|(index, (step, sidechain))| {
                let mut event = event(step).with_id(format!("ev{index}"));
                event.turn_id = format!("turn_{:04}", index / 5 + 1);
                event.seq = index as u64 + 1;
                event.ts = 1_700_000_000.0 + index as f64;
                if *sidechain {
                    event = event.with_tag(SIDECHAIN_TAG);
                }
                event
            })
            .collect()
    })
}

fn is_tool_event(event: &Event) -> bool {
    event.is_in_model_view()
        && matches!(
            event.trace_type,
            TraceType::ToolCall | TraceType::ToolResult
        )
}

fn is_result(event: &Event) -> bool {
    event.is_in_model_view() && event.trace_type == TraceType::ToolResult
}

fn is_synthetic(event: &Event) -> bool {
    event.tags.iter().any(|t| t == SYNTHETIC_TAG)
}

fn id_of(event: &Event) -> &str {
    event.tool_call_id.as_deref().unwrap_or("")
}

/// `events` with each call and result under the id it goes by once reuse is
/// resolved: a call reusing the id of a call a result came after is a new
/// call, `<id>-<n>` for the id's `n`th such call; a result goes with the
/// latest call of its id.
fn with_view_ids(events: &[Event]) -> Vec<Event> {
    // For each id: its calls so far, and whether the latest was answered.
    let mut uses: HashMap<String, (u32, bool)> = HashMap::new();
    events
        .iter()
        .map(|event| {
            let mut named = event.clone();
            if !is_tool_event(event) {
                return named;
            }
            let id = id_of(event).to_owned();
            let generation = match (event.trace_type, uses.get_mut(&id)) {
                (TraceType::ToolCall, Some((n, answered))) => {
                    if *answered {
                        *n += 1;
                        *answered = false;
                    }
                    *n
                }
                (TraceType::ToolCall, None) => {
                    uses.insert(id.clone(), (1, false));
                    1
                }
                (_, Some((n, answered))) => {
                    *answered = true;
                    *n
                }
                (_, None) => 1,
            };
            if generation > 1 {
                named.tool_call_id = Some(format!("{id}-{generation}"));
            }
            named
        })
        .collect()
}

/// What may change, and how: everything in the module comment but the
/// renderers' rules.
fn check_changes(original: &[Event], after: &[Event], reports: &[PassReport]) {
    let named = with_view_ids(original);
    let before = named.as_slice();
    // Everything but tool events is untouched and in order.
    let others = |events: &[Event]| -> Vec<Event> {
        events
            .iter()
            .filter(|e| !is_tool_event(e))
            .cloned()
            .collect()
    };
    assert_eq!(others(before), others(after), "non-tool events changed");

    // Calls: the first of each id (once reuse is resolved) stays, in place
    // relative to everything but results; later ones, copies, go.
    let mut first_calls = HashSet::new();
    let expected: Vec<&Event> = before
        .iter()
        .filter(|e| !is_result(e))
        .filter(|e| {
            !(is_tool_event(e) && e.trace_type == TraceType::ToolCall)
                || first_calls.insert(id_of(e))
        })
        .collect();
    let actual: Vec<&Event> = after.iter().filter(|e| !is_result(e)).collect();
    assert_eq!(expected, actual, "calls removed other than reused ids");

    // Results: the first after the kept call, else a synthetic one.
    let position: HashMap<&str, usize> = before
        .iter()
        .enumerate()
        .map(|(index, e)| (e.id.as_str(), index))
        .collect();
    let mut first_call_at: HashMap<&str, usize> = HashMap::new();
    let mut first_result: HashMap<&str, &Event> = HashMap::new();
    for (index, e) in before.iter().enumerate() {
        if !is_tool_event(e) {
            continue;
        }
        let id = id_of(e);
        if e.trace_type == TraceType::ToolCall {
            first_call_at.entry(id).or_insert(index);
        } else if first_call_at.contains_key(id) {
            first_result.entry(id).or_insert(e);
        }
    }
    let results: HashMap<&str, &Event> = after
        .iter()
        .filter(|e| is_result(e))
        .map(|e| (id_of(e), e))
        .collect();
    assert_eq!(
        results.len(),
        first_call_at.len(),
        "one result per kept call"
    );
    for id in first_call_at.keys() {
        let kept = results[id];
        match first_result.get(id) {
            Some(original) => assert_eq!(kept, *original, "result of {id}"),
            None => {
                assert!(is_synthetic(kept), "{id} has a result out of nowhere");
                assert_eq!(kept.id, synthetic_result_id(id));
                assert_eq!(kept.tool_error.as_deref(), Some(ABORTED_ERROR));
                assert_eq!(kept.source_event, SYNTHETIC_SOURCE);
                assert_eq!(
                    kept.tool_name.as_deref(),
                    Some(tool_name(
                        id[5..].split('-').next().unwrap().parse().unwrap()
                    ))
                );
            }
        }
    }

    // Results keep their order: in each run of results, the original ones in
    // their original order, then the synthetic ones.
    let mut last = None::<usize>;
    let mut synthetic_seen = false;
    for e in after.iter().filter(|e| e.is_in_model_view()) {
        if !is_result(e) {
            last = None;
            synthetic_seen = false;
        } else if is_synthetic(e) {
            synthetic_seen = true;
        } else {
            assert!(!synthetic_seen, "{} after a synthetic result", e.id);
            let at = position[e.id.as_str()];
            assert!(
                last.is_none_or(|l| l < at),
                "{} moved ahead of a result",
                e.id
            );
            last = Some(at);
        }
    }

    // The reports account for every change.
    let before_ids: HashSet<&str> = before.iter().map(|e| e.id.as_str()).collect();
    let after_ids: HashSet<&str> = after.iter().map(|e| e.id.as_str()).collect();
    let reported = |pick: fn(&PassReport) -> &Vec<String>| -> HashSet<&str> {
        reports
            .iter()
            .flat_map(|r| pick(r).iter().map(String::as_str))
            .collect()
    };
    assert_eq!(
        reported(|r| &r.removed),
        &before_ids - &after_ids,
        "removed"
    );
    assert_eq!(reported(|r| &r.added), &after_ids - &before_ids, "added");
    for id in reported(|r| &r.moved) {
        assert!(after_ids.contains(id) && before_ids.contains(id));
    }
    let renamed: HashSet<&str> = original
        .iter()
        .zip(before)
        .filter(|(event, named)| event.tool_call_id != named.tool_call_id)
        .map(|(event, _)| event.id.as_str())
        .collect();
    assert_eq!(reported(|r| &r.renamed), renamed, "renamed");
    assert!(reports.iter().all(PassReport::changed));
}

fn tool_schemas() -> Vec<ToolSchema> {
    TOOLS
        .iter()
        .map(|name| ToolSchema {
            name: (*name).to_owned(),
            description: format!("The {name} tool."),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        })
        .collect()
}

fn rendered(events: &[Event], target: Target) -> Value {
    let messages = messages_from_events(events);
    let tools = tool_schemas();
    render(
        target,
        &RenderRequest {
            model: "test-model",
            system: Some("You are a coding agent."),
            messages: &messages,
            tools: &tools,
            max_output_tokens: 1024,
            cache: PromptCache::On,
            live_context: None,
        },
    )
}

fn list<'a>(value: &'a Value, what: &str) -> &'a [Value] {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} is not a list: {value}"))
}

fn string<'a>(value: &'a Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string {key:?} in {value}"))
}

fn typ(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("")
}

fn sorted(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items
}

/// Chat Completions: each `role: tool` message answers a call of the closest
/// preceding assistant message, with only tool messages between, and every
/// call is answered before the next message that is not a tool message.
fn check_chat(body: &Value) {
    let messages = list(&body["messages"], "messages");
    let mut calls: HashSet<&str> = HashSet::new();
    let mut open: HashSet<&str> = HashSet::new();
    let mut previous = "";
    for (index, message) in messages.iter().enumerate() {
        let role = string(message, "role");
        if role == "tool" {
            let id = string(message, "tool_call_id");
            assert!(
                matches!(previous, "assistant" | "tool"),
                "message {index}: tool message after {previous}"
            );
            assert!(
                open.remove(id),
                "message {index}: {id} answers no open call of the assistant message before"
            );
        } else {
            assert!(open.is_empty(), "message {index}: {open:?} left unanswered");
            for call in message
                .get("tool_calls")
                .map_or(&[][..], |c| list(c, "tool_calls"))
            {
                let id = string(call, "id");
                assert!(calls.insert(id), "call id {id} repeated");
                open.insert(id);
            }
        }
        previous = role;
    }
    assert!(open.is_empty(), "{open:?} left unanswered at the end");
}

/// Anthropic: roles alternate starting with the user; the `tool_use` blocks of
/// an assistant message are answered, exactly, by the `tool_result` blocks of
/// the next user message, which come first in it.
fn check_anthropic(body: &Value) {
    let messages = list(&body["messages"], "messages");
    let blocks = |message: &Value, kind: &str, key: &str| -> Vec<String> {
        list(&message["content"], "content")
            .iter()
            .filter(|b| typ(b) == kind)
            .map(|b| string(b, key).to_owned())
            .collect()
    };
    for (index, message) in messages.iter().enumerate() {
        let role = string(message, "role");
        let expected = if index % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(
            role, expected,
            "message {index}: roles alternate from the user"
        );
        let content = list(&message["content"], "content");
        assert!(!content.is_empty(), "message {index}: empty content");
        if role == "user" {
            let results = blocks(message, "tool_result", "tool_use_id");
            let leading = content
                .iter()
                .take_while(|b| typ(b) == "tool_result")
                .count();
            assert_eq!(
                leading,
                results.len(),
                "message {index}: tool results first"
            );
            let calls = match index {
                0 => Vec::new(),
                _ => blocks(&messages[index - 1], "tool_use", "id"),
            };
            assert_eq!(
                sorted(results),
                sorted(calls),
                "message {index}: results answer exactly the calls before"
            );
        } else {
            let calls = blocks(message, "tool_use", "id");
            if !calls.is_empty() {
                let next = messages
                    .get(index + 1)
                    .unwrap_or_else(|| panic!("message {index}: {calls:?} never answered"));
                assert_eq!(
                    sorted(blocks(next, "tool_result", "tool_use_id")),
                    sorted(calls),
                    "message {index}: calls answered in the next message"
                );
            }
        }
    }
}

/// Responses: every `function_call_output` answers an earlier `function_call`
/// of the same `call_id`, once; every call is answered.
fn check_responses(body: &Value) {
    let mut open: HashSet<&str> = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    for (index, item) in list(&body["input"], "input").iter().enumerate() {
        match typ(item) {
            "function_call" => {
                let id = string(item, "call_id");
                assert!(calls.insert(id), "item {index}: call id {id} repeated");
                open.insert(id);
            }
            "function_call_output" => {
                let id = string(item, "call_id");
                assert!(
                    open.remove(id),
                    "item {index}: output for {id}, which no earlier item calls (or answered twice)"
                );
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "{open:?} never answered");
}

/// Gemini: contents alternate starting with the user; the function responses
/// of a user content answer, by name, exactly the function calls of the model
/// content before it.
fn check_gemini(body: &Value) {
    let contents = list(&body["contents"], "contents");
    let names = |content: &Value, key: &str| -> Vec<String> {
        sorted(
            list(&content["parts"], "parts")
                .iter()
                .filter_map(|p| p.get(key))
                .map(|f| string(f, "name").to_owned())
                .collect(),
        )
    };
    for (index, content) in contents.iter().enumerate() {
        let role = string(content, "role");
        let expected = if index % 2 == 0 { "user" } else { "model" };
        assert_eq!(
            role, expected,
            "content {index}: roles alternate from the user"
        );
        if role == "user" {
            let calls = match index {
                0 => Vec::new(),
                _ => names(&contents[index - 1], "functionCall"),
            };
            assert_eq!(
                names(content, "functionResponse"),
                calls,
                "content {index}: responses answer the calls before"
            );
        } else {
            let calls = names(content, "functionCall");
            if !calls.is_empty() {
                let next = contents
                    .get(index + 1)
                    .unwrap_or_else(|| panic!("content {index}: {calls:?} never answered"));
                assert_eq!(names(next, "functionResponse"), calls, "content {index}");
            }
        }
    }
}

fn check_rendered(events: &[Event]) {
    for target in Target::ALL {
        let body = rendered(events, target);
        match target {
            Target::OpenAiChat => check_chat(&body),
            Target::OpenAiResponses => check_responses(&body),
            Target::Anthropic => check_anthropic(&body),
            Target::Gemini => check_gemini(&body),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn normalized_pairs_are_intact_and_stay_put(original in transcript()) {
        let mut events = original.clone();
        let reports = normalize_pairs(&mut events);
        prop_assert!(pairs_are_intact(&events), "not intact: {events:#?}");
        prop_assert_eq!(reports.is_empty(), pairs_are_intact(&original));

        let once = events.clone();
        let again = normalize_pairs(&mut events);
        prop_assert!(again.is_empty(), "second run changed something: {again:?}");
        prop_assert_eq!(&events, &once);

        check_changes(&original, &events, &reports);
    }

    #[test]
    fn normalizing_is_deterministic(original in transcript()) {
        let (mut first, mut second) = (original.clone(), original);
        let first_reports = normalize_pairs(&mut first);
        let second_reports = normalize_pairs(&mut second);
        prop_assert_eq!(first_reports, second_reports);
        prop_assert_eq!(first, second);
    }

    #[test]
    fn every_renderer_accepts_a_normalized_transcript(original in transcript()) {
        let mut events = original;
        normalize_pairs(&mut events);
        check_rendered(&events);
    }
}

/// The checkers catch what they are for: a transcript that is not normalized
/// breaks each of them.
#[test]
fn the_checks_catch_broken_pairs() {
    let broken = vec![
        Event::user("go"),
        Event::tool_call("c1", "bash", json!({})),
        Event::user("well?"),
        Event::assistant("Still waiting."),
        Event::tool_result("c1", "done"),
    ];
    assert!(!pairs_are_intact(&broken));
    for target in Target::ALL {
        let body = rendered(&broken, target);
        let check: fn(&Value) = match target {
            Target::OpenAiChat => check_chat,
            Target::OpenAiResponses => |body: &Value| {
                // Responses only needs the call first: make the result an orphan.
                let mut body = body.clone();
                let input = body["input"].as_array_mut().unwrap();
                input.last_mut().unwrap()["call_id"] = json!("c2");
                check_responses(&body)
            },
            Target::Anthropic => check_anthropic,
            Target::Gemini => check_gemini,
        };
        let caught = std::panic::catch_unwind(|| check(&body)).is_err();
        assert!(caught, "{target} check missed the break: {body}");
    }
    let mut fixed = broken;
    normalize_pairs(&mut fixed);
    check_rendered(&fixed);
}

/// A late result, an id reused once its call was answered (a new call), an
/// orphan, a result before its call and parallel results out of order, all
/// in one transcript.
#[test]
fn a_messy_transcript_renders_for_every_api() {
    let mut events = vec![
        Event::tool_result("c0", "before its call").with_id("early"),
        Event::user("fix it").with_id("u1"),
        Event::tool_call("c0", "bash", json!({})).with_id("call0"),
        Event::tool_call("c1", "read_file", json!({})).with_id("call1"),
        Event::tool_call("c2", "read_file", json!({})).with_id("call2"),
        Event::tool_result("c2", "b").with_id("r2"),
        Event::user("and hurry").with_id("u2"),
        Event::tool_result("c1", "a").with_id("r1"),
        Event::assistant("Again.").with_id("a2"),
        Event::tool_call("c1", "read_file", json!({})).with_id("call1-again"),
        Event::tool_result("c1", "a again").with_id("r1-again"),
        Event::tool_result("gone", "no call").with_id("orphan"),
    ];
    normalize_pairs(&mut events);
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "u1",
            "call0",
            "call1",
            "call2",
            "r2",
            "r1",
            "synthetic-aborted-c0",
            "u2",
            "a2",
            "call1-again",
            "r1-again"
        ]
    );
    assert_eq!(events[9].tool_call_id.as_deref(), Some("c1-2"));
    assert_eq!(events[10].tool_call_id.as_deref(), Some("c1-2"));
    check_rendered(&events);
}
