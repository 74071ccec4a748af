//! The shared workload's task, as its README sets it: each turn's events are
//! ingested into a durable session, then the next model call is prepared
//! under the input budget. Only the engine's work is timed, not reading the
//! workload file. (`agentmem replay` prepares before every model call of a
//! turn instead: 2.5 per turn on this workload.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentmem::search::index::DocKind;
use agentmem::Embedder;
use anyhow::Context as _;

use agentmem::pipeline::guard::GuardPolicy;
use agentmem::pipeline::strategy::CompactionTiming;
use agentmem::{Config, Durability, Event, PrepareRequest, Target};
use serde_json::json;

use super::bench::Backing;
use crate::cli::LargeOutputs;

use crate::measure::{median, percentile, set_input_budget};

/// Turns at each end of the run whose mean and median show whether cost grows.
const WINDOW_TURNS: usize = 100;
/// The run cut into this many equal spans, each with its mean and median:
/// on a long run each span holds several compactions where a 100-turn
/// window holds one or none (and the first holds none: the context is still
/// filling), so a trend across the spans is growth with history, not where
/// the compactions fell.
const HISTORY_SPANS: usize = 10;

/// What the workload is replayed with.
pub struct Setup<'a> {
    pub model: &'a str,
    /// The input budget, in tokens.
    pub budget: u64,
    pub durability: Durability,
    pub compaction_timing: CompactionTiming,
    /// How long the agent waits for its model after each prepare (not timed).
    pub model_latency: Duration,
    /// What the write-time guard does with outputs over its eviction threshold.
    pub large_outputs: LargeOutputs,
    /// A sentence-transformers model folder the store embeds with, in the
    /// background, while the workload is ingested.
    pub embedder_dir: Option<&'a Path>,
    /// Workloads replayed first, untimed, as earlier sessions of the agent.
    pub earlier: &'a [PathBuf],
}

