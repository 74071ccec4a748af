//! The files backend of the memory seam ([`crate::storage::memory`]): each
//! agent's folder under a [`Store`]'s data directory, read and written by
//! the memory modules' own file code, so `MEMORY.md`, `semantic.jsonl`,
//! `episodic.jsonl`, `facts.key` and the sessions' `evicted/` folders keep
//! today's format to the byte.

use std::path::PathBuf;

use serde_json::Value;

use super::Store;
use crate::base::error::{Error, IoContext, Result};
use crate::base::id::{AgentId, SessionId};
use crate::files::records::EpisodicItem;
use crate::memory::facts::{Fact, FactStore};
use crate::memory::notebook::MemoryVersion;
use crate::redact::RedactionPolicy;
use crate::storage::memory::{MemoryStorage, SchemaOf, Swapped};
use crate::storage::Backend;
use crate::working::schema::{read_schema_file, schema_path, store_schema_json};

/// The files backend's agent memory: `agents/<agent>/` of a data directory.
#[derive(Debug, Clone)]
pub struct FilesMemory {
    root: PathBuf,
    redaction: RedactionPolicy,
}

impl Store {
    /// This store's agent memory behind the memory seam.
    pub fn memory(&self) -> FilesMemory {
        FilesMemory {
            root: self.root.clone(),
            redaction: self.redaction(),
        }
    }
}

impl FilesMemory {
    /// What writes to the memory are redacted with.
    pub(crate) fn redaction(&self) -> RedactionPolicy {
        self.redaction
    }

    fn agent_dir(&self, agent: &AgentId) -> PathBuf {
        self.root.join("agents").join(agent.as_str())
    }

    fn evicted_dir(&self, agent: &AgentId, id: &SessionId) -> PathBuf {
        self.session_dir(agent, id).join("evicted")
    }

    fn session_dir(&self, agent: &AgentId, id: &SessionId) -> PathBuf {
        self.agent_dir(agent).join("sessions").join(id.as_str())
    }

    /// The folder the schema `of` the agent or a session is kept in.
    fn schema_dir(&self, agent: &AgentId, of: SchemaOf<'_>) -> PathBuf {
        match of {
            SchemaOf::Agent => self.agent_dir(agent),
            SchemaOf::Session(id) => self.session_dir(agent, id),
        }
    }
}

impl MemoryStorage for FilesMemory {
    fn backend(&self) -> Backend {
        Backend::Files
    }

    fn folder(&self, agent: &AgentId) -> Option<PathBuf> {
        Some(self.agent_dir(agent))
    }

    fn memory_agents(&self) -> Result<Vec<AgentId>> {
        let dir = self.root.join("agents");
        let mut agents = Vec::new();
        for entry in super::entries_of(&dir)? {
            if let Some(Ok(agent)) = entry.file_name().to_str().map(AgentId::new) {
                if entry.path().is_dir() {
                    agents.push(agent);
                }
            }
        }
        agents.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(agents)
    }

    fn read_notebook(&self, agent: &AgentId) -> Result<MemoryVersion> {
        crate::memory::notebook::read_in(&self.agent_dir(agent))
    }

    fn swap_notebook(&self, agent: &AgentId, current: &str, next: &str) -> Result<Swapped> {
        crate::memory::notebook::swap_file(&self.agent_dir(agent), current, next)
    }

    fn read_facts(&self, agent: &AgentId) -> Result<Vec<Fact>> {
        FactStore::new(&self.agent_dir(agent), self.redaction).all()
    }

    fn change_facts(
        &self,
        agent: &AgentId,
        change: &mut dyn FnMut(Vec<Fact>) -> Result<Vec<Fact>>,
    ) -> Result<()> {
        crate::memory::facts::change_file(&self.agent_dir(agent), change)
    }

    fn facts_key(&self, agent: &AgentId, proposed: [u8; 16]) -> Result<[u8; 16]> {
        let dir = self.agent_dir(agent);
        let _lock = crate::files::lock::MemoryLock::acquire(&dir)?;
        crate::memory::hidden::key_file(&dir, proposed)
    }

    fn read_episodes(&self, agent: &AgentId) -> Result<Vec<EpisodicItem>> {
        crate::memory::episodic::read_episodes(&self.agent_dir(agent))
    }

    fn append_episode(&self, agent: &AgentId, item: &EpisodicItem) -> Result<bool> {
        let dir = self.agent_dir(agent);
        crate::base::fs::create_dir_all(&dir).io("create", &dir)?;
        crate::memory::episodic::append_episode_once(&dir, item)
    }

    fn put_evicted(&self, agent: &AgentId, id: &SessionId, name: &str, text: &str) -> Result<()> {
        crate::files::evicted::write_evicted(&self.evicted_dir(agent, id), name, text).map(drop)
    }

    fn read_evicted(&self, agent: &AgentId, id: &SessionId, name: &str) -> Result<String> {
        let path = crate::files::evicted::evicted_path(&self.evicted_dir(agent, id), name)?;
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::EvictedNotFound {
                call_id: name.to_owned(),
            }),
            Err(e) => Err(e).io("read evicted output", &path),
        }
    }

    fn evicted_names(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<String>> {
        let mut names: Vec<String> = super::entries_of(&self.evicted_dir(agent, id))?
            .iter()
            .filter_map(|entry| {
                let name = entry.file_name().to_str()?.strip_suffix(".txt")?.to_owned();
                Some(name)
            })
            .collect();
        names.sort();
        Ok(names)
    }

    fn state_schema(&self, agent: &AgentId, of: SchemaOf<'_>) -> Result<Option<Value>> {
        read_schema_file(&schema_path(&self.schema_dir(agent, of)), of.scope())
    }

    fn put_state_schema(
        &self,
        agent: &AgentId,
        of: SchemaOf<'_>,
        schema: Option<&Value>,
    ) -> Result<()> {
        let dir = self.schema_dir(agent, of);
        if let SchemaOf::Session(id) = of {
            // A session's schema lives in its folder: never make one for a
            // session that is not there.
            if !dir.is_dir() {
                return Err(Error::SessionNotFound {
                    agent: agent.to_string(),
                    session: id.to_string(),
                });
            }
        }
        store_schema_json(&dir, schema)
    }
}
