//! Pre-tokenization of ASCII text without a regex.
//!
//! Before BPE, OpenAI's encodings split text into pieces (words with a
//! leading space, runs of up to three digits, punctuation runs, whitespace)
//! by a regex. On ASCII text the regex is most of what counting costs, and
//! its classes shrink to a few byte ranges, so the same split is made here by
//! hand, alternative by alternative in the regex's own order (the first that
//! matches wins, each as greedy as the regex). In text with non-ASCII
//! characters ([`mixed_pieces`]) the ASCII stretches are still split by hand,
//! and only a piece that may reach a non-ASCII character is found by the
//! encoding's regex ([`unicode_pieces`]), compiled here on first use (a few
//! milliseconds) so that splitting never loads the encoding's BPE tables
//! (tens of milliseconds); the tests check that every split is the one
//! `bpe-openai` makes.

use std::sync::LazyLock;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// The split rules of one encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rules {
    /// o200k_base: words split at case changes, contractions as suffixes,
    /// `/` and line breaks kept after punctuation.
    O200k,
    /// cl100k_base: letters of any case together, contractions on their own,
    /// line breaks kept after punctuation.
    Cl100k,
}

/// The pieces of any `text`, in order, by the encoding's regex: its first
/// pattern as it is, then `\s+\s` (a look-ahead: its last character is left
/// for the next piece, as `\s+(?!\S)` would) and `\s+`.
#[cfg(test)]
pub(crate) fn unicode_pieces(text: &str, rules: Rules) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let end = regex_piece_end(text, start, rules)?;
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

/// The end of the piece the encoding's regex finds at `start`; `None` at
/// the end of `text`.
fn regex_piece_end(text: &str, start: usize, rules: Rules) -> Option<usize> {
    let regex = splitting_regex_of(rules);
    let input = Input::new(&text[start..]).anchored(Anchored::Yes);
    let found = regex.find(input)?;
    let mut end = start + found.end();
    if found.pattern().as_usize() == LOOKAHEAD_PATTERN {
        end -= text[start..end]
            .chars()
            .next_back()
            .map_or(0, char::len_utf8);
    }
    Some(end)
}

/// The pieces of any `text`, as the encoding's regex splits it, with the
/// regex run only where a piece may reach a non-ASCII character.
///
/// Every alternative of the regex matches a run of one kind (letters after
/// one leading character, up to three digits, punctuation then line breaks,
/// whitespace), so a piece that starts before [`hand_split_end`] of its ASCII
/// stretch can never reach the stretch's end: each of the regex's attempts
/// sees the same bytes by hand as in the whole text, and the split by hand
/// is the regex's own.
pub(crate) fn mixed_pieces(text: &str, rules: Rules) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut stretch = AsciiStretch::from(bytes, 0);
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        if start > stretch.end {
            stretch = AsciiStretch::from(bytes, start);
        }
        let end = if start < stretch.hand_split_end {
            ascii_piece_end(&bytes[..stretch.end], start, rules)
        } else {
            regex_piece_end(text, start, rules)?
        };
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

/// A run of ASCII bytes and how far into it pieces may be split by hand.
struct AsciiStretch {
    /// Where the run ends: the first non-ASCII byte, or the end of the text.
    end: usize,
    /// Pieces that start before this end before [`AsciiStretch::end`].
    hand_split_end: usize,
}

impl AsciiStretch {
    fn from(bytes: &[u8], from: usize) -> AsciiStretch {
        let end = bytes[from..]
            .iter()
            .position(|b| !b.is_ascii())
            .map_or(bytes.len(), |n| from + n);
        AsciiStretch {
            end,
            hand_split_end: hand_split_end(&bytes[..end], from, bytes.len()),
        }
    }
}

/// The first start in `stretch[from..]` from which a piece could run to the
/// stretch's end, when more text follows it (`text_len` is past it): the
/// start of its last run of letters (or apostrophes, for contractions),
/// of punctuation and line breaks, or of whitespace, less the leading
/// character a word or a punctuation run may take, and at most four bytes
/// (three digits and a leading character) before the end.
fn hand_split_end(stretch: &[u8], from: usize, text_len: usize) -> usize {
    let end = stretch.len();
    if end == text_len {
        return end;
    }
    let run_start = |keep: fn(u8) -> bool| {
        stretch[from..]
            .iter()
            .rposition(|&b| !keep(b))
            .map_or(from, |i| from + i + 1)
    };
    let letters = run_start(|b| b.is_ascii_alphabetic() || b == b'\'');
    let punctuation = run_start(|b| is_punctuation(b) || b == b'\r' || b == b'\n');
    let whitespace = run_start(is_whitespace);
    letters
        .saturating_sub(1)
        .min(punctuation.saturating_sub(1))
        .min(whitespace)
        .min(end.saturating_sub(4))
        .max(from)
}

/// Which of the regex's patterns is the look-ahead one.
const LOOKAHEAD_PATTERN: usize = 1;

static O200K_REGEX: LazyLock<Regex> = LazyLock::new(|| {
    let words = [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+$",
    ]
    .join("|");
    splitting_regex(&words)
});

