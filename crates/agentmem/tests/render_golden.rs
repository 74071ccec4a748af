//! Every import fixture rendered for every target.
//!
//! Two kinds of check:
//!
//! - **Golden files**: each fixture of the import crate
//!   (`agentmem-import/tests/fixtures/`: detected, parsed, grouped into
//!   messages) is rendered with a fixed system prompt, one fixed tool and
//!   `max_output_tokens` 4096, and compared with
//!   `tests/golden/<fixture-stem>.<target>.json`. Run with `UPDATE_GOLDEN=1`
//!   to write them instead, then review the diff.
//! - **Structural checks**, independent of the golden files: the rules each
//!   API enforces on a request body (role alternation, who speaks first, tool
//!   results answering their calls, no empty text). A tool call left
//!   unanswered is allowed only at the very end of a request (the transcript
//!   stopped there; pair repair is a separate pass). Every other break is
//!   listed in [`KNOWN_BREAKS`] with the reason, so a new one fails the test.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agentmem::base::message::{messages_from_events, Message};
use agentmem::render::{render, RenderRequest};
use agentmem::{PromptCache, Target, ToolSchema};
use agentmem_import as import;
use serde_json::{json, Value};

const MODEL: &str = "test-model";
const SYSTEM: &str = "You are a coding agent working in the user's repository. \
Use the tools to inspect and change it, and keep answers short.";
const MAX_OUTPUT_TOKENS: u64 = 4096;

/// Calls the fixtures leave unanswered at their very end: `(fixture, call id,
/// tool name)`. None today: SWE-agent's legacy `submit` has no observation in
/// the history, but the trajectory's last step answers it, and OpenHands'
/// `finish` (which has no observation at all) is given a result on import.
const TRAILING_CALLS: [(&str, &str, &str); 0] = [];

/// Rule breaks the fixtures are known to cause: `(fixture, target, call id or
/// tool name the break is about)`. None today: the one fixture whose subagent
/// events sat between a `Task` call and its result (`claude-code-turn-2`)
/// renders whole since those events stay out of the model's view.
const KNOWN_BREAKS: [(&str, Target, &str); 0] = [];

fn tool() -> ToolSchema {
    ToolSchema {
        name: "bash".into(),
        description: "Run a shell command in the repository and return its output.".into(),
        parameters: json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout": {
                    "type": ["integer", "null"],
                    "description": "Seconds before the command is killed.",
                    "minimum": 1
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

struct Fixture {
    /// The file name without its extension, e.g. `codex-rollout`.
    stem: String,
    messages: Vec<Message>,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> Vec<Fixture> {
    let dir = manifest_dir().join("../agentmem-import/tests/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", dir.display());
    paths.iter().map(|path| load(path)).collect()
}

fn load(path: &Path) -> Fixture {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let format = import::detect_format(path, &text).unwrap();
    let imported = import::parse(format, path, &text).unwrap();
    Fixture {
        stem: path.file_stem().unwrap().to_string_lossy().into_owned(),
        messages: messages_from_events(&imported.events),
    }
}

fn rendered(fixture: &Fixture, target: Target) -> Value {
    let tools = [tool()];
    let request = RenderRequest {
        model: MODEL,
        system: Some(SYSTEM),
        messages: &fixture.messages,
        tools: &tools,
        max_output_tokens: MAX_OUTPUT_TOKENS,
        cache: PromptCache::On,
        live_context: None,
    };
    render(target, &request)
}

// ---------------------------------------------------------------- golden files

fn golden_path(stem: &str, target: Target) -> PathBuf {
    manifest_dir()
        .join("tests/golden")
        .join(format!("{stem}.{}.json", target.name()))
}

#[test]
fn rendered_requests_match_golden_files() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut expected_files = HashSet::new();
    for fixture in fixtures() {
        for target in Target::ALL {
            let path = golden_path(&fixture.stem, target);
            expected_files.insert(path.clone());
            let actual = serde_json::to_string_pretty(&rendered(&fixture, target)).unwrap() + "\n";
            if update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &actual)
                    .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
                continue;
            }
            match std::fs::read_to_string(&path) {
                Err(_) => failures.push(format!(
                    "{} is missing: create it with `UPDATE_GOLDEN=1 cargo test -p agentmem --test render_golden` \
                     and review it",
                    path.display()
                )),
                Ok(golden) => {
                    if let Some(difference) = first_difference(&golden.replace("\r\n", "\n"), &actual) {
                        failures.push(format!("{} differs: {difference}", path.display()));
                    }
                }
            }
        }
    }
    failures.extend(stale_golden_files(&expected_files));
    assert!(
        failures.is_empty(),
        "{}\n\nIf the change is intended, rewrite the golden files with \
         `UPDATE_GOLDEN=1 cargo test -p agentmem --test render_golden` and review the diff.",
        failures.join("\n")
    );
}

