//! A crash at any point of a compaction leaves a session the next writer
//! finishes, every step once: each crash point's files are rebuilt from a
//! store copied before the compaction and the same store after it, then
//! opened. Also: ids stay idempotent across restarts and compactions, and
//! what killed writers left behind is cleaned up.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agentmem::files::snapshot::Snapshot;
use agentmem::memory::episodic::read_episodes;
use agentmem::memory::facts::FactStore;
use agentmem::{AgentId, CompactOptions, Durability, Event, SessionId, SessionMeta, Store};

const SESSION: &str = "s";

fn store(dir: &Path) -> Store {
    Store::open(dir, Durability::Batch).unwrap()
}

fn session_id() -> SessionId {
    SessionId::new(SESSION).unwrap()
}

fn session_dir(root: &Path) -> PathBuf {
    root.join("agents/default/sessions").join(SESSION)
}

fn agent_dir(root: &Path) -> PathBuf {
    root.join("agents/default")
}

/// Ten turns whose users state lasting constraints (so the compaction
/// leaves facts as well as an episode).
fn history() -> Vec<Event> {
    let mut events = Vec::new();
    for turn in 0..10 {
        events.push(
            Event::user(format!(
                "Turn {turn}: rename `cfg_{turn}` to `config_{turn}`. Never touch module_{turn}'s public API."
            ))
            .with_id(format!("u{turn}")),
        );
        events.push(
            Event::assistant(format!("Renamed in src/m{turn}.rs. ").repeat(60))
                .with_id(format!("a{turn}")),
        );
    }
    events
}

fn new_session(store: &Store) -> agentmem::Session {
    store
        .create_session(&AgentId::default(), Some(session_id()))
        .unwrap()
}

fn ids(events: &[impl std::borrow::Borrow<Event>]) -> Vec<String> {
    events.iter().map(|e| e.borrow().id.clone()).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn line_ids(path: &Path) -> Vec<String> {
    lines(path)
        .iter()
        .map(|line| serde_json::from_str::<Event>(line).unwrap().id)
        .collect()
}

/// Where a compaction stopped: the files of the store after it that had
/// been written, laid over the store before it.
#[derive(Debug, Clone, Copy)]
enum CrashPoint {
    /// Halfway through appending the span to the archive.
    MidArchive,
    /// The span archived, nothing committed.
    Archived,
    /// The snapshot committed; the log still whole.
    Committed,
    /// The log cut to the tail; nothing in long-term memory yet.
    LogReplaced,
    /// The episode written, not the facts.
    EpisodeWritten,
    /// Everything but `meta.json`.
    MemoryWritten,
}

impl CrashPoint {
    const ALL: [CrashPoint; 6] = [
        CrashPoint::MidArchive,
        CrashPoint::Archived,
        CrashPoint::Committed,
        CrashPoint::LogReplaced,
        CrashPoint::EpisodeWritten,
        CrashPoint::MemoryWritten,
    ];

    fn committed(self) -> bool {
        !matches!(self, CrashPoint::MidArchive | CrashPoint::Archived)
    }

    /// The files of `after` a crash at this point had written.
    fn written(self) -> &'static [&'static str] {
        const WRITTEN_IN_ORDER: [&str; 5] = [
            "agents/default/sessions/s/raw_traces_archive.jsonl",
            "agents/default/sessions/s/snapshot.json",
            "agents/default/sessions/s/raw_traces.jsonl",
            "agents/default/episodic.jsonl",
            "agents/default/semantic.jsonl",
        ];
        match self {
            CrashPoint::MidArchive => &[],
            CrashPoint::Archived => &WRITTEN_IN_ORDER[..1],
            CrashPoint::Committed => &WRITTEN_IN_ORDER[..2],
            CrashPoint::LogReplaced => &WRITTEN_IN_ORDER[..3],
            CrashPoint::EpisodeWritten => &WRITTEN_IN_ORDER[..4],
            CrashPoint::MemoryWritten => &WRITTEN_IN_ORDER[..5],
        }
    }

    /// The store as the crash left it, in `root`.
    fn lay_out(self, before: &Path, after: &Path, root: &Path) {
        copy_dir(before, root);
        for file in self.written() {
            std::fs::copy(after.join(file), root.join(file)).unwrap();
        }
        let archive = session_dir(root).join("raw_traces_archive.jsonl");
        if let CrashPoint::MidArchive = self {
            let whole = std::fs::read(session_dir(after).join("raw_traces_archive.jsonl")).unwrap();
            std::fs::write(&archive, &whole[..whole.len() / 2]).unwrap();
        }
        // Writers killed mid-rewrite leave their temporary files.
        std::fs::write(
            session_dir(root).join(".snapshot.json.999999.tmp"),
            "{\"torn",
        )
        .unwrap();
        std::fs::write(session_dir(root).join(".meta.json.999999.tmp"), "{").unwrap();
        std::fs::write(agent_dir(root).join(".semantic.jsonl.999999.tmp"), "{").unwrap();
    }
}

