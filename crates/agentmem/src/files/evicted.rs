//! Evicted tool outputs on disk: each in `evicted/<name>.txt` of its
//! session, written privately (0600 in a 0700 folder), atomically and
//! durably, and read back a page of lines at a time.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::IdKind;
use crate::base::error::{Error, Result};
use crate::base::fs::{create_private_dir_durably, write_atomic_flushed, Flush};
use crate::base::id::validate_path_id;
use crate::pipeline::guard::{count_lines, floor_boundary, EvictedOutputs};

/// The most text one page of [`read_evicted`] holds, in bytes. As a token is at
/// least one byte, a page can never be over the default eviction threshold:
/// reading an evicted output never evicts it again.
///
/// ```
/// use agentmem::pipeline::guard::DEFAULT_EVICTION_THRESHOLD_TOKENS;
/// use agentmem::files::evicted::EVICTED_PAGE_MAX_BYTES;
/// assert!(EVICTED_PAGE_MAX_BYTES as u64 <= DEFAULT_EVICTION_THRESHOLD_TOKENS);
/// ```
pub const EVICTED_PAGE_MAX_BYTES: usize = 20_000;

/// The file an evicted output of `call_id` lives in: `dir/<call_id>.txt`,
/// after validating the id (a bad id is an [`Error::InvalidId`]).
///
/// ```
/// use agentmem::files::evicted::evicted_path;
/// use std::path::Path;
/// assert_eq!(evicted_path(Path::new("s/evicted"), "call_1").unwrap(), Path::new("s/evicted/call_1.txt"));
/// assert!(evicted_path(Path::new("s/evicted"), "../x").is_err());
/// ```
pub fn evicted_path(dir: &Path, call_id: &str) -> Result<PathBuf> {
    validate_path_id(IdKind::ToolCall, call_id)?;
    Ok(dir.join(format!("{call_id}.txt")))
}

/// The name to evict the output of `call_id` under in `dir`: the call id,
/// or `<call id>-2`, `-3`, … when an output of an earlier call with that id
/// is there already (agents reuse ids), so no output replaces another.
pub(crate) fn unused_evicted_name(dir: &Path, call_id: &str) -> Result<String> {
    unused_name(call_id, |name| dir.join(format!("{name}.txt")).exists())
}

/// The name to evict the output of `call_id` under, when `taken` says
/// which names are taken (see [`unused_evicted_name`]).
pub(crate) fn unused_name(call_id: &str, taken: impl Fn(&str) -> bool) -> Result<String> {
    validate_path_id(IdKind::ToolCall, call_id)?;
    Ok(std::iter::once(call_id.to_owned())
        .chain((2u64..).map(|n| format!("{call_id}-{n}")))
        .find(|name| !taken(name))
        .expect("some number is free"))
}

/// One page of an evicted output, as returned by [`read_evicted`].
///
/// ```
/// use agentmem::files::evicted::EvictedPage;
/// let page = EvictedPage { text: "a\n".into(), offset: 0, lines_returned: 1, total_lines: 3, has_more: true };
/// assert_eq!(serde_json::to_value(&page).unwrap()["has_more"], true);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictedPage {
    /// The lines, each with its line ending, exactly as in the output.
    pub text: String,
    /// The first line of the page (0-based), as asked.
    pub offset: usize,
    /// How many lines the page holds.
    pub lines_returned: usize,
    /// How many lines the whole output has.
    pub total_lines: usize,
    /// Lines follow this page: ask again with `offset + lines_returned`.
    pub has_more: bool,
}

/// Reads `limit` lines of the evicted output of `call_id`, from line `offset`
/// (0-based). `dir` is the session's `evicted/` folder, as given to
/// [`guard_tool_output`](crate::pipeline::guard::guard_tool_output).
///
/// Concatenating the pages gives back the output byte for byte. A page stops
/// early at [`EVICTED_PAGE_MAX_BYTES`] (always holding at least one line; a
/// single line longer than that is shown cut, with a note). An offset past the
/// end gives an empty page. Errors: [`Error::InvalidId`] for a bad id,
/// [`Error::EvictedNotFound`] when the call's output was never evicted here.
///
/// ```
/// use agentmem::pipeline::guard::{guard_tool_output, GuardPolicy, Truncation};
/// use agentmem::files::evicted::read_evicted;
/// use agentmem::Encoding;
/// let dir = tempfile::tempdir().unwrap();
/// let policy = GuardPolicy { truncation: Truncation::None, evict_over_tokens: Some(100) };
/// let output: String = (0..50).map(|i| format!("line {i}\n")).collect();
/// guard_tool_output("c7", &output, &policy, Encoding::O200kBase.tokenizer(), dir.path()).unwrap();
///
/// let page = read_evicted(dir.path(), "c7", 0, 20).unwrap();
/// assert_eq!((page.lines_returned, page.total_lines, page.has_more), (20, 50, true));
/// let last = read_evicted(dir.path(), "c7", 40, 20).unwrap();
/// assert_eq!((last.lines_returned, last.has_more), (10, false));
/// assert!(last.text.ends_with("line 49\n"));
/// assert!(read_evicted(dir.path(), "nope", 0, 20).is_err());
/// ```
pub fn read_evicted(dir: &Path, call_id: &str, offset: usize, limit: usize) -> Result<EvictedPage> {
    let path = evicted_path(dir, call_id)?;
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(Error::EvictedNotFound {
                call_id: call_id.to_owned(),
            })
        }
        Err(source) => {
            return Err(Error::Io {
                action: "read evicted output",
                path,
                source,
            })
        }
    };
    Ok(page_of(&text, offset, limit))
}

