//! The floor everything stands on: the types and helpers every other module
//! uses, importing nothing above them.
//!
//! - [`error`]: the engine's error type, and the kinds of things it names;
//! - [`id`]: agent, session and event ids, checked before they touch a path;
//! - [`event`]: the event (the raw trace) and how it is read and written;
//! - [`message`], [`turn`], [`tool_interaction`]: what events make —
//!   provider-neutral messages, turns, tool calls paired with their results;
//! - [`state`]: the working memory's patches and updates that events carry;
//! - [`json`], [`hash`], [`arguments`], `fs`, `background`: shared helpers —
//!   JSON nesting limits, hashing, tool arguments, atomic and private files,
//!   threads that work beside the caller.

pub mod arguments;
pub(crate) mod background;
pub mod error;
pub mod event;
pub(crate) mod fs;
pub mod hash;
pub mod id;
pub mod json;
pub mod message;
pub mod state;
pub mod tool_interaction;
pub mod turn;
