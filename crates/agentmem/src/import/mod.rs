//! Importers: real agent transcripts in, raw trace events out.
//!
//! Each format has its own module with one entry point,
//! `parse(text: &str) -> Result<Imported, String>`. Importers never assign
//! turns or seqs (the session does, with the same rules as live ingest) but
//! they do give every event a *stable* id derived from the source, so
//! importing a file that grew appends only the events that are new.

mod agentmem_events;
mod claude_code;
mod codex;
mod destination;
mod detect;
mod openai_messages;
mod openhands;
mod openhands_sdk;
mod swe_agent;

use std::fmt;
use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::event::Event;
use crate::utf8::Decoded;

pub use destination::session_id_for;
pub use detect::detect_format;

/// A transcript format agentmem can import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// agentmem's own events, one JSON object a line (also the neutral workload format).
    Events,
    /// A JSON list of OpenAI chat messages (`{role, content, tool_calls, tool_call_id}`),
    /// or an object holding one under `messages`.
    OpenAiMessages,
    /// A Claude Code session log (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
    /// A SWE-agent trajectory (`*.traj`).
    SweAgent,
    /// An OpenHands event list (JSON), or the agent SDK's ("V1") events as a
    /// JSON list or one a line (JSONL).
    OpenHands,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 6] = [
        Format::Events,
        Format::OpenAiMessages,
        Format::ClaudeCode,
        Format::Codex,
        Format::SweAgent,
        Format::OpenHands,
    ];

    /// The name used on the command line and in `source_event` (`import:<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Events => "events",
            Format::OpenAiMessages => "openai-messages",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::SweAgent => "swe-agent",
            Format::OpenHands => "openhands",
        }
    }

    /// The format with this `name`, if any.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The names of all formats, comma-separated, for messages.
    pub fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A record of the source that was not imported as it was written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// 1-based line (JSONL, and bytes that are not UTF-8) or record index
    /// (JSON lists) in the source.
    pub line: usize,
    pub kind: SkipKind,
    pub reason: String,
}

impl Skipped {
    /// A record that is not what its format says, left out.
    pub fn malformed(line: usize, reason: impl Into<String>) -> Skipped {
        Skipped {
            line,
            kind: SkipKind::Malformed,
            reason: reason.into(),
        }
    }

    /// A well-formed record left out on purpose.
    pub fn left_out(line: usize, reason: impl Into<String>) -> Skipped {
        Skipped {
            line,
            kind: SkipKind::LeftOut,
            reason: reason.into(),
        }
    }
}

/// What was wrong with a [`Skipped`] record, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipKind {
    /// The source is damaged there: a line that is not UTF-8, not JSON, not
    /// an object, not a valid event. The record was left out.
    Malformed,
    /// Bytes that are not UTF-8 inside a JSON document: left out, the
    /// document would not parse, so they were read as U+FFFD and the
    /// record imported with them replaced.
    Repaired,
    /// A well-formed record that carries no conversation (a file snapshot,
    /// a state change, a demonstration) or that was left out on purpose.
    LeftOut,
}

impl SkipKind {
    /// Whether the source was damaged there: something a caller should be
    /// told went wrong, not a record left out by design.
    pub fn is_damage(self) -> bool {
        match self {
            SkipKind::Malformed | SkipKind::Repaired => true,
            SkipKind::LeftOut => false,
        }
    }
}

/// How a transcript's text holds its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One record a line: a damaged line costs that record.
    Lines,
    /// One JSON document: its lines are not records of their own.
    Document,
}

impl Format {
    fn layout(self, text: &str) -> Layout {
        match self {
            Format::Events | Format::ClaudeCode | Format::Codex => Layout::Lines,
            Format::OpenAiMessages | Format::SweAgent => Layout::Document,
            Format::OpenHands => match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Layout::Document,
                Err(_) => Layout::Lines,
            },
        }
    }
}

/// What an importer made of a transcript.
#[derive(Debug, Default, Clone)]
pub struct Imported {
    /// The events, in transcript order, with stable ids and no turn/seq.
    pub events: Vec<Event>,
    /// The session id the source names for itself, when it has one.
    pub source_session_id: Option<String>,
    /// Source records read (lines, list items or trajectory steps).
    pub records: usize,
    /// Records left out: malformed ones, and kinds that carry no conversation
    /// (file snapshots, state changes), each with the reason.
    pub skipped: Vec<Skipped>,
}

