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

/// Runs `agentmem` with its standard streams on a pseudo-terminal, types
/// `input`, and returns everything the terminal showed.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn in_terminal(dir: &Path, args: &[String], input: &str) -> String {
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the pointers it is given.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty failed");
    // SAFETY: both descriptors were just opened and are owned here only.
    let (mut terminal, slave) = unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) };
    let mut child = {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentmem"));
        command
            .arg("--dir")
            .arg(dir)
            .args(args)
            .env_remove("OPENAI_API_KEY")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        command.spawn().unwrap()
    };
    terminal.write_all(input.as_bytes()).unwrap();
    let mut shown = Vec::new();
    // Reading ends with EIO once the child has exited and the terminal is closed.
    let _ = terminal.read_to_end(&mut shown);
    assert!(
        child.wait().unwrap().success(),
        "{}",
        String::from_utf8_lossy(&shown)
    );
    String::from_utf8_lossy(&shown).into_owned()
}

/// `agentmem serve` on the database of `url` over HTTP on a free loopback
/// port, killed when dropped.
pub struct PgServer {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agentmem --dir DIR --agent AGENT serve` with
/// `AGENTMEM_DATABASE_URL` set to `url`, once it listens.
pub fn serve_on_database(dir: &Path, url: &str, agent: &str) -> PgServer {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir)
        .args(["--agent", agent, "serve", "--addr", "127.0.0.1:0"])
        .env("AGENTMEM_DATABASE_URL", url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut server = PgServer {
        child,
        base: String::new(),
    };
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        if let Some(addr) = line.unwrap().split("listening on ").nth(1) {
            server.base = addr.trim().to_owned();
            // What it says later is read, so it never writes to a closed pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return server;
        }
    }
    panic!("serve ended without listening");
}
