//! The files backend of the storage seam ([`crate::storage`]): a [`Store`]'s
//! data directory, read and written by the same code the store's sessions
//! use, so the format on disk is today's to the byte and a store written
//! before the seam opens unchanged.

use std::sync::Arc;

use super::Store;
use crate::base::error::Result;
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::files::jsonl;
use crate::files::meta::SessionMeta;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::memory::facts::FactStore;
use crate::session::{Access, SessionLog};
use crate::storage::memory::MemoryStorage;
use crate::storage::search::SearchIndex;
use crate::storage::{
    Appended, Backend, CommitMemory, CompactionCommit, EventCount, EventRange, SessionWriter,
    SnapshotFields, Storage,
};

/// The files backend: sessions as folders of JSONL logs under a [`Store`]'s
/// data directory (see [`crate::files`] for the format).
#[derive(Debug, Clone)]
pub struct FilesStorage {
    store: Store,
}

impl Store {
    /// This store's sessions behind the storage seam.
    pub fn storage(&self) -> FilesStorage {
        FilesStorage {
            store: self.clone(),
        }
    }

    /// Opens the durable log of the session in `paths`, as a writer or a reader.
    fn open_log(
        &self,
        paths: SessionPaths,
        agent: &AgentId,
        id: &SessionId,
        access: Access,
    ) -> Result<(SessionLog, Option<Snapshot>)> {
        SessionLog::open(
            paths,
            agent.clone(),
            id.clone(),
            access,
            self.redaction(),
            self.agent_dir(agent),
        )
    }

    fn read_log(&self, agent: &AgentId, id: &SessionId) -> Result<(SessionLog, Option<Snapshot>)> {
        let paths = self.existing(agent, id)?;
        self.open_log(paths, agent, id, Access::Read)
    }
}

impl Storage for FilesStorage {
    fn backend(&self) -> Backend {
        Backend::Files
    }

    fn memory(self: Arc<Self>) -> Arc<dyn MemoryStorage> {
        Arc::new(self.store.memory())
    }

    fn create_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>> {
        let paths = self.store.make_session_dir(agent, id)?;
        let access = Access::Write(self.store.durability);
        let (log, _) = self.store.open_log(paths, agent, id, access)?;
        Ok(Box::new(FilesWriter {
            log,
            memory: self.store.memory(),
        }))
    }

    fn lock_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>> {
        let paths = self.store.existing(agent, id)?;
        let access = Access::Write(self.store.durability);
        let (log, _) = self.store.open_log(paths, agent, id, access)?;
        Ok(Box::new(FilesWriter {
            log,
            memory: self.store.memory(),
        }))
    }

    fn session_meta(&self, agent: &AgentId, id: &SessionId) -> Result<SessionMeta> {
        self.store.session_meta(agent, id)
    }

    fn list_agents(&self) -> Result<Vec<AgentId>> {
        let dir = self.store.root.join("agents");
        let mut agents = Vec::new();
        for entry in super::entries_of(&dir)? {
            let Some(Ok(agent)) = entry.file_name().to_str().map(AgentId::new) else {
                continue; // foreign entries
            };
            if entry.path().join("sessions").is_dir() {
                agents.push(agent);
            }
        }
        agents.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(agents)
    }

    fn list_sessions(&self, agent: &AgentId) -> Result<Vec<SessionMeta>> {
        self.store.list_sessions(agent)
    }

    fn read_events(
        &self,
        agent: &AgentId,
        id: &SessionId,
        range: EventRange,
    ) -> Result<Vec<Event>> {
        let (log, _) = self.store.read_log(agent, id)?;
        let events = log.events();
        Ok(events[range.positions(events.len())]
            .iter()
            .map(|e| Event::clone(e))
            .collect())
    }

    fn event_count(&self, agent: &AgentId, id: &SessionId) -> Result<EventCount> {
        let (log, _) = self.store.read_log(agent, id)?;
        Ok(EventCount {
            active: log.events().len(),
            archived: log.meta().archived_events,
        })
    }

    fn archived_events(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>> {
        let paths = self.store.existing(agent, id)?;
        Ok(jsonl::read_log(&paths.archive())?.events)
    }

    fn full_history(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>> {
        self.store.read_session(agent, id)?.full_history()
    }

    fn snapshot(&self, agent: &AgentId, id: &SessionId) -> Result<Option<Snapshot>> {
        Ok(self.store.read_log(agent, id)?.1)
    }

    fn search_index(&self, agent: &AgentId) -> Result<Box<dyn SearchIndex>> {
        Ok(Box::new(self.store.history_index(agent)?))
    }

    fn fork_session(
        &self,
        agent: &AgentId,
        source: &SessionId,
        at_turn: Option<&str>,
        new_id: &SessionId,
    ) -> Result<SessionMeta> {
        self.store
            .fork_session(agent, source, at_turn, Some(new_id.clone()))
    }

    fn delete_session(&self, agent: &AgentId, id: &SessionId) -> Result<()> {
        self.store.delete_session(agent, id)
    }
}

/// A session's writer on files: its log, holding the `lock` file, and
/// its agent's memory.
#[derive(Debug)]
struct FilesWriter {
    log: SessionLog,
    memory: super::FilesMemory,
}

impl SessionWriter for FilesWriter {
    fn id(&self) -> &SessionId {
        self.log.id()
    }

    fn append(&mut self, events: Vec<Event>) -> Result<Appended> {
        let admitted = self.log.admit(events)?;
        let events = self
            .log
            .append(admitted.fresh)?
            .iter()
            .map(|e| Event::clone(e))
            .collect();
        self.log.refresh_meta_if_due()?;
        Ok(Appended {
            events,
            duplicates: admitted.duplicates,
        })
    }

    /// The session's compaction steps, in their crash-safe order: the span
    /// is appended to the archive, the snapshot written (the commit: an
    /// open after a crash from here on finishes the move), and the active
    /// log replaced by the tail.
    fn commit_compaction(&mut self, commit: CompactionCommit) -> Result<()> {
        let active = self.log.events();
        let cut = commit.archived.min(active.len());
        let span: Vec<Event> = active[..cut].iter().map(|e| Event::clone(e)).collect();
        let tail: Vec<Arc<Event>> = active[cut..].to_vec();
        let (first_kept, tail_events) = (tail.first().map(|e| e.id.clone()), tail.len());
        let (compactions, kept) = (commit.snapshot.compactions, commit.memory);
        let make = |archived_events| match commit.fields {
            SnapshotFields::FromTheMove => Snapshot {
                active_first_id: first_kept,
                tail_events,
                archived_events: Some(archived_events),
                ..commit.snapshot
            },
            SnapshotFields::AsGiven => commit.snapshot,
        };
        self.log.commit_compaction(&span, tail, 0, make)?;
        if let CommitMemory::Keep(memory) = kept {
            let agent = self.log.agent().clone();
            self.memory.append_episode(&agent, &memory.episode)?;
            let redaction = self.memory.redaction();
            FactStore::on(Arc::new(self.memory.clone()), &agent, redaction)
                .add_all_once(memory.facts)?;
            self.log.record_compactions_done(compactions)?;
        }
        Ok(())
    }

    fn meta(&self) -> SessionMeta {
        self.log.meta().clone()
    }

    fn adopt_meta(&mut self, source: &SessionMeta) -> Result<()> {
        self.log.adopt_meta(source)
    }
}
