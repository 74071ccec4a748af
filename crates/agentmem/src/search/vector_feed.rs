//! Embedding off the hot path: one background worker per agent index and
//! store embeds the documents the index gains, a batch at a time, while the
//! agent goes on. Ingest never waits for the model, and recall never waits
//! for a history: it scores the vectors there are, and the documents not
//! embedded yet by their words alone (see [`crate::memory::recall`]).
//! Once caught up, the worker brings the index's nearest-neighbour graph
//! up to date where the index keeps one ([`super::graph`]).
//!
//! The worker is woken, not fed: whoever indexes documents (a session
//! writer's indexer) or asks about them (recall) says "there may be more",
//! and the worker embeds whatever the index holds past the model's
//! "embedded through" stamp. The index is the queue, so memory stays
//! bounded whatever the backlog, and the work resumes after a restart from
//! the stamp. One worker per agent and store keeps one model busy at a
//! time: an in-process model already spreads each batch over every core.
//!
//! An embedder that fails (an HTTP API down, a callable raising) fails no
//! ingest: the failure is kept for [`VectorFeed::status`] and retried,
//! sooner after a wake, else after a pause that doubles up to a minute.
//! Dropping the feed stops the worker after the batch under way, whose
//! vectors are kept.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::vectors::SharedEmbedder;
use crate::base::background::spawn_background;
use crate::base::error::{Error, Result};
use crate::storage::search::SearchIndex;

/// Opens, on the worker's thread, the index the feed embeds into.
pub(crate) type IndexOpener = Box<dyn FnMut() -> Result<Box<dyn SearchIndex>> + Send>;

/// After a wake, the worker looks once more this much later: a backend
/// that indexes in the background may add the documents just after.
const RECHECK_AFTER: Duration = Duration::from_millis(200);
/// The pause before the first retry of a failed embedding...
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// ...doubling up to this.
const LONGEST_RETRY: Duration = Duration::from_secs(60);
/// How often a waiter checks that the worker still runs.
const LOOK_AT_THE_WORKER: Duration = Duration::from_secs(1);

/// How the background embedding of an agent's index stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EmbeddingStatus {
    /// The model whose vectors are made.
    pub model: String,
    /// Documents this feed embedded since it started.
    pub embedded: u64,
    /// Why the latest attempt failed, while it has not succeeded since
    /// (it is retried).
    pub failing: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    /// Wakes asked for so far.
    asked: u64,
    /// The wake the latest full catch-up began after.
    caught_up: u64,
    /// The wake the latest failure happened after, and why.
    failure: Option<(u64, String)>,
    /// Documents embedded so far.
    embedded: u64,
    stopping: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The background embedder of one agent's index (see the module docs).
pub(crate) struct VectorFeed {
    shared: Arc<Shared>,
    model: String,
    /// `None` once stopped (or when it could not start).
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for VectorFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorFeed")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl VectorFeed {
    /// Starts the worker embedding with `embedder` into the index `open`
    /// gives; it waits for the first wake.
    pub(crate) fn start(embedder: SharedEmbedder, open: IndexOpener) -> VectorFeed {
        let shared = Arc::new(Shared::default());
        let model = embedder.0.model().to_owned();
        let worker_shared = Arc::clone(&shared);
        let worker = spawn_background("agentmem-embed", move || {
            work(&worker_shared, &embedder, open)
        })
        .ok();
        VectorFeed {
            shared,
            model,
            worker: Mutex::new(worker),
        }
    }

    /// Says there may be documents to embed; returns at once.
    pub(crate) fn wake(&self) {
        self.shared.lock().asked += 1;
        self.shared.changed.notify_all();
    }

