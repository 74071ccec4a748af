//! Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! Each line is one record. `user` and `assistant` lines carry an Anthropic
//! message (`message.content` is a string or a list of blocks); one event is
//! made per block, so a line holding text and two `tool_use` blocks becomes an
//! assistant event and two tool calls:
//!
//! | block                          | event                                         |
//! |--------------------------------|-----------------------------------------------|
//! | `text` in a user line          | `user` (or `turn_aborted` for the interrupt marker); beside a `tool_result`, joined to the result's content |
//! | `text` in an assistant line    | `assistant`                                   |
//! | `tool_use {id, name, input}`   | `tool_call`                                   |
//! | `tool_result {tool_use_id, …}` | `tool_result`, `tool_error` set when `is_error` |
//! | `thinking` / `redacted_thinking` | `reasoning`, the block kept verbatim in `opaque` (its signature must go back unchanged) |
//! | `image`                        | an event of the line's role with the image in `media` |
//! | `document`                     | an event of the line's role naming the document (title, media type, size), or its text for a plain-text one; the block verbatim in `opaque` |
//!
//! User lines flagged `isCompactSummary` (the summary Claude Code writes
//! after `/compact`) become `summary` events tagged `replaces_history`: Claude
//! Code's model saw the summary instead of what came before, and so does a
//! replay's. A `queued_command` attachment (a prompt the user typed while the
//! model was working) becomes a `user` event.
//!
//! Some lines are only shown to the person at the terminal and never sent to
//! the model: `system` lines (compaction boundaries, `/context` tables, away
//! summaries, turn timings), `summary` lines (despite the name, the session's
//! title in the resume picker, tagged `session_title`) and the API errors
//! Claude Code writes as assistant lines flagged `isApiErrorMessage`. They are
//! kept in the log as `system` events tagged `display_only` and out of the
//! model's view, so a replay never sends an error back as if the model had
//! said it, nor a title as if it summarized the conversation. Lines that carry no
//! conversation (`file-history-snapshot`, `queue-operation`, …) are reported
//! as skipped. Subagent lines (`isSidechain`) are imported and tagged
//! `sidechain`; `isMeta` lines are tagged `meta`. Their user text becomes
//! `system` events: nobody typed it, and a user event would start a turn.
//!
//! Every line names its parent, so a session is a tree: a rewind (editing an
//! earlier prompt) starts a branch beside the old one, and Claude Code's model
//! sees only the branch that ends at the last line. The lines of a branch a
//! rewind left behind are imported tagged `abandoned_branch`, out of the
//! model's view.
//!
//! `message.id` becomes the `correlation_id`, grouping the events of one model
//! response (Claude Code writes one line per block, each repeating the usage);
//! the usage is kept on the response's last event only, so it counts once.
//!
//! Ids are `cc-<uuid>-<block>`: the uuid is the line's own, so re-importing a
//! session file that grew gives the lines already seen the same ids.

use std::collections::{HashMap, HashSet};

use agentmem::base::event::{
    parse_rfc3339, ABANDONED_BRANCH_TAG, DISPLAY_ONLY_TAG, REPLACES_HISTORY_TAG,
};
use agentmem::{Event, TraceType};
use serde_json::{Map, Value};

use super::anthropic::{self, str_of, usage};
use super::openai_messages::content_text;
use crate::imported::{Imported, Skipped};
use crate::record::{json_object_line, stable_id};

/// The text Claude Code writes as a user message when the user presses Esc.
const INTERRUPT_MARKER: &str = "[Request interrupted by user";

/// The tag of an API error Claude Code wrote as if the model had said it.
const API_ERROR_TAG: &str = "api_error";

/// The tag of a session's title (a `summary` line), shown in the resume picker.
const SESSION_TITLE_TAG: &str = "session_title";

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let lines: Vec<ParsedLine<'_>> = text
        .lines()
        .enumerate()
        .filter(|(_, raw)| !raw.trim().is_empty())
        .map(|(index, raw)| (index + 1, raw, json_object_line(raw)))
        .collect();
    let abandoned = Branches::of(&lines).abandoned();
    let mut imported = Imported::default();
    for (line_no, raw, parsed) in &lines {
        imported.records += 1;
        let record = match parsed {
            Ok(record) => record,
            Err(reason) => {
                imported
                    .skipped
                    .push(Skipped::malformed(*line_no, reason.clone()));
                continue;
            }
        };
        let before = imported.events.len();
        let line = Line {
            no: *line_no,
            raw,
            record,
        };
        import_line(&mut imported, &line);
        if line
            .str_field("uuid")
            .is_some_and(|u| abandoned.contains(u))
        {
            for event in &mut imported.events[before..] {
                event.tags.push(ABANDONED_BRANCH_TAG.into());
            }
        }
    }
    keep_usage_once_per_response(&mut imported.events);
    Ok(imported)
}

