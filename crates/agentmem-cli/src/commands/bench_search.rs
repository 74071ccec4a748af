//! `agentmem bench --history FILE…`: an agent history of one session per
//! workload file, ingested (log and search index), then searched and
//! recalled from: the index build rate and the latency of both; on files,
//! or with `--on-postgres` on the database of `AGENTMEM_DATABASE_URL` too
//! (the same histories and queries).

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentmem::search::query::terms;
use agentmem::storage::search::SearchIndex;
use agentmem::{
    AgentId, Durability, Embedder, Encoding, RecallRequest, SearchFilter, Storage, Store, TraceType,
};
use serde_json::json;

/// Queries timed for search and for recall.
const QUERIES: usize = 200;
/// Words per query, taken from a user message of the history.
const QUERY_WORDS: usize = 4;
/// The recall budget measured, in tokens.
const RECALL_BUDGET_TOKENS: u64 = 2_000;

/// Where `bench --history` keeps the history it times.
pub enum HistoryOn {
    /// A files store in the bench's scratch folder: the log and the SQLite
    /// index fed as events arrive.
    Files,
    /// The PostgreSQL database at this URL, as an agent of its own (removed
    /// afterwards): the events appended in large batches, then the
    /// database's index caught up.
    Postgres(agentmem::config::DatabaseUrl),
}

pub fn run(
    root: &Path,
    files: &[PathBuf],
    vectors: Option<Vectors>,
    on: &HistoryOn,
    measure_at: &[usize],
) -> anyhow::Result<Vec<serde_json::Value>> {
    match on {
        HistoryOn::Files => {
            let store = Store::open(root.join("history"), Durability::Os)?;
            let agent = AgentId::default();
            let mut loader = FilesLoader {
                store: &store,
                agent: &agent,
                loaded: 0,
            };
            measure(&mut loader, files, vectors, measure_at, "")
        }
        HistoryOn::Postgres(url) => {
            let storage = agentmem_postgres::PgStorage::connect(url, Default::default())?;
            let agent = AgentId::new(format!("bench-history-{}", agentmem::SessionId::generate()))?;
            let mut loader = DatabaseLoader {
                storage: &storage,
                agent: &agent,
                index_seconds: 0.0,
            };
            let timed = measure(&mut loader, files, vectors, measure_at, "postgres: ");
            for meta in storage.list_sessions(&agent)? {
                storage.delete_session(&agent, &agentmem::SessionId::new(&meta.id)?)?;
            }
            storage.search_index(&agent)?;
            timed
        }
    }
}

/// Where a history is loaded and how its index is read.
trait Loader {
    /// Stores one workload file as a session, adding what it held to `totals`.
    fn load(&mut self, file: &Path, totals: &mut Totals) -> anyhow::Result<()>;
    /// The index caught up with what is loaded, and the row saying how
    /// fast the history so far was stored and indexed.
    fn index(&mut self, totals: &Totals, sessions: usize) -> anyhow::Result<Indexed<'_>>;
}

/// An index caught up with the history loaded, and the row saying how fast
/// that history was stored and indexed.
type Indexed<'a> = (Box<dyn SearchIndex + 'a>, serde_json::Value);

/// What has been loaded so far.
#[derive(Default)]
struct Totals {
    events: usize,
    bytes: usize,
    /// Seconds spent storing (and, on files, indexing as events arrive).
    seconds: f64,
    user_messages: Vec<String>,
}

impl Totals {
    fn add(&mut self, turn: &[agentmem::Event]) {
        self.events += turn.len();
        self.bytes += turn.iter().map(|e| e.content.len()).sum::<usize>();
        self.user_messages.extend(user_texts(turn));
    }
}

