//! The session's working memory (see [`crate::working`]): read it, change
//! it with compare-and-swap, set its schema, list its versions.
//!
//! Every change goes the same way, whoever makes it (a tool call, the
//! command line, an imported log): checked against the current state and
//! the schema before anything is written, appended to the log as an event,
//! and only then materialized in `working_memory.json`.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::Session;
use crate::base::error::SchemaScope;
use crate::base::error::{Error, Result};
use crate::base::event::Event;
use crate::base::state::{StateMark, StatePatch, StateUpdate};
use crate::files::jsonl::Recovery;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::tokens::{Encoding, Tokenizer};
use crate::working::cache::{self, Freshness};
use crate::working::schema::{store_schema, StateSchema};
use crate::working::section::render_section;
use crate::working::{Keep, StateVersion, WorkingMemory};

/// One session's working memory: the current state as the log's updates
/// made it, where its files are, and its section as last rendered.
#[derive(Debug)]
pub(crate) struct SessionWorkingMemory {
    paths: SessionPaths,
    /// The agent's folder (an agent-wide schema lives there).
    agent_dir: PathBuf,
    state: WorkingMemory,
    section: Option<SectionCache>,
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
                let recoveries = replayed
                    .skipped
                    .into_iter()
                    .map(|(event_id, error)| Recovery::WorkingMemoryUpdate { event_id, error })
                    .collect();
                (replayed.state, recoveries)
            }
        };
        let working = SessionWorkingMemory {
            paths: paths.clone(),
            agent_dir,
            state,
            section: None,
        };
        Ok((working, recoveries))
    }

    /// The working memory of a session kept behind the storage seam, where
    /// working memory is not yet: empty, and refused
    /// ([`Error::NotOnBackend`] on `backend`) for a session whose log or
    /// snapshot records a state, rather than shown empty.
    pub(crate) fn on_seam(
        paths: &SessionPaths,
        agent_dir: PathBuf,
        snapshot: Option<&Snapshot>,
        events: &[Arc<Event>],
        backend: &'static str,
    ) -> Result<SessionWorkingMemory> {
        if cache::last_recorded(snapshot, events).is_some_and(|mark| mark.version > 0) {
            return Err(Error::NotOnBackend {
                feature: "a session with working memory",
                backend,
            });
        }
        Ok(SessionWorkingMemory {
            paths: paths.clone(),
            agent_dir,
            state: WorkingMemory::default(),
            section: None,
        })
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
        StateSchema::load(&self.agent_dir, &self.paths.dir)
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
        let dir = match scope {
            SchemaScope::Session => &self.paths.dir,
            SchemaScope::Agent => &self.agent_dir,
        };
        store_schema(dir, compiled.as_ref())
    }

    /// Every version, oldest first, replayed from the archive and `active`
    /// (the active log) on the `snapshot`'s mark.
    pub(crate) fn history(
        &self,
        snapshot: Option<&Snapshot>,
        active: &[Arc<Event>],
    ) -> Result<Vec<StateVersion>> {
        let replayed = cache::replay_log(&self.paths, snapshot, active, Keep::EveryVersion)?;
        Ok(replayed.versions)
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
    /// in the materialized file.
    pub(crate) fn settle(&mut self, state: WorkingMemory) -> Result<()> {
        self.state = state;
        cache::write(&self.paths.dir, &self.state)
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

impl Session {
    /// The current working memory (O(1): kept in memory and materialized on disk).
    pub fn working_memory(&self) -> &WorkingMemory {
        self.working.state()
    }

    /// The schema updates must keep to: the session's own, else the agent's.
    pub fn working_memory_schema(&self) -> Result<Option<StateSchema>> {
        self.log.require_folder("working memory")?;
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
        self.log.require_folder("working memory")?;
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
        self.log.require_folder("working memory")?;
        self.working.set_schema(scope, schema)
    }

    /// Every version of the working memory, oldest first, each with the
    /// event that made it (archived updates included).
    pub fn working_memory_history(&self) -> Result<Vec<StateVersion>> {
        self.log.require_folder("working memory")?;
        self.working
            .history(self.view.snapshot(), self.log.events())
    }
}

#[cfg(test)]
#[path = "working_tests.rs"]
mod tests;
