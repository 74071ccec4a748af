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

use agentmem::event::{
    parse_rfc3339, Event, Media, TraceType, Usage, ABANDONED_BRANCH_TAG, DISPLAY_ONLY_TAG,
    REPLACES_HISTORY_TAG,
};
use serde_json::{Map, Value};

use super::openai_messages::content_text;
use crate::imported::{Imported, Skipped};
use crate::record::{json_object_line, stable_id, verbatim_reasoning};

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
            event.tags.push(agentmem::event::SIDECHAIN_TAG.into());
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

/// The event for one content block; `Ok(None)` for an empty text block, and
/// `Err` with the reason for a block this importer does not map.
fn block_event(role: &str, block: &Value) -> Result<Option<Event>, String> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let event = match kind {
        "text" => return Ok(text_block_event(role, str_of(block, "text"))),
        "tool_use" => Event::tool_call(
            str_of(block, "id"),
            str_of(block, "name"),
            object_or_empty(block.get("input")),
        ),
        "tool_result" => tool_result_event(block),
        "thinking" => verbatim_reasoning(str_of(block, "thinking"), block),
        "redacted_thinking" => verbatim_reasoning("", block),
        "image" => {
            let image = image_ref(block).ok_or("an image block without a usable source")?;
            let mut event = Event::new(role_type(role), "");
            event.media = media(vec![image]);
            event
        }
        "document" => document_event(role, block),
        other => return Err(format!("unsupported block type {other:?}")),
    };
    Ok(Some(event))
}

/// A `document` block (a PDF or text file the user attached). [`Media`] holds
/// images, audio and video only, and a document passed off as an image would
/// be sent as one; so the content says what was attached (title, media type,
/// size), or is the document's text when it is plain text, and the block is
/// kept verbatim in `opaque`, so nothing of it is lost and a replay to the
/// same provider can send it back unchanged.
fn document_event(role: &str, block: &Value) -> Event {
    let mut event = Event::new(role_type(role), document_text(block));
    event.opaque = Some(block.clone());
    event
}

/// What the model read of a document: its text for a plain-text source, else
/// a placeholder naming it, e.g. `[document attached: "spec.pdf",
/// application/pdf, 1.2 MB]`.
fn document_text(block: &Value) -> String {
    let source = block.get("source").unwrap_or(&Value::Null);
    let title = match str_of(block, "title") {
        "" => String::new(),
        title => format!("{title:?}, "),
    };
    let media_type = match str_of(source, "media_type") {
        "" => "unknown type",
        media_type => media_type,
    };
    match str_of(source, "type") {
        "base64" => {
            let size = readable_size(base64_decoded_len(str_of(source, "data")));
            format!("[document attached: {title}{media_type}, {size}]")
        }
        "url" => format!("[document attached: {title}{}]", str_of(source, "url")),
        "file" => format!(
            "[document attached: {title}file {}]",
            str_of(source, "file_id")
        ),
        "text" => format!(
            "[document attached: {title}{media_type}]\n{}",
            str_of(source, "data")
        ),
        "content" => format!(
            "[document attached: {title}content blocks]\n{}",
            content_text(source.get("content"))
        ),
        other => format!("[document attached: {title}a {other:?} source]"),
    }
}

/// The number of bytes base64 `data` decodes to.
fn base64_decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4 * 3 / 4)).saturating_sub(padding)
}

/// A byte count for a person or a model: `512 bytes`, `3.4 KB`, `1.2 MB`.
fn readable_size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    let size = bytes as f64;
    if size < KB {
        format!("{bytes} bytes")
    } else if size < KB * KB {
        format!("{:.1} KB", size / KB)
    } else {
        format!("{:.1} MB", size / (KB * KB))
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
        role_type(role)
    };
    Some(Event::new(trace_type, text))
}

fn role_type(role: &str) -> TraceType {
    if role == "assistant" {
        TraceType::Assistant
    } else {
        TraceType::User
    }
}