/// Loads `files` one session each, and times searches and recalls once
/// each of `measure_at`'s event counts is reached, and at the end; every
/// time with the same queries (from the history loaded when first timed).
fn measure(
    loader: &mut dyn Loader,
    files: &[PathBuf],
    mut vectors: Option<Vectors>,
    measure_at: &[usize],
    prefix: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut totals = Totals::default();
    let mut rows = Vec::new();
    let mut queries: Option<Vec<String>> = None;
    let mut pending: Vec<usize> = measure_at.to_vec();
    pending.sort_unstable();
    for (i, file) in files.iter().enumerate() {
        loader.load(file, &mut totals)?;
        let last = i + 1 == files.len();
        let reached = pending.first().is_some_and(|&at| totals.events >= at);
        if !reached && !last {
            continue;
        }
        pending.retain(|&at| totals.events < at);
        let (index, row) = loader.index(&totals, i + 1)?;
        rows.push(row);
        let asked = queries.get_or_insert_with(|| queries_from(&totals.user_messages));
        let with = if last { vectors.take() } else { None };
        rows.extend(time_queries(&*index, asked, totals.events, with, prefix)?);
    }
    Ok(rows)
}

/// A files store: each session ingested turn by turn, the log and the
/// SQLite index fed as events arrive.
struct FilesLoader<'a> {
    store: &'a Store,
    agent: &'a AgentId,
    /// The files loaded so far.
    loaded: usize,
}

impl Loader for FilesLoader<'_> {
    fn load(&mut self, file: &Path, totals: &mut Totals) -> anyhow::Result<()> {
        let turns = super::bench_workload::read_turns(file)?;
        self.loaded += 1;
        let id = history_session_id(self.loaded, file)?;
        let events: usize = turns.iter().map(Vec::len).sum();
        let kept = self.kept_events(&id)?;
        if kept == Some(events) {
            turns.iter().for_each(|turn| totals.add(turn));
            return Ok(());
        }
        let started = Instant::now();
        if kept.is_some() {
            // A load cut short: loaded again whole.
            self.store.delete_session(self.agent, &id)?;
        }
        let mut session = self.store.create_session(self.agent, Some(id))?;
        for turn in turns {
            totals.add(&turn);
            session.ingest(turn)?;
        }
        session.flush_index();
        session.close()?;
        totals.seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn index(&mut self, totals: &Totals, sessions: usize) -> anyhow::Result<Indexed<'_>> {
        let agent_dir = self.store.agent_dir(self.agent);
        let index_file = agent_dir.join(agentmem::search::index::INDEX_FILE);
        let database_mb = std::fs::metadata(&index_file).map_or(0, |m| m.len()) as f64 / 1e6;
        let words_mb = bytes_in(&agent_dir.join(agentmem::search::index::TEXT_DIR)) as f64 / 1e6;
        let index_mb = database_mb + words_mb;
        let (events, seconds, mb) = (totals.events, totals.seconds, totals.bytes as f64 / 1e6);
        // Nothing loaded: every session was kept from an earlier run.
        let rate = (seconds > 0.0).then(|| events as f64 / seconds);
        let row = json!({
            "bench": "history ingest + index",
            "figure": rate.map_or("kept from an earlier run".to_owned(), |r| format!("{r:.0} events/s")),
            "detail": format!("{events} events in {sessions} sessions, {mb:.0} MB of content ({:.1} MB/s), index {index_mb:.0} MB (documents {database_mb:.0} MB, words {words_mb:.0} MB), {seconds:.1} s",
                mb / seconds),
            "events": events,
            "events_per_second": rate,
            "index_mb": index_mb,
        });
        Ok((Box::new(self.store.history_index(self.agent)?), row))
    }
}

impl FilesLoader<'_> {
    /// How many events the store holds for session `id`, if it has it.
    fn kept_events(&self, id: &agentmem::SessionId) -> anyhow::Result<Option<usize>> {
        Ok(self
            .store
            .list_sessions(self.agent)?
            .into_iter()
            .find(|meta| meta.id == id.as_str())
            .map(|meta| meta.events))
    }
}

/// The session the `nth` history file is loaded as, named after its place
/// and the file (two files of one name in other folders are two sessions).
fn history_session_id(nth: usize, file: &Path) -> anyhow::Result<agentmem::SessionId> {
    // Letters and digits only, so that any file name makes a valid id.
    let stem: String = file
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(64)
        .collect();
    Ok(agentmem::SessionId::new(format!("history-{nth}-{stem}"))?)
}

