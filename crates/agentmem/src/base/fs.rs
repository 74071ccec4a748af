//! The file helpers every writer shares, written once.
//!
//! Whole-file rewrites that a crash cannot half-do: write a temporary file in
//! the same directory, fsync it, rename it over the target, fsync the directory.
//!
//! Files that hold what sessions said (logs, archives, snapshots, the
//! agent's memories and search index, evicted outputs) and the lock files
//! writers record their batches in are readable and writable by their owner
//! only: agentmem creates them with mode 0600, and the folders it makes
//! (the data directory's, an agent's, its sessions', `evicted/`) with mode
//! 0700, whatever the umask.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::error::{IoContext, Result};

/// Replaces `path` with `bytes` atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_flushed(path, bytes, Flush::ToDisk)
}

/// Whether a whole-file rewrite waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flush {
    /// fsync the file and its folder: the rewrite survives a power loss.
    ToDisk,
    /// Leave flushing to the operating system: the rewrite survives a
    /// process crash, whole or not at all, but not a power loss.
    ByOs,
}

/// Replaces `path` with `bytes` atomically, reaching the disk as `flush` says.
pub(crate) fn write_atomic_flushed(path: &Path, bytes: &[u8], flush: Flush) -> Result<()> {
    let dir = parent(path);
    let (tmp, mut file) = tempfile_in(dir, path)?;
    let written = (|| {
        file.write_all(bytes).io("write", &tmp)?;
        match flush {
            Flush::ToDisk => file.sync_all().io("fsync", &tmp)?,
            Flush::ByOs => {}
        }
        drop(file);
        fs::rename(&tmp, path).io("rename into place", path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    match flush {
        Flush::ToDisk => sync_dir(dir),
        Flush::ByOs => Ok(()),
    }
}

/// Removes the temporary files (`.<target>.<…>.tmp`, as [`write_atomic`]
/// and the writers like it name them) a writer killed mid-write left in
/// `dir`, those whose `<target>.<…>` part `ours` accepts; call it holding
/// the lock that keeps other writers of those targets out. A missing folder
/// has none.
pub(crate) fn remove_stale_temporaries(dir: &Path, ours: impl Fn(&str) -> bool) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).io("list", dir),
    };
    for entry in entries {
        let entry = entry.io("list", dir)?;
        let name = entry.file_name();
        let stale = name
            .to_str()
            .and_then(|name| name.strip_prefix('.')?.strip_suffix(".tmp"))
            .is_some_and(&ours)
            && entry.file_type().is_ok_and(|t| t.is_file());
        if stale {
            let path = entry.path();
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).io("remove", &path),
            }
        }
    }
    Ok(())
}
/// fsyncs a directory so a rename or a new file in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .io("fsync directory", dir)
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A new temporary file next to `target`, named so it is never mistaken for
/// data (`.<target>.<pid>.<n>.tmp`, unique in the process), created private
/// with exactly [`PRIVATE_FILE_MODE`] whatever the umask.
fn tempfile_in(dir: &Path, target: &Path) -> Result<(std::path::PathBuf, File)> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        TMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = private_options();
    options.write(true).create_new(true);
    let file = match options.open(&tmp) {
        // A temporary file left by a crash of a process with the same pid.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            fs::remove_file(&tmp).io("remove stale temporary file", &tmp)?;
            options.open(&tmp)
        }
        other => other,
    }
    .io("create", &tmp)?;
    #[cfg(unix)]
    {
        // The mode given at creation is masked by the umask; make it exact.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(PRIVATE_FILE_MODE))
            .io("set permissions of", &tmp)?;
    }
    Ok((tmp, file))
}

/// Creates the folder `dir` (private, with those above it) when it is
/// missing, and makes its entry in its parent durable.
pub(crate) fn create_private_dir_durably(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    create_dir_all(dir).io("create", dir)?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => Ok(()),
    }
}

/// The mode agentmem creates files with: read and write for the owner.
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;

/// The mode agentmem creates folders with: the owner's only.
pub(crate) const PRIVATE_DIR_MODE: u32 = 0o700;

/// Open options that create files with [`PRIVATE_FILE_MODE`] (on Unix;
/// elsewhere the platform's default).
pub(crate) fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(PRIVATE_FILE_MODE);
    }
    options
}

/// Opens `path` for appending, created private when it is missing.
pub(crate) fn open_append(path: &Path) -> std::io::Result<File> {
    private_options().create(true).append(true).open(path)
}

/// Opens `path` for writing from empty, created private when it is missing.
pub(crate) fn create(path: &Path) -> std::io::Result<File> {
    private_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

/// A folder builder that creates folders with [`PRIVATE_DIR_MODE`] (on
/// Unix; elsewhere the platform's default).
fn private_dir_builder() -> DirBuilder {
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(PRIVATE_DIR_MODE);
    }
    builder
}

/// Creates the folder `path`, private; an error when it exists.
pub(crate) fn create_dir(path: &Path) -> std::io::Result<()> {
    private_dir_builder().create(path)
}

/// Creates the folder `path` and those above it that are missing, each
/// private; folders that exist are left as they are.
pub(crate) fn create_dir_all(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    private_dir_builder().recursive(true).create(path)
}
