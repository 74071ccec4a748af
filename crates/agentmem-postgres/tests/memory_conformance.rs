//! The memory seam's conformance suite ([`agentmem::storage::memory`]): one
//! source of cases, run against the files backend and the PostgreSQL
//! backend (on the database in `AGENTMEM_TEST_DATABASE_URL`, which
//! `scripts/postgres run` provides). Each case works through the engine's
//! own memory types (the notebook, the fact store) on two hosts sharing
//! one store, as two agent servers would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentmem::base::error::SchemaScope;
use agentmem::files::records::{EpisodicItem, NewFact, Provenance, Trust};
use agentmem::memory::facts::{Added, FactStore};
use agentmem::memory::notebook::Notebook;
use agentmem::session::Access;
use agentmem::storage::memory::{SchemaOf, Swapped};
use agentmem::{
    AgentId, CompactOptions, Durability, Error, Event, FactKind, MemoryStorage, PrepareRequest,
    SessionId, StatePatch, Storage, Store, SummarizeError, Summarizer, Summary, SummaryFact,
    SummaryRequest, Target, TraceType,
};
use agentmem_postgres::PgStorage;

/// A backend under test: hosts sharing one store, each with both sides of the seam.
trait Backend {
    fn host(&self) -> (Arc<dyn Storage>, Arc<dyn MemoryStorage>);
    /// The store engine sessions on the backend take their settings from
    /// (for files, the store whose folders keep them).
    fn settings(&self) -> Store;
}

struct Files {
    dir: tempfile::TempDir,
}

impl Backend for Files {
    fn host(&self) -> (Arc<dyn Storage>, Arc<dyn MemoryStorage>) {
        let store = self.settings();
        (Arc::new(store.storage()), Arc::new(store.memory()))
    }

    fn settings(&self) -> Store {
        Store::open(self.dir.path(), Durability::Batch).unwrap()
    }
}

struct Postgres {
    url: agentmem::config::DatabaseUrl,
    /// Where sessions on the database would be kept in files: stays empty.
    dir: tempfile::TempDir,
}

impl Backend for Postgres {
    fn host(&self) -> (Arc<dyn Storage>, Arc<dyn MemoryStorage>) {
        let database = Arc::new(PgStorage::connect(&self.url, Default::default()).unwrap());
        (database.clone(), database)
    }

    fn settings(&self) -> Store {
        Store::open(self.dir.path(), Durability::Batch).unwrap()
    }
}

