//! Which storage backend the CLI and the service run on, and what the
//! commands may do there: everything on files; on a database, what is
//! behind the engine's storage seam (listing, describing, creating,
//! forking, deleting, ending and exporting sessions; ingesting events,
//! working-memory updates aside; `context`, `prepare` and `compact`; the
//! agent's MEMORY.md, facts and evicted outputs; `search`, `recall` and
//! `eval locomo` on the database's history index) and a clear
//! [`agentmem::Error::NotOnBackend`] for the rest, never a silent
//! fallback to files.

use agentmem::config::StorageConfig;
use agentmem::storage::Backend;
use std::sync::Arc;

use agentmem::{Event, MemoryStorage, Storage, Store, TraceType};

use crate::cli::{Command, SessionsCommand};

/// A backend's two sides: sessions and agent memory.
pub struct Opened {
    /// Where sessions are kept.
    pub sessions: Arc<dyn Storage>,
    /// Where agents' memory and evicted outputs are kept.
    pub memory: Arc<dyn MemoryStorage>,
}

/// The configured backend: the store's files, or the database of
/// `[storage] url` / `AGENTMEM_DATABASE_URL`.
pub fn open(store: &Store, settings: &StorageConfig) -> agentmem::Result<Opened> {
    match settings.backend {
        Backend::Files => Ok(Opened {
            sessions: Arc::new(store.storage()),
            memory: Arc::new(store.memory()),
        }),
        Backend::Postgres => {
            let url = settings
                .url
                .as_ref()
                .ok_or_else(|| agentmem::Error::Config {
                    path: "[storage] url".to_owned(),
                    message: format!(
                        "backend = \"postgres\" needs the database's URL: set [storage] url or {}",
                        agentmem::config::DATABASE_URL_ENV
                    ),
                })?;
            let redaction = store.config().redaction.unwrap_or_default();
            let database = Arc::new(
                agentmem_postgres::PgStorage::connect(url, redaction)?
                    .with_durability(store.durability()),
            );
            Ok(Opened {
                sessions: database.clone(),
                memory: database,
            })
        }
    }
}

/// Refuses, before anything of it is stored, a batch that needs what is not
/// behind the seam on `backend`: working-memory updates.
pub fn check_batch(batch: &[Event], backend: Backend) -> agentmem::Result<()> {
    match batch
        .iter()
        .any(|event| event.trace_type == TraceType::WorkingMemory)
    {
        true => Err(agentmem::Error::NotOnBackend {
            feature: "working memory (a working_memory event)",
            backend: backend.name(),
        }),
        false => Ok(()),
    }
}

/// The feature `command` uses that is not behind the storage seam yet,
/// if it uses one: refused on a backend other than files.
pub fn beyond_the_seam(command: &Command) -> Option<&'static str> {
    match command {
        Command::Ingest { .. }
        | Command::Sessions(
            SessionsCommand::List
            | SessionsCommand::Show { .. }
            | SessionsCommand::Create { .. }
            | SessionsCommand::Fork { .. }
            | SessionsCommand::Delete { .. },
        )
        | Command::Tokens { .. }
        | Command::Models { .. }
        | Command::Export { .. }
        | Command::Context { .. }
        | Command::Prepare { .. }
        | Command::Compact { .. }
        | Command::Serve(_)
        | Command::Search { .. }
        | Command::Recall { .. }
        | Command::Eval(_)
        | Command::Bench(_)
        | Command::Migrate(_)
        | Command::Evicted { .. }
        | Command::Memory(_)
        | Command::Facts(_)
        | Command::Sessions(SessionsCommand::End { .. })
        | Command::Tools { .. } => None,
        Command::Import { .. } => Some("`import` (working memory)"),
        Command::State(_) => Some("`state` (working memory)"),
        Command::Chat(_) => Some("`chat`"),
        Command::Mcp { .. } => Some("`mcp` (the memory tools)"),
        Command::Replay(_) => Some("`replay`"),
    }
}
