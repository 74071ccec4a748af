//! The storage seam's conformance suite: one source of cases, run against
//! the files backend and the PostgreSQL backend (on the database in
//! `AGENTMEM_TEST_DATABASE_URL`, which `scripts/postgres run` provides).
//!
//! Each backend is a [`Backend`]: hosts that share one store (two `Store`s
//! on one data directory; two connections to one database), and a way to
//! kill a writer's hold the way its death would.

use std::sync::atomic::{AtomicUsize, Ordering};

use agentmem::config::DatabaseUrl;
use agentmem::files::snapshot::Snapshot;
use agentmem::storage::copy::{copy_session, Copied};
use agentmem::storage::{
    CommitMemory, CompactionCommit, EventRange, SessionWriter, SnapshotFields, Storage,
};
use agentmem::{AgentId, Durability, Error, Event, SessionId, Store};
use agentmem_postgres::PgStorage;

/// A backend under test.
trait Backend {
    /// A new host on the backend's shared store.
    fn host(&self) -> Box<dyn Storage>;
    /// The store engine sessions on the backend take their settings from
    /// (for files, the store whose folders keep them).
    fn settings(&self) -> Store;
    /// Ends `writer`'s hold on its session as the death of its process
    /// would, and hands back what is left of it (if anything).
    fn kill_holder(&self, writer: Box<dyn SessionWriter>) -> Option<Box<dyn SessionWriter>>;
}

struct Files {
    dir: tempfile::TempDir,
}

impl Backend for Files {
    fn host(&self) -> Box<dyn Storage> {
        Box::new(self.settings().storage())
    }

    fn settings(&self) -> Store {
        Store::open(self.dir.path(), Durability::Batch).unwrap()
    }

    /// A dead process's `lock` file is unlocked by its kernel, as dropping
    /// the writer unlocks it here.
    fn kill_holder(&self, writer: Box<dyn SessionWriter>) -> Option<Box<dyn SessionWriter>> {
        drop(writer);
        None
    }
}

struct Postgres {
    url: DatabaseUrl,
    /// Where sessions on the database would be kept in files: stays empty.
    dir: tempfile::TempDir,
}

impl Backend for Postgres {
    fn host(&self) -> Box<dyn Storage> {
        Box::new(PgStorage::connect(&self.url, Default::default()).unwrap())
    }

    fn settings(&self) -> Store {
        Store::open(self.dir.path(), Durability::Batch).unwrap()
    }

    /// Terminates the holder's server connection (`pg_terminate_backend`),
    /// as the server does to a dead client's; the writer object lives on.
    fn kill_holder(&self, writer: Box<dyn SessionWriter>) -> Option<Box<dyn SessionWriter>> {
        let mut admin = postgres::Client::connect(self.url.expose(), postgres::NoTls).unwrap();
        let killed = admin
            .query(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l \
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
                   AND l.classid::bigint = (hashtextextended($1, 0) >> 32) & 4294967295 \
                   AND l.objid::bigint = hashtextextended($1, 0) & 4294967295",
                &[&format!(
                    "agentmem session {}/{}",
                    AGENT_OF.with(|a| a.borrow().clone()),
                    writer.id()
                )],
            )
            .unwrap();
        assert_eq!(killed.len(), 1, "one connection held the lock");
        Some(writer)
    }
}

std::thread_local! {
    /// The agent the running case works in (each case has its own, so
    /// cases share one database without meeting).
    static AGENT_OF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn fresh_agent() -> AgentId {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "conf-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    AGENT_OF.with(|a| *a.borrow_mut() = name.clone());
    AgentId::new(name).unwrap()
}

fn sid(id: &str) -> SessionId {
    SessionId::new(id).unwrap()
}

fn with_id(mut event: Event, id: &str) -> Event {
    event.id = id.to_owned();
    event
}

fn ids(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.id.as_str()).collect()
}

/// Three turns: a user message and an answer each, ids `u1`, `a1`, ….
fn three_turns() -> Vec<Event> {
    (1..=3)
        .flat_map(|n| {
            [
                with_id(Event::user(format!("question {n}")), &format!("u{n}")),
                with_id(Event::assistant(format!("answer {n}")), &format!("a{n}")),
            ]
        })
        .collect()
}

