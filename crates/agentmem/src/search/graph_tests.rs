use super::*;
use crate::base::event::Event;
use crate::search::vectors::Embedder;
use crate::storage::search::SearchIndex;

const DIMENSIONS: usize = 48;
const CLUSTERS: u64 = 24;

/// Vectors of documents named `doc <n>`: each near one of [`CLUSTERS`]
/// centres, as a real model's are near their topic's, the same for the
/// same text whatever the run.
struct Clustered;

impl Embedder for Clustered {
    fn model(&self) -> &str {
        "clustered"
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| vector_of(number_in(text)))
            .collect())
    }
}

fn number_in(text: &str) -> u64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

fn vector_of(n: u64) -> Vec<f32> {
    let mut centre = Noise(n % CLUSTERS + 1);
    let mut noise = Noise(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..DIMENSIONS)
        .map(|_| centre.next() + 0.6 * noise.next())
        .collect()
}

/// A small deterministic generator of numbers in [-1, 1].
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % 20_001) as f32 / 10_000.0 - 1.0
    }
}

/// An index of `documents` documents `doc 0`, `doc 1`, ... spread over
/// ten sessions `s0`..`s9`, each embedded.
fn embedded_index(dir: &Path, documents: u64) -> HistoryIndex {
    let mut index = HistoryIndex::open(dir).unwrap();
    for session in 0..10 {
        let events: Vec<Event> = (0..documents)
            .filter(|n| n % 10 == session)
            .map(|n| Event::user(format!("doc {n}")).with_id(format!("e{n}")))
            .collect();
        index
            .add_events(&format!("s{session}"), 0, &events)
            .unwrap();
    }
    index.embed_missing(&Clustered).unwrap();
    index
}

const SMALL: GraphPolicy = GraphPolicy {
    from_vectors: 1_000,
    extend_after: 100,
};

const EVENTS: [DocKind; 1] = [DocKind::Event];

fn never() -> bool {
    false
}

fn graph_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(GRAPH_DIR))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_graph_is_built_past_its_threshold_and_finds_what_the_exact_scan_finds() {
    let dir = tempfile::tempdir().unwrap();
    let index = embedded_index(dir.path(), 3_000);
    let too_many = GraphPolicy {
        from_vectors: 3_001,
        ..SMALL
    };
    assert_eq!(
        index.keep_graph("clustered", too_many, &never).unwrap(),
        GraphUpkeep::Unchanged
    );
    let query = vector_of(7);
    assert_eq!(
        index
            .nearest_by_graph("clustered", &query, (&EVENTS, None), 50, &[])
            .unwrap(),
        None,
        "no graph: the exact scan answers"
    );

    let built = index.keep_graph("clustered", SMALL, &never).unwrap();
    assert_eq!(
        built,
        GraphUpkeep::Saved {
            vectors: 3_000,
            through: 3_000
        }
    );
    assert_eq!(
        graph_files(dir.path()),
        [graph_file_name("clustered", 3_000)]
    );
    assert_eq!(index.graph_vectors("clustered").unwrap(), 3_000);
    assert_eq!(
        index.keep_graph("clustered", SMALL, &never).unwrap(),
        GraphUpkeep::Unchanged,
        "nothing new"
    );

    let (mut found, mut asked) = (0, 0);
    for n in (0..40).map(|q| 10_000 + q * 37) {
        let query = vector_of(n);
        let exact = index
            .similarities("clustered", &query, &EVENTS, None)
            .unwrap();
        let nearest = index
            .nearest_by_graph("clustered", &query, (&EVENTS, None), 50, &[])
            .unwrap()
            .expect("the graph answers");
        let best = nearest.best(10);
        for doc in &best {
            assert_eq!(
                nearest.of(*doc),
                exact.of(*doc),
                "scored as the scan scores"
            );
        }
        let exact_best = exact.best(10);
        found += best.iter().filter(|doc| exact_best.contains(doc)).count();
        asked += exact_best.len();
    }
    assert!(
        found as f64 / asked as f64 >= 0.95,
        "recall@10 {found}/{asked}"
    );
}

#[test]
fn vectors_stored_after_the_graph_are_scanned_and_the_scope_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = embedded_index(dir.path(), 2_000);
    index.keep_graph("clustered", SMALL, &never).unwrap();
    // A document stored after the graph, the query's own vector.
    index
        .add_events("late", 0, &[Event::user("doc 123456").with_id("late")])
        .unwrap();
    index.embed_missing(&Clustered).unwrap();
    let late = 2_001;
    let query = vector_of(123_456);
    let nearest = index
        .nearest_by_graph("clustered", &query, (&EVENTS, Some("s3")), 30, &[5])
        .unwrap()
        .unwrap();
    assert_eq!(nearest.best(1), [late]);
    assert!(nearest.of(late).unwrap() > 0.99);
    let sessions: Vec<String> = index
        .candidates_by_id(&nearest.best(usize::MAX))
        .unwrap()
        .into_iter()
        .map(|candidate| candidate.session)
        .collect();
    assert!(sessions.len() >= 30);
    assert!(
        !sessions.iter().any(|session| session == "s3"),
        "s3 is left out"
    );
    let exact = index
        .similarities("clustered", &query, &EVENTS, None)
        .unwrap();
    assert_eq!(nearest.of(5), exact.of(5), "a document asked for is scored");

    index.remove_session("s4").unwrap();
    let nearest = index
        .nearest_by_graph("clustered", &query, (&EVENTS, None), 30, &[])
        .unwrap()
        .unwrap();
    let found = index.candidates_by_id(&nearest.best(usize::MAX)).unwrap();
    assert!(found.len() >= 30);
    assert!(
        !found.iter().any(|candidate| candidate.session == "s4"),
        "a removed session's documents stay in the graph but are never found"
    );
}

