//! `raw_traces_archive.jsonl`: the events compactions moved out of the
//! active log, appended whole and never rewritten.
//!
//! A compaction appends its span here before it commits (writes the
//! snapshot), and the active log keeps those events until after the commit.
//! So in a session at rest the archive and the active log hold no event in
//! common, and archive lines whose events the active log still holds can
//! only be the append of a compaction cut short: they are cut when the
//! session is next opened for writing (its events are in the active log,
//! and the compaction runs again when it is due).

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use super::jsonl::last_line_start;
use crate::base::error::{IoContext, Result};

/// The ids of every event in the archive at `path`, in order (none when
/// there is no archive). Reads only each line's id.
pub(crate) fn archived_ids(path: &Path) -> Result<Vec<String>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).io("read", path),
    };
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter_map(id_of)
        .map(str::to_owned)
        .collect())
}

/// The id of the event on `line`, when it is one.
fn id_of(line: &[u8]) -> Option<&str> {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: &'a str,
    }
    serde_json::from_slice::<IdOnly>(line).ok().map(|e| e.id)
}

/// Cuts the archive's unfinished end: a torn last line, and the last lines
/// whose events `still_active` says the active log holds (see the module
/// docs). Returns how many lines were cut.
pub(crate) fn cut_unfinished_append(
    path: &Path,
    still_active: impl Fn(&str) -> bool,
) -> Result<usize> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).io("open", path),
    };
    let full_len = file.metadata().io("stat", path)?.len();
    let mut len = full_len;
    let mut cut = 0;
    while len > 0 {
        let start = last_line_start(&mut file, len).io("read", path)?;
        let mut line = vec![0; (len - start) as usize];
        file.seek(SeekFrom::Start(start)).io("read", path)?;
        file.read_exact(&mut line).io("read", path)?;
        let whole = line.ends_with(b"\n");
        let unfinished = !whole || id_of(line.trim_ascii_end()).is_some_and(&still_active);
        if !unfinished {
            break;
        }
        len = start;
        cut += 1;
    }
    if len < full_len {
        file.set_len(len).io("truncate", path)?;
        file.sync_all().io("fsync", path)?;
    }
    Ok(cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::event::Event;
    use crate::files::jsonl::encode_lines;

    fn lines(ids: &[&str]) -> Vec<u8> {
        let events: Vec<Event> = ids.iter().map(|id| Event::user(*id).with_id(*id)).collect();
        encode_lines(&events)
    }

    #[test]
    fn the_lines_still_active_and_a_torn_one_are_cut_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw_traces_archive.jsonl");
        let kept = lines(&["a1", "a2"]);
        let unfinished = lines(&["s1", "s2"]);
        let torn = &lines(&["s3"])[..10];
        std::fs::write(&path, [&kept[..], &unfinished, torn].concat()).unwrap();
        let active = ["s1", "s2", "s3", "t1"];
        let cut = cut_unfinished_append(&path, |id| active.contains(&id)).unwrap();
        assert_eq!(cut, 3);
        assert_eq!(std::fs::read(&path).unwrap(), kept);
        assert_eq!(archived_ids(&path).unwrap(), ["a1", "a2"]);
        // At rest, nothing is cut.
        assert_eq!(
            cut_unfinished_append(&path, |id| active.contains(&id)).unwrap(),
            0
        );
        assert_eq!(std::fs::read(&path).unwrap(), kept);
    }

    #[test]
    fn a_line_longer_than_one_backward_read_is_found_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw_traces_archive.jsonl");
        let mut long = Event::user("x".repeat(200 * 1024));
        long.id = "long".into();
        let bytes = [lines(&["a1"]), encode_lines(&[long])].concat();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cut_unfinished_append(&path, |id| id == "a1").unwrap(), 0);
        assert_eq!(cut_unfinished_append(&path, |id| id == "long").unwrap(), 1);
        assert_eq!(std::fs::read(&path).unwrap(), lines(&["a1"]));
    }
}