fn appends_are_idempotent_by_id_and_kept_in_order(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    let first = writer.append(three_turns()[..4].to_vec()).unwrap();
    assert_eq!((first.events.len(), first.duplicates), (4, 0));
    assert_eq!(first.events[2].turn_id, "turn_0002");
    assert_eq!(first.events[3].seq, 2);
    // A retry of the last two, and the rest: only the rest is new.
    let again = writer.append(three_turns()[2..].to_vec()).unwrap();
    assert_eq!((again.events.len(), again.duplicates), (2, 2));
    // Ids repeated inside a batch count once; events without an id get one.
    let batch = vec![
        with_id(Event::user("four"), "u4"),
        with_id(Event::assistant("four again"), "u4"),
        Event::assistant("no id"),
    ];
    let third = writer.append(batch).unwrap();
    assert_eq!((third.events.len(), third.duplicates), (2, 1));
    assert!(third.events[1].id.starts_with("ev_"));
    let read = store
        .read_events(&agent, &sid("s"), EventRange::All)
        .unwrap();
    assert_eq!(ids(&read)[..7], ["u1", "a1", "u2", "a2", "u3", "a3", "u4"]);
    assert_eq!(read[7].content, "no id");
    let meta = store.session_meta(&agent, &sid("s")).unwrap();
    assert_eq!((meta.events, meta.turns), (8, 4));
    assert_eq!(meta.title.as_deref(), Some("question 1"));
    // A new writer (after this one) knows the ids too.
    drop(writer);
    let mut writer = store.lock_session(&agent, &sid("s")).unwrap();
    let retry = writer.append(three_turns()).unwrap();
    assert_eq!((retry.events.len(), retry.duplicates), (0, 6));
}

fn ranges_and_tails_read_by_position(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()).unwrap();
    let read = |range| store.read_events(&agent, &sid("s"), range).unwrap();
    assert_eq!(
        ids(&read(EventRange::Span { start: 1, end: 4 })),
        ["a1", "u2", "a2"]
    );
    assert_eq!(ids(&read(EventRange::Span { start: 5, end: 99 })), ["a3"]);
    assert!(read(EventRange::Span { start: 9, end: 12 }).is_empty());
    assert_eq!(ids(&read(EventRange::Tail(2))), ["u3", "a3"]);
    assert_eq!(read(EventRange::Tail(60)).len(), 6);
    let count = store.event_count(&agent, &sid("s")).unwrap();
    assert_eq!((count.active, count.archived), (6, 0));
}

fn a_bad_or_interrupted_batch_stores_nothing(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()[..2].to_vec()).unwrap();
    let orphan = Event::tool_result("", "a result without its call id");
    let bad = vec![with_id(Event::user("kept out"), "x1"), orphan];
    assert!(matches!(
        writer.append(bad),
        Err(Error::InvalidEvent { index: 1, .. })
    ));
    assert_eq!(store.event_count(&agent, &sid("s")).unwrap().active, 2);
    // The holder dies: what it still tries to append is stored nowhere,
    // and the next writer finds the log as it was.
    if let Some(mut dead) = backend.kill_holder(writer) {
        assert!(dead.append(three_turns()[2..].to_vec()).is_err());
    }
    let mut next = store.lock_session(&agent, &sid("s")).unwrap();
    assert_eq!(store.event_count(&agent, &sid("s")).unwrap().active, 2);
    let resumed = next.append(three_turns()).unwrap();
    assert_eq!((resumed.events.len(), resumed.duplicates), (4, 2));
    assert_eq!(resumed.events[0].turn_id, "turn_0002");
}

fn a_compaction_commits_the_snapshot_and_the_archive_move_together(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()).unwrap();
    let summary = with_id(Event::assistant("turns 1 and 2, summarized"), "sum1");
    writer
        .commit_compaction(CompactionCommit {
            archived: 4,
            snapshot: Snapshot {
                compactions: 1,
                base: vec![summary.clone()],
                ..Snapshot::default()
            },
            fields: SnapshotFields::FromTheMove,
            memory: CommitMemory::Elsewhere,
        })
        .unwrap();
    let snapshot = store.snapshot(&agent, &sid("s")).unwrap().unwrap();
    assert_eq!(snapshot.base, [summary]);
    assert_eq!(snapshot.active_first_id.as_deref(), Some("u3"));
    assert_eq!(
        (snapshot.tail_events, snapshot.archived_events),
        (2, Some(4))
    );
    let active = store
        .read_events(&agent, &sid("s"), EventRange::All)
        .unwrap();
    assert_eq!(ids(&active), ["u3", "a3"]);
    let archived = store.archived_events(&agent, &sid("s")).unwrap();
    assert_eq!(ids(&archived), ["u1", "a1", "u2", "a2"]);
    let history = store.full_history(&agent, &sid("s")).unwrap();
    assert_eq!(ids(&history), ["u1", "a1", "u2", "a2", "u3", "a3"]);
    let count = store.event_count(&agent, &sid("s")).unwrap();
    assert_eq!((count.active, count.archived), (2, 4));
    // Archived ids stay known, also to the next writer.
    drop(writer);
    let mut writer = store.lock_session(&agent, &sid("s")).unwrap();
    let retry = writer.append(three_turns()).unwrap();
    assert_eq!((retry.events.len(), retry.duplicates), (0, 6));
    let more = writer
        .append(vec![with_id(Event::user("four"), "u4")])
        .unwrap();
    assert_eq!(more.events[0].turn_id, "turn_0004");
    let meta = store.session_meta(&agent, &sid("s")).unwrap();
    assert_eq!((meta.events, meta.archived_events), (7, 4));
}

