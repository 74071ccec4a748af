//! Whole-file rewrites that a crash cannot half-do: write a temporary file in
//! the same directory, fsync it, rename it over the target, fsync the directory.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result};

/// Replaces `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent(path);
    let mut tmp = tempfile_in(dir, path)?;
    tmp.1.write_all(bytes).io("write", &tmp.0)?;
    tmp.1.sync_all().io("fsync", &tmp.0)?;
    drop(tmp.1);
    fs::rename(&tmp.0, path).io("rename into place", path)?;
    sync_dir(dir)
}

/// fsyncs a directory so a rename or a new file in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
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

/// A new temporary file next to `target`, named so it is never mistaken for data.
fn tempfile_in(dir: &Path, target: &Path) -> Result<(std::path::PathBuf, File)> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = super::private::create(&tmp).io("create", &tmp)?;
    Ok((tmp, file))
}
