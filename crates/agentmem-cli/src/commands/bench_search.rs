//! `agentmem bench --history FILE…`: an agent history of one session per
//! workload file, ingested (log and search index), then searched and
//! recalled from: the index build rate and the latency of both.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentmem::search::query::terms;
use agentmem::search::HistoryIndex;
use agentmem::{
    AgentId, Durability, Embedder, Encoding, RecallRequest, SearchFilter, Store, TraceType,
};
use serde_json::json;

/// Queries timed for search and for recall.
const QUERIES: usize = 200;
/// Words per query, taken from a user message of the history.
const QUERY_WORDS: usize = 4;
/// The recall budget measured, in tokens.
const RECALL_BUDGET_TOKENS: u64 = 2_000;

pub fn run(
    root: &Path,
    files: &[PathBuf],
    vectors: Option<Vectors>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let store = Store::open(root.join("history"), Durability::Os)?;
    let agent = AgentId::default();
    let mut events = 0usize;
    let mut bytes = 0usize;
    let mut user_messages = Vec::new();
    let mut seconds = 0.0;
    for file in files {
        let turns = super::bench_workload::read_turns(file)?;
        let started = Instant::now();
        let mut session = store.create_session(&agent, None)?;
        for turn in turns {
            events += turn.len();
            bytes += turn.iter().map(|e| e.content.len()).sum::<usize>();
            user_messages.extend(
                turn.iter()
                    .filter(|e| e.trace_type == TraceType::User)
                    .map(|e| e.content.clone()),
            );
            session.ingest(turn)?;
        }
        session.flush_index();
        session.close()?;
        seconds += started.elapsed().as_secs_f64();
    }
    let index_file = store
        .agent_dir(&agent)
        .join(agentmem::search::index::INDEX_FILE);
    let index_mb = std::fs::metadata(&index_file).map_or(0, |m| m.len()) as f64 / 1e6;
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
    let index = store.history_index(&agent)?;
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
            &index,
            &request,
            tokenizer,
            None,
            None,
            Default::default(),
        )?;
        recall_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut rows = vec![
        json!({
            "bench": "history ingest + index",
            "figure": format!("{:.0} events/s", events as f64 / seconds),
            "detail": format!("{events} events in {} sessions, {:.0} MB of content ({:.1} MB/s), index {index_mb:.0} MB, {seconds:.1} s",
                files.len(), bytes as f64 / 1e6, bytes as f64 / 1e6 / seconds),
            "events": events,
            "events_per_second": events as f64 / seconds,
            "index_mb": index_mb,
        }),
        latency(
            "history search",
            &search_ms,
            &format!(
                "{QUERIES} queries of {QUERY_WORDS} words over {events} events, {:.1} hits each",
                hits as f64 / QUERIES as f64
            ),
        ),
        latency(
            "history recall",
            &recall_ms,
            &format!("{QUERIES} queries, {RECALL_BUDGET_TOKENS}-token budget"),
        ),
    ];
    if let Some(vectors) = vectors {
        rows.extend(bench_vectors(&index, &queries, events, vectors)?);
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
    index: &HistoryIndex,
    queries: &[String],
    events: usize,
    vectors: Vectors,
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
            "bench": "history vectors stored",
            "figure": format!("{:.0} documents/s", embedded as f64 / seconds),
            "detail": format!("{embedded} vectors, {seconds:.1} s ({made_by})"),
            "documents": embedded,
            "documents_per_second": embedded as f64 / seconds,
        }),
        latency(
            "history recall with vectors",
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
