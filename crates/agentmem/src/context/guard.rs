//! Write-time guard on tool outputs: truncation and eviction.
//!
//! Every tool result passes through [`guard_tool_output`] when it is ingested.
//! The full original always stays in the event log; the guard only decides what
//! the *model* sees instead:
//!
//! - **Eviction**: an output over [`GuardPolicy::evict_over_tokens`] (default
//!   [`DEFAULT_EVICTION_THRESHOLD_TOKENS`]) is written to
//!   `<session dir>/evicted/<tool_call_id>.txt` (mode 0600, atomically) and the
//!   model sees a preview: the first [`EVICTION_PREVIEW_HEAD_LINES`] and last
//!   [`EVICTION_PREVIEW_TAIL_LINES`] lines, the size in bytes and lines, the
//!   call id and how to read the rest with the
//!   [`read_evicted_output`](read_evicted_output_schema) tool ([`read_evicted`]
//!   in the library). The preview ([`eviction_preview`]) tokenizes nothing, so
//!   a view rebuilt from the log gets the same text; the token size is in
//!   [`Guarded::Evicted`].
//! - **Truncation**: otherwise, an output over the cap of
//!   [`GuardPolicy::truncation`] (default [`DEFAULT_TOOL_OUTPUT_CAP_TOKENS`] ×
//!   [`SERIALIZATION_BUFFER`] = 6,000 tokens) keeps its head and its tail, half
//!   the budget each, cut on character boundaries and, when a newline is close,
//!   on line boundaries:
//!
//! ```text
//! Total output lines: 2400
//!
//! <head>
//! …31210 tokens truncated…
//! <tail>
//! ```
//!
//! The whole result, header and marker included, fits the cap.
//!
//! # Never tokenize what is cut anyway
//!
//! Token counting runs at tens of MB/s, so the guard never counts a large
//! output in full. Its rule:
//!
//! 1. **A token is at least one byte** (for o200k_base and cl100k_base every
//!    token covers ≥ 1 byte; the approximate encoding counts ⌈chars/4⌉ ≤ bytes).
//!    So an output of at most `cap` bytes fits the cap and is not counted at
//!    all, and an output of at most `threshold` bytes cannot be evicted.
//! 2. Otherwise the guard counts a **prefix, with an early stop**: it counts
//!    piece by piece (the tokenizer's own pre-tokenization, so the sum is exactly
//!    the full count) and stops as soon as the count passes a limit: the
//!    eviction threshold when eviction is possible, else the larger of the cap
//!    and [`EXACT_COUNT_LIMIT_TOKENS`]. Whether an output exceeds the threshold
//!    is thus decided *exactly*, at a cost bounded by the threshold, not by the
//!    output's size.
//! 3. Then it counts **only what it keeps**: the head and the tail it fits to
//!    the budget, and the final result once (to guarantee the cap).
//!
//! Sizes are exact when the prefix count reached the end of the output
//! (outputs up to the limit, 20,000 tokens by default); beyond it they are
//! estimated from the token density of the counted parts, flagged
//! `estimated: true`, and shown with a tilde: `…~N tokens truncated…`.
//! In all, the guard counts at most about `limit + 3 × cap` tokens' worth of
//! text, whatever the output's size: in the tests, guarding a 2.2 MB build log
//! tokenizes about 60 KB of it when it is evicted and about 125 KB when it is
//! truncated (eviction off), against 2.2 MB for one full count.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::id::{validate_path_id, IdKind};
use crate::render::ToolSchema;
use crate::store::atomic::sync_dir;
use crate::tokens::Tokenizer;

/// The default cap on a tool output the model sees, in tokens, before the
/// [`SERIALIZATION_BUFFER`].
///
/// ```
/// use agentmem::context::guard::{DEFAULT_TOOL_OUTPUT_CAP_TOKENS, Truncation};
/// assert_eq!(Truncation::default(), Truncation::Tokens(DEFAULT_TOOL_OUTPUT_CAP_TOKENS));
/// ```
pub const DEFAULT_TOOL_OUTPUT_CAP_TOKENS: u64 = 5_000;

/// Headroom applied to every truncation cap (5,000 tokens become 6,000): a
/// tool output grows a little once serialized into a provider payload, and the
/// cap is meant for what the model reads.
///
/// ```
/// use agentmem::context::guard::Truncation;
/// assert_eq!(Truncation::Tokens(5_000).with_buffer(), Truncation::Tokens(6_000));
/// ```
pub const SERIALIZATION_BUFFER: f64 = 1.2;

/// Tool outputs over this many tokens are evicted to a file by default.
///
/// ```
/// use agentmem::context::guard::{GuardPolicy, DEFAULT_EVICTION_THRESHOLD_TOKENS};
/// assert_eq!(GuardPolicy::default().evict_over_tokens, Some(DEFAULT_EVICTION_THRESHOLD_TOKENS));
/// ```
pub const DEFAULT_EVICTION_THRESHOLD_TOKENS: u64 = 20_000;

/// Lines from the start of an evicted output shown in its preview.
///
/// ```
/// assert_eq!(agentmem::context::guard::EVICTION_PREVIEW_HEAD_LINES, 5);
/// ```
pub const EVICTION_PREVIEW_HEAD_LINES: usize = 5;

/// Lines from the end of an evicted output shown in its preview.
///
/// ```
/// assert_eq!(agentmem::context::guard::EVICTION_PREVIEW_TAIL_LINES, 5);
/// ```
pub const EVICTION_PREVIEW_TAIL_LINES: usize = 5;

/// Outputs up to this many tokens get exact sizes even when eviction is off;
/// counting beyond it would mean tokenizing text that is cut anyway, so larger
/// sizes are estimates (see the [module docs](self)).
///
/// ```
/// use agentmem::context::guard::{truncate_middle_tokens, EXACT_COUNT_LIMIT_TOKENS};
/// use agentmem::tokens::Encoding;
/// // ~10,000 tokens: under the limit, so the marker is exact (no tilde).
/// let log: String = (0..2_500).map(|i| format!("step {i} ok\n")).collect();
/// let cut = truncate_middle_tokens(&log, 1_000, Encoding::O200kBase.tokenizer()).unwrap();
/// assert!(cut.contains(" tokens truncated…") && !cut.contains("…~"));
/// # assert!(EXACT_COUNT_LIMIT_TOKENS >= 10_000);
/// ```
pub const EXACT_COUNT_LIMIT_TOKENS: u64 = 20_000;

/// The name of the tool that pages through evicted outputs.
///
/// ```
/// use agentmem::context::guard::{read_evicted_output_schema, READ_EVICTED_OUTPUT_TOOL};
/// assert_eq!(read_evicted_output_schema().name, READ_EVICTED_OUTPUT_TOOL);
/// ```
pub const READ_EVICTED_OUTPUT_TOOL: &str = "read_evicted_output";

