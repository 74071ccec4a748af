//! Files that hold what sessions said (logs, archives, snapshots, working
//! memory, the agent's memories and search index, evicted outputs) are
//! readable by their owner only: agentmem creates them with mode 0600.

use std::fs::{File, OpenOptions};
use std::path::Path;

/// The mode agentmem creates files with: read and write for the owner.
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;

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
