//! The nearest-neighbour graph of a model's vectors (HNSW, by usearch), so
//! that recall with vectors stays quick where the exact scan does not: the
//! scan reads every vector in scope, about 0.3 µs each (300 ms at a
//! million).
//!
//! The store's embedding worker builds a model's graph once the model has
//! [`GraphPolicy::from_vectors`] vectors, and extends it each time
//! [`GraphPolicy::extend_after`] more were stored, in the background, never
//! on a recall's path. A search asks the graph for more documents than it
//! needs, keeps those in scope and still stored, and scores them from their
//! stored bytes as the exact scan does, so a document scores the same on
//! either path; the vectors stored since the graph was saved are scanned
//! exactly. Until a graph exists, or when it cannot be read or finds too
//! few documents in scope, the exact scan answers.
//!
//! A graph is a file in [`GRAPH_DIR`], written under a temporary name,
//! synced and renamed. The index's `stamps` table names the current one
//! (`graph/<model>` → `<through> <file>`), so no graph outlives a rebuild
//! of the index that numbered its documents, and files it does not name
//! are removed. A removed session's vectors stay in the graph until it is
//! built again; a search skips them.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rusqlite::{params, OptionalExtension};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::index::{DocKind, HistoryIndex};
use super::vectors::{unit, Similarities};
use crate::base::error::{Error, Result};

/// The folder, beside the index's database, holding the graphs.
pub const GRAPH_DIR: &str = "search.graphs";
/// The links each node keeps (HNSW's `M`). Histories repeat themselves
/// (the same output, the same short answer), and many equal vectors fill
/// a node's links with each other: 16 links found 74 % of the exact
/// scan's 10 nearest on the bench's history, 32 links 93 %.
const CONNECTIVITY: usize = 32;
/// The candidates kept while a node is linked (HNSW's `efConstruction`).
const EXPANSION_ADD: usize = 256;
/// The candidates kept while searching (HNSW's `ef`), at least.
const EXPANSION_SEARCH: usize = 128;
/// How many times more documents than wanted a search asks the graph for
/// the first time (some are outside the scope, or removed)...
const FIRST_ASK_RATIO: usize = 2;
/// ...and how much more each time after, while too few were in scope...
const WIDEN_RATIO: usize = 4;
/// ...up to this many times, before the exact scan answers instead.
const ASKS: usize = 3;
/// Searches one mapped graph serves at once (usearch keeps a context per
/// search under way; one more than this, or than it could reserve, is
/// answered by the exact scan).
const SEARCHES_AT_ONCE: usize = 64;
/// Vectors read and linked between two looks at whether to stop.
const VECTORS_PER_STEP: usize = 4_096;
/// A temporary graph file this old was left by a builder that died.
const ABANDONED_AFTER: Duration = Duration::from_secs(3_600);

/// When a model's vectors get a graph, and when it is brought up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphPolicy {
    /// A model gets a graph once it has this many vectors: below, the
    /// exact scan takes a few milliseconds and never misses.
    pub from_vectors: u64,
    /// A graph is extended once this many vectors were stored after it:
    /// until then, the exact scan of those stays within a few milliseconds.
    pub extend_after: u64,
}

impl Default for GraphPolicy {
    fn default() -> GraphPolicy {
        GraphPolicy {
            from_vectors: 20_000,
            extend_after: 5_000,
        }
    }
}

/// What [`HistoryIndex::keep_graph`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphUpkeep {
    /// Too few vectors for a graph, or too few new ones to extend it.
    Unchanged,
    /// The graph now holds `vectors` vectors, those through document `through`.
    Saved {
        /// The vectors in the saved graph.
        vectors: u64,
        /// The last document the graph holds.
        through: i64,
    },
    /// Asked to stop before the graph was saved: nothing changed.
    Stopped,
}

/// The graph of a model the index's stamp names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    /// The last document it holds: later ones are scanned exactly.
    through: i64,
    /// Its file's name in [`GRAPH_DIR`].
    file: String,
}

