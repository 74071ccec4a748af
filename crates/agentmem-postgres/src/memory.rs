//! [`PgStorage`] as the agent's side of the seam ([`MemoryStorage`]): the
//! notebook, facts, episodic items and facts key of each agent, and each
//! session's evicted tool outputs, as rows keyed by agent (and session).
//!
//! - **Notebook**: one row an agent, its content and hash; a swap is one
//!   `UPDATE … WHERE hash = $current` (an insert for an agent with none),
//!   so a writer that read an older notebook changes nothing.
//! - **Facts**: one row a fact, its JSON line as the files backend writes
//!   it and its position; a change runs in one transaction holding the
//!   agent's memory lock (a transaction-level advisory lock), reads the
//!   rows, and writes back only the facts that changed.
//! - **Episodes**: one row an item, unique by id, in the order appended.
//! - **Evicted outputs**: one row an output, deleted with its session.
//! - **Working-memory schemas**: one row an agent's, one row a session's
//!   own (copied by a fork, deleted with its session), each the schema's
//!   JSON text as it was set.

use agentmem::files::records::EpisodicItem;
use agentmem::files::snapshot::CompactionMemory;
use agentmem::memory::facts::{add_once_to, new_facts_key, Fact};
use agentmem::memory::notebook::{version, MemoryVersion};
use agentmem::redact::RedactionPolicy;
use agentmem::storage::memory::{MemoryStorage, SchemaOf, Swapped};
use agentmem::storage::Backend;
use agentmem::{AgentId, Error, Result, SessionId};
use postgres::Client;
use serde_json::Value;

use crate::storage::{connect, from_json, to_json, PgStorage};
use crate::{data_error, db_error};

impl PgStorage {
    /// Runs `work` on the connection memory transactions use.
    fn on_memory_connection<R>(&self, work: impl FnOnce(&mut Client) -> Result<R>) -> Result<R> {
        // A panic mid-transaction leaves it rolled back with its client.
        let mut slot = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        let client = match slot.as_mut() {
            Some(client) if !client.is_closed() => client,
            _ => slot.insert(connect(&self.config, &self.url)?),
        };
        work(client)
    }
}

/// The key of an agent's memory lock.
fn memory_lock_key(agent: &AgentId) -> String {
    format!("agentmem memory {}", agent.as_str())
}

impl MemoryStorage for PgStorage {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn folder(&self, _agent: &AgentId) -> Option<std::path::PathBuf> {
        None
    }

    fn memory_agents(&self) -> Result<Vec<AgentId>> {
        let rows = self
            .reader()
            .query(
                "SELECT agent_id FROM agentmem_notebooks UNION SELECT agent_id FROM agentmem_facts \
                 UNION SELECT agent_id FROM agentmem_episodes UNION SELECT agent_id FROM agentmem_agent_keys \
                 UNION SELECT agent_id FROM agentmem_sessions ORDER BY 1",
                &[],
            )
            .map_err(|e| db_error("list the agents with memory", &e))?;
        rows.iter()
            .map(|row| {
                AgentId::new(row.get::<_, &str>(0))
                    .map_err(|e| data_error("list the agents with memory", e))
            })
            .collect()
    }