/// A line's number, its text, and its record or why it has none.
type ParsedLine<'a> = (usize, &'a str, Result<Map<String, Value>, String>);

/// The conversation tree Claude Code writes: every line names its parent
/// (`parentUuid`, or `logicalParentUuid` across a compaction boundary). A
/// rewind (editing an earlier prompt) starts a new branch beside the old one,
/// and Claude Code's model sees only the branch that ends at the last line.
struct Branches<'a> {
    parent: HashMap<&'a str, &'a str>,
    children: HashMap<&'a str, Vec<&'a str>>,
    /// Lines that hold a prompt the user typed (text, not a tool result).
    prompts: HashSet<&'a str>,
    /// The last line of the main conversation.
    leaf: Option<&'a str>,
}

impl<'a> Branches<'a> {
    fn of(lines: &'a [ParsedLine<'a>]) -> Self {
        let mut branches = Branches {
            parent: HashMap::new(),
            children: HashMap::new(),
            prompts: HashSet::new(),
            leaf: None,
        };
        let records = lines
            .iter()
            .filter_map(|(_, _, parsed)| parsed.as_ref().ok());
        for record in records {
            let field = |key: &str| record.get(key).and_then(Value::as_str);
            let sidechain = record.get("isSidechain").and_then(Value::as_bool) == Some(true);
            let Some(uuid) = field("uuid").filter(|_| !sidechain) else {
                continue;
            };
            if let Some(parent) = field("parentUuid").or_else(|| field("logicalParentUuid")) {
                branches.parent.insert(uuid, parent);
                branches.children.entry(parent).or_default().push(uuid);
            }
            if field("type") == Some("user") && is_typed_prompt(record) {
                branches.prompts.insert(uuid);
            }
            branches.leaf = Some(uuid);
        }
        branches
    }

    /// The lines of branches a rewind left: everything under a prompt whose
    /// parent is on the live branch but which is not on it itself. Only a
    /// prompt starts an abandoned branch, so a tree of another shape (a
    /// parent named in another file, results written beside their calls)
    /// never hides anything.
    fn abandoned(&self) -> HashSet<&'a str> {
        let live = self.live();
        let roots = self.prompts.iter().copied().filter(|prompt| {
            !live.contains(prompt)
                && self
                    .parent
                    .get(prompt)
                    .is_some_and(|parent| live.contains(parent) && Some(*parent) != self.leaf)
        });
        let mut abandoned = HashSet::new();
        let mut stack: Vec<&str> = roots.collect();
        while let Some(uuid) = stack.pop() {
            if live.contains(uuid) || !abandoned.insert(uuid) {
                continue;
            }
            stack.extend(self.children.get(uuid).into_iter().flatten().copied());
        }
        abandoned
    }

    /// The branch from the last line back to the first, as far as parents reach.
    fn live(&self) -> HashSet<&'a str> {
        let mut live = HashSet::new();
        let mut at = self.leaf;
        while let Some(uuid) = at.filter(|u| live.insert(*u)) {
            at = self.parent.get(uuid).copied();
        }
        live
    }
}

/// Whether a user line holds text the user typed, not only tool results.
fn is_typed_prompt(record: &Map<String, Value>) -> bool {
    match record.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(text)) => !text.trim().is_empty(),
        Some(Value::Array(blocks)) => blocks.iter().all(|b| str_of(b, "type") != "tool_result"),
        _ => false,
    }
}

/// Claude Code repeats a response's usage on every line of it; keep it on the
/// last event of the response only, so summing usage counts each call once.
fn keep_usage_once_per_response(events: &mut [Event]) {
    let mut seen = std::collections::HashSet::new();
    for event in events.iter_mut().rev() {
        if let (Some(_), Some(response)) = (&event.usage, &event.correlation_id) {
            if !seen.insert(response.clone()) {
                event.usage = None;
            }
        }
    }
}

/// One source line, with what every event made from it shares.
struct Line<'a> {
    no: usize,
    raw: &'a str,
    record: &'a Map<String, Value>,
}

