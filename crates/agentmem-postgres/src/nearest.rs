//! The vectors nearest a query through pgvector's HNSW index, where the
//! database has it ([`crate::pool::Nearest::Hnsw`]).
//!
//! Each model has an index of its own, partial on the model and over its
//! vectors' `embedding` copy cast to the model's dimensions
//! ([`crate::migrations::ensure_vector_search`]), built the first time
//! vectors of the model are stored and kept up by the database after. The
//! index only picks the documents: their similarities are then computed
//! here from the stored bytes, as the exact scan computes them, so a
//! document scores the same on either path. An agent with fewer vectors
//! than [`EXACT_SCAN_BELOW_VECTORS`] keeps the exact scan, which is then
//! as quick and never misses.

use std::collections::HashSet;
use std::sync::Mutex;

use agentmem::search::vectors::{dot_with_stored, unit, Similarities};
use agentmem::Result;
use postgres::Client;

use crate::db_error;

/// Below this many vectors in an agent's index, the exact scan answers.
pub(crate) const EXACT_SCAN_BELOW_VECTORS: i64 = 2_000;

/// pgvector's largest `hnsw.ef_search`: how many candidates a search keeps.
const MAX_EF_SEARCH: usize = 1_000;

/// The most dimensions pgvector's HNSW index takes for a `vector`: a
/// model's longer vectors keep the exact scan.
const MAX_HNSW_DIMENSIONS: usize = 2_000;

/// The models whose HNSW index this store has seen built and valid.
#[derive(Debug, Default)]
pub(crate) struct Indexed(Mutex<HashSet<String>>);

impl Indexed {
    fn has(&self, model: &str) -> bool {
        self.models().contains(model)
    }

    fn add(&self, model: &str) {
        self.models().insert(model.to_owned());
    }

    fn models(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The name of `model`'s index, made by the server from the model's name.
const INDEX_NAME: &str = "'agentmem_search_vectors_hnsw_' || left(md5($1), 16)";

/// Whether `model`'s index exists and is valid (a build that failed
/// half-way leaves an invalid one, which no query uses).
fn index_is_valid(client: &mut Client, model: &str) -> Result<Option<bool>> {
    client
        .query_opt(
            &format!(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                 WHERE c.relname = {INDEX_NAME}
                   AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
            ),
            &[&model],
        )
        .map(|row| row.map(|row| row.get(0)))
        .map_err(|e| db_error("look for the vectors' HNSW index", &e))
}

/// Builds `model`'s HNSW index (its vectors have `dimensions`) unless it
/// is there: without blocking the writes of other embedders, one process
/// at a time (a session-level advisory lock per model).
pub(crate) fn ensure_index(
    client: &mut Client,
    indexed: &Indexed,
    model: &str,
    dimensions: usize,
) -> Result<()> {
    if indexed.has(model) || dimensions > MAX_HNSW_DIMENSIONS {
        return Ok(());
    }
    let action = "build the vectors' HNSW index";
    let lock = format!("agentmem hnsw {model}");
    client
        .execute("SELECT pg_advisory_lock(hashtext($1))", &[&lock])
        .map_err(|e| db_error(action, &e))?;
    let built = build_index(client, model, dimensions);
    let unlocked = client
        .execute("SELECT pg_advisory_unlock(hashtext($1))", &[&lock])
        .map_err(|e| db_error(action, &e));
    built?;
    unlocked?;
    indexed.add(model);
    Ok(())
}

fn build_index(client: &mut Client, model: &str, dimensions: usize) -> Result<()> {
    let action = "build the vectors' HNSW index";
    if index_is_valid(client, model)? == Some(false) {
        let drop = client
            .query_one(
                &format!("SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', {INDEX_NAME})"),
                &[&model],
            )
            .map_err(|e| db_error(action, &e))?;
        client
            .batch_execute(drop.get(0))
            .map_err(|e| db_error(action, &e))?;
    }
    let create = client
        .query_one(
            &format!(
                "SELECT format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I
                                ON agentmem_search_vectors USING hnsw
                                ((embedding::vector(%s)) vector_ip_ops) WHERE model = %L',
                               {INDEX_NAME}, $2::int, $1)"
            ),
            &[&model, &(dimensions as i32)],
        )
        .map_err(|e| db_error(action, &e))?;
    client
        .batch_execute(create.get(0))
        .map_err(|e| db_error(action, &e))
}

/// The settings of one transaction's search for the `n` nearest: enough
/// candidates kept, more read while the scope's filter leaves too few
/// (pgvector's iterative scans), and the index taken even where the
/// planner's statistics, not yet counting a growing agent's rows, would
/// sort every row of the agent instead ([`by_index`] runs only once the
/// agent has [`EXACT_SCAN_BELOW_VECTORS`]).
fn search_settings(n: usize) -> String {
    format!(
        "SET LOCAL hnsw.ef_search = {}; SET LOCAL hnsw.iterative_scan = strict_order;
         SET LOCAL enable_sort = off",
        n.saturating_mul(2).clamp(40, MAX_EF_SEARCH)
    )
}

/// The `$6` vectors in scope nearest `$5` (as text), by negative inner
/// product (the vectors are at unit length), through the model's index:
/// the expression is the index's own, cast to its `dimensions`.
fn nearest_statement(dimensions: usize) -> String {
    format!(
        "SELECT doc, vector FROM agentmem_search_vectors
         WHERE agent_id = $1 AND model = $2 AND kind = ANY($3)
           AND ($4::text IS NULL OR session_id <> $4)
         ORDER BY embedding::vector({dimensions}) <#> $5::text::vector({dimensions}) LIMIT $6"
    )
}

/// What a nearest-vectors query is asked of: an agent's vectors of one
/// model, of some kinds, outside one session.
pub(crate) struct Scope<'a> {
    pub agent: &'a str,
    pub model: &'a str,
    pub kinds: &'a [&'a str],
    pub exclude_session: Option<&'a str>,
}