/// Lines `offset..offset + limit` of the output `text`, as
/// [`read_evicted`] pages it (for outputs read from elsewhere than a folder).
pub fn page_of(text: &str, offset: usize, limit: usize) -> EvictedPage {
    let total_lines = count_lines(text);
    let mut page = String::new();
    let mut lines_returned = 0;
    for line in text.split_inclusive('\n').skip(offset).take(limit) {
        if lines_returned == 0 && line.len() > EVICTED_PAGE_MAX_BYTES {
            let shown = floor_boundary(line, EVICTED_PAGE_MAX_BYTES);
            page.push_str(&line[..shown]);
            page.push_str(&format!(
                "\n[… line {} is {} bytes long; only its first {shown} are shown]\n",
                offset + 1,
                line.len()
            ));
            lines_returned = 1;
            break;
        }
        if page.len() + line.len() > EVICTED_PAGE_MAX_BYTES {
            break;
        }
        page.push_str(line);
        lines_returned += 1;
    }
    EvictedPage {
        text: page,
        offset,
        lines_returned,
        total_lines,
        has_more: offset.saturating_add(lines_returned) < total_lines,
    }
}

/// Writes `content` to `dir/<call_id>.txt` (`dir` is the session's `evicted/`
/// folder, created if missing), mode 0600, atomically and durably: a
/// temporary file in the same folder (created 0600), fsync, rename, fsync of
/// the folder. The id is validated first; nothing is written for a bad one.
/// Writing again replaces the file. Returns the file's path.
///
/// ```
/// use agentmem::files::evicted::{read_evicted, write_evicted};
/// let dir = tempfile::tempdir().unwrap();
/// let path = write_evicted(dir.path(), "call_1", "a\nb\n").unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
/// assert_eq!(read_evicted(dir.path(), "call_1", 1, 10).unwrap().text, "b\n");
/// assert!(write_evicted(dir.path(), "../escape", "x").is_err());
/// ```
pub fn write_evicted(dir: &Path, call_id: &str, content: &str) -> Result<PathBuf> {
    write_evicted_flushed(dir, call_id, content, Flush::ToDisk)
}

/// [`write_evicted`], reaching the disk as `flush` says: as the session's
/// own appends do (an output evicted at ingest is in the log too).
pub(crate) fn write_evicted_flushed(
    dir: &Path,
    call_id: &str,
    content: &str,
    flush: Flush,
) -> Result<PathBuf> {
    let path = evicted_path(dir, call_id)?;
    create_private_dir_durably(dir)?;
    write_atomic_flushed(&path, content.as_bytes(), flush)?;
    Ok(path)
}

/// A folder of evicted outputs: the guard's evictions are written there by
/// [`write_evicted`].
impl EvictedOutputs for Path {
    fn keep(&self, call_id: &str, content: &str) -> Result<PathBuf> {
        write_evicted(self, call_id, content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_evicted_pages_by_lines() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..1_000).map(|i| format!("line {i} 日本語\n")).collect();
        write_evicted(dir.path(), "c9", &text).unwrap();

        let page = read_evicted(dir.path(), "c9", 0, 200).unwrap();
        assert_eq!(
            (
                page.offset,
                page.lines_returned,
                page.total_lines,
                page.has_more
            ),
            (0, 200, 1_000, true)
        );
        assert!(
            page.text.starts_with("line 0 日本語\n") && page.text.ends_with("line 199 日本語\n")
        );
        let page = read_evicted(dir.path(), "c9", 990, 200).unwrap();
        assert_eq!((page.lines_returned, page.has_more), (10, false));
        assert!(page.text.ends_with("line 999 日本語\n"));
        let page = read_evicted(dir.path(), "c9", 5_000, 200).unwrap();
        assert_eq!(
            (page.text.as_str(), page.lines_returned, page.has_more),
            ("", 0, false)
        );

        // Pages concatenate back to the original.
        let mut all = String::new();
        let mut offset = 0;
        loop {
            let page = read_evicted(dir.path(), "c9", offset, 333).unwrap();
            all.push_str(&page.text);
            offset += page.lines_returned;
            if !page.has_more {
                break;
            }
        }
        assert_eq!(all, text);

        // Unknown call: a typed error naming it.
        let err = read_evicted(dir.path(), "c10", 0, 10).unwrap_err();
        assert!(matches!(&err, Error::EvictedNotFound { call_id } if call_id == "c10"));
        assert!(
            err.to_string().contains("tool calls carry the ids"),
            "{err}"
        );
    }

    #[test]
    fn read_evicted_pages_stay_small() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..100)
            .map(|i| format!("{i:03}{}\n", "z".repeat(995)))
            .collect();
        write_evicted(dir.path(), "c1", &text).unwrap();
        let page = read_evicted(dir.path(), "c1", 0, 200).unwrap();
        assert_eq!(page.lines_returned, 20);
        assert!(page.text.len() <= EVICTED_PAGE_MAX_BYTES && page.has_more);
        // A single line longer than a page is cut, with a note.
        let huge = format!("{}\nend\n", "日".repeat(30_000));
        write_evicted(dir.path(), "c2", &huge).unwrap();
        let page = read_evicted(dir.path(), "c2", 0, 200).unwrap();
        assert_eq!(
            (page.lines_returned, page.total_lines, page.has_more),
            (1, 2, true)
        );
        assert!(page.text.contains("90001 bytes long"));
        let page = read_evicted(dir.path(), "c2", 1, 200).unwrap();
        assert_eq!(page.text, "end\n");
    }
}
