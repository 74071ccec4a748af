//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
//!
//! A current rollout line is `{"timestamp", "type", "payload"}`:
//!
//! - `session_meta`: its `payload.id` is the source session id; its
//!   `base_instructions.text` (the system prompt) and `instructions` (the
//!   user's standing instructions) become system events, as a legacy
//!   header's instructions do.
//! - `response_item`: what was sent to or came back from the model, the
//!   conversation itself. `message` becomes a user, assistant or system event
//!   (developer messages, and user messages Codex injects itself — the
//!   environment context, `AGENTS.md` instructions, skills, the note that a
//!   turn was aborted — are system events tagged `injected_context`, so they
//!   do not open turns); `function_call`,
//!   `custom_tool_call` and `local_shell_call` become tool calls, their
//!   `*_output` items the results (`tool_error` is set by `success: false`,
//!   or by a non-zero exit code the output reports: see [`shell_output`];
//!   images in an output's content list go to `media`);
//!   `reasoning` becomes a reasoning event with the item kept verbatim in
//!   `opaque`, because its `encrypted_content` must be sent back unchanged;
//!   `web_search_call` (a search the provider ran itself) becomes a
//!   `web_search` tool call and a result saying what was searched, since the
//!   results themselves are not in the rollout; `compaction` (a summary the
//!   provider encrypted) is skipped, since nobody but the provider can read it.
//! - `event_msg`: UI events. `token_count` puts its `last_token_usage` on the
//!   output it measures: the latest event the model produced while nothing
//!   has answered it yet, else (newer rollouts write the count first) the
//!   next one; `turn_aborted` becomes a turn-aborted
//!   marker; `user_message` and `agent_message` usually repeat a response
//!   item's message and are then skipped, so nothing is imported twice, but
//!   some rollouts (a subagent's, for one) hold the conversation only there,
//!   and then they are imported; `agent_reasoning` repeats reasoning items.
//! - `compacted`: the history that replaced earlier context, a `summary`
//!   event tagged `replaces_history`, where the model's view starts over. Its
//!   content is the summary `message` when there is one, then the messages of
//!   the `replacement_history` that the model kept seeing (`role: text`); a
//!   remote compaction has no message, and its replacement history alone is
//!   the content (see [`compacted_event`]).
//! - `turn_context`: per-turn settings; only its model is kept, for usage.
//!
//! The older format (early 2025) starts with a header `{id, timestamp,
//! instructions}` and continues with bare response items and
//! `{"record_type": "state"}` lines; those items map the same way, and the
//! header's instructions (sent to the model as its instructions) become a
//! system event.
//!
//! A line makes at most one event, whose id is a stable id of the line, except
//! a `session_meta` holding both kinds of instructions and a web search (its
//! call and its result); the second event of a line takes the line's id with
//! `-1` appended.

use std::collections::HashMap;

use agentmem::base::event::{parse_rfc3339, REPLACES_HISTORY_TAG};
use agentmem::{Event, TraceType, Usage};
use serde_json::Value;

use super::openai_messages::{content_text, parse_arguments};
use super::responses::{call_id, input_images, reasoning_event, str_of, web_search_events};
use crate::imported::{Imported, Skipped};
use crate::record::{json_object_line, media, stable_id};

/// User messages starting with these are context Codex injects, not the user
/// typing: as user events they would open turns the user never started.
const INJECTED_PREFIXES: [&str; 8] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    // Tells the model the user interrupted the previous turn.
    "<turn_aborted>",
    // A command the user ran in the terminal (`!cmd`) and its output.
    "<user_shell_command>",
    // The body of a skill the harness loaded.
    "<skill>",
    "<codex_internal_context>",
    "<recommended_plugins>",
];

/// What a line maps to: its events (none when it is consumed without one), or
/// the reason it was left out.
type Mapped = Result<Vec<Event>, String>;

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let lines: Vec<(usize, &str, Result<Value, String>)> = text
        .lines()
        .enumerate()
        .filter(|(_, raw)| !raw.trim().is_empty())
        .map(|(index, raw)| (index + 1, raw, json_object_line(raw).map(Value::Object)))
        .collect();
    let mut rollout = Rollout {
        echoes: MessageEchoes::of(&lines),
        ..Rollout::default()
    };
    for (position, (line_no, raw, parsed)) in lines.iter().enumerate() {
        rollout.imported.records += 1;
        let mapped = match parsed {
            Ok(record) => rollout.line(record, position == 0, *line_no),
            Err(reason) => {
                let skipped = Skipped::malformed(*line_no, reason.clone());
                rollout.imported.skipped.push(skipped);
                continue;
            }
        };
        rollout.record(mapped, *line_no, raw);
    }
    Ok(rollout.finish())
}

