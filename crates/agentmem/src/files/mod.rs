//! The on-disk formats: what a data directory holds, and how each file is
//! read and written (plain files under one data directory).
//!
//! ```text
//! <root>/agents/<agent_id>/sessions/<session_id>/
//!     raw_traces.jsonl            the active event log (append-only)
//!     raw_traces_archive.jsonl    events compacted away (append-only, never deleted)
//!     meta.json                   title, counts, fork origin, imports
//!     evicted/<tool_call_id>.txt  full text of evicted tool outputs
//!     snapshot.json               the view's base after a compaction
//!     working_memory.json         the current working memory (a cache of the log)
//!     working_memory.schema.json  the session's working-memory schema, if set
//!     lock                        held by the one writer
//! ```

pub(crate) mod archive;
pub mod evicted;
pub mod jsonl;
pub mod lock;
pub mod meta;
pub(crate) mod paths;
pub mod records;
pub mod snapshot;

pub use paths::SessionPaths;
