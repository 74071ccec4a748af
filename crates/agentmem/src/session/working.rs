//! The session's working memory (see [`crate::working`]): read it, change
//! it with compare-and-swap, set its schema, list its versions.
//!
//! Every change goes the same way, whoever makes it (a tool call, the
//! command line, an imported log): checked against the current state and
//! the schema before anything is written, appended to the log as an event,
//! and only then materialized in `working_memory.json` (in the files
//! backend; behind the storage seam the log alone keeps the state, and the
//! backend's memory keeps the schemas).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::Session;
use crate::base::error::SchemaScope;
use crate::base::error::{Error, Result};
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::base::state::{StateMark, StatePatch, StateUpdate};
use crate::files::jsonl::Recovery;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::storage::memory::{MemoryStorage, SchemaOf};
use crate::tokens::{Encoding, Tokenizer};
use crate::working::cache::{self, Freshness};
use crate::working::schema::{store_schema, StateSchema};
use crate::working::section::render_section;
use crate::working::{replay, Keep, Replayed, StateVersion, WorkingMemory};

/// One session's working memory: the current state as the log's updates
/// made it, where its schema and materialized state are kept, and its
/// section as last rendered.
#[derive(Debug)]
pub(crate) struct SessionWorkingMemory {
    kept: Kept,
    state: WorkingMemory,
    section: Option<SectionCache>,
}

/// Where a session's working memory is kept beside its log.
#[derive(Debug)]
enum Kept {
    /// In files: the state materialized in the session's folder, the
    /// schemas in the session's and the agent's folders.
    Folder {
        paths: SessionPaths,
        /// The agent's folder (an agent-wide schema lives there).
        agent_dir: PathBuf,
    },
    /// Behind the storage seam: the state only in the log (replayed when
    /// the session is opened), the schemas in the backend's memory.
    Seam {
        memory: Arc<dyn MemoryStorage>,
        agent: AgentId,
        id: SessionId,
    },
}

/// The rendered section and its tokens, kept while the version and the
/// encoding stay the same.
#[derive(Debug, Clone)]
struct SectionCache {
    version: u64,
    encoding: Encoding,
    text: Option<String>,
    tokens: u64,
}

impl SessionWorkingMemory {
    /// The state of a session being opened, and the updates its replay
    /// skipped. A writer (`writable`) refreshes the materialized file when
    /// it was missing or behind.
    pub(crate) fn load(
        paths: &SessionPaths,
        agent_dir: PathBuf,
        snapshot: Option<&Snapshot>,
        events: &[Arc<Event>],
        writable: bool,
    ) -> Result<(SessionWorkingMemory, Vec<Recovery>)> {
        let (state, recoveries) = match cache::current_state(paths, snapshot, events)? {
            Freshness::Current(state) => (state, Vec::new()),
            Freshness::Rebuilt(replayed) => {
                if writable {
                    cache::write(&paths.dir, &replayed.state)?;
                }
                (replayed.state, skipped_updates(replayed.skipped))
            }
        };
        let working = SessionWorkingMemory {
            kept: Kept::Folder {
                paths: paths.clone(),
                agent_dir,
            },
            state,
            section: None,
        };
        Ok((working, recoveries))
    }

    /// The working memory of a session kept behind the storage seam, and
    /// the updates its replay skipped: the state replayed from its log
    /// (from the archive too when a compaction moved updates there,
    /// `archived` reading it), its schemas in `memory`.
    pub(crate) fn on_seam(
        memory: Arc<dyn MemoryStorage>,
        agent: AgentId,
        id: SessionId,
        snapshot: Option<&Snapshot>,
        events: &[Arc<Event>],
        archived: impl FnOnce() -> Result<Vec<Event>>,
    ) -> Result<(SessionWorkingMemory, Vec<Recovery>)> {
        let before_active = match snapshot.and_then(|s| s.working_memory.as_ref()) {
            Some(mark) if mark.version > 0 => {
                replay(WorkingMemory::default(), &archived()?, Keep::LastOnly)
            }
            Some(_) | None => Replayed::default(),
        };
        let replayed = replay(
            before_active.state,
            events.iter().map(|e| &**e),
            Keep::LastOnly,
        );
        let skipped = [before_active.skipped, replayed.skipped].concat();
        let working = SessionWorkingMemory {
            kept: Kept::Seam { memory, agent, id },
            state: replayed.state,
            section: None,
        };
        Ok((working, skipped_updates(skipped)))
    }