/// An agent no other case (or earlier run on the same database) uses.
fn fresh_agent() -> AgentId {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    AgentId::new(format!(
        "mem-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
    .unwrap()
}

/// Session `id` opened for writing again, on the host of `sessions`.
fn reopen(
    store: &Store,
    sessions: &Arc<dyn Storage>,
    agent: &AgentId,
    id: &SessionId,
) -> agentmem::Session {
    store
        .open_session_in(sessions, agent, id, Access::Write(Durability::Batch))
        .unwrap()
}

fn by_hand(text: &str) -> NewFact {
    NewFact {
        fact: text.into(),
        tags: vec!["preference".into()],
        confidence: 0.8,
        salience: 0.5,
        provenance: Provenance {
            extractor: "conformance".into(),
            ..Provenance::default()
        },
        trust: Trust::User,
    }
}

fn a_notebook_changes_by_compare_and_swap_across_hosts(backend: &dyn Backend) {
    let agent = fresh_agent();
    let (_, one) = backend.host();
    let (_, two) = backend.host();
    let here = Notebook::on(one.clone(), &agent, Default::default());
    let there = Notebook::on(two.clone(), &agent, Default::default());
    let v0 = here.read().unwrap();
    assert_eq!(v0.content, "");
    let v1 = here.append("- uses tabs", Some(&v0.hash)).unwrap();
    assert_eq!(there.read().unwrap(), v1, "the other host reads the change");
    // A retry of the same append against the old version: already in.
    assert_eq!(there.append("- uses tabs", Some(&v0.hash)).unwrap(), v1);
    // Another change against the old version is a conflict, and changes nothing.
    let conflict = there.append("- uses spaces", Some(&v0.hash)).unwrap_err();
    assert!(
        matches!(conflict, Error::MemoryConflict { .. }),
        "{conflict}"
    );
    assert_eq!(here.read().unwrap(), v1);
    // The seam's swap itself refuses a notebook read before another host's write.
    assert_eq!(
        two.swap_notebook(&agent, &v0.hash, "stale\n").unwrap(),
        Swapped::Changed
    );
    let v2 = there
        .update("- uses tabs", "- uses tabs, width 4", Some(&v1.hash))
        .unwrap();
    assert_eq!(v2.content, "- uses tabs, width 4\n");
    assert_eq!(one.read_notebook(&agent).unwrap(), v2);
    // Without an expected hash, edits from both hosts all land.
    here.append("- a", None).unwrap();
    there.append("- b", None).unwrap();
    assert_eq!(
        here.read().unwrap().content,
        "- uses tabs, width 4\n- a\n- b\n"
    );
}

fn facts_merge_supersede_and_delete_across_hosts(backend: &dyn Backend) {
    let agent = fresh_agent();
    let (_, one) = backend.host();
    let (_, two) = backend.host();
    let here = FactStore::on(one, &agent, Default::default());
    let there = FactStore::on(two, &agent, Default::default());
    let Added::Added(id) = here.add(by_hand("The user prefers tabs.")).unwrap() else {
        panic!("a new fact")
    };
    assert_eq!(
        there.add(by_hand("the user prefers tabs")).unwrap(),
        Added::Merged(id.clone()),
        "a near duplicate from another host merges"
    );
    let new_id = there
        .supersede(&id, "The user prefers spaces.", Provenance::default())
        .unwrap();
    let all = here.all().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].id, id);
    assert_eq!(all[0].superseded_by.as_deref(), Some(new_id.as_str()));
    assert!(all[0].valid_to.is_some());
    assert_eq!(all[0].tags, ["preference"]);
    assert_eq!(all[1].id, new_id);
    assert_eq!(all[1].fact, "The user prefers spaces.");
    let current = here.current().unwrap();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0].id, new_id);
    // Superseding a superseded fact, or deleting an unknown one, is refused
    // and changes nothing.
    let stale = here
        .supersede(&id, "again", Provenance::default())
        .unwrap_err();
    assert!(matches!(stale, Error::FactEdit { .. }), "{stale}");
    assert!(matches!(
        there.delete("fact-none").unwrap_err(),
        Error::FactEdit { .. }
    ));
    assert_eq!(there.all().unwrap(), all);
    here.delete(&id).unwrap();
    assert_eq!(there.all().unwrap(), all[1..]);
    // A redacted fact keeps a fingerprint under the agent's one key, on
    // every host: two facts that differ only in their secret stay two.
    let secret = |s: &str| by_hand(&format!("The deploy password is {s}"));
    let one = here.add(secret("sk-abcdefabcdefabcdefabcdef1234")).unwrap();
    let two = there
        .add(secret("sk-0123456789abcdef0123456789ab"))
        .unwrap();
    assert!(matches!((&one, &two), (Added::Added(a), Added::Added(b)) if a != b));
    assert_eq!(
        there
            .add(secret("sk-abcdefabcdefabcdefabcdef1234"))
            .unwrap(),
        Added::Merged(match one {
            Added::Added(id) | Added::Merged(id) => id,
        })
    );
}

fn episodes_append_once_in_order(backend: &dyn Backend) {
    let agent = fresh_agent();
    let (_, one) = backend.host();
    let (_, two) = backend.host();
    let item = |n: usize| EpisodicItem {
        id: format!("ep-{n}"),
        ts: n as f64,
        session_id: "s".into(),
        turn_ids: vec![format!("turn_{n:04}")],
        summary: format!("## Goal\n- step {n}"),
        tags: vec![],
        salience: 0.5,
    };
    assert!(one.append_episode(&agent, &item(2)).unwrap());
    assert!(two.append_episode(&agent, &item(1)).unwrap());
    assert!(!one.append_episode(&agent, &item(2)).unwrap(), "once");
    assert_eq!(two.read_episodes(&agent).unwrap(), [item(2), item(1)]);
    assert!(one.memory_agents().unwrap().contains(&agent));
}