pub fn run(
    backing: &Backing<'_>,
    root: &Path,
    workload: &Path,
    setup: &Setup<'_>,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let turns = read_turns(workload)?;
    let mut config = Config::default();
    config.storage.durability = setup.durability;
    config.guard = Some(GuardPolicy {
        evict_over_tokens: match setup.large_outputs {
            LargeOutputs::Evict => GuardPolicy::default().evict_over_tokens,
            LargeOutputs::Truncate => None,
        },
        ..GuardPolicy::default()
    });
    let (mut store, storage) = backing.open(&root.join("workload"), config)?;
    let embedder = match setup.embedder_dir {
        Some(dir) => {
            let local = agentmem_embed::LocalEmbedder::open(dir, "bench-model")
                .with_context(|| format!("loading the embedding model in {}", dir.display()))?;
            let local: Arc<dyn Embedder + Send + Sync> = Arc::new(local);
            store = store.with_embedder(Arc::clone(&local));
            Some(local)
        }
        None => None,
    };
    let mut request = PrepareRequest::new(setup.model, Target::for_model(setup.model));
    set_input_budget(&mut request, &store, setup.budget);
    request.context.compaction_timing = Some(setup.compaction_timing);
    for path in setup.earlier {
        replay_earlier(&store, &storage, backing.agent, path, &request)?;
    }
    let mut session = store.create_session_in(&storage, backing.agent, None)?;
    let mut lag = embedder
        .as_ref()
        .map(|e| EmbeddingLag::new(storage.search_index(backing.agent), e.model()))
        .transpose()?;
    let run_started = Instant::now();
    let (mut over_budget, mut estimated_turns, mut memory_turns) = (0, 0, 0);
    let (mut ingest_us, mut prepare_us, mut stats_tokens) = (Vec::new(), Vec::new(), Vec::new());
    let mut actions: Vec<String> = Vec::new();
    let mut events_in = 0;
    for turn in turns {
        events_in += turn.len() as u64;
        let started = Instant::now();
        session.ingest(turn)?;
        let ingested = Instant::now();
        let prepared = session.prepare(&request)?;
        ingest_us.push((ingested - started).as_secs_f64() * 1e6);
        prepare_us.push(ingested.elapsed().as_secs_f64() * 1e6);
        stats_tokens.push(prepared.stats.context_tokens);
        let described: Vec<String> = prepared
            .stats
            .actions
            .iter()
            .map(super::replay::describe_action)
            .collect();
        actions.push(described.join("; "));
        if prepared.stats.context_tokens > prepared.stats.input_budget {
            over_budget += 1;
        }
        if prepared.stats.estimated_tokens > 0 {
            estimated_turns += 1;
        }
        if prepared.stats.sections.memory > 0 {
            memory_turns += 1;
        }
        if let Some(lag) = &mut lag {
            lag.sample(
                &store,
                &*storage,
                backing.agent,
                run_started.elapsed(),
                events_in,
            )?;
        }
        std::thread::sleep(setup.model_latency);
    }
    let ingested_in = run_started.elapsed();
    let total: Vec<f64> = ingest_us
        .iter()
        .zip(&prepare_us)
        .map(|(a, b)| a + b)
        .collect();
    let mut rows = vec![
        summary("workload ingest", &ingest_us),
        summary("workload prepare", &prepare_us),
        summary("workload ingest + prepare", &total),
        json!({
            "bench": "workload budget",
            "figure": format!("{over_budget} turns over budget"),
            "detail": format!(
                "input budget {} tokens, largest context {} tokens, {estimated_turns} turns sent with estimated counts, {memory_turns} with memory in their context, {} earlier sessions, durability {}, compaction {}, model latency {} ms, large tool outputs {}",
                setup.budget,
                stats_tokens.iter().max().copied().unwrap_or(0),
                setup.earlier.len(),
                setup.durability,
                setup.compaction_timing.name(),
                setup.model_latency.as_millis(),
                match setup.large_outputs {
                    LargeOutputs::Evict => "evicted",
                    LargeOutputs::Truncate => "truncated",
                }
            ),
            "turns_over_budget": over_budget,
            "turns_estimated": estimated_turns,
            "turns_with_memory": memory_turns,
        }),
    ];
    rows.push(slowest_turns(&ingest_us, &prepare_us, &actions));
    if let Some(lag) = lag {
        drop(session);
        rows.push(lag.drained(&store, &storage, backing.agent, ingested_in)?);
    }
    for at in [200, 2_000] {
        if let Some(us) = total.get(at - 1) {
            rows.push(json!({
                "bench": format!("workload turn {at}"),
                "figure": format!("{us:.0} µs"),
                "detail": format!("context {} tokens", stats_tokens[at - 1]),
            }));
        }
    }
    Ok(rows)
}

/// Replays the workload at `path` as an ended session of `agent`, each
/// turn ingested and its next call prepared as the timed run does.
fn replay_earlier(
    store: &agentmem::Store,
    storage: &Arc<dyn agentmem::storage::Storage>,
    agent: &agentmem::AgentId,
    path: &Path,
    request: &PrepareRequest,
) -> anyhow::Result<()> {
    let mut session = store.create_session_in(storage, agent, None)?;
    for turn in read_turns(path)? {
        session.ingest(turn)?;
        session.prepare(request)?;
    }
    session.end()?;
    Ok(())
}

/// How far the background embedder is behind the ingested history, sampled
/// after every turn (outside the timed work).
struct EmbeddingLag {
    index: Box<dyn agentmem::storage::search::SearchIndex>,
    model: String,
    /// One per turn, right after its prepare.
    samples: Vec<LagSample>,
}

/// The embedder's position after one turn.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LagSample {
    /// Since the run started.
    at: Duration,
    /// Documents ingested so far (embedded or waiting), whether the
    /// indexer has reached them yet or not.
    indexed: u64,
    /// Documents ingested but not embedded yet.
    behind: u64,
}