/// Lines per page when the `read_evicted_output` tool is called without a limit.
///
/// ```
/// assert_eq!(agentmem::context::guard::DEFAULT_READ_LIMIT_LINES, 200);
/// ```
pub const DEFAULT_READ_LIMIT_LINES: usize = 200;

/// The most text one page of [`read_evicted`] holds, in bytes. As a token is at
/// least one byte, a page can never be over the default eviction threshold:
/// reading an evicted output never evicts it again.
///
/// ```
/// use agentmem::context::guard::{EVICTED_PAGE_MAX_BYTES, DEFAULT_EVICTION_THRESHOLD_TOKENS};
/// assert!(EVICTED_PAGE_MAX_BYTES as u64 <= DEFAULT_EVICTION_THRESHOLD_TOKENS);
/// ```
pub const EVICTED_PAGE_MAX_BYTES: usize = 20_000;

/// How far (in bytes) a cut moves back or forward to land on a line boundary;
/// never more than a quarter of the part kept.
const LINE_SNAP_MAX_BYTES: usize = 512;

/// Longest line shown in an eviction preview, in bytes.
const PREVIEW_LINE_MAX_BYTES: usize = 400;

/// Tokens of headroom for where the header, head, marker and tail meet.
const JOIN_SLACK_TOKENS: u64 = 2;

/// How much of a tool output the model may see.
///
/// Caps are given *before* the [`SERIALIZATION_BUFFER`]; see
/// [`Truncation::with_buffer`]. In configuration files it reads
/// `{policy = "tokens", limit = 5000}`, `{policy = "bytes", limit = 20000}` or
/// `{policy = "none"}`.
///
/// ```
/// use agentmem::context::guard::Truncation;
/// let policy: Truncation = serde_json::from_str(r#"{"policy": "bytes", "limit": 10000}"#).unwrap();
/// assert_eq!(policy, Truncation::Bytes(10_000));
/// assert_eq!(serde_json::to_string(&Truncation::None).unwrap(), r#"{"policy":"none"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "policy", content = "limit", rename_all = "lowercase")]
pub enum Truncation {
    /// Never truncate (eviction may still apply).
    None,
    /// Keep at most this many bytes (× the buffer), head and tail.
    Bytes(usize),
    /// Keep at most this many tokens (× the buffer), head and tail.
    Tokens(u64),
}

impl Default for Truncation {
    fn default() -> Self {
        Truncation::Tokens(DEFAULT_TOOL_OUTPUT_CAP_TOKENS)
    }
}

impl Truncation {
    /// The cap the model-visible copy actually gets: this cap ×
    /// [`SERIALIZATION_BUFFER`], rounded.
    ///
    /// ```
    /// use agentmem::context::guard::Truncation;
    /// assert_eq!(Truncation::default().with_buffer(), Truncation::Tokens(6_000));
    /// assert_eq!(Truncation::Bytes(1_000).with_buffer(), Truncation::Bytes(1_200));
    /// assert_eq!(Truncation::None.with_buffer(), Truncation::None);
    /// ```
    pub fn with_buffer(self) -> Truncation {
        let scale = |n: f64| (n * SERIALIZATION_BUFFER).round();
        match self {
            Truncation::None => Truncation::None,
            Truncation::Bytes(b) => Truncation::Bytes(scale(b as f64) as usize),
            Truncation::Tokens(t) => Truncation::Tokens(scale(t as f64) as u64),
        }
    }
}

/// What the guard does to tool outputs.
///
/// ```
/// use agentmem::context::guard::{GuardPolicy, Truncation};
/// let policy = GuardPolicy::default();
/// assert_eq!(policy.truncation, Truncation::Tokens(5_000));
/// assert_eq!(policy.evict_over_tokens, Some(20_000));
/// // From configuration: missing fields keep their defaults.
/// let policy: GuardPolicy = serde_json::from_str(r#"{"evict_over_tokens": null}"#).unwrap();
/// assert_eq!(policy.evict_over_tokens, None);
/// assert_eq!(policy.truncation, Truncation::Tokens(5_000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct GuardPolicy {
    /// How outputs that are not evicted are cut.
    pub truncation: Truncation,
    /// Outputs over this many tokens are evicted to a file; `None` never evicts.
    pub evict_over_tokens: Option<u64>,
}

impl Default for GuardPolicy {
    fn default() -> Self {
        GuardPolicy {
            truncation: Truncation::default(),
            evict_over_tokens: Some(DEFAULT_EVICTION_THRESHOLD_TOKENS),
        }
    }
}

impl GuardPolicy {
    /// A policy that leaves every output as it is.
    ///
    /// ```
    /// use agentmem::context::guard::{guard_tool_output, GuardPolicy, Guarded};
    /// use agentmem::tokens::Encoding;
    /// let huge = "x\n".repeat(1_000_000);
    /// let dir = std::path::Path::new("/nonexistent");
    /// let guarded = guard_tool_output("c1", &huge, &GuardPolicy::off(), Encoding::O200kBase.tokenizer(), dir).unwrap();
    /// assert_eq!(guarded, Guarded::Unchanged);
    /// ```
    pub fn off() -> GuardPolicy {
        GuardPolicy {
            truncation: Truncation::None,
            evict_over_tokens: None,
        }
    }
}

/// What the model sees of one tool output.
///
/// ```
/// use agentmem::context::guard::{guard_tool_output, GuardPolicy, Guarded};
/// use agentmem::tokens::Encoding;
/// let dir = tempfile::tempdir().unwrap();
/// let small = guard_tool_output("c1", "ok", &GuardPolicy::default(), Encoding::O200kBase.tokenizer(), dir.path()).unwrap();
/// assert_eq!(small, Guarded::Unchanged);
/// assert_eq!(small.model_text("ok"), "ok");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Guarded {
    /// The output fits: the model sees it as it is.
    Unchanged,
    /// The model sees `content`: the head and tail of the output with a
    /// `Total output lines` header and a truncation marker.
    Truncated {
        content: String,
        /// The size of the whole output, in tokens of the guard's tokenizer.
        original_tokens: u64,
        /// `original_tokens` is an estimate (the output was not counted in full).
        estimated: bool,
    },
    /// The output was written to `path`; the model sees `preview`.
    Evicted {
        preview: String,
        path: PathBuf,
        /// The size of the whole output, in tokens of the guard's tokenizer.
        original_tokens: u64,
        /// `original_tokens` is an estimate (the output was not counted in full).
        estimated: bool,
    },
}