fn evicted_outputs_round_trip_and_go_with_their_session(backend: &dyn Backend) {
    let agent = fresh_agent();
    let (sessions, memory) = backend.host();
    let id = SessionId::new("evicting").unwrap();
    drop(sessions.create_session(&agent, &id).unwrap());
    let text: String = (0..500).map(|i| format!("line {i} 日本語\n")).collect();
    memory.put_evicted(&agent, &id, "call_1", &text).unwrap();
    memory
        .put_evicted(&agent, &id, "call_1-2", "second\n")
        .unwrap();
    let (_, other) = backend.host();
    assert_eq!(other.read_evicted(&agent, &id, "call_1").unwrap(), text);
    assert_eq!(
        other.evicted_names(&agent, &id).unwrap(),
        ["call_1", "call_1-2"]
    );
    let page = agentmem::files::evicted::page_of(&text, 490, 20);
    assert_eq!((page.lines_returned, page.has_more), (10, false));
    assert!(matches!(
        other.read_evicted(&agent, &id, "call_9").unwrap_err(),
        Error::EvictedNotFound { .. }
    ));
    assert!(matches!(
        memory.put_evicted(&agent, &id, "../x", "no").unwrap_err(),
        Error::InvalidId { .. }
    ));
    sessions.delete_session(&agent, &id).unwrap();
    assert!(other.evicted_names(&agent, &id).unwrap().is_empty());
}

/// A summarizer that draws one decision from the first user message of
/// what it summarizes.
struct DrawsADecision;

impl Summarizer for DrawsADecision {
    fn name(&self) -> &str {
        "draws-a-decision"
    }
    fn version(&self) -> &str {
        "1"
    }
    fn window_tokens(&self) -> u64 {
        100_000
    }
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        let first = request
            .events
            .iter()
            .find(|e| e.trace_type == TraceType::User)
            .expect("the span holds a user message");
        let mut summary = Summary::empty();
        summary
            .section_mut("Goal")
            .unwrap()
            .push(first.content.clone());
        summary.facts.push(SummaryFact {
            text: format!("Decided: {}", first.content),
            kind: FactKind::Decision,
            confidence: 0.9,
            source_event_ids: vec![first.id.clone()],
        });
        summary.covered_event_ids = request.events.iter().map(|e| e.id.clone()).collect();
        Ok(summary)
    }
}

fn a_compaction_and_an_ending_leave_memory_seen_after_reopen_and_by_other_sessions(
    backend: &dyn Backend,
) {
    let agent = fresh_agent();
    let (sessions, memory) = backend.host();
    let store = backend.settings();
    let id = SessionId::new("compacted").unwrap();
    let mut session = store
        .create_session_in(&sessions, &agent, Some(id.clone()))
        .unwrap();
    session.set_summarizer(Box::new(DrawsADecision));
    let turns: Vec<Event> = (1..=4)
        .flat_map(|n| {
            [
                Event::user(format!("use the crate number {n} for parsing"))
                    .with_id(format!("u{n}")),
                Event::assistant(format!("switched to crate {n}")).with_id(format!("a{n}")),
            ]
        })
        .collect();
    session.ingest(turns).unwrap();
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    drop(session);
    // Another host, after the writer is gone, reads what it left.
    let (other_sessions, other) = backend.host();
    let episodes = other.read_episodes(&agent).unwrap();
    assert_eq!(episodes.len(), 1, "{episodes:?}");
    assert_eq!(episodes[0].session_id, "compacted");
    let facts = other.read_facts(&agent).unwrap();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0].fact, "Decided: use the crate number 1 for parsing");
    assert_eq!(facts[0].provenance.source_event_ids, ["u1"]);
    // Reopened, the compaction is finished: nothing is added twice.
    let mut session = reopen(&store, &other_sessions, &agent, &id);
    assert_eq!(other.read_episodes(&agent).unwrap(), episodes);
    assert_eq!(other.read_facts(&agent).unwrap(), facts);
    let ended = session.end().unwrap().expect("the session said something");
    assert_eq!(session.end().unwrap(), Some(ended.clone()), "ended once");
    drop(session);
    assert_eq!(memory.read_episodes(&agent).unwrap()[1], ended);
    // Another session of the agent is given what this one left.
    let mut next = store
        .create_session_in(&sessions, &agent, Some(SessionId::new("next").unwrap()))
        .unwrap();
    next.ingest(vec![Event::user("which crate parses?")])
        .unwrap();
    let prepared = next
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let text = serde_json::to_string(&prepared.payload).unwrap();
    // (On files recalled from the search index, on a database the block of
    // the agent's best facts and latest summaries: either holds the episode.)
    assert!(
        text.contains("use the crate number 1 for parsing"),
        "{text}"
    );
}