/// How long the oldest document waiting for its vector had waited at each
/// sample: documents are embedded in the order they were ingested, so the
/// oldest waiting one is number `indexed - behind + 1`, brought by the first
/// sample that counts that many (each sample is taken right after its turn
/// was ingested).
fn oldest_waits(samples: &[LagSample]) -> Vec<Duration> {
    samples
        .iter()
        .map(|sample| {
            if sample.behind == 0 {
                return Duration::ZERO;
            }
            let embedded = sample.indexed - sample.behind;
            let first = samples.partition_point(|earlier| earlier.indexed <= embedded);
            samples.get(first).map_or(Duration::ZERO, |arrived| {
                sample.at.saturating_sub(arrived.at)
            })
        })
        .collect()
}

impl EmbeddingLag {
    fn new(
        index: agentmem::Result<Box<dyn agentmem::storage::search::SearchIndex>>,
        model: &str,
    ) -> agentmem::Result<EmbeddingLag> {
        Ok(EmbeddingLag {
            index: index?,
            model: model.to_owned(),
            samples: Vec::new(),
        })
    }

    fn sample(
        &mut self,
        store: &agentmem::Store,
        storage: &dyn agentmem::Storage,
        agent: &agentmem::AgentId,
        at: Duration,
        events_in: u64,
    ) -> agentmem::Result<()> {
        let everything = [DocKind::Event, DocKind::Fact, DocKind::Episode];
        // The count waiting first, then the count embedded: a batch that
        // lands in between is counted twice (indexed over by a batch at
        // most), never missed.
        let waiting = self.index.unembedded(&self.model, &everything, None)?;
        let embedded = store
            .embedding_status(storage, agent)
            .map_or(0, |status| status.embedded);
        // The indexer runs in the background too: the events it has not
        // reached yet wait as well (one document each).
        let indexed = (embedded + waiting)
            .max(events_in)
            .max(self.samples.last().map_or(0, |s| s.indexed));
        self.samples.push(LagSample {
            at,
            indexed,
            behind: indexed.saturating_sub(embedded),
        });
        Ok(())
    }

    /// Waits for the backlog left when the last turn was ingested (in
    /// `ingested_in`), and reports it, the peak, and the embedding rate.
    fn drained(
        self,
        store: &agentmem::Store,
        storage: &Arc<dyn agentmem::Storage>,
        agent: &agentmem::AgentId,
        ingested_in: Duration,
    ) -> anyhow::Result<serde_json::Value> {
        let at_end = self.samples.last().map_or(0, |s| s.behind);
        let peak = self.samples.iter().map(|s| s.behind).max().unwrap_or(0);
        let indexed = self.samples.last().map_or(0, |s| s.indexed);
        let waits = oldest_waits(&self.samples);
        let waited = Instant::now();
        store.embed_pending_in(storage, agent)?;
        let drain = waited.elapsed();
        // The last waiting document waited through the drain too.
        let last_wait = waits.last().map_or(Duration::ZERO, |w| *w + drain);
        let peak_wait = waits
            .iter()
            .copied()
            .chain([last_wait])
            .max()
            .unwrap_or_default();
        let mean_wait = waits.iter().sum::<Duration>().as_secs_f64() / waits.len().max(1) as f64;
        let turns_behind = self.samples.iter().filter(|s| s.behind > 0).count();
        let embedded = store
            .embedding_status(&**storage, agent)
            .map_or(0, |status| status.embedded);
        let busy = ingested_in + drain;
        let rate = embedded as f64 / busy.as_secs_f64().max(f64::EPSILON);
        let arriving = indexed as f64 / ingested_in.as_secs_f64().max(f64::EPSILON);
        Ok(json!({
            "bench": "workload embedding lag",
            "figure": format!(
                "peak {peak} documents and {:.1} s behind; {at_end} documents, {:.1} s to embed at the end",
                peak_wait.as_secs_f64(),
                drain.as_secs_f64()
            ),
            "detail": format!(
                "{embedded} documents embedded in {:.1} s ({rate:.1}/s) while {} turns brought {indexed} documents in {:.1} s ({arriving:.1}/s); behind after {turns_behind} of the turns, the oldest waiting document {:.2} s old on average after a turn",
                busy.as_secs_f64(),
                self.samples.len(),
                ingested_in.as_secs_f64(),
                mean_wait,
            ),
            "behind_at_end_docs": at_end,
            "behind_at_end_s": drain.as_secs_f64(),
            "peak_behind_docs": peak,
            "peak_behind_s": peak_wait.as_secs_f64(),
            "mean_behind_s": mean_wait,
            "turns_behind": turns_behind,
            "ingested_docs": indexed,
            "ingested_per_s": arriving,
            "embedded_docs": embedded,
            "embedded_per_s": rate,
        }))
    }
}

