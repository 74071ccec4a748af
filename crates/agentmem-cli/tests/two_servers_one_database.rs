//! Two `agentmem serve` processes on one PostgreSQL database (the one of
//! `AGENTMEM_TEST_DATABASE_URL`, which `scripts/postgres run` provides),
//! clients on both appending to sessions of their own and to one they
//! share; one server is SIGKILLed mid-run and started again. Every event a
//! server acknowledged is in the database exactly once, each client's in
//! the order it sent them, and the killed server's session locks are free
//! again at once: the other server takes the shared session over.
//!
//! A service keeps a session it wrote to open, holding its lock, so a
//! shared session is written through one server at a time: a client the
//! other server refuses (`423 locked`) sends its batch to the holder.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

mod common;

/// Batches each client sends, and events in a batch.
const BATCHES: usize = 60;
const BATCH_EVENTS: usize = 5;
/// The batch of client 0 after which server 0 is killed and started again.
const KILL_AFTER: usize = 20;

/// What happened to one request.
enum Sent {
    Acknowledged(Value),
    /// The server holding the session is another.
    Locked,
    /// No answer: the server died or is not there.
    Lost,
}

fn send(base: &str, path: &str, body: &Value) -> Sent {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let Ok(mut response) = agent
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .send(body.to_string())
    else {
        return Sent::Lost;
    };
    let status = response.status().as_u16();
    let Ok(text) = response.body_mut().read_to_string() else {
        return Sent::Lost;
    };
    match status {
        200 | 201 => Sent::Acknowledged(serde_json::from_str(&text).unwrap()),
        423 => Sent::Locked,
        other => panic!("{path}: {other} {text}"),
    }
}

#[derive(Default)]
struct Counts {
    acknowledged: AtomicUsize,
    retried_after_loss: AtomicUsize,
    redirected_when_locked: AtomicUsize,
    duplicates_on_retry: AtomicUsize,
    /// Set once server 0 is killed.
    killed: AtomicBool,
    /// Sessions server 0 wrote before it was killed (it held their locks).
    held_by_killed: Mutex<BTreeSet<String>>,
    /// Of those, the ones written again after the kill: their locks reclaimed.
    reclaimed: Mutex<BTreeSet<String>>,
}