/// A working-memory update as an agent's log carries it.
fn state_event(id: &str, update: serde_json::Value) -> Event {
    let mut event: Event = serde_json::from_value(serde_json::json!({
        "trace_type": "working_memory", "working_memory": update,
    }))
    .unwrap();
    event.id = id.to_owned();
    event
}

fn merge(patch: serde_json::Value) -> StatePatch {
    assert!(patch.is_object(), "a JSON Merge Patch");
    StatePatch::from_json(patch).unwrap()
}

/// The documents of every version, oldest first.
fn documents(session: &agentmem::Session) -> Vec<(u64, serde_json::Value)> {
    session
        .working_memory_history()
        .unwrap()
        .into_iter()
        .map(|v| (v.version, v.document))
        .collect()
}

fn working_memory_changes_by_compare_and_swap_and_keeps_its_history(backend: &dyn Backend) {
    let agent = fresh_agent();
    let (sessions, _) = backend.host();
    let store = backend.settings();
    let id = SessionId::new("task").unwrap();
    let mut session = store
        .create_session_in(&sessions, &agent, Some(id.clone()))
        .unwrap();
    let schema = serde_json::json!({"type": "object", "properties": {
        "goal": {"type": "string"}, "done": {"type": "boolean"}}});
    session
        .set_working_memory_schema(SchemaScope::Session, Some(schema.clone()))
        .unwrap();
    let v1 = session
        .update_working_memory(merge(serde_json::json!({"goal": "ship"})), Some(0))
        .unwrap()
        .version;
    assert_eq!(v1, 1);
    // Compare-and-swap: a writer that read version 0 changes nothing.
    let stale = session
        .update_working_memory(merge(serde_json::json!({"goal": "other"})), Some(0))
        .unwrap_err();
    assert!(
        matches!(
            stale,
            Error::WorkingMemoryConflict {
                expected: 0,
                actual: 1
            }
        ),
        "{stale}"
    );
    // The schema refuses a document that breaks it, naming the path.
    let invalid = session
        .update_working_memory(merge(serde_json::json!({"done": "yes"})), None)
        .unwrap_err();
    assert!(
        matches!(&invalid, Error::WorkingMemoryInvalid { path, .. } if path == "/done"),
        "{invalid}"
    );
    // An update in an ingested batch is checked and numbered the same way;
    // a batch with a bad one stores nothing of it.
    let bad = vec![
        Event::user("and this").with_id("u0"),
        state_event(
            "w-bad",
            serde_json::json!({"kind": "merge_patch", "patch": {"done": 3}}),
        ),
    ];
    assert!(matches!(
        session.ingest(bad).unwrap_err(),
        Error::InvalidEvent { index: 1, .. }
    ));
    let turns: Vec<Event> = (1..=4)
        .flat_map(|n| {
            [
                Event::user(format!("step {n} of the task")).with_id(format!("u{n}")),
                Event::assistant(format!("did step {n}")).with_id(format!("a{n}")),
            ]
        })
        .chain([state_event(
            "w2",
            serde_json::json!({"kind": "json_patch", "patch": [
                {"op": "add", "path": "/done", "value": true}]}),
        )])
        .collect();
    session.ingest(turns).unwrap();
    assert_eq!(session.working_memory().version, 2);
    // A compaction moves the updates to the archive; the state stays.
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    session
        .update_working_memory(merge(serde_json::json!({"goal": "shipped"})), Some(2))
        .unwrap();
    let history = documents(&session);
    let state = session.working_memory().clone();
    drop(session);
    assert_eq!(
        history,
        [
            (1, serde_json::json!({"goal": "ship"})),
            (2, serde_json::json!({"goal": "ship", "done": true})),
            (3, serde_json::json!({"goal": "shipped", "done": true})),
        ]
    );
    // Another host, after the writer is gone, reads the same state,
    // history and schema, and keeps to both.
    let (other_sessions, _) = backend.host();
    let mut again = reopen(&store, &other_sessions, &agent, &id);
    assert_eq!(again.working_memory(), &state);
    assert_eq!(documents(&again), history);
    let kept = again.working_memory_schema().unwrap().expect("a schema");
    assert_eq!((kept.scope(), kept.json()), (SchemaScope::Session, &schema));
    assert!(matches!(
        again
            .update_working_memory(merge(serde_json::json!({"goal": "x"})), Some(2))
            .unwrap_err(),
        Error::WorkingMemoryConflict {
            expected: 2,
            actual: 3
        }
    ));
    drop(again);
    // A fork takes the session's schema along; a delete takes it away.
    other_sessions
        .fork_session(&agent, &id, None, &SessionId::new("fork").unwrap())
        .unwrap();
    let fork = store
        .open_session_in(
            &other_sessions,
            &agent,
            &SessionId::new("fork").unwrap(),
            Access::Read,
        )
        .unwrap();
    assert_eq!(fork.working_memory(), &state);
    let forked = fork
        .working_memory_schema()
        .unwrap()
        .expect("the fork's schema");
    assert_eq!(forked.json(), &schema);
    drop(fork);
    let (_, memory) = backend.host();
    other_sessions
        .delete_session(&agent, &SessionId::new("fork").unwrap())
        .unwrap();
    assert_eq!(
        memory
            .state_schema(&agent, SchemaOf::Session(&SessionId::new("fork").unwrap()))
            .unwrap(),
        None
    );
    // The agent's schema holds for every session without its own.
    let agent_schema = serde_json::json!({"type": "object", "required": ["goal"]});
    let mut fresh = store
        .create_session_in(
            &other_sessions,
            &agent,
            Some(SessionId::new("fresh").unwrap()),
        )
        .unwrap();
    fresh
        .set_working_memory_schema(SchemaScope::Agent, Some(agent_schema.clone()))
        .unwrap();
    assert_eq!(
        memory.state_schema(&agent, SchemaOf::Agent).unwrap(),
        Some(agent_schema)
    );
    assert!(matches!(
        fresh
            .update_working_memory(merge(serde_json::json!({"note": "no goal"})), None)
            .unwrap_err(),
        Error::WorkingMemoryInvalid {
            scope: SchemaScope::Agent,
            ..
        }
    ));
    assert_eq!(fresh.working_memory().version, 0);
}

