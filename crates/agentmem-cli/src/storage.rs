//! Which storage backend the CLI and the service run on, and what the
//! commands may do there: everything on files; on a database, what is
//! behind the engine's storage seam (listing, describing, creating,
//! forking, deleting and exporting sessions; ingesting events the write-time guard
//! leaves whole, working-memory updates aside; `context`, `prepare` and
//! `compact`, without long-term memory; `search`, `recall` and `eval
//! locomo` on the database's history index) and a clear
//! [`agentmem::Error::NotOnBackend`] for the rest, never a silent
//! fallback to files.

use agentmem::config::StorageConfig;
use agentmem::storage::Backend;
use agentmem::{Config, Encoding, Event, Storage, Store, TraceType};

use crate::cli::{Command, SessionsCommand};

/// The configured backend's sessions: the store's files, or the database
/// of `[storage] url` / `AGENTMEM_DATABASE_URL`.
pub fn open(store: &Store, settings: &StorageConfig) -> agentmem::Result<Box<dyn Storage>> {
    match settings.backend {
        Backend::Files => Ok(Box::new(store.storage())),
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
            Ok(Box::new(agentmem_postgres::PgStorage::connect(
                url, redaction,
            )?))
        }
    }
}

/// Refuses, before anything of it is stored, a batch that needs what is not
/// behind the seam on `backend`: working-memory updates, and tool outputs
/// the write-time guard of `config` would evict.
pub fn check_batch(batch: &[Event], backend: Backend, config: &Config) -> agentmem::Result<()> {
    let guard = config.guard.clone().unwrap_or_default();
    let tokenizer = Encoding::default().tokenizer();
    for event in batch {
        let feature = match event.trace_type {
            TraceType::WorkingMemory => Some("working memory (a working_memory event)"),
            TraceType::ToolResult
                if agentmem::pipeline::guard::should_evict(&event.text(), &guard, tokenizer) =>
            {
                Some("evicting a large tool output (the write-time guard)")
            }
            _ => None,
        };
        if let Some(feature) = feature {
            return Err(agentmem::Error::NotOnBackend {
                feature,
                backend: backend.name(),
            });
        }
    }
    Ok(())
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
        | Command::Migrate(_) => None,
        Command::Sessions(SessionsCommand::End { .. }) => Some("`sessions end` (episodic memory)"),
        Command::Import { .. } => Some("`import` (the write-time guard and working memory)"),
        Command::Tools { .. } => Some("`tools`"),
        Command::Evicted { .. } => Some("`evicted` (evicted tool outputs)"),
        Command::Memory(_) => Some("`memory` (MEMORY.md)"),
        Command::State(_) => Some("`state` (working memory)"),
        Command::Facts(_) => Some("`facts` (semantic memory)"),
        Command::Chat(_) => Some("`chat`"),
        Command::Mcp { .. } => Some("`mcp` (the memory tools)"),
        Command::Replay(_) => Some("`replay`"),
    }
}