/// A client: sends its batches to `session`, first through server
/// `prefer`, the other when that one is locked out or gone; every batch
/// until acknowledged. The ids it had acknowledged, in order.
fn client(
    name: &str,
    session: &str,
    prefer: usize,
    bases: &Arc<Mutex<[String; 2]>>,
    counts: &Counts,
    progress: Option<&AtomicUsize>,
) -> Vec<String> {
    let mut acknowledged = Vec::new();
    let mut server = prefer;
    for batch in 0..BATCHES {
        let ids: Vec<String> = (0..BATCH_EVENTS)
            .map(|k| format!("{name}-{batch}-{k}"))
            .collect();
        let events: Vec<Value> = ids
            .iter()
            .map(
                |id| json!({"id": id, "trace_type": "user", "content": format!("{id} says hello")}),
            )
            .collect();
        let body = json!({ "events": events });
        let path = format!("/v1/sessions/{session}/events");
        let mut tries = 0;
        loop {
            tries += 1;
            assert!(tries < 500, "{name}: batch {batch} never acknowledged");
            let base = bases.lock().unwrap()[server].clone();
            match send(&base, &path, &body) {
                Sent::Acknowledged(answer) => {
                    let duplicates = answer["duplicates"].as_u64().unwrap() as usize;
                    counts
                        .duplicates_on_retry
                        .fetch_add(duplicates, Ordering::Relaxed);
                    assert_eq!(
                        answer["appended"].as_u64().unwrap() as usize + duplicates,
                        BATCH_EVENTS
                    );
                    if !counts.killed.load(Ordering::SeqCst) {
                        if server == 0 {
                            counts.held_by_killed.lock().unwrap().insert(session.into());
                        }
                    } else if counts.held_by_killed.lock().unwrap().contains(session) {
                        counts.reclaimed.lock().unwrap().insert(session.into());
                    }
                    break;
                }
                Sent::Locked => {
                    counts
                        .redirected_when_locked
                        .fetch_add(1, Ordering::Relaxed);
                    server = 1 - server;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Sent::Lost => {
                    counts.retried_after_loss.fetch_add(1, Ordering::Relaxed);
                    server = 1 - server;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        counts.acknowledged.fetch_add(1, Ordering::Relaxed);
        acknowledged.extend(ids);
        if let Some(progress) = progress {
            progress.store(batch + 1, Ordering::Relaxed);
        }
    }
    acknowledged
}

/// Every event id of `session`, archive included, in order, as server `base` reads them.
fn stored(base: &str, session: &str) -> Vec<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let text = agent
        .get(format!("{base}/v1/sessions/{session}/events"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let page: Value = serde_json::from_str(&text).unwrap();
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn two_servers_share_one_database_through_a_kill_and_a_restart() {
    let Some(url) = agentmem_postgres::test_database("two servers on one database") else {
        return;
    };
    let url = url.expose().to_owned();
    let agent = format!("two-servers-{}", std::process::id());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut servers = [
        common::serve_on_database(dirs[0].path(), &url, &agent),
        common::serve_on_database(dirs[1].path(), &url, &agent),
    ];
    for session in ["own-0", "own-1", "shared"] {
        let created = send(
            &servers[0].base,
            "/v1/sessions",
            &json!({ "session": session }),
        );
        assert!(matches!(created, Sent::Acknowledged(_)));
    }
    let bases = Arc::new(Mutex::new([
        servers[0].base.clone(),
        servers[1].base.clone(),
    ]));
    let counts = Arc::new(Counts::default());
    let progress = Arc::new(AtomicUsize::new(0));
    // (client, session, server tried first)
    let plan = [
        ("own0", "own-0", 0),
        ("own1", "own-1", 1),
        ("sharedA", "shared", 0),
        ("sharedB", "shared", 1),
    ];
    let clients: Vec<_> = plan
        .iter()
        .enumerate()
        .map(|(n, &(name, session, prefer))| {
            let (bases, counts, progress) = (bases.clone(), counts.clone(), progress.clone());
            std::thread::spawn(move || {
                let progress = (n == 0).then_some(&*progress);
                client(name, session, prefer, &bases, &counts, progress)
            })
        })
        .collect();
    while progress.load(Ordering::Relaxed) < KILL_AFTER {
        assert!(!clients[0].is_finished(), "client 0 stopped early");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SIGKILL: the server's locks go with its connections.
    servers[0].child.kill().unwrap();
    servers[0].child.wait().unwrap();
    counts.killed.store(true, Ordering::SeqCst);
    servers[0] = common::serve_on_database(dirs[0].path(), &url, &agent);
    bases.lock().unwrap()[0] = servers[0].base.clone();
    let acknowledged: Vec<(&str, Vec<String>)> = plan
        .iter()
        .zip(clients)
        .map(|(&(_, session, _), client)| (session, client.join().unwrap()))
        .collect();

    let (mut read_back, mut in_order) = (0, 0);
    for session in ["own-0", "own-1", "shared"] {
        let ids = stored(&servers[1].base, session);
        read_back += 1;
        let mut seen = std::collections::HashSet::new();
        assert!(
            ids.iter().all(|id| seen.insert(id)),
            "{session}: an event twice"
        );
        let sent: Vec<&Vec<String>> = acknowledged
            .iter()
            .filter(|(s, _)| *s == session)
            .map(|(_, ids)| ids)
            .collect();
        let total: usize = sent.iter().map(|ids| ids.len()).sum();
        assert_eq!(
            ids.len(),
            total,
            "{session}: every acknowledged event, nothing else"
        );
        for mine in sent {
            let prefix = format!("{}-", mine[0].split('-').next().unwrap());
            let order: Vec<&String> = ids.iter().filter(|id| id.starts_with(&prefix)).collect();
            assert_eq!(
                order,
                mine.iter().collect::<Vec<_>>(),
                "{session}: a client's events in the order it sent them"
            );
            in_order += mine.len();
        }
    }
    let held = counts.held_by_killed.lock().unwrap().clone();
    let reclaimed = counts.reclaimed.lock().unwrap().clone();
    assert!(
        reclaimed.contains("own-0"),
        "the killed server's own session is written again after the kill: {reclaimed:?}"
    );
    eprintln!(
        "two servers, one database: {in_order} acknowledged events each stored once and in order; \
         {read_back} of 3 sessions read back; {} of the {} sessions the SIGKILLed server held \
         written again after the kill (locks reclaimed); {} batches acknowledged, {} resent after the kill, {} sent to the other server when locked out, {} events found already stored on a resend",
        reclaimed.len(),
        held.len(),
        counts.acknowledged.load(Ordering::Relaxed),
        counts.retried_after_loss.load(Ordering::Relaxed),
        counts.redirected_when_locked.load(Ordering::Relaxed),
        counts.duplicates_on_retry.load(Ordering::Relaxed),
    );
}
