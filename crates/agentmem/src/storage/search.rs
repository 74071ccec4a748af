//! The search seam: what history search and recall need from an agent's
//! index, wherever it is kept — the files backend's SQLite database and
//! tantivy index ([`crate::search::HistoryIndex`]) or a database's (the
//! PostgreSQL backend's tsvector index in `agentmem-postgres`).
//!
//! # What stays in the engine
//!
//! Recall's scoring ([`crate::memory::recall`]): the backend supplies the
//! candidates a query matches, each with its BM25 score computed as FTS5
//! computes it (`k1 = 1.2`, `b = 0.75`, the table's document count and
//! average length, each term's document frequency), the events around a
//! match, the speakers a query names and the vectors; the engine scales,
//! mixes and packs them the same way over every backend.
//!
//! # What every index promises
//!
//! - **Every event of every session**, archive included: compaction never
//!   removes an indexed event; a deleted session's events go with it.
//! - **Caught up before it answers**: [`catch_up`] adds what a session's
//!   log holds that the index lacks (an index is derived data, rebuilt
//!   from the logs when lost).
//! - **The same words**: documents and queries are split, folded and
//!   stemmed as FTS5's `porter unicode61 remove_diacritics 2` does
//!   ([`crate::search::lexemes`]), so the same query matches the same
//!   events on every backend.
//! - **The same terms asked**: common terms only narrow queries, with the
//!   thresholds of [`crate::search::index`]. The files index finds the best
//!   of all documents at once; a database may ask the newest documents
//!   first and widen until it has enough (documents numbered per agent in
//!   the order they were indexed; see [`crate::search::index::FIRST_WINDOW_DOCS`]),
//!   which answers alike wherever fewer documents than the first window are indexed.

use std::collections::HashMap;
use std::fmt;

use super::{Backend, Storage};
use crate::base::error::Result;
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::search::graph::GraphPolicy;
use crate::search::index::{Candidate, DocKind, HistoryIndex};
use crate::search::vectors::{Embedder, Similarities};
use crate::search::{SearchFilter, SearchHit};

/// An agent's history index (see the module docs for what every backend promises).
pub trait SearchIndex: fmt::Debug + Send {
    /// Which kind of storage keeps it.
    fn backend(&self) -> Backend;

    /// Indexes `events`, the first of which is at position `first_ord` of
    /// `session`'s full history, all or nothing; events already indexed
    /// are skipped. Returns how many were added.
    fn add_events(&mut self, session: &str, first_ord: u64, events: &[Event]) -> Result<usize>;

    /// How many events of each session are indexed.
    fn indexed_sessions(&self) -> Result<Vec<(String, u64)>>;

    /// Removes a session's events (and their vectors) from the index.
    fn remove_session(&mut self, session: &str) -> Result<()>;

    /// The events matching `query` within `filter`, best first (all of the
    /// query's words first, then its rarer ones), each with an excerpt and
    /// the events around it.
    fn search(&self, query: &str, filter: &SearchFilter) -> Result<Vec<SearchHit>>;

