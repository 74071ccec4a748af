//! The context pipeline: what keeps the model's view inside its budget, one
//! file per stage, in the order a prepare runs them. Every stage is pure: it
//! reads and writes no files (what the guard evicts is kept by the store).
//!
//! - [`transcript`]: the session's events as the model's view, with each
//!   item's token counts kept as the view grows;
//! - [`guard`]: write-time truncation and eviction of tool outputs;
//! - [`call_ids`]: which call a tool call id names, when agents reuse ids;
//! - [`normalize`]: tool call / result pair integrity, as pure passes;
//! - [`strategy`]: the strategies and their settings;
//! - [`tiers`]: view-level shrinking (budgeting, snip, microcompact, trim);
//! - [`compact`]: what a compaction folds into a summary, and the snapshot base;
//! - `segments`: the view cut into segments that render apart, their
//!   renders kept from one call to the next;
//! - [`measure`]: the rendered payload and what it costs against the budget;
//! - [`overflow`]: provider context-overflow errors, classified.

pub mod call_ids;
pub mod compact;
pub mod guard;
pub mod measure;
pub mod normalize;
pub mod overflow;
pub(crate) mod segments;
pub mod strategy;
pub mod tiers;
pub mod transcript;
