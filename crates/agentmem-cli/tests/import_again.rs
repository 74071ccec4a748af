//! `agentmem import` of a file whose format names no session (SWE-agent,
//! OpenHands, OpenAI messages) a second time: it finds the session the first
//! import made, adds what the file gained since, and never mixes two runs.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A real transcript from the shared evaluation data.
fn shared(path: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/trajectories")
        .join(path);
    assert!(
        path.exists(),
        "the shared evaluation data is missing: {}",
        path.display()
    );
    path
}

/// `agentmem --json import PATH`, its report.
fn import(dir: &Path, path: &Path) -> Value {
    let args = common::args(&["--json", "import", path.to_str().unwrap()]);
    let out = common::agentmem_with_input(dir, &args, &[], "");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn session_count(dir: &Path) -> usize {
    let out =
        common::agentmem_with_input(dir, &common::args(&["--json", "sessions", "list"]), &[], "");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array().unwrap().len()
}

fn appended(report: &Value) -> u64 {
    report["appended"].as_u64().unwrap()
}

#[test]
fn importing_a_file_again_finds_the_session_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "swe-agent/6e44b9__sweagenttestrepo-1c2844.traj",
            "swe-agent",
        ),
        ("mini-swe-agent/github_issue.traj.json", "openai-messages"),
        ("openhands/basic.json", "openhands"),
    ];
    for (name, format) in files {
        let path = shared(name);
        let first = import(dir.path(), &path);
        assert_eq!(first["format"], format);
        assert!(appended(&first) > 0, "{first}");
        let second = import(dir.path(), &path);
        assert_eq!(second["session"], first["session"], "{name}");
        assert_eq!(appended(&second), 0, "{name}: {second}");
        assert_eq!(second["already_present"], first["appended"], "{name}");
    }
    assert_eq!(session_count(dir.path()), files.len());
}

/// The messages of a real mini-swe-agent run (OpenAI messages).
fn mini_swe_agent_run() -> Vec<Value> {
    let path = shared("mini-swe-agent/github_issue.traj.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `messages` written as a chat transcript file.
fn messages_file(path: &Path, messages: &[Value]) {
    std::fs::write(path, serde_json::to_string_pretty(messages).unwrap()).unwrap();
}

#[test]
fn a_file_that_grew_finds_its_session_and_adds_only_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let full = mini_swe_agent_run();
    let growing = dir.path().join("run.json");
    messages_file(&growing, &full[..9]);
    let first = import(dir.path(), &growing);
    messages_file(&growing, &full);
    let second = import(dir.path(), &growing);
    assert_eq!(second["session"], first["session"]);
    assert_eq!(second["already_present"], first["appended"]);
    assert!(appended(&second) > 0);

    let whole = tempfile::tempdir().unwrap();
    let at_once = import(whole.path(), &growing);
    assert_eq!(appended(&first) + appended(&second), appended(&at_once));
    assert_eq!(session_count(dir.path()), 1);
}

#[test]
fn another_run_that_opens_the_same_way_gets_a_session_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let run = mini_swe_agent_run();
    let mut other = run.clone();
    other[5]["content"] = "I will look at the tests first.".into();
    let (first_path, other_path) = (dir.path().join("a.json"), dir.path().join("b.json"));
    messages_file(&first_path, &run);
    messages_file(&other_path, &other);
    let first = import(dir.path(), &first_path);
    let second = import(dir.path(), &other_path);
    assert_ne!(second["session"], first["session"]);
    assert_eq!(appended(&second), appended(&first), "{second}");
    for (path, report) in [(&first_path, &first), (&other_path, &second)] {
        let again = import(dir.path(), path);
        assert_eq!(again["session"], report["session"]);
        assert_eq!(appended(&again), 0);
    }
    assert_eq!(session_count(dir.path()), 2);
}