/// Reads the transcript at `path` and imports it as `format`, or as the
/// format detected from it. A line that is not UTF-8 costs that line, never
/// the file: in a transcript of one record a line it is left out, in a JSON
/// document its bad bytes are read as U+FFFD; either way it is listed in
/// `skipped` with its line number ([`SkipKind::is_damage`]).
pub fn read(path: &Path, format: Option<Format>) -> Result<(Format, Imported)> {
    let bytes = std::fs::read(path).io("read the transcript", path)?;
    let decoded = Decoded::new(bytes);
    let format = match format {
        Some(format) => format,
        None => detect_format(path, &decoded.text)?,
    };
    if decoded.not_utf8.is_empty() {
        return Ok((format, parse(format, path, &decoded.text)?));
    }
    let layout = format.layout(&decoded.text);
    let text = match layout {
        Layout::Lines => decoded.without_bad_lines(),
        Layout::Document => std::borrow::Cow::Borrowed(decoded.text.as_str()),
    };
    let mut imported = parse(format, path, &text)?;
    for bad in &decoded.not_utf8 {
        let reason = format!("not UTF-8 text ({})", bad.where_bad());
        imported.skipped.push(match layout {
            Layout::Lines => {
                imported.records += 1;
                Skipped::malformed(bad.line, reason)
            }
            Layout::Document => Skipped {
                line: bad.line,
                kind: SkipKind::Repaired,
                reason: format!("{reason}; read with U+FFFD for the bytes that are not"),
            },
        });
    }
    imported.skipped.sort_by_key(|skipped| skipped.line);
    Ok((format, imported))
}

/// Parses `text` (the contents of `path`) as `format`.
pub fn parse(format: Format, path: &Path, text: &str) -> Result<Imported> {
    let parsed = match format {
        Format::Events => agentmem_events::parse(text),
        Format::OpenAiMessages => openai_messages::parse(text),
        Format::ClaudeCode => claude_code::parse(text),
        Format::Codex => codex::parse(text),
        Format::SweAgent => swe_agent::parse(text),
        Format::OpenHands => openhands::parse(text),
    };
    let mut imported = parsed.map_err(|message| Error::BadInput {
        path: path.display().to_string(),
        format: format.name().to_owned(),
        message,
    })?;
    let source = source_of(format);
    for event in &mut imported.events {
        if event.source_event.is_empty() {
            event.source_event.clone_from(&source);
        }
        keep_too_deep_values_as_text(event);
    }
    Ok(imported)
}

/// A transcript's values are kept whatever their depth: one that nests
/// deeper than [`crate::json::MAX_NESTING`] is kept as its JSON text, which
/// ingest accepts, rather than refused with the whole file.
pub(crate) fn keep_too_deep_values_as_text(event: &mut Event) {
    let as_text_if_too_deep = |value: &mut serde_json::Value| {
        if crate::json::nesting(value) > crate::json::MAX_NESTING {
            *value = serde_json::Value::String(value.to_string());
        }
    };
    [
        &mut event.tool_args,
        &mut event.tool_result,
        &mut event.opaque,
    ]
    .into_iter()
    .flatten()
    .for_each(as_text_if_too_deep);
    let too_deep: Vec<(String, String)> = event
        .extra
        .iter()
        .filter(|(_, raw)| crate::json::text_nesting(raw.get()) > crate::json::MAX_NESTING)
        .map(|(key, raw)| (key.to_owned(), raw.get().to_owned()))
        .collect();
    for (key, text) in too_deep {
        event.extra.insert(key, serde_json::Value::String(text));
    }
}

/// The `source_event` of the events imported from `format`.
pub(crate) fn source_of(format: Format) -> String {
    format!("import:{}", format.name())
}

/// One line of a JSONL transcript as the object it must be, or why it is not.
pub(crate) fn json_object_line(
    raw: &str,
) -> std::result::Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(record)) => Ok(record),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// A reasoning event reading `text`, with the provider's block kept verbatim
/// in `opaque`: a signed or encrypted block must go back unchanged.
pub(crate) fn verbatim_reasoning(text: &str, block: &serde_json::Value) -> Event {
    let mut event = Event::new(crate::event::TraceType::Reasoning, text);
    event.opaque = Some(block.clone());
    event
}

/// A stable event id: `<prefix>-<position>-<hash of the record>`.
///
/// The position keeps ids of a growing file unchanged for the records already
/// seen; the hash keeps two different files from sharing ids.
pub(crate) fn stable_id(prefix: &str, position: usize, record: &str) -> String {
    format!(
        "{prefix}-{position}-{:08x}",
        crate::hash::fnv1a(record.as_bytes()) as u32
    )
}