impl Line<'_> {
    fn str_field(&self, key: &str) -> Option<&str> {
        self.record.get(key).and_then(Value::as_str)
    }

    fn flag(&self, key: &str) -> bool {
        self.record
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn message(&self) -> Option<&Map<String, Value>> {
        self.record.get("message").and_then(Value::as_object)
    }

    /// `cc-<uuid>-<block>`, or a hash-based id for lines without a uuid.
    fn id(&self, block: usize) -> String {
        match self.str_field("uuid") {
            Some(uuid) => format!("cc-{uuid}-{block}"),
            None => stable_id(&format!("cc-{}", self.no), block, self.raw),
        }
    }

    /// Sets the fields every event of this line shares.
    fn finish(&self, event: Event, block: usize) -> Event {
        let mut event = event.with_id(self.id(block));
        event.ts = self
            .str_field("timestamp")
            .and_then(parse_rfc3339)
            .unwrap_or(0.0);
        if self.flag("isSidechain") {
            event.tags.push(agentmem::base::event::SIDECHAIN_TAG.into());
        }
        if self.flag("isMeta") {
            event.tags.push("meta".into());
        }
        // A subagent's prompt and Claude Code's injected notes are written as
        // user lines, but no person typed them: as user events they would
        // start turns and split the main conversation's turns apart.
        if event.trace_type == TraceType::User && !event.tags.is_empty() {
            event.trace_type = TraceType::System;
        }
        if let Some(message) = self.message() {
            event.usage = usage(message);
            event.correlation_id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        event
    }
}

fn skip(imported: &mut Imported, line: usize, reason: impl Into<String>) {
    imported.skipped.push(Skipped::left_out(line, reason));
}

fn import_line(imported: &mut Imported, line: &Line<'_>) {
    if imported.source_session_id.is_none() {
        imported.source_session_id = line.str_field("sessionId").map(str::to_owned);
    }
    let (events_before, skipped_before) = (imported.events.len(), imported.skipped.len());
    match line.str_field("type") {
        Some("assistant") if line.flag("isApiErrorMessage") => api_error_event(imported, line),
        Some(role @ ("user" | "assistant")) => message_events(imported, line, role),
        Some("summary") => session_title_event(imported, line),
        Some("system") => display_event(imported, line),
        Some("attachment") => attachment_event(imported, line),
        Some(other) => {
            return skip(
                imported,
                line.no,
                format!("a {other:?} line carries no conversation"),
            )
        }
        None => return skip(imported, line.no, "a line without a \"type\""),
    }
    if imported.events.len() == events_before && imported.skipped.len() == skipped_before {
        skip(imported, line.no, "a message with no content to import");
    }
}

/// A `summary` line: despite its name, the title Claude Code shows for the
/// session in its resume picker (`Refactoring auth module`), never sent to
/// the model. As a summary it would enter the model's view as if it stood for
/// history; it is kept as a display-only system event tagged `session_title`.
fn session_title_event(imported: &mut Imported, line: &Line<'_>) {
    match line.str_field("summary") {
        Some(title) if !title.trim().is_empty() => {
            let event = Event::system(title).with_tag(SESSION_TITLE_TAG);
            imported.events.push(hide_from_model(line.finish(event, 0)));
        }
        _ => skip(
            imported,
            line.no,
            "a session title line without \"summary\" text",
        ),
    }
}

/// A `system` line: Claude Code's own status or command output, shown in the
/// terminal and never part of a request, so it stays out of the model's view.
fn display_event(imported: &mut Imported, line: &Line<'_>) {
    let Some(text) = line.str_field("content").filter(|t| !t.trim().is_empty()) else {
        let subtype = line.str_field("subtype").unwrap_or("untyped");
        return skip(
            imported,
            line.no,
            format!("a {subtype:?} system line without \"content\" text"),
        );
    };
    let mut event = Event::system(text);
    if let Some(subtype) = line.str_field("subtype") {
        event.tags.push(subtype.to_owned());
    }
    imported.events.push(hide_from_model(line.finish(event, 0)));
}

/// An assistant line flagged `isApiErrorMessage`: the request failed and
/// Claude Code wrote the error as the reply. The model never said it, so it
/// is kept as a display-only system event, without the (zero) usage.
fn api_error_event(imported: &mut Imported, line: &Line<'_>) {
    let text = line
        .message()
        .map(|message| content_text(message.get("content")))
        .unwrap_or_default();
    if text.trim().is_empty() {
        return skip(imported, line.no, "an API error message without text");
    }
    let mut event = line.finish(Event::system(text).with_tag(API_ERROR_TAG), 0);
    event.usage = None;
    imported.events.push(hide_from_model(event));
}

/// Tags an event display-only: it stays in the log, searchable and
/// exportable, and is never sent to the model (see [`Event::is_in_model_view`]).
fn hide_from_model(event: Event) -> Event {
    event.with_tag(DISPLAY_ONLY_TAG)
}

/// An `attachment` line: a `queued_command` is a prompt the user typed while
/// the model was still working, which Claude Code sent as a user message;
/// other attachments (memory files, hook notes, todo lists) are skipped.
fn attachment_event(imported: &mut Imported, line: &Line<'_>) {
    let attachment = line.record.get("attachment").unwrap_or(&Value::Null);
    match str_of(attachment, "type") {
        "queued_command" => {
            let prompt = content_text(attachment.get("prompt"));
            match text_block_event("user", &prompt) {
                Some(event) => imported.events.push(line.finish(event, 0)),
                None => skip(imported, line.no, "a queued command without a prompt"),
            }
        }
        other => skip(
            imported,
            line.no,
            format!("a {other:?} attachment carries no conversation"),
        ),
    }
}

/// A `user` or `assistant` line: one event per content block.
fn message_events(imported: &mut Imported, line: &Line<'_>, role: &str) {
    let Some(message) = line.message() else {
        return skip(
            imported,
            line.no,
            format!("a {role} line without a \"message\""),
        );
    };
    if line.flag("isCompactSummary") {
        let summary = content_text(message.get("content"));
        let summary = Event::new(TraceType::Summary, summary).with_tag(REPLACES_HISTORY_TAG);
        imported.events.push(line.finish(summary, 0));
        return;
    }
    match message.get("content") {
        Some(Value::String(text)) => {
            if let Some(event) = text_block_event(role, text) {
                imported.events.push(line.finish(event, 0));
            }
        }
        Some(Value::Array(blocks)) => {
            let mut events = Vec::new();
            for (index, block) in blocks.iter().enumerate() {
                match block_event(role, block) {
                    Ok(Some(event)) => events.push(line.finish(event, index)),
                    Ok(None) => {}
                    Err(reason) => skip(
                        imported,
                        line.no,
                        format!("content block {index}: {reason}"),
                    ),
                }
            }
            join_text_to_tool_result(&mut events);
            imported.events.extend(events);
        }
        _ => skip(
            imported,
            line.no,
            format!("a {role} message without content"),
        ),
    }
}

/// User text in the message that returns a tool result was written by Claude
/// Code, not typed (`Tool loaded.`), and the model read it with the result: as
/// a user event it would open a turn in the middle of the model's work, so it
/// joins the last result's content. The interrupt marker stays a turn-aborted
/// marker.
fn join_text_to_tool_result(events: &mut Vec<Event>) {
    if !events.iter().any(|e| e.trace_type == TraceType::ToolResult) {
        return;
    }
    // A document keeps its block in `opaque`: it stays an event of its own.
    let joins = |e: &Event| e.trace_type == TraceType::User && e.opaque.is_none();
    let (joined, kept): (Vec<Event>, Vec<Event>) =
        std::mem::take(events).into_iter().partition(joins);
    *events = kept;
    let result = events
        .iter_mut()
        .rfind(|e| e.trace_type == TraceType::ToolResult)
        .expect("a result was found above and results are kept");
    for event in joined {
        if !event.content.is_empty() {
            result.content = match result.content.is_empty() {
                true => event.content,
                false => format!("{}\n\n{}", result.content, event.content),
            };
        }
        if let Some(media) = event.media {
            let into = result.media.get_or_insert_with(Default::default);
            into.images.extend(media.images);
            into.audio.extend(media.audio);
            into.video.extend(media.video);
        }
    }
}

/// The event for one content block: Claude Code's own reading of text (the
/// interrupt marker), else what any Anthropic block maps to.
fn block_event(role: &str, block: &Value) -> Result<Option<Event>, String> {
    match str_of(block, "type") {
        "text" => Ok(text_block_event(role, str_of(block, "text"))),
        _ => anthropic::block_event(role, block),
    }
}

/// Text in a user line is a user message, except the interrupt marker, which
/// says the turn was cut short.
fn text_block_event(role: &str, text: &str) -> Option<Event> {
    if text.trim().is_empty() {
        return None;
    }
    let trace_type = if role == "user" && text.starts_with(INTERRUPT_MARKER) {
        TraceType::TurnAborted
    } else {
        anthropic::role_type(role)
    };
    Some(Event::new(trace_type, text))
}

#[cfg(test)]
mod tests;
