//! What `/metrics` reports, in Prometheus' text format: requests by
//! operation and status, their latencies, and what the context pipeline
//! did (compactions, tokens saved, events appended).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use agentmem::pipeline::tiers::Action;
use agentmem::ContextStats;

/// Upper bounds of the latency histogram's buckets, in seconds.
const LATENCY_BUCKETS_SECONDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Counters and histograms, safe to update from every request thread.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), Latency>>,
    prepares: AtomicU64,
    compactions: AtomicU64,
    tokens_saved: AtomicU64,
    events_appended: AtomicU64,
    events_duplicate: AtomicU64,
}

/// One label set's latency histogram.
#[derive(Debug, Default, Clone)]
struct Latency {
    buckets: [u64; LATENCY_BUCKETS_SECONDS.len()],
    count: u64,
    sum_seconds: f64,
}

impl Metrics {
    /// Records one answered request: its operation (or route) and status.
    pub fn observe_request(&self, operation: &str, status: u16, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let latency = requests.entry((operation.to_owned(), status)).or_default();
        latency.count += 1;
        latency.sum_seconds += seconds;
        for (bucket, bound) in latency.buckets.iter_mut().zip(LATENCY_BUCKETS_SECONDS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
    }

    /// Records a prepared context: its compactions and the tokens its actions saved.
    pub fn count_prepare(&self, stats: &ContextStats) {
        self.prepares.fetch_add(1, Ordering::Relaxed);
        self.tokens_saved
            .fetch_add(stats.tokens_saved, Ordering::Relaxed);
        let compactions = stats
            .actions
            .iter()
            .filter(|action| matches!(action, Action::Compacted { .. }))
            .count() as u64;
        self.compactions.fetch_add(compactions, Ordering::Relaxed);
    }

    /// Records a compaction asked for outright.
    pub fn count_compaction(&self, tokens_saved: u64) {
        self.compactions.fetch_add(1, Ordering::Relaxed);
        self.tokens_saved.fetch_add(tokens_saved, Ordering::Relaxed);
    }

    /// Records an append: events written and retries recognised.
    pub fn count_events(&self, appended: usize, duplicates: usize) {
        self.events_appended
            .fetch_add(appended as u64, Ordering::Relaxed);
        self.events_duplicate
            .fetch_add(duplicates as u64, Ordering::Relaxed);
    }

    /// The text `/metrics` answers with.
    pub fn render(&self, open_sessions: usize) -> String {
        let mut out = String::new();
        self.render_requests(&mut out);
        let counters = [
            (
                "agentmem_prepares_total",
                "Contexts prepared.",
                &self.prepares,
            ),
            (
                "agentmem_compactions_total",
                "Compactions applied, by prepare or on request.",
                &self.compactions,
            ),
            (
                "agentmem_tokens_saved_total",
                "Tokens the context pipeline kept out of prepared contexts.",
                &self.tokens_saved,
            ),
            (
                "agentmem_events_appended_total",
                "Events written to session logs.",
                &self.events_appended,
            ),
            (
                "agentmem_events_duplicate_total",
                "Appended events skipped because their id was already logged.",
                &self.events_duplicate,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let _ = writeln!(
            out,
            "# HELP agentmem_open_sessions Sessions held open for writing.\n# TYPE agentmem_open_sessions gauge\nagentmem_open_sessions {open_sessions}"
        );
        out
    }

    fn render_requests(&self, out: &mut String) {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "# HELP agentmem_requests_total Requests answered, by operation and status.\n# TYPE agentmem_requests_total counter");
        for ((operation, status), latency) in requests.iter() {
            let _ = writeln!(
                out,
                "agentmem_requests_total{{operation=\"{operation}\",status=\"{status}\"}} {}",
                latency.count
            );
        }
        let name = "agentmem_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time to answer a request.\n# TYPE {name} histogram"
        );
        for ((operation, status), latency) in requests.iter() {
            let labels = format!("operation=\"{operation}\",status=\"{status}\"");
            for (count, bound) in latency.buckets.iter().zip(LATENCY_BUCKETS_SECONDS) {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"+Inf\"}} {}",
                latency.count
            );
            let _ = writeln!(out, "{name}_sum{{{labels}}} {}", latency.sum_seconds);
            let _ = writeln!(out, "{name}_count{{{labels}}} {}", latency.count);
        }
    }
}
