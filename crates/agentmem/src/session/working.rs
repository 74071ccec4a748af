//! The session's working memory (see [`crate::working`]): read it, change
//! it with compare-and-swap, set its schema, list its versions.
//!
//! Every change goes the same way, whoever makes it (a tool call, the
//! command line, an imported log): checked against the current state and
//! the schema before anything is written, appended to the log as an event,
//! and only then materialized in `working_memory.json`.

use serde_json::Value;

use super::Session;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::store::jsonl::Recovery;
use crate::store::snapshot::Snapshot;
use crate::store::SessionPaths;
use crate::tokens::{Encoding, Tokenizer};
use crate::working::cache::{self, Freshness};
use crate::working::schema::{store_schema, SchemaScope, StateSchema};
use crate::working::section::render_section;
use crate::working::{Keep, StatePatch, StateUpdate, StateVersion, WorkingMemory};

/// The rendered section and its tokens, kept while the version and the
/// encoding stay the same.
#[derive(Debug, Clone)]
pub(super) struct SectionCache {
    version: u64,
    encoding: Encoding,
    text: Option<String>,
    tokens: u64,
}

impl Session {
    /// The current working memory (O(1): kept in memory and materialized on disk).
    pub fn working_memory(&self) -> &WorkingMemory {
        &self.working
    }

    /// The schema updates must keep to: the session's own, else the agent's.
    pub fn working_memory_schema(&self) -> Result<Option<StateSchema>> {
        StateSchema::load(&self.settings.agent_dir, &self.paths.dir)
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
        self.require_writer()?;
        if let Some(expected) = expected_version {
            if expected != self.working.version {
                return Err(Error::WorkingMemoryConflict {
                    expected,
                    actual: self.working.version,
                });
            }
        }
        let schema = self.working_memory_schema()?;
        let unnumbered = StateUpdate {
            patch,
            version: 0,
            hash: String::new(),
        };
        let next = self.working.next(&unnumbered, schema.as_ref())?;
        let update = StateUpdate {
            version: next.version,
            hash: next.hash,
            ..unnumbered
        };
        self.ingest(vec![Event::working_memory(update).with_source("engine")])?;
        Ok(&self.working)
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
        self.require_writer()?;
        let compiled = schema
            .map(|json| StateSchema::compile(json, scope))
            .transpose()?;
        if let Some(schema) = compiled.as_ref().filter(|_| !self.working.is_empty()) {
            schema
                .validate(&self.working.document)
                .map_err(|error| Error::WorkingMemorySchema {
                    scope,
                    message: format!(
                        "the current working memory (version {}) does not keep to it ({error}); patch the state first or loosen the schema",
                        self.working.version
                    ),
                })?;
        }
        let dir = match scope {
            SchemaScope::Session => &self.paths.dir,
            SchemaScope::Agent => &self.settings.agent_dir,
        };
        store_schema(dir, compiled.as_ref())
    }

    /// Every version of the working memory, oldest first, each with the
    /// event that made it (archived updates included).
    pub fn working_memory_history(&self) -> Result<Vec<StateVersion>> {
        let replayed = cache::replay_log(
            &self.paths,
            self.snapshot.as_ref(),
            &self.events,
            Keep::EveryVersion,
        )?;
        Ok(replayed.versions)
    }

    /// Checks the working-memory updates among `fresh` in order, against the
    /// current state and the schema, and numbers them; the state they make,
    /// or `None` when there are none. Nothing is changed here: ingest
    /// settles the state once the events are in the log.
    pub(super) fn stage_working_memory(
        &self,
        fresh: &mut [Event],
        batch_index: &[usize],
    ) -> Result<Option<WorkingMemory>> {
        if !fresh.iter().any(|e| e.state_update().is_some()) {
            return Ok(None);
        }
        let schema = self.working_memory_schema()?;
        let mut state = self.working.clone();
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
    pub(super) fn settle_working_memory(&mut self, state: WorkingMemory) -> Result<()> {
        self.working = state;
        cache::write(&self.paths.dir, &self.working)
    }

    /// The working-memory section for this prepare and its tokens.
    pub(super) fn working_memory_section(&mut self, tokenizer: Tokenizer) -> Option<(String, u64)> {
        let encoding = tokenizer.encoding();
        let fresh = self
            .working_section
            .as_ref()
            .is_some_and(|c| c.version == self.working.version && c.encoding == encoding);
        if !fresh {
            let text = render_section(&self.working);
            let tokens = text.as_deref().map_or(0, |t| tokenizer.count(t) as u64);
            self.working_section = Some(SectionCache {
                version: self.working.version,
                encoding,
                text,
                tokens,
            });
        }
        let cache = self.working_section.as_ref().expect("filled above");
        cache.text.clone().map(|text| (text, cache.tokens))
    }

    fn require_writer(&self) -> Result<()> {
        match self.writer {
            Some(_) => Ok(()),
            None => Err(Error::ReadOnly {
                session: self.id.to_string(),
            }),
        }
    }
}

/// The state of a session being opened, and the updates its replay skipped.
/// A writer refreshes the materialized file when it was missing or behind.
pub(super) fn load_state(
    paths: &SessionPaths,
    snapshot: Option<&Snapshot>,
    events: &[Event],
    writable: bool,
) -> Result<(WorkingMemory, Vec<Recovery>)> {
    match cache::current_state(paths, snapshot, events)? {
        Freshness::Current(state) => Ok((state, Vec::new())),
        Freshness::Rebuilt(replayed) => {
            if writable {
                cache::write(&paths.dir, &replayed.state)?;
            }
            let recoveries = replayed
                .skipped
                .into_iter()
                .map(|(event_id, error)| Recovery::WorkingMemoryUpdate { event_id, error })
                .collect();
            Ok((replayed.state, recoveries))
        }
    }
}
