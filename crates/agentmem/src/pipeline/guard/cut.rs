//! Cutting and formatting: where a cut falls (character and line
//! boundaries) and the header and marker a truncated output carries.

/// How far (in bytes) a cut moves back or forward to land on a line boundary;
/// never more than a quarter of the part kept.
const LINE_SNAP_MAX_BYTES: usize = 512;

/// `(head_end, tail_start)` keeping at most `kept` bytes, half each side.
pub(super) fn cut_by_bytes(text: &str, kept: usize) -> (usize, usize) {
    let head_budget = kept / 2;
    let tail_budget = kept - head_budget;
    let head_end = snap_head(text, floor_boundary(text, head_budget));
    let tail_start = snap_tail(
        text,
        ceil_boundary(text, text.len().saturating_sub(tail_budget)),
    )
    .max(head_end);
    (head_end, tail_start)
}

/// Moves a head cut back to just before a newline, when one is near.
pub(super) fn snap_head(text: &str, end: usize) -> usize {
    let distance = LINE_SNAP_MAX_BYTES.min(end / 4);
    let from = end - distance;
    let to = (end + 1).min(text.len());
    match text.as_bytes()[from..to].iter().rposition(|&b| b == b'\n') {
        Some(i) => from + i,
        None => end,
    }
}

/// Moves a tail cut forward to just after a newline, when one is near.
pub(super) fn snap_tail(text: &str, start: usize) -> usize {
    if start == 0 {
        return 0;
    }
    let distance = LINE_SNAP_MAX_BYTES.min((text.len() - start) / 4);
    let from = start - 1;
    let to = (start + distance).min(text.len());
    match text.as_bytes()[from..to].iter().position(|&b| b == b'\n') {
        Some(i) => from + i + 1,
        None => start,
    }
}

pub(super) fn header_text(lines: usize) -> String {
    format!("Total output lines: {lines}\n\n")
}

pub(super) fn marker_text(removed: u64, estimated: bool, unit: &str) -> String {
    let tilde = if estimated { "~" } else { "" };
    format!("\n…{tilde}{removed} {unit} truncated…\n")
}

pub(super) fn assemble(header: &str, head: &str, marker: &str, tail: &str) -> String {
    let mut out = String::with_capacity(header.len() + head.len() + marker.len() + tail.len());
    out.push_str(header);
    out.push_str(head);
    out.push_str(marker);
    out.push_str(tail);
    out
}

/// Lines as `str::lines` counts them (a final newline ends the last line).
pub(crate) fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

pub(crate) fn floor_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Where `piece` (a subslice of `text`) starts in `text`.
pub(super) fn offset_in(text: &str, piece: &str) -> usize {
    piece.as_ptr() as usize - text.as_ptr() as usize
}