impl HistoryIndex {
    /// Builds or extends `model`'s graph when `policy` says it is due;
    /// `stop` is asked between steps, and a `true` gives up without saving.
    pub fn keep_graph(
        &self,
        model: &str,
        policy: GraphPolicy,
        stop: &dyn Fn() -> bool,
    ) -> Result<GraphUpkeep> {
        let dir = self.graph_dir();
        // A graph whose file cannot be read is built again from the first vector.
        let stamp = self
            .graph_stamp(model)?
            .filter(|stamp| readable(&dir.join(&stamp.file)));
        let (through, due) = match &stamp {
            Some(stamp) => (stamp.through, policy.extend_after),
            None => (0, policy.from_vectors),
        };
        if self.vectors_after(model, through, due.max(1))? < due.max(1) {
            return Ok(GraphUpkeep::Unchanged);
        }
        let Some(dimensions) = self.stored_dimensions(model)? else {
            return Ok(GraphUpkeep::Unchanged);
        };
        let kept = stamp
            .and_then(|stamp| {
                let graph = Index::restore(dir.join(&stamp.file).to_str()?).ok()?;
                // The file keeps the links, not how widely new ones are searched for.
                graph.change_expansion_add(EXPANSION_ADD);
                Some((graph, stamp.through))
            })
            .filter(|(graph, _)| graph.dimensions() == dimensions);
        let (graph, through) = match kept {
            Some(kept) => kept,
            None => (
                new_graph(dimensions).map_err(|e| self.graph_error(&dir, e))?,
                0,
            ),
        };
        let Some(last) = self.link_vectors_after(&graph, model, through, stop)? else {
            return Ok(GraphUpkeep::Stopped);
        };
        let file = graph_file_name(model, last);
        self.save_graph(&graph, &dir, &file)?;
        self.stamp_graph(model, last, &file)?;
        let current = self.graph_stamp(model)?;
        remove_other_graphs(&dir, model, current.as_ref())
            .map_err(|e| self.graph_error(&dir, e))?;
        Ok(GraphUpkeep::Saved {
            vectors: graph.size() as u64,
            through: last,
        })
    }

    /// How many vectors `model`'s graph holds (0: it has none).
    pub fn graph_vectors(&self, model: &str) -> Result<u64> {
        let dir = self.graph_dir();
        Ok(self
            .graph_stamp(model)?
            .and_then(|stamp| Index::metadata(dir.join(stamp.file).to_str()?).ok())
            .map_or(0, |header| header.count_present))
    }

    /// The similarities of the `n` documents in scope nearest `query` by
    /// `model`'s graph, of the documents stored after the graph, and of
    /// the documents `also`; `None` when the graph cannot answer (there is
    /// none, it cannot be read, or it finds fewer than `n` in scope) and
    /// the exact scan should.
    pub(crate) fn nearest_by_graph(
        &self,
        model: &str,
        query: &[f32],
        (kinds, exclude_session): (&[DocKind], Option<&str>),
        n: usize,
        also: &[i64],
    ) -> Result<Option<Similarities>> {
        let Some(stamp) = self.graph_stamp(model)? else {
            return Ok(None);
        };
        let dir = self.graph_dir();
        let Some(graph) = mapped_graph(&dir, model, &stamp) else {
            return Ok(None);
        };
        if graph.dimensions() != query.len() {
            return Ok(None);
        }
        let query = unit(query);
        let mut ask = n.max(1).saturating_mul(FIRST_ASK_RATIO);
        let mut found = None;
        for _ in 0..ASKS {
            let Ok(matches) = graph.search(&query, ask) else {
                // Every search context busy: the scan answers this one.
                return Ok(None);
            };
            let docs: Vec<i64> = matches.keys.iter().map(|key| *key as i64).collect();
            let scores =
                self.scored_stored(model, &query, &docs, Some((kinds, exclude_session)))?;
            // Fewer than asked: the graph gave every document it holds.
            if scores.len() >= n || matches.keys.len() < ask {
                found = Some(scores);
                break;
            }
            ask = ask.saturating_mul(WIDEN_RATIO);
        }
        let Some(mut scores) = found else {
            return Ok(None);
        };
        scores.extend(self.similarities_after(
            model,
            &query,
            stamp.through,
            (kinds, exclude_session),
        )?);
        let seen: std::collections::HashSet<i64> = scores.iter().map(|(doc, _)| *doc).collect();
        let unseen: Vec<i64> = also
            .iter()
            .copied()
            .filter(|doc| !seen.contains(doc))
            .collect();
        scores.extend(self.scored_stored(model, &query, &unseen, None)?);
        Ok(Some(Similarities::from_scores(scores)))
    }