impl Guarded {
    /// The text the model sees in place of `original` (the output that was
    /// guarded).
    ///
    /// ```
    /// use agentmem::context::guard::Guarded;
    /// let cut = Guarded::Truncated { content: "short".into(), original_tokens: 9_000, estimated: false };
    /// assert_eq!(cut.model_text("the long original"), "short");
    /// assert_eq!(Guarded::Unchanged.model_text("as is"), "as is");
    /// ```
    pub fn model_text<'a>(&'a self, original: &'a str) -> &'a str {
        match self {
            Guarded::Unchanged => original,
            Guarded::Truncated { content, .. } => content,
            Guarded::Evicted { preview, .. } => preview,
        }
    }
}

/// Guards one tool output: returns what the model should see instead of
/// `content` (never modifies anything in place).
///
/// Outputs over the eviction threshold are written to
/// `evicted_dir/<call_id>.txt` (`evicted_dir` is the session's `evicted/`
/// folder, created if missing); `call_id` is validated before anything touches
/// the disk, and a bad id is an [`Error::InvalidId`] with nothing written.
/// Other outputs over the truncation cap are cut in the middle. See the
/// [module docs](self) for the formats and for what gets tokenized.
///
/// ```
/// use agentmem::context::guard::{guard_tool_output, read_evicted, GuardPolicy, Guarded};
/// use agentmem::tokens::Encoding;
/// let dir = tempfile::tempdir().unwrap();
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// let policy = GuardPolicy::default();
///
/// // 30,000 lines: far over the eviction threshold.
/// let log: String = (1..=30_000).map(|i| format!("line {i}: compiling crate {i}\n")).collect();
/// match guard_tool_output("call_1", &log, &policy, tokenizer, dir.path()).unwrap() {
///     Guarded::Evicted { preview, path, .. } => {
///         assert!(preview.contains("line 1: compiling") && preview.contains("line 30000:"));
///         assert!(preview.contains("call_1") && preview.contains("read_evicted_output"));
///         assert_eq!(std::fs::read_to_string(path).unwrap(), log);
///     }
///     other => panic!("expected an eviction, got {other:?}"),
/// }
/// let page = read_evicted(dir.path(), "call_1", 10, 2).unwrap();
/// assert_eq!(page.text, "line 11: compiling crate 11\nline 12: compiling crate 12\n");
///
/// // 1,200 lines (~13,000 tokens): truncated, with an exact count.
/// let log: String = (1..=1_200).map(|i| format!("line {i}: compiling crate {i}\n")).collect();
/// let Guarded::Truncated { content, estimated, .. } =
///     guard_tool_output("call_2", &log, &policy, tokenizer, dir.path()).unwrap() else { panic!() };
/// assert!(content.starts_with("Total output lines: 1200\n\nline 1: compiling"));
/// assert!(content.contains(" tokens truncated…\n") && !estimated);
/// assert!(tokenizer.count(&content) <= 6_000);
/// ```
pub fn guard_tool_output(
    call_id: &str,
    content: &str,
    policy: &GuardPolicy,
    tokenizer: Tokenizer,
    evicted_dir: &Path,
) -> Result<Guarded> {
    guard_counted(
        &mut Counter::new(tokenizer),
        call_id,
        content,
        policy,
        evicted_dir,
    )
}

fn guard_counted(
    counter: &mut Counter,
    call_id: &str,
    content: &str,
    policy: &GuardPolicy,
    evicted_dir: &Path,
) -> Result<Guarded> {
    let len = content.len() as u64;
    let truncation = policy.truncation.with_buffer();
    // A token is at least one byte: outputs no longer (in bytes) than a token
    // limit are under it without counting.
    let evict_over = policy.evict_over_tokens.filter(|&e| len > e);
    let token_cap = match truncation {
        Truncation::Tokens(cap) if len > cap => Some(cap),
        _ => None,
    };
    if evict_over.is_none() && token_cap.is_none() {
        return Ok(match truncation {
            Truncation::Bytes(max) => match truncate_middle_bytes(content, max) {
                Some(cut) => Guarded::Truncated {
                    content: cut,
                    original_tokens: len.div_ceil(4),
                    estimated: true,
                },
                None => Guarded::Unchanged,
            },
            _ => Guarded::Unchanged,
        });
    }

    let limit = match evict_over {
        Some(threshold) => threshold.max(token_cap.unwrap_or(0)),
        None => token_cap.unwrap_or(0).max(EXACT_COUNT_LIMIT_TOKENS),
    };
    let scan = counter.scan(content, limit);

    if let Some(threshold) = evict_over {
        if !scan.complete || scan.tokens > threshold {
            let (original_tokens, estimated) = scan.total(content.len(), 0, 0);
            let path = write_evicted(evicted_dir, call_id, content)?;
            let preview = eviction_preview(call_id, content);
            return Ok(Guarded::Evicted {
                preview,
                path,
                original_tokens,
                estimated,
            });
        }
    }

    Ok(match truncation {
        Truncation::Tokens(cap) if !scan.complete || scan.tokens > cap => {
            let (content, original_tokens, estimated) =
                truncate_tokens(counter, content, cap, &scan);
            Guarded::Truncated {
                content,
                original_tokens,
                estimated,
            }
        }
        Truncation::Bytes(max) => match truncate_middle_bytes(content, max) {
            Some(cut) => {
                let (original_tokens, estimated) = scan.total(content.len(), 0, 0);
                Guarded::Truncated {
                    content: cut,
                    original_tokens,
                    estimated,
                }
            }
            None => Guarded::Unchanged,
        },
        _ => Guarded::Unchanged,
    })
}

/// Whether `content` is over the eviction threshold of `policy` (always
/// `false` when eviction is off). Decided exactly, but without counting more
/// than the threshold's worth of tokens: an output of at most `threshold`
/// bytes is never counted, a larger one is counted until the count passes the
/// threshold.
///
/// ```
/// use agentmem::context::guard::{should_evict, GuardPolicy};
/// use agentmem::tokens::Encoding;
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// let policy = GuardPolicy::default(); // over 20,000 tokens
/// assert!(!should_evict(&"word ".repeat(1_000), &policy, tokenizer));
/// assert!(should_evict(&"word ".repeat(30_000), &policy, tokenizer));
/// ```
pub fn should_evict(content: &str, policy: &GuardPolicy, tokenizer: Tokenizer) -> bool {
    exceeds_eviction(&mut Counter::new(tokenizer), content, policy)
}

fn exceeds_eviction(counter: &mut Counter, content: &str, policy: &GuardPolicy) -> bool {
    match policy.evict_over_tokens {
        Some(threshold) if content.len() as u64 > threshold => {
            if more_pieces_than(content, threshold, counter.tokenizer) {
                return true;
            }
            let scan = counter.scan(content, threshold);
            !scan.complete || scan.tokens > threshold
        }
        _ => false,
    }
}

