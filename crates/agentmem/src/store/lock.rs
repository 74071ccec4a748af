//! One writer per session: an exclusive lock on `<session>/lock`, holding the
//! writer's pid so the refusal can say who holds it. The operating system
//! releases the lock when the process dies, so a crash never leaves a session
//! locked. Readers do not take the lock and never block.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// The lock file's name inside a session directory.
pub const LOCK_FILE: &str = "lock";

/// Holds a session's writer lock until dropped.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Takes the writer lock of the session in `session_dir`, or says which pid holds it.
    pub fn acquire(session_dir: &Path, session: &str) -> Result<Self> {
        let path = session_dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .io("open", &path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
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
        file.set_len(0).io("truncate", &path)?;
        file.rewind().io("seek", &path)?;
        write!(file, "{}", std::process::id()).io("write", &path)?;
        Ok(SessionLock { _file: file })
    }
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
}