    /// Up to `limit` documents of each of `kinds`' tables (events; facts
    /// and episodes) matching `query`, best first within each, with their
    /// BM25 scores; `exclude_session` leaves out what that session left.
    fn candidates(
        &self,
        query: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>>;

    /// The events around each of `events` (a session and a position):
    /// those of the session at positions `ord - radius ..= ord + radius`
    /// other than `ord`, unscored, one list per event in the order given
    /// (asked together: a backend across a network answers in one trip).
    fn neighbours(&self, events: &[(&str, u64)], radius: u64) -> Result<Vec<Vec<Candidate>>>;

    /// The speakers of indexed events whose names `text` holds as whole words.
    fn speakers_named_in(&self, text: &str) -> Result<Vec<String>>;

    /// Embeds every document without a vector of `embedder`'s model;
    /// returns how many it embedded.
    fn embed_missing(&self, embedder: &dyn Embedder) -> Result<usize>;

    /// Embeds the next batch of the documents without a vector of
    /// `embedder`'s model, all or nothing; returns how many it embedded
    /// (0: none was waiting). The background embedder works so, a batch at
    /// a time, to stop between two when its store closes.
    fn embed_next_batch(&self, embedder: &dyn Embedder) -> Result<usize>;

    /// How many documents of `kinds` outside `exclude_session` have no
    /// vector of `model` yet (recall ranks them by their words alone).
    fn unembedded(
        &self,
        model: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<u64>;

    /// Fails when vectors of `model` are stored with another length than `dimensions`.
    fn ensure_dimensions(&self, model: &str, dimensions: usize) -> Result<()>;

    /// How similar `query` (a vector of `model`) is to every document of
    /// `kinds` outside `exclude_session` with a vector of that model: an
    /// exact scan.
    fn similarities(
        &self,
        model: &str,
        query: &[f32],
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<Similarities>;

    /// How similar `query` is to the `n` documents nearest it (as
    /// [`SearchIndex::similarities`] scopes them) and to the documents
    /// numbered `also` that have a vector of `model`: what recall needs.
    /// An index with an approximate nearest-neighbour search answers from
    /// it; by default every document's similarity is given (the exact
    /// scan), which holds those.
    fn nearest(
        &self,
        model: &str,
        query: &[f32],
        (kinds, exclude_session): (&[DocKind], Option<&str>),
        n: usize,
        also: &[i64],
    ) -> Result<Similarities> {
        let _ = (n, also);
        self.similarities(model, query, kinds, exclude_session)
    }

    /// Brings the index's own nearest-neighbour structure for `model` up
    /// to date where it keeps one apart from its vectors (the files
    /// backend's graph, [`crate::search::graph`]), after the embedding
    /// worker has caught up; `stop` is asked between steps. Returns how
    /// many vectors the graph holds (0: none yet, or the index keeps no
    /// graph apart). By default nothing: a database keeps its index as it
    /// stores.
    fn keep_nearest_graph(&self, model: &str, stop: &dyn Fn() -> bool) -> Result<u64> {
        let _ = (model, stop);
        Ok(0)
    }

    /// The documents numbered `docs`, unscored (one deleted since is left out).
    fn candidates_by_id(&self, docs: &[i64]) -> Result<Vec<Candidate>>;
}

/// Brings `index` up to date with `agent`'s sessions in `storage`: each
/// session's events the index lacks are added (an index holds a prefix of
/// each session's full history), sessions deleted since are removed.
pub fn catch_up(index: &mut dyn SearchIndex, storage: &dyn Storage, agent: &AgentId) -> Result<()> {
    let indexed: HashMap<String, u64> = index.indexed_sessions()?.into_iter().collect();
    let mut sessions = storage.list_sessions(agent)?;
    // Oldest first: documents are numbered in about the order a feed fed
    // as events arrived would have numbered them.
    sessions.sort_by(|a, b| {
        a.created
            .total_cmp(&b.created)
            .then_with(|| a.id.cmp(&b.id))
    });
    for meta in &sessions {
        let have = indexed.get(&meta.id).copied().unwrap_or(0);
        if have < meta.events as u64 {
            let history = storage.full_history(agent, &SessionId::new(&meta.id)?)?;
            let from = usize::try_from(have)
                .unwrap_or(usize::MAX)
                .min(history.len());
            index.add_events(&meta.id, have, &history[from..])?;
        }
    }
    let listed: std::collections::HashSet<&str> =
        sessions.iter().map(|meta| meta.id.as_str()).collect();
    for session in indexed.keys() {
        if !listed.contains(session.as_str()) {
            index.remove_session(session)?;
        }
    }
    Ok(())
}

impl SearchIndex for HistoryIndex {
    fn backend(&self) -> Backend {
        Backend::Files
    }

    fn add_events(&mut self, session: &str, first_ord: u64, events: &[Event]) -> Result<usize> {
        HistoryIndex::add_events(self, session, first_ord, events)
    }

    fn indexed_sessions(&self) -> Result<Vec<(String, u64)>> {
        HistoryIndex::indexed_sessions(self)
    }

    fn remove_session(&mut self, session: &str) -> Result<()> {
        HistoryIndex::remove_session(self, session)
    }

    fn search(&self, query: &str, filter: &SearchFilter) -> Result<Vec<SearchHit>> {
        HistoryIndex::search(self, query, filter)
    }

    fn candidates(
        &self,
        query: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        HistoryIndex::candidates(self, query, kinds, exclude_session, limit)
    }

    fn neighbours(&self, events: &[(&str, u64)], radius: u64) -> Result<Vec<Vec<Candidate>>> {
        events
            .iter()
            .map(|(session, ord)| HistoryIndex::neighbours(self, session, *ord, radius))
            .collect()
    }

    fn speakers_named_in(&self, text: &str) -> Result<Vec<String>> {
        HistoryIndex::speakers_named_in(self, text)
    }

    fn embed_missing(&self, embedder: &dyn Embedder) -> Result<usize> {
        HistoryIndex::embed_missing(self, embedder)
    }

    fn embed_next_batch(&self, embedder: &dyn Embedder) -> Result<usize> {
        HistoryIndex::embed_next_batch(self, embedder)
    }

    fn unembedded(
        &self,
        model: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<u64> {
        HistoryIndex::unembedded_in_scope(self, model, kinds, exclude_session)
    }

    fn ensure_dimensions(&self, model: &str, dimensions: usize) -> Result<()> {
        HistoryIndex::ensure_dimensions(self, model, dimensions)
    }

    fn similarities(
        &self,
        model: &str,
        query: &[f32],
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<Similarities> {
        HistoryIndex::similarities(self, model, query, kinds, exclude_session)
    }

    fn nearest(
        &self,
        model: &str,
        query: &[f32],
        scope: (&[DocKind], Option<&str>),
        n: usize,
        also: &[i64],
    ) -> Result<Similarities> {
        match self.nearest_by_graph(model, query, scope, n, also)? {
            Some(found) => Ok(found),
            None => HistoryIndex::similarities(self, model, query, scope.0, scope.1),
        }
    }

    fn keep_nearest_graph(&self, model: &str, stop: &dyn Fn() -> bool) -> Result<u64> {
        self.keep_graph(model, GraphPolicy::default(), stop)?;
        self.graph_vectors(model)
    }

    fn candidates_by_id(&self, docs: &[i64]) -> Result<Vec<Candidate>> {
        HistoryIndex::candidates_by_id(self, docs)
    }
}
