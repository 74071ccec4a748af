//! Summarizers: compacted history in, a checkpoint summary and facts out.

pub mod extractive;
pub mod fidelity;