    /// Links the vectors of `model` stored after document `through` into
    /// `graph`, oldest first, on every core; the last document linked, or
    /// `None` when `stop` said to stop.
    fn link_vectors_after(
        &self,
        graph: &Index,
        model: &str,
        through: i64,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<i64>> {
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let dir = self.graph_dir();
        let mut last = through;
        loop {
            if stop() {
                return Ok(None);
            }
            let step = self.vectors_of_step(model, last, graph.dimensions())?;
            let Some(&(newest, _)) = step.last() else {
                return Ok(Some(last));
            };
            graph
                .reserve_capacity_and_threads(graph.size() + step.len(), threads)
                .map_err(|e| self.graph_error(&dir, e))?;
            link(graph, &step, threads).map_err(|e| self.graph_error(&dir, e))?;
            last = newest;
        }
    }

    /// Up to [`VECTORS_PER_STEP`] vectors of `model` after document
    /// `through`, oldest first, those of `dimensions` only.
    fn vectors_of_step(
        &self,
        model: &str,
        through: i64,
        dimensions: usize,
    ) -> Result<Vec<(i64, Vec<i8>)>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, vector FROM vectors WHERE id > ?1 AND model = ?2 ORDER BY id LIMIT ?3",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![through, model, VECTORS_PER_STEP as i64], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
            })
            .map_err(|e| self.error(e))?;
        let mut step = Vec::new();
        for row in rows {
            let (doc, bytes) = row.map_err(|e| self.error(e))?;
            if bytes.len() == dimensions {
                step.push((doc, bytes.into_iter().map(|b| b as i8).collect()));
            }
        }
        Ok(step)
    }

    /// How many vectors of `model` there are after document `through`,
    /// counted up to `limit`.
    fn vectors_after(&self, model: &str, through: i64, limit: u64) -> Result<u64> {
        self.conn
            .prepare_cached(
                "SELECT count(*) FROM
                   (SELECT 1 FROM vectors WHERE id > ?1 AND model = ?2 LIMIT ?3)",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![through, model, limit.min(i64::MAX as u64) as i64],
                    |row| row.get::<_, i64>(0),
                )
            })
            .map(|count| count.max(0) as u64)
            .map_err(|e| self.error(e))
    }

    /// The length of `model`'s stored vectors, if it has any.
    fn stored_dimensions(&self, model: &str) -> Result<Option<usize>> {
        self.conn
            .prepare_cached("SELECT length(vector) FROM vectors WHERE model = ?1 LIMIT 1")
            .and_then(|mut s| s.query_row([model], |row| row.get::<_, i64>(0)).optional())
            .map(|length| length.map(|n| n.max(0) as usize))
            .map_err(|e| self.error(e))
    }

    /// The similarities of `query` (at unit length) to the stored `model`
    /// vectors of documents `docs` (those within `scope` when given), read
    /// in one statement; a document removed since is left out.
    fn scored_stored(
        &self,
        model: &str,
        query: &[f32],
        docs: &[i64],
        scope: Option<(&[DocKind], Option<&str>)>,
    ) -> Result<Vec<(i64, f64)>> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        let listed = format!(
            "[{}]",
            docs.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT v.id, v.kind, v.session, v.vector FROM json_each(?1) AS j
                 JOIN vectors AS v ON v.id = j.value AND v.model = ?2",
            )
            .map_err(|e| self.error(e))?;
        let mut rows = statement
            .query(params![listed, model])
            .map_err(|e| self.error(e))?;
        let mut scores = Vec::with_capacity(docs.len());
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            let text = |at: usize| row.get_ref(at).and_then(|v| Ok(v.as_str()?));
            let (kind, session) = (text(1), text(2));
            let in_scope = match scope {
                None => true,
                Some((kinds, exclude_session)) => {
                    let (kind, session) = (
                        kind.map_err(|e| self.error(e))?,
                        session.map_err(|e| self.error(e))?,
                    );
                    kinds.contains(&DocKind::parse(kind)) && exclude_session != Some(session)
                }
            };
            if in_scope {
                scores.push(self.similarity_of_row(row, query, 3)?);
            }
        }
        Ok(scores)
    }

    /// The graph of `model` the index names, if any.
    fn graph_stamp(&self, model: &str) -> Result<Option<Stamp>> {
        let stamp: Option<String> = self
            .conn
            .prepare_cached("SELECT stamp FROM stamps WHERE name = ?1")
            .and_then(|mut s| {
                s.query_row([stamp_name(model)], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.error(e))?;
        Ok(stamp.and_then(|stamp| {
            let (through, file) = stamp.split_once(' ')?;
            Some(Stamp {
                through: through.parse().ok()?,
                file: file.to_owned(),
            })
        }))
    }

    /// Names `file`, holding the vectors through document `through`, as
    /// `model`'s graph, unless a graph holding more is named already
    /// (another process built one meanwhile).
    fn stamp_graph(&self, model: &str, through: i64, file: &str) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO stamps(name, stamp) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET stamp = excluded.stamp
                 WHERE CAST(excluded.stamp AS INTEGER) > CAST(stamps.stamp AS INTEGER)",
                params![stamp_name(model), format!("{through} {file}")],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Writes `graph` to `dir`/`file` whole or not at all, durably.
    fn save_graph(&self, graph: &Index, dir: &Path, file: &str) -> Result<()> {
        let fail = |e: &dyn std::fmt::Display| self.graph_error(dir, e);
        crate::base::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let temporary = dir.join(format!(".{file}.{}-{nanos}.tmp", std::process::id()));
        let written = temporary
            .to_str()
            .ok_or_else(|| fail(&"the folder's path is not UTF-8"))
            .and_then(|path| graph.save(path).map_err(|e| fail(&e)))
            .and_then(|()| {
                std::fs::File::open(&temporary)
                    .and_then(|f| f.sync_all())
                    .and_then(|()| std::fs::rename(&temporary, dir.join(file)))
                    .map_err(|e| fail(&e))
            });
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written?;
        crate::base::fs::sync_dir(dir)
    }

    fn graph_dir(&self) -> PathBuf {
        self.path()
            .parent()
            .unwrap_or(Path::new("."))
            .join(GRAPH_DIR)
    }

    fn graph_error(&self, dir: &Path, error: impl std::fmt::Display) -> Error {
        Error::Index {
            path: dir.to_path_buf(),
            message: format!("the vectors' nearest-neighbour graph: {error}"),
        }
    }
}

/// A new, empty graph for vectors of `dimensions`, stored as they are in
/// the index (one signed byte a dimension) and compared by inner product
/// (they are at unit length).
fn new_graph(dimensions: usize) -> std::result::Result<Index, String> {
    let options = IndexOptions {
        dimensions,
        metric: MetricKind::IP,
        quantization: ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    };
    Index::new(&options).map_err(|e| e.to_string())
}

/// Adds `step`'s vectors to `graph`, split over `threads` threads.
fn link(graph: &Index, step: &[(i64, Vec<i8>)], threads: usize) -> std::result::Result<(), String> {
    let share = step.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = step
            .chunks(share)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .try_for_each(|(doc, vector)| graph.add(*doc as u64, vector))
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|worker| {
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// Graphs this process has mapped, by folder and model, with their file:
/// a recall maps a graph once, not at every call.
static MAPPED: LazyLock<Mutex<HashMap<GraphOf, MappedGraph>>> = LazyLock::new(Default::default);

/// Whose graph: an index's folder of graphs and a model.
type GraphOf = (PathBuf, String);

/// A graph's file name and the graph mapped from it.
type MappedGraph = (String, Arc<Index>);

/// The graph `stamp` names in `dir`, mapped from its file (shared by the
/// process's recalls); `None` when it cannot be read.
fn mapped_graph(dir: &Path, model: &str, stamp: &Stamp) -> Option<Arc<Index>> {
    let mut mapped = MAPPED.lock().unwrap_or_else(PoisonError::into_inner);
    let key = (dir.to_path_buf(), model.to_owned());
    if let Some((file, graph)) = mapped.get(&key) {
        if *file == stamp.file {
            return Some(Arc::clone(graph));
        }
    }
    let graph = Index::restore_view(dir.join(&stamp.file).to_str()?).ok()?;
    graph.change_expansion_search(EXPANSION_SEARCH);
    // A mapped graph has a search context per core; a server's recalls
    // may run more at once.
    graph
        .reserve_capacity_and_threads(graph.size(), SEARCHES_AT_ONCE)
        .ok()?;
    let graph = Arc::new(graph);
    mapped.insert(key, (stamp.file.clone(), Arc::clone(&graph)));
    Some(graph)
}

/// Removes `model`'s graph files in `dir` but `current`, and temporaries
/// left by builders that died.
fn remove_other_graphs(dir: &Path, model: &str, current: Option<&Stamp>) -> std::io::Result<()> {
    let prefix = format!("{}-", model_key(model));
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let old_graph = name.starts_with(&prefix)
            && name.ends_with(".usearch")
            && current.is_none_or(|stamp| stamp.file != name);
        let abandoned = name.starts_with(&format!(".{prefix}"))
            && name.ends_with(".tmp")
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > ABANDONED_AFTER);
        if old_graph || abandoned {
            match std::fs::remove_file(entry.path()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                Ok(()) | Err(_) => {}
            }
        }
    }
    Ok(())
}

/// The name of the graph of `model` holding the vectors through `through`.
fn graph_file_name(model: &str, through: i64) -> String {
    format!("{}-{through}.usearch", model_key(model))
}

/// A model's name as a file name's part: a hash, as names hold any character.
fn model_key(model: &str) -> String {
    let mut hasher = siphasher::sip::SipHasher13::new();
    hasher.write(model.as_bytes());
    format!("{:016x}", hasher.finish())
}

fn stamp_name(model: &str) -> String {
    format!("graph/{model}")
}

/// Whether the graph file at `path` reads as one (its header only).
fn readable(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|path| Index::metadata(path).is_ok())
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