#[test]
fn every_crash_point_of_a_compaction_is_finished_once() {
    let work = tempfile::tempdir().unwrap();
    let (before, after) = (work.path().join("before"), work.path().join("after"));
    let original = history();
    let mut session = store(&before)
        .create_session(&AgentId::default(), Some(session_id()))
        .unwrap();
    session.ingest(original.clone()).unwrap();
    session.close().unwrap();
    copy_dir(&before, &after);
    let mut session = store(&after)
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    let tail = ids(session.events());
    drop(session);
    let facts_after = FactStore::new(&agent_dir(&after), Default::default())
        .all()
        .unwrap();
    assert!(!facts_after.is_empty(), "the compaction leaves facts");
    let meta_after = SessionMeta::read(&session_dir(&after)).unwrap();

    for point in CrashPoint::ALL {
        let root = work.path().join(format!("{point:?}"));
        point.lay_out(&before, &after, &root);
        let store = store(&root);

        let reader = store
            .read_session(&AgentId::default(), &session_id())
            .unwrap();
        let expected_view = if point.committed() {
            tail.clone()
        } else {
            ids(&original)
        };
        assert_eq!(
            ids(reader.events()),
            expected_view,
            "{point:?}: readers see the state it will be in"
        );
        drop(reader);

        let session = store
            .open_session(&AgentId::default(), &session_id())
            .unwrap();
        assert_eq!(ids(session.events()), expected_view, "{point:?}");
        assert_eq!(
            ids(&session.full_history().unwrap()),
            ids(&original),
            "{point:?}: nothing lost"
        );
        let dir = session_dir(&root);
        let archived = line_ids(&dir.join("raw_traces_archive.jsonl"));
        let active = line_ids(&dir.join("raw_traces.jsonl"));
        let distinct: HashSet<&String> = archived.iter().chain(&active).collect();
        assert_eq!(
            distinct.len(),
            archived.len() + active.len(),
            "{point:?}: no event twice on disk"
        );
        assert_eq!(archived.len() + active.len(), original.len(), "{point:?}");
        drop(session);

        let meta = SessionMeta::read(&dir).unwrap();
        assert_eq!(meta.events, original.len(), "{point:?}");
        assert_eq!(meta.archived_events, archived.len(), "{point:?}");
        let compactions = Snapshot::read(&dir).unwrap().map_or(0, |s| s.compactions);
        assert_eq!(meta.compactions_finished, compactions, "{point:?}");
        let episodes = read_episodes(&agent_dir(&root)).unwrap();
        let facts = FactStore::new(&agent_dir(&root), Default::default())
            .all()
            .unwrap();
        if point.committed() {
            assert_eq!(
                meta.archived_events, meta_after.archived_events,
                "{point:?}"
            );
            assert_eq!(
                ids_of(&episodes),
                ["ep-s-0001"],
                "{point:?}: the episode, once"
            );
            assert_eq!(
                texts(&facts),
                texts(&facts_after),
                "{point:?}: the facts, once"
            );
        } else {
            assert!(episodes.is_empty() && facts.is_empty(), "{point:?}");
        }
        assert!(
            temporaries(&dir).is_empty(),
            "{point:?}: the writer removed them"
        );

        // What is appended after the finish is kept, and the next
        // compaction archives nothing twice.
        let mut session = store
            .open_session(&AgentId::default(), &session_id())
            .unwrap();
        session
            .ingest(vec![Event::user("after the crash").with_id("after")])
            .unwrap();
        drop(session);
        let mut session = store
            .open_session(&AgentId::default(), &session_id())
            .unwrap();
        session.compact(&CompactOptions::default()).unwrap();
        let archived = line_ids(&dir.join("raw_traces_archive.jsonl"));
        let distinct: HashSet<&String> = archived.iter().collect();
        assert_eq!(
            distinct.len(),
            archived.len(),
            "{point:?}: no archive line twice"
        );
        let mut expected = ids(&original);
        expected.push("after".into());
        assert_eq!(ids(&session.full_history().unwrap()), expected, "{point:?}");
        let episodes = read_episodes(&agent_dir(&root)).unwrap();
        let distinct: HashSet<&str> = episodes.iter().map(|e| e.id.as_str()).collect();
        let compactions = session.snapshot().unwrap().compactions as usize;
        assert_eq!(
            (episodes.len(), distinct.len()),
            (compactions, compactions),
            "{point:?}: one episode a compaction"
        );
    }
}

fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

fn ids_of(episodes: &[agentmem::files::records::EpisodicItem]) -> Vec<&str> {
    episodes.iter().map(|e| e.id.as_str()).collect()
}

fn texts(facts: &[agentmem::memory::facts::Fact]) -> Vec<&str> {
    facts.iter().map(|f| f.fact.as_str()).collect()
}

