//! Truncation: the head and the tail of an output kept within a cap of
//! tokens or bytes, with a header and a marker saying what was cut.

use super::counter::{Counter, Scan};
use super::cut::{
    assemble, count_lines, cut_by_bytes, header_text, marker_text, snap_head, snap_tail,
};
use super::policy::{GuardPolicy, Truncation, EXACT_COUNT_LIMIT_TOKENS};
use crate::tokens::Tokenizer;

/// Tokens of headroom for where the header, head, marker and tail meet.
const JOIN_SLACK_TOKENS: u64 = 2;

/// The truncated copy of `content` the model sees under `policy`'s
/// truncation (its cap × `SERIALIZATION_BUFFER`); `None` when it fits or the
/// policy is [`Truncation::None`]. Eviction is not considered here (see
/// [`should_evict`](super::should_evict) and [`eviction_preview`](super::eviction_preview)); [`guard_tool_output`](super::guard_tool_output) does both.
///
/// ```
/// use agentmem::pipeline::guard::{truncate_for_model, GuardPolicy, Truncation};
/// use agentmem::Encoding;
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// let output: String = (0..3_000).map(|i| format!("test case {i} passed\n")).collect();
/// let cut = truncate_for_model(&output, &GuardPolicy::default(), tokenizer).unwrap();
/// assert!(tokenizer.count(&cut) <= 6_000);
/// let bytes = GuardPolicy { truncation: Truncation::Bytes(1_000), ..GuardPolicy::default() };
/// assert!(truncate_for_model(&output, &bytes, tokenizer).unwrap().len() <= 1_200);
/// assert_eq!(truncate_for_model(&output, &GuardPolicy::off(), tokenizer), None);
/// ```
pub fn truncate_for_model(
    content: &str,
    policy: &GuardPolicy,
    tokenizer: Tokenizer,
) -> Option<String> {
    match policy.truncation.with_buffer() {
        Truncation::None => None,
        Truncation::Bytes(max) => truncate_middle_bytes(content, max),
        Truncation::Tokens(cap) => truncate_middle_tokens(content, cap, tokenizer),
    }
}

/// Cuts the middle out of `text` so that the result, `Total output lines`
/// header and `…N tokens truncated…` marker included, has at most
/// `max_tokens` tokens (no buffer is applied here). `None` if `text` fits.
///
/// Head and tail get half the budget each, cut on character boundaries and,
/// when a newline is near, on line boundaries. Only the kept text and at most
/// `max(max_tokens, EXACT_COUNT_LIMIT_TOKENS)` tokens of the start are counted;
/// `N` is prefixed with `~` when it is an estimate. A cap too small to hold the
/// header and the marker yields just those.
///
/// ```
/// use agentmem::pipeline::guard::truncate_middle_tokens;
/// use agentmem::Encoding;
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// assert_eq!(truncate_middle_tokens("short", 100, tokenizer), None);
///
/// let text: String = (0..1_000).map(|i| format!("row {i}: 日本語 ✓\n")).collect();
/// let cut = truncate_middle_tokens(&text, 200, tokenizer).unwrap();
/// assert!(cut.starts_with("Total output lines: 1000\n\nrow 0: 日本語 ✓\n"));
/// assert!(cut.ends_with("row 999: 日本語 ✓\n"));
/// assert!(tokenizer.count(&cut) <= 200);
/// ```
pub fn truncate_middle_tokens(text: &str, max_tokens: u64, tokenizer: Tokenizer) -> Option<String> {
    if text.len() as u64 <= max_tokens {
        return None;
    }
    let mut counter = Counter::new(tokenizer);
    let scan = counter.scan(text, max_tokens.max(EXACT_COUNT_LIMIT_TOKENS));
    if scan.complete && scan.tokens <= max_tokens {
        return None;
    }
    Some(truncate_tokens(&mut counter, text, max_tokens, &scan).0)
}

