//! The schema, as versioned migrations: each runs once, in its own
//! transaction, and is recorded in `agentmem_schema_migrations`. Servers
//! that start at once take turns (a transaction-level advisory lock), so
//! none applies a migration twice.

use postgres::Client;

use crate::db_error;

/// One step of the schema.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its number; applied in increasing order.
    pub version: i32,
    /// What it does.
    pub name: &'static str,
    /// Its statements.
    pub sql: &'static str,
}

/// Every migration, oldest first. Never edit one that was released: add the next.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "sessions and their event logs",
        sql: "
        CREATE TABLE agentmem_sessions (
            agent_id   text   NOT NULL,
            session_id text   NOT NULL,
            meta       text   NOT NULL,
            snapshot   text,
            next_seq   bigint NOT NULL DEFAULT 1,
            PRIMARY KEY (agent_id, session_id)
        );
        CREATE TABLE agentmem_events (
            agent_id   text    NOT NULL,
            session_id text    NOT NULL,
            seq        bigint  NOT NULL,
            event_id   text    NOT NULL,
            archived   boolean NOT NULL DEFAULT false,
            line       text    NOT NULL,
            PRIMARY KEY (agent_id, session_id, seq),
            UNIQUE (agent_id, session_id, event_id),
            FOREIGN KEY (agent_id, session_id)
                REFERENCES agentmem_sessions (agent_id, session_id) ON DELETE CASCADE
        );
        CREATE INDEX agentmem_events_active
            ON agentmem_events (agent_id, session_id, seq) WHERE NOT archived;
    ",
    },
    Migration {
        version: 2,
        name: "agents' memory and sessions' evicted outputs",
        sql: "
        CREATE TABLE agentmem_notebooks (
            agent_id text PRIMARY KEY,
            content  text NOT NULL,
            hash     text NOT NULL
        );
        CREATE TABLE agentmem_facts (
            agent_id text   NOT NULL,
            fact_id  text   NOT NULL,
            position bigint NOT NULL,
            line     text   NOT NULL,
            PRIMARY KEY (agent_id, fact_id)
        );
        CREATE TABLE agentmem_episodes (
            agent_id   text      NOT NULL,
            episode_id text      NOT NULL,
            position   bigserial NOT NULL,
            line       text      NOT NULL,
            PRIMARY KEY (agent_id, episode_id)
        );
        CREATE TABLE agentmem_agent_keys (
            agent_id  text  PRIMARY KEY,
            facts_key bytea NOT NULL
        );
        CREATE TABLE agentmem_evicted (
            agent_id   text NOT NULL,
            session_id text NOT NULL,
            name       text NOT NULL,
            content    text NOT NULL,
            PRIMARY KEY (agent_id, session_id, name),
            FOREIGN KEY (agent_id, session_id)
                REFERENCES agentmem_sessions (agent_id, session_id) ON DELETE CASCADE
        );
    ",
    },
    Migration {
        version: 3,
        name: "the history index: documents with a tsvector under GIN, BM25 statistics, vectors",
        sql: include_str!("migrations/search_index.sql"),
    },
    Migration {
        version: 4,
        name: "working-memory schemas, an agent's and a session's own",
        sql: "
        CREATE TABLE agentmem_agent_state_schemas (
            agent_id text PRIMARY KEY,
            schema   text NOT NULL
        );
        CREATE TABLE agentmem_session_state_schemas (
            agent_id   text NOT NULL,
            session_id text NOT NULL,
            schema     text NOT NULL,
            PRIMARY KEY (agent_id, session_id),
            FOREIGN KEY (agent_id, session_id)
                REFERENCES agentmem_sessions (agent_id, session_id) ON DELETE CASCADE
        );
    ",
    },
    Migration {
        version: 5,
        name: "the history index's term statistics: how many events hold each lexeme",
        sql: include_str!("migrations/search_terms.sql"),
    },
    Migration {
        version: 6,
        name: "facts and episodes in the history index, with their own BM25 statistics; LZ4 for its documents",
        sql: include_str!("migrations/search_memories.sql"),
    },
    Migration {
        version: 7,
        name: "migration 3's BM25 function dropped: documents are scored by the client",
        sql: "DROP FUNCTION IF EXISTS agentmem_bm25(tsvector, integer, text[], float8[], float8);",
    },
    Migration {
        version: 8,
        name: "vectors by document: a deleted document's vectors found by an index, not a scan of the agent's",
        // The key leads with the model, so without it the cascade from each
        // deleted document read every vector of the agent.
        sql: "CREATE INDEX agentmem_search_vectors_by_doc ON agentmem_search_vectors (agent_id, doc);",
    },
];

