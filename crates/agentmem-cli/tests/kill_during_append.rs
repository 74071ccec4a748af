//! A service killed (SIGKILL) while it appends a batch leaves all of the
//! batch or none of it: killed at moments spread over the whole request,
//! the log never holds part of one.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentmem::{AgentId, Durability, SessionId, Store};
use serde_json::json;

const BATCH_EVENTS: usize = 400;
const KILLS: u32 = 12;

fn batch_request(batch: u32) -> String {
    let events: Vec<_> = (0..BATCH_EVENTS)
        .map(|n| {
            json!({"id": format!("b{batch}-{n}"), "trace_type": "assistant",
                   "content": format!("batch {batch} part {n} ").repeat(100)})
        })
        .collect();
    let create = json!({"id": 0, "op": "create_session", "session": "s"});
    let append = json!({"id": 1, "op": "append", "session": "s", "events": events});
    format!("{create}\n{append}\n")
}

/// Sends batch `batch` to a fresh `serve --stdio`; kills it after `delay`,
/// or lets it finish when `None`. How long it ran.
fn run(dir: &std::path::Path, batch: u32, delay: Option<Duration>) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir)
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(batch_request(batch).as_bytes()).unwrap();
    match delay {
        Some(delay) => {
            std::thread::sleep(delay);
            child.kill().unwrap();
        }
        None => drop(stdin),
    }
    child.wait().unwrap();
    started.elapsed()
}

#[test]
fn a_batch_is_all_there_or_not_at_all_whenever_the_service_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let whole = run(dir.path(), 0, None);
    for kill in 1..=KILLS {
        let delay = whole.mul_f64(f64::from(kill) / f64::from(KILLS));
        run(dir.path(), kill, Some(delay));
    }
    let store = Store::open(dir.path(), Durability::Batch).unwrap();
    let session = store
        .open_session(&AgentId::default(), &SessionId::new("s").unwrap())
        .unwrap();
    let mut per_batch = std::collections::BTreeMap::<&str, usize>::new();
    for event in session.events() {
        let batch = event.id.split('-').next().unwrap();
        *per_batch.entry(batch).or_default() += 1;
    }
    assert_eq!(
        per_batch.get("b0"),
        Some(&BATCH_EVENTS),
        "the batch not killed is whole"
    );
    for (batch, events) in &per_batch {
        assert_eq!(*events, BATCH_EVENTS, "batch {batch} is partly in the log");
    }
}