/// The user and assistant messages of a rollout's response items, counted by
/// role and text: a `user_message` or `agent_message` event matching one is
/// its UI echo. Counted over the whole file first, because the echo is often
/// written before the item it repeats.
#[derive(Default)]
struct MessageEchoes(HashMap<(&'static str, String), usize>);

impl MessageEchoes {
    fn of(lines: &[(usize, &str, Result<Value, String>)]) -> Self {
        let mut echoes = MessageEchoes::default();
        for record in lines
            .iter()
            .filter_map(|(_, _, parsed)| parsed.as_ref().ok())
        {
            let item = match str_of(record, "type") {
                "response_item" => record.get("payload").unwrap_or(&Value::Null),
                _ => record,
            };
            if str_of(item, "type") != "message" {
                continue;
            }
            let role = match str_of(item, "role") {
                "user" => "user",
                "assistant" => "assistant",
                _ => continue,
            };
            let text = content_text(item.get("content")).trim().to_owned();
            *echoes.0.entry((role, text)).or_default() += 1;
        }
        echoes
    }

    /// Whether a user message among the response items holds `text` (Codex
    /// wraps the user's standing instructions in one).
    fn a_user_message_holds(&self, text: &str) -> bool {
        let text = text.trim();
        self.0
            .keys()
            .any(|(role, message)| *role == "user" && message.contains(text))
    }

    /// Whether a message of `role` with `text` is among the response items;
    /// each item answers for one echo, so a message typed twice but recorded
    /// once as an item is imported once from its second echo.
    fn take(&mut self, role: &'static str, text: &str) -> bool {
        match self.0.get_mut(&(role, text.trim().to_owned())) {
            Some(count) if *count > 0 => {
                *count -= 1;
                true
            }
            Some(_) | None => false,
        }
    }
}

/// Import state carried from line to line.
#[derive(Default)]
struct Rollout {
    imported: Imported,
    /// The model of the current turn (from `turn_context`), named in usage.
    model: Option<String>,
    /// The latest timestamp seen; legacy items have none and inherit it.
    ts: f64,
    /// The latest event the model produced, which a token count belongs to.
    last_model_event: Option<usize>,
    /// A token count written before the output it measures (newer rollouts
    /// write it between the UI echo and the response item), and its line.
    pending_usage: Option<(Usage, usize)>,
    /// The running total of the latest token count: Codex writes the same
    /// count again when only its rate limits changed.
    last_total: Option<Value>,
    /// Response-item messages not yet matched by their UI echo.
    echoes: MessageEchoes,
}

impl Rollout {
    fn line(&mut self, record: &Value, first: bool, line_no: usize) -> Mapped {
        if let Some(ts) = record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
        {
            self.ts = ts;
        }
        let kind = record.get("type").and_then(Value::as_str);
        match (kind, record.get("payload")) {
            (Some(kind), Some(payload)) => self.rollout_item(kind, payload, line_no),
            _ if first && is_legacy_header(record) => self.legacy_header(record),
            _ if record.get("record_type").is_some() => {
                Err("a legacy state record, not conversation".into())
            }
            (Some(_), None) => response_item(record, line_no),
            (None, _) => Err("a line without a \"type\"".into()),
        }
    }

    fn record(&mut self, mapped: Mapped, line: usize, raw: &str) {
        match mapped {
            Ok(events) => {
                let line_id = stable_id("codex", line, raw);
                for (index, mut event) in events.into_iter().enumerate() {
                    event.id = match index {
                        0 => line_id.clone(),
                        _ => format!("{line_id}-{index}"),
                    };
                    event.ts = self.ts;
                    if made_by_model(event.trace_type) {
                        self.last_model_event = Some(self.imported.events.len());
                        if let Some((usage, _)) = self.pending_usage.take() {
                            event.usage = Some(usage);
                        }
                    }
                    self.imported.events.push(event);
                }
            }
            Err(reason) => self.imported.skipped.push(Skipped::left_out(line, reason)),
        }
    }

    fn rollout_item(&mut self, kind: &str, payload: &Value, line_no: usize) -> Mapped {
        match kind {
            "session_meta" => {
                self.set_session_id(payload.get("id"));
                let mut events = instruction_events(payload);
                // Current rollouts also send the user's instructions as a
                // message, which is imported where it stands.
                events.retain(|e| !self.echoes.a_user_message_holds(&e.content));
                Ok(events)
            }
            "turn_context" => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_owned());
                }
                Err("turn settings (cwd, policies); only the model is kept, for usage".into())
            }
            "response_item" => response_item(payload, line_no),
            "event_msg" => self.event_msg(payload, line_no),
            "compacted" => compacted_event(payload),
            other => Err(format!("unsupported rollout line type {other:?}")),
        }
    }

    fn event_msg(&mut self, payload: &Value, line_no: usize) -> Mapped {
        match str_of(payload, "type") {
            "token_count" => self.attach_usage(payload, line_no),
            "turn_aborted" => Ok(vec![Event::new(
                TraceType::TurnAborted,
                str_of(payload, "reason"),
            )]),
            "user_message" => self.event_message("user", payload),
            "agent_message" => self.event_message("assistant", payload),
            "agent_reasoning" | "agent_reasoning_raw_content" => {
                Err("duplicate of a reasoning response item".into())
            }
            other => Err(format!("a {other:?} event carries no conversation")),
        }
    }

    /// A `user_message` or `agent_message`: skipped when it echoes a response
    /// item, else the only record of that message, imported as one.
    fn event_message(&mut self, role: &'static str, payload: &Value) -> Mapped {
        let text = str_of(payload, "message");
        if self.echoes.take(role, text) {
            return Err(format!("duplicate of a {role} response item"));
        }
        let images: Vec<String> = match payload.get("images") {
            Some(Value::Array(urls)) => urls
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        role_event(role, text.to_owned(), images)
    }

    /// Puts a token count's `last_token_usage` on the output it measures:
    /// the latest model event while its call is still the latest (it has no
    /// usage yet and nothing answered it), else the next model event.
    fn attach_usage(&mut self, payload: &Value, line_no: usize) -> Mapped {
        let info = payload.get("info");
        let Some(last) = info.and_then(|info| info.get("last_token_usage")) else {
            return Err("a token count without usage (rate limits only)".into());
        };
        let total = info.and_then(|info| info.get("total_token_usage")).cloned();
        if total.is_some() && total == self.last_total {
            return Err("a repeat of the previous token count".into());
        }
        self.last_total = total;
        let count = |key: &str| last.get(key).and_then(Value::as_u64).unwrap_or(0);
        let usage = Usage {
            estimated_prompt_tokens: None,
            estimated_view_tokens: None,
            prompt_tokens: count("input_tokens"),
            completion_tokens: count("output_tokens"),
            cached_tokens: count("cached_input_tokens"),
            model: self.model.clone(),
        };
        match self.latest_unmeasured_output() {
            Some(event) => event.usage = Some(usage),
            None => {
                if let Some((_, earlier)) = self.pending_usage.replace((usage, line_no)) {
                    self.imported.skipped.push(Skipped::left_out(
                        earlier,
                        "a token count no model output followed",
                    ));
                }
            }
        }
        Ok(Vec::new())
    }

    /// The latest model event, if its call is still the latest one: no
    /// usage yet, and no input (a tool result, a user message) after it.
    fn latest_unmeasured_output(&mut self) -> Option<&mut Event> {
        let index = self.last_model_event?;
        let events = &mut self.imported.events;
        let answered = events[index + 1..]
            .iter()
            .any(|e| !made_by_model(e.trace_type));
        let event = events.get_mut(index)?;
        (event.usage.is_none() && !answered).then_some(event)
    }

    /// Reports a token count left waiting for output at the end of the file.
    fn finish(mut self) -> Imported {
        if let Some((_, line)) = self.pending_usage.take() {
            self.imported.skipped.push(Skipped::left_out(
                line,
                "a token count no model output followed",
            ));
        }
        self.imported
    }

    fn legacy_header(&mut self, record: &Value) -> Mapped {
        self.set_session_id(record.get("id"));
        Ok(instruction_events(record))
    }

    fn set_session_id(&mut self, id: Option<&Value>) {
        if self.imported.source_session_id.is_none() {
            self.imported.source_session_id = id.and_then(Value::as_str).map(str::to_owned);
        }
    }
}

