//! Whole-file rewrites that a crash cannot half-do: write a temporary file in
//! the same directory, fsync it, rename it over the target, fsync the directory.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result};

/// Replaces `path` with `bytes` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent(path);
    let (tmp, mut file) = tempfile_in(dir, path)?;
    let written = (|| {
        file.write_all(bytes).io("write", &tmp)?;
        file.sync_all().io("fsync", &tmp)?;
        drop(file);
        fs::rename(&tmp, path).io("rename into place", path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    sync_dir(dir)
}

/// Removes the temporary files (`.<target>.<…>.tmp`, as [`write_atomic`]
/// and the writers like it name them) a writer killed mid-write left in
/// `dir`, those whose `<target>.<…>` part `ours` accepts; call it holding
/// the lock that keeps other writers of those targets out. A missing folder
/// has none.
pub fn remove_stale_temporaries(dir: &Path, ours: impl Fn(&str) -> bool) -> Result<()> {
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
