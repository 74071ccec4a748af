//! `agentmem bench`: the foundation's speed, measured on this machine.
//!
//! - append throughput per durability mode, one ingest call per agent turn
//!   (a user message, two tool calls with results, an answer);
//! - the time to open a session of `--open-events` events, for writing and for reading;
//! - import speed of the given transcript files (parse, and parse + store);
//! - with `--history`, search index build rate and search and recall latency;
//! - with `--cold`, the query commands' time as whole processes.
//!
//! Append throughput, the workload and the `--serve` load test run on the
//! configured storage backend (`AGENTMEM_DATABASE_URL` or `[storage]`), so
//! one command measures files or PostgreSQL on the same workload; each row
//! names its backend.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agentmem::config::StorageConfig;
use agentmem::storage::Backend;
use agentmem::{AgentId, Config, Durability, Encoding, Event, Storage, Store};
use agentmem_import as import;
use serde_json::json;

use crate::cli::{BenchArgs, HistoryBackend};
use crate::output::{print_json, print_table};

/// Events in one synthetic turn.
const EVENTS_PER_TURN: usize = 6;

/// Where the bench keeps its sessions: a fresh store under the bench's
/// scratch folder, its sessions on the configured backend, under the
/// agent of `--agent` (on a database they stay there).
pub(super) struct Backing<'a> {
    pub(super) settings: &'a StorageConfig,
    pub(super) agent: &'a AgentId,
}

impl Backing<'_> {
    pub(super) fn backend(&self) -> Backend {
        self.settings.backend
    }

    /// A store at `root` with `config`, and the backend its sessions go to
    /// (writing with the config's durability).
    pub(super) fn open(
        &self,
        root: &Path,
        config: Config,
    ) -> anyhow::Result<(Store, Arc<dyn Storage>)> {
        let store = Store::with_config(root, config);
        let storage = crate::storage::open(&store, self.settings)?;
        Ok((store, storage.sessions))
    }
}

pub fn run(
    args: &BenchArgs,
    backing: &Backing<'_>,
    durability: Durability,
    json_output: bool,
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    if !args.skip_storage {
        for (durability, events) in [
            (Durability::Os, args.events),
            (Durability::Batch, args.events),
            (Durability::Always, (args.events / 10).max(EVENTS_PER_TURN)),
        ] {
            rows.push(bench_append(backing, dir.path(), durability, events)?);
        }
        match backing.backend() {
            Backend::Files => {
                rows.extend(bench_open(dir.path(), args.open_events)?);
                for path in &args.import {
                    rows.push(bench_import(dir.path(), path)?);
                }
            }
            // Opening reads the whole log and import is refused there:
            // both are measured on files.
            Backend::Postgres => {}
        }
    }
    if let Some(path) = &args.tokens {
        rows.extend(bench_tokens(path)?);
    }
    if let Some(path) = &args.cold {
        rows.extend(super::bench_cold::run(
            dir.path(),
            path,
            &args.cold_history,
            args.cold_runs,
        )?);
    }
    if !args.history.is_empty() {
        let vectors = || match (&args.embedder_dir, args.vectors) {
            (Some(model), _) => Some(super::bench_search::Vectors::Model(model.clone())),
            (None, true) => Some(super::bench_search::Vectors::StandIn),
            (None, false) => None,
        };
        let on: Vec<HistoryBackend> = match (args.history_on.is_empty(), args.on_postgres) {
            (false, _) => args.history_on.clone(),
            (true, false) => vec![HistoryBackend::Files],
            (true, true) => vec![HistoryBackend::Files, HistoryBackend::Postgres],
        };
        for backend in on {
            let on = match backend {
                HistoryBackend::Files => super::bench_search::HistoryOn::Files,
                HistoryBackend::Postgres => {
                    let url = std::env::var(agentmem::config::DATABASE_URL_ENV).map_err(|_| {
                        anyhow::anyhow!(
                            "timing the history on postgres needs the database's URL in {}",
                            agentmem::config::DATABASE_URL_ENV
                        )
                    })?;
                    super::bench_search::HistoryOn::Postgres(agentmem::config::DatabaseUrl::new(
                        url,
                    ))
                }
            };
            rows.extend(super::bench_search::run(
                args.history_store.as_deref().unwrap_or(dir.path()),
                &args.history,
                vectors(),
                &on,
                &args.measure_at,
            )?);
        }
    }
    if args.serve {
        rows.extend(super::bench_serve::run(
            backing,
            dir.path(),
            durability,
            &super::bench_serve::Load {
                servers: &args.servers,
                clients: args.clients,
                turns: args.turns,
                model: &args.model,
            },
        )?);
    }
    if let Some(path) = &args.workload {
        let setup = super::bench_workload::Setup {
            model: &args.model,
            budget: args.budget,
            durability,
            compaction_timing: args.compaction_timing,
            model_latency: std::time::Duration::from_millis(args.model_latency_ms),
            large_outputs: args.large_outputs,
            embedder_dir: args.embedder_dir.as_deref(),
            earlier: &args.earlier,
        };
        rows.extend(super::bench_workload::run(
            backing,
            dir.path(),
            path,
            &setup,
        )?);
    }
    let backend = backing.backend().name();
    for row in &mut rows {
        row["backend"] = json!(backend);
    }
    if json_output {
        return print_json(&rows);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r["bench"].as_str().unwrap_or_default().to_owned(),
                r["backend"].as_str().unwrap_or_default().to_owned(),
                r["figure"].as_str().unwrap_or_default().to_owned(),
                r["detail"].as_str().unwrap_or_default().to_owned(),
            ]
        })
        .collect();
    print_table(&["BENCH", "BACKEND", "FIGURE", "DETAIL"], &table);
    Ok(())
}