    fn read_notebook(&self, agent: &AgentId) -> Result<MemoryVersion> {
        let row = self
            .reader()
            .query_opt(
                "SELECT content FROM agentmem_notebooks WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .map_err(|e| db_error("read MEMORY.md", &e))?;
        Ok(version(row.map(|row| row.get(0)).unwrap_or_default()))
    }

    fn swap_notebook(&self, agent: &AgentId, current: &str, next: &str) -> Result<Swapped> {
        let written = version(next.to_owned());
        let empty = version(String::new()).hash;
        let changed = if current == empty {
            // No row reads as the empty notebook; so does a row emptied.
            self.reader().execute(
                "INSERT INTO agentmem_notebooks (agent_id, content, hash) VALUES ($1, $2, $3) \
                 ON CONFLICT (agent_id) DO UPDATE SET content = EXCLUDED.content, hash = EXCLUDED.hash \
                 WHERE agentmem_notebooks.hash = $4",
                &[&agent.as_str(), &written.content, &written.hash, &current],
            )
        } else {
            self.reader().execute(
                "UPDATE agentmem_notebooks SET content = $2, hash = $3 \
                 WHERE agent_id = $1 AND hash = $4",
                &[&agent.as_str(), &written.content, &written.hash, &current],
            )
        }
        .map_err(|e| db_error("write MEMORY.md", &e))?;
        Ok(match changed {
            0 => Swapped::Changed,
            _ => Swapped::Done(written),
        })
    }

    fn read_facts(&self, agent: &AgentId) -> Result<Vec<Fact>> {
        read_facts(&mut *self.reader(), agent)
    }

    fn change_facts(
        &self,
        agent: &AgentId,
        change: &mut dyn FnMut(Vec<Fact>) -> Result<Vec<Fact>>,
    ) -> Result<()> {
        self.on_memory_connection(|client| {
            let action = "change the facts";
            let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
            lock_memory(&mut tx, agent)?;
            let before = read_facts(&mut tx, agent)?;
            let after = change(before.clone())?;
            write_facts(&mut tx, agent, &before, &after)?;
            tx.commit().map_err(|e| db_error(action, &e))
        })
    }

    fn facts_key(&self, agent: &AgentId, proposed: [u8; 16]) -> Result<[u8; 16]> {
        facts_key(&mut *self.reader(), agent, proposed)
    }

    fn read_episodes(&self, agent: &AgentId) -> Result<Vec<EpisodicItem>> {
        read_episodes(&mut *self.reader(), agent)
    }

    fn append_episode(&self, agent: &AgentId, item: &EpisodicItem) -> Result<bool> {
        insert_episode(&mut *self.reader(), agent, item)
    }

    fn put_evicted(&self, agent: &AgentId, id: &SessionId, name: &str, text: &str) -> Result<()> {
        put_evicted(&mut *self.reader(), agent, id, name, text)
    }

    fn read_evicted(&self, agent: &AgentId, id: &SessionId, name: &str) -> Result<String> {
        agentmem::base::id::validate_path_id(agentmem::base::error::IdKind::ToolCall, name)?;
        let row = self
            .reader()
            .query_opt(
                "SELECT content FROM agentmem_evicted \
                 WHERE agent_id = $1 AND session_id = $2 AND name = $3",
                &[&agent.as_str(), &id.as_str(), &name],
            )
            .map_err(|e| db_error("read an evicted output", &e))?;
        row.map(|row| row.get(0))
            .ok_or_else(|| Error::EvictedNotFound {
                call_id: name.to_owned(),
            })
    }

    fn evicted_names(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<String>> {
        let rows = self
            .reader()
            .query(
                "SELECT name FROM agentmem_evicted WHERE agent_id = $1 AND session_id = $2 \
                 ORDER BY name",
                &[&agent.as_str(), &id.as_str()],
            )
            .map_err(|e| db_error("list evicted outputs", &e))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    fn state_schema(&self, agent: &AgentId, of: SchemaOf<'_>) -> Result<Option<Value>> {
        let action = "read a working-memory schema";
        let row = match of {
            SchemaOf::Agent => self.reader().query_opt(
                "SELECT schema FROM agentmem_agent_state_schemas WHERE agent_id = $1",
                &[&agent.as_str()],
            ),
            SchemaOf::Session(id) => self.reader().query_opt(
                "SELECT schema FROM agentmem_session_state_schemas \
                 WHERE agent_id = $1 AND session_id = $2",
                &[&agent.as_str(), &id.as_str()],
            ),
        }
        .map_err(|e| db_error(action, &e))?;
        row.map(|row| from_json(action, row.get(0))).transpose()
    }

    fn put_state_schema(
        &self,
        agent: &AgentId,
        of: SchemaOf<'_>,
        schema: Option<&Value>,
    ) -> Result<()> {
        let action = "set a working-memory schema";
        let text = schema.map(to_json);
        let mut client = self.reader();
        let result = match (of, &text) {
            (SchemaOf::Agent, Some(text)) => client.execute(
                "INSERT INTO agentmem_agent_state_schemas (agent_id, schema) VALUES ($1, $2) \
                 ON CONFLICT (agent_id) DO UPDATE SET schema = EXCLUDED.schema",
                &[&agent.as_str(), text],
            ),
            (SchemaOf::Agent, None) => client.execute(
                "DELETE FROM agentmem_agent_state_schemas WHERE agent_id = $1",
                &[&agent.as_str()],
            ),
            (SchemaOf::Session(id), Some(text)) => client.execute(
                "INSERT INTO agentmem_session_state_schemas (agent_id, session_id, schema) \
                 VALUES ($1, $2, $3) \
                 ON CONFLICT (agent_id, session_id) DO UPDATE SET schema = EXCLUDED.schema",
                &[&agent.as_str(), &id.as_str(), text],
            ),
            (SchemaOf::Session(id), None) => client.execute(
                "DELETE FROM agentmem_session_state_schemas \
                 WHERE agent_id = $1 AND session_id = $2",
                &[&agent.as_str(), &id.as_str()],
            ),
        };
        match (result, of) {
            (Ok(_), _) => Ok(()),
            // The session's row must name a session the database holds.
            (Err(e), SchemaOf::Session(id))
                if e.code() == Some(&postgres::error::SqlState::FOREIGN_KEY_VIOLATION) =>
            {
                Err(Error::SessionNotFound {
                    agent: agent.to_string(),
                    session: id.to_string(),
                })
            }
            (Err(e), _) => Err(db_error(action, &e)),
        }
    }
}

/// Copies session `source`'s own working-memory schema, if it has one, to
/// its fork `new_id` (in the fork's transaction).
pub(crate) fn copy_session_schema(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
    source: &SessionId,
    new_id: &SessionId,
) -> Result<()> {
    client
        .execute(
            "INSERT INTO agentmem_session_state_schemas (agent_id, session_id, schema) \
             SELECT agent_id, $3, schema FROM agentmem_session_state_schemas \
             WHERE agent_id = $1 AND session_id = $2",
            &[&agent.as_str(), &source.as_str(), &new_id.as_str()],
        )
        .map_err(|e| db_error("copy the session's working-memory schema to its fork", &e))?;
    Ok(())
}

/// The agent's facts key, `proposed` kept as it when it has none.
fn facts_key(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
    proposed: [u8; 16],
) -> Result<[u8; 16]> {
    let action = "keep the agent's facts key";
    let row = client
        .query_one(
            "WITH made AS (INSERT INTO agentmem_agent_keys (agent_id, facts_key) VALUES ($1, $2) \
                 ON CONFLICT (agent_id) DO NOTHING RETURNING facts_key) \
                 SELECT facts_key FROM made UNION ALL \
                 SELECT facts_key FROM agentmem_agent_keys WHERE agent_id = $1 LIMIT 1",
            &[&agent.as_str(), &proposed.as_slice()],
        )
        .map_err(|e| db_error(action, &e))?;
    let key: Vec<u8> = row.get(0);
    key.try_into()
        .map_err(|_| data_error(action, "the stored key is not 16 bytes"))
}

/// Takes the agent's memory lock until the transaction ends.
fn lock_memory(client: &mut impl postgres::GenericClient, agent: &AgentId) -> Result<()> {
    client
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&memory_lock_key(agent)],
        )
        .map_err(|e| db_error("take the agent's memory lock", &e))?;
    Ok(())
}

/// Stores the agent's facts `after` in place of `before` (as read in the
/// same transaction): the facts gone are deleted, those changed or moved written.
fn write_facts(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
    before: &[Fact],
    after: &[Fact],
) -> Result<()> {
    let action = "store the facts";
    let kept: Vec<&str> = after.iter().map(|f| f.id.as_str()).collect();
    client
        .execute(
            "DELETE FROM agentmem_facts WHERE agent_id = $1 AND NOT (fact_id = ANY($2))",
            &[&agent.as_str(), &kept],
        )
        .map_err(|e| db_error(action, &e))?;
    let (mut positions, mut ids, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    for (position, fact) in after.iter().enumerate() {
        if before.get(position) != Some(fact) {
            positions.push(position as i64);
            ids.push(fact.id.as_str());
            lines.push(to_json(fact));
        }
    }
    client
        .execute(
            "INSERT INTO agentmem_facts (agent_id, position, fact_id, line) \
             SELECT $1, p, i, l FROM unnest($2::bigint[], $3::text[], $4::text[]) AS t(p, i, l) \
             ON CONFLICT (agent_id, fact_id) \
             DO UPDATE SET position = EXCLUDED.position, line = EXCLUDED.line",
            &[&agent.as_str(), &positions, &ids, &lines],
        )
        .map_err(|e| db_error(action, &e))?;
    Ok(())
}

/// Keeps what a compaction leaves in the agent's memory (its episode, its
/// facts merged as the engine merges them, each once) in the transaction
/// of its commit, under the agent's memory lock.
pub(crate) fn keep_compaction_memory(
    tx: &mut postgres::Transaction<'_>,
    agent: &AgentId,
    memory: &CompactionMemory,
    redaction: RedactionPolicy,
) -> Result<()> {
    lock_memory(tx, agent)?;
    insert_episode(tx, agent, &memory.episode)?;
    let before = read_facts(tx, agent)?;
    let mut key = || facts_key(tx, agent, new_facts_key()?);
    let after = add_once_to(before.clone(), memory.facts.clone(), redaction, &mut key)?;
    write_facts(tx, agent, &before, &after)
}

pub(crate) fn read_facts(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
) -> Result<Vec<Fact>> {
    read_rows(
        client,
        "SELECT line FROM agentmem_facts WHERE agent_id = $1 ORDER BY position",
        agent,
        "read the facts",
    )
}

pub(crate) fn read_episodes(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
) -> Result<Vec<EpisodicItem>> {
    read_rows(
        client,
        "SELECT line FROM agentmem_episodes WHERE agent_id = $1 ORDER BY position",
        agent,
        "read the episodic items",
    )
}

/// The JSON lines `query` selects for `agent`, parsed.
fn read_rows<T: serde::de::DeserializeOwned>(
    client: &mut impl postgres::GenericClient,
    query: &str,
    agent: &AgentId,
    action: &str,
) -> Result<Vec<T>> {
    let rows = client
        .query(query, &[&agent.as_str()])
        .map_err(|e| db_error(action, &e))?;
    rows.into_iter()
        .map(|row| from_json(action, row.get(0)))
        .collect()
}

/// Adds `item` unless the agent holds an item with its id; whether it did.
pub(crate) fn insert_episode(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
    item: &EpisodicItem,
) -> Result<bool> {
    let added = client
        .execute(
            "INSERT INTO agentmem_episodes (agent_id, episode_id, line) VALUES ($1, $2, $3) \
             ON CONFLICT (agent_id, episode_id) DO NOTHING",
            &[&agent.as_str(), &item.id, &to_json(item)],
        )
        .map_err(|e| db_error("append an episodic item", &e))?;
    Ok(added == 1)
}

/// Keeps the evicted output `name` of the session, replacing one of that name.
pub(crate) fn put_evicted(
    client: &mut impl postgres::GenericClient,
    agent: &AgentId,
    id: &SessionId,
    name: &str,
    text: &str,
) -> Result<()> {
    agentmem::base::id::validate_path_id(agentmem::base::error::IdKind::ToolCall, name)?;
    client
        .execute(
            "INSERT INTO agentmem_evicted (agent_id, session_id, name, content) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (agent_id, session_id, name) DO UPDATE SET content = EXCLUDED.content",
            &[&agent.as_str(), &id.as_str(), &name, &text],
        )
        .map_err(|e| db_error("keep an evicted output", &e))?;
    Ok(())
}
