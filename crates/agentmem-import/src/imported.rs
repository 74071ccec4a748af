//! What an importer makes of a transcript: events, and the records it left out.

use agentmem::Event;

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

/// A record of the source that was not imported as it was written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// 1-based line (JSONL, and bytes that are not UTF-8) or record index
    /// (JSON lists) in the source.
    pub line: usize,
    /// What was wrong with the record, if anything.
    pub kind: SkipKind,
    /// Why the record was not imported as written.
    pub reason: String,
}

impl Skipped {
    /// A record that is not what its format says, left out.
    pub(crate) fn malformed(line: usize, reason: impl Into<String>) -> Skipped {
        Skipped {
            line,
            kind: SkipKind::Malformed,
            reason: reason.into(),
        }
    }

    /// A well-formed record left out on purpose.
    pub(crate) fn left_out(line: usize, reason: impl Into<String>) -> Skipped {
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
