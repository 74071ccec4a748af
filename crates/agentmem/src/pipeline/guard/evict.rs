//! Eviction: the preview the model sees of an evicted output, and the
//! [`EvictedOutputs`] the guard hands the whole output to (the store keeps it).

use std::path::PathBuf;

use super::cut::{count_lines, floor_boundary};
use super::tool::{DEFAULT_READ_LIMIT_LINES, READ_EVICTED_OUTPUT_TOOL};
use crate::base::error::Result;

/// Lines from the start of an evicted output shown in its preview.
///
/// ```
/// assert_eq!(agentmem::pipeline::guard::EVICTION_PREVIEW_HEAD_LINES, 5);
/// ```
pub const EVICTION_PREVIEW_HEAD_LINES: usize = 5;

/// Lines from the end of an evicted output shown in its preview.
///
/// ```
/// assert_eq!(agentmem::pipeline::guard::EVICTION_PREVIEW_TAIL_LINES, 5);
/// ```
pub const EVICTION_PREVIEW_TAIL_LINES: usize = 5;

/// Longest line shown in an eviction preview, in bytes.
const PREVIEW_LINE_MAX_BYTES: usize = 400;

/// Where the guard keeps the outputs it evicts. The guard decides and the
/// store keeps: [`crate::files::evicted`] implements it for a session's
/// `evicted/` folder, so the pipeline itself touches no file.
pub trait EvictedOutputs {
    /// Keeps `content`, the whole output of `call_id`, and returns the file
    /// it is in. A bad `call_id` is an [`Error::InvalidId`](crate::Error::InvalidId)
    /// and keeps nothing.
    fn keep(&self, call_id: &str, content: &str) -> Result<PathBuf>;
}

/// The folder of a session's evicted tool outputs.
pub(crate) const EVICTED_DIR: &str = "evicted";

/// The reference an evicted result's event carries (`tool_result_ref`):
/// `evicted/<name>.txt`, relative to the session's folder.
pub(crate) fn evicted_reference(name: &str) -> String {
    format!("{EVICTED_DIR}/{name}.txt")
}

/// The name an evicted output goes by (what [`read_evicted`](crate::files::evicted::read_evicted) takes), from
/// the `tool_result_ref` eviction gave its event (`evicted_reference`); `None` for a reference
/// eviction did not make.
///
/// ```
/// use agentmem::pipeline::guard::evicted_name;
/// assert_eq!(evicted_name("evicted/call_0-2.txt"), Some("call_0-2"));
/// assert_eq!(evicted_name("s3://bucket/out.json"), None);
/// ```
pub fn evicted_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix(EVICTED_DIR)?
        .strip_prefix('/')?
        .strip_suffix(".txt")
}

/// What the model sees of an evicted output: its size in bytes and lines,
/// its first [`EVICTION_PREVIEW_HEAD_LINES`] and last
/// [`EVICTION_PREVIEW_TAIL_LINES`] lines (each cut at 400 bytes), and how to
/// read the rest. Pure and cheap (nothing is tokenized), so a view can be
/// rebuilt from the log at any time and come out the same.
///
/// ```
/// use agentmem::pipeline::guard::eviction_preview;
/// let output: String = (1..=100).map(|i| format!("line {i}\n")).collect();
/// let preview = eviction_preview("call_9", &output);
/// assert!(preview.contains("line 5\n") && !preview.contains("line 6\n"));
/// assert!(preview.contains("[… 90 lines omitted …]") && preview.contains("line 100\n"));
/// assert!(preview.contains("read_evicted_output") && preview.contains(r#""call_id":"call_9""#));
/// ```
pub fn eviction_preview(call_id: &str, content: &str) -> String {
    let total = count_lines(content);
    let mut out = format!(
        "[tool output evicted: {} bytes, {total} lines; the full output of call {call_id} \
         is saved in the session]\n",
        content.len()
    );
    let head = EVICTION_PREVIEW_HEAD_LINES;
    let tail = EVICTION_PREVIEW_TAIL_LINES;
    if total <= head + tail {
        for line in content.lines() {
            push_preview_line(&mut out, line);
        }
    } else {
        for line in content.lines().take(head) {
            push_preview_line(&mut out, line);
        }
        out.push_str(&format!("[… {} lines omitted …]\n", total - head - tail));
        for line in last_lines(content, tail).lines() {
            push_preview_line(&mut out, line);
        }
    }
    let args = serde_json::json!({
        "call_id": call_id,
        "offset": head.min(total),
        "limit": DEFAULT_READ_LIMIT_LINES,
    });
    out.push_str(&format!(
        "[to read more, call {READ_EVICTED_OUTPUT_TOOL} with {args}; offset and limit count lines]"
    ));
    out
}

/// The last `n` (at least one) of the lines `str::lines` finds in
/// `content`, found from its end.
fn last_lines(content: &str, n: usize) -> &str {
    let body = content.strip_suffix('\n').unwrap_or(content);
    match memchr::memrchr_iter(b'\n', body.as_bytes()).nth(n.saturating_sub(1)) {
        Some(newline) => &content[newline + 1..],
        None => content,
    }
}

fn push_preview_line(out: &mut String, line: &str) {
    let cut = floor_boundary(line, PREVIEW_LINE_MAX_BYTES);
    out.push_str(&line[..cut]);
    if cut < line.len() {
        out.push_str(&format!(" … [{} more bytes]", line.len() - cut));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_are_those_lines_counts_from_the_start() {
        let texts = [
            "a\nb\nc\nd\n",
            "a\nb\nc\nd",
            "a\r\nb\r\n\r\nc\r\n",
            "\n\n\n",
            "one line",
            "x\n\ny\n\n",
        ];
        for text in texts {
            let total = count_lines(text);
            for n in 1..=5 {
                let expected: Vec<&str> = text.lines().skip(total.saturating_sub(n)).collect();
                let found: Vec<&str> = last_lines(text, n).lines().collect();
                assert_eq!(found, expected, "{n} of {text:?}");
            }
        }
    }

    #[test]
    fn a_preview_shows_the_first_and_last_lines_and_how_many_are_left_out() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let preview = eviction_preview("call_7", &text);
        let shown: Vec<&str> = preview.lines().collect();
        let header = format!("[tool output evicted: {} bytes, 100 lines", text.len());
        assert!(shown[0].starts_with(&header), "{}", shown[0]);
        assert_eq!(
            &shown[1..6],
            &["line 0", "line 1", "line 2", "line 3", "line 4"]
        );
        assert_eq!(shown[6], "[… 90 lines omitted …]");
        assert_eq!(
            &shown[7..12],
            &["line 95", "line 96", "line 97", "line 98", "line 99"]
        );
    }
}