/// The first line where `golden` and `actual` differ, if they do.
fn first_difference(golden: &str, actual: &str) -> Option<String> {
    if golden == actual {
        return None;
    }
    let (mut golden_lines, mut actual_lines) = (golden.lines(), actual.lines());
    for number in 1.. {
        match (golden_lines.next(), actual_lines.next()) {
            (Some(g), Some(a)) if g == a => continue,
            (g, a) => {
                return Some(format!(
                    "line {number}\n  golden: {}\n  actual: {}",
                    g.unwrap_or("<end of file>"),
                    a.unwrap_or("<end of file>")
                ))
            }
        }
    }
    unreachable!()
}

/// Golden files no fixture and target produce any more.
fn stale_golden_files(expected: &HashSet<PathBuf>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(manifest_dir().join("tests/golden")) else {
        return Vec::new();
    };
    let mut stale: Vec<String> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && !expected.contains(path))
        .map(|path| {
            format!(
                "{} is stale: no fixture and target produce it; delete it",
                path.display()
            )
        })
        .collect();
    stale.sort();
    stale
}

// ---------------------------------------------------------- structural checks

/// What the structural checks found in one rendered request.
#[derive(Debug, Default)]
struct Findings {
    /// Rules of the API the request breaks, each naming the call it is about.
    breaks: Vec<String>,
    /// Calls left unanswered at the very end (ids; names for Gemini).
    trailing_calls: Vec<String>,
}

impl Findings {
    fn broken(&mut self, rule: String) {
        self.breaks.push(rule);
    }
}

fn check(target: Target, body: &Value) -> Findings {
    let mut findings = Findings::default();
    match target {
        Target::OpenAiChat => check_chat(body, &mut findings),
        Target::OpenAiResponses => check_responses(body, &mut findings),
        Target::Anthropic => check_anthropic(body, &mut findings),
        Target::Gemini => check_gemini(body, &mut findings),
    }
    findings
}

fn items<'a>(value: &'a Value, what: &str) -> &'a [Value] {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} is not a list: {value}"))
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string {key:?} in {value}"))
}

fn typ(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("")
}

fn is_json_object_text(text: &str) -> bool {
    matches!(serde_json::from_str(text), Ok(Value::Object(_)))
}

/// Chat Completions: the tool messages answering an assistant message's
/// `tool_calls` come right after it, one per call id.
fn check_chat(body: &Value, findings: &mut Findings) {
    let messages = items(&body["messages"], "messages");
    assert_eq!(
        messages[0]["role"], "system",
        "the system prompt comes first"
    );
    let mut seen = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let role = text_of(message, "role");
        if role == "tool" {
            let id = text_of(message, "tool_call_id");
            if !seen.contains(id) {
                findings.broken(format!(
                    "message {index}: result for {id}, which no earlier message calls"
                ));
            } else if !open.iter().any(|o| o == id) {
                findings.broken(format!(
                    "message {index}: result for {id} is not right after its call"
                ));
            }
            open.retain(|o| o != id);
            continue;
        }
        for id in open.drain(..) {
            findings.broken(format!(
                "message {index}: call {id} is not answered right after its message"
            ));
        }
        assert!(
            ["system", "user", "assistant"].contains(&role),
            "role {role}"
        );
        for call in message
            .get("tool_calls")
            .map_or(&[][..], |c| items(c, "tool_calls"))
        {
            let id = text_of(call, "id");
            assert!(
                !id.is_empty() && seen.insert(id.to_owned()),
                "call id {id:?} empty or repeated"
            );
            assert!(!text_of(&call["function"], "name").is_empty());
            open.push(id.to_owned());
        }
    }
    findings.trailing_calls.extend(open);
}