/// What a session asking about an earlier one is given: the prepared
/// payload of a question whose answer only the earlier session holds.
fn recalled_context(backend: &dyn Backend) -> String {
    let agent = fresh_agent();
    let (sessions, _) = backend.host();
    let store = backend.settings();
    // 2026-03-01, a minute apart: the same times on both backends.
    let at = |n: usize| 1_772_359_200.0 + 60.0 * n as f64;
    let mut early = store
        .create_session_in(&sessions, &agent, Some(SessionId::new("early").unwrap()))
        .unwrap();
    let mut said = vec![
        Event::user("The flaky parser test fails with error E0502").with_id("e1"),
        Event::assistant("Borrowing the tokens immutably fixes E0502 in the parser.").with_id("e2"),
        Event::user("And the deploy?").with_id("e3"),
        Event::assistant("The deploy goes through the canary stage first.").with_id("e4"),
    ];
    for (n, event) in said.iter_mut().enumerate() {
        event.ts = at(n + 1);
    }
    early.ingest(said).unwrap();
    early.flush_index();
    drop(early);
    let mut late = store
        .create_session_in(&sessions, &agent, Some(SessionId::new("late").unwrap()))
        .unwrap();
    let mut asked = Event::user("How did we fix error E0502 in the parser?").with_id("l1");
    asked.ts = at(8);
    late.ingest(vec![asked]).unwrap();
    let prepared = late
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    serde_json::to_string_pretty(&prepared.payload).unwrap()
}

fn an_earlier_session_is_recalled_into_the_context(backend: &dyn Backend) {
    let text = recalled_context(backend);
    assert!(
        text.contains("What you know from earlier sessions"),
        "{text}"
    );
    assert!(text.contains("Borrowing the tokens immutably"), "{text}");
}

/// A session on PostgreSQL is given the same recall block, in the same
/// place of its context, as one on files.
#[test]
fn recall_is_injected_alike_on_both_backends() {
    let Some(postgres) = postgres() else { return };
    assert_eq!(recalled_context(&postgres), recalled_context(&files()));
}