fn a_fork_copies_through_its_turn(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()).unwrap();
    let meta = store
        .fork_session(&agent, &sid("s"), Some("2"), &sid("f"))
        .unwrap();
    assert_eq!(meta.forked_from.as_deref(), Some("s"));
    assert_eq!(meta.forked_at_turn.as_deref(), Some("turn_0002"));
    let forked = store
        .read_events(&agent, &sid("f"), EventRange::All)
        .unwrap();
    assert_eq!(ids(&forked), ["u1", "a1", "u2", "a2"]);
    assert!(matches!(
        store.fork_session(&agent, &sid("s"), None, &sid("f")),
        Err(Error::SessionExists { .. })
    ));
    assert!(matches!(
        store.fork_session(&agent, &sid("s"), Some("9"), &sid("g")),
        Err(Error::TurnNotFound { .. })
    ));
    // The two share nothing afterwards.
    let mut fork_writer = store.lock_session(&agent, &sid("f")).unwrap();
    fork_writer
        .append(vec![with_id(Event::user("only in the fork"), "x")])
        .unwrap();
    assert_eq!(store.event_count(&agent, &sid("s")).unwrap().active, 6);
    assert_eq!(store.event_count(&agent, &sid("f")).unwrap().active, 5);
    // A fork of a compacted session keeps its archive and snapshot.
    writer
        .commit_compaction(CompactionCommit {
            archived: 2,
            snapshot: Snapshot {
                compactions: 1,
                ..Snapshot::default()
            },
            fields: SnapshotFields::FromTheMove,
            memory: CommitMemory::Elsewhere,
        })
        .unwrap();
    store
        .fork_session(&agent, &sid("s"), None, &sid("h"))
        .unwrap();
    assert_eq!(
        ids(&store.archived_events(&agent, &sid("h")).unwrap()),
        ["u1", "a1"]
    );
    assert_eq!(
        store
            .snapshot(&agent, &sid("h"))
            .unwrap()
            .unwrap()
            .compactions,
        1
    );
}

fn a_delete_waits_for_no_writer_and_removes_everything(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()).unwrap();
    store.create_session(&agent, &sid("t")).unwrap();
    let other_host = backend.host();
    assert!(matches!(
        other_host.delete_session(&agent, &sid("s")),
        Err(Error::SessionLocked { .. })
    ));
    drop(writer);
    other_host.delete_session(&agent, &sid("s")).unwrap();
    assert!(matches!(
        store.session_meta(&agent, &sid("s")),
        Err(Error::SessionNotFound { .. })
    ));
    let listed: Vec<String> = store
        .list_sessions(&agent)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(listed, ["t"]);
    // Its id is free again, with nothing of the old session in it.
    store.create_session(&agent, &sid("s")).unwrap();
    assert_eq!(store.event_count(&agent, &sid("s")).unwrap().active, 0);
}

fn one_writer_per_session_across_hosts_and_readers_never_wait(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut writer = store.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()[..2].to_vec()).unwrap();
    let second_host = backend.host();
    let refused = second_host.lock_session(&agent, &sid("s")).unwrap_err();
    assert!(matches!(refused, Error::SessionLocked { .. }), "{refused}");
    assert!(
        refused.to_string().contains("session s is locked by pid"),
        "{refused}"
    );
    assert!(matches!(
        store.create_session(&agent, &sid("s")),
        Err(Error::SessionExists { .. })
    ));
    assert!(matches!(
        second_host.lock_session(&agent, &sid("nope")),
        Err(Error::SessionNotFound { .. })
    ));
    // Readers read while the writer holds the session, and see what it committed.
    writer.append(three_turns()[2..4].to_vec()).unwrap();
    let read = second_host
        .read_events(&agent, &sid("s"), EventRange::All)
        .unwrap();
    assert_eq!(read.len(), 4);
    assert_eq!(second_host.list_sessions(&agent).unwrap()[0].events, 4);
    // Other sessions are not held.
    second_host.create_session(&agent, &sid("t")).unwrap();
    // The holder dies: the lock is free again for another host.
    let leftover = backend.kill_holder(writer);
    let mut taken = second_host.lock_session(&agent, &sid("s")).unwrap();
    taken.append(three_turns()).unwrap();
    drop(leftover);
    assert_eq!(store.event_count(&agent, &sid("s")).unwrap().active, 6);
}

fn sessions_list_most_recent_first(backend: &dyn Backend) {
    let (agent, store) = (fresh_agent(), backend.host());
    let mut old = store.create_session(&agent, &sid("old")).unwrap();
    let mut new = store.create_session(&agent, &sid("new")).unwrap();
    let mut early = Event::user("early");
    early.ts = 1_000.0;
    let mut late = Event::user("late");
    late.ts = 2_000_000_000.0;
    old.append(vec![early]).unwrap();
    new.append(vec![late]).unwrap();
    let listed = store.list_sessions(&agent).unwrap();
    let order: Vec<&str> = listed.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, ["new", "old"]);
    assert_eq!(listed[1].created, 1_000.0);
    assert!(store.list_sessions(&fresh_agent()).unwrap().is_empty());
}

