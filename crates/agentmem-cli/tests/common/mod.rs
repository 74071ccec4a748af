//! What several of the binary's test files share.

// Each test file uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

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
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
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
