//! `agentmem migrate --to postgres://… [--from DIR]`: every session of a
//! data directory copied into a database, as far as the storage seam
//! reaches (see [`agentmem::storage::copy`]), each copy checked; a run cut
//! short is resumed by running again.

use agentmem::config::DatabaseUrl;
use agentmem::storage::copy::{copy_session, Copied};
use agentmem::{Backend, Config, SessionId, Storage, Store};
use agentmem_postgres::PgStorage;
use anyhow::Context as _;

use super::Context;
use crate::cli::MigrateArgs;
use crate::output::print_json;

/// What an agent's folder may hold that the seam does not carry yet.
const LEFT_ON_FILES: &[&str] = &[
    "MEMORY.md",
    "semantic.jsonl",
    "episodic.jsonl",
    "search.sqlite",
    "working_memory.schema.json",
];

/// What a migration did.
#[derive(Debug, Default, serde::Serialize)]
struct Tally {
    sessions: usize,
    copied: usize,
    already_there: usize,
    events: usize,
    /// Files the seam does not carry yet, left where they are.
    left_on_files: Vec<String>,
}

pub fn run(ctx: &Context, args: &MigrateArgs) -> anyhow::Result<()> {
    let from_dir = args
        .from
        .clone()
        .unwrap_or_else(|| ctx.store.root().to_path_buf());
    let mut config = Config::load(&from_dir)?;
    // The source is the directory's files, whatever the configuration's backend.
    config.storage.backend = Backend::Files;
    let source = Store::with_config(&from_dir, config);
    let url = match &args.to {
        Some(url) => DatabaseUrl::new(url.as_str()),
        None => ctx.store.config().storage.url.clone().context(
            "say where to migrate to: --to postgres://…, [storage] url, or AGENTMEM_DATABASE_URL",
        )?,
    };
    let target = PgStorage::connect(&url, source.config().redaction.unwrap_or_default())?;
    let files = source.storage();
    let mut sessions = Vec::new();
    for agent in files.list_agents()? {
        for meta in files.list_sessions(&agent)? {
            sessions.push((agent.clone(), SessionId::new(&meta.id)?));
        }
    }
    let bar = crate::progress::bar(sessions.len() as u64, "migrating sessions");
    let mut tally = Tally::default();
    for (agent, id) in &sessions {
        match copy_session(&files, &target, agent, id)? {
            Copied::Events(events) => {
                tally.copied += 1;
                tally.events += events;
            }
            Copied::AlreadyThere => tally.already_there += 1,
        }
        tally.sessions += 1;
        bar.inc(1);
    }
    bar.finish_and_clear();
    for agent in files.list_agents()? {
        for name in LEFT_ON_FILES {
            let path = source.agent_dir(&agent).join(name);
            if path.exists() {
                tally.left_on_files.push(path.display().to_string());
            }
        }
    }
    if ctx.json {
        return print_json(&tally);
    }
    eprintln!(
        "agentmem: {} sessions migrated to {}: {} copied ({} events), {} already there",
        tally.sessions,
        url.masked(),
        tally.copied,
        tally.events,
        tally.already_there
    );
    for path in &tally.left_on_files {
        eprintln!(
            "agentmem: warning: {path} is not behind the storage seam yet and was not migrated"
        );
    }
    Ok(())
}
