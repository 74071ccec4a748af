//! The context pipeline: what keeps the model's view inside its budget.
//!
//! - [`guard`]: write-time truncation and eviction of tool outputs;
//! - [`call_ids`]: which call a tool call id names, when agents reuse ids;
//! - [`normalize`]: tool call / result pair integrity, as pure passes;
//! - [`strategy`]: the strategies and their settings;
//! - [`tiers`]: view-level shrinking (budgeting, snip, microcompact, trim);
//! - [`compact`]: what a compaction folds into a summary, and the snapshot base;
//! - [`overflow`]: provider context-overflow errors, classified.

pub mod call_ids;
pub mod compact;
pub mod guard;
pub mod normalize;
pub mod overflow;
pub mod strategy;
pub mod tiers;
