//! `snapshot.json`: the base of the model's view after a compaction.
//!
//! The snapshot holds the events that stand for compacted history (the
//! summary, the user messages and protected tool results kept, turn-aborted
//! markers). The model's view is the base followed by the active log, which
//! after a compaction holds only the raw tail: resuming reads only what came
//! after the checkpoint. It also names the working memory as of the
//! compaction. Like everything a compaction derives, it holds nothing
//! unredacted. It is rewritten atomically, and writing it commits a
//! compaction: what follows (the active log cut to the tail, the episodic
//! item and facts, the counts) is finished on the next open when a crash
//! stopped it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, IoContext, Result};
use crate::base::event::Event;
use crate::base::fs::write_atomic;

/// The snapshot's file name inside a session directory.
pub const SNAPSHOT_FILE: &str = "snapshot.json";

/// The current compaction snapshot of a session.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Compactions so far.
    pub compactions: u64,
    /// When this snapshot was made (seconds since the epoch).
    pub created: f64,
    /// The first event of the active log right after the compaction (the
    /// raw tail's first event); `None` when the tail was empty. A log that
    /// starts elsewhere is one whose compaction was interrupted.
    pub active_first_id: Option<String>,
    /// Events in the active log right after the compaction. Usage reported
    /// by those measured the context before it, so it anchors nothing now.
    pub tail_events: usize,
    /// Events that stand for the compacted history, in view order.
    pub base: Vec<Event>,
    /// The report of the compaction that made this snapshot.
    #[serde(default)]
    pub report: serde_json::Value,
    /// The working memory as of the compaction, by version and hash: the
    /// state the log's archived updates made (its document is raw record,
    /// kept by the log and `working_memory.json`, not here). `None` in
    /// snapshots written before working memory existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_memory: Option<crate::base::state::StateMark>,
    /// Events in the archive once this compaction's span is in it. `None`
    /// in snapshots written before compactions were finished on open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_events: Option<usize>,
    /// What the compaction leaves in the agent's long-term memory, kept
    /// with the commit so a crash before it is written cannot lose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<CompactionMemory>,
}

/// What one compaction leaves in the agent's long-term memory: the
/// episodic item of its span and the facts its summary found, redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionMemory {
    /// The episode the compaction wrote.
    pub episode: crate::files::records::EpisodicItem,
    #[serde(default)]
    /// The facts it drew.
    pub facts: Vec<crate::files::records::NewFact>,
}

impl Snapshot {
    /// Reads the snapshot in `session_dir`, if there is one.
    pub fn read(session_dir: &Path) -> Result<Option<Snapshot>> {
        let path = session_dir.join(SNAPSHOT_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::BadLine {
                    path: path.display().to_string(),
                    line: e.line(),
                    message: e.to_string(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).io("read", &path),
        }
    }

    /// Writes the snapshot into `session_dir` atomically.
    pub fn write(&self, session_dir: &Path) -> Result<()> {
        let json = serde_json::to_vec(self).expect("snapshot serializes");
        write_atomic(&session_dir.join(SNAPSHOT_FILE), &json)
    }
}
