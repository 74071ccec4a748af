//! Feeding the index off the hot path: a session's writer hands freshly
//! appended events to a background thread, which indexes them while the
//! agent goes on. Ingest latency then stays that of the log append.
//!
//! The log, not the index, is the record: if the thread cannot open or write
//! the index it stops, and the next search catches up from the logs.
//!
//! After each batch the thread also asks the index whether it holds memories
//! beyond the session's own, so that recall, which asks before each user
//! message, finds the answer ready instead of opening two read transactions
//! on the turn's path.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::HistoryIndex;
use crate::event::Event;

enum Job {
    Add {
        session: String,
        first_ord: u64,
        events: Vec<Event>,
    },
    /// Answered once every job sent before it is done.
    Flush(Sender<()>),
}

/// The background indexer of one session writer. Dropping it waits for the
/// events already handed over to be indexed.
#[derive(Debug)]
pub struct IndexFeeder {
    jobs: Option<Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    others: Arc<AtomicU8>,
}

/// What [`IndexFeeder::memories_beyond`] knows, as an [`AtomicU8`].
const OTHERS_UNKNOWN: u8 = 0;
const OTHERS_ABSENT: u8 = 1;
const OTHERS_PRESENT: u8 = 2;

impl IndexFeeder {
    /// Starts the indexer for the index in `agent_dir`.
    pub fn start(agent_dir: PathBuf) -> IndexFeeder {
        let (jobs, queue) = mpsc::channel();
        let others = Arc::new(AtomicU8::new(OTHERS_UNKNOWN));
        let answer = Arc::clone(&others);
        let worker = std::thread::Builder::new()
            .name("agentmem-index".into())
            .spawn(move || work(agent_dir, queue, &answer))
            .ok();
        IndexFeeder {
            jobs: worker.as_ref().map(|_| jobs),
            worker,
            others,
        }
    }

    /// Whether the index holds memories beyond this session's own (see
    /// [`HistoryIndex::has_memories_beyond`]), as the indexer found after the
    /// latest batch it finished; `None` before the first, or when it cannot
    /// read the index.
    pub fn memories_beyond(&self) -> Option<bool> {
        match self.others.load(Ordering::Acquire) {
            OTHERS_ABSENT => Some(false),
            OTHERS_PRESENT => Some(true),
            _ => None,
        }
    }

    /// Hands `events` (at position `first_ord` of `session`'s full history) to the indexer.
    pub fn add(&self, session: &str, first_ord: u64, events: Vec<Event>) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Add {
                session: session.to_owned(),
                first_ord,
                events,
            });
        }
    }

    /// Waits until every event handed over so far is indexed (or the indexer stopped).
    pub fn flush(&self) {
        if let Some(jobs) = &self.jobs {
            let (done, wait) = mpsc::channel();
            if jobs.send(Job::Flush(done)).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}

impl Drop for IndexFeeder {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn work(agent_dir: PathBuf, queue: Receiver<Job>, others: &AtomicU8) {
    let mut index = HistoryIndex::open(&agent_dir).ok();
    for job in queue {
        match job {
            Job::Add {
                session,
                first_ord,
                events,
            } => {
                let failed = index
                    .as_mut()
                    .is_some_and(|i| i.add_events(&session, first_ord, &events).is_err());
                if failed {
                    index = None;
                }
                answer_memories_beyond(index.as_ref(), &session, others);
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Stores whether `index` holds memories beyond `session`'s own. Once
/// present they stay: recall finds nothing in a deleted session, so asking
/// again could save work, never change what it injects.
fn answer_memories_beyond(index: Option<&HistoryIndex>, session: &str, others: &AtomicU8) {
    if others.load(Ordering::Acquire) == OTHERS_PRESENT {
        return;
    }
    let answer = match index.map(|i| i.has_memories_beyond(session)) {
        Some(Ok(true)) => OTHERS_PRESENT,
        Some(Ok(false)) => OTHERS_ABSENT,
        // The session asks the index itself.
        Some(Err(_)) | None => OTHERS_UNKNOWN,
    };
    others.store(answer, Ordering::Release);
}