/// Whether `text` splits into more than `limit` pieces: each piece is at
/// least one token, so such a text surely has more than `limit` tokens, and
/// splitting is much quicker than encoding. Stops at the limit.
fn more_pieces_than(text: &str, limit: u64, tokenizer: Tokenizer) -> bool {
    let Some(bpe) = tokenizer.bpe() else {
        return false;
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    bpe.pieces(text)
        .filter(|p| !p.is_empty())
        .nth(limit)
        .is_some()
}

/// The truncated copy of `content` the model sees under `policy`'s
/// truncation (its cap × [`SERIALIZATION_BUFFER`]); `None` when it fits or the
/// policy is [`Truncation::None`]. Eviction is not considered here (see
/// [`should_evict`] and [`eviction_preview`]); [`guard_tool_output`] does both.
///
/// ```
/// use agentmem::context::guard::{truncate_for_model, GuardPolicy, Truncation};
/// use agentmem::tokens::Encoding;
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
/// use agentmem::context::guard::truncate_middle_tokens;
/// use agentmem::tokens::Encoding;
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
/// use agentmem::context::guard::truncate_middle_bytes;
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

/// The file an evicted output of `call_id` lives in: `dir/<call_id>.txt`,
/// after validating the id (a bad id is an [`Error::InvalidId`]).
///
/// ```
/// use agentmem::context::guard::evicted_path;
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
pub fn unused_evicted_name(dir: &Path, call_id: &str) -> Result<String> {
    validate_path_id(IdKind::ToolCall, call_id)?;
    let taken = |name: &str| dir.join(format!("{name}.txt")).exists();
    Ok(std::iter::once(call_id.to_owned())
        .chain((2u64..).map(|n| format!("{call_id}-{n}")))
        .find(|name| !taken(name))
        .expect("some number is free"))
}

/// The name an evicted output goes by (what [`read_evicted`] takes), from
/// the `tool_result_ref` eviction gave its event; `None` for a reference
/// eviction did not make.
///
/// ```
/// use agentmem::context::guard::evicted_name;
/// assert_eq!(evicted_name("evicted/call_0-2.txt"), Some("call_0-2"));
/// assert_eq!(evicted_name("s3://bucket/out.json"), None);
/// ```
pub fn evicted_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix(crate::store::EVICTED_DIR)?
        .strip_prefix('/')?
        .strip_suffix(".txt")
}

/// One page of an evicted output, as returned by [`read_evicted`].
///
/// ```
/// use agentmem::context::guard::EvictedPage;
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
/// [`guard_tool_output`].
///
/// Concatenating the pages gives back the output byte for byte. A page stops
/// early at [`EVICTED_PAGE_MAX_BYTES`] (always holding at least one line; a
/// single line longer than that is shown cut, with a note). An offset past the
/// end gives an empty page. Errors: [`Error::InvalidId`] for a bad id,
/// [`Error::EvictedNotFound`] when the call's output was never evicted here.
///
/// ```
/// use agentmem::context::guard::{guard_tool_output, read_evicted, GuardPolicy, Truncation};
/// use agentmem::tokens::Encoding;
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

fn page_of(text: &str, offset: usize, limit: usize) -> EvictedPage {
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

/// The schema of the `read_evicted_output` tool, for agents to page through
/// evicted outputs: `call_id` (required), `offset` (first line, 0-based,
/// default 0) and `limit` (lines, default 200). Its handler calls
/// [`read_evicted`].
///
/// ```
/// use agentmem::context::guard::read_evicted_output_schema;
/// let schema = read_evicted_output_schema();
/// assert_eq!(schema.name, "read_evicted_output");
/// assert_eq!(schema.parameters["required"], serde_json::json!(["call_id"]));
/// assert_eq!(schema.parameters["properties"]["limit"]["default"], 200);
/// ```
pub fn read_evicted_output_schema() -> ToolSchema {
    ToolSchema {
        name: READ_EVICTED_OUTPUT_TOOL.to_owned(),
        description: "Read a tool output that was too large for the context and was saved in \
                      full. Its preview names the call id and the number of lines; read it in \
                      pages of lines."
            .to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "call_id": {
                    "type": "string",
                    "description": "The id of the tool call whose output was evicted, as shown in the preview."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "The first line to read, counting from 0."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_READ_LIMIT_LINES,
                    "description": "How many lines to read."
                }
            },
            "required": ["call_id"],
            "additionalProperties": false
        }),
    }
}

// ---------------------------------------------------------------------------
// Counting with a meter

/// What a prefix count found.
#[derive(Debug, Clone, Copy)]
struct Scan {
    /// Tokens in `text[..end]`.
    tokens: u64,
    /// Bytes counted.
    end: usize,
    /// The whole text was counted: `tokens` is its exact count.
    complete: bool,
    /// The limit the count stopped at when incomplete.
    limit: u64,
}

impl Scan {
    /// The size of the whole text (of `len` bytes): exact if the scan was
    /// complete, else estimated from the density of the scanned prefix plus
    /// `extra_tokens` counted in `extra_bytes` elsewhere.
    fn total(&self, len: usize, extra_tokens: u64, extra_bytes: usize) -> (u64, bool) {
        if self.complete {
            return (self.tokens, false);
        }
        let bytes = self.end + extra_bytes;
        let estimate = if bytes == 0 {
            (len as u64).div_ceil(4)
        } else {
            ((self.tokens + extra_tokens) as f64 / bytes as f64 * len as f64).round() as u64
        };
        // More than the limit (the count stopped there), at most one per byte.
        let low = self.limit.saturating_add(1);
        (estimate.clamp(low, (len as u64).max(low)), true)
    }
}

/// Counts tokens and keeps a tally of the bytes it tokenized, so the
/// no-full-count rule is testable.
struct Counter {
    tokenizer: Tokenizer,
    bytes_counted: usize,
}

impl Counter {
    fn new(tokenizer: Tokenizer) -> Counter {
        Counter {
            tokenizer,
            bytes_counted: 0,
        }
    }

    /// The exact count of `text`, by [`Tokenizer::count`].
    fn count(&mut self, text: &str) -> u64 {
        self.bytes_counted += text.len();
        self.tokenizer.count(text) as u64
    }

    /// Counts `text` from the start, stopping once the count passes `limit`.
    /// A text counted whole lately is not counted again (when the count is
    /// over the limit, the scan stops where it would have).
    fn scan(&mut self, text: &str, limit: u64) -> Scan {
        if let Some(tokens) = self.tokenizer.remembered(text).map(|n| n as u64) {
            if tokens <= limit {
                return Scan {
                    tokens,
                    end: text.len(),
                    complete: true,
                    limit,
                };
            }
        }
        let scan = self.scan_pieces(text, limit);
        if scan.complete {
            self.tokenizer.remember(text, scan.tokens as usize);
        }
        scan
    }

