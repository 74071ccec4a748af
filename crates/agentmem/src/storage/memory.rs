//! The agent's side of the storage seam: what an agent's long-term memory
//! and a session's evicted tool outputs need from wherever they are kept.
//!
//! [`MemoryStorage`] keeps, per agent, the notebook (`MEMORY.md`), the
//! semantic facts, the episodic items and the key fingerprints of redacted
//! facts are made with; per session, the evicted tool outputs. What to
//! write stays in the engine (`crate::memory`: a note's edit, a fact's
//! merge or supersession, an episode's summary); a backend only stores,
//! with two promises:
//!
//! - **Compare-and-swap where the files hold `memory.lock`**: a notebook
//!   is replaced only when it still has the hash it was read with
//!   ([`MemoryStorage::swap_notebook`]); facts change under the agent's
//!   memory lock, read and rewritten as one step ([`MemoryStorage::change_facts`]).
//! - **Idempotent appends**: an episode whose id the agent already holds
//!   is not added again, so a step run again after a crash runs once.
//!
//! It also keeps the working-memory schemas (an agent's, and a session's
//! own, which goes with the session when it is forked or deleted): the
//! state itself is the log's working-memory events, replayed.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::base::error::Result;
use crate::base::id::{AgentId, SessionId};
use crate::files::records::{EpisodicItem, Fact, MemoryVersion};
use crate::storage::Backend;

/// What a [`MemoryStorage::swap_notebook`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// The notebook holds the new content now.
    Done(MemoryVersion),
    /// The notebook no longer had the hash it was read with: nothing was
    /// written; read it again and redo the edit.
    Changed,
}

/// Whose working-memory schema (see [`crate::working::schema`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaOf<'a> {
    /// The agent's: every session of it without one of its own.
    Agent,
    /// One session's own, which wins over the agent's there.
    Session(&'a SessionId),
}

impl SchemaOf<'_> {
    /// Where the schema applies, as errors and answers name it.
    pub fn scope(self) -> crate::base::error::SchemaScope {
        match self {
            SchemaOf::Agent => crate::base::error::SchemaScope::Agent,
            SchemaOf::Session(_) => crate::base::error::SchemaScope::Session,
        }
    }
}

/// Where the agents' long-term memory and the sessions' evicted outputs
/// are kept (see the module docs).
pub trait MemoryStorage: fmt::Debug + Send + Sync {
    /// Which kind of storage this is.
    fn backend(&self) -> Backend;

    /// The agent's folder when its memory is kept in files, so the
    /// engine's file code (its caches, its format) reads it directly;
    /// `None` on a database.
    fn folder(&self, agent: &AgentId) -> Option<PathBuf>;

    /// Every agent with anything in its memory, by id.
    fn memory_agents(&self) -> Result<Vec<AgentId>>;

    /// The agent's notebook (empty, with the empty text's hash, when it has none).
    fn read_notebook(&self, agent: &AgentId) -> Result<MemoryVersion>;

    /// Replaces the notebook with `next` if it still has hash `current`.
    fn swap_notebook(&self, agent: &AgentId, current: &str, next: &str) -> Result<Swapped>;

    /// Every fact of the agent, superseded ones included, oldest first.
    fn read_facts(&self, agent: &AgentId) -> Result<Vec<Fact>>;

    /// Runs `change` on the agent's facts under its memory lock and stores
    /// the list it returns in their place, all or nothing; a failed
    /// `change` stores nothing.
    fn change_facts(
        &self,
        agent: &AgentId,
        change: &mut dyn FnMut(Vec<Fact>) -> Result<Vec<Fact>>,
    ) -> Result<()>;

    /// The agent's key for fingerprints of redacted facts: `proposed` is
    /// kept as it when the agent has none yet.
    fn facts_key(&self, agent: &AgentId, proposed: [u8; 16]) -> Result<[u8; 16]>;

    /// Every episodic item of the agent, oldest first.
    fn read_episodes(&self, agent: &AgentId) -> Result<Vec<EpisodicItem>>;

    /// Appends `item` unless the agent holds an item with its id; says
    /// whether it was appended.
    fn append_episode(&self, agent: &AgentId, item: &EpisodicItem) -> Result<bool>;

    /// Keeps the evicted output `name` of the session (a tool call's id,
    /// or `<id>-2`… for a reused id), replacing one of that name.
    fn put_evicted(&self, agent: &AgentId, id: &SessionId, name: &str, text: &str) -> Result<()>;

    /// The evicted output `name` of the session;
    /// [`crate::Error::EvictedNotFound`] when there is none.
    fn read_evicted(&self, agent: &AgentId, id: &SessionId, name: &str) -> Result<String>;

    /// The names of the session's evicted outputs, sorted.
    fn evicted_names(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<String>>;

    /// The working-memory schema `of` the agent or one of its sessions, as
    /// it was set; `None` when there is none.
    fn state_schema(&self, agent: &AgentId, of: SchemaOf<'_>) -> Result<Option<Value>>;

    /// Sets the working-memory schema `of` the agent or one of its
    /// sessions (already compiled by the engine, so known to be one), or
    /// removes it with `None`.
    fn put_state_schema(
        &self,
        agent: &AgentId,
        of: SchemaOf<'_>,
        schema: Option<&Value>,
    ) -> Result<()>;
}