fn bench_append(
    backing: &Backing<'_>,
    root: &Path,
    durability: Durability,
    events: usize,
) -> anyhow::Result<serde_json::Value> {
    let mut config = Config::default();
    config.storage.durability = durability;
    let (store, storage) = backing.open(&root.join(format!("append-{durability:?}")), config)?;
    let mut session = store.create_session_in(&storage, backing.agent, None)?;
    let turns = synthetic_turns(events.div_ceil(EVENTS_PER_TURN));
    let bytes: usize = turns.iter().flatten().map(|e| e.content.len()).sum();
    let started = Instant::now();
    for turn in turns {
        session.ingest(turn)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    // The search index is fed in the background; this is when it caught up.
    session.flush_index();
    let indexed_seconds = started.elapsed().as_secs_f64();
    let count = session.events().len();
    session.close()?;
    Ok(json!({
        "bench": format!("append ({})", format!("{durability:?}").to_lowercase()),
        "figure": format!("{:.0} events/s", count as f64 / seconds),
        "detail": format!("{}; {count} events, {:.1} MB of content, {:.1} MB/s, {:.1} µs/turn; search index caught up at {:.0} events/s",
            durability_means(backing.backend(), durability), mb(bytes), mb(bytes) / seconds, seconds * 1e6 * EVENTS_PER_TURN as f64 / count as f64,
            count as f64 / indexed_seconds),
        "events": count,
        "events_per_second": count as f64 / seconds,
        "indexed_events_per_second": count as f64 / indexed_seconds,
    }))
}

/// What a durability mode does on `backend`.
fn durability_means(backend: Backend, durability: Durability) -> &'static str {
    match (backend, durability) {
        (Backend::Files, Durability::Os) => "no fsync",
        (Backend::Files, Durability::Batch) => "fsync per ingest",
        (Backend::Files, Durability::Always) => "fsync per ingest and per batch record",
        (Backend::Postgres, Durability::Os) => "synchronous_commit off",
        (Backend::Postgres, Durability::Batch | Durability::Always) => "synchronous_commit on",
    }
}

