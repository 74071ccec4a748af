//! Copying a session from one backend to another (`agentmem migrate`):
//! its archive and active log in order, its snapshot with the compaction
//! that made it, and what its description holds beyond the log. A copy cut
//! short is resumed by copying again: appends are idempotent by id, and a
//! session already whole at the target is left as it is. Every copy is
//! checked: the target reads back the source's lines byte for byte.
//!
//! An agent's memory ([`copy_memory`]) and a session's evicted outputs
//! ([`copy_evicted`]) are copied the same way: again after an
//! interruption, without duplicates.

use crate::base::error::{Error, Result};
use crate::base::id::{AgentId, SessionId};
use crate::files::jsonl::encode_lines;
use crate::storage::memory::{MemoryStorage, SchemaOf, Swapped};
use crate::storage::{CommitMemory, CompactionCommit, EventRange, SnapshotFields, Storage};

/// Events appended to the target in one batch.
const COPY_BATCH: usize = 1000;

/// What copying one session did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// Its events were copied (those the target lacked).
    Events(usize),
    /// The target held the whole session already.
    AlreadyThere,
}

/// Copies session `id` of `agent` from `from` to `to` (see the module docs).
pub fn copy_session(
    from: &dyn Storage,
    to: &dyn Storage,
    agent: &AgentId,
    id: &SessionId,
) -> Result<Copied> {
    let meta = from.session_meta(agent, id)?;
    let archive = from.archived_events(agent, id)?;
    let active = from.read_events(agent, id, EventRange::All)?;
    let snapshot = from.snapshot(agent, id)?;
    let mut writer = match to.create_session(agent, id) {
        Err(Error::SessionExists { .. }) => to.lock_session(agent, id)?,
        other => other?,
    };
    if same_history(from, to, agent, id)? {
        return Ok(Copied::AlreadyThere);
    }
    let before = to.event_count(agent, id)?;
    for batch in archive
        .iter()
        .chain(&active)
        .collect::<Vec<_>>()
        .chunks(COPY_BATCH)
    {
        writer.append(batch.iter().map(|e| (*e).clone()).collect())?;
    }
    if let Some(snapshot) = snapshot {
        if before.archived == 0 {
            writer.commit_compaction(CompactionCommit {
                archived: archive.len(),
                snapshot,
                fields: SnapshotFields::AsGiven,
                memory: CommitMemory::Elsewhere,
            })?;
        }
    }
    writer.adopt_meta(&meta)?;
    drop(writer);
    if !same_history(from, to, agent, id)? {
        return Err(Error::Storage {
            backend: to.backend().name(),
            action: format!("copy session {id} of agent {agent}"),
            message: "the copy does not read back as the source (its log, archive or snapshot differ); \
                      the target may have had other events under that id: delete it there and copy again"
                .to_owned(),
        });
    }
    let after = to.event_count(agent, id)?;
    Ok(Copied::Events(
        after.active + after.archived - before.active - before.archived,
    ))
}

/// Whether the two backends hold the same log, archive and snapshot for
/// the session, line for line.
fn same_history(
    from: &dyn Storage,
    to: &dyn Storage,
    agent: &AgentId,
    id: &SessionId,
) -> Result<bool> {
    let lines = |storage: &dyn Storage| -> Result<(Vec<u8>, Vec<u8>, Option<String>)> {
        Ok((
            encode_lines(&storage.read_events(agent, id, EventRange::All)?),
            encode_lines(&storage.archived_events(agent, id)?),
            storage
                .snapshot(agent, id)?
                .map(|s| serde_json::to_string(&s).expect("snapshots serialize")),
        ))
    };
    Ok(lines(from)? == lines(to)?)
}

/// What copying one agent's memory did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryCopied {
    /// The notebook was written at the target.
    pub notebook: bool,
    /// Facts written at the target (none when it held them already).
    pub facts: usize,
    /// Episodic items the target lacked.
    pub episodes: usize,
    /// The agent's working-memory schema was written at the target.
    pub schema: bool,
}