    fn scan_pieces(&mut self, text: &str, limit: u64) -> Scan {
        let Some(bpe) = self.tokenizer.bpe() else {
            let max_chars = usize::try_from(limit.saturating_mul(4)).unwrap_or(usize::MAX);
            return match text.char_indices().nth(max_chars) {
                Some((end, _)) => {
                    self.bytes_counted += end;
                    Scan {
                        tokens: limit,
                        end,
                        complete: false,
                        limit,
                    }
                }
                None => {
                    self.bytes_counted += text.len();
                    Scan {
                        tokens: text.chars().count().div_ceil(4) as u64,
                        end: text.len(),
                        complete: true,
                        limit,
                    }
                }
            };
        };
        let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut tokens = 0usize;
        for piece in bpe.pieces(text) {
            // The piece is tokenized (and pre-tokenized) up to its end at most.
            self.bytes_counted += piece.len();
            match bpe.piece_tokens_till(piece, limit_usize - tokens) {
                Some(n) => tokens += n,
                None => {
                    return Scan {
                        tokens: tokens as u64,
                        end: offset_in(text, piece),
                        complete: false,
                        limit,
                    }
                }
            }
        }
        Scan {
            tokens: tokens as u64,
            end: text.len(),
            complete: true,
            limit,
        }
    }

    /// The end of a prefix of `text` with about `budget` tokens, at most
    /// (up to pre-tokenization effects at the cut, which the caller checks).
    fn fit_prefix(&mut self, text: &str, budget: u64) -> usize {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        if budget == 0 {
            return 0;
        }
        let Some(bpe) = self.tokenizer.bpe() else {
            let end = text
                .char_indices()
                .nth(budget.saturating_mul(4))
                .map_or(text.len(), |(i, _)| i);
            self.bytes_counted += end;
            return end;
        };
        let mut used = 0usize;
        let mut end = 0;
        for piece in bpe.pieces(text) {
            let start = offset_in(text, piece);
            let remaining = budget - used;
            self.bytes_counted += piece.len();
            match bpe.piece_tokens_till(piece, remaining) {
                Some(n) => {
                    used += n;
                    end = start + piece.len();
                    if used == budget {
                        break;
                    }
                }
                None => {
                    end = start + self.partial_prefix(bpe.tokenizer, piece, remaining);
                    break;
                }
            }
        }
        end
    }

    /// The length of a prefix of `piece` with at most `remaining` tokens.
    fn partial_prefix(
        &mut self,
        bpe: &bpe_openai::Tokenizer,
        piece: &str,
        remaining: usize,
    ) -> usize {
        for ratio in [8, 4, 2] {
            let k = floor_boundary(piece, remaining.saturating_mul(ratio));
            if k == 0 || k >= piece.len() {
                continue;
            }
            self.bytes_counted += k;
            if bpe
                .bpe
                .count_till_limit(&piece.as_bytes()[..k], remaining)
                .is_some()
            {
                return k;
            }
        }
        // A token is at least one byte.
        floor_boundary(piece, remaining)
    }

    /// The start of a suffix of `text` with about `budget` tokens, at most
    /// (up to pre-tokenization effects at the cut, which the caller checks).
    /// Counts a window at the end, doubling it until it holds the budget.
    fn fit_suffix(&mut self, text: &str, budget: u64) -> usize {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        if budget == 0 {
            return text.len();
        }
        let Some(bpe) = self.tokenizer.bpe() else {
            let start = text
                .char_indices()
                .rev()
                .nth(budget.saturating_mul(4) - 1)
                .map_or(0, |(i, _)| i);
            self.bytes_counted += text.len() - start;
            return start;
        };
        let mut window = budget.saturating_mul(6).max(256);
        loop {
            let start = ceil_boundary(text, text.len().saturating_sub(window));
            let tail = &text[start..];
            self.bytes_counted += tail.len();
            let pieces: Vec<(usize, usize)> = bpe
                .pieces(tail)
                .map(|p| {
                    let tokens = bpe.piece_tokens(p);
                    (start + offset_in(tail, p), tokens)
                })
                .collect();
            let mut used = 0;
            let mut cut = None;
            for (i, &(_, n)) in pieces.iter().enumerate().rev() {
                if used + n > budget {
                    cut = Some(i);
                    break;
                }
                used += n;
            }
            let Some(i) = cut else {
                if start == 0 {
                    return 0;
                }
                window = window.saturating_mul(2);
                continue;
            };
            let piece_start = pieces[i].0;
            let piece_end = pieces.get(i + 1).map_or(text.len(), |p| p.0);
            if used == budget {
                return piece_end;
            }
            let piece = &text[piece_start..piece_end];
            return piece_end - self.partial_suffix(bpe.tokenizer, piece, budget - used);
        }
    }

    /// The length of a suffix of `piece` with at most `remaining` tokens.
    fn partial_suffix(
        &mut self,
        bpe: &bpe_openai::Tokenizer,
        piece: &str,
        remaining: usize,
    ) -> usize {
        for ratio in [8, 4, 2] {
            let want = remaining.saturating_mul(ratio);
            if want >= piece.len() {
                continue;
            }
            let start = ceil_boundary(piece, piece.len() - want);
            if start >= piece.len() {
                continue;
            }
            self.bytes_counted += piece.len() - start;
            if bpe
                .bpe
                .count_till_limit(&piece.as_bytes()[start..], remaining)
                .is_some()
            {
                return piece.len() - start;
            }
        }
        // A token is at least one byte.
        piece.len() - ceil_boundary(piece, piece.len().saturating_sub(remaining))
    }
}

