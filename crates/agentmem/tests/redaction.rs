//! Secrets on real files: what one session said never reaches another
//! session's prompt through recall, nor a title, a snapshot or a fact; the
//! files that hold it are readable by their owner only; redaction leaves
//! the ids, hashes and times of real transcripts alone.

mod common;

use std::path::{Path, PathBuf};

use agentmem::files::records::{NewFact, Provenance, Trust};
use agentmem::files::snapshot::SNAPSHOT_FILE;
use agentmem::memory::facts::{Added, FactStore};
use agentmem::redact::{redact, RedactionPolicy};
use agentmem::working::cache::STATE_FILE;
use agentmem::{
    CompactOptions, Encoding, Event, PrepareRequest, RecallRequest, SessionId, StatePatch, Store,
    Target,
};
use common::fresh_store;
use serde_json::json;

const OPENAI_KEY: &str = "sk-proj-Q8vX2mT4kL9pR7sW1nB6cY3dF5gH0jZa";
const DB_PASSWORD: &str = "Tr0ub4dor-staging-77";
const EMAIL: &str = "dana.ops@example.org";
const PHONE: &str = "+1 415 555 0134";

fn session(store: &Store, id: &str) -> agentmem::Session {
    store
        .create_session(&Default::default(), Some(SessionId::new(id).unwrap()))
        .unwrap()
}

/// Session `past` of `store`: a deploy to staging whose lines carry a key,
/// a password, an email and a phone number.
fn deploy_session(store: &Store) {
    let mut past = session(store, "past");
    past.ingest(vec![
        Event::user(format!(
            "Deploy staging with the key {OPENAI_KEY}, ask {EMAIL} or call {PHONE}"
        )),
        Event::tool_call(
            "c1",
            "bash",
            json!({"cmd": format!("psql postgres://deploy:{DB_PASSWORD}@db.staging:5432/app")}),
        ),
        Event::tool_result("c1", format!("staging deploy: password is {DB_PASSWORD}")),
        Event::assistant(format!("The staging deploy used {OPENAI_KEY} and worked.")),
    ])
    .unwrap();
    past.flush_index();
}

/// What `store`'s recall shows for `query` within `budget` tokens.
fn recall(store: &Store, query: &str, budget: u64) -> agentmem::Recalled {
    store
        .recall(
            &Default::default(),
            &RecallRequest::new(query, budget),
            Encoding::O200kBase.tokenizer(),
        )
        .unwrap()
}

/// Fails when `text` holds any `len` bytes in a row of `secret`.
fn assert_no_part_of(secret: &str, len: usize, text: &str) {
    for window in secret.as_bytes().windows(len) {
        let part = std::str::from_utf8(window).unwrap();
        assert!(!text.contains(part), "{part} of {secret} is in {text}");
    }
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [OPENAI_KEY, DB_PASSWORD, EMAIL, PHONE] {
        assert!(!text.contains(secret), "{secret} is in {what}: {text}");
    }
}

#[test]
fn recall_shows_another_session_only_redacted() {
    let (_dir, store, _) = fresh_store();
    deploy_session(&store);
    let recalled = recall(&store, "how did the staging deploy go?", 2_000);
    assert!(recalled.items.len() >= 3, "{recalled:?}");
    assert!(
        recalled.block.contains("[REDACTED:secret]"),
        "{}",
        recalled.block
    );
    assert_no_secret("the recalled block", &recalled.block);
    for item in &recalled.items {
        assert_no_secret("a recalled item", &item.text);
    }
    let mut next = session(&store, "next");
    next.ingest(vec![Event::user("How did the staging deploy go?")])
        .unwrap();
    for target in [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Anthropic,
        Target::Gemini,
    ] {
        let prepared = next
            .prepare(&PrepareRequest::new("gpt-4o", target))
            .unwrap();
        let payload = serde_json::to_string(&prepared.payload).unwrap();
        assert!(payload.contains("staging deploy"), "{payload}");
        assert!(payload.contains("[REDACTED:"), "{payload}");
        assert_no_secret("the next session's prompt", &payload);
    }
}

