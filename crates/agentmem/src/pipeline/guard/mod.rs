//! Write-time guard on tool outputs: truncation and eviction.
//!
//! Every tool result passes through [`guard_tool_output`] when it is ingested.
//! The full original always stays in the event log; the guard only decides what
//! the *model* sees instead:
//!
//! - **Eviction**: an output over [`GuardPolicy::evict_over_tokens`] (default
//!   [`DEFAULT_EVICTION_THRESHOLD_TOKENS`]) is handed to the store
//!   ([`EvictedOutputs`]), which keeps it in
//!   `<session dir>/evicted/<tool_call_id>.txt` (mode 0600, atomically), and the
//!   model sees a preview: the first [`EVICTION_PREVIEW_HEAD_LINES`] and last
//!   [`EVICTION_PREVIEW_TAIL_LINES`] lines, the size in bytes and lines, the
//!   call id and how to read the rest with the
//!   [`read_evicted_output`](read_evicted_output_schema) tool
//!   ([`read_evicted`](crate::files::evicted::read_evicted) in the library). The preview ([`eviction_preview`]) tokenizes nothing, so
//!   a view rebuilt from the log gets the same text; the token size is in
//!   [`Guarded::Evicted`].
//! - **Truncation**: otherwise, an output over the cap of
//!   [`GuardPolicy::truncation`] (default [`DEFAULT_TOOL_OUTPUT_CAP_TOKENS`] ×
//!   `SERIALIZATION_BUFFER` = 6,000 tokens) keeps its head and its tail, half
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

mod counter;
mod cut;
mod evict;
mod policy;
mod tool;
mod truncate;

pub(crate) use cut::{count_lines, floor_boundary};
pub(crate) use evict::evicted_reference;
pub use evict::EvictedOutputs;
pub(crate) use evict::EVICTED_DIR;
pub use evict::{
    evicted_name, eviction_preview, EVICTION_PREVIEW_HEAD_LINES, EVICTION_PREVIEW_TAIL_LINES,
};
pub use policy::{
    GuardPolicy, Guarded, Truncation, DEFAULT_EVICTION_THRESHOLD_TOKENS,
    DEFAULT_TOOL_OUTPUT_CAP_TOKENS, EXACT_COUNT_LIMIT_TOKENS,
};
pub use tool::{read_evicted_output_schema, DEFAULT_READ_LIMIT_LINES, READ_EVICTED_OUTPUT_TOOL};
pub use truncate::{truncate_for_model, truncate_middle_bytes, truncate_middle_tokens};

use crate::base::error::Result;
use crate::tokens::Tokenizer;
use counter::Counter;
use truncate::truncate_tokens;

/// Guards one tool output: returns what the model should see instead of
/// `content` (never modifies anything in place).
///
/// Outputs over the eviction threshold are handed to `evicted` to keep (a
/// session's `evicted/` folder as a [`Path`](std::path::Path) writes them to
/// `<call_id>.txt` there, creating the folder if missing); `call_id` is
/// validated before anything touches the disk, and a bad id is an
/// [`Error::InvalidId`](crate::Error::InvalidId) with nothing written.
/// Other outputs over the truncation cap are cut in the middle. See the
/// [module docs](self) for the formats and for what gets tokenized.
///
/// ```
/// use agentmem::pipeline::guard::{guard_tool_output, GuardPolicy, Guarded};
/// use agentmem::files::evicted::read_evicted;
/// use agentmem::Encoding;
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
    evicted: &(impl EvictedOutputs + ?Sized),
) -> Result<Guarded> {
    guard_counted(
        &mut Counter::new(tokenizer),
        call_id,
        content,
        policy,
        evicted,
    )
}

fn guard_counted(
    counter: &mut Counter,
    call_id: &str,
    content: &str,
    policy: &GuardPolicy,
    evicted: &(impl EvictedOutputs + ?Sized),
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
            let path = evicted.keep(call_id, content)?;
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
/// use agentmem::pipeline::guard::{should_evict, GuardPolicy};
/// use agentmem::Encoding;
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
            let long =
                content.len() as u64 > threshold.saturating_mul(PIECES_FIRST_BYTES_PER_TOKEN);
            if long && more_pieces_than(content, threshold, counter.tokenizer) {
                return true;
            }
            let scan = counter.scan(content, threshold);
            !scan.complete || scan.tokens > threshold
        }
        _ => false,
    }
}

/// Texts longer than this many bytes a token of the eviction threshold are
/// first split into pieces without counting them: such a text is nearly
/// always over the threshold by its pieces alone (text averages about four
/// bytes a piece), and a shorter one would be split twice for nothing.
const PIECES_FIRST_BYTES_PER_TOKEN: u64 = 6;

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

#[cfg(test)]
mod tests;