/// Responses: every `function_call_output` answers an earlier `function_call`
/// of the same `call_id`; every call is answered, unless nothing but calls
/// follow it.
fn check_responses(body: &Value, findings: &mut Findings) {
    let input = items(&body["input"], "input");
    let mut calls: Vec<(usize, String)> = Vec::new();
    let mut answered = HashSet::new();
    for (index, item) in input.iter().enumerate() {
        match typ(item) {
            "function_call" => {
                let id = text_of(item, "call_id");
                assert!(
                    !id.is_empty() && !calls.iter().any(|(_, c)| c == id),
                    "call id {id:?} empty or repeated"
                );
                assert!(
                    is_json_object_text(text_of(item, "arguments")),
                    "arguments of {id}"
                );
                assert!(!text_of(item, "name").is_empty());
                calls.push((index, id.to_owned()));
            }
            "function_call_output" => {
                let id = text_of(item, "call_id");
                text_of(item, "output");
                if !calls.iter().any(|(_, c)| c == id) {
                    findings.broken(format!(
                        "item {index}: output for {id}, which no earlier item calls"
                    ));
                }
                answered.insert(id.to_owned());
            }
            "reasoning" => {
                assert!(
                    item.get("summary").is_some_and(Value::is_array),
                    "reasoning summary: {item}"
                );
                let next = input.get(index + 1).map(typ);
                assert!(
                    matches!(next, Some("message" | "function_call" | "reasoning")),
                    "item {index}: reasoning not followed by an output item"
                );
            }
            "message" => check_responses_message(index, item),
            other => panic!("item {index}: unexpected type {other:?}"),
        }
    }
    for (index, id) in calls {
        if answered.contains(&id) {
            continue;
        }
        if input[index..]
            .iter()
            .all(|item| typ(item) == "function_call")
        {
            findings.trailing_calls.push(id);
        } else {
            findings.broken(format!("item {index}: call {id} is never answered"));
        }
    }
}

fn check_responses_message(index: usize, item: &Value) {
    let role = text_of(item, "role");
    if role == "assistant" {
        // The easy input shape: the text as the content string.
        assert!(
            !text_of(item, "content").is_empty(),
            "item {index}: empty text"
        );
        return;
    }
    let content = items(&item["content"], "content");
    assert!(!content.is_empty(), "item {index}: empty message");
    let allowed: &[&str] = match role {
        "user" | "developer" | "system" => &["input_text", "input_image"],
        other => panic!("item {index}: role {other:?}"),
    };
    for part in content {
        assert!(
            allowed.contains(&typ(part)),
            "item {index}: {role} part {part}"
        );
        if typ(part) != "input_image" {
            assert!(
                !text_of(part, "text").is_empty(),
                "item {index}: empty text"
            );
        }
    }
}

/// Anthropic: user first, strict alternation, no blank text, thinking first
/// in assistant content, tool results first in user content, and every
/// `tool_use` answered in the very next (user) message.
fn check_anthropic(body: &Value, findings: &mut Findings) {
    check_anthropic_cache_marks(body, findings);
    let messages = items(&body["messages"], "messages");
    assert_eq!(
        messages.first().map(|m| &m["role"]),
        Some(&json!("user")),
        "the first message is the user's"
    );
    let mut seen = HashSet::new();
    let mut previous_calls: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let role = text_of(message, "role");
        if index > 0 {
            assert_ne!(
                messages[index - 1]["role"],
                message["role"],
                "message {index}: roles alternate"
            );
        }
        let content = items(&message["content"], "content");
        assert!(!content.is_empty(), "message {index}: empty content");
        content
            .iter()
            .for_each(|block| check_anthropic_block(index, block));
        let leading: &[&str] = if role == "assistant" {
            &["thinking", "redacted_thinking"]
        } else {
            &["tool_result"]
        };
        let first_other = content
            .iter()
            .position(|b| !leading.contains(&typ(b)))
            .unwrap_or(content.len());
        assert!(
            content[first_other..]
                .iter()
                .all(|b| !leading.contains(&typ(b))),
            "message {index}: {leading:?} blocks come first"
        );
        match role {
            "assistant" => {
                for id in previous_calls.drain(..) {
                    findings.broken(format!(
                        "message {index}: tool_use {id} has no tool_result before it"
                    ));
                }
                for block in content.iter().filter(|b| typ(b) == "tool_use") {
                    let id = text_of(block, "id");
                    assert!(
                        !id.is_empty() && seen.insert(id.to_owned()),
                        "tool_use id {id:?} empty or repeated"
                    );
                    assert!(
                        block["input"].is_object(),
                        "message {index}: input of {id} is an object"
                    );
                    previous_calls.push(id.to_owned());
                }
            }
            "user" => {
                for block in content.iter().filter(|b| typ(b) == "tool_result") {
                    let id = text_of(block, "tool_use_id");
                    if !previous_calls.iter().any(|c| c == id) {
                        findings.broken(format!(
                            "message {index}: tool_result {id} answers no tool_use of the message before"
                        ));
                    }
                    previous_calls.retain(|c| c != id);
                }
                for id in previous_calls.drain(..) {
                    findings.broken(format!(
                        "message {index}: tool_use {id} has no tool_result here"
                    ));
                }
            }
            other => panic!("message {index}: role {other:?}"),
        }
    }
    findings.trailing_calls.extend(previous_calls);
}

