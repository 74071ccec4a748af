//! A session's one writer on PostgreSQL: a connection of its own, holding
//! the session's advisory lock, through which every write goes, so a
//! writer whose connection died (and with it the lock) writes nothing more.
//!
//! An append costs two round trips whatever its size: the ids it names
//! that the session holds already, then one statement that inserts the
//! events and updates the session's row (a single statement is its own
//! transaction: all of it or nothing). Both are prepared once, when the
//! writer opens. Once committed, the events are handed to the store's
//! [`Feeder`], which indexes them off the append's path.

use std::collections::HashSet;
use std::sync::Arc;

use agentmem::base::turn::turn_number;
use agentmem::files::meta::{title_from, SessionMeta};
use agentmem::files::snapshot::Snapshot;
use agentmem::redact::RedactionPolicy;
use agentmem::storage::batch::Assigner;
use agentmem::storage::{Appended, CommitMemory, CompactionCommit, SessionWriter, SnapshotFields};
use agentmem::{AgentId, Event, Result, SessionId, TraceType};
use postgres::{Client, Statement};

use crate::db_error;
use crate::feed::Feeder;
use crate::storage::{lock_key, read_lines, read_meta, to_json, EventRows, Rows, INSERT_EVENTS};

/// Which of the ids `$3` the session (`$1`, `$2`) holds, archive included.
const HELD_IDS: &str = "SELECT event_id FROM agentmem_events \
     WHERE agent_id = $1 AND session_id = $2 AND event_id = ANY($3)";

/// The events of [`INSERT_EVENTS`] (`$1`–`$6`) and, in the same statement,
/// the session's description `$7` and next seq `$8`.
fn append_statement() -> String {
    format!(
        "WITH inserted AS ({INSERT_EVENTS}) \
         UPDATE agentmem_sessions SET meta = $7, next_seq = $8 \
         WHERE agent_id = $1 AND session_id = $2"
    )
}

/// The writer's statements, prepared on its connection.
struct Prepared {
    held_ids: Statement,
    append: Statement,
}

/// The writer of one session (see the module docs).
pub(crate) struct PgWriter {
    client: Client,
    agent: AgentId,
    id: SessionId,
    redaction: RedactionPolicy,
    meta: SessionMeta,
    /// The seq the next appended event gets.
    next_seq: i64,
    assigner: Assigner,
    prepared: Prepared,
    /// Indexes each append once it is committed.
    feeder: Arc<Feeder>,
}

impl std::fmt::Debug for PgWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWriter")
            .field("agent", &self.agent)
            .field("id", &self.id)
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

impl PgWriter {
    /// The writer of `id` on `client`, which holds the session's lock.
    pub(crate) fn open(
        mut client: Client,
        agent: AgentId,
        id: SessionId,
        redaction: RedactionPolicy,
        feeder: Arc<Feeder>,
    ) -> Result<PgWriter> {
        let meta = read_meta(&mut client, &agent, &id)?;
        let active = read_lines(&mut client, &agent, &id, Rows::all_active())?;
        let next_seq: i64 = client
            .query_one(
                "SELECT next_seq FROM agentmem_sessions WHERE agent_id = $1 AND session_id = $2",
                &[&agent.as_str(), &id.as_str()],
            )
            .map_err(|e| db_error("open a session for writing", &e))?
            .get(0);
        let prepare = |client: &mut Client, sql: &str| {
            client
                .prepare(sql)
                .map_err(|e| db_error("prepare a writer's statements", &e))
        };
        let prepared = Prepared {
            held_ids: prepare(&mut client, HELD_IDS)?,
            append: prepare(&mut client, &append_statement())?,
        };
        Ok(PgWriter {
            prepared,
            assigner: Assigner::new(&active),
            client,
            agent,
            id,
            redaction,
            meta,
            next_seq,
            feeder,
        })
    }

    /// The ids among `named` the session holds, active or archived.
    fn held(&mut self, named: Vec<String>) -> Result<HashSet<String>> {
        if named.is_empty() {
            return Ok(HashSet::new());
        }
        let rows = self
            .client
            .query(
                &self.prepared.held_ids,
                &[&self.agent.as_str(), &self.id.as_str(), &named],
            )
            .map_err(|e| db_error("look up event ids", &e))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// The description once `fresh` is appended.
    fn meta_with(&self, fresh: &[Event]) -> SessionMeta {
        let mut meta = self.meta.clone();
        for event in fresh {
            if event.trace_type == TraceType::User {
                meta.turns = match turn_number(&event.turn_id) {
                    Some(number) => meta.turns.max(number as usize),
                    None => meta.turns + 1,
                };
                if meta.title.is_none() {
                    meta.title = Some(title_from(&event.content, self.redaction));
                }
            }
        }
        if let (Some(first), Some(last)) = (fresh.first(), fresh.last()) {
            // Imported history can predate the session: it started when its first event did.
            meta.created = meta.created.min(first.ts);
            meta.updated = meta.updated.max(last.ts);
        }
        meta.events += fresh.len();
        meta
    }

    /// Stores `fresh` and the description it makes, in one statement.
    fn store(&mut self, fresh: &[Event], meta: &SessionMeta) -> Result<()> {
        let next_seq = self.next_seq + fresh.len() as i64;
        let rows = EventRows::new(self.next_seq, fresh);
        self.client
            .execute(
                &self.prepared.append,
                &[
                    &self.agent.as_str(),
                    &self.id.as_str(),
                    &false,
                    &rows.seqs,
                    &rows.ids,
                    &rows.lines,
                    &to_json(meta),
                    &next_seq,
                ],
            )
            .map_err(|e| db_error("append events", &e))?;
        self.next_seq = next_seq;
        Ok(())
    }
}

impl Drop for PgWriter {
    /// Releases the session's lock before the connection closes: the
    /// server frees a closed connection's locks only once its backend
    /// process has ended, so a writer opened right after this one is
    /// dropped would otherwise find the session still locked. Best effort:
    /// on a dead connection the lock is gone already.
    fn drop(&mut self) {
        let _ = self.client.execute(
            "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
            &[&lock_key(&self.agent, &self.id)],
        );
    }
}

impl SessionWriter for PgWriter {
    fn id(&self) -> &SessionId {
        &self.id
    }