fn a_copy_from_files_reads_back_the_same_and_resumes(backend: &dyn Backend) {
    let (agent, target) = (fresh_agent(), backend.host());
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open(dir.path(), Durability::Batch)
        .unwrap()
        .storage();
    let mut writer = source.create_session(&agent, &sid("s")).unwrap();
    writer.append(three_turns()).unwrap();
    writer
        .commit_compaction(CompactionCommit {
            archived: 2,
            snapshot: Snapshot {
                compactions: 1,
                base: vec![with_id(Event::assistant("turn 1, summarized"), "sum")],
                ..Snapshot::default()
            },
            fields: SnapshotFields::FromTheMove,
            memory: CommitMemory::Elsewhere,
        })
        .unwrap();
    drop(writer);
    source
        .fork_session(&agent, &sid("s"), Some("2"), &sid("f"))
        .unwrap();
    for id in ["s", "f"] {
        assert!(
            matches!(copy_session(&source, &*target, &agent, &sid(id)).unwrap(), Copied::Events(n) if n > 0)
        );
        assert_eq!(
            copy_session(&source, &*target, &agent, &sid(id)).unwrap(),
            Copied::AlreadyThere
        );
    }
    let (from, to) = (
        source.session_meta(&agent, &sid("f")).unwrap(),
        target.session_meta(&agent, &sid("f")).unwrap(),
    );
    assert_eq!(
        (to.forked_from, to.created, to.title),
        (from.forked_from, from.created, from.title)
    );
    assert_eq!(
        target.snapshot(&agent, &sid("s")).unwrap(),
        source.snapshot(&agent, &sid("s")).unwrap()
    );
    // Events the source gained since are what a second run copies.
    let mut writer = source.lock_session(&agent, &sid("s")).unwrap();
    writer
        .append(vec![with_id(Event::user("four"), "u4")])
        .unwrap();
    drop(writer);
    assert_eq!(
        copy_session(&source, &*target, &agent, &sid("s")).unwrap(),
        Copied::Events(1)
    );
    assert_eq!(
        target
            .list_agents()
            .unwrap()
            .iter()
            .filter(|a| **a == agent)
            .count(),
        1
    );
}

/// Ten turns of a coding agent: a question, a tool call and its result,
/// an answer; ids and times fixed, so two backends store the same events.
fn coding_turns(turns: std::ops::Range<usize>) -> Vec<Event> {
    turns
        .flat_map(|n| {
            let call = format!("call_{n}");
            let output = format!("test_{n} ... ok\n").repeat(40);
            [
                Event::user(format!("turn {n}: run test suite {n} and fix what fails")),
                Event::tool_call(
                    &call,
                    "bash",
                    serde_json::json!({"cmd": format!("cargo test -p crate{n}")}),
                ),
                Event::tool_result(&call, output),
                Event::assistant(format!(
                    "Suite {n} passes; FooError{n} in src/lib{n}.rs is fixed."
                )),
            ]
            .into_iter()
            .enumerate()
            .map(move |(k, event)| Event {
                ts: 1_700_000_000.0 + (n * 4 + k) as f64,
                ..with_id(event, &format!("e{n}-{k}"))
            })
        })
        .collect()
}

/// What the engine loop leaves on a backend, as a reader reads it back.
#[derive(Debug, PartialEq)]
struct LoopRecord {
    /// Each stored event: id, turn, seq, content.
    archive: Vec<(String, String, u64, String)>,
    active: Vec<(String, String, u64, String)>,
    /// The snapshot's base and the move it records.
    base: Vec<String>,
    moved: (Option<String>, usize, Option<usize>, u64),
    /// The last context prepared, as a fresh reader prepares it.
    payload: serde_json::Value,
}

fn rows(events: &[Event]) -> Vec<(String, String, u64, String)> {
    events
        .iter()
        .map(|e| (e.id.clone(), e.turn_id.clone(), e.seq, e.content.clone()))
        .collect()
}