fn tool_result_event(block: &Value) -> Event {
    let call_id = str_of(block, "tool_use_id");
    let content = block.get("content");
    let text = tool_result_text(content);
    let is_error = block
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut event = if is_error {
        Event::tool_error(call_id, text)
    } else {
        Event::tool_result(call_id, text)
    };
    let images: Vec<String> = match content {
        Some(Value::Array(parts)) => parts.iter().filter_map(image_ref).collect(),
        _ => Vec::new(),
    };
    event.media = media(images);
    event
}

/// A tool result's content as text: a string, or its parts joined by
/// newlines. A `tool_reference` part (a tool search naming the tool it
/// loaded) has no text of its own, so it is written as `tool reference: Name`
/// rather than leaving the result empty; images ride in `media`.
fn tool_result_text(content: Option<&Value>) -> String {
    let Some(Value::Array(parts)) = content else {
        return content_text(content);
    };
    parts
        .iter()
        .filter_map(|part| match str_of(part, "type") {
            "tool_reference" => Some(format!("tool reference: {}", str_of(part, "tool_name"))),
            _ => part
                .get("text")
                .and_then(Value::as_str)
                .or_else(|| part.as_str())
                .map(str::to_owned),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An image block as a reference: a data URI for inline base64, else its URL.
fn image_ref(block: &Value) -> Option<String> {
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let source = block.get("source")?;
    match source.get("type").and_then(Value::as_str)? {
        "base64" => {
            let media_type = source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image/png");
            let data = source.get("data").and_then(Value::as_str)?;
            Some(format!("data:{media_type};base64,{data}"))
        }
        "url" => source.get("url").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn media(images: Vec<String>) -> Option<Media> {
    (!images.is_empty()).then(|| Media {
        images,
        ..Media::default()
    })
}

/// `message.usage`: the prompt is input plus both cache counts (Anthropic
/// reports them apart; the prompt the model read holds all three).
fn usage(message: &Map<String, Value>) -> Option<Usage> {
    let usage = message.get("usage")?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cache_read = count("cache_read_input_tokens");
    Some(Usage {
        estimated_prompt_tokens: None,
        estimated_view_tokens: None,
        prompt_tokens: count("input_tokens") + count("cache_creation_input_tokens") + cache_read,
        completion_tokens: count("output_tokens"),
        cached_tokens: cache_read,
        model: message
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn object_or_empty(value: Option<&Value>) -> Value {
    value.cloned().unwrap_or_else(|| Value::Object(Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentmem::tool_interaction::{tool_interactions, ToolStatus};

    const SESSION: &str = r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"run the tests"},"uuid":"u1","timestamp":"2025-06-02T18:46:59.937Z","sessionId":"s-1"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"run cargo test","signature":"sig=="},{"type":"text","text":"Running them."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":50}},"uuid":"a1","timestamp":"2025-06-02T18:47:01.000Z","sessionId":"s-1"}
{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1 failed","is_error":true}]},"uuid":"u2","timestamp":"2025-06-02T18:47:05.000Z","sessionId":"s-1"}
not json at all
{"type":"summary","summary":"Fix the failing test","leafUuid":"u2"}"#;

    #[test]
    fn blocks_become_events_with_usage_and_pairing() {
        let imported = parse(SESSION).unwrap();
        let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
        assert_eq!(
            kinds,
            [
                TraceType::User,
                TraceType::Reasoning,
                TraceType::Assistant,
                TraceType::ToolCall,
                TraceType::ToolResult,
                TraceType::System
            ]
        );
        assert_eq!(imported.source_session_id.as_deref(), Some("s-1"));
        assert_eq!(imported.records, 6);
        let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
        assert_eq!(skipped, [1, 5]);
        let usage = imported.events[3].usage.as_ref().unwrap();
        assert_eq!(
            (
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens
            ),
            (1110, 50, 1000)
        );
        assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            imported.events[1].opaque.as_ref().unwrap()["signature"],
            "sig=="
        );
        assert_eq!(imported.events[3].id, "cc-a1-2");
        let view = tool_interactions(&imported.events);
        assert_eq!(view.len(), 1);
        assert_eq!(view[0].status, ToolStatus::Error);
        assert_eq!(view[0].arguments["command"], "cargo test");
    }

    #[test]
    fn sidechain_meta_and_interrupts_are_marked() {
        let text = r#"{"type":"user","isSidechain":true,"uuid":"x1","message":{"role":"user","content":"explore"}}
{"type":"user","isMeta":true,"uuid":"x2","message":{"role":"user","content":"<command-name>/clear</command-name>"}}
{"type":"user","uuid":"x3","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}
{"type":"assistant","uuid":"x4","message":{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque"},{"type":"server_tool_use","id":"s"}]}}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events[0].tags, ["sidechain"]);
        assert_eq!(imported.events[1].tags, ["meta"]);
        assert_eq!(imported.events[2].trace_type, TraceType::TurnAborted);
        assert_eq!(
            imported.events[3].opaque.as_ref().unwrap()["data"],
            "opaque"
        );
        assert_eq!(imported.skipped.len(), 1);
        assert!(imported.skipped[0].reason.contains("server_tool_use"));
    }

    #[test]
    fn empty_messages_and_system_lines_are_accounted_for() {
        let text = r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"y1"}
{"type":"system","subtype":"stop_hook_summary","uuid":"y2"}
{"type":"assistant","uuid":"y3","message":{"role":"assistant","content":[{"type":"text","text":"  "}]}}
{"type":"user","uuid":"y4","isCompactSummary":true,"message":{"role":"user","content":"Summary: fixed it"}}"#;
        let imported = parse(text).unwrap();
        let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
        assert_eq!(kinds, [TraceType::System, TraceType::Summary]);
        assert!(!imported.events[0].is_in_model_view());
        assert!(imported.events[1].is_in_model_view());
        assert!(imported.events[1].replaces_history());
        let skipped: Vec<usize> = imported.skipped.iter().map(|s| s.line).collect();
        assert_eq!(skipped, [2, 3]);
    }

    #[test]
    fn display_only_system_lines_stay_out_of_the_model_view() {
        let text = r#"{"type":"system","subtype":"away_summary","content":"Waiting on the log file path.","uuid":"d1","timestamp":"2026-05-06T08:30:00.000Z"}
{"type":"system","subtype":"local_command","content":"<local-command-stdout> Context Usage\n  88.7k/200k tokens (44%)\n</local-command-stdout>","level":"info","uuid":"d2"}
{"type":"system","subtype":"turn_duration","durationMs":42742,"uuid":"d3"}
{"type":"system","content":"Running PostToolUse hooks","level":"info","uuid":"d4"}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 3);
        for event in &imported.events {
            assert_eq!(event.trace_type, TraceType::System);
            assert!(event.tags.iter().any(|t| t == DISPLAY_ONLY_TAG));
            assert!(!event.is_in_model_view(), "{event:?}");
        }
        assert!(imported.events[1].tags.iter().any(|t| t == "local_command"));
        assert_eq!(imported.skipped[0].line, 3);
        assert!(imported.skipped[0].reason.contains("turn_duration"));
    }

    #[test]
    fn api_errors_are_not_replayed_as_model_output() {
        let text = r#"{"type":"user","uuid":"e1","message":{"role":"user","content":"fix the lexer"}}
{"type":"assistant","isApiErrorMessage":true,"uuid":"e2","message":{"id":"msg_err","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"API Error: Connection closed mid-response"}],"usage":{"input_tokens":0,"output_tokens":0}}}
{"type":"assistant","uuid":"e3","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Fixed."}]}}"#;
        let imported = parse(text).unwrap();
        let error = &imported.events[1];
        assert_eq!(error.trace_type, TraceType::System);
        assert_eq!(error.content, "API Error: Connection closed mid-response");
        assert!(error.tags.iter().any(|t| t == API_ERROR_TAG));
        assert!(!error.is_in_model_view());
        assert!(error.usage.is_none());
        let in_view: Vec<&str> = imported
            .events
            .iter()
            .filter(|e| e.is_in_model_view())
            .map(|e| e.content.as_str())
            .collect();
        assert_eq!(in_view, ["fix the lexer", "Fixed."]);
    }

    #[test]
    fn a_queued_command_is_a_user_message() {
        let text = r#"{"type":"attachment","uuid":"q1","timestamp":"2026-05-06T08:14:57.000Z","attachment":{"type":"queued_command","prompt":"also push it"}}
{"type":"attachment","uuid":"q2","attachment":{"type":"nested_memory","path":"CLAUDE.md","content":{"content":"Always run cargo fmt."}}}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 1);
        assert_eq!(imported.events[0].trace_type, TraceType::User);
        assert_eq!(imported.events[0].content, "also push it");
        assert_eq!(imported.events[0].id, "cc-q1-0");
        assert!(imported.events[0].ts > 1.7e9);
        assert_eq!(imported.skipped[0].line, 2);
        assert!(imported.skipped[0].reason.contains("nested_memory"));
    }

    #[test]
    fn text_beside_a_tool_result_stays_in_the_turn() {
        let text = r#"{"type":"user","uuid":"t1","message":{"role":"user","content":"read the parser"}}
{"type":"assistant","uuid":"t2","message":{"id":"msg_t","role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"ToolSearch","input":{"query":"select:Read"}}]}}
{"type":"user","uuid":"t3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"Read"}]},{"type":"text","text":"Tool loaded."}]}}
{"type":"assistant","uuid":"t4","message":{"id":"msg_u","role":"assistant","content":[{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"sleep 100"}}]}}
{"type":"user","uuid":"t5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"The user doesn't want to proceed with this tool use.","is_error":true},{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
        let imported = parse(text).unwrap();
        let kinds: Vec<TraceType> = imported.events.iter().map(|e| e.trace_type).collect();
        assert_eq!(
            kinds,
            [
                TraceType::User,
                TraceType::ToolCall,
                TraceType::ToolResult,
                TraceType::ToolCall,
                TraceType::ToolResult,
                TraceType::TurnAborted
            ]
        );
        assert_eq!(
            imported.events[2].content,
            "tool reference: Read\n\nTool loaded."
        );
        let mut tracker = agentmem::turn::TurnTracker::default();
        let turns: std::collections::HashSet<String> = imported
            .events
            .into_iter()
            .map(|mut event| {
                tracker.assign(&mut event);
                event.turn_id
            })
            .collect();
        assert_eq!(turns.len(), 1, "{turns:?}");
    }

    #[test]
    fn a_rewound_branch_stays_in_the_log_but_out_of_the_view() {
        let line = |uuid: &str, parent: &str, kind: &str, text: &str| {
            format!(
                r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"message":{{"role":"{kind}","content":[{{"type":"text","text":"{text}"}}]}}}}"#
            )
        };
        let text = [
            line("u1", "null", "user", "Start"),
            line("a1", r#""u1""#, "assistant", "Ready"),
            line("b1u", r#""a1""#, "user", "First attempt"),
            line("b1a", r#""b1u""#, "assistant", "First answer"),
            line("b2u", r#""a1""#, "user", "Second attempt"),
            line("b2a", r#""b2u""#, "assistant", "Second answer"),
            r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"cb","parentUuid":null,"logicalParentUuid":"b2a"}"#.to_owned(),
            line("p1u", r#""cb""#, "user", "After compaction"),
        ]
        .join("\n");
        let imported = parse(&text).unwrap();
        let abandoned: Vec<&str> = imported
            .events
            .iter()
            .filter(|e| e.tags.iter().any(|t| t == ABANDONED_BRANCH_TAG))
            .map(|e| e.content.as_str())
            .collect();
        assert_eq!(abandoned, ["First attempt", "First answer"]);
        let viewed = imported.events.iter().filter(|e| e.is_in_model_view());
        let viewed: Vec<&str> = viewed.map(|e| e.content.as_str()).collect();
        assert_eq!(
            viewed,
            [
                "Start",
                "Ready",
                "Second attempt",
                "Second answer",
                "After compaction"
            ]
        );
    }

    #[test]
    fn results_written_beside_their_calls_are_not_a_rewind() {
        let text = r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"read both"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{}}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"}]}}
{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"two"}]}}
{"type":"user","uuid":"m1","parentUuid":"xx-in-another-file","message":{"role":"user","content":"a prompt whose parent is elsewhere"}}"#;
        let imported = parse(text).unwrap();
        assert!(imported.events.iter().all(|e| e.is_in_model_view()));
    }

    #[test]
    fn an_image_beside_a_tool_result_joins_it() {
        let text = r#"{"type":"assistant","uuid":"i1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Screenshot","input":{}}]}}
{"type":"user","uuid":"i2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"captured"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"Here it is."}]}}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 2, "{:?}", imported.events);
        let result = &imported.events[1];
        assert_eq!(result.content, "captured\n\nHere it is.");
        assert_eq!(result.media.as_ref().unwrap().images.len(), 1);
        assert!(imported.skipped.is_empty());
    }

    #[test]
    fn a_tool_reference_result_names_the_tool() {
        let text = r#"{"type":"assistant","uuid":"r1","message":{"id":"msg_r","role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"ToolSearch","input":{"query":"select:Read"}}]}}
{"type":"user","uuid":"r2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"Read"}]}]}}"#;
        let imported = parse(text).unwrap();
        assert_eq!(imported.events[1].content, "tool reference: Read");
        let view = tool_interactions(&imported.events);
        assert_eq!(view[0].status, ToolStatus::Success);
    }

    #[test]
    fn tool_result_images_become_media() {
        let text = r#"{"type":"user","uuid":"z1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}}"#;
        let imported = parse(text).unwrap();
        let event = &imported.events[0];
        assert_eq!(event.content, "screenshot");
        assert_eq!(
            event.media.as_ref().unwrap().images,
            ["data:image/png;base64,iVBO"]
        );
    }

    #[test]
    fn a_summary_line_is_a_display_only_session_title() {
        let text = r#"{"type":"user","uuid":"s1","timestamp":"2026-05-06T08:00:00.000Z","message":{"role":"user","content":"split the auth module"}}
{"type":"summary","summary":"Refactoring auth module","leafUuid":"s1"}
{"type":"summary","summary":"  ","leafUuid":"s1"}"#;
        let imported = parse(text).unwrap();
        let title = &imported.events[1];
        assert_eq!(title.trace_type, TraceType::System);
        assert_eq!(title.content, "Refactoring auth module");
        assert_eq!(title.tags, [SESSION_TITLE_TAG, DISPLAY_ONLY_TAG]);
        assert!(!title.is_in_model_view());
        assert!(!title.replaces_history());
        assert_eq!(imported.skipped.len(), 1);
        assert_eq!(imported.skipped[0].line, 3);
        assert!(imported.skipped[0].reason.contains("session title"));
    }

    #[test]
    fn a_document_is_named_and_kept_whole() {
        let text = r#"{"type":"user","uuid":"p1","timestamp":"2026-05-06T08:32:00.000Z","message":{"role":"user","content":[{"type":"document","title":"spec.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}},{"type":"text","text":"summarize this spec"}]}}
{"type":"user","uuid":"p2","message":{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"TODO: tabs"}}]}}"#;
        let imported = parse(text).unwrap();
        assert!(imported.skipped.is_empty());
        let pdf = &imported.events[0];
        assert_eq!(pdf.trace_type, TraceType::User);
        assert_eq!(
            pdf.content,
            "[document attached: \"spec.pdf\", application/pdf, 9 bytes]"
        );
        assert_eq!(
            pdf.opaque.as_ref().unwrap()["source"]["data"],
            "JVBERi0xLjQK"
        );
        assert_eq!(imported.events[1].content, "summarize this spec");
        assert_eq!(
            imported.events[2].content,
            "[document attached: text/plain]\nTODO: tabs"
        );
    }

    #[test]
    fn document_sizes_read_well() {
        assert_eq!(base64_decoded_len("JVBERi0x"), 6);
        assert_eq!(base64_decoded_len("JVBERi0="), 5);
        assert_eq!(base64_decoded_len("JVBERg=="), 4);
        assert_eq!(readable_size(512), "512 bytes");
        assert_eq!(readable_size(3 * 1024 + 512), "3.5 KB");
        assert_eq!(readable_size(5 * 1024 * 1024), "5.0 MB");
    }
}