#[test]
fn a_secret_cut_at_the_edge_of_a_recalled_line_shows_no_part_of_it() {
    let (_dir, store, _) = fresh_store();
    let mut past = session(&store, "past");
    // Outputs whose key starts ever later, near the token cap of an event
    // in a small block: recall cuts each there, so the cut falls inside
    // the key of some.
    let outputs: Vec<Event> = (0..60)
        .map(|n| {
            let line = format!("staging deploy step{n} unit{n} part{n} code{n}\n");
            let output = format!(
                "{}{} export OPENAI_API_KEY={OPENAI_KEY}\n{}",
                line.repeat(16),
                "pad ".repeat(n + 40),
                "more output\n".repeat(100)
            );
            Event::tool_result(format!("c{n}"), output)
        })
        .collect();
    past.ingest(outputs).unwrap();
    past.flush_index();
    let recalled = recall(&store, "staging deploy", 1_000);
    // Each is shown by its passages around the match, cut short of its end;
    // redaction comes first, so a key that is shown is shown redacted.
    let in_part = recalled.items.iter().filter(|item| item.text.contains('…'));
    assert!(in_part.count() > 0, "{}", recalled.block);
    let near_the_key = recall(&store, "export OPENAI_API_KEY pad", 1_000);
    let keys_shown = near_the_key
        .items
        .iter()
        .filter(|item| item.text.contains("OPENAI_API_KEY="))
        .count();
    assert!(keys_shown > 0, "{}", near_the_key.block);
    for block in [&recalled.block, &near_the_key.block] {
        assert_no_part_of(OPENAI_KEY, 8, block);
    }
}

#[test]
fn memories_stored_unredacted_are_shown_to_another_session_redacted() {
    // Files written by hand, or by a version that did not redact.
    let (dir, store, _) = fresh_store();
    let agent_dir = dir.path().join("agents/default");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let fact = json!({"id": "fact-0001-00000001", "ts": 1.0, "fact": format!("Deploys use {OPENAI_KEY}"),
        "confidence": 0.9, "salience": 0.9, "provenance": {"extractor": "hand"}, "trust": "user", "valid_from": 1.0});
    let episode = json!({"id": "ep-old-0001", "ts": 2.0, "session_id": "old", "turn_ids": ["turn_0001"],
        "summary": format!("## Goal\n- deploy as the password is {DB_PASSWORD}, mail {EMAIL}"),
        "tags": ["compaction"], "salience": 0.5});
    std::fs::write(agent_dir.join("semantic.jsonl"), format!("{fact}\n")).unwrap();
    std::fs::write(agent_dir.join("episodic.jsonl"), format!("{episode}\n")).unwrap();
    let mut next = session(&store, "next");
    next.ingest(vec![Event::assistant("Ready.")]).unwrap();
    let prepared = next
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let payload = serde_json::to_string(&prepared.payload).unwrap();
    assert!(
        payload.contains("Deploys use [REDACTED:secret]"),
        "{payload}"
    );
    assert_no_secret("the next session's prompt", &payload);
}

#[test]
fn a_title_never_holds_a_secret() {
    let (dir, store, agent) = fresh_store();
    let mut first = session(&store, "first");
    // The key straddles the title's 80th character.
    first
        .ingest(vec![Event::user(format!(
            "Please set up the staging deploy pipeline for the new service: {OPENAI_KEY} then mail {EMAIL}"
        ))])
        .unwrap();
    let title = first.current_meta().title.unwrap();
    first.close().unwrap();
    assert!(
        title.starts_with("Please set up the staging deploy"),
        "{title}"
    );
    let meta = std::fs::read_to_string(dir.path().join("agents/default/sessions/first/meta.json"))
        .unwrap();
    let listed = store.list_sessions(&agent).unwrap();
    let forked = store
        .fork_session(&agent, &SessionId::new("first").unwrap(), None, None)
        .unwrap();
    for shown in [title, meta, format!("{listed:?}"), format!("{forked:?}")] {
        assert_no_part_of(OPENAI_KEY, 12, &shown);
    }
}