/// Runs the engine's loop on `backend` (ingest, prepare before each call,
/// a compaction, more turns) and reads the session back: a new reader sees
/// what the writer saw, and the record is the same on every backend.
fn engine_loop(backend: &dyn Backend) -> LoopRecord {
    use agentmem::session::Access;
    use agentmem::{CompactOptions, PrepareRequest, Target};
    let (agent, settings) = (fresh_agent(), backend.settings());
    let storage: std::sync::Arc<dyn Storage> = backend.host().into();
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let mut session = settings
        .create_session_in(&storage, &agent, Some(sid("loop")))
        .unwrap();
    for turn in coding_turns(0..8).chunks(4) {
        let report = session.ingest(turn.to_vec()).unwrap();
        assert_eq!((report.appended, report.duplicates), (4, 0));
        session.prepare(&request).unwrap();
    }
    // A retry after a lost acknowledgement stores nothing twice.
    assert_eq!(session.ingest(coding_turns(7..8)).unwrap().duplicates, 4);
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    // Sent again once compacted away: known from the archive.
    assert_eq!(session.ingest(coding_turns(0..1)).unwrap().duplicates, 4);
    session.ingest(coding_turns(8..10)).unwrap();
    let seen = session.prepare(&request).unwrap().payload.to_value();
    let (seen_events, seen_history) = (session.view_events(), session.full_history().unwrap());
    session.close().unwrap();

    let reader = settings
        .open_session_in(&storage, &agent, &sid("loop"), Access::Read)
        .unwrap();
    assert_eq!(rows(&reader.view_events()), rows(&seen_events));
    assert_eq!(rows(&reader.full_history().unwrap()), rows(&seen_history));
    let mut writer = settings
        .open_session_in(
            &storage,
            &agent,
            &sid("loop"),
            Access::Write(Durability::Batch),
        )
        .unwrap();
    let payload = writer.prepare(&request).unwrap().payload.to_value();
    assert_eq!(
        payload, seen,
        "a reopened session prepares what the live one did"
    );
    drop(writer);

    let host = backend.host();
    let snapshot = host.snapshot(&agent, &sid("loop")).unwrap().unwrap();
    let active = host
        .read_events(&agent, &sid("loop"), EventRange::All)
        .unwrap();
    let count = host.event_count(&agent, &sid("loop")).unwrap();
    assert_eq!(
        (count.active, count.archived),
        (active.len(), 40 - active.len())
    );
    LoopRecord {
        archive: rows(&host.archived_events(&agent, &sid("loop")).unwrap()),
        active: rows(&active),
        base: snapshot.base.iter().map(|e| e.content.clone()).collect(),
        moved: (
            snapshot.active_first_id,
            snapshot.tail_events,
            snapshot.archived_events,
            snapshot.compactions,
        ),
        payload,
    }
}

fn the_engine_loop_reads_back_as_the_session_saw_it(backend: &dyn Backend) {
    let record = engine_loop(backend);
    assert_eq!(record.archive.len() + record.active.len(), 40);
    assert_eq!(record.moved.3, 1);
}

/// The engine loop leaves the same record on PostgreSQL as on files.
#[test]
fn the_engine_loop_is_the_same_on_both_backends() {
    let Some(postgres) = postgres() else { return };
    let on_files = engine_loop(&*files().unwrap());
    assert_eq!(engine_loop(&*postgres), on_files);
}

/// A session on PostgreSQL keeps what it leaves in memory in the database
/// (an ending's episode, its working memory's update, a large tool output
/// the write-time guard evicts), and writes no file.
#[test]
fn a_session_on_postgres_keeps_its_memory_in_the_database_and_writes_no_file() {
    let Some(postgres) = postgres() else { return };
    let (agent, settings) = (fresh_agent(), postgres.settings());
    let storage: std::sync::Arc<dyn Storage> = postgres.host().into();
    let mut session = settings
        .create_session_in(&storage, &agent, Some(sid("r")))
        .unwrap();
    session.ingest(three_turns()).unwrap();
    let memory = std::sync::Arc::clone(&storage).memory();
    let episode = session.end().unwrap().expect("the session said something");
    assert_eq!(memory.read_episodes(&agent).unwrap(), [episode]);
    let patch = agentmem::StatePatch::from_json(serde_json::json!({"task": "x"})).unwrap();
    assert_eq!(
        session.update_working_memory(patch, None).unwrap().version,
        1
    );
    let output = "line of a very large log file\n".repeat(20_000);
    let huge = vec![
        Event::tool_call("c9", "cat", serde_json::json!({"path": "big.log"})),
        Event::tool_result("c9", output.clone()),
    ];
    assert_eq!(session.ingest(huge).unwrap().evicted, 1);
    assert_eq!(
        memory.read_evicted(&agent, &sid("r"), "c9").unwrap(),
        output
    );
    assert_eq!(
        session.events().len(),
        9,
        "six, the update, the call and its result"
    );
    drop(session);
    assert_eq!(storage.event_count(&agent, &sid("r")).unwrap().active, 9);
    let files: Vec<_> = std::fs::read_dir(settings.root()).unwrap().collect();
    assert!(files.is_empty(), "no file written: {files:?}");
}

/// Every migration is recorded once, in order, and a second run applies
/// none; the scoring function migration 3 made is gone after them.
#[test]
fn migrations_apply_once_each_in_order() {
    let Some(url) = agentmem_postgres::test_database("the migrations case") else {
        return;
    };
    PgStorage::connect(&url, Default::default()).unwrap();
    let mut client = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    assert_eq!(
        agentmem_postgres::migrations::migrate(&mut client).unwrap(),
        Vec::<i32>::new()
    );
    let recorded: Vec<i32> = client
        .query(
            "SELECT version FROM agentmem_schema_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let known: Vec<i32> = agentmem_postgres::migrations::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(recorded, known);
    assert_eq!(known, (1..=known.len() as i32).collect::<Vec<_>>());
    let functions: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_proc WHERE proname = 'agentmem_bm25'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(functions, 0);
}

/// A real Claude Code transcript, imported.
fn imported_transcript() -> Vec<Event> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/trajectories/claude-code/session-3fe1b6bc.jsonl");
    let (_, imported) = agentmem_import::read(&path, None).unwrap();
    assert!(imported.events.len() > 100, "a transcript of some length");
    imported.events
}