/// Copies `agent`'s long-term memory from `from` to `to`: its notebook,
/// facts (with the key their fingerprints are made with) and episodic
/// items. A copy cut short is resumed by copying again: what the target
/// holds already as the source does is left as it is; a notebook or facts
/// the target holds otherwise are an error, never overwritten.
pub fn copy_memory(
    from: &dyn MemoryStorage,
    to: &dyn MemoryStorage,
    agent: &AgentId,
) -> Result<MemoryCopied> {
    let mut copied = MemoryCopied::default();
    let conflict = |what: &str| Error::Storage {
        backend: to.backend().name(),
        action: format!("copy the {what} of agent {agent}"),
        message: format!(
            "the target holds other {what} for this agent; move them aside there (or pick \
             another agent) and copy again"
        ),
    };
    let notebook = from.read_notebook(agent)?;
    let there = to.read_notebook(agent)?;
    if there != notebook {
        if !there.content.is_empty() {
            return Err(conflict("MEMORY.md"));
        }
        match to.swap_notebook(agent, &there.hash, &notebook.content)? {
            Swapped::Done(_) => copied.notebook = true,
            Swapped::Changed => return Err(conflict("MEMORY.md")),
        }
    }
    let facts = from.read_facts(agent)?;
    if !facts.is_empty() {
        // Fingerprints of redacted facts are made with the agent's key: it
        // goes along, so they still tell facts apart at the target.
        if facts.iter().any(|fact| fact.hidden.is_some()) {
            let proposed = crate::base::hash::random_key().map_err(|e| Error::Storage {
                backend: from.backend().name(),
                action: format!("copy the facts key of agent {agent}"),
                message: e.to_string(),
            })?;
            let key = from.facts_key(agent, proposed)?;
            if to.facts_key(agent, key)? != key {
                return Err(conflict("facts key"));
            }
        }
        to.change_facts(agent, &mut |there| {
            if there == facts {
                Ok(there)
            } else if there.is_empty() {
                copied.facts = facts.len();
                Ok(facts.clone())
            } else {
                Err(conflict("facts"))
            }
        })?;
    }
    for item in from.read_episodes(agent)? {
        if to.append_episode(agent, &item)? {
            copied.episodes += 1;
        }
    }
    copied.schema = copy_schema(from, to, agent, SchemaOf::Agent)?;
    Ok(copied)
}

/// Copies the working-memory schema of session `id` of `agent`, if it has
/// one of its own (the session must be at the target already); says
/// whether it wrote it. One the target holds already is left as it is; a
/// different one there is an error, never overwritten.
pub fn copy_session_schema(
    from: &dyn MemoryStorage,
    to: &dyn MemoryStorage,
    agent: &AgentId,
    id: &SessionId,
) -> Result<bool> {
    copy_schema(from, to, agent, SchemaOf::Session(id))
}

/// Copies the working-memory schema `of` the agent or a session.
fn copy_schema(
    from: &dyn MemoryStorage,
    to: &dyn MemoryStorage,
    agent: &AgentId,
    of: SchemaOf<'_>,
) -> Result<bool> {
    let Some(schema) = from.state_schema(agent, of)? else {
        return Ok(false);
    };
    match to.state_schema(agent, of)? {
        Some(there) if there == schema => Ok(false),
        None => to.put_state_schema(agent, of, Some(&schema)).map(|()| true),
        Some(_) => Err(Error::Storage {
            backend: to.backend().name(),
            action: format!(
                "copy the {} working-memory schema of agent {agent}",
                of.scope().as_str()
            ),
            message: "the target holds another schema there; remove it there (or pick another \
                      agent) and copy again"
                .to_owned(),
        }),
    }
}

/// Copies the evicted tool outputs of session `id` of `agent` (the session
/// must be at the target already); returns how many it copied.
pub fn copy_evicted(
    from: &dyn MemoryStorage,
    to: &dyn MemoryStorage,
    agent: &AgentId,
    id: &SessionId,
) -> Result<usize> {
    let names = from.evicted_names(agent, id)?;
    for name in &names {
        to.put_evicted(agent, id, name, &from.read_evicted(agent, id, name)?)?;
    }
    Ok(names.len())
}