static CL100K_REGEX: LazyLock<Regex> = LazyLock::new(|| {
    splitting_regex(
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+$",
    )
});

/// The encoding's regex, compiled on first use (only text that is not
/// ASCII needs it).
pub(crate) fn splitting_regex_of(rules: Rules) -> &'static Regex {
    match rules {
        Rules::O200k => &O200K_REGEX,
        Rules::Cl100k => &CL100K_REGEX,
    }
}

fn splitting_regex(words: &str) -> Regex {
    Regex::new_many(&[words, r"\s+\s", r"\s+"]).expect("the encodings' split patterns are valid")
}

/// The pieces of `text`, in order; `text` must be ASCII.
pub(crate) fn ascii_pieces(text: &str, rules: Rules) -> impl Iterator<Item = &str> {
    debug_assert!(text.is_ascii());
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = ascii_piece_end(bytes, start, rules);
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

/// The end of the piece that starts at `p` of the ASCII text `s`.
fn ascii_piece_end(s: &[u8], p: usize, rules: Rules) -> usize {
    match rules {
        Rules::O200k => o200k_piece(s, p),
        Rules::Cl100k => cl100k_piece(s, p),
    }
}

/// The end of the o200k piece that starts at `p`.
fn o200k_piece(s: &[u8], p: usize) -> usize {
    let q = letters_start(s, p);
    if let Some(q) = q {
        let upper = run(s, q, |b| b.is_ascii_uppercase());
        let lower = run(s, upper, |b| b.is_ascii_lowercase());
        // `[A-Z]*[a-z]+`, then `[A-Z]+[a-z]*`: either way, the case run.
        if lower > upper || upper > q {
            return contraction_end(s, lower).unwrap_or(lower);
        }
    }
    common_piece(s, p, b"\r\n/")
}

/// The end of the cl100k piece that starts at `p`.
fn cl100k_piece(s: &[u8], p: usize) -> usize {
    if let Some(end) = contraction_end(s, p) {
        return end;
    }
    if let Some(q) = letters_start(s, p) {
        let end = run(s, q, |b| b.is_ascii_alphabetic());
        if end > q {
            return end;
        }
    }
    common_piece(s, p, b"\r\n")
}

/// Where the letters of a word piece would start: after one leading
/// character that is not a line break, letter or digit, if there is one.
/// `None` when the piece cannot be a word.
fn letters_start(s: &[u8], p: usize) -> Option<usize> {
    let first = s[p];
    if first.is_ascii_alphabetic() {
        Some(p)
    } else if first == b'\r' || first == b'\n' || first.is_ascii_digit() {
        None
    } else {
        Some(p + 1)
    }
}

/// The alternatives both encodings share after the word ones: digits,
/// punctuation (then any of `after_punctuation`), line breaks, whitespace.
fn common_piece(s: &[u8], p: usize, after_punctuation: &[u8]) -> usize {
    let first = s[p];
    if first.is_ascii_digit() {
        return run(s, p, |b| b.is_ascii_digit()).min(p + 3);
    }
    let punctuation_from = if first == b' ' && s.get(p + 1).copied().is_some_and(is_punctuation) {
        Some(p + 1)
    } else if is_punctuation(first) {
        Some(p)
    } else {
        None
    };
    if let Some(from) = punctuation_from {
        let end = run(s, from, is_punctuation);
        return run(s, end, |b| after_punctuation.contains(&b));
    }
    whitespace_piece(s, p)
}

/// The end of a whitespace piece at `p`: through its last line break if it
/// has one, to the end of the text if it reaches it, else all but its last
/// character (which leads the next piece) when there are two or more.
fn whitespace_piece(s: &[u8], p: usize) -> usize {
    let end = run(s, p, is_whitespace);
    debug_assert!(
        end > p,
        "every ASCII byte is a letter, digit, punctuation or whitespace"
    );
    if let Some(last_break) = s[p..end].iter().rposition(|&b| b == b'\r' || b == b'\n') {
        p + last_break + 1
    } else if end == s.len() || end - p == 1 {
        end
    } else {
        end - 1
    }
}

/// The end of a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, in
/// any case) at `p`, the first of them that matches.
fn contraction_end(s: &[u8], p: usize) -> Option<usize> {
    const CONTRACTIONS: [&[u8]; 7] = [b"s", b"t", b"re", b"ve", b"m", b"ll", b"d"];
    if s.get(p) != Some(&b'\'') {
        return None;
    }
    let rest = &s[p + 1..];
    CONTRACTIONS
        .iter()
        .find(|c| rest.len() >= c.len() && rest[..c.len()].eq_ignore_ascii_case(c))
        .map(|c| p + 1 + c.len())
}

/// The end of the run of bytes from `p` that satisfy `keep`.
fn run(s: &[u8], p: usize, keep: impl Fn(u8) -> bool) -> usize {
    s[p..]
        .iter()
        .position(|&b| !keep(b))
        .map_or(s.len(), |n| p + n)
}

/// `[^\s\p{L}\p{N}]` on ASCII.
fn is_punctuation(b: u8) -> bool {
    !(is_whitespace(b) || b.is_ascii_alphanumeric())
}

/// `\s` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
fn is_whitespace(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_any_text_as_the_encodings_do() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
        let texts = [
            "Naïve café — ⟦event 3, passage 1 of 2⟧ façade",
            "日本語のテキスト、そして English words 123456",
            "ÀÉÎÕÜ àéîõü ǅungla ǈ Ⅻ ½ ٣٤٥ x\u{301}y \u{a0}\u{2003}nbsp\u{2028}",
            "emoji 👩‍💻 and flags 🇫🇷 mixed:\r\n  next  \t",
            "don’t I’LL we'Re it's O'NEIL’S",
            // Pieces the regex runs past an ASCII stretch: a contraction
            // ending in a letter that folds to `s`, and a line break's
            // whitespace reaching over a no-break space.
            "a'ſ it'ſ",
            "\n  \u{a0}\n",
            "x  \u{a0}y …\n\n—",
        ];
        for text in texts.iter().copied().chain(readme.lines()) {
            for rules in [Rules::O200k, Rules::Cl100k] {
                let ours: Vec<&str> = unicode_pieces(text, rules).collect();
                assert_eq!(ours, regex_pieces(text, rules), "{rules:?} on {text:?}");
                let mixed: Vec<&str> = mixed_pieces(text, rules).collect();
                assert_eq!(mixed, regex_pieces(text, rules), "{rules:?} on {text:?}");
            }
        }
    }

    fn regex_pieces(text: &str, rules: Rules) -> Vec<&str> {
        let bpe = match rules {
            Rules::O200k => bpe_openai::o200k_base(),
            Rules::Cl100k => bpe_openai::cl100k_base(),
        };
        bpe.split(text).collect()
    }

    fn assert_same_split(text: &str) {
        for rules in [Rules::O200k, Rules::Cl100k] {
            let ours: Vec<&str> = ascii_pieces(text, rules).collect();
            assert_eq!(ours, regex_pieces(text, rules), "{rules:?} on {text:?}");
        }
    }

    #[test]
    fn splits_as_the_regex_does_on_tricky_text() {
        for text in [
            "",
            "Hello world",
            "HTTPServer said HELLO to iPhone users",
            "don't I'LL we'Re it's 'sup 'hello",
            "a  b   c\t\td \n\n  e\r\n  f  ",
            "x = foo(bar)/2;\n/// doc\n./run.sh --flag=1 2>&1 | tee\n",
            "12345 1.5e10 0x1F v0.12.3",
            "trailing spaces   ",
            " \u{b}\u{c}\t mixed \u{0}\u{1b}[0m",
            ".\n/path\r\n/x",
        ] {
            assert_same_split(text);
        }
    }

    #[test]
    fn splits_this_project_as_the_regex_does() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        for file in ["README.md", "examples/long-coding-session.jsonl"] {
            let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            for line in text.lines().filter(|l| l.is_ascii()) {
                assert_same_split(line);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn splits_any_ascii_text_as_the_regex_does(
            text in proptest::collection::vec(
                proptest::sample::select(
                    b"aAzZsStTrReEvVmMlLdD09 \t\n\r\x0B\x0C'/.,!-_~\x00\x1b".to_vec()
                ),
                0..48,
            ).prop_map(|bytes| String::from_utf8(bytes).unwrap())
        ) {
            for rules in [Rules::O200k, Rules::Cl100k] {
                let ours: Vec<&str> = ascii_pieces(&text, rules).collect();
                prop_assert_eq!(ours, regex_pieces(&text, rules), "{:?}", rules);
            }
        }

        #[test]
        fn splits_ascii_with_some_unicode_as_the_encodings_do(
            text in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "Z", "s", "S", "t", "re", "ll", "d", "0", "7", " ", "  ", "\t", "\n", "\r\n",
                    "'", "/", ".", ",", "-", "_", "\u{b}", "\u{1b}",
                    "é", "É", "ſ", "\u{212a}", "…", "—", "٣", "\u{a0}", "\u{2028}", "\u{301}",
                    "日本", "👩‍💻", "’",
                ]),
                0..40,
            ).prop_map(|parts| parts.concat())
        ) {
            for rules in [Rules::O200k, Rules::Cl100k] {
                let ours: Vec<&str> = mixed_pieces(&text, rules).collect();
                prop_assert_eq!(ours, regex_pieces(&text, rules), "{:?}", rules);
            }
        }

        #[test]
        fn splits_any_unicode_text_as_the_encodings_do(text in "\\PC{0,40}") {
            for rules in [Rules::O200k, Rules::Cl100k] {
                let ours: Vec<&str> = unicode_pieces(&text, rules).collect();
                prop_assert_eq!(ours, regex_pieces(&text, rules), "{:?}", rules);
                let mixed: Vec<&str> = mixed_pieces(&text, rules).collect();
                prop_assert_eq!(mixed, regex_pieces(&text, rules), "{:?}", rules);
            }
        }
    }
}