    /// The current state.
    pub(crate) fn state(&self) -> &WorkingMemory {
        &self.state
    }

    /// The current state's version and hash, as a snapshot names it.
    pub(crate) fn mark(&self) -> StateMark {
        StateMark::of(&self.state)
    }

    /// The schema updates must keep to: the session's own, else the agent's.
    pub(crate) fn schema(&self) -> Result<Option<StateSchema>> {
        match &self.kept {
            Kept::Folder { paths, agent_dir } => StateSchema::load(agent_dir, &paths.dir),
            Kept::Seam { memory, agent, id } => StateSchema::load_from(&**memory, agent, id),
        }
    }

    /// `patch` as the update that makes the next version, checked against
    /// the schema and, with `expected_version`, against the current version
    /// (compare-and-swap). Nothing is changed here.
    pub(crate) fn update_for(
        &self,
        patch: StatePatch,
        expected_version: Option<u64>,
    ) -> Result<StateUpdate> {
        if let Some(expected) = expected_version {
            if expected != self.state.version {
                return Err(Error::WorkingMemoryConflict {
                    expected,
                    actual: self.state.version,
                });
            }
        }
        let schema = self.schema()?;
        let unnumbered = StateUpdate {
            patch,
            version: 0,
            hash: String::new(),
        };
        let next = self.state.next(&unnumbered, schema.as_ref())?;
        Ok(StateUpdate {
            version: next.version,
            hash: next.hash,
            ..unnumbered
        })
    }

    /// Sets (or with `None` removes) the schema of the session or of its
    /// agent, once it compiles and the current state, if any, keeps to it.
    pub(crate) fn set_schema(&self, scope: SchemaScope, schema: Option<Value>) -> Result<()> {
        let compiled = schema
            .map(|json| StateSchema::compile(json, scope))
            .transpose()?;
        if let Some(schema) = compiled.as_ref().filter(|_| !self.state.is_empty()) {
            schema
                .validate(&self.state.document)
                .map_err(|error| Error::WorkingMemorySchema {
                    scope,
                    message: format!(
                        "the current working memory (version {}) does not keep to it ({error}); patch the state first or loosen the schema",
                        self.state.version
                    ),
                })?;
        }
        match &self.kept {
            Kept::Folder { paths, agent_dir } => {
                let dir = match scope {
                    SchemaScope::Session => &paths.dir,
                    SchemaScope::Agent => agent_dir,
                };
                store_schema(dir, compiled.as_ref())
            }
            Kept::Seam { memory, agent, id } => {
                let of = match scope {
                    SchemaScope::Session => SchemaOf::Session(id),
                    SchemaScope::Agent => SchemaOf::Agent,
                };
                memory.put_state_schema(agent, of, compiled.as_ref().map(StateSchema::json))
            }
        }
    }

    /// Every version, oldest first, replayed from the archive (`archived`
    /// reads it behind the seam) and `active` (the active log) on the
    /// `snapshot`'s mark.
    pub(crate) fn history(
        &self,
        snapshot: Option<&Snapshot>,
        active: &[Arc<Event>],
        archived: impl FnOnce() -> Result<Vec<Event>>,
    ) -> Result<Vec<StateVersion>> {
        match &self.kept {
            Kept::Folder { paths, .. } => {
                let replayed = cache::replay_log(paths, snapshot, active, Keep::EveryVersion)?;
                Ok(replayed.versions)
            }
            Kept::Seam { .. } => {
                let archive = archived()?;
                let events = archive.iter().chain(active.iter().map(|e| &**e));
                Ok(replay(WorkingMemory::default(), events, Keep::EveryVersion).versions)
            }
        }
    }

