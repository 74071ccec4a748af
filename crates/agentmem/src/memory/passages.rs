//! Passages of long events: a long user turn, assistant turn or tool
//! output is split into passages of a few sentences, each scored against
//! the query by BM25 over the event's passages (the index's own words:
//! the same stemming as the history index), so recall can show the part
//! of a long event that matches rather than its start.

use std::ops::Range;

use crate::base::error::Result;
use crate::search::lexemes::lexemes_of;
use crate::search::query::{terms, word_sequence};

/// About how long one passage is, in bytes (some 100 tokens of prose).
const PASSAGE_BYTES: usize = 400;
/// How much of a long text is split and scored: a tool output of megabytes
/// is looked into up to here (the rest of it is never shown anyway).
pub(crate) const MAX_SCANNED_BYTES: usize = 32 * 1024;
/// BM25's term-frequency saturation and length normalization, as the index's.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The passages of `text`: consecutive byte ranges covering it (up to
/// [`MAX_SCANNED_BYTES`]), each of whole sentences or lines where those
/// are short enough, of about [`PASSAGE_BYTES`] each.
pub(crate) fn passages(text: &str) -> Vec<Range<usize>> {
    let scanned = byte_prefix(text, MAX_SCANNED_BYTES).len();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    for unit in units(&text[..scanned]) {
        let grown = unit.end - start;
        if grown > PASSAGE_BYTES && unit.start > start {
            ranges.push(start..unit.start);
            start = unit.start;
        }
        // A single sentence or line longer than a passage is cut at spaces.
        while unit.end - start > PASSAGE_BYTES * 2 {
            let end = cut_point(text, start, start + PASSAGE_BYTES);
            ranges.push(start..end);
            start = end;
        }
    }
    if start < scanned || ranges.is_empty() {
        ranges.push(start..scanned);
    }
    ranges
}

/// The sentences and lines of `text`: ranges ending after a line break or
/// after a sentence's closing mark and the space that follows it.
fn units(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut units = Vec::new();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let ends = match byte {
            b'\n' => true,
            b' ' => at > 0 && matches!(bytes[at - 1], b'.' | b'?' | b'!'),
            _ => false,
        };
        if ends {
            units.push(start..at + 1);
            start = at + 1;
        }
    }
    if start < text.len() {
        units.push(start..text.len());
    }
    units
}

/// Where to end a piece of `text` begun at `start` near `near`: its last
/// whitespace in the second half, else the char boundary at or before `near`.
fn cut_point(text: &str, start: usize, near: usize) -> usize {
    let end = start + byte_prefix(&text[start..], near - start).len();
    let mut half = start + (end - start) / 2;
    while !text.is_char_boundary(half) {
        half += 1;
    }
    text[half..end]
        .rfind(char::is_whitespace)
        .map_or(end, |at| half + at + 1)
}

/// The longest prefix of `text` of at most `max_bytes`, on a char boundary.
pub(crate) fn byte_prefix(text: &str, max_bytes: usize) -> &str {
    let mut end = text.len().min(max_bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Which of `text`'s passages best matches `query`, and how many there are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BestPassage {
    /// Every passage of the text, in order.
    pub(crate) passages: Vec<Range<usize>>,
    /// The index of the best among them (the first when none matches).
    pub(crate) best: usize,
}

/// Scores each passage of `text` against `query` by BM25 over the text's
/// passages (a query word found in few of them weighs more) and returns
/// the best; ties go to the earlier passage, and a text none of whose
/// passages holds a query word is best shown from its start (a tool
/// output says what it is there). The query's searchable words are stemmed
/// as the index stems them; a passage's word counts for a stem it begins
/// with (`feeding` for `feed`, `happy` for `happi`), which spares running
/// the index's tokenizer over kilobytes of tool output on every recall.
pub(crate) fn best_passage(text: &str, query: &str) -> Result<BestPassage> {
    let passages = passages(text);
    if passages.len() < 2 {
        return Ok(BestPassage { passages, best: 0 });
    }
    let asked: Vec<String> = lexemes_of(&[("", &terms(query).join(" "))])?
        .into_iter()
        .flat_map(|l| l.counts.into_iter().map(|(lexeme, _)| lexeme))
        .collect();
    let counted: Vec<(Vec<u32>, u32)> = passages
        .iter()
        .map(|range| {
            let mut counts = vec![0u32; asked.len()];
            let mut length = 0u32;
            for word in word_sequence(&text[range.clone()]) {
                length += 1;
                for (count, stem) in counts.iter_mut().zip(&asked) {
                    *count += u32::from(stems_to(&word, stem));
                }
            }
            (counts, length)
        })
        .collect();
    let n = counted.len() as f64;
    let mean_length = counted.iter().map(|(_, len)| f64::from(*len)).sum::<f64>() / n;
    let weights: Vec<f64> = (0..asked.len())
        .map(|at| {
            let df = counted.iter().filter(|(c, _)| c[at] > 0).count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut best = (0, 0.0);
    for (at, (counts, length)) in counted.iter().enumerate() {
        let norm = K1 * (1.0 - B + B * f64::from(*length) / mean_length.max(1.0));
        let score: f64 = counts
            .iter()
            .zip(&weights)
            .filter(|(&tf, _)| tf > 0)
            .map(|(&tf, weight)| {
                let tf = f64::from(tf);
                weight * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum();
        if score > best.1 {
            best = (at, score);
        }
    }
    Ok(BestPassage {
        passages,
        best: best.0,
    })
}

/// Whether `word` (lowercased) is one the Porter stem `stem` stands for:
/// it begins with the stem, or with the stem's `i` read as `y`.
fn stems_to(word: &str, stem: &str) -> bool {
    word.starts_with(stem)
        || stem
            .strip_suffix('i')
            .and_then(|head| word.strip_prefix(head))
            .is_some_and(|rest| rest.starts_with('y'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_cover_the_text_in_order_on_char_boundaries() {
        let texts = [
            "One. Two? Three!\nFour".repeat(80),
            "日本語のテキストと絵文字🙂が混ざった行".repeat(100),
            "a".repeat(5_000),
            "short".to_owned(),
            String::new(),
        ];
        for text in &texts {
            let found = passages(text);
            assert_eq!(found.first().map(|r| r.start), Some(0));
            assert_eq!(found.last().map(|r| r.end), Some(text.len()));
            for pair in found.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
            for range in &found {
                assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
                assert!(range.len() <= PASSAGE_BYTES * 2 + 4, "{}", range.len());
            }
        }
    }

    #[test]
    fn the_passage_that_holds_the_rarer_query_words_wins() {
        let filler = "We talked about the weather and the garden for a while. ".repeat(12);
        let text = format!(
            "{filler}\nThe sourdough starter needs feeding twice a day with rye flour.\n{filler}"
        );
        let found = best_passage(&text, "How often do I feed my sourdough starter?").unwrap();
        assert!(found.passages.len() >= 3, "{:?}", found.passages);
        let shown = &text[found.passages[found.best].clone()];
        assert!(shown.contains("sourdough starter"), "{shown}");
        assert!(stems_to("feeding", "feed") && stems_to("happy", "happi"));
        assert!(!stems_to("fed", "feed"));
        let none = best_passage(&text, "quantum chromodynamics").unwrap();
        assert_eq!(none.best, 0, "no match: the start");
    }
}