/// The advisory lock key migrators take turns on.
const MIGRATION_LOCK: i64 = 0x6167_656e_746d_656d; // "agentmem"

/// Applies the migrations `client`'s database lacks; returns the versions applied.
pub fn migrate(client: &mut Client) -> agentmem::Result<Vec<i32>> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS agentmem_schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )",
        )
        .or_else(|e| match e.code() {
            // Two servers creating it at once: the other one won.
            Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => Ok(()),
            _ => Err(e),
        })
        .map_err(|e| db_error("create the migrations table", &e))?;
    let mut applied = Vec::new();
    for migration in MIGRATIONS {
        let action = format!("apply migration {} ({})", migration.version, migration.name);
        let mut tx = client
            .transaction()
            .map_err(|e| db_error(action.clone(), &e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(|e| db_error(action.clone(), &e))?;
        let done = tx
            .query_opt(
                "SELECT 1 FROM agentmem_schema_migrations WHERE version = $1",
                &[&migration.version],
            )
            .map_err(|e| db_error(action.clone(), &e))?
            .is_some();
        if done {
            continue;
        }
        tx.batch_execute(migration.sql)
            .map_err(|e| db_error(action.clone(), &e))?;
        tx.execute(
            "INSERT INTO agentmem_schema_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .map_err(|e| db_error(action.clone(), &e))?;
        tx.commit().map_err(|e| db_error(action, &e))?;
        applied.push(migration.version);
    }
    Ok(applied)
}

/// Gives the history index's vectors an HNSW-searchable copy when the
/// server has pgvector (the `vector` extension) and the database may
/// create it, and says whether they have one. Not a versioned migration:
/// it is taken whenever the extension appears, on a database migrated
/// before or after it was installed. The copy is a generated column
/// (`embedding`, the stored signed bytes as a `vector`), so every row has
/// it, those stored before included; each model's HNSW index is made as
/// its first vectors are stored ([`crate::PgSearch`]).
pub fn ensure_vector_search(client: &mut Client) -> agentmem::Result<bool> {
    let action = "give the history index's vectors their pgvector copy";
    let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| db_error(action, &e))?;
    tx.batch_execute(VECTOR_SEARCH)
        .map_err(|e| db_error(action, &e))?;
    let has = tx
        .query_one(HAS_VECTOR_SEARCH, &[])
        .map_err(|e| db_error(action, &e))?
        .get(0);
    tx.commit().map_err(|e| db_error(action, &e))?;
    Ok(has)
}

/// Whether the vectors have their pgvector copy.
pub(crate) const HAS_VECTOR_SEARCH: &str = "
    SELECT EXISTS(SELECT 1 FROM information_schema.columns
                  WHERE table_schema = current_schema()
                    AND table_name = 'agentmem_search_vectors' AND column_name = 'embedding')";

/// Creates the extension and the copy where they are missing and can be
/// had, all or none of it; a role that may not create the extension, or
/// an extension that does not load, keeps the exact scan.
const VECTOR_SEARCH: &str = r#"
DO $outer$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')
       OR EXISTS (SELECT 1 FROM information_schema.columns
                  WHERE table_schema = current_schema()
                    AND table_name = 'agentmem_search_vectors' AND column_name = 'embedding') THEN
        RETURN;
    END IF;
    BEGIN
        CREATE EXTENSION IF NOT EXISTS vector;
        EXECUTE $f$
            CREATE OR REPLACE FUNCTION agentmem_vector_of(stored bytea) RETURNS vector
            LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $body$
                SELECT array_agg(((get_byte(stored, i) # 128) - 128)::real ORDER BY i)::vector
                FROM generate_series(0, length(stored) - 1) AS i
                WHERE length(stored) <= 16000
            $body$
        $f$;
        EXECUTE 'ALTER TABLE agentmem_search_vectors ADD COLUMN embedding vector
                 GENERATED ALWAYS AS (agentmem_vector_of(vector)) STORED';
    EXCEPTION WHEN OTHERS THEN
        -- A role that may not create it, or an extension that does not
        -- load: none of it is kept, and the next connection tries again.
        RAISE NOTICE 'agentmem: pgvector could not be set up (%); vectors keep the exact scan', SQLERRM;
    END;
END
$outer$;
"#;