/// Queries asked of the imported transcript: words it holds often, rarely,
/// stemmed differently, together and not at all.
const QUERIES: &[&str] = &[
    "metrics plugin for codex sessions",
    "where is the real token data location?",
    "Which tests failed?",
    "implementation must be full, no TODO",
    "tool usage example",
    "zyxwvut",
];

/// A search hit as compared: its session, event, excerpt and context events.
type Hit = (String, String, String, Vec<String>);

/// The hits as compared across backends.
fn compared(hits: &[agentmem::SearchHit]) -> Vec<Hit> {
    hits.iter()
        .map(|h| {
            let context = h.context.iter().map(|c| c.event_id.clone()).collect();
            (
                h.session.clone(),
                h.event_id.clone(),
                h.excerpt.clone(),
                context,
            )
        })
        .collect()
}

/// What search and recall answered on one backend, ranks and scores apart.
#[derive(Debug, Clone, PartialEq)]
struct Answers {
    /// Per query: each hit's session, event, excerpt and context events.
    hits: Vec<Vec<Hit>>,
    /// Per query: each recall candidate's event, best first.
    candidates: Vec<Vec<String>>,
    /// Per query: the recalled block at 1,000 tokens, from another session.
    blocks: Vec<String>,
    /// Per query: the same with [`Letters`] vectors.
    with_vectors: Vec<String>,
}

/// A toy embedder: how often each letter occurs.
struct Letters;

impl agentmem::Embedder for Letters {
    fn model(&self) -> &str {
        "letters"
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut counts = vec![0.5f32; 26];
                for c in text
                    .to_ascii_lowercase()
                    .bytes()
                    .filter(u8::is_ascii_lowercase)
                {
                    counts[usize::from(c - b'a')] += 1.0;
                }
                counts
            })
            .collect())
    }
}

/// The scores beside the answers (compared within rounding).
type Scores = Vec<Vec<f64>>;

/// The transcript split into two sessions, a third forked from the first
/// and deleted, then every query searched and recalled.
fn search_and_recall(backend: &dyn Backend) -> (Answers, Scores) {
    let (agent, host) = (fresh_agent(), backend.host());
    let events = imported_transcript();
    let (first, second) = events.split_at(events.len() / 2);
    for (id, part) in [("early", first), ("late", second)] {
        let mut writer = host.create_session(&agent, &sid(id)).unwrap();
        writer.append(part.to_vec()).unwrap();
    }
    host.fork_session(&agent, &sid("early"), None, &sid("gone"))
        .unwrap();
    // Indexed, then deleted: the index forgets it.
    host.search_index(&agent).unwrap();
    host.delete_session(&agent, &sid("gone")).unwrap();
    let index = host.search_index(&agent).unwrap();
    let mut answers = Answers {
        hits: Vec::new(),
        candidates: Vec::new(),
        blocks: Vec::new(),
        with_vectors: Vec::new(),
    };
    let mut scores = Vec::new();
    // Recall scores the vectors there are: all of them, here.
    index.embed_missing(&Letters).unwrap();
    for query in QUERIES {
        let hits = index.search(query, &Default::default()).unwrap();
        answers.hits.push(compared(&hits));
        let candidates = index
            .candidates(
                query,
                &[agentmem::search::index::DocKind::Event],
                Some("late"),
                50,
            )
            .unwrap();
        answers
            .candidates
            .push(candidates.iter().map(|c| c.reference.clone()).collect());
        scores.push(candidates.iter().map(|c| c.bm25).collect());
        let mut request = agentmem::RecallRequest::new(*query, 1_000);
        request.exclude_session = Some("late".into());
        request.asked_at = Some(1_768_200_000.0);
        let recalled = agentmem::memory::recall::recall(
            &*index,
            &request,
            agentmem::Encoding::O200kBase.tokenizer(),
            None,
            None,
            Default::default(),
        )
        .unwrap();
        answers.blocks.push(recalled.block);
        let recalled = agentmem::memory::recall::recall(
            &*index,
            &request,
            agentmem::Encoding::O200kBase.tokenizer(),
            Some(&Letters),
            None,
            Default::default(),
        )
        .unwrap();
        answers.with_vectors.push(recalled.block);
    }
    let tool_only = agentmem::SearchFilter {
        role: Some(agentmem::SearchRole::Tool),
        limit: 5,
        ..Default::default()
    };
    let hits = index.search("file", &tool_only).unwrap();
    assert!(hits.iter().all(|h| h.role == agentmem::SearchRole::Tool));
    answers.hits.push(compared(&hits));
    // Another agent, with enough events that "cargo" is a common term: it only narrows.
    let agent = fresh_agent();
    let bulk: Vec<Event> = (0..2_500)
        .map(|i| match i {
            7 => Event::user("cargo build failed in the parser"),
            9 => Event::user("the parser module was renamed"),
            _ => Event::user(format!("cargo build step {i} finished")),
        })
        .enumerate()
        .map(|(i, event)| with_id(event, &format!("bulk-{i}")))
        .collect();
    let mut writer = host.create_session(&agent, &sid("bulk")).unwrap();
    writer.append(bulk).unwrap();
    drop(writer);
    let hits = host
        .search_index(&agent)
        .unwrap()
        .search("cargo parser", &Default::default())
        .unwrap();
    answers.hits.push(compared(&hits));
    (answers, scores)
}

