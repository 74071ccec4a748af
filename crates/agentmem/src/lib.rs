//! agentmem: a memory and context engine for LLM agents.
//!
//! An agent hands agentmem every event of a conversation; agentmem keeps the
//! whole record on disk, durably, and (in later layers) builds the context the
//! model sees before each call. This crate is the engine: synchronous, with no
//! network code.
//!
//! The data flows one way: [`event::Event`]s are ingested into a
//! [`session::Session`], which appends them to its durable log
//! ([`store`]) and keeps the in-memory transcript they form. Before each
//! model call the session runs the context [`pipeline`] over that transcript
//! (guard, pair integrity, tiers, compaction, render and measure), one pure
//! stage per file: the pipeline reads and writes no files, the store does.
//!
//! ```
//! use agentmem::{base::event::Event, session::Session, store::Store, Durability};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), Durability::Batch).unwrap();
//! let mut session = store.create_session(&Default::default(), None).unwrap();
//! session.ingest(vec![Event::user("hello"), Event::assistant("hi!")]).unwrap();
//! assert_eq!(session.events()[1].turn_id, "turn_0001");
//! ```

pub mod base;
pub mod config;
pub mod export;
pub mod memory;
pub mod pipeline;
pub mod recall;
pub mod render;
pub mod search;
pub mod session;
pub mod store;
pub mod summarize;
pub mod tokens;
pub mod working;

pub use base::error::{Error, Result};
pub use config::{Config, Durability};
