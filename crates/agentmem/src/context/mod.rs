//! The context pipeline: what keeps the model's view inside its budget.
//!
//! - [`guard`]: write-time truncation and eviction of tool outputs;
//! - [`normalize`]: tool call / result pair integrity, as pure passes.

pub mod guard;
pub mod normalize;
