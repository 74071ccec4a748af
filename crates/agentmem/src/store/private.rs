//! Files that hold what sessions said (logs, archives, snapshots, the
//! agent's memories and search index, evicted outputs) and the lock files
//! writers record their batches in are readable and writable by their owner
//! only: agentmem creates them with mode 0600, and the folders it makes
//! (the data directory's, an agent's, its sessions', `evicted/`) with mode
//! 0700, whatever the umask.

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::Path;

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
