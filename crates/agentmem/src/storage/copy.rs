//! Copying a session from one backend to another (`agentmem migrate`):
//! its archive and active log in order, its snapshot with the compaction
//! that made it, and what its description holds beyond the log. A copy cut
//! short is resumed by copying again: appends are idempotent by id, and a
//! session already whole at the target is left as it is. Every copy is
//! checked: the target reads back the source's lines byte for byte.

use crate::base::error::{Error, Result};
use crate::base::id::{AgentId, SessionId};
use crate::files::jsonl::encode_lines;
use crate::storage::{CompactionCommit, EventRange, SnapshotFields, Storage};

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