/// How many of the slowest turns are listed with what the engine did in them.
const SLOWEST_TURNS: usize = 5;

/// A turn slower than this counts against the p99 goal.
const SLOW_TURN_US: f64 = 1_000.0;

/// The slowest turns, each with its ingest and prepare time and the
/// prepare's actions: what the tail is made of.
fn slowest_turns(ingest_us: &[f64], prepare_us: &[f64], actions: &[String]) -> serde_json::Value {
    let mut turns: Vec<usize> = (0..ingest_us.len()).collect();
    turns.sort_by(|&a, &b| {
        (ingest_us[b] + prepare_us[b]).total_cmp(&(ingest_us[a] + prepare_us[a]))
    });
    turns.truncate(SLOWEST_TURNS);
    let listed: Vec<serde_json::Value> = turns
        .iter()
        .map(|&t| {
            json!({
                "turn": t + 1,
                "ingest_us": ingest_us[t],
                "prepare_us": prepare_us[t],
                "actions": actions[t],
            })
        })
        .collect();
    let detail: Vec<String> = turns
        .iter()
        .map(|&t| {
            let what = if actions[t].is_empty() {
                "no action"
            } else {
                &actions[t]
            };
            format!(
                "turn {}: ingest {:.1} ms, prepare {:.1} ms ({what})",
                t + 1,
                ingest_us[t] / 1e3,
                prepare_us[t] / 1e3
            )
        })
        .collect();
    // What the p99 is made of: the turns over a millisecond, by the step
    // that took most of each.
    let over: Vec<usize> = (0..ingest_us.len())
        .filter(|&t| ingest_us[t] + prepare_us[t] > SLOW_TURN_US)
        .collect();
    let in_ingest = over
        .iter()
        .filter(|&&t| ingest_us[t] >= prepare_us[t])
        .count();
    json!({
        "bench": "workload slowest turns",
        "figure": format!("{} listed", listed.len()),
        "detail": format!(
            "{} turns over 1 ms ({in_ingest} mostly ingest, {} mostly prepare); {}",
            over.len(),
            over.len() - in_ingest,
            detail.join(" | ")
        ),
        "turns": listed,
        "turns_over_1_ms": over.len(),
        "turns_over_1_ms_mostly_ingest": in_ingest,
    })
}