/// Cuts the middle out of `text` so that the result, `Total output lines`
/// header and `…N bytes truncated…` marker included, has at most `max_bytes`
/// bytes (no buffer is applied here). `None` if `text` fits. Cuts fall on
/// character boundaries and, when a newline is near, on line boundaries.
///
/// ```
/// use agentmem::pipeline::guard::truncate_middle_bytes;
/// assert_eq!(truncate_middle_bytes("short", 100), None);
///
/// let text: String = (0..1_000).map(|i| format!("row {i}: 日本語 🦀\n")).collect();
/// let cut = truncate_middle_bytes(&text, 300).unwrap();
/// assert!(cut.len() <= 300);
/// assert!(cut.starts_with("Total output lines: 1000\n\nrow 0: 日本語 🦀\n"));
/// assert!(cut.contains(" bytes truncated…\n") && cut.ends_with("row 999: 日本語 🦀\n"));
/// ```
pub fn truncate_middle_bytes(text: &str, max_bytes: usize) -> Option<String> {
    if text.len() <= max_bytes {
        return None;
    }
    let header = header_text(count_lines(text));
    let widest_marker = marker_text(text.len() as u64, false, "bytes");
    let kept = max_bytes.saturating_sub(header.len() + widest_marker.len());
    let (head_end, tail_start) = cut_by_bytes(text, kept);
    let marker = marker_text((tail_start - head_end) as u64, false, "bytes");
    Some(assemble(
        &header,
        &text[..head_end],
        &marker,
        &text[tail_start..],
    ))
}

/// Truncates `text`, known (from `scan`) to be over `cap` tokens. Returns the
/// result, the original's size and whether that size is an estimate.
pub(super) fn truncate_tokens(
    counter: &mut Counter,
    text: &str,
    cap: u64,
    scan: &Scan,
) -> (String, u64, bool) {
    let header = header_text(count_lines(text));
    let widest_marker = marker_text(text.len() as u64, true, "tokens");
    let overhead = counter.count(&header) + counter.count(&widest_marker) + JOIN_SLACK_TOKENS;
    let mut kept = cap.saturating_sub(overhead);
    let mut attempt = None;
    for _ in 0..4 {
        let head_budget = kept / 2;
        let head_end = snap_head(text, counter.fit_prefix(text, head_budget));
        let tail_start =
            snap_tail(text, counter.fit_suffix(text, kept - head_budget)).max(head_end);
        let built = build_tokens(counter, text, &header, head_end, tail_start, scan);
        let tokens = counter.count(&built.0);
        if tokens <= cap {
            return built;
        }
        kept = kept.saturating_sub(tokens - cap + JOIN_SLACK_TOKENS);
        attempt = Some(built);
    }
    // Pre-tokenization effects kept it over the cap: fall back on the byte
    // bound (a token is at least one byte), which cannot miss.
    let kept_bytes = usize::try_from(cap)
        .unwrap_or(usize::MAX)
        .saturating_sub(header.len() + widest_marker.len());
    let (head_end, tail_start) = cut_by_bytes(text, kept_bytes);
    let built = build_tokens(counter, text, &header, head_end, tail_start, scan);
    if built.0.len() as u64 <= cap {
        built
    } else {
        attempt.unwrap_or(built)
    }
}

fn build_tokens(
    counter: &mut Counter,
    text: &str,
    header: &str,
    head_end: usize,
    tail_start: usize,
    scan: &Scan,
) -> (String, u64, bool) {
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let head_tokens = counter.count(head);
    let tail_tokens = counter.count(tail);
    // The tail's density improves an estimate; the head is inside the scan.
    let (total, estimated) = scan.total(text.len(), tail_tokens, tail.len());
    let removed = total.saturating_sub(head_tokens + tail_tokens);
    let marker = marker_text(removed, estimated, "tokens");
    (assemble(header, head, &marker, tail), total, estimated)
}
