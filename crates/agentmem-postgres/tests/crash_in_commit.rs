//! A compaction's commit on PostgreSQL is one transaction: when the
//! writer's connection is killed at any moment inside it (its server
//! process terminated, as a dead client's is), the session is left in its
//! previous state or its new one, never half: the snapshot, the move of
//! the compacted events to the archive, the counts and the episode and
//! facts the compaction leaves in the agent's memory go together.

use std::time::{Duration, Instant};

use agentmem::files::records::{EpisodicItem, NewFact, Provenance, Trust};
use agentmem::files::snapshot::{CompactionMemory, Snapshot};
use agentmem::storage::{CommitMemory, CompactionCommit, EventRange, SnapshotFields, Storage};
use agentmem::MemoryStorage;
use agentmem::{AgentId, Event, SessionId};
use agentmem_postgres::PgStorage;

/// Events in each session, and how many of them a compaction moves: enough
/// that the commit takes long enough to be killed inside.
const EVENTS: usize = 3_000;
const MOVED: usize = 2_000;
/// Commits killed, at moments spread over a commit's duration.
const ATTEMPTS: u32 = 24;

fn session(storage: &PgStorage, agent: &AgentId) -> Box<dyn agentmem::SessionWriter> {
    let mut writer = storage.create_session(agent, &sid()).unwrap();
    let events: Vec<Event> = (0..EVENTS)
        .map(|n| match n % 2 {
            0 => Event::user(format!("question {n}")),
            _ => Event::assistant(format!("answer {n}")),
        })
        .collect();
    writer.append(events).unwrap();
    writer
}

fn sid() -> SessionId {
    SessionId::new("s").unwrap()
}

fn commit() -> CompactionCommit {
    let memory = CompactionMemory {
        episode: EpisodicItem {
            id: "ep-s-0001".into(),
            ts: 1.0,
            session_id: sid().to_string(),
            turn_ids: vec!["turn_0001".into()],
            summary: "## Goal\n- answer the questions".into(),
            tags: vec![],
            salience: 0.5,
        },
        facts: [
            "The answers are numbered.",
            "Questions come in pairs with answers.",
        ]
        .map(|text| NewFact {
            fact: text.into(),
            tags: vec!["decision".into()],
            confidence: 0.9,
            salience: 0.5,
            provenance: Provenance::default(),
            trust: Trust::Assistant,
        })
        .to_vec(),
    };
    CompactionCommit {
        archived: MOVED,
        snapshot: Snapshot {
            compactions: 1,
            base: vec![Event::assistant("the first turns, summarized")],
            memory: Some(memory.clone()),
            ..Snapshot::default()
        },
        fields: SnapshotFields::FromTheMove,
        memory: CommitMemory::Keep(memory),
    }
}

/// The server process of the connection holding `agent`'s session lock.
fn holder_pid(admin: &mut postgres::Client, agent: &AgentId) -> i32 {
    admin
        .query_one(
            "SELECT l.pid FROM pg_locks l \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
               AND l.classid::bigint = (hashtextextended($1, 0) >> 32) & 4294967295 \
               AND l.objid::bigint = hashtextextended($1, 0) & 4294967295",
            &[&format!("agentmem session {agent}/{}", sid())],
        )
        .unwrap()
        .get(0)
}

/// Which state a session is in: `false` before the compaction, `true`
/// after it; panics on anything in between.
fn committed(storage: &PgStorage, agent: &AgentId) -> bool {
    let snapshot = storage.snapshot(agent, &sid()).unwrap();
    let count = storage.event_count(agent, &sid()).unwrap();
    let meta = storage.session_meta(agent, &sid()).unwrap();
    let active = storage.read_events(agent, &sid(), EventRange::All).unwrap();
    let episodes = storage.read_episodes(agent).unwrap();
    let facts = storage.read_facts(agent).unwrap();
    match snapshot {
        None => {
            assert_eq!((count.active, count.archived), (EVENTS, 0));
            assert_eq!(meta.archived_events, 0);
            assert!(
                episodes.is_empty() && facts.is_empty(),
                "no memory without its commit"
            );
            false
        }
        Some(snapshot) => {
            assert_eq!(snapshot.compactions, 1);
            assert_eq!((count.active, count.archived), (EVENTS - MOVED, MOVED));
            assert_eq!(snapshot.archived_events, Some(MOVED));
            assert_eq!(meta.archived_events, MOVED);
            assert_eq!(snapshot.active_first_id.as_ref(), Some(&active[0].id));
            assert_eq!(active.len(), EVENTS - MOVED);
            assert_eq!(meta.compactions_finished, 1);
            let ids: Vec<&str> = episodes.iter().map(|e| e.id.as_str()).collect();
            assert_eq!(ids, ["ep-s-0001"]);
            assert_eq!(facts.len(), 2, "{facts:?}");
            true
        }
    }
}

fn agent(n: u32) -> AgentId {
    AgentId::new(format!("crash-{}-{n}", std::process::id())).unwrap()
}

#[test]
fn a_compaction_killed_inside_its_commit_leaves_one_state_or_the_other() {
    let Some(url) = agentmem_postgres::test_database("the compaction crash point") else {
        return;
    };
    let storage = PgStorage::connect(&url, Default::default()).unwrap();
    // How long a commit takes, on a session nobody kills.
    let mut writer = session(&storage, &agent(ATTEMPTS));
    let started = Instant::now();
    writer.commit_compaction(commit()).unwrap();
    let took = started.elapsed();
    assert!(committed(&storage, &agent(ATTEMPTS)));

    let mut admin = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    let (mut before, mut after) = (0, 0);
    for n in 0..ATTEMPTS {
        let agent = agent(n);
        let mut writer = session(&storage, &agent);
        let pid = holder_pid(&mut admin, &agent);
        let delay = took.mul_f64(f64::from(n) / f64::from(ATTEMPTS) * 1.5);
        let killer = std::thread::spawn({
            let url = url.clone();
            move || {
                let mut admin = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
                std::thread::sleep(delay);
                admin
                    .execute("SELECT pg_terminate_backend($1)", &[&pid])
                    .unwrap();
            }
        });
        let outcome = writer.commit_compaction(commit());
        killer.join().unwrap();
        let state = committed(&storage, &agent);
        // An acknowledged commit is kept; a failed one may have committed
        // just before the connection died (the answer lost), or not.
        if outcome.is_ok() {
            assert!(state, "an acknowledged compaction is kept");
        }
        if state {
            after += 1;
        } else {
            before += 1;
        }
        // The lock went with the connection: the session can be written again.
        drop(writer);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut next = loop {
            match storage.lock_session(&agent, &sid()) {
                Ok(next) => break next,
                Err(agentmem::Error::SessionLocked { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(other) => panic!("the lock was not reclaimed: {other}"),
            }
        };
        next.append(vec![Event::user("after the crash")]).unwrap();
    }
    eprintln!(
        "compaction commits killed inside ({took:?} each): {before} left the previous state, {after} the new one"
    );
    assert_eq!(before + after, ATTEMPTS);
}
