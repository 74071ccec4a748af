use super::*;

/// A session folder in a temporary agent folder.
struct Folder {
    _root: tempfile::TempDir,
    paths: SessionPaths,
    agent_dir: PathBuf,
}

fn folder() -> Folder {
    let root = tempfile::tempdir().unwrap();
    let agent_dir = root.path().join("agent");
    let paths = SessionPaths {
        dir: agent_dir.join("sessions").join("s1"),
    };
    std::fs::create_dir_all(&paths.dir).unwrap();
    Folder {
        _root: root,
        paths,
        agent_dir,
    }
}

fn open(folder: &Folder, access: Access) -> (SessionLog, Option<Snapshot>) {
    SessionLog::open(
        folder.paths.clone(),
        AgentId::new("default").unwrap(),
        SessionId::new("s1").unwrap(),
        access,
        RedactionPolicy::default(),
        folder.agent_dir.clone(),
    )
    .unwrap()
}

fn writer(folder: &Folder) -> SessionLog {
    open(folder, Access::Write(Durability::Batch)).0
}

fn ids(events: &[Arc<Event>]) -> Vec<&str> {
    events.iter().map(|e| e.id.as_str()).collect()
}

fn ids_in(path: &std::path::Path) -> Vec<String> {
    let events = jsonl::read_log(path).unwrap().events;
    events.into_iter().map(|e| e.id).collect()
}

fn append(log: &mut SessionLog, events: Vec<Event>) {
    let admitted = log.admit(events).unwrap();
    log.append(admitted.fresh).unwrap();
}

/// The first `n` of a short exchange, with ids `e1`, `e2`, ….
fn said(n: usize) -> Vec<Event> {
    let exchange = [
        Event::user("one"),
        Event::assistant("two"),
        Event::user("three"),
    ];
    (1..)
        .zip(exchange)
        .take(n)
        .map(|(number, event)| event.with_id(format!("e{number}")))
        .collect()
}

impl SessionLog {
    /// Appends `events` and closes the log.
    fn close_with(mut self, events: Vec<Event>) {
        append(&mut self, events);
        self.close().unwrap();
    }
}

#[test]
fn admitting_sets_aside_ids_the_session_holds_or_the_batch_repeats() {
    let folder = folder();
    let mut log = writer(&folder);
    append(&mut log, vec![Event::user("first").with_id("e1")]);
    let admitted = log
        .admit(vec![
            Event::user("again").with_id("e1"),
            Event::assistant("new").with_id("e2"),
            Event::assistant("twice").with_id("e2"),
            Event::assistant("no id yet"),
        ])
        .unwrap();
    assert_eq!(admitted.duplicates, 2);
    assert_eq!(admitted.batch_index, [1, 3]);
    assert_eq!(admitted.fresh[0].content, "new");
}

#[test]
fn admitting_refuses_an_invalid_event_by_its_place_and_a_reader() {
    let folder = folder();
    let mut log = writer(&folder);
    let mut bad = Event::tool_result("c1", "out");
    bad.tool_call_id = None;
    let refused = log.admit(vec![Event::user("fine"), bad]).unwrap_err();
    assert!(matches!(refused, Error::InvalidEvent { index: 1, .. }));
    log.close().unwrap();
    let (mut reader, _) = open(&folder, Access::Read);
    assert!(!reader.is_writer());
    let refused = reader.admit(vec![Event::user("hi")]).unwrap_err();
    assert!(matches!(refused, Error::ReadOnly { .. }));
}

#[test]
fn ids_in_the_archive_count_as_held_once_a_batch_brings_a_new_one() {
    let folder = folder();
    let archived = [Event::user("old").with_id("a1")];
    std::fs::write(folder.paths.archive(), jsonl::encode_lines(&archived)).unwrap();
    let mut log = writer(&folder);
    let admitted = log.admit(vec![Event::user("old").with_id("a1")]).unwrap();
    assert_eq!(admitted.duplicates, 1);
    assert!(admitted.fresh.is_empty());
}

