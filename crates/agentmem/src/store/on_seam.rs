//! Sessions opened on a backend behind the storage seam ([`crate::storage`]):
//! the store gives them its settings (the data directory's configuration
//! and model registry); the backend keeps their record. On the files
//! backend these are the store's own entry points, so a session there is
//! opened exactly as [`Store::open_session`] opens it.

use std::sync::Arc;

use super::Store;
use crate::base::error::{Error, Result};
use crate::base::id::{AgentId, SessionId};
use crate::session::{Access, Session};
use crate::storage::{Backend, SessionWriter, Storage};

impl Store {
    /// Opens the existing session `id` kept by `storage`: for writing
    /// (taking its lock) or for reading, as `access` says.
    pub fn open_session_in(
        &self,
        storage: &Arc<dyn Storage>,
        agent: &AgentId,
        id: &SessionId,
        access: Access,
    ) -> Result<Session> {
        match (storage.backend(), access) {
            (Backend::Files, Access::Write(_)) => self.open_session(agent, id),
            (Backend::Files, Access::Read) => self.read_session(agent, id),
            (Backend::Postgres, Access::Write(_)) => {
                let writer = storage.lock_session(agent, id)?;
                self.on_seam(storage, Some(writer), agent, id)
            }
            (Backend::Postgres, Access::Read) => self.on_seam(storage, None, agent, id),
        }
    }

    /// Creates the new, empty session `id` (a fresh id when `None`) in
    /// `storage` and opens it for writing.
    pub fn create_session_in(
        &self,
        storage: &Arc<dyn Storage>,
        agent: &AgentId,
        id: Option<SessionId>,
    ) -> Result<Session> {
        match storage.backend() {
            Backend::Files => self.create_session(agent, id),
            Backend::Postgres => {
                let id = id.unwrap_or_else(SessionId::generate);
                let writer = storage.create_session(agent, &id)?;
                self.on_seam(storage, Some(writer), agent, &id)
            }
        }
    }

    /// Opens `id` in `storage` for writing, creating it if it does not exist.
    pub fn open_or_create_in(
        &self,
        storage: &Arc<dyn Storage>,
        agent: &AgentId,
        id: &SessionId,
    ) -> Result<Session> {
        match self.open_session_in(storage, agent, id, Access::Write(self.durability)) {
            Err(Error::SessionNotFound { .. }) => {
                self.create_session_in(storage, agent, Some(id.clone()))
            }
            other => other,
        }
    }

    fn on_seam(
        &self,
        storage: &Arc<dyn Storage>,
        writer: Option<Box<dyn SessionWriter>>,
        agent: &AgentId,
        id: &SessionId,
    ) -> Result<Session> {
        let paths = self.session_paths(agent, id);
        let mut settings = self.context_settings(agent, &paths)?;
        if writer.is_some() {
            settings.vector_feed = self.storage_feed(storage, agent);
        }
        Session::on_seam(
            Arc::clone(storage),
            writer,
            paths,
            agent.clone(),
            id.clone(),
            settings,
        )
    }
}