/// Cache breakpoints: at most four in a request, none on a thinking block;
/// a system prompt given as a list holds text blocks.
fn check_anthropic_cache_marks(body: &Value, findings: &mut Findings) {
    const MAX_CACHE_BREAKPOINTS: usize = 4;
    let list = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let blocks = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten());
    let marked: Vec<&Value> = list("tools")
        .iter()
        .chain(list("system"))
        .chain(blocks)
        .filter(|b| b.get("cache_control").is_some())
        .collect();
    if marked.len() > MAX_CACHE_BREAKPOINTS {
        findings.broken(format!(
            "{} cache breakpoints; the API takes 4",
            marked.len()
        ));
    }
    for block in marked
        .iter()
        .filter(|b| ["thinking", "redacted_thinking"].contains(&typ(b)))
    {
        findings.broken(format!(
            "a thinking block carries a cache breakpoint: {block}"
        ));
    }
    for block in list("system") {
        assert_eq!(typ(block), "text", "system blocks are text");
    }
}

fn check_anthropic_block(index: usize, block: &Value) {
    match typ(block) {
        "text" => assert!(
            !text_of(block, "text").trim().is_empty(),
            "message {index}: blank text block"
        ),
        "tool_result" => match block.get("content") {
            None => {}
            Some(Value::String(text)) => assert!(
                !text.trim().is_empty(),
                "message {index}: blank tool_result"
            ),
            Some(list) => items(list, "tool_result content")
                .iter()
                .for_each(|b| check_anthropic_block(index, b)),
        },
        "thinking" => assert!(!text_of(block, "signature").is_empty()),
        "redacted_thinking" => assert!(!text_of(block, "data").is_empty()),
        "tool_use" | "image" => {}
        other => panic!("message {index}: block type {other:?}"),
    }
}

/// Gemini: user first, strict alternation, no empty parts, and a model
/// content's function calls answered by as many function responses of the
/// same names in the next (user) content.
fn check_gemini(body: &Value, findings: &mut Findings) {
    assert!(body.get("model").is_none(), "the model is in the URL");
    assert_eq!(
        body["generationConfig"]["maxOutputTokens"],
        MAX_OUTPUT_TOKENS
    );
    let contents = items(&body["contents"], "contents");
    assert_eq!(
        contents.first().map(|c| &c["role"]),
        Some(&json!("user")),
        "the first content is the user's"
    );
    let mut previous_calls: Vec<String> = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let role = text_of(content, "role");
        if index > 0 {
            assert_ne!(
                contents[index - 1]["role"],
                content["role"],
                "content {index}: roles alternate"
            );
        }
        let parts = items(&content["parts"], "parts");
        assert!(!parts.is_empty(), "content {index}: no parts");
        for part in parts {
            if let Some(text) = part.get("text") {
                assert!(
                    !text.as_str().unwrap().is_empty(),
                    "content {index}: empty text"
                );
            }
        }
        let names = |key: &str| -> Vec<String> {
            let mut names: Vec<String> = parts
                .iter()
                .filter_map(|p| p.get(key))
                .map(|f| text_of(f, "name").to_owned())
                .collect();
            names.sort();
            names
        };
        match role {
            "model" => {
                for name in previous_calls.drain(..) {
                    findings.broken(format!(
                        "content {index}: call of {name} has no response before it"
                    ));
                }
                for call in parts.iter().filter_map(|p| p.get("functionCall")) {
                    assert!(
                        call["args"].is_object(),
                        "content {index}: args are an object"
                    );
                }
                previous_calls = names("functionCall");
            }
            "user" => {
                let responses = names("functionResponse");
                for name in &responses {
                    match previous_calls.iter().position(|c| c == name) {
                        Some(at) => {
                            previous_calls.remove(at);
                        }
                        None => findings.broken(format!(
                            "content {index}: response of {name} answers no call of the content before"
                        )),
                    }
                }
                for name in previous_calls.drain(..) {
                    findings.broken(format!(
                        "content {index}: call of {name} has no response here"
                    ));
                }
            }
            other => panic!("content {index}: role {other:?}"),
        }
    }
    findings.trailing_calls.extend(previous_calls);
}