/// A writer's events are embedded in the background, with no wait and no
/// recall asking: the index soon holds a vector for each, and a recall then
/// says none lacks one.
fn a_writers_events_are_embedded_in_the_background(backend: &dyn Backend) {
    let storage: std::sync::Arc<dyn Storage> = std::sync::Arc::from(backend.host());
    let agent = fresh_agent();
    let store = backend
        .settings()
        .with_embedder(std::sync::Arc::new(Letters));
    let mut session = store
        .create_session_in(&storage, &agent, Some(sid("live")))
        .unwrap();
    session.ingest(three_turns()).unwrap();
    let index = storage.search_index(&agent).unwrap();
    let everything = [agentmem::search::index::DocKind::Event];
    let embedded = || {
        let indexed: u64 = index.indexed_sessions().unwrap().iter().map(|s| s.1).sum();
        indexed == 6 && index.unembedded("letters", &everything, None).unwrap() == 0
    };
    // A guard against a worker that never comes, not a measure of speed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !embedded() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background embedder never caught up"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let recalled = store
        .recall_on(
            &*storage,
            &agent,
            &agentmem::RecallRequest::new("answer 2", 500),
            agentmem::Encoding::O200kBase.tokenizer(),
        )
        .unwrap();
    let coverage = recalled.embedding.unwrap();
    assert_eq!((coverage.unembedded, coverage.failing), (0, None));
    assert!(recalled.items.iter().all(|item| item.vector.is_some()));
    // Waiting has nothing left to do.
    store.embed_pending_in(&storage, &agent).unwrap();
    let status = store.embedding_status(&*storage, &agent).unwrap();
    assert_eq!((status.embedded, status.failing), (6, None));
}

/// Search and recall find what the transcript says, and nothing of a deleted session.
fn search_and_recall_find_the_transcript(backend: &dyn Backend) {
    let (answers, _) = search_and_recall(backend);
    assert!(!answers.hits[0].is_empty() && !answers.hits[1].is_empty());
    assert!(
        answers.hits[0][0].2.contains('['),
        "the excerpt marks what matched"
    );
    assert!(answers.hits.iter().flatten().all(|h| h.0 != "gone"));
    assert!(answers.hits[5].is_empty(), "a word nowhere finds nothing");
    let common: Vec<&str> = answers.hits[7].iter().map(|h| h.1.as_str()).collect();
    assert_eq!(
        common,
        ["bulk-7", "bulk-9"],
        "both words first, then the rare one"
    );
    assert!(answers.hits[7][0].2.contains("[cargo]") && answers.hits[7][0].2.contains("[parser]"));
    assert!(answers.candidates.iter().flatten().count() > 0);
    assert!(!answers.blocks[0].is_empty());
    assert!(
        answers.with_vectors[5].len() > answers.blocks[5].len(),
        "vectors recall what shares no word with the query"
    );
}

/// The same queries find the same events in the same order, with the same
/// excerpts and BM25 scores, and recall the same blocks, on both backends.
#[test]
fn search_and_recall_answer_alike_on_both_backends() {
    let Some(postgres) = postgres() else { return };
    let (on_files, files_scores) = search_and_recall(&*files().unwrap());
    let (on_postgres, postgres_scores) = search_and_recall(&*postgres);
    let asked = QUERIES.iter().chain(["file (tool)", "cargo parser"].iter());
    for (query, (files, postgres)) in asked.zip(on_files.hits.iter().zip(&on_postgres.hits)) {
        assert_eq!(postgres, files, "search {query:?}");
    }
    for (i, query) in QUERIES.iter().enumerate() {
        assert_eq!(
            on_postgres.candidates[i], on_files.candidates[i],
            "candidates for {query:?}"
        );
        assert_eq!(
            on_postgres.blocks[i], on_files.blocks[i],
            "recall {query:?}"
        );
        assert_eq!(
            on_postgres.with_vectors[i], on_files.with_vectors[i],
            "recall with vectors {query:?}"
        );
    }
    for (files, postgres) in files_scores
        .iter()
        .flatten()
        .zip(postgres_scores.iter().flatten())
    {
        assert!(
            (files - postgres).abs() <= 1e-9 * files.abs().max(1.0),
            "BM25 {postgres} on postgres, {files} on files"
        );
    }
}

