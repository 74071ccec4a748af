//! One writer per session: an exclusive lock on `<session>/lock`, holding the
//! writer's pid so the refusal can say who holds it. The operating system
//! releases the lock when the process dies, so a crash never leaves a session
//! locked. Readers do not take the lock and never block.
//!
//! The lock file also records the append of several events under way (the
//! log's bytes its lines take), written before the lines are: a batch is
//! all or nothing, and one a crash cut short is found there on open and
//! taken out of the log (see `crate::files::jsonl::cut_unfinished_batch`).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::base::error::{Error, IoContext, Result};
use crate::files::jsonl::Durability;

/// The lock file's name inside a session directory.
pub(crate) const LOCK_FILE: &str = "lock";

/// An append of several events to a session's log, as its writer recorded
/// it before writing: the log it went to (by inode, on Unix) and the bytes
/// its lines take. The batch is whole once the log reaches `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingBatch {
    /// The inode of the log the batch was appended to.
    pub log_inode: u64,
    /// The log's length before the batch.
    pub start: u64,
    /// The log's length after the batch.
    pub end: u64,
}

impl PendingBatch {
    /// The record's fixed-width line, so it is rewritten in place.
    fn line(&self) -> String {
        format!(
            "batch {:020} {:020} {:020}\n",
            self.log_inode, self.start, self.end
        )
    }

    fn parse(line: &str) -> Option<PendingBatch> {
        let mut fields = line.strip_prefix("batch ")?.split_ascii_whitespace();
        let mut number = || fields.next()?.parse::<u64>().ok();
        let batch = PendingBatch {
            log_inode: number()?,
            start: number()?,
            end: number()?,
        };
        (batch.start < batch.end).then_some(batch)
    }
}

/// No batch under way.
const NO_BATCH: PendingBatch = PendingBatch {
    log_inode: 0,
    start: 0,
    end: 0,
};

/// Holds a session's writer lock until dropped.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: std::path::PathBuf,
    /// The first line of the file: this writer's pid.
    pid_line: String,
    /// What the previous writer recorded as under way when it stopped.
    previous_batch: Option<PendingBatch>,
}

impl SessionLock {
    /// Takes the writer lock of the session in `session_dir`, or says which pid holds it.
    pub fn acquire(session_dir: &Path, session: &str) -> Result<Self> {
        let path = session_dir.join(LOCK_FILE);
        let mut file = open_lock_file(&path)?;
        let mut recorded = String::new();
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let _ = file.read_to_string(&mut recorded);
                let pid = recorded.lines().next().unwrap_or_default().trim();
                return Err(Error::SessionLocked {
                    session: session.to_owned(),
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid.to_owned()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e).io("lock", &path),
        }
        let _ = file.read_to_string(&mut recorded);
        let previous_batch = recorded.lines().nth(1).and_then(PendingBatch::parse);
        let pid_line = format!("{:>10}\n", std::process::id());
        // The pid alone: the previous writer's batch stays recorded until
        // the log is repaired ([`SessionLock::clear_batch`]), so a writer
        // killed before the repair leaves it to the next.
        let pid_only = match previous_batch {
            Some(_) => pid_line.clone(),
            None => format!("{pid_line}{}", NO_BATCH.line()),
        };
        write_all_at_start(&file, pid_only.as_bytes()).io("write", &path)?;
        Ok(SessionLock {
            file,
            path,
            pid_line,
            previous_batch,
        })
    }

    /// The batch the previous writer recorded as under way when it stopped:
    /// cut short, unless the log it names reaches its end.
    pub(crate) fn previous_batch(&self) -> Option<PendingBatch> {
        self.previous_batch
    }

    /// Records `batch` as under way, before its lines are written; synced
    /// under [`Durability::Always`], so it holds across a power loss too.
    pub(crate) fn record_batch(
        &mut self,
        batch: PendingBatch,
        durability: Durability,
    ) -> Result<()> {
        self.write_record(batch, durability)
    }

