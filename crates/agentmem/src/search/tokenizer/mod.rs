//! Words as the search index's tokenizer makes them: SQLite FTS5's
//! `porter unicode61 remove_diacritics 2`, reproduced in Rust. Text splits
//! into tokens at separators (anything but letters, numbers and private-use
//! characters, by SQLite's Unicode tables), each token is lower-cased and
//! stripped of diacritics, then Porter-stemmed. A database backend gets the
//! same words as the files index from it, without SQLite.

#[cfg(test)]
pub(crate) mod fts5;
mod porter;
mod tables;
mod unicode;

use std::ops::Range;

/// The longest word kept, in bytes (FTS5's `FTS5_MAX_TOKEN_SIZE`): a longer
/// token is cut to it.
pub(crate) const MAX_WORD_BYTES: usize = 32_768;

/// Calls `each` with every word of `text` in order: its lexeme (folded and
/// stemmed) and the bytes of `text` it came from.
pub(crate) fn for_each_word(text: &str, mut each: impl FnMut(&str, Range<usize>)) {
    let mut folded: Vec<u8> = Vec::with_capacity(64);
    let mut chars = text.char_indices().peekable();
    loop {
        // Skip separators.
        let start = loop {
            match chars.peek() {
                None => return,
                Some(&(at, c)) if unicode::is_token_char(unicode::code_point(c)) => break at,
                Some(_) => {
                    chars.next();
                }
            }
        };
        folded.clear();
        let mut end = start;
        // The first character is a token character; then token characters
        // and diacritical marks, folded (a mark folds to nothing).
        while let Some(&(at, c)) = chars.peek() {
            let code = unicode::code_point(c);
            let first = at == start;
            if !first && !unicode::is_token_char(code) && !unicode::is_diacritic(code) {
                break;
            }
            chars.next();
            end = at + c.len_utf8();
            push_code(&mut folded, unicode::fold(code));
        }
        porter::stem(&mut folded);
        folded.truncate(MAX_WORD_BYTES);
        match std::str::from_utf8(&folded) {
            Ok(lexeme) => each(lexeme, start..end),
            Err(_) => each(&String::from_utf8_lossy(&folded), start..end),
        }
    }
}

/// The lexemes of `text`, in order, repeats included.
#[cfg(test)]
fn words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for_each_word(text, |lexeme, _| found.push(lexeme.to_owned()));
    found
}

/// Appends `code` (a folded code point; 0 adds nothing) as UTF-8.
fn push_code(out: &mut Vec<u8>, code: u32) {
    if code == 0 {
        return;
    }
    let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
    let mut buffer = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_of_real_transcripts_is_the_word_fts5_makes() {
        let texts = fts5::corpus();
        assert!(texts.len() > 10_000, "too few texts: {}", texts.len());
        let expected = fts5::words_of(&texts);
        let mut differing = 0;
        for (text, fts5_words) in texts.iter().zip(&expected) {
            let ours = words(text);
            if &ours != fts5_words {
                differing += 1;
                if differing <= 5 {
                    eprintln!("{text:?}\n  ours: {ours:?}\n  fts5: {fts5_words:?}");
                }
            }
        }
        assert_eq!(differing, 0, "of {} texts", texts.len());
    }

    #[test]
    fn every_code_point_splits_and_folds_as_fts5_does() {
        // Each code point alone, inside a word, after one and with suffixes
        // the stemmer removes.
        let texts: Vec<String> = (1..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .collect::<Vec<char>>()
            .chunks(256)
            .map(|chunk| {
                chunk
                    .iter()
                    .map(|c| format!("{c} a{c}b ab{c} {c}{c}ed hop{c}ing {c}ies "))
                    .collect()
            })
            .collect();
        let expected = fts5::words_of(&texts);
        for (text, fts5_words) in texts.iter().zip(&expected) {
            assert_eq!(&words(text), fts5_words, "in {text:?}");
        }
    }

    #[test]
    fn splits_folds_and_stems() {
        assert_eq!(
            words("I researched adoption Agencies; CAFÉ déjà-vu x_y 3.14"),
            ["i", "research", "adopt", "agenc", "cafe", "deja", "vu", "x", "y", "3", "14"]
        );
        let mut spans = Vec::new();
        for_each_word("  Héllo, world", |lexeme, span| {
            spans.push((lexeme.to_owned(), span))
        });
        assert_eq!(
            spans,
            [("hello".to_owned(), 2..8), ("world".to_owned(), 10..15)]
        );
    }
}
