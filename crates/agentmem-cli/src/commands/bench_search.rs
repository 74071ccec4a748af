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

/// A history loaded for timing.
struct Loaded {
    events: usize,
    user_messages: Vec<String>,
    /// The row saying how fast it was stored and indexed.
    row: serde_json::Value,
}

pub fn run(
    root: &Path,
    files: &[PathBuf],
    vectors: Option<Vectors>,
    on: &HistoryOn,
) -> anyhow::Result<Vec<serde_json::Value>> {
    match on {
        HistoryOn::Files => {
            let store = Store::open(root.join("history"), Durability::Os)?;
            let agent = AgentId::default();
            let loaded = load_into_files(&store, &agent, files)?;
            let index = store.history_index(&agent)?;
            time_queries(&index, loaded, vectors, "")
        }
        HistoryOn::Postgres(url) => {
            let storage = agentmem_postgres::PgStorage::connect(url, Default::default())?;
            let agent = AgentId::new(format!("bench-history-{}", agentmem::SessionId::generate()))?;
            let timed = load_into_database(&storage, &agent, files)
                .and_then(|(loaded, index)| time_queries(&*index, loaded, vectors, "postgres: "));
            for meta in storage.list_sessions(&agent)? {
                storage.delete_session(&agent, &agentmem::SessionId::new(&meta.id)?)?;
            }
            storage.search_index(&agent)?;
            timed
        }
    }
}

/// Each workload file as a session of a files store, ingested turn by turn
/// (the log and the index fed as events arrive).
fn load_into_files(store: &Store, agent: &AgentId, files: &[PathBuf]) -> anyhow::Result<Loaded> {
    let mut events = 0usize;
    let mut bytes = 0usize;
    let mut user_messages = Vec::new();
    let mut seconds = 0.0;
    for file in files {
        let turns = super::bench_workload::read_turns(file)?;
        let started = Instant::now();
        let mut session = store.create_session(agent, None)?;
        for turn in turns {
            events += turn.len();
            bytes += turn.iter().map(|e| e.content.len()).sum::<usize>();
            user_messages.extend(user_texts(&turn));
            session.ingest(turn)?;
        }
        session.flush_index();
        session.close()?;
        seconds += started.elapsed().as_secs_f64();
    }
    let index_file = store
        .agent_dir(agent)
        .join(agentmem::search::index::INDEX_FILE);
    let index_mb = std::fs::metadata(&index_file).map_or(0, |m| m.len()) as f64 / 1e6;
    let row = json!({
        "bench": "history ingest + index",
        "figure": format!("{:.0} events/s", events as f64 / seconds),
        "detail": format!("{events} events in {} sessions, {:.0} MB of content ({:.1} MB/s), index {index_mb:.0} MB, {seconds:.1} s",
            files.len(), bytes as f64 / 1e6, bytes as f64 / 1e6 / seconds),
        "events": events,
        "events_per_second": events as f64 / seconds,
        "index_mb": index_mb,
    });
    Ok(Loaded {
        events,
        user_messages,
        row,
    })
}

/// Events appended to the database in one batch while loading a history.
const DATABASE_BATCH_EVENTS: usize = 5_000;

/// Each workload file as a session in the database, appended in batches
/// of [`DATABASE_BATCH_EVENTS`], then the database's index caught up.
fn load_into_database(
    storage: &agentmem_postgres::PgStorage,
    agent: &AgentId,
    files: &[PathBuf],
) -> anyhow::Result<(Loaded, Box<dyn SearchIndex>)> {
    let mut events = 0usize;
    let mut bytes = 0usize;
    let mut user_messages = Vec::new();
    let started = Instant::now();
    for file in files {
        let turns = super::bench_workload::read_turns(file)?;
        let mut writer = storage.create_session(agent, &agentmem::SessionId::generate())?;
        let mut batch = Vec::new();
        for turn in turns {
            events += turn.len();
            bytes += turn.iter().map(|e| e.content.len()).sum::<usize>();
            user_messages.extend(user_texts(&turn));
            batch.extend(turn);
            if batch.len() >= DATABASE_BATCH_EVENTS {
                writer.append(std::mem::take(&mut batch))?;
            }
        }
        writer.append(batch)?;
    }
    let stored = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let index = storage.search_index(agent)?;
    let indexed = started.elapsed().as_secs_f64();
    let row = json!({
        "bench": "postgres: history append + index",
        "figure": format!("{:.0} events/s", events as f64 / (stored + indexed)),
        "detail": format!("{events} events in {} sessions, {:.0} MB of content; appended in batches of {DATABASE_BATCH_EVENTS} in {stored:.1} s, indexed in {indexed:.1} s",
            files.len(), bytes as f64 / 1e6),
        "events": events,
        "append_seconds": stored,
        "index_seconds": indexed,
    });
    Ok((
        Loaded {
            events,
            user_messages,
            row,
        },
        index,
    ))
}

fn user_texts(turn: &[agentmem::Event]) -> impl Iterator<Item = String> + '_ {
    turn.iter()
        .filter(|e| e.trace_type == TraceType::User)
        .map(|e| e.content.clone())
}

/// Times [`QUERIES`] searches and recalls (and, with `vectors`, recalls
/// with vectors) on `index`; row names start with `prefix`.
fn time_queries(
    index: &dyn SearchIndex,
    loaded: Loaded,
    vectors: Option<Vectors>,
    prefix: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let Loaded {
        events,
        user_messages,
        row,
    } = loaded;
    let queries: Vec<String> = (0..QUERIES)
        .map(|i| {
            let message = &user_messages[i * user_messages.len() / QUERIES];
            terms(message)
                .into_iter()
                .skip(i % 5)
                .take(QUERY_WORDS)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut search_ms = Vec::new();
    let mut hits = 0;
    for query in &queries {
        let started = Instant::now();
        hits += index.search(query, &SearchFilter::default())?.len();
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let tokenizer = Encoding::O200kBase.tokenizer();
    let mut recall_ms = Vec::new();
    for query in &queries {
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
        row,
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
    if let Some(vectors) = vectors {
        rows.extend(bench_vectors(index, &queries, events, vectors, prefix)?);
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
    Ok(vec![
        json!({
            "bench": format!("{prefix}history vectors stored"),
            "figure": format!("{:.0} documents/s", embedded as f64 / seconds),
            "detail": format!("{embedded} vectors, {seconds:.1} s ({made_by})"),
            "documents": embedded,
            "documents_per_second": embedded as f64 / seconds,
        }),
        latency(
            &format!("{prefix}history recall with vectors"),
            &recall_ms,
            &format!("{} queries over {events} events, exact scan of every vector, {RECALL_BUDGET_TOKENS}-token budget", queries.len()),
        ),
    ])
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

fn latency(name: &str, ms: &[f64], detail: &str) -> serde_json::Value {
    let mut sorted = ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let percentile = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    json!({
        "bench": name,
        "figure": format!("p50 {:.2} ms", percentile(0.5)),
        "detail": format!("p99 {:.2} ms; {detail}", percentile(0.99)),
        "p50_ms": percentile(0.5),
        "p99_ms": percentile(0.99),
    })
}