#[test]
fn an_archived_event_sent_again_after_a_restart_is_not_appended() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let original = history();
    let mut session = new_session(&store);
    session.ingest(original.clone()).unwrap();
    session.compact(&CompactOptions::default()).unwrap();
    let archived_first = original[0].clone();
    assert!(
        session.events().iter().all(|e| e.id != archived_first.id),
        "it was archived"
    );
    drop(session);

    let mut session = store
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    let retry = vec![archived_first, Event::user("a new question").with_id("new")];
    let report = session.ingest(retry).unwrap();
    assert_eq!((report.appended, report.duplicates), (1, 1));
    assert_eq!(
        session.events().last().unwrap().id,
        "new",
        "the newest question is the new one"
    );
    let history = session.full_history().unwrap();
    assert_eq!(history.len(), original.len() + 1);
    drop(session);
    let meta = store
        .session_meta(&AgentId::default(), &session_id())
        .unwrap();
    assert_eq!(meta.events, original.len() + 1);
}

#[test]
fn folders_a_killed_fork_or_delete_left_are_removed_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = new_session(&store);
    session.ingest(history()).unwrap();
    drop(session);
    let sessions = dir.path().join("agents/default/sessions");
    for abandoned in [".fork-copy-4242", ".deleted-old-4242"] {
        std::fs::create_dir(sessions.join(abandoned)).unwrap();
        std::fs::write(sessions.join(abandoned).join("raw_traces.jsonl"), "{}\n").unwrap();
    }
    let live = sessions.join(".fork-busy-4243");
    std::fs::create_dir(&live).unwrap();
    let _held = agentmem::files::lock::SessionLock::acquire(&live, "busy").unwrap();

    store
        .fork_session(&AgentId::default(), &session_id(), None, None)
        .unwrap();
    let mut hidden: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with('.'))
        .collect();
    hidden.sort();
    assert_eq!(hidden, [".fork-busy-4243"]);
    assert_eq!(
        store.list_sessions(&AgentId::default()).unwrap().len(),
        2,
        "the session and its fork"
    );
}

/// The log cut back as a crash in the middle of writing its last batch
/// would leave it: `kept` bytes of that batch written.
fn cut_last_batch_to(log: &Path, batch_bytes: usize, kept: usize) {
    let len = std::fs::metadata(log).unwrap().len() as usize;
    let file = std::fs::OpenOptions::new().write(true).open(log).unwrap();
    file.set_len((len - batch_bytes + kept) as u64).unwrap();
}

#[test]
fn a_batch_a_crash_cut_short_leaves_none_of_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = new_session(&store);
    session
        .ingest(vec![Event::user("before").with_id("before")])
        .unwrap();
    let log = session.paths().raw_traces();
    let before = std::fs::metadata(&log).unwrap().len() as usize;
    let batch: Vec<Event> = (0..5)
        .map(|n| Event::assistant(format!("part {n} ").repeat(50)).with_id(format!("b{n}")))
        .collect();
    session.ingest(batch).unwrap();
    let batch_bytes = std::fs::metadata(&log).unwrap().len() as usize - before;
    drop(session);
    // The writer was killed with two and a half of the five lines written.
    cut_last_batch_to(&log, batch_bytes, batch_bytes / 2);
    // And the next writer was killed too, having taken the lock but before
    // it repaired the log: the record of the batch must outlive it.
    drop(agentmem::files::lock::SessionLock::acquire(&session_dir(dir.path()), SESSION).unwrap());

    let reader = store
        .read_session(&AgentId::default(), &session_id())
        .unwrap();
    assert_eq!(ids(reader.events()), ["before"], "a reader sees none of it");
    drop(reader);
    let mut session = store
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    assert_eq!(
        ids(session.events()),
        ["before"],
        "none of the batch is kept"
    );
    let recovered = session
        .recoveries()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>();
    assert!(
        recovered.len() == 1 && recovered[0].contains("cut short"),
        "{recovered:?}"
    );
    let aside = std::fs::read(log.with_file_name("raw_traces.jsonl.corrupt")).unwrap();
    assert_eq!(
        aside.len(),
        batch_bytes / 2 + 1,
        "its bytes are set aside, not lost"
    );
    // The batch can be sent again, whole.
    let again: Vec<Event> = (0..5)
        .map(|n| Event::assistant("again").with_id(format!("b{n}")))
        .collect();
    assert_eq!(session.ingest(again).unwrap().appended, 5);
    drop(session);
    let session = store
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    assert!(
        session.recoveries().is_empty(),
        "{:?}",
        session.recoveries()
    );
    assert_eq!(session.events().len(), 6);
}

#[test]
fn a_whole_batch_is_kept_after_compactions_shrink_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = new_session(&store);
    session.ingest(history()).unwrap();
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    let active = ids(session.events());
    drop(session);
    // The lock file still names the first batch, which ran past the
    // shrunk log's end: the log was replaced since, and nothing is cut.
    let session = store
        .open_session(&AgentId::default(), &session_id())
        .unwrap();
    assert!(
        session.recoveries().is_empty(),
        "{:?}",
        session.recoveries()
    );
    assert_eq!(ids(session.events()), active);
}
