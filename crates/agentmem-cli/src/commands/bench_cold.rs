//! `bench --cold`: the query commands as a user's script or an agent's hook
//! runs them, each a whole process on a store of one conversation: process
//! start, opening what the command reads, the query, printing.
//!
//! The store is the workload replayed by `agentmem replay` with its
//! compactions applied inline: the state an agent leaves it in when its
//! model's latency lets each background draft land (a replay with no model
//! latency outruns them and would leave the whole history in the active
//! log, for the first writer to compact). Each command runs once untimed (the page cache warm, the
//! token counts it needs kept), then `runs` times; and again with the data
//! directory's kept token counts removed before each run, so the figures
//! show what loading an encoding's tables costs a command.
//!
//! With history files (LoCoMo's format), their conversations are ingested
//! into the store first, every session of theirs a session of the agent:
//! `search` and `recall` then run over that whole history, `context` and
//! `prepare` still on the workload's conversation.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::bench_search::latency;

/// The session the workload is replayed into.
const SESSION: &str = "cold";
/// Words of the workload's last user message the search and recall queries take.
const QUERY_WORDS: usize = 6;

pub fn run(
    root: &Path,
    workload: &Path,
    history: &[PathBuf],
    runs: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let exe = std::env::current_exe()?;
    let dir = root.join("cold");
    let history = ingest_history(&dir, history)?;
    let agentmem = |args: &[&str]| {
        let mut command = Command::new(&exe);
        command
            .arg("--dir")
            .arg(&dir)
            .arg("--durability")
            .arg("os")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    };
    let workload_arg = workload.to_string_lossy();
    let replay = [
        "replay",
        &workload_arg,
        "--model",
        "gpt-4o",
        "--session",
        SESSION,
        "--compaction-timing",
        "inline",
    ];
    succeed(agentmem(&replay))?;
    let query = last_user_words(workload)?;
    let commands: [(&str, Vec<&str>); 5] = [
        ("process start (--version)", vec!["--version"]),
        ("search", vec!["search", &query]),
        ("recall", vec!["recall", &query]),
        ("context", vec!["context", SESSION, "--model", "gpt-4o"]),
        ("prepare", vec!["prepare", SESSION, "--model", "gpt-4o"]),
    ];
    let kept_counts = dir.join("token-counts");
    let mut rows = Vec::new();
    for kept in [Kept::Counts, Kept::Nothing] {
        for (name, args) in &commands {
            succeed(agentmem(args))?;
            let mut ms = Vec::with_capacity(runs);
            for _ in 0..runs {
                if kept == Kept::Nothing {
                    remove_if_present(&kept_counts)?;
                }
                let started = Instant::now();
                succeed(agentmem(args))?;
                ms.push(started.elapsed().as_secs_f64() * 1e3);
            }
            let detail = format!("{runs} runs, {}{history}", kept.describe());
            rows.push(latency(&format!("cold {name}"), &ms, &detail));
        }
    }
    Ok(rows)
}

/// Ingests every conversation of the `files` into the default agent of the
/// store at `dir`, its sessions named `<sample id>-session_<n>`; what the
/// timed rows add to their detail about it (nothing without files).
fn ingest_history(dir: &Path, files: &[PathBuf]) -> anyhow::Result<String> {
    if files.is_empty() {
        return Ok(String::new());
    }
    let store = agentmem::Store::open(dir, agentmem::Durability::Os)?;
    let agent = agentmem::AgentId::default();
    let (mut sessions, mut turns) = (0usize, 0usize);
    for file in files {
        for conversation in crate::eval::locomo::read(file)? {
            let create = |id: agentmem::SessionId| {
                let sample = crate::eval::locomo::sanitize(&conversation.sample_id);
                let id = agentmem::SessionId::new(format!("{sample}-{id}"))?;
                store.create_session(&agent, Some(id))
            };
            turns += crate::eval::locomo::ingest(&conversation, &create)?.len();
            sessions += conversation.sessions.len();
        }
    }
    Ok(format!(
        ", beside a history of {sessions} sessions ({turns} turns)"
    ))
}

/// What the data directory keeps between the timed runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// The token counts earlier commands kept.
    Counts,
    /// No token counts: each run loads the encoding's tables.
    Nothing,
}

impl Kept {
    fn describe(self) -> &'static str {
        match self {
            Kept::Counts => "token counts kept",
            Kept::Nothing => "no token counts kept",
        }
    }
}

fn succeed(mut command: Command) -> anyhow::Result<()> {
    let output = command.output()?;
    anyhow::ensure!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The first words of the workload's last user message: a question about
/// the conversation, as an agent would ask its memory.
fn last_user_words(workload: &Path) -> anyhow::Result<String> {
    let turns = super::bench_workload::read_turns(workload)?;
    let text = turns
        .iter()
        .flatten()
        .rev()
        .find(|e| e.trace_type == agentmem::TraceType::User)
        .map(|e| e.content.clone())
        .ok_or_else(|| anyhow::anyhow!("{} has no user message", workload.display()))?;
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.chars().all(char::is_alphanumeric))
        .take(QUERY_WORDS)
        .collect();
    Ok(words.join(" "))
}