    /// Checks the working-memory updates among `fresh` in order, against the
    /// current state and the schema, and numbers them; the state they make,
    /// or `None` when there are none. Nothing is changed here: ingest
    /// settles the state once the events are in the log. `batch_index`
    /// says where each event stood in its batch (errors name that place).
    pub(crate) fn stage(
        &self,
        fresh: &mut [Event],
        batch_index: &[usize],
    ) -> Result<Option<WorkingMemory>> {
        if !fresh.iter().any(|e| e.state_update().is_some()) {
            return Ok(None);
        }
        let schema = self.schema()?;
        let mut state = self.state.clone();
        for (position, event) in fresh.iter_mut().enumerate() {
            let Some(update) = event.state_update() else {
                continue;
            };
            state = state
                .next(update, schema.as_ref())
                .map_err(|error| Error::InvalidEvent {
                    index: batch_index[position],
                    reason: error.to_string(),
                })?;
            let update = StateUpdate {
                version: state.version,
                hash: state.hash.clone(),
                ..update.clone()
            };
            // An update written without words gets them, so search finds it.
            if event.content.is_empty() {
                event.content = update.describe();
            }
            event.working_memory = Some(update);
        }
        Ok(Some(state))
    }

    /// Makes `state` current once its events are in the log: in memory, then
    /// in the materialized file (behind the seam the log alone keeps it).
    pub(crate) fn settle(&mut self, state: WorkingMemory) -> Result<()> {
        self.state = state;
        match &self.kept {
            Kept::Folder { paths, .. } => cache::write(&paths.dir, &self.state),
            Kept::Seam { .. } => Ok(()),
        }
    }

    /// The section for a prepare counted with `tokenizer`, and its tokens;
    /// `None` while the state is empty.
    pub(crate) fn section(&mut self, tokenizer: Tokenizer) -> Option<(String, u64)> {
        let encoding = tokenizer.encoding();
        let fresh = self
            .section
            .as_ref()
            .is_some_and(|c| c.version == self.state.version && c.encoding == encoding);
        if !fresh {
            let text = render_section(&self.state);
            let tokens = text.as_deref().map_or(0, |t| tokenizer.count(t) as u64);
            self.section = Some(SectionCache {
                version: self.state.version,
                encoding,
                text,
                tokens,
            });
        }
        let cache = self.section.as_ref().expect("filled above");
        cache.text.clone().map(|text| (text, cache.tokens))
    }
}

/// What a replay skipped, as the recoveries of the session's opening.
fn skipped_updates(skipped: Vec<(String, String)>) -> Vec<Recovery> {
    skipped
        .into_iter()
        .map(|(event_id, error)| Recovery::WorkingMemoryUpdate { event_id, error })
        .collect()
}

impl Session {
    /// The current working memory (O(1): kept in memory, and materialized
    /// on disk in the files backend).
    pub fn working_memory(&self) -> &WorkingMemory {
        self.working.state()
    }

    /// The schema updates must keep to: the session's own, else the agent's.
    pub fn working_memory_schema(&self) -> Result<Option<StateSchema>> {
        self.working.schema()
    }

    /// Applies `patch` to the working memory. With `expected_version`, the
    /// change applies only to that version (compare-and-swap): a stale one is
    /// [`Error::WorkingMemoryConflict`]. A patch that does not apply, or whose
    /// result breaks the schema ([`Error::WorkingMemoryInvalid`], naming the
    /// failing path), changes nothing. See [`crate::working`] for an example.
    pub fn update_working_memory(
        &mut self,
        patch: StatePatch,
        expected_version: Option<u64>,
    ) -> Result<&WorkingMemory> {
        self.log.require_writer()?;
        let update = self.working.update_for(patch, expected_version)?;
        self.ingest(vec![Event::working_memory(update).with_source("engine")])?;
        Ok(self.working.state())
    }

    /// Sets (or with `None` removes) the working-memory schema of this
    /// session or of its agent. The schema is checked as a schema, and a
    /// state the session already has must keep to it; otherwise nothing is
    /// written. A session with no state yet takes any schema, so a task can
    /// be typed first: its first update must then keep to it.
    pub fn set_working_memory_schema(
        &mut self,
        scope: SchemaScope,
        schema: Option<Value>,
    ) -> Result<()> {
        self.log.require_writer()?;
        self.working.set_schema(scope, schema)
    }

    /// Every version of the working memory, oldest first, each with the
    /// event that made it (archived updates included).
    pub fn working_memory_history(&self) -> Result<Vec<StateVersion>> {
        self.working
            .history(self.view.snapshot(), self.log.events(), || {
                self.log.archived_events()
            })
    }
}

#[cfg(test)]
#[path = "working_tests.rs"]
mod tests;