/// The bytes of the files in `dir` (not below it); 0 when it cannot be read.
fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    })
}

/// Events appended to the database in one batch while loading a history.
const DATABASE_BATCH_EVENTS: usize = 5_000;

/// A PostgreSQL database: each session appended in batches of
/// [`DATABASE_BATCH_EVENTS`], the database's index caught up when read.
struct DatabaseLoader<'a> {
    storage: &'a agentmem_postgres::PgStorage,
    agent: &'a AgentId,
    /// Seconds spent catching the index up so far.
    index_seconds: f64,
}

impl Loader for DatabaseLoader<'_> {
    fn load(&mut self, file: &Path, totals: &mut Totals) -> anyhow::Result<()> {
        let turns = super::bench_workload::read_turns(file)?;
        let started = Instant::now();
        let mut writer = self
            .storage
            .create_session(self.agent, &agentmem::SessionId::generate())?;
        let mut batch = Vec::new();
        for turn in turns {
            totals.add(&turn);
            batch.extend(turn);
            if batch.len() >= DATABASE_BATCH_EVENTS {
                writer.append(std::mem::take(&mut batch))?;
            }
        }
        writer.append(batch)?;
        totals.seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn index(&mut self, totals: &Totals, sessions: usize) -> anyhow::Result<Indexed<'_>> {
        let started = Instant::now();
        let index = self.storage.search_index(self.agent)?;
        self.index_seconds += started.elapsed().as_secs_f64();
        let (events, stored, indexed) = (totals.events, totals.seconds, self.index_seconds);
        let index_mb = self.storage.search_index_bytes()? as f64 / 1e6;
        let row = json!({
            "bench": "postgres: history append + index",
            "figure": format!("{:.0} events/s", events as f64 / (stored + indexed)),
            "detail": format!("{events} events in {sessions} sessions, {:.0} MB of content; appended in batches of {DATABASE_BATCH_EVENTS} in {stored:.1} s, indexed in {indexed:.1} s ({:.0} events/s), index tables {index_mb:.0} MB",
                totals.bytes as f64 / 1e6, events as f64 / indexed),
            "events": events,
            "append_seconds": stored,
            "index_seconds": indexed,
            "index_mb": index_mb,
        });
        Ok((index, row))
    }
}

