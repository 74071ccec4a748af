//! Where things are: the files of a session's folder, and the agent-wide
//! memory files of an agent's folder.

use std::path::PathBuf;

/// The active log's file name.
pub(crate) const RAW_TRACES_FILE: &str = "raw_traces.jsonl";
/// The archive's file name.
pub(crate) const ARCHIVE_FILE: &str = "raw_traces_archive.jsonl";

/// The files of one session.
#[derive(Debug, Clone)]
pub struct SessionPaths {
    /// The session's folder.
    pub dir: PathBuf,
}

impl SessionPaths {
    /// The active event log, `raw_traces.jsonl`.
    pub fn raw_traces(&self) -> PathBuf {
        self.dir.join(RAW_TRACES_FILE)
    }
    /// The archive of compacted events.
    pub fn archive(&self) -> PathBuf {
        self.dir.join(ARCHIVE_FILE)
    }
    /// The folder of evicted tool outputs.
    pub fn evicted(&self) -> PathBuf {
        self.dir.join(crate::pipeline::guard::EVICTED_DIR)
    }
}

/// The notebook's file name inside the agent folder.
pub(crate) const MEMORY_FILE: &str = "MEMORY.md";
/// The semantic store's file name inside the agent folder.
pub(crate) const SEMANTIC_FILE: &str = "semantic.jsonl";
/// The episodic store's file name inside the agent folder.
pub(crate) const EPISODIC_FILE: &str = "episodic.jsonl";
/// The data directory's file of token counts kept between processes
/// (see [`crate::tokens::KeptCounts`]).
pub(crate) const TOKEN_COUNTS_FILE: &str = "token-counts";
