//! The Python examples in `examples/python` run against the binary: clients
//! that were not written with the server, driving it as their authors would.

use std::path::Path;
use std::process::Command;

fn run_example(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/python")
        .join(name);
    let output = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_agentmem"))
        .arg(dir.path())
        .output()
        .expect("python3 runs the examples");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_python_agent_loop_runs_over_json_lines() {
    let out = run_example("agent_loop_stdio.py");
    assert!(
        out.contains("turn 3: ") && out.contains("I see 6 messages"),
        "{out}"
    );
    assert!(out.contains("search found user-1 in turn_0002"), "{out}");
    assert!(out.contains("ended; episode ep-"), "{out}");
}

#[test]
fn the_python_mcp_client_lists_and_calls_the_tools() {
    let out = run_example("mcp_client.py");
    assert!(out.contains("server agentmem speaks 2025-06-18"), "{out}");
    assert!(out.contains("tools: read_memory, write_memory"), "{out}");
    assert!(out.contains("remember_fact: Remembered as fact"), "{out}");
    assert!(out.contains("recall: [MEMORY:SEMANTIC]"), "{out}");
}

#[test]
fn the_python_agent_loop_runs_over_http() {
    let out = run_example("agent_loop_http.py");
    assert!(out.contains("health: ok"), "{out}");
    assert!(out.contains("turn 3: I see 6 messages"), "{out}");
    assert!(out.contains("retry: appended 0, duplicates 1"), "{out}");
    assert!(out.contains("search found user-1 in turn_0002"), "{out}");
    assert!(out.contains("stale edit refused: 409 conflict"), "{out}");
    assert!(out.contains("memory at the same hash"), "{out}");
    // The compaction asked for folded the first turn: the fork keeps the
    // whole history, that turn in its archive (with the summary of it).
    assert!(out.contains("compacted 2 events"), "{out}");
    assert!(
        out.contains("forked what-if with 6 events, 2 of them archived"),
        "{out}"
    );
    assert!(out.contains("remember_fact: Remembered as fact"), "{out}");
    assert!(out.contains("ended; episode ep-"), "{out}");
    assert!(out.contains("server exit code: 0"), "{out}");
}