    /// Wakes the worker and waits until it has embedded every document the
    /// index holds now; the embedder's failure when it fails meanwhile.
    pub(crate) fn wait_caught_up(&self) -> Result<()> {
        let behind = |message: String| Error::EmbeddingBehind {
            model: self.model.clone(),
            message,
        };
        let ended = || {
            let worker = self.worker.lock().unwrap_or_else(PoisonError::into_inner);
            worker.as_ref().is_none_or(JoinHandle::is_finished)
        };
        let mut state = self.shared.lock();
        state.asked += 1;
        let mine = state.asked;
        self.shared.changed.notify_all();
        loop {
            if state.caught_up >= mine {
                return Ok(());
            }
            if let Some((after, message)) = &state.failure {
                if *after >= mine {
                    return Err(behind(message.clone()));
                }
            }
            if ended() {
                return Err(behind("its background thread is not running".into()));
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, LOOK_AT_THE_WORKER)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// How the embedding stands.
    pub(crate) fn status(&self) -> EmbeddingStatus {
        let state = self.shared.lock();
        EmbeddingStatus {
            model: self.model.clone(),
            embedded: state.embedded,
            failing: state.failure.as_ref().map(|(_, message)| message.clone()),
        }
    }
}

impl VectorFeed {
    /// Stops the worker after the batch under way (whose vectors are
    /// kept) and waits for it; a wake afterwards does nothing.
    pub(crate) fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.changed.notify_all();
        let worker = self
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(worker) = worker {
            let _ = worker.join();
        }
    }
}

impl Drop for VectorFeed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Why the worker wakes up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// Somebody asked (the wake's number).
    Asked(u64),
    /// A look again after a wake, or a retry after a failure.
    Due,
}

/// How one catch-up ended.
enum CaughtUp {
    /// Every document the index held is embedded.
    All,
    /// The feed is closing; the batches done are kept.
    Stopped,
}

fn work(shared: &Shared, embedder: &SharedEmbedder, mut open: IndexOpener) {
    let mut index: Option<Box<dyn SearchIndex>> = None;
    let mut seen = 0;
    let mut due: Option<Instant> = None;
    let mut retry = FIRST_RETRY;
    // Whether the nearest-neighbour graph may lag the vectors: at the
    // start, and after each batch embedded.
    let mut graph_due = true;
    while let Some(reason) = next_reason(shared, seen, due) {
        let asked = match reason {
            Reason::Asked(asked) => asked,
            Reason::Due => seen,
        };
        seen = asked;
        match catch_up(shared, embedder, &mut index, &mut open, &mut graph_due) {
            Ok(CaughtUp::Stopped) => return,
            Ok(CaughtUp::All) => {
                let mut state = shared.lock();
                state.caught_up = asked;
                state.failure = None;
                retry = FIRST_RETRY;
                due = match reason {
                    Reason::Asked(_) => Some(Instant::now() + RECHECK_AFTER),
                    Reason::Due => None,
                };
            }
            Err(error) => {
                // Opened again at the retry: a database connection lost,
                // a file replaced, are found anew.
                index = None;
                shared.lock().failure = Some((asked, error.to_string()));
                due = Some(Instant::now() + retry);
                retry = (retry * 2).min(LONGEST_RETRY);
            }
        }
        shared.changed.notify_all();
    }
}

/// Waits for a wake past `seen` or for `due`; `None` when the feed stops.
fn next_reason(shared: &Shared, seen: u64, due: Option<Instant>) -> Option<Reason> {
    let mut state = shared.lock();
    loop {
        if state.stopping {
            return None;
        }
        if state.asked > seen {
            return Some(Reason::Asked(state.asked));
        }
        state = match due {
            Some(at) => match at.checked_duration_since(Instant::now()) {
                None => return Some(Reason::Due),
                Some(left) => {
                    shared
                        .changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            },
            None => shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// Embeds batches until none is waiting or the feed stops.
fn catch_up(
    shared: &Shared,
    embedder: &SharedEmbedder,
    index: &mut Option<Box<dyn SearchIndex>>,
    open: &mut IndexOpener,
    graph_due: &mut bool,
) -> Result<CaughtUp> {
    loop {
        if shared.lock().stopping {
            return Ok(CaughtUp::Stopped);
        }
        let opened = match index {
            Some(opened) => opened,
            None => index.insert(open()?),
        };
        match opened.embed_next_batch(&*embedder.0)? {
            0 => {
                if *graph_due {
                    let stopping = || shared.lock().stopping;
                    opened.keep_nearest_graph(embedder.0.model(), &stopping)?;
                    *graph_due = false;
                }
                return Ok(CaughtUp::All);
            }
            batch => {
                *graph_due = true;
                shared.lock().embedded += batch as u64;
                shared.changed.notify_all();
            }
        }
    }
}

#[cfg(test)]
#[path = "vector_feed_tests.rs"]
mod tests;
