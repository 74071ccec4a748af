//! `agentmem migrate [--from DIR|postgres://…] [--to postgres://…|DIR]`:
//! every session of a data directory or a database copied to the other,
//! with each agent's memory (MEMORY.md, facts, episodic items, its
//! working-memory schema) and each session's evicted outputs and own
//! working-memory schema (see [`agentmem::storage::copy`]), each session's
//! copy checked; a run cut short is resumed by running again. A session's
//! working-memory state is its log's updates, so it goes with the events.

use std::path::PathBuf;
use std::sync::Arc;

use agentmem::config::DatabaseUrl;
use agentmem::storage::copy::{
    copy_evicted, copy_memory, copy_session, copy_session_schema, Copied,
};
use agentmem::{AgentId, Backend, Config, SessionId, Store};
use agentmem_postgres::PgStorage;
use anyhow::Context as _;

use super::Context;
use crate::cli::MigrateArgs;
use crate::output::print_json;
use crate::storage::Opened;

/// A store to copy from or to.
enum Place {
    /// A data directory's files.
    Dir(PathBuf),
    /// A PostgreSQL database.
    Database(DatabaseUrl),
}

impl Place {
    fn of(arg: &str) -> Place {
        if arg.starts_with("postgres://") || arg.starts_with("postgresql://") {
            Place::Database(DatabaseUrl::new(arg))
        } else {
            Place::Dir(PathBuf::from(arg))
        }
    }

    /// How messages name it (a URL's password masked).
    fn name(&self) -> String {
        match self {
            Place::Dir(dir) => dir.display().to_string(),
            Place::Database(url) => url.masked(),
        }
    }

    fn open(&self, config: &Config) -> anyhow::Result<Opened> {
        Ok(match self {
            Place::Dir(dir) => {
                let mut config = Config::load(dir)?;
                // A directory's files, whatever its configuration's backend.
                config.storage.backend = Backend::Files;
                let store = Store::with_config(dir, config);
                Opened {
                    sessions: Arc::new(store.storage()),
                    memory: Arc::new(store.memory()),
                }
            }
            Place::Database(url) => {
                let database = Arc::new(PgStorage::connect(
                    url,
                    config.redaction.unwrap_or_default(),
                )?);
                Opened {
                    sessions: database.clone(),
                    memory: database,
                }
            }
        })
    }
}

/// What a migration did.
#[derive(Debug, Default, serde::Serialize)]
struct Tally {
    sessions: usize,
    copied: usize,
    already_there: usize,
    events: usize,
    evicted_outputs: usize,
    agents: usize,
    notebooks: usize,
    facts: usize,
    episodes: usize,
    /// Working-memory schemas written, agents' and sessions' own.
    schemas: usize,
}

pub fn run(ctx: &Context, args: &MigrateArgs) -> anyhow::Result<()> {
    let from = match &args.from {
        Some(from) => Place::of(from),
        None => Place::Dir(ctx.store.root().to_path_buf()),
    };
    let to = match &args.to {
        Some(to) => Place::of(to),
        None => Place::Database(ctx.store.config().storage.url.clone().context(
            "say where to migrate to: --to postgres://… or a directory, [storage] url, \
             or AGENTMEM_DATABASE_URL",
        )?),
    };
    if let (Place::Dir(a), Place::Dir(b)) = (&from, &to) {
        anyhow::ensure!(
            a != b,
            "--from and --to are the same directory: copy to another"
        );
    }
    let source = from.open(ctx.store.config())?;
    let target = to.open(ctx.store.config())?;
    let mut sessions = Vec::new();
    for agent in source.sessions.list_agents()? {
        for meta in source.sessions.list_sessions(&agent)? {
            sessions.push((agent.clone(), SessionId::new(&meta.id)?));
        }
    }
    let agents: Vec<AgentId> = source.memory.memory_agents()?;
    let bar = crate::progress::bar(
        (sessions.len() + agents.len()) as u64,
        "migrating sessions and memory",
    );
    let mut tally = Tally::default();
    for (agent, id) in &sessions {
        match copy_session(&*source.sessions, &*target.sessions, agent, id)? {
            Copied::Events(events) => {
                tally.copied += 1;
                tally.events += events;
            }
            Copied::AlreadyThere => tally.already_there += 1,
        }
        tally.evicted_outputs += copy_evicted(&*source.memory, &*target.memory, agent, id)?;
        tally.schemas += usize::from(copy_session_schema(
            &*source.memory,
            &*target.memory,
            agent,
            id,
        )?);
        tally.sessions += 1;
        bar.inc(1);
    }
    for agent in &agents {
        let copied = copy_memory(&*source.memory, &*target.memory, agent)?;
        tally.agents += 1;
        tally.notebooks += usize::from(copied.notebook);
        tally.facts += copied.facts;
        tally.episodes += copied.episodes;
        tally.schemas += usize::from(copied.schema);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if ctx.json {
        return print_json(&tally);
    }
    eprintln!(
        "agentmem: {} sessions migrated from {} to {}: {} copied ({} events, {} evicted outputs), \
         {} already there; the memory of {} agents ({} notebooks, {} facts, {} episodes, \
         {} working-memory schemas written)",
        tally.sessions,
        from.name(),
        to.name(),
        tally.copied,
        tally.events,
        tally.evicted_outputs,
        tally.already_there,
        tally.agents,
        tally.notebooks,
        tally.facts,
        tally.episodes,
        tally.schemas
    );
    eprintln!(
        "agentmem: the search index is not copied: {} builds its own from the copied events \
         when it is first searched (vectors are embedded again)",
        to.name()
    );
    Ok(())
}