/// A session whose working memory holds a password, compacted, with one
/// update after the compaction.
fn compacted_session_with_a_secret_state(store: &Store) -> agentmem::WorkingMemory {
    let mut session = session(store, "stateful");
    let patch = |value| StatePatch::from_json(value).unwrap();
    session
        .update_working_memory(
            patch(json!({"db": {"url": format!("postgres://deploy:{DB_PASSWORD}@db:5432/app")}})),
            None,
        )
        .unwrap();
    for turn in 0..8 {
        session
            .ingest(vec![
                Event::user(format!("step {turn}: migrate table {turn}")),
                Event::assistant("Migrated. ".repeat(100)),
            ])
            .unwrap();
    }
    session
        .update_working_memory(patch(json!({"contact": EMAIL})), None)
        .unwrap();
    let focused = CompactOptions {
        focus: Some(format!("the migration run with {OPENAI_KEY}")),
        ..CompactOptions::default()
    };
    let report = session.compact(&focused).unwrap();
    assert!(report.applied);
    session
        .update_working_memory(patch(json!({"step": 9})), None)
        .unwrap();
    session.working_memory().clone()
}

#[test]
fn a_snapshot_holds_no_secret_of_the_working_memory_and_a_resume_gives_the_exact_state() {
    let (dir, store, agent) = fresh_store();
    let state = compacted_session_with_a_secret_state(&store);
    assert_eq!(state.version, 3);
    assert!(state.document["db"]["url"]
        .as_str()
        .unwrap()
        .contains(DB_PASSWORD));
    let session_dir = dir.path().join("agents/default/sessions/stateful");
    let snapshot = std::fs::read_to_string(session_dir.join(SNAPSHOT_FILE)).unwrap();
    assert_no_secret("snapshot.json", &snapshot);
    let id = SessionId::new("stateful").unwrap();
    let resumed = |what: &str| {
        let writer = store.open_session(&agent, &id).unwrap();
        assert_eq!(writer.working_memory(), &state, "{what}");
        drop(writer);
        let reader = store.read_session(&agent, &id).unwrap();
        assert_eq!(reader.working_memory(), &state, "{what}, read only");
    };
    resumed("with its materialized state");
    std::fs::remove_file(session_dir.join(STATE_FILE)).unwrap();
    resumed("rebuilt from the log");
    // A crash between the last update's append and the file's refresh.
    let mut behind = state.clone();
    behind.version -= 1;
    behind.document.as_object_mut().unwrap().remove("step");
    behind.hash = agentmem::base::state::hash_of(&behind.document);
    std::fs::write(
        session_dir.join(STATE_FILE),
        serde_json::to_vec(&behind).unwrap(),
    )
    .unwrap();
    resumed("with its materialized state one update behind");
}

fn fact(text: &str, events: &[&str]) -> NewFact {
    NewFact {
        fact: text.into(),
        tags: vec![],
        confidence: 0.8,
        salience: 0.5,
        provenance: Provenance {
            source_event_ids: events.iter().map(|e| e.to_string()).collect(),
            extractor: "test".into(),
            ..Default::default()
        },
        trust: Trust::User,
    }
}