/// What recall answers questions with when a fact or a summary holds the
/// answer: an earlier session, two facts (one by hand, one drawn from that
/// session), an episode summarizing it, then a fact added after the first
/// recalls; the same times on every backend.
fn recalled_memories(backend: &dyn Backend) -> Vec<String> {
    let agent = fresh_agent();
    let (sessions, memory) = backend.host();
    let store = backend.settings();
    let at = |n: usize| 1_772_359_200.0 + 60.0 * n as f64;
    let mut early = store
        .create_session_in(&sessions, &agent, Some(SessionId::new("early").unwrap()))
        .unwrap();
    let mut said = vec![
        Event::user("Where do the deploys go first?").with_id("e1"),
        Event::assistant("Through the staging cluster, then production.").with_id("e2"),
    ];
    for (n, event) in said.iter_mut().enumerate() {
        event.ts = at(n + 1);
    }
    early.ingest(said).unwrap();
    early.flush_index();
    drop(early);
    let facts = FactStore::on(memory.clone(), &agent, Default::default());
    let fixed_times = |memory: &Arc<dyn MemoryStorage>| {
        memory
            .change_facts(&agent, &mut |mut all| {
                for fact in &mut all {
                    fact.ts = at(3);
                }
                Ok(all)
            })
            .unwrap();
    };
    facts
        .add(by_hand("Deploys pass the canary stage before production."))
        .unwrap();
    let mut drawn = by_hand("The parser benchmarks run nightly on the build farm.");
    drawn.provenance.session_id = Some("early".into());
    facts.add(drawn).unwrap();
    fixed_times(&memory);
    memory
        .append_episode(
            &agent,
            &EpisodicItem {
                id: "ep-early".into(),
                ts: at(4),
                session_id: "early".into(),
                turn_ids: vec!["turn_0001".into()],
                summary: "## Goal\n- Rewrite the rollback script for the staging cluster.".into(),
                tags: vec![],
                salience: 0.7,
            },
        )
        .unwrap();
    let recall = |query: &str| {
        let mut request = agentmem::RecallRequest::new(query, 1_000);
        request.exclude_session = Some("late".into());
        request.asked_at = Some(at(10));
        store
            .recall_on(
                &*sessions,
                &agent,
                &request,
                agentmem::Encoding::O200kBase.tokenizer(),
            )
            .unwrap()
            .block
    };
    let mut blocks: Vec<String> = [
        "Which stage do deploys pass before production?",
        "Who rewrote the rollback script?",
        "When do the parser benchmarks run?",
    ]
    .iter()
    .map(|query| recall(query))
    .collect();
    // Facts that change after a recall are recalled as they are now.
    facts
        .add(by_hand("Releases are tagged on Fridays."))
        .unwrap();
    fixed_times(&memory);
    blocks.push(recall("When are releases tagged?"));
    blocks
}

fn facts_and_summaries_are_recalled(backend: &dyn Backend) {
    let blocks = recalled_memories(backend);
    assert!(
        blocks[0].contains("Deploys pass the canary stage before production."),
        "a fact given by hand: {}",
        blocks[0]
    );
    assert!(
        blocks[1].contains("(session early, turn_0001)")
            && blocks[1].contains("Rewrite the rollback script"),
        "an episode: {}",
        blocks[1]
    );
    assert!(
        blocks[2].contains("The parser benchmarks run nightly"),
        "a fact drawn from a session: {}",
        blocks[2]
    );
    assert!(
        blocks[3].contains("Releases are tagged on Fridays."),
        "a fact added since: {}",
        blocks[3]
    );
}

/// Facts and episodes are recalled by the same questions, in the same
/// blocks, on PostgreSQL as on files.
#[test]
fn facts_and_summaries_are_recalled_alike_on_both_backends() {
    let Some(postgres) = postgres() else { return };
    assert_eq!(recalled_memories(&postgres), recalled_memories(&files()));
}

macro_rules! every_case {
    ($($case:ident),* $(,)?) => {
        mod files_backend {
            $(#[test] fn $case() { super::$case(&super::files()) })*
        }
        mod postgres_backend {
            $(#[test] fn $case() { if let Some(backend) = super::postgres() { super::$case(&backend) } })*
        }
    };
}

every_case!(
    a_notebook_changes_by_compare_and_swap_across_hosts,
    facts_merge_supersede_and_delete_across_hosts,
    episodes_append_once_in_order,
    evicted_outputs_round_trip_and_go_with_their_session,
    a_compaction_and_an_ending_leave_memory_seen_after_reopen_and_by_other_sessions,
    working_memory_changes_by_compare_and_swap_and_keeps_its_history,
    an_earlier_session_is_recalled_into_the_context,
    facts_and_summaries_are_recalled,
);

fn files() -> Files {
    Files {
        dir: tempfile::tempdir().unwrap(),
    }
}

fn postgres() -> Option<Postgres> {
    Some(Postgres {
        url: agentmem_postgres::test_database("the memory conformance suite")?,
        dir: tempfile::tempdir().unwrap(),
    })
}
