//! agentmem: a memory and context engine for LLM agents.
//!
//! An agent hands agentmem every event of a conversation; agentmem keeps the
//! whole record on disk, durably, and builds the context the model sees
//! before each call. This crate is the engine: synchronous, with no network
//! code.
//!
//! ```
//! use agentmem::{AgentId, Durability, Event, PrepareRequest, Store, Target, Usage};
//!
//! // A store is a data directory; a session is one conversation in it.
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), Durability::Batch)?;
//! let mut session = store.create_session(&AgentId::default(), None)?;
//! session.ingest(vec![Event::user("What is in Cargo.toml?")])?;
//!
//! // The context for the next model call, rendered for one provider's API.
//! let prepared = session.prepare(&PrepareRequest::new("gpt-4.1", Target::OpenAiChat))?;
//! assert!(prepared.stats.context_tokens <= prepared.stats.input_budget);
//! let body = serde_json::to_vec(&prepared.payload)?; // the request body to send
//! assert!(!body.is_empty());
//!
//! // The reply comes back in with the usage the provider reported, which
//! // calibrates the next count.
//! let mut reply = Event::assistant("A workspace of seven crates.");
//! reply.usage = Some(Usage { prompt_tokens: 21, completion_tokens: 8, ..Usage::default() });
//! session.ingest(vec![reply])?;
//! assert_eq!(session.events()[1].turn_id, "turn_0001");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The public API
//!
//! The crate root re-exports the names a program needs; the modules hold the
//! rest, for the service, the CLI and tools built on the engine.
//!
//! - The store and its sessions: [`Store`], [`Session`], [`AgentId`],
//!   [`SessionId`], [`SessionMeta`], [`CompactOptions`], [`IngestReport`].
//! - Events: [`Event`], [`TraceType`], [`Usage`]; the tool calls they pair
//!   into, [`ToolInteraction`] and [`ToolStatus`].
//! - Preparing a model call: [`PrepareRequest`] (with its [`BudgetSettings`]),
//!   [`Prepared`], [`ContextStats`].
//! - Targets and payloads: [`Target`], [`Payload`], [`ToolSchema`],
//!   [`PromptCache`].
//! - The storage seam: [`Storage`], [`SessionWriter`], [`Backend`], and the
//!   files backend, [`FilesStorage`] (see [`storage`]).
//! - Errors: [`Error`], [`Result`].
//! - The seams an application plugs in: [`Summarizer`] (with [`Summary`],
//!   [`SummaryRequest`], [`SummaryFact`], [`FactKind`], [`SummarizeError`]),
//!   [`Embedder`], [`Reranker`].
//! - Recall and search: [`RecallRequest`], [`Recalled`], [`SearchFilter`],
//!   [`SearchHit`], [`SearchRole`].
//! - Working memory: [`WorkingMemory`], [`StatePatch`].
//! - Configuration: [`Config`], [`Durability`], [`Encoding`].
//!
//! The data flows one way: [`Event`]s are ingested into a [`Session`], which
//! appends them to its durable log ([`files`]) and keeps the in-memory
//! transcript they form. Before each model call the session runs the context
//! [`pipeline`] over that transcript (guard, pair integrity, tiers,
//! compaction, render and measure), one pure stage per file: the pipeline
//! reads and writes no files, [`files`] does.
//!
//! The modules stand in floors: a module imports only from its own floor
//! and the floors below it (`tests/floors.rs` checks this list against
//! every `crate::` path). Top to bottom:
//!
//! <!-- floors -->
//! 1. `store`, `config`, `tools`, `export`, `ahead`: the [`Store`] facade that opens sessions, the layered configuration, the agent's memory and working-memory tools, export formats, the process-wide tables built ahead of need.
//! 2. `session`: a session orchestrating its log, view, accounting, memory injector and working memory.
//! 3. `memory`: long-term memory — `MEMORY.md`, project files, facts, episodes, recall and the injector.
//! 4. `working`, `search`, `storage`: the working memory's state and schema; the history index and its queries; the storage seam every backend implements (sessions, and the history index behind `storage::search`).
//! 5. `files`: the on-disk formats — event logs, archive, locks, meta, snapshot, evicted outputs, paths, memory records.
//! 6. `pipeline`: the context pipeline, one pure stage per file (guard, pairs, tiers, compaction, measure).
//! 7. `render`, `summarize`: provider payloads; extractive summaries and their fidelity checks.
//! 8. `tokens`, `redact`: token counting, budgets and the model registry; redaction of secrets and personal data.
//! 9. `base`: errors, ids, events, messages, turns, state updates, and the JSON, hash and file helpers.
//! <!-- /floors -->

#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]
// Every type a public signature shows can be named from outside, and every
// public item says what it is.
#![warn(unnameable_types, missing_docs)]

pub mod ahead;
pub mod base;
pub mod config;
pub mod export;
pub mod files;
pub mod memory;
pub mod pipeline;
pub mod redact;
pub mod render;
pub mod search;
pub mod session;
pub mod storage;
mod store;
pub mod summarize;
pub mod tokens;
pub mod tools;
pub mod working;

// The store and its sessions.
pub use base::id::{AgentId, SessionId};
pub use files::meta::SessionMeta;
pub use session::{CompactOptions, IngestReport, Session};
pub use store::{FilesMemory, FilesStorage, Store};

// The storage seam: where sessions are kept (files, or a database via an edge crate).
pub use storage::memory::MemoryStorage;
pub use storage::{Backend, SessionWriter, Storage};

// Events: what a session is fed, and the tool calls they pair into.
pub use base::event::{Event, TraceType, Usage};
pub use base::tool_interaction::{ToolInteraction, ToolStatus};

// Preparing a model call: the request, its budget, the result and its statistics.
pub use pipeline::measure::{ContextStats, PrepareRequest, Prepared};
pub use tokens::budget::BudgetSettings;

// Provider targets and the payloads rendered for them.
pub use render::{Payload, PromptCache, Target, ToolSchema};

// Errors.
pub use base::error::{Error, Result};

// The seams an application plugs in: a summarizer, an embedder, a reranker.
pub use memory::recall::{Embedder, Reranker};
pub use summarize::{FactKind, SummarizeError, Summarizer, Summary, SummaryFact, SummaryRequest};

// Recall from long-term memory; search of the history.
pub use memory::recall::{EmbeddingCoverage, RecallRequest, Recalled};
pub use search::{EmbeddingStatus, SearchFilter, SearchHit, SearchRole};

// Working memory: the typed state a session keeps, and the patches that change it.
pub use base::state::StatePatch;
pub use working::WorkingMemory;

// Configuration: the layered settings, write durability, token encodings.
pub use config::Config;
pub use files::jsonl::Durability;
pub use tokens::Encoding;
