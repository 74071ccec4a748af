//! Feeding the index off the hot path: a session's writer hands the log
//! lines it just appended to a background thread, which reads the events
//! back from them and indexes them while the agent goes on. Ingest latency
//! then stays that of the log append: copying the lines costs far less than
//! copying the events. When the thread falls behind, it indexes what waits
//! in one transaction.
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

use super::{HistoryIndex, VectorFeed};
use crate::base::background::spawn_background;
use crate::base::event::Event;

enum Job {
    Add {
        session: String,
        first_ord: u64,
        /// Log lines, one event each, as [`AppendLog`](crate::files::jsonl::AppendLog) writes them.
        lines: Vec<u8>,
    },
    /// Answered once every job sent before it is done.
    Flush(Sender<()>),
}

/// The background indexer of one session writer. Dropping it waits for the
/// events already handed over to be indexed, and their words written to the
/// text index.
#[derive(Debug)]
pub(crate) struct IndexFeeder {
    jobs: Option<Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    others: Arc<AtomicU8>,
}

/// What [`IndexFeeder::memories_beyond`] knows, as an [`AtomicU8`].
const OTHERS_UNKNOWN: u8 = 0;
const OTHERS_ABSENT: u8 = 1;
const OTHERS_PRESENT: u8 = 2;

impl IndexFeeder {
    /// Starts the indexer for the index in `agent_dir`; it wakes `vectors`,
    /// the index's background embedder, after each batch it indexes.
    pub fn start(agent_dir: PathBuf, vectors: Option<Arc<VectorFeed>>) -> IndexFeeder {
        let (jobs, queue) = mpsc::channel();
        let others = Arc::new(AtomicU8::new(OTHERS_UNKNOWN));
        let answer = Arc::clone(&others);
        let worker = spawn_background("agentmem-index", move || {
            work(agent_dir, queue, &answer, vectors.as_deref())
        })
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
    pub(crate) fn memories_beyond(&self) -> Option<bool> {
        match self.others.load(Ordering::Acquire) {
            OTHERS_ABSENT => Some(false),
            OTHERS_PRESENT => Some(true),
            _ => None,
        }
    }

    /// Hands the events of the log `lines` (the first at position
    /// `first_ord` of `session`'s full history) to the indexer.
    pub fn add(&self, session: &str, first_ord: u64, lines: Vec<u8>) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Add {
                session: session.to_owned(),
                first_ord,
                lines,
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

/// The most log bytes the indexer takes into one transaction.
const MAX_BYTES_PER_TRANSACTION: usize = 8 << 20;

/// One transaction's worth of a session's log lines.
struct Batch {
    session: String,
    runs: Vec<(u64, Vec<u8>)>,
}

fn work(agent_dir: PathBuf, queue: Receiver<Job>, others: &AtomicU8, vectors: Option<&VectorFeed>) {
    let mut index = HistoryIndex::open(&agent_dir).ok();
    let mut carried = None;
    while let Some(job) = carried.take().or_else(|| queue.recv().ok()) {
        match job {
            Job::Add {
                session,
                first_ord,
                lines,
            } => {
                let (batch, next) = gather(session, first_ord, lines, &queue);
                carried = next;
                let runs: Vec<(u64, Vec<Event>)> = batch
                    .runs
                    .iter()
                    .flat_map(|(ord, lines)| runs_of(*ord, lines))
                    .collect();
                let failed = index.as_mut().is_some_and(|i| {
                    let runs = runs.iter().map(|(ord, e)| (*ord, e.as_slice()));
                    i.add_runs(&batch.session, runs).is_err()
                });
                if failed {
                    index = None;
                } else if let Some(vectors) = vectors {
                    vectors.wake();
                }
                answer_memories_beyond(index.as_ref(), &batch.session, others);
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
    // The log is the record: words left unwritten are read from the
    // database by whoever opens the index next.
    if let Some(index) = index {
        let _ = index.write_tail();
    }
}

/// The first run and the runs of the same session already waiting after it,
/// up to [`MAX_BYTES_PER_TRANSACTION`], with the job that ended the batch.
/// An agent's calls come seconds apart, so in use a batch is one ingest
/// call; when the indexer falls behind (a replay, an import) it catches up
/// in few transactions instead of one per call.
fn gather(
    session: String,
    first_ord: u64,
    lines: Vec<u8>,
    queue: &Receiver<Job>,
) -> (Batch, Option<Job>) {
    let mut bytes = lines.len();
    let mut batch = Batch {
        session,
        runs: vec![(first_ord, lines)],
    };
    while bytes < MAX_BYTES_PER_TRANSACTION {
        match queue.try_recv() {
            Ok(Job::Add {
                session,
                first_ord,
                lines,
            }) if session == batch.session => {
                bytes += lines.len();
                batch.runs.push((first_ord, lines));
            }
            Ok(other) => return (batch, Some(other)),
            Err(_) => break,
        }
    }
    (batch, None)
}

/// The events of log `lines`, the first at position `first_ord`, in runs of
/// consecutive positions. The writer encoded the lines a moment ago, so
/// every one reads back; were one not to, it would be left out without
/// moving the others, and the next search would catch it up from the log.
fn runs_of(first_ord: u64, lines: &[u8]) -> Vec<(u64, Vec<Event>)> {
    let mut runs = Vec::new();
    let mut run = (first_ord, Vec::new());
    let lines = lines.split(|&b| b == b'\n').filter(|line| !line.is_empty());
    for (ord, line) in (first_ord..).zip(lines) {
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => run.1.push(event),
            Err(_) => {
                let next = (ord + 1, Vec::new());
                runs.push(std::mem::replace(&mut run, next));
            }
        }
    }
    runs.push(run);
    runs.retain(|(_, events)| !events.is_empty());
    runs
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

#[cfg(test)]
mod tests {
    use super::*;

    fn add(session: &str, first_ord: u64, bytes: usize) -> Job {
        Job::Add {
            session: session.to_owned(),
            first_ord,
            lines: vec![b'x'; bytes],
        }
    }

    fn positions(batch: &Batch) -> Vec<(u64, usize)> {
        batch.runs.iter().map(|(o, l)| (*o, l.len())).collect()
    }

    #[test]
    fn a_batch_takes_the_waiting_runs_of_its_session_and_stops_at_a_flush() {
        let (jobs, queue) = mpsc::channel();
        jobs.send(add("s", 2, 20)).unwrap();
        jobs.send(add("s", 4, 10)).unwrap();
        let (done, _wait) = mpsc::channel();
        jobs.send(Job::Flush(done)).unwrap();
        jobs.send(add("s", 5, 10)).unwrap();
        let (batch, next) = gather("s".into(), 0, vec![b'x'; 20], &queue);
        assert_eq!(positions(&batch), [(0, 20), (2, 20), (4, 10)]);
        assert!(
            matches!(next, Some(Job::Flush(_))),
            "the flush waits for the batch"
        );
        assert!(matches!(
            queue.try_recv(),
            Ok(Job::Add { first_ord: 5, .. })
        ));
    }

    #[test]
    fn a_batch_stops_at_another_session_and_at_its_size() {
        let (jobs, queue) = mpsc::channel();
        jobs.send(add("other", 0, 10)).unwrap();
        let (batch, next) = gather("s".into(), 0, vec![b'x'; 10], &queue);
        assert_eq!(positions(&batch), [(0, 10)]);
        assert!(matches!(next, Some(Job::Add { session, .. }) if session == "other"));

        jobs.send(add("s", 1, 10)).unwrap();
        let full = vec![b'x'; MAX_BYTES_PER_TRANSACTION];
        let (batch, next) = gather("s".into(), 0, full, &queue);
        assert_eq!(positions(&batch), [(0, MAX_BYTES_PER_TRANSACTION)]);
        assert!(
            next.is_none() && queue.try_recv().is_ok(),
            "left for the next batch"
        );
    }

    #[test]
    fn a_closing_feeder_leaves_every_word_in_the_text_index() {
        let dir = tempfile::tempdir().unwrap();
        let events: Vec<Event> = (0..5)
            .map(|i| Event::user(format!("the parser fails at line {i}")).with_id(format!("e{i}")))
            .collect();
        let feeder = IndexFeeder::start(dir.path().to_path_buf(), None);
        feeder.add("s", 0, crate::files::jsonl::encode_lines(&events));
        feeder.flush();
        let open = HistoryIndex::open(dir.path()).unwrap();
        assert_eq!(
            open.tail_and_indexed(),
            (5, 0),
            "in the tail until it closes"
        );
        drop(feeder);
        let index = HistoryIndex::open(dir.path()).unwrap();
        assert_eq!(index.tail_and_indexed(), (0, 5));
        assert_eq!(
            open.tail_and_indexed(),
            (0, 5),
            "seen by the open index too"
        );
    }

    #[test]
    fn lines_read_back_as_the_events_written_and_keep_their_positions() {
        let events = [
            Event::user("first line\nof a question"),
            Event::tool_call("c1", "read", serde_json::json!({"path": "a.rs"})),
            Event::tool_result("c1", "fn main() {}"),
        ];
        let lines = crate::files::jsonl::encode_lines(&events);
        assert_eq!(runs_of(7, &lines), [(7, events.to_vec())]);

        let torn = [&lines[..], b"{not json\n", &lines[..]].concat();
        let runs = runs_of(0, &torn);
        let positions: Vec<(u64, usize)> = runs.iter().map(|(o, e)| (*o, e.len())).collect();
        assert_eq!(
            positions,
            [(0, 3), (4, 3)],
            "the unreadable line keeps its place"
        );
    }
}