    fn append(&mut self, events: Vec<Event>) -> Result<Appended> {
        let held = self.held(Assigner::named_ids(&events))?;
        let admitted = Assigner::admit(events, &held)?;
        let mut fresh = admitted.fresh;
        if fresh.is_empty() {
            return Ok(Appended {
                events: fresh,
                duplicates: admitted.duplicates,
            });
        }
        let before = self.assigner.assign(&mut fresh);
        let meta = self.meta_with(&fresh);
        // Seqs number the session's full history from 1.
        let first_ord = (self.next_seq - 1) as u64;
        if let Err(error) = self.store(&fresh, &meta) {
            self.assigner.restore(before);
            return Err(error);
        }
        self.meta = meta;
        self.feeder
            .add(&self.agent, self.id.as_str(), first_ord, &fresh);
        Ok(Appended {
            events: fresh,
            duplicates: admitted.duplicates,
        })
    }

    fn commit_compaction(&mut self, commit: CompactionCommit) -> Result<()> {
        let action = "commit a compaction";
        let (agent, id) = (self.agent.as_str(), self.id.as_str());
        let mut tx = self
            .client
            .transaction()
            .map_err(|e| db_error(action, &e))?;
        let active: i64 = tx
            .query_one(
                "SELECT count(*) FROM agentmem_events \
                 WHERE agent_id = $1 AND session_id = $2 AND NOT archived",
                &[&agent, &id],
            )
            .map_err(|e| db_error(action, &e))?
            .get(0);
        let moved = (commit.archived as i64).min(active);
        let first_kept = tx
            .query_opt(
                "SELECT seq, event_id FROM agentmem_events \
                 WHERE agent_id = $1 AND session_id = $2 AND NOT archived \
                 ORDER BY seq OFFSET $3 LIMIT 1",
                &[&agent, &id, &moved],
            )
            .map_err(|e| db_error(action, &e))?
            .map(|row| (row.get::<_, i64>(0), row.get::<_, String>(1)));
        let below = first_kept.as_ref().map_or(i64::MAX, |(seq, _)| *seq);
        tx.execute(
            "UPDATE agentmem_events SET archived = true \
             WHERE agent_id = $1 AND session_id = $2 AND NOT archived AND seq < $3",
            &[&agent, &id, &below],
        )
        .map_err(|e| db_error(action, &e))?;
        if let CommitMemory::Keep(memory) = &commit.memory {
            crate::memory::keep_compaction_memory(&mut tx, &self.agent, memory, self.redaction)?;
        }
        let mut meta = self.meta.clone();
        meta.archived_events += moved as usize;
        meta.compactions_finished = meta.compactions_finished.max(commit.snapshot.compactions);
        let snapshot = match commit.fields {
            SnapshotFields::FromTheMove => Snapshot {
                active_first_id: first_kept.map(|(_, id)| id),
                tail_events: (active - moved) as usize,
                archived_events: Some(meta.archived_events),
                ..commit.snapshot
            },
            SnapshotFields::AsGiven => commit.snapshot,
        };
        tx.execute(
            "UPDATE agentmem_sessions SET snapshot = $3, meta = $4 \
             WHERE agent_id = $1 AND session_id = $2",
            &[&agent, &id, &to_json(&snapshot), &to_json(&meta)],
        )
        .map_err(|e| db_error(action, &e))?;
        tx.commit().map_err(|e| db_error(action, &e))?;
        self.meta = meta;
        Ok(())
    }

    fn meta(&self) -> SessionMeta {
        self.meta.clone()
    }

    fn adopt_meta(&mut self, source: &SessionMeta) -> Result<()> {
        let mut meta = self.meta.clone();
        meta.adopt(source);
        self.client
            .execute(
                "UPDATE agentmem_sessions SET meta = $3 WHERE agent_id = $1 AND session_id = $2",
                &[&self.agent.as_str(), &self.id.as_str(), &to_json(&meta)],
            )
            .map_err(|e| db_error("record a session's description", &e))?;
        self.meta = meta;
        Ok(())
    }
}