fn bench_open(root: &Path, events: usize) -> anyhow::Result<Vec<serde_json::Value>> {
    let store = Store::open(root.join("open"), Durability::Os)?;
    let agent = AgentId::default();
    let mut session = store.create_session(&agent, None)?;
    for turn in synthetic_turns(events.div_ceil(EVENTS_PER_TURN)) {
        session.ingest(turn)?;
    }
    let id = session.id().clone();
    let log_bytes = std::fs::metadata(session.paths().raw_traces())?.len() as usize;
    session.close()?;
    let mut rows = Vec::new();
    for (name, write) in [("open for writing", true), ("open for reading", false)] {
        let started = Instant::now();
        let session = if write {
            store.open_session(&agent, &id)?
        } else {
            store.read_session(&agent, &id)?
        };
        let ms = started.elapsed().as_secs_f64() * 1e3;
        rows.push(json!({
            "bench": name,
            "figure": format!("{ms:.0} ms"),
            "detail": format!("{} events, {:.1} MB log", session.events().len(), mb(log_bytes)),
            "events": session.events().len(),
            "ms": ms,
        }));
    }
    Ok(rows)
}

fn bench_import(root: &Path, path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)?;
    let format = import::detect_format(path, &text)?;
    let started = Instant::now();
    let imported = import::parse(format, path, &text)?;
    let parse_seconds = started.elapsed().as_secs_f64();
    let store = Store::open(root.join("import"), Durability::Batch)?;
    let mut session = store.create_session(&AgentId::default(), None)?;
    let events = imported.events.len();
    session.ingest(imported.events)?;
    session.close()?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "bench": format!("import {}", path.file_name().unwrap_or_default().to_string_lossy()),
        "figure": format!("{:.1} MB/s", mb(text.len()) / seconds),
        "detail": format!("{format}, {:.2} MB, {events} events, parse alone {:.1} MB/s",
            mb(text.len()), mb(text.len()) / parse_seconds),
        "mb_per_second": mb(text.len()) / seconds,
    }))
}

/// Counts every line of `path` (one line standing for one event's text).
fn bench_tokens(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let tokenizer = encoding.tokenizer();
        tokenizer.count("warm up: load the tables");
        let started = Instant::now();
        let tokens: usize = lines.iter().map(|line| tokenizer.count(line)).sum();
        let seconds = started.elapsed().as_secs_f64();
        rows.push(json!({
            "bench": format!("count {}", encoding.name()),
            "figure": format!("{:.1} MB/s", mb(text.len()) / seconds),
            "detail": format!("{tokens} tokens in {} lines, {:.2} MB, {:.0} ms", lines.len(), mb(text.len()), seconds * 1e3),
            "mb_per_second": mb(text.len()) / seconds,
            "tokens": tokens,
        }));
    }
    Ok(rows)
}

pub(super) fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

/// Deterministic turns shaped like a coding agent's: short messages, tool
/// outputs from a few hundred bytes to several kilobytes.
fn synthetic_turns(count: usize) -> Vec<Vec<Event>> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|turn| {
            let output = |n: u64| {
                "test result: ok. 42 passed; 0 failed; src/lib.rs:17 warning: unused\n"
                    .repeat(3 + (n % 60) as usize)
            };
            vec![
                Event::user(format!(
                    "turn {turn}: please fix the failing test in src/module_{}.rs",
                    next() % 50
                )),
                Event::tool_call(
                    format!("call_{turn}_a"),
                    "read_file",
                    json!({"path": format!("src/module_{}.rs", next() % 50)}),
                ),
                Event::tool_result(format!("call_{turn}_a"), output(next())),
                Event::tool_call(
                    format!("call_{turn}_b"),
                    "run_tests",
                    json!({"filter": "module"}),
                ),
                Event::tool_result(format!("call_{turn}_b"), output(next())),
                Event::assistant(format!(
                    "Fixed: the loop called the helper twice (turn {turn})."
                )),
            ]
        })
        .collect()
}