    /// Records that no batch is under way: the log was repaired (a batch
    /// cut short taken out) or replaced.
    pub(crate) fn clear_batch(&mut self) -> Result<()> {
        self.previous_batch = None;
        self.write_record(NO_BATCH, Durability::Os)
    }

    fn write_record(&mut self, batch: PendingBatch, durability: Durability) -> Result<()> {
        let record = format!("{}{}", self.pid_line, batch.line());
        write_all_at_start(&self.file, record.as_bytes()).io("write", &self.path)?;
        match durability {
            Durability::Always => self.file.sync_data().io("fsync", &self.path),
            Durability::Batch | Durability::Os => Ok(()),
        }
    }
}

/// What the writer of the session in `session_dir` records as under way
/// (read without the lock, by readers).
pub(crate) fn pending_batch(session_dir: &Path) -> Option<PendingBatch> {
    let recorded = std::fs::read_to_string(session_dir.join(LOCK_FILE)).ok()?;
    recorded.lines().nth(1).and_then(PendingBatch::parse)
}

/// One write at the file's start: the record keeps its length, so it is
/// never seen half cleared.
#[cfg(unix)]
fn write_all_at_start(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, 0)
}

#[cfg(not(unix))]
fn write_all_at_start(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, Write};
    file.rewind()?;
    file.write_all(bytes)
}

/// The lock file's name inside an agent's folder.
pub(crate) const MEMORY_LOCK_FILE: &str = "memory.lock";

/// The agent-wide files read, changed and written back whole or in part
/// under [`MemoryLock`]: the notebook, the facts, the episodes.
const GUARDED_FILES: [&str; 3] = [
    crate::files::paths::MEMORY_FILE,
    crate::files::paths::SEMANTIC_FILE,
    crate::files::paths::EPISODIC_FILE,
];

/// Holds an agent's memory lock until dropped: every read-modify-write of
/// its `MEMORY.md`, facts and episodes runs under it, so writers in other
/// processes (and threads) wait for each other instead of losing updates.
/// Held for the length of one edit; the operating system releases it when
/// the process dies.
#[derive(Debug)]
pub(crate) struct MemoryLock {
    _file: File,
}

impl MemoryLock {
    /// Waits for and takes the memory lock of the agent whose folder is
    /// `agent_dir` (created when missing), then removes the temporary files
    /// a writer killed mid-edit left beside the guarded files.
    pub fn acquire(agent_dir: &Path) -> Result<Self> {
        crate::base::fs::create_dir_all(agent_dir).io("create", agent_dir)?;
        let path = agent_dir.join(MEMORY_LOCK_FILE);
        let file = open_lock_file(&path)?;
        file.lock().io("lock", &path)?;
        crate::base::fs::remove_stale_temporaries(agent_dir, of_a_guarded_file)?;
        Ok(MemoryLock { _file: file })
    }
}

/// Whether a temporary file (named `.<inner>.tmp`) stands in for a guarded file.
fn of_a_guarded_file(inner: &str) -> bool {
    GUARDED_FILES.iter().any(|guarded| {
        inner
            .strip_prefix(guarded)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// Opens (creating, private) the lock file at `path`, keeping what it holds.
fn open_lock_file(path: &Path) -> Result<File> {
    crate::base::fs::private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .io("open", path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_told_the_pid_of_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = SessionLock::acquire(dir.path(), "s1").unwrap();
        let err = SessionLock::acquire(dir.path(), "s1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("locked by pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(SessionLock::acquire(dir.path(), "s1").is_ok());
    }

    #[test]
    fn the_memory_lock_removes_what_killed_editors_left_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            ".MEMORY.md.4242.tmp",
            ".semantic.jsonl.4242.tmp",
            ".episodic.jsonl.17.tmp",
            ".working_memory.schema.json.4242.tmp",
            "MEMORY.md",
        ];
        for name in names {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let _lock = MemoryLock::acquire(dir.path()).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".working_memory.schema.json.4242.tmp",
                "MEMORY.md",
                MEMORY_LOCK_FILE
            ]
        );
    }
}