/// Truncates `text`, known (from `scan`) to be over `cap` tokens. Returns the
/// result, the original's size and whether that size is an estimate.
fn truncate_tokens(
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

// ---------------------------------------------------------------------------
// Cutting and formatting

/// `(head_end, tail_start)` keeping at most `kept` bytes, half each side.
fn cut_by_bytes(text: &str, kept: usize) -> (usize, usize) {
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
fn snap_head(text: &str, end: usize) -> usize {
    let distance = LINE_SNAP_MAX_BYTES.min(end / 4);
    let from = end - distance;
    let to = (end + 1).min(text.len());
    match text.as_bytes()[from..to].iter().rposition(|&b| b == b'\n') {
        Some(i) => from + i,
        None => end,
    }
}

/// Moves a tail cut forward to just after a newline, when one is near.
fn snap_tail(text: &str, start: usize) -> usize {
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

fn header_text(lines: usize) -> String {
    format!("Total output lines: {lines}\n\n")
}

fn marker_text(removed: u64, estimated: bool, unit: &str) -> String {
    let tilde = if estimated { "~" } else { "" };
    format!("\n…{tilde}{removed} {unit} truncated…\n")
}

fn assemble(header: &str, head: &str, marker: &str, tail: &str) -> String {
    let mut out = String::with_capacity(header.len() + head.len() + marker.len() + tail.len());
    out.push_str(header);
    out.push_str(head);
    out.push_str(marker);
    out.push_str(tail);
    out
}

/// Lines as `str::lines` counts them (a final newline ends the last line).
fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

fn floor_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Where `piece` (a subslice of `text`) starts in `text`.
fn offset_in(text: &str, piece: &str) -> usize {
    piece.as_ptr() as usize - text.as_ptr() as usize
}

// ---------------------------------------------------------------------------
// Eviction

/// What the model sees of an evicted output: its size in bytes and lines,
/// its first [`EVICTION_PREVIEW_HEAD_LINES`] and last
/// [`EVICTION_PREVIEW_TAIL_LINES`] lines (each cut at 400 bytes), and how to
/// read the rest. Pure and cheap (nothing is tokenized), so a view can be
/// rebuilt from the log at any time and come out the same.
///
/// ```
/// use agentmem::context::guard::eviction_preview;
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
        for line in content.lines().skip(total - tail) {
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

fn push_preview_line(out: &mut String, line: &str) {
    let cut = floor_boundary(line, PREVIEW_LINE_MAX_BYTES);
    out.push_str(&line[..cut]);
    if cut < line.len() {
        out.push_str(&format!(" … [{} more bytes]", line.len() - cut));
    }
    out.push('\n');
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `content` to `dir/<call_id>.txt` (`dir` is the session's `evicted/`
/// folder, created if missing), mode 0600, atomically and durably: a
/// temporary file in the same folder (created 0600), fsync, rename, fsync of
/// the folder. The id is validated first; nothing is written for a bad one.
/// Writing again replaces the file. Returns the file's path.
///
/// ```
/// use agentmem::context::guard::{read_evicted, write_evicted};
/// let dir = tempfile::tempdir().unwrap();
/// let path = write_evicted(dir.path(), "call_1", "a\nb\n").unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
/// assert_eq!(read_evicted(dir.path(), "call_1", 1, 10).unwrap().text, "b\n");
/// assert!(write_evicted(dir.path(), "../escape", "x").is_err());
/// ```
pub fn write_evicted(dir: &Path, call_id: &str, content: &str) -> Result<PathBuf> {
    let path = evicted_path(dir, call_id)?;
    create_private_dir(dir)?;
    let tmp = dir.join(format!(
        ".{call_id}.txt.{}.{}.tmp",
        std::process::id(),
        TMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = create_private_file(&tmp)?;
        file.write_all(content.as_bytes()).io("write", &tmp)?;
        file.sync_all().io("fsync", &tmp)?;
        drop(file);
        fs::rename(&tmp, &path).io("rename into place", &path)?;
        sync_dir(dir)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    crate::store::private::create_dir_all(dir).io("create", dir)?;
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => Ok(()),
    }
}

fn create_private_file(path: &Path) -> Result<File> {
    let mut options = crate::store::private::private_options();
    options.write(true).create_new(true);
    let file = match options.open(path) {
        // A temporary file left by a crash of a process with the same pid.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            fs::remove_file(path).io("remove stale temporary file", path)?;
            options.open(path)
        }
        other => other,
    }
    .io("create", path)?;
    #[cfg(unix)]
    {
        // The mode given at creation is masked by the umask; make it exact.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(
            crate::store::private::PRIVATE_FILE_MODE,
        ))
        .io("set permissions of", path)?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn o200k() -> Tokenizer {
        Encoding::O200kBase.tokenizer()
    }

    /// A build log with multi-byte text: 74 bytes and 25 tokens (o200k) a line
    /// for the first 1,000 lines.
    fn log(lines: usize) -> String {
        (0..lines)
            .map(|i| {
                format!("[{i:06}] compiling 日本語 crate-{i} 🦀 ok: 3 warnings, émigré naïve\n")
            })
            .collect()
    }

    fn no_evict() -> GuardPolicy {
        GuardPolicy {
            evict_over_tokens: None,
            ..GuardPolicy::default()
        }
    }

    /// Splits a truncated result into (lines, head, removed, estimated, tail).
    fn parse(result: &str, unit: &str) -> (usize, String, u64, bool, String) {
        let rest = result.strip_prefix("Total output lines: ").expect("header");
        let (lines, rest) = rest.split_once("\n\n").expect("blank line after header");
        let (head, rest) = rest.split_once("\n…").expect("marker start");
        let (count, tail) = rest
            .split_once(&format!(" {unit} truncated…\n"))
            .expect("marker end");
        let estimated = count.starts_with('~');
        let removed = count.trim_start_matches('~').parse().expect("a number");
        (
            lines.parse().unwrap(),
            head.to_owned(),
            removed,
            estimated,
            tail.to_owned(),
        )
    }

    fn guard(
        call_id: &str,
        content: &str,
        policy: &GuardPolicy,
        tokenizer: Tokenizer,
        dir: &Path,
    ) -> (Guarded, usize) {
        let mut counter = Counter::new(tokenizer);
        let guarded = guard_counted(&mut counter, call_id, content, policy, dir).unwrap();
        (guarded, counter.bytes_counted)
    }

    #[test]
    fn defaults_are_as_documented() {
        assert_eq!(
            Truncation::default().with_buffer(),
            Truncation::Tokens(6_000)
        );
        let policy = GuardPolicy::default();
        assert_eq!(policy.evict_over_tokens, Some(20_000));
        let json = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            json,
            r#"{"truncation":{"policy":"tokens","limit":5000},"evict_over_tokens":20000}"#
        );
        assert_eq!(serde_json::from_str::<GuardPolicy>(&json).unwrap(), policy);
        let toml: GuardPolicy = toml::from_str("truncation = { policy = \"none\" }").unwrap();
        assert_eq!(toml.truncation, Truncation::None);
    }

    #[test]
    fn under_the_cap_is_unchanged_and_short_outputs_are_never_counted() {
        let dir = tempfile::tempdir().unwrap();
        let policy = GuardPolicy::default();
        // 6,000 bytes cannot hold more than 6,000 tokens: no count at all.
        let text = "é".repeat(3_000);
        let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
        assert_eq!(guarded, Guarded::Unchanged);
        assert_eq!(counted, 0);
        // Over 6,000 bytes but under 6,000 tokens: counted, and unchanged.
        let text = log(150);
        let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
        assert_eq!(guarded, Guarded::Unchanged);
        assert_eq!(counted, text.len());
        assert!(text.len() > 6_000 && o200k().count(&text) < 6_000);
        assert_eq!(truncate_middle_tokens(&text, 6_000, o200k()), None);
        assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn a_100kb_log_is_cut_to_the_cap_keeping_head_and_tail_on_line_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let text = log(1_400);
        assert!(text.len() >= 100_000);
        for tokenizer in [
            o200k(),
            Encoding::Cl100kBase.tokenizer(),
            Encoding::Approximate.tokenizer(),
        ] {
            let (guarded, _) = guard("c1", &text, &no_evict(), tokenizer, dir.path());
            let Guarded::Truncated {
                content,
                original_tokens,
                estimated,
            } = guarded
            else {
                panic!("not truncated: {guarded:?}");
            };
            assert!(tokenizer.count(&content) <= 6_000, "{tokenizer:?}");
            assert!(tokenizer.count(&content) > 5_000, "the budget is used");
            let (lines, head, removed, est, tail) = parse(&content, "tokens");
            assert_eq!(lines, 1_400);
            assert_eq!(est, estimated);
            // Head and tail come from the original, cut at line boundaries.
            assert!(text.starts_with(&head) && text.ends_with(&tail));
            assert_eq!(&text[head.len()..head.len() + 1], "\n");
            assert!(text[..text.len() - tail.len()].ends_with('\n'));
            assert!(head.starts_with("[000000] compiling 日本語"));
            assert!(tail.ends_with(
                "[001399] compiling 日本語 crate-1399 🦀 ok: 3 warnings, émigré naïve\n"
            ));
            // The size: exact or a close estimate, and consistent with the marker.
            let exact = tokenizer.count(&text) as u64;
            let kept = (tokenizer.count(&head) + tokenizer.count(&tail)) as u64;
            assert_eq!(removed, original_tokens - kept);
            if estimated {
                let error = original_tokens.abs_diff(exact) as f64 / exact as f64;
                assert!(error < 0.05, "estimate {original_tokens} vs {exact}");
            } else {
                assert_eq!(original_tokens, exact);
            }
        }
    }

    #[test]
    fn sizes_under_the_exact_limit_are_exact() {
        let dir = tempfile::tempdir().unwrap();
        let text = log(400); // ~12,000 tokens
        let exact = o200k().count(&text) as u64;
        assert!(exact > 6_000 && exact < EXACT_COUNT_LIMIT_TOKENS);
        let (guarded, _) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
        let Guarded::Truncated {
            content,
            original_tokens,
            estimated,
        } = guarded
        else {
            panic!("not truncated: {guarded:?}");
        };
        assert_eq!((original_tokens, estimated), (exact, false));
        let (_, head, removed, est, tail) = parse(&content, "tokens");
        assert!(!est && !content.contains("…~"));
        assert_eq!(
            removed,
            exact - (o200k().count(&head) + o200k().count(&tail)) as u64
        );
    }

    #[test]
    fn multibyte_text_without_newlines_is_cut_on_char_boundaries() {
        let text = "日本語🦀é".repeat(20_000);
        for tokenizer in [o200k(), Encoding::Approximate.tokenizer()] {
            let cut = truncate_middle_tokens(&text, 1_000, tokenizer).unwrap();
            assert!(tokenizer.count(&cut) <= 1_000);
            let (lines, head, _, _, tail) = parse(&cut, "tokens");
            assert_eq!(lines, 1);
            assert!(text.starts_with(&head) && text.ends_with(&tail));
            assert!(head.len() > 500 && tail.len() > 500, "the budget is used");
        }
        // One long word: a single pre-tokenized piece is cut inside.
        let word = "a".repeat(200_000);
        let cut = truncate_middle_tokens(&word, 300, o200k()).unwrap();
        assert!(o200k().count(&cut) <= 300);
        let (_, head, _, _, tail) = parse(&cut, "tokens");
        assert!(head.len() > 100 && tail.len() > 100);
    }

    #[test]
    fn cuts_prefer_line_boundaries_only_when_close() {
        // Short lines: the head ends right before a newline.
        let text = log(300);
        let cut = truncate_middle_bytes(&text, 4_000).unwrap();
        let (_, head, _, _, tail) = parse(&cut, "bytes");
        assert_eq!(text.as_bytes()[head.len()], b'\n');
        assert!(text[..text.len() - tail.len()].ends_with('\n'));
        // Lines far longer than the snap distance: cut mid-line.
        let long: String = (0..20)
            .map(|i| format!("{i}{}\n", "x".repeat(5_000)))
            .collect();
        let cut = truncate_middle_bytes(&long, 4_000).unwrap();
        let (_, head, _, _, tail) = parse(&cut, "bytes");
        assert!(head.len() > 1_500 && !head.contains('\n'));
        assert!(tail.len() > 1_500);
    }

    #[test]
    fn the_bytes_policy_cuts_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let text = log(1_000);
        let policy = GuardPolicy {
            truncation: Truncation::Bytes(10_000),
            evict_over_tokens: None,
        };
        let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
        assert_eq!(counted, 0, "the bytes policy needs no token count");
        let Guarded::Truncated { content, .. } = guarded else {
            panic!("not truncated: {guarded:?}");
        };
        assert!(content.len() <= 12_000 && content.len() > 11_000);
        let (lines, head, removed, est, tail) = parse(&content, "bytes");
        assert_eq!(lines, 1_000);
        assert!(!est);
        assert_eq!(removed as usize, text.len() - head.len() - tail.len());
        assert!(text.starts_with(&head) && text.ends_with(&tail));
        // Under the cap: unchanged.
        let (guarded, _) = guard("c1", &log(10), &policy, o200k(), dir.path());
        assert_eq!(guarded, Guarded::Unchanged);
        // Tiny caps and multi-byte text.
        let emoji = "🦀".repeat(1_000);
        for max in [0, 1, 40, 60, 61, 62, 63, 100] {
            let cut = truncate_middle_bytes(&emoji, max).unwrap();
            assert!(cut.len() <= max.max(51), "{max}: {cut}");
        }
    }

    #[test]
    fn the_none_policy_never_truncates_and_never_counts() {
        let dir = tempfile::tempdir().unwrap();
        let text = log(20_000);
        let policy = GuardPolicy {
            truncation: Truncation::None,
            evict_over_tokens: None,
        };
        let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
        assert_eq!((guarded, counted), (Guarded::Unchanged, 0));
        // With eviction on, only eviction applies.
        let policy = GuardPolicy {
            truncation: Truncation::None,
            ..GuardPolicy::default()
        };
        let (guarded, _) = guard("c1", &log(300), &policy, o200k(), dir.path());
        assert_eq!(guarded, Guarded::Unchanged);
    }

    #[test]
    fn eviction_writes_the_exact_original_privately_and_previews_it() {
        let dir = tempfile::tempdir().unwrap();
        let evicted = dir.path().join("evicted");
        let text = log(2_000);
        let (guarded, _) = guard(
            "toolu_01AB",
            &text,
            &GuardPolicy::default(),
            o200k(),
            &evicted,
        );
        let Guarded::Evicted {
            preview,
            path,
            original_tokens,
            estimated,
        } = guarded
        else {
            panic!("not evicted: {guarded:?}");
        };
        assert_eq!(path, evicted.join("toolu_01AB.txt"));
        assert_eq!(fs::read(&path).unwrap(), text.as_bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Only the file: no temporary left behind.
        let names: Vec<_> = fs::read_dir(&evicted)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["toolu_01AB.txt"]);

        let lines: Vec<&str> = text.lines().collect();
        for line in &lines[..5] {
            assert!(preview.contains(line), "{line}");
        }
        for line in &lines[lines.len() - 5..] {
            assert!(preview.contains(line), "{line}");
        }
        assert!(!preview.contains(lines[5]) && !preview.contains(lines[lines.len() - 6]));
        assert!(preview.contains("toolu_01AB") && preview.contains("read_evicted_output"));
        assert!(preview.contains("2000 lines") && preview.contains("[… 1990 lines omitted …]"));
        assert!(preview.contains(&format!("{} bytes", text.len())) && estimated);
        let exact = o200k().count(&text) as u64;
        assert!(
            original_tokens.abs_diff(exact) * 20 < exact,
            "{original_tokens} vs {exact}"
        );
        assert!(o200k().count(&preview) < 1_000);

        // Eviction again (a re-ingest) replaces the file.
        let (guarded, _) = guard(
            "toolu_01AB",
            &log(2_001),
            &GuardPolicy::default(),
            o200k(),
            &evicted,
        );
        assert!(matches!(guarded, Guarded::Evicted { .. }));
        assert_eq!(fs::read_to_string(&path).unwrap(), log(2_001));
    }

    #[test]
    fn previews_of_few_huge_lines_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{}\n{}", "x".repeat(100_000), "y".repeat(100_000));
        let (guarded, _) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
        let Guarded::Evicted { preview, .. } = guarded else {
            panic!("not evicted: {guarded:?}");
        };
        assert!(preview.len() < 2_000, "{}", preview.len());
        assert!(preview.contains("2 lines") && preview.contains("more bytes]"));
    }

    #[test]
    fn bad_call_ids_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let evicted = dir.path().join("evicted");
        let text = log(2_000);
        for bad in ["../x", "a/b", "", ".hidden", "a\0b"] {
            let result = guard_tool_output(bad, &text, &GuardPolicy::default(), o200k(), &evicted);
            assert!(
                matches!(
                    result,
                    Err(Error::InvalidId {
                        kind: IdKind::ToolCall,
                        ..
                    })
                ),
                "{bad:?}: {result:?}"
            );
            assert!(matches!(
                read_evicted(&evicted, bad, 0, 10),
                Err(Error::InvalidId { .. })
            ));
        }
        assert!(!evicted.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

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

    #[test]
    fn huge_outputs_are_never_counted_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let text = log(28_000);
        assert!(text.len() > 2_000_000);

        // Eviction: the decision costs at most the threshold's worth of text.
        let (guarded, counted) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
        assert!(matches!(
            guarded,
            Guarded::Evicted {
                estimated: true,
                ..
            }
        ));
        assert!(counted < 100_000, "counted {counted} bytes");

        // Truncation: the scan to the exact-count limit plus what is kept.
        let (guarded, counted) = guard("c1", &text, &no_evict(), o200k(), dir.path());
        let Guarded::Truncated {
            content, estimated, ..
        } = guarded
        else {
            panic!("not truncated: {guarded:?}");
        };
        assert!(estimated && content.contains("…~"));
        assert!(o200k().count(&content) <= 6_000);
        assert!(counted < text.len() / 10, "counted {counted} bytes");

        // A tighter cap without eviction: the same bound, whatever the size.
        let policy = GuardPolicy {
            truncation: Truncation::Tokens(1_000),
            evict_over_tokens: None,
        };
        let (_, counted_2mb) = guard("c1", &text, &policy, o200k(), dir.path());
        let (_, counted_1mb) = guard("c1", &log(14_000), &policy, o200k(), dir.path());
        assert!(
            counted_2mb.abs_diff(counted_1mb) < 10_000,
            "{counted_2mb} vs {counted_1mb}"
        );

        // The threshold is decided exactly: just over evicts, just under does not.
        let cut = 74 * 700; // a line boundary, followed by "[000700]"
        let policy = GuardPolicy {
            truncation: Truncation::None,
            evict_over_tokens: Some(o200k().count(&text[..cut]) as u64),
        };
        let (under, _) = guard("c2", &text[..cut], &policy, o200k(), dir.path());
        assert_eq!(under, Guarded::Unchanged);
        let (over, _) = guard("c2", &text[..cut + 8], &policy, o200k(), dir.path());
        assert!(matches!(over, Guarded::Evicted { .. }));
    }

    #[test]
    fn scan_is_exact_and_stops_early() {
        let text = log(500);
        let exact = o200k().count(&text) as u64;
        let mut counter = Counter::new(o200k());
        let scan = counter.scan(&text, exact);
        assert!(scan.complete && scan.tokens == exact);
        let mut counter = Counter::new(o200k());
        let scan = counter.scan(&text, 1_000);
        assert!(!scan.complete && scan.tokens <= 1_000);
        assert_eq!(o200k().count(&text[..scan.end]) as u64, scan.tokens);
        assert!(counter.bytes_counted < 5_000, "{}", counter.bytes_counted);
    }

    #[test]
    fn a_text_counted_whole_is_not_counted_again_by_a_scan() {
        let text = log(400);
        let exact = o200k().count(&text) as u64;
        let mut counter = Counter::new(o200k());
        let scan = counter.scan(&text, exact);
        assert!(scan.complete && scan.tokens == exact);
        assert_eq!(counter.bytes_counted, 0, "remembered, not counted");
        // Under a lower limit the scan stops where it always did.
        let scan = counter.scan(&text, exact / 2);
        assert!(!scan.complete && scan.tokens <= exact / 2);
        assert!(counter.bytes_counted > 0);
    }

    #[test]
    fn eviction_decided_by_pieces_agrees_with_counting() {
        let policy = GuardPolicy {
            evict_over_tokens: Some(300),
            ..GuardPolicy::default()
        };
        let texts = [
            "ok ".repeat(299),
            "ok ".repeat(301),
            "supercalifragilistic_identifier_0123456789 ".repeat(40),
            "日本語のテキスト ".repeat(60),
            log(30),
        ];
        for text in &texts {
            let tokens = o200k().count(text) as u64;
            assert_eq!(
                should_evict(text, &policy, o200k()),
                tokens > 300,
                "{tokens} tokens"
            );
            if more_pieces_than(text, 300, o200k()) {
                assert!(tokens > 300);
            }
        }
    }

    #[test]
    fn the_tool_schema_is_well_formed() {
        let schema = read_evicted_output_schema();
        let parsed = ToolSchema::from_json(&schema.to_json()).unwrap();
        assert_eq!(parsed.name, "read_evicted_output");
        let props = &schema.parameters["properties"];
        assert_eq!(props["call_id"]["type"], "string");
        assert_eq!(props["offset"]["type"], "integer");
        assert_eq!(props["offset"]["default"], 0);
        assert_eq!(props["limit"]["default"], 200);
    }
}