/// [`QUERIES`] queries of [`QUERY_WORDS`] words, from user messages spread over the history.
fn queries_from(user_messages: &[String]) -> Vec<String> {
    (0..QUERIES)
        .map(|i| {
            let message = &user_messages[i * user_messages.len() / QUERIES];
            terms(message)
                .into_iter()
                .skip(i % 5)
                .take(QUERY_WORDS)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn user_texts(turn: &[agentmem::Event]) -> impl Iterator<Item = String> + '_ {
    turn.iter()
        .filter(|e| e.trace_type == TraceType::User)
        .map(|e| e.content.clone())
}

/// Times `queries` as searches and recalls (and, with `vectors`, recalls
/// with vectors) on `index`, which holds `events`; row names start with `prefix`.
fn time_queries(
    index: &dyn SearchIndex,
    queries: &[String],
    events: usize,
    vectors: Option<Vectors>,
    prefix: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut search_ms = Vec::new();
    let mut hits = 0;
    for query in queries {
        let started = Instant::now();
        hits += index.search(query, &SearchFilter::default())?.len();
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let tokenizer = Encoding::O200kBase.tokenizer();
    let mut recall_ms = Vec::new();
    for query in queries {
        let started = Instant::now();
        let request = RecallRequest::new(query.as_str(), RECALL_BUDGET_TOKENS);
        agentmem::memory::recall::recall(
            index,
            &request,
            tokenizer,
            None,
            None,
            Default::default(),
        )?;
        recall_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut rows = vec![
        latency(
            &format!("{prefix}history search"),
            &search_ms,
            &format!(
                "{QUERIES} queries of {QUERY_WORDS} words over {events} events, {:.1} hits each",
                hits as f64 / QUERIES as f64
            ),
        ),
        latency(
            &format!("{prefix}history recall"),
            &recall_ms,
            &format!("{QUERIES} queries, {RECALL_BUDGET_TOKENS}-token budget"),
        ),
    ];
    for row in &mut rows {
        row["events"] = json!(events);
    }
    if let Some(vectors) = vectors {
        rows.extend(bench_vectors(index, queries, events, vectors, prefix)?);
    }
    Ok(rows)
}

/// What makes the vectors of `bench --history --vectors`.
pub enum Vectors {
    /// [`HashedWords`]: the index's cost alone.
    StandIn,
    /// A sentence-transformers model folder, run in process.
    Model(PathBuf),
}

/// Stores a vector for every document, then times recall with vectors.
fn bench_vectors(
    index: &dyn SearchIndex,
    queries: &[String],
    events: usize,
    vectors: Vectors,
    prefix: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let (embedder, made_by): (Box<dyn Embedder>, String) = match vectors {
        Vectors::StandIn => (
            Box::new(HashedWords),
            "stand-in embedder: the index's cost only".to_owned(),
        ),
        Vectors::Model(dir) => (
            Box::new(agentmem_embed::LocalEmbedder::open(&dir, "bench-model")?),
            format!("the model in {}, run in process", dir.display()),
        ),
    };
    let embedder = embedder.as_ref();
    let started = Instant::now();
    let embedded = index.embed_missing(embedder)?;
    let seconds = started.elapsed().as_secs_f64();
    // As the store's embedding worker does once it has caught up.
    let started = Instant::now();
    let in_graph = index.keep_nearest_graph(embedder.model(), &|| false)?;
    let graph_seconds = started.elapsed().as_secs_f64();
    let tokenizer = Encoding::O200kBase.tokenizer();
    let mut recall_ms = Vec::new();
    for query in queries {
        let started = Instant::now();
        let request = RecallRequest::new(query.as_str(), RECALL_BUDGET_TOKENS);
        agentmem::memory::recall::recall(
            index,
            &request,
            tokenizer,
            Some(embedder),
            None,
            Default::default(),
        )?;
        recall_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let compared = nearest_against_exact(index, embedder, queries)?;
    let (found, asked) = (compared.found, compared.asked);
    Ok(vec![
        json!({
            "bench": format!("{prefix}history vectors stored"),
            "figure": format!("{:.0} documents/s", embedded as f64 / seconds),
            "detail": format!("{embedded} vectors, {seconds:.1} s ({made_by})"),
            "documents": embedded,
            "documents_per_second": embedded as f64 / seconds,
        }),
        json!({
            "bench": format!("{prefix}history nearest-neighbour graph kept"),
            "figure": format!("{graph_seconds:.1} s"),
            "detail": match in_graph {
                0 => format!("after {embedded} vectors were stored: no graph of its own (files: below its threshold, the exact scan answers; PostgreSQL: its index is kept as vectors are stored)"),
                held => format!("after {embedded} vectors were stored: the HNSW graph holds {held} vectors"),
            },
            "seconds": graph_seconds,
            "vectors_in_graph": in_graph,
        }),
        latency(
            &format!("{prefix}history recall with vectors"),
            &recall_ms,
            &format!("{} queries over {events} events, nearest vectors as the index finds them (files: its HNSW graph past 20,000 vectors, else an exact scan; PostgreSQL: pgvector's HNSW where the server has it), {RECALL_BUDGET_TOKENS}-token budget", queries.len()),
        ),
        json!({
            "bench": format!("{prefix}history nearest vectors against the exact scan"),
            "figure": format!("recall@{NEAREST_COMPARED} {:.3}", found as f64 / asked.max(1) as f64),
            "detail": format!("{found} of the exact scan's {asked} nearest documents over {} queries (a document as similar as the exact scan's tenth counts), the index asked as recall asks it", queries.len()),
            "recall_at_10": found as f64 / asked.max(1) as f64,
        }),
        latency(
            &format!("{prefix}history nearest vectors"),
            &compared.nearest_ms,
            &format!("the index's answer for recall's candidates, beside the exact scan's p50 {:.2} ms / p99 {:.2} ms over the same {} queries", crate::measure::percentile(&compared.exact_ms, 0.5), crate::measure::percentile(&compared.exact_ms, 0.99), queries.len()),
        ),
    ])
}

/// The index's nearest vectors set beside the exact scan's.
struct Compared {
    /// Of the exact scan's nearest, how many the index's answer holds...
    found: usize,
    /// ...out of how many.
    asked: usize,
    /// The exact scan's time per query.
    exact_ms: Vec<f64>,
    /// The index's answer's time per query.
    nearest_ms: Vec<f64>,
}

/// How many nearest documents each query compares.
const NEAREST_COMPARED: usize = 10;

/// Of the [`NEAREST_COMPARED`] documents nearest each query by the exact
/// scan, how many the best as many of the index's own answer (asked for
/// recall's candidates, as recall asks) match, a document counting when it
/// is at least as similar as the exact scan's last; and how many there were.
fn nearest_against_exact(
    index: &dyn SearchIndex,
    embedder: &dyn Embedder,
    queries: &[String],
) -> anyhow::Result<Compared> {
    let RecallRequest {
        kinds, candidates, ..
    } = RecallRequest::new("", RECALL_BUDGET_TOKENS);
    let (mut found, mut asked) = (0, 0);
    let (mut exact_ms, mut nearest_ms) = (Vec::new(), Vec::new());
    for (number, query) in queries.iter().enumerate() {
        let vector =
            agentmem::search::vectors::embed_checked(embedder, &[query.as_str()])?.remove(0);
        let exact_scan = || {
            let started = Instant::now();
            let exact = index.similarities(embedder.model(), &vector, &kinds, None);
            (exact, started.elapsed().as_secs_f64() * 1e3)
        };
        let index_answer = || {
            let started = Instant::now();
            let nearest = index.nearest(embedder.model(), &vector, (&kinds, None), candidates, &[]);
            (nearest, started.elapsed().as_secs_f64() * 1e3)
        };
        // Each goes first every other query, so neither always finds the other's pages cached.
        let ((exact, exact_took), (nearest, nearest_took)) = if number % 2 == 0 {
            (exact_scan(), index_answer())
        } else {
            let answer = index_answer();
            (exact_scan(), answer)
        };
        let (exact, nearest) = (exact?, nearest?);
        exact_ms.push(exact_took);
        nearest_ms.push(nearest_took);
        let best = exact.best(NEAREST_COMPARED);
        let Some(tenth) = best.last().and_then(|doc| exact.of(*doc)) else {
            continue;
        };
        // A document as similar as the exact scan's last is as good a
        // find: many documents share a vector (a repeated output).
        found += nearest
            .best(NEAREST_COMPARED)
            .iter()
            .filter(|doc| exact.of(**doc).is_some_and(|s| s >= tenth))
            .count();
        asked += best.len();
    }
    Ok(Compared {
        found,
        asked,
        exact_ms,
        nearest_ms,
    })
}

/// The length of all-MiniLM-L6-v2's vectors, so the scan is the size of a real one's.
const HASHED_DIMENSIONS: usize = 384;

/// Words hashed into [`HASHED_DIMENSIONS`] buckets: costs next to nothing,
/// so what is timed is storing and scanning vectors.
struct HashedWords;

impl Embedder for HashedWords {
    fn model(&self) -> &str {
        "bench-hashed-words"
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; HASHED_DIMENSIONS];
                for word in text.split_whitespace() {
                    let bucket = word.bytes().fold(0usize, |h, b| {
                        h.wrapping_mul(31).wrapping_add(usize::from(b))
                    });
                    vector[bucket % HASHED_DIMENSIONS] += 1.0;
                }
                vector
            })
            .collect())
    }
}

pub(super) fn latency(name: &str, ms: &[f64], detail: &str) -> serde_json::Value {
    let percentile = |p: f64| crate::measure::percentile(ms, p);
    json!({
        "bench": name,
        "figure": format!("p50 {:.2} ms", percentile(0.5)),
        "detail": format!("p99 {:.2} ms; {detail}", percentile(0.99)),
        "p50_ms": percentile(0.5),
        "p99_ms": percentile(0.99),
    })
}