#[test]
fn facts_that_differ_only_in_their_secret_are_not_merged() {
    let dir = tempfile::tempdir().unwrap();
    let facts = FactStore::new(dir.path(), RedactionPolicy::default());
    // Long enough that one word more or less still reads nearly the same.
    let said = |password: &str| {
        format!(
            "When the nightly staging database migration job runs against the replica \
             cluster, it signs in with the password {password} as the migrator user."
        )
    };
    let first = facts.add(fact(&said("Tr0ub4dor-3x"), &["e1"])).unwrap();
    let other = facts.add(fact(&said("c0rrect-h0rse"), &["e7"])).unwrap();
    let cased = facts.add(fact(&said("TR0UB4DOR-3X"), &["e8"])).unwrap();
    for added in [&first, &other, &cased] {
        assert!(matches!(added, Added::Added(_)), "{added:?}");
    }
    let Added::Added(first_id) = first else {
        unreachable!()
    };
    // The same secret is the same fact, from the same event or another.
    for events in [["e1"], ["e9"]] {
        let again = facts.add(fact(&said("Tr0ub4dor-3x"), &events)).unwrap();
        assert_eq!(again, Added::Merged(first_id.clone()));
    }
    // Facts without secrets merge as before.
    let plain = facts
        .add(fact("Staging deploys run on Fridays.", &[]))
        .unwrap();
    let Added::Added(plain_id) = plain else {
        panic!("{plain:?}")
    };
    assert_eq!(
        facts
            .add(fact("staging deploys run on fridays", &[]))
            .unwrap(),
        Added::Merged(plain_id)
    );
    let text = std::fs::read_to_string(dir.path().join("semantic.jsonl")).unwrap();
    assert!(
        !text.contains("Tr0ub4dor") && !text.contains("c0rrect") && !text.contains("TR0UB"),
        "{text}"
    );
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[cfg(unix)]
#[test]
fn every_file_that_holds_what_was_said_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store, agent) = fresh_store();
    let mut session = session(&store, "private");
    session
        .update_working_memory(
            StatePatch::from_json(json!({"db": "postgres://u:p4ssw0rd@db/app"})).unwrap(),
            None,
        )
        .unwrap();
    for turn in 0..8 {
        session
            .ingest(vec![
                Event::user(format!("Always run migration {turn} on staging first.")),
                Event::tool_call(format!("c{turn}"), "bash", json!({"cmd": "make migrate"})),
                Event::tool_result(
                    format!("c{turn}"),
                    "ok\n".repeat(if turn == 0 { 60_000 } else { 100 }),
                ),
                Event::assistant("Migrated. ".repeat(100)),
            ])
            .unwrap();
    }
    session.compact(&CompactOptions::default()).unwrap();
    session.end().unwrap();
    session.flush_index();
    store
        .notebook(&agent)
        .append("Staging runs migrations first.", None)
        .unwrap();
    store
        .search(&agent, "migration", &Default::default())
        .unwrap();
    drop(session);
    // A torn last line, set aside by the next writer.
    let log = dir
        .path()
        .join("agents/default/sessions/private/raw_traces.jsonl");
    let mut torn = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut torn, b"{\"trace_type\":\"user\",\"cont").unwrap();
    drop(torn);
    store
        .open_session(&agent, &SessionId::new("private").unwrap())
        .unwrap();
    store
        .fork_session(&agent, &SessionId::new("private").unwrap(), None, None)
        .unwrap();
    // Held open, the index has its write-ahead log and shared memory files.
    let _index = store.history_index(&agent).unwrap();
    let files = files_under(dir.path());
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "raw_traces.jsonl",
        "raw_traces_archive.jsonl",
        "raw_traces.jsonl.corrupt",
        "snapshot.json",
        "meta.json",
        "working_memory.json",
        "semantic.jsonl",
        "episodic.jsonl",
        "MEMORY.md",
        "search.sqlite",
        "search.sqlite-wal",
        "search.sqlite-shm",
        "c0.txt",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "no {expected} in {names:?}"
        );
    }
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy();
        if name == "lock" || name.ends_with(".lock") {
            continue;
        }
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", file.display());
    }
}

/// The real transcripts of the shared evaluation data.
fn real_transcripts() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval-data/trajectories");
    let files: Vec<PathBuf> = files_under(&root)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "LICENSE"))
        .collect();
    assert!(
        files.len() >= 10,
        "the shared transcripts are missing: {root:?}"
    );
    files
}

#[test]
fn redacting_real_transcripts_keeps_their_ids_hashes_and_times() {
    let id = regex::Regex::new(
        r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{40}\b|\b1[0-9]{12}\b",
    )
    .unwrap();
    let mut checked = 0;
    for path in real_transcripts() {
        let text = std::fs::read_to_string(&path).unwrap();
        let (clean, _) = redact(&text, RedactionPolicy::default());
        for found in id.find_iter(&text) {
            assert!(
                clean.contains(found.as_str()),
                "{} lost {} to redaction",
                path.display(),
                found.as_str()
            );
            checked += 1;
        }
    }
    assert!(checked > 1_000, "only {checked} ids checked");
}
