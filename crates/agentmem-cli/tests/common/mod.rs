//! What several of the binary's test files share.

// Each test file uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `command` with `stdin` as its input and waits for it, whatever its exit.
pub fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    run_with_stdin_bytes(command, stdin.as_bytes())
}

/// [`run_with_stdin`] with input that need not be text.
pub fn run_with_stdin_bytes(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `agentmem --dir DIR ARGS…` with `input` on stdin, waited for; fails the
/// test when it exits unsuccessfully. `env` sets (`Some`) or removes (`None`)
/// variables.
pub fn agentmem_with_input(
    dir: &Path,
    args: &[String],
    env: &[(&str, Option<&str>)],
    input: &str,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    command.arg("--dir").arg(dir).args(args);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = run_with_stdin(&mut command, input);
    assert!(
        output.status.success(),
        "agentmem {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `strs` as owned arguments.
pub fn args(strs: &[&str]) -> Vec<String> {
    strs.iter().map(|s| s.to_string()).collect()
}

/// Ingests `texts` as the user's lines of session `past`.
pub fn ingest_user_lines(dir: &Path, texts: &[&str]) {
    let events: String = texts
        .iter()
        .map(|text| {
            format!(
                "{}\n",
                serde_json::json!({"trace_type": "user", "content": text})
            )
        })
        .collect();
    agentmem_with_input(dir, &args(&["ingest", "--session", "past"]), &[], &events);
}

/// `agentmem --json recall QUESTION --budget BUDGET EXTRA…` with no OpenAI
/// key in the environment, its output parsed.
pub fn recall_json(dir: &Path, question: &str, budget: &str, extra: &[&str]) -> serde_json::Value {
    let mut arguments = args(&["--json", "recall", question, "--budget", budget]);
    arguments.extend(args(extra));
    let output = agentmem_with_input(dir, &arguments, &[("OPENAI_API_KEY", None)], "");
    serde_json::from_slice(&output.stdout).unwrap()
}
