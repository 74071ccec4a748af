use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;
use crate::base::event::Event;
use crate::search::index::DocKind;
use crate::search::vectors::Embedder;
use crate::search::HistoryIndex;

/// Vectors of a text's length; fails while `down` is set, and counts calls.
#[derive(Default)]
struct Lengths {
    down: AtomicBool,
    calls: AtomicUsize,
}

impl Embedder for Lengths {
    fn model(&self) -> &str {
        "lengths"
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(Error::Embedder {
                model: "lengths".into(),
                message: "the embeddings API answered 503".into(),
            });
        }
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

fn users(session: &str, count: usize) -> Vec<Event> {
    (0..count)
        .map(|i| Event::user(format!("{session} line {i}")).with_id(format!("{session}-{i}")))
        .collect()
}

fn files_feed(dir: &std::path::Path, embedder: Arc<Lengths>) -> VectorFeed {
    let dir = dir.to_path_buf();
    VectorFeed::start(
        SharedEmbedder(embedder),
        Box::new(move || Ok(Box::new(HistoryIndex::open(&dir)?) as Box<dyn SearchIndex>)),
    )
}

const ALL: [DocKind; 3] = [DocKind::Event, DocKind::Fact, DocKind::Episode];

#[test]
fn the_worker_embeds_what_is_indexed_and_resumes_from_its_stamp() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = HistoryIndex::open(dir.path()).unwrap();
    index.add_events("a", 0, &users("a", 150)).unwrap();
    let embedder = Arc::new(Lengths::default());
    let feed = files_feed(dir.path(), Arc::clone(&embedder));
    feed.wait_caught_up().unwrap();
    assert_eq!(index.unembedded("lengths", &ALL, None).unwrap(), 0);
    assert_eq!(feed.status().embedded, 150);
    assert_eq!(
        embedder.calls.load(Ordering::SeqCst),
        3,
        "batches of {EMBED_BATCH}"
    );
    drop(feed);

    // A new worker (a restart) embeds only what came since.
    index.add_events("a", 150, &users("b", 10)).unwrap();
    assert_eq!(index.unembedded("lengths", &ALL, None).unwrap(), 10);
    assert_eq!(index.unembedded("lengths", &ALL, Some("a")).unwrap(), 0);
    let feed = files_feed(dir.path(), Arc::clone(&embedder));
    feed.wait_caught_up().unwrap();
    assert_eq!(feed.status().embedded, 10);
    assert_eq!(index.unembedded("lengths", &ALL, None).unwrap(), 0);
}

const EMBED_BATCH: usize = crate::search::vectors::EMBED_BATCH_TEXTS;

#[test]
fn a_failing_embedder_is_reported_keeps_what_it_embedded_and_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = HistoryIndex::open(dir.path()).unwrap();
    index.add_events("a", 0, &users("a", 5)).unwrap();
    let embedder = Arc::new(Lengths::default());
    let feed = files_feed(dir.path(), Arc::clone(&embedder));
    feed.wait_caught_up().unwrap();

    embedder.down.store(true, Ordering::SeqCst);
    index.add_events("a", 5, &users("b", 3)).unwrap();
    let error = feed.wait_caught_up().unwrap_err();
    assert!(
        matches!(&error, Error::EmbeddingBehind { model, message }
            if model == "lengths" && message.contains("503")),
        "{error}"
    );
    let status = feed.status();
    assert!(status.failing.as_deref().unwrap().contains("503"));
    assert_eq!(status.embedded, 5, "nothing half-written");
    assert_eq!(index.unembedded("lengths", &ALL, None).unwrap(), 3);

    // The API is back: the next wake (or the retry) catches up.
    embedder.down.store(false, Ordering::SeqCst);
    feed.wait_caught_up().unwrap();
    assert_eq!(feed.status().failing, None);
    assert_eq!(index.unembedded("lengths", &ALL, None).unwrap(), 0);
}

#[test]
fn a_closing_feed_stops_after_the_batch_under_way_and_keeps_it() {
    /// Slow enough that a close lands mid-backlog.
    struct Slow;
    impl Embedder for Slow {
        fn model(&self) -> &str {
            "slow"
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            std::thread::sleep(Duration::from_millis(50));
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut index = HistoryIndex::open(dir.path()).unwrap();
    index.add_events("a", 0, &users("a", 64 * 20)).unwrap();
    let path = dir.path().to_path_buf();
    let feed = VectorFeed::start(
        SharedEmbedder(Arc::new(Slow)),
        Box::new(move || Ok(Box::new(HistoryIndex::open(&path)?) as Box<dyn SearchIndex>)),
    );
    feed.wake();
    while feed.status().embedded == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(feed);
    let left = index.unembedded("slow", &ALL, None).unwrap();
    assert!(left > 0, "stopped before the end of the backlog");
    assert_eq!(left % 64, 0, "whole batches kept, none half-written");
}

#[test]
fn once_caught_up_past_the_threshold_the_worker_keeps_the_nearest_neighbour_graph() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = HistoryIndex::open(dir.path()).unwrap();
    let threshold = crate::search::graph::GraphPolicy::default().from_vectors as usize;
    let events = users("a", threshold);
    index.add_events("a", 0, &events[..threshold - 1]).unwrap();
    let feed = files_feed(dir.path(), Arc::new(Lengths::default()));
    feed.wait_caught_up().unwrap();
    assert_eq!(
        index.graph_vectors("lengths").unwrap(),
        0,
        "one vector short"
    );
    index
        .add_events("a", threshold as u64 - 1, &events[threshold - 1..])
        .unwrap();
    feed.wait_caught_up().unwrap();
    assert_eq!(index.graph_vectors("lengths").unwrap(), threshold as u64);
}