#[test]
fn an_extended_graph_replaces_the_old_file_and_a_reader_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = embedded_index(dir.path(), 1_500);
    index.keep_graph("clustered", SMALL, &never).unwrap();
    let query = vector_of(555_555);
    let before = index
        .nearest_by_graph("clustered", &query, (&EVENTS, None), 10, &[])
        .unwrap()
        .unwrap();
    let events: Vec<Event> = (0..150)
        .map(|n| Event::user(format!("doc {}", 555_555 + n * CLUSTERS)).with_id(format!("x{n}")))
        .collect();
    index.add_events("more", 0, &events).unwrap();
    index.embed_missing(&Clustered).unwrap();
    assert_eq!(
        index.keep_graph("clustered", SMALL, &never).unwrap(),
        GraphUpkeep::Saved {
            vectors: 1_650,
            through: 1_650
        }
    );
    assert_eq!(
        graph_files(dir.path()),
        [graph_file_name("clustered", 1_650)]
    );
    let after = index
        .nearest_by_graph("clustered", &query, (&EVENTS, None), 10, &[])
        .unwrap()
        .unwrap();
    assert_eq!(
        after.best(1),
        [1_501],
        "the query's own document, now in the graph"
    );
    assert_ne!(before.best(10), after.best(10));
    let stopped = || true;
    index.add_events("more", 150, &events_after(150)).unwrap();
    index.embed_missing(&Clustered).unwrap();
    assert_eq!(
        index.keep_graph("clustered", SMALL, &stopped).unwrap(),
        GraphUpkeep::Stopped
    );
    assert_eq!(
        graph_files(dir.path()),
        [graph_file_name("clustered", 1_650)]
    );
}

fn events_after(first: u64) -> Vec<Event> {
    (first..first + 150)
        .map(|n| Event::user(format!("doc {}", 900_000 + n)).with_id(format!("x{n}")))
        .collect()
}

#[test]
fn an_unreadable_graph_gives_the_exact_scan_until_it_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let index = embedded_index(dir.path(), 1_200);
    index.keep_graph("clustered", SMALL, &never).unwrap();
    let file = dir
        .path()
        .join(GRAPH_DIR)
        .join(graph_file_name("clustered", 1_200));
    std::fs::write(&file, b"not a graph").unwrap();
    let query = vector_of(42);
    assert_eq!(
        index
            .nearest_by_graph("clustered", &query, (&EVENTS, None), 10, &[])
            .unwrap(),
        None
    );
    let exact = index
        .nearest("clustered", &query, (&EVENTS, None), 10, &[])
        .unwrap();
    assert_eq!(
        exact.best(usize::MAX).len(),
        1_200,
        "the trait's answer is the scan's"
    );
    assert_eq!(
        index.keep_graph("clustered", SMALL, &never).unwrap(),
        GraphUpkeep::Saved {
            vectors: 1_200,
            through: 1_200
        }
    );
    assert!(index
        .nearest_by_graph("clustered", &query, (&EVENTS, None), 10, &[])
        .unwrap()
        .is_some());
}

#[test]
fn a_rebuilt_index_never_trusts_the_graph_of_the_one_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let index = embedded_index(dir.path(), 1_100);
    index.keep_graph("clustered", SMALL, &never).unwrap();
    drop(index);
    std::fs::remove_file(dir.path().join(crate::search::index::INDEX_FILE)).unwrap();
    let index = HistoryIndex::open(dir.path()).unwrap();
    assert_eq!(
        index
            .nearest_by_graph("clustered", &vector_of(1), (&EVENTS, None), 10, &[])
            .unwrap(),
        None
    );
    assert_eq!(
        index
            .keep_graph("clustered", GraphPolicy::default(), &never)
            .unwrap(),
        GraphUpkeep::Unchanged
    );
}

#[test]
fn the_store_keeps_no_graph_below_the_default_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let index = embedded_index(dir.path(), 500);
    assert_eq!(index.keep_nearest_graph("clustered", &never).unwrap(), 0);
    assert!(!dir.path().join(GRAPH_DIR).exists());
}

#[test]
fn many_recalls_at_once_are_all_answered_by_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let index = embedded_index(dir.path(), 1_000);
    index.keep_graph("clustered", SMALL, &never).unwrap();
    drop(index);
    let answered: Vec<bool> = std::thread::scope(|scope| {
        let askers: Vec<_> = (0..16)
            .map(|asker| {
                let dir = dir.path();
                scope.spawn(move || {
                    let index = HistoryIndex::open(dir).unwrap();
                    (0..20).all(|n| {
                        let query = vector_of(50_000 + asker * 100 + n);
                        index
                            .nearest_by_graph("clustered", &query, (&EVENTS, None), 10, &[])
                            .unwrap()
                            .is_some_and(|found| found.best(10).len() == 10)
                    })
                })
            })
            .collect();
        askers
            .into_iter()
            .map(|asker| asker.join().unwrap())
            .collect()
    });
    assert!(answered.iter().all(|all| *all), "{answered:?}");
}