#[test]
fn appending_assigns_ids_and_turns_and_keeps_the_meta_current() {
    let folder = folder();
    let mut log = writer(&folder);
    let appended = {
        let admitted = log
            .admit(vec![
                Event::user("Fix the login bug"),
                Event::assistant("on it"),
            ])
            .unwrap();
        log.append(admitted.fresh).unwrap().to_vec()
    };
    assert_eq!(appended.len(), 2);
    assert!(appended.iter().all(|e| !e.id.is_empty() && e.ts > 0.0));
    assert_eq!(appended[0].turn_id, appended[1].turn_id);
    assert_eq!(log.current_turn(), appended[0].turn_id);
    assert_eq!(ids(log.events()), ids(&appended));
    let meta = log.meta();
    assert_eq!((meta.events, meta.turns), (2, 1));
    assert_eq!(meta.title.as_deref(), Some("Fix the login bug"));
    log.close().unwrap();
    let written = SessionMeta::read(&folder.paths.dir).unwrap();
    assert_eq!(written.events, 2);
    assert_eq!(
        written.log_bytes,
        std::fs::metadata(folder.paths.raw_traces()).unwrap().len()
    );
}

#[test]
fn a_torn_last_line_is_set_aside_by_a_writer_and_skipped_by_a_reader() {
    let folder = folder();
    writer(&folder).close_with(said(2));
    let raw = folder.paths.raw_traces();
    let whole = std::fs::read(&raw).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(br#"{"id":"e3","trace_ty"#);
    std::fs::write(&raw, &torn).unwrap();

    let (reader, _) = open(&folder, Access::Read);
    assert_eq!(ids(reader.events()), ["e1", "e2"]);
    assert!(matches!(
        reader.recoveries(),
        [Recovery::TornTail { moved_to: None, .. }]
    ));
    assert_eq!(
        std::fs::read(&raw).unwrap(),
        torn,
        "a reader repairs nothing"
    );
    drop(reader);

    let log = writer(&folder);
    assert_eq!(ids(log.events()), ["e1", "e2"]);
    assert!(matches!(
        log.recoveries(),
        [Recovery::TornTail {
            moved_to: Some(_),
            ..
        }]
    ));
    assert_eq!(std::fs::read(&raw).unwrap(), whole);
}

#[test]
fn an_archive_append_a_crash_cut_short_is_taken_back_on_open() {
    let folder = folder();
    writer(&folder).close_with(said(2));
    let active = jsonl::read_log(&folder.paths.raw_traces()).unwrap().events;
    let mut archive = jsonl::encode_lines(&[Event::user("older").with_id("e0")]);
    archive.extend(jsonl::encode_lines(&active[..1]));
    std::fs::write(folder.paths.archive(), archive).unwrap();

    let log = writer(&folder);
    assert!(matches!(
        log.recoveries(),
        [Recovery::UnfinishedArchiveAppend { lines: 1, .. }]
    ));
    assert_eq!(ids_in(&folder.paths.archive()), ["e0"]);
    assert_eq!(ids(log.events()), ["e1", "e2"]);
}

#[test]
fn a_compaction_interrupted_after_its_commit_is_finished_on_open() {
    let folder = folder();
    writer(&folder).close_with(said(3));
    let snapshot = Snapshot {
        compactions: 1,
        active_first_id: Some("e3".into()),
        tail_events: 1,
        base: vec![Event::system("Summary: one, two.")],
        archived_events: Some(2),
        ..Snapshot::default()
    };
    snapshot.write(&folder.paths.dir).unwrap();

    let (log, read) = open(&folder, Access::Write(Durability::Batch));
    assert_eq!(read, Some(snapshot));
    assert_eq!(ids(log.events()), ["e3"]);
    assert_eq!(ids_in(&folder.paths.archive()), ["e1", "e2"]);
    assert_eq!(ids_in(&folder.paths.raw_traces()), ["e3"]);
    assert_eq!((log.meta().archived_events, log.meta().events), (2, 3));
}

#[test]
fn a_compacted_span_goes_to_the_archive_and_the_tail_stays() {
    let folder = folder();
    let mut log = writer(&folder);
    append(&mut log, said(3));
    let span: Vec<Event> = log.events()[..2].iter().map(|e| Event::clone(e)).collect();
    let tail = log.events()[2..].to_vec();
    let archived = log.archive_span(&span, &tail, 0).unwrap();
    assert_eq!(archived.fresh, 2);
    assert_eq!(ids_in(&folder.paths.archive()), ["e1", "e2"]);
    log.replace_with_tail(&archived.tail_lines, tail, 2)
        .unwrap();
    assert_eq!(ids(log.events()), ["e3"]);
    assert_eq!(ids_in(&folder.paths.raw_traces()), ["e3"]);
    let history: Vec<String> = log
        .full_history()
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(history, ["e1", "e2", "e3"]);
    // The reopened writer appends after the tail.
    append(&mut log, vec![Event::assistant("four").with_id("e4")]);
    assert_eq!(ids_in(&folder.paths.raw_traces()), ["e3", "e4"]);
    assert_eq!(log.meta().events, 4);
}
