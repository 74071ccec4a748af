//! Which storage backend the CLI and the service run on, and what the
//! commands may do there: everything, on files and on a database alike
//! (sessions, ingest and import, working memory, the context pipeline,
//! the agent's memory, search and recall, the memory tools over MCP and
//! in `chat`, `replay --session`), each reading and writing the backend.
//! A command that could not would be refused by name
//! ([`agentmem::Error::NotOnBackend`], from [`beyond_the_seam`]), never
//! kept in files instead.

use agentmem::config::StorageConfig;
use agentmem::storage::Backend;
use std::sync::Arc;

use agentmem::{MemoryStorage, Storage, Store};

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

/// The feature `command` uses that is not behind the storage seam yet,
/// if it uses one: refused on a backend other than files. Every command
/// runs on every backend now; this is where one that cannot would say so.
pub fn beyond_the_seam(command: &Command) -> Option<&'static str> {
    match command {
        Command::Ingest { .. }
        | Command::Import { .. }
        | Command::Sessions(
            SessionsCommand::List
            | SessionsCommand::Show { .. }
            | SessionsCommand::Create { .. }
            | SessionsCommand::Fork { .. }
            | SessionsCommand::Delete { .. }
            | SessionsCommand::End { .. },
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
        | Command::Tools { .. }
        | Command::State(_)
        | Command::Chat(_)
        | Command::Mcp { .. }
        | Command::Replay(_) => None,
    }
}