#[test]
fn rendered_requests_follow_each_apis_rules() {
    let mut unexpected = Vec::new();
    let mut hit = HashSet::new();
    for fixture in fixtures() {
        for target in Target::ALL {
            let findings = check(target, &rendered(&fixture, target));
            let label = format!("{} / {}", fixture.stem, target.name());
            for rule in &findings.breaks {
                let known = KNOWN_BREAKS.iter().position(|(stem, t, about)| {
                    *stem == fixture.stem && *t == target && rule.contains(about)
                });
                match known {
                    Some(known) => {
                        hit.insert(known);
                        eprintln!("{label}: known break: {rule}");
                    }
                    None => unexpected.push(format!("{label}: {rule}")),
                }
            }
            let expected_trailing: Vec<&str> = TRAILING_CALLS
                .iter()
                .filter(|(stem, _, _)| *stem == fixture.stem)
                .map(|(_, id, name)| if target == Target::Gemini { *name } else { *id })
                .collect();
            if !findings.trailing_calls.is_empty() {
                eprintln!(
                    "{label}: unanswered at the end: {:?}",
                    findings.trailing_calls
                );
            }
            if findings.trailing_calls != expected_trailing {
                unexpected.push(format!(
                    "{label}: unanswered calls at the end are {:?}, expected {expected_trailing:?}",
                    findings.trailing_calls
                ));
            }
        }
    }
    for (index, known) in KNOWN_BREAKS.iter().enumerate() {
        if !hit.contains(&index) {
            unexpected.push(format!(
                "known break {known:?} no longer happens: remove it from KNOWN_BREAKS"
            ));
        }
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

/// The checks themselves catch what they are for.
#[test]
fn the_checks_catch_broken_requests() {
    let anthropic = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "well?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a"}]},
    ]});
    let findings = check(Target::Anthropic, &anthropic);
    assert_eq!(findings.breaks.len(), 2, "{findings:?}");
    let mark = json!({"type": "ephemeral"});
    let text = |t: &str| json!({"type": "text", "text": t, "cache_control": mark});
    let overmarked = json!({"system": [text("s")], "messages": [
        {"role": "user", "content": [text("a"), text("b"), text("c")]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "sig", "cache_control": mark},
            {"type": "text", "text": "ok"},
        ]},
    ]});
    let findings = check(Target::Anthropic, &overmarked);
    assert_eq!(
        findings.breaks.len(),
        2,
        "five marks, one on thinking: {findings:?}"
    );

    let gemini = json!({"generationConfig": {"maxOutputTokens": MAX_OUTPUT_TOKENS}, "contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}, {"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a"}}}]},
    ]});
    assert_eq!(check(Target::Gemini, &gemini).breaks.len(), 1);

    let responses = json!({"input": [
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "well?"}]},
        {"type": "function_call_output", "call_id": "c2", "output": "a"},
        {"type": "function_call", "call_id": "c3", "name": "ls", "arguments": "{}"},
    ]});
    let findings = check(Target::OpenAiResponses, &responses);
    assert_eq!(findings.breaks.len(), 2, "{findings:?}");
    assert_eq!(findings.trailing_calls, ["c3"]);

    let chat = json!({"messages": [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "well?"},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
    ]});
    assert_eq!(check(Target::OpenAiChat, &chat).breaks.len(), 2);
}