fn summary(name: &str, per_turn_us: &[f64]) -> serde_json::Value {
    let quantile = |p: f64| percentile(per_turn_us, p);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let window = WINDOW_TURNS.min(per_turn_us.len());
    let (head, tail) = (
        &per_turn_us[..window],
        &per_turn_us[per_turn_us.len() - window..],
    );
    let (first, last) = (mean(head), mean(tail));
    let (first_p50, last_p50) = (median(head), median(tail));
    let ratio = |a: f64, b: f64| b / a.max(f64::MIN_POSITIVE);
    let span_turns = per_turn_us.len().div_ceil(HISTORY_SPANS).max(1);
    let spans: Vec<serde_json::Value> = per_turn_us
        .chunks(span_turns)
        .enumerate()
        .map(|(index, span)| {
            json!({
                "first_turn": index * span_turns + 1,
                "last_turn": index * span_turns + span.len(),
                "mean_us": mean(span),
                "p50_us": median(span),
                "p99_us": percentile(span, 0.99),
            })
        })
        .collect();
    // The second tenth, not the first: the first holds the start-up turns.
    let growth = |key: &str| match spans.as_slice() {
        [_, second, .., last] => ratio(
            second[key].as_f64().unwrap_or_default(),
            last[key].as_f64().unwrap_or_default(),
        ),
        _ => 1.0,
    };
    let (growth_p50, growth_p99) = (growth("p50_us"), growth("p99_us"));
    let span_means: Vec<String> = spans
        .iter()
        .map(|s| format!("{:.0}", s["mean_us"].as_f64().unwrap_or_default()))
        .collect();
    json!({
        "bench": name,
        "figure": format!("p50 {:.0} µs/turn", quantile(0.5)),
        "detail": format!(
            "p99 {:.0} µs, max {:.0} µs, first {window} turns mean {first:.0} µs and p50 {first_p50:.0} µs, last {window} mean {last:.0} µs (×{:.2}) and p50 {last_p50:.0} µs (×{:.2}), means of the run's tenths {} µs, last tenth over the second: p50 ×{growth_p50:.2} and p99 ×{growth_p99:.2}, {} turns, total {:.2} s",
            quantile(0.99),
            quantile(1.0),
            ratio(first, last),
            ratio(first_p50, last_p50),
            span_means.join(" "),
            per_turn_us.len(),
            per_turn_us.iter().sum::<f64>() / 1e6
        ),
        "p50_us": quantile(0.5),
        "p99_us": quantile(0.99),
        "max_us": quantile(1.0),
        "first_window_mean_us": first,
        "last_window_mean_us": last,
        "first_window_p50_us": first_p50,
        "last_window_p50_us": last_p50,
        "history_spans": spans,
        "last_over_second_tenth_p50": growth_p50,
        "last_over_second_tenth_p99": growth_p99,
    })
}

/// The workload's events grouped by their `turn` field, in order.
pub fn read_turns(path: &Path) -> anyhow::Result<Vec<Vec<Event>>> {
    let text = std::fs::read_to_string(path)?;
    let mut turns: Vec<Vec<Event>> = Vec::new();
    let mut current = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let event: Event = serde_json::from_str(line)?;
        let turn = event.extra.get("turn");
        if turn != current || turns.is_empty() {
            turns.push(Vec::new());
            current = turn;
        }
        turns.last_mut().expect("just pushed").push(event);
    }
    Ok(turns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, indexed: u64, behind: u64) -> LagSample {
        LagSample {
            at: Duration::from_millis(at_ms),
            indexed,
            behind,
        }
    }

    #[test]
    fn the_wait_is_the_age_of_the_oldest_document_not_embedded() {
        let samples = [
            sample(1_000, 4, 4),
            sample(2_000, 8, 6),
            sample(3_000, 12, 3),
            sample(4_000, 16, 0),
        ];
        let waits: Vec<u128> = oldest_waits(&samples)
            .iter()
            .map(Duration::as_millis)
            .collect();
        // After turn 2 the third document (from turn 1) waits; after turn 3
        // the tenth (from turn 3, just now); after turn 4 none.
        assert_eq!(waits, [0, 1_000, 0, 0]);
    }

    #[test]
    fn a_backlog_that_grows_waits_longer_each_turn() {
        let samples: Vec<LagSample> = (1..=5).map(|t| sample(t * 1_000, t * 10, t * 8)).collect();
        let waits: Vec<u128> = oldest_waits(&samples)
            .iter()
            .map(Duration::as_millis)
            .collect();
        // Embedded 2, 4, 6, 8, 10: the oldest waiting came with turns 1, 1, 1, 1, 2.
        assert_eq!(waits, [0, 1_000, 2_000, 3_000, 3_000]);
    }
}