/// A `compacted` line: the history Codex replaced earlier context with, as a
/// `summary` event tagged `replaces_history`, where the model's view starts
/// over.
///
/// A local compaction writes the summary as `message`; a remote one leaves
/// `message` empty and writes only `replacement_history`, the items the model
/// saw from then on (earlier user messages, the summary as a user message,
/// or an encrypted `compaction` item). The summary's content is the summary
/// message, then the replacement history's other messages; without one, it
/// is the replacement history alone. Encrypted items are kept verbatim in
/// `opaque`, since only the provider can read them.
fn compacted_event(payload: &Value) -> Mapped {
    let message = str_of(payload, "message").trim();
    let history = match payload.get("replacement_history") {
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    let content = match (message.is_empty(), history_lines(history, message)) {
        (true, lines) if lines.is_empty() => {
            return Err(
                "a compaction with neither a summary message nor a replacement history".into(),
            )
        }
        (true, lines) => lines.join("\n\n"),
        (false, lines) if lines.is_empty() => message.to_owned(),
        (false, lines) => format!(
            "{message}\n\nKept from before the compaction:\n\n{}",
            lines.join("\n\n")
        ),
    };
    let mut event = Event::new(TraceType::Summary, content).with_tag(REPLACES_HISTORY_TAG);
    let encrypted: Vec<Value> = history
        .iter()
        .filter(|item| item.get("encrypted_content").is_some())
        .cloned()
        .collect();
    if !encrypted.is_empty() {
        event.opaque = Some(Value::Array(encrypted));
    }
    Ok(vec![event])
}

/// The replacement history as the model read it, one entry per item: a
/// message as `role: text`, an encrypted compaction item as a note that a
/// summary only the provider can read stood there, any other item by its
/// type. A message repeating the `summary` message (Codex writes the summary
/// into the history too, behind a preamble) is left out, so it is not
/// imported twice.
fn history_lines(history: &[Value], summary: &str) -> Vec<String> {
    history
        .iter()
        .filter_map(|item| match str_of(item, "type") {
            "message" => {
                let text = content_text(item.get("content"));
                let text = text.trim();
                let repeats_summary = !summary.is_empty() && text.ends_with(summary);
                (!text.is_empty() && !repeats_summary)
                    .then(|| format!("{}: {text}", str_of(item, "role")))
            }
            "compaction" => Some(
                "[earlier conversation, compacted into a summary only the provider can read]"
                    .to_owned(),
            ),
            other => Some(format!("[a {other:?} item]")),
        })
        .collect()
}

/// The instructions a session starts with, sent to the model ahead of the
/// conversation: `base_instructions.text` (the system prompt, current
/// rollouts) and `instructions` (the user's standing instructions, current
/// rollouts and the legacy header), each a system event tagged
/// `injected_context`.
fn instruction_events(meta: &Value) -> Vec<Event> {
    let base = meta
        .get("base_instructions")
        .and_then(|base| base.get("text"))
        .and_then(Value::as_str);
    let user = meta.get("instructions").and_then(Value::as_str);
    [base, user]
        .into_iter()
        .flatten()
        .filter(|text| !text.trim().is_empty())
        .map(|text| Event::system(text).with_tag("injected_context"))
        .collect()
}

/// The old format's first line: `{id, timestamp, instructions}`, no `type`.
fn is_legacy_header(record: &Value) -> bool {
    record.get("id").is_some_and(Value::is_string)
        && record.get("timestamp").is_some()
        && record.get("type").is_none()
}

/// Events the model produced; a token count reports the call that made them.
fn made_by_model(trace_type: TraceType) -> bool {
    match trace_type {
        TraceType::Assistant | TraceType::ToolCall | TraceType::Reasoning => true,
        TraceType::User
        | TraceType::ToolResult
        | TraceType::System
        | TraceType::Summary
        | TraceType::TurnAborted
        | TraceType::WorkingMemory => false,
    }
}

/// A Responses API item, from a current or a legacy rollout, on line `line_no`.
fn response_item(item: &Value, line_no: usize) -> Mapped {
    match str_of(item, "type") {
        "message" => message_event(item),
        "function_call" => {
            let args = parse_arguments(item.get("arguments"));
            Ok(vec![Event::tool_call(
                call_id(item)?,
                str_of(item, "name"),
                args,
            )])
        }
        "custom_tool_call" => {
            let input = Value::String(str_of(item, "input").to_owned());
            Ok(vec![Event::tool_call(
                call_id(item)?,
                str_of(item, "name"),
                input,
            )])
        }
        "local_shell_call" => {
            let action = item.get("action").cloned().unwrap_or(Value::Null);
            Ok(vec![Event::tool_call(
                call_id(item)?,
                "local_shell",
                action,
            )])
        }
        "function_call_output" | "custom_tool_call_output" => output_event(item),
        "reasoning" => Ok(vec![reasoning_event(item)]),
        "web_search_call" => Ok(web_search_events(item, line_no)),
        "compaction" => Err(
            "an encrypted compaction item: only the provider that wrote it can read it, \
             so it has no text to import"
                .into(),
        ),
        other => Err(format!("unsupported response item {other:?}")),
    }
}

fn message_event(item: &Value) -> Mapped {
    let text = content_text(item.get("content"));
    let images = input_images(item.get("content"));
    role_event(str_of(item, "role"), text, images)
}

/// A message of `role`: user text Codex injected becomes a tagged system event.
fn role_event(role: &str, text: String, images: Vec<String>) -> Mapped {
    if text.trim().is_empty() && images.is_empty() {
        return Err("an empty message".into());
    }
    let mut event = match role {
        "user" if is_injected(&text) => Event::system(text).with_tag("injected_context"),
        "user" => Event::user(text),
        "assistant" => Event::assistant(text),
        "developer" | "system" => Event::system(text),
        other => return Err(format!("a message with unknown role {other:?}")),
    };
    event.media = media(images);
    Ok(vec![event])
}

fn is_injected(text: &str) -> bool {
    let text = text.trim_start();
    INJECTED_PREFIXES
        .iter()
        .any(|prefix| text.starts_with(prefix))
}

/// A tool output: a string, a list of content items, or `{content, success}`.
/// A list (what `view_image` and MCP tools return) holds `input_text` parts,
/// kept as the text, and `input_image` parts, kept in `media` as a message's
/// images are, so an image-only output is not imported as an empty result.
fn output_event(item: &Value) -> Mapped {
    let call_id = call_id(item)?;
    let (text, failed, images) = match item.get("output") {
        Some(Value::String(text)) => {
            let (text, failed) = shell_output(text);
            (text, failed, Vec::new())
        }
        Some(Value::Object(output)) => (
            content_text(output.get("content")),
            output.get("success").and_then(Value::as_bool) == Some(false),
            input_images(output.get("content")),
        ),
        Some(list @ Value::Array(_)) => (content_text(Some(list)), false, input_images(Some(list))),
        _ => (String::new(), false, Vec::new()),
    };
    let mut event = if failed {
        Event::tool_error(call_id, text)
    } else {
        Event::tool_result(call_id, text)
    };
    event.media = media(images);
    Ok(vec![event])
}

/// A string output as the model saw it, and whether the command failed.
///
/// Codex never writes a `success` flag on a string output; a command's exit
/// code is inside the text, in one of three shapes:
///
/// - legacy: the JSON text `{"output": "...", "metadata": {"exit_code": 1}}`,
///   unwrapped to its `output`;
/// - `Exit code: 1` on the first line, then `Wall time:` and `Output:`;
/// - `Process exited with code 101` among the header lines before `Output:`.
///
/// A non-zero code is a failure; any other text is a successful result.
fn shell_output(text: &str) -> (String, bool) {
    if let Some((output, exit_code)) = legacy_shell_output(text) {
        let failed = exit_code.is_some_and(|code| code != 0);
        let output = match (output.is_empty(), exit_code) {
            (true, Some(code)) if failed => format!("exit code {code}"),
            _ => output,
        };
        return (output, failed);
    }
    let failed = header_exit_code(text).is_some_and(|code| code != 0);
    (text.to_owned(), failed)
}

/// The legacy JSON output's `output` text and `metadata.exit_code`, if the
/// text is that JSON object.
fn legacy_shell_output(text: &str) -> Option<(String, Option<i64>)> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let wrapped: Value = serde_json::from_str(text).ok()?;
    let output = wrapped.get("output")?.as_str()?.to_owned();
    let metadata = wrapped.get("metadata")?;
    let exit_code = metadata.get("exit_code").and_then(Value::as_i64);
    Some((output, exit_code))
}

/// The exit code a shell output's header reports: `Exit code: N` or `Process
/// exited with code N`, read only above the `Output:` line so a command that
/// prints either phrase is not taken for a failure.
fn header_exit_code(text: &str) -> Option<i64> {
    text.lines()
        .take_while(|line| line.trim() != "Output:")
        .find_map(|line| {
            let line = line.trim();
            line.strip_prefix("Exit code:")
                .or_else(|| line.strip_prefix("Process exited with code"))
                .and_then(|code| code.trim().parse().ok())
        })
}

#[cfg(test)]
mod tests;
