//! Counting with a meter: prefix counts that stop past a limit, fits of a
//! head or a tail to a budget, and a tally of the bytes tokenized.

use super::cut::{ceil_boundary, floor_boundary, offset_in};
use crate::tokens::tokenizer::{Bpe, Cut};
use crate::tokens::Tokenizer;

/// What a prefix count found.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scan {
    /// Tokens in `text[..end]`.
    pub(super) tokens: u64,
    /// Bytes counted.
    pub(super) end: usize,
    /// The whole text was counted: `tokens` is its exact count.
    pub(super) complete: bool,
    /// The limit the count stopped at when incomplete.
    pub(super) limit: u64,
}

impl Scan {
    /// The size of the whole text (of `len` bytes): exact if the scan was
    /// complete, else estimated from the density of the scanned prefix plus
    /// `extra_tokens` counted in `extra_bytes` elsewhere.
    pub(super) fn total(&self, len: usize, extra_tokens: u64, extra_bytes: usize) -> (u64, bool) {
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
pub(super) struct Counter {
    pub(super) tokenizer: Tokenizer,
    pub(super) bytes_counted: usize,
}

impl Counter {
    pub(super) fn new(tokenizer: Tokenizer) -> Counter {
        Counter {
            tokenizer,
            bytes_counted: 0,
        }
    }

    /// The exact count of `text`, by [`Tokenizer::count`].
    pub(super) fn count(&mut self, text: &str) -> u64 {
        self.bytes_counted += text.len();
        self.tokenizer.count(text) as u64
    }

    /// Counts `text` from the start, stopping once the count passes `limit`.
    /// A text counted whole lately is not counted again (when the count is
    /// over the limit, the scan stops where it would have).
    pub(super) fn scan(&mut self, text: &str, limit: u64) -> Scan {
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
        if let Some([tokens, end]) = self.remembered_cut(text, Cut::Prefix(limit)) {
            return Scan {
                tokens,
                end: end as usize,
                complete: false,
                limit,
            };
        }
        let scan = self.scan_pieces(text, limit);
        if scan.complete {
            self.tokenizer.remember(text, scan.tokens as usize);
        } else {
            let found = [scan.tokens, scan.end as u64];
            self.tokenizer.remember_cut(text, Cut::Prefix(limit), found);
        }
        scan
    }

    /// Where `cut` of `text` fell lately, if that is a place in `text` (a
    /// remembered place is found by the text's hash).
    fn remembered_cut(&self, text: &str, cut: Cut) -> Option<[u64; 2]> {
        let found = self.tokenizer.remembered_cut(text, cut)?;
        let place = match cut {
            Cut::Head(_) | Cut::Tail(_) => found[0],
            Cut::Prefix(_) => found[1],
        };
        let place = usize::try_from(place).ok()?;
        (place <= text.len() && text.is_char_boundary(place)).then_some(found)
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
        match bpe.count_till(text, limit_usize) {
            Ok(tokens) => {
                self.bytes_counted += text.len();
                Scan {
                    tokens: tokens as u64,
                    end: text.len(),
                    complete: true,
                    limit,
                }
            }
            Err((tokens, stopping_piece)) => {
                self.bytes_counted += stopping_piece.end;
                Scan {
                    tokens: tokens as u64,
                    end: stopping_piece.start,
                    complete: false,
                    limit,
                }
            }
        }
    }

    /// The end of a prefix of `text` with about `budget` tokens, at most
    /// (up to pre-tokenization effects at the cut, which the caller checks).
    pub(super) fn fit_prefix(&mut self, text: &str, budget: u64) -> usize {
        self.place_of(text, Cut::Head(budget), |c| {
            c.fit_prefix_counted(text, budget)
        })
    }

    /// Where `cut` of `text` falls: remembered, or found by `find` and remembered.
    fn place_of(
        &mut self,
        text: &str,
        cut: Cut,
        find: impl FnOnce(&mut Counter) -> usize,
    ) -> usize {
        if let Some([place, _]) = self.remembered_cut(text, cut) {
            return place as usize;
        }
        let place = find(self);
        self.tokenizer.remember_cut(text, cut, [place as u64, 0]);
        place
    }

    fn fit_prefix_counted(&mut self, text: &str, budget: u64) -> usize {
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
        match bpe.count_till(text, budget) {
            Ok(_) => {
                self.bytes_counted += text.len();
                text.len()
            }
            Err((used, piece)) => {
                self.bytes_counted += piece.end;
                let partial = self.partial_prefix(bpe, &text[piece.clone()], budget - used);
                piece.start + partial
            }
        }
    }

    /// The length of a prefix of `piece` with at most `remaining` tokens.
    fn partial_prefix(&mut self, bpe: Bpe, piece: &str, remaining: usize) -> usize {
        for ratio in [8, 4, 2] {
            let k = floor_boundary(piece, remaining.saturating_mul(ratio));
            if k == 0 || k >= piece.len() {
                continue;
            }
            self.bytes_counted += k;
            if bpe.piece_tokens_till(&piece[..k], remaining).is_some() {
                return k;
            }
        }
        // A token is at least one byte.
        floor_boundary(piece, remaining)
    }

    /// The start of a suffix of `text` with about `budget` tokens, at most
    /// (up to pre-tokenization effects at the cut, which the caller checks).
    /// Counts a window at the end, doubling it until it holds the budget.
    pub(super) fn fit_suffix(&mut self, text: &str, budget: u64) -> usize {
        self.place_of(text, Cut::Tail(budget), |c| {
            c.fit_suffix_counted(text, budget)
        })
    }

    fn fit_suffix_counted(&mut self, text: &str, budget: u64) -> usize {
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
                .counted_pieces(tail)
                .into_iter()
                .map(|(p, tokens)| (start + offset_in(tail, p), tokens))
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
            return piece_end - self.partial_suffix(bpe, piece, budget - used);
        }
    }

    /// The length of a suffix of `piece` with at most `remaining` tokens.
    fn partial_suffix(&mut self, bpe: Bpe, piece: &str, remaining: usize) -> usize {
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
            if bpe.piece_tokens_till(&piece[start..], remaining).is_some() {
                return piece.len() - start;
            }
        }
        // A token is at least one byte.
        piece.len() - ceil_boundary(piece, piece.len().saturating_sub(remaining))
    }
}