/// On PostgreSQL a writer's appends are indexed as they commit, before
/// anything searches: once the host is gone (which waits for its indexer),
/// the history index holds every event appended, each once, and an index
/// opened then has nothing to catch up.
#[test]
fn appends_are_indexed_as_they_commit_on_postgres() {
    let Some(url) = agentmem_postgres::test_database("the postgres index feeder case") else {
        return;
    };
    let agent = fresh_agent();
    let host = PgStorage::connect(&url, Default::default()).unwrap();
    let mut writer = host.create_session(&agent, &sid("fed")).unwrap();
    for turn in 0..5 {
        writer
            .append(vec![
                Event::user(format!("turn {turn}: the parser test fails")),
                Event::assistant("Borrow the tokens immutably."),
            ])
            .unwrap();
    }
    writer
        .append(vec![with_id(Event::user("one more"), "e-last")])
        .unwrap();
    // Appended again: idempotent by id, indexed once.
    writer
        .append(vec![with_id(Event::user("one more"), "e-last")])
        .unwrap();
    drop(writer);
    drop(host);
    let mut admin = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    let counted = |admin: &mut postgres::Client| -> (i64, i64) {
        let row = admin
            .query_one(
                "SELECT (SELECT events FROM agentmem_search_sessions
                         WHERE agent_id = $1 AND session_id = 'fed'),
                        (SELECT count(*) FROM agentmem_search_docs
                         WHERE agent_id = $1 AND session_id = 'fed' AND kind = 'event')",
                &[&agent.as_str()],
            )
            .unwrap();
        (row.get::<_, Option<i64>>(0).unwrap_or(0), row.get(1))
    };
    assert_eq!(counted(&mut admin), (11, 11), "indexed before any search");
    let host = PgStorage::connect(&url, Default::default()).unwrap();
    let hits = host
        .search_index(&agent)
        .unwrap()
        .search("parser", &Default::default())
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(counted(&mut admin), (11, 11), "nothing added twice");
}

/// Search asked right after a batch is appended sees all of it, though the
/// process's indexer is still adding it: the index it opens catches up
/// with every session. (A prepare's recall, `search_index_as_fed`, leaves
/// the batch to the indexer instead of waiting on it.)
#[test]
fn search_right_after_an_append_sees_every_event_on_postgres() {
    let Some(url) = agentmem_postgres::test_database("the postgres catch-up case") else {
        return;
    };
    let agent = fresh_agent();
    let host = PgStorage::connect(&url, Default::default()).unwrap();
    let mut writer = host.create_session(&agent, &sid("busy")).unwrap();
    // Opened once first, so the next opening has no facts to copy (which
    // would wait on the indexer for the agent's lock).
    host.search_index(&agent).unwrap();
    let batch: Vec<Event> = (0..20_000)
        .map(|n| Event::user(format!("step {n} of the migration plan")))
        .collect();
    writer.append(batch).unwrap();
    let index = host.search_index(&agent).unwrap();
    assert_eq!(
        index.indexed_sessions().unwrap(),
        [("busy".to_owned(), 20_000)]
    );
    let hits = index.search("step 19999", &Default::default()).unwrap();
    assert_eq!(hits[0].ord, 19_999, "the last event, best: {hits:?}");
    assert!(host.search_index_as_fed(&agent).is_ok());
}

/// Every case, run against the backend `make` gives (`None`: not available here).
macro_rules! conformance {
    ($backend:ident, $make:expr, [$($case:ident),* $(,)?]) => {
        mod $backend {
            use super::*;
            $(
                #[test]
                fn $case() {
                    let make: fn() -> Option<Box<dyn Backend>> = $make;
                    if let Some(backend) = make() {
                        super::$case(&*backend);
                    }
                }
            )*
        }
    };
}

macro_rules! every_case {
    ($backend:ident, $make:expr) => {
        conformance!(
            $backend,
            $make,
            [
                appends_are_idempotent_by_id_and_kept_in_order,
                ranges_and_tails_read_by_position,
                a_bad_or_interrupted_batch_stores_nothing,
                a_compaction_commits_the_snapshot_and_the_archive_move_together,
                a_fork_copies_through_its_turn,
                a_delete_waits_for_no_writer_and_removes_everything,
                one_writer_per_session_across_hosts_and_readers_never_wait,
                sessions_list_most_recent_first,
                a_copy_from_files_reads_back_the_same_and_resumes,
                the_engine_loop_reads_back_as_the_session_saw_it,
                search_and_recall_find_the_transcript,
                a_writers_events_are_embedded_in_the_background,
            ]
        );
    };
}

fn files() -> Option<Box<dyn Backend>> {
    Some(Box::new(Files {
        dir: tempfile::tempdir().unwrap(),
    }))
}

/// The database of `AGENTMEM_TEST_DATABASE_URL`, if there is one.
fn postgres() -> Option<Box<dyn Backend>> {
    let url = agentmem_postgres::test_database("the postgres backend's conformance case")?;
    Some(Box::new(Postgres {
        url,
        dir: tempfile::tempdir().unwrap(),
    }))
}

every_case!(files_backend, files);
every_case!(postgres_backend, postgres);