/// The similarities of the `n` documents in `scope` nearest `query` by
/// the HNSW index, and of the documents `also`; `None` when the index
/// cannot answer (not built, not valid, or too few vectors to need it),
/// and the exact scan should.
pub(crate) fn by_index(
    client: &mut Client,
    indexed: &Indexed,
    scope: &Scope<'_>,
    (query, n): (&[f32], usize),
    also: &[i64],
    vectors: i64,
) -> Result<Option<Similarities>> {
    if vectors < EXACT_SCAN_BELOW_VECTORS {
        return Ok(None);
    }
    if !indexed.has(scope.model) {
        match index_is_valid(client, scope.model)? {
            Some(true) => indexed.add(scope.model),
            Some(false) | None => return Ok(None),
        }
    }
    let action = "find the nearest vectors";
    let query = unit(query);
    let as_text = format!(
        "[{}]",
        query
            .iter()
            .map(f32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
    tx.batch_execute(&search_settings(n))
        .map_err(|e| db_error(action, &e))?;
    let nearest = tx
        .query(
            &nearest_statement(query.len()),
            &[
                &scope.agent,
                &scope.model,
                &scope.kinds,
                &scope.exclude_session,
                &as_text,
                &(n as i64),
            ],
        )
        .map_err(|e| db_error(action, &e))?;
    let named = tx
        .query(
            "SELECT doc, vector FROM agentmem_search_vectors
             WHERE agent_id = $1 AND model = $2 AND doc = ANY($3)",
            &[&scope.agent, &scope.model, &also],
        )
        .map_err(|e| db_error(action, &e))?;
    tx.commit().map_err(|e| db_error(action, &e))?;
    if nearest.len() < n {
        // The scope is a small part of the model's graph (another agent's
        // vectors fill it), or holds fewer than `n`: the scan is exact.
        return Ok(None);
    }
    let mut seen = HashSet::new();
    let scores = nearest
        .iter()
        .chain(&named)
        .map(|row| (row.get::<_, i64>(0), row.get::<_, &[u8]>(1)))
        .filter(|(doc, _)| seen.insert(*doc))
        .map(|(doc, stored)| (doc, dot_with_stored(&query, stored)))
        .collect();
    Ok(Some(Similarities::from_scores(scores)))
}

#[cfg(test)]
#[path = "nearest_tests.rs"]
mod tests;
