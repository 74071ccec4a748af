//! The index's words, for a backend that ranks them itself: what the files
//! index's FTS5 tokenizer (`porter unicode61 remove_diacritics 2`) makes of
//! a document or a query term, and the excerpt FTS5 would highlight.
//!
//! The words come from [`super::tokenizer`], which reproduces that
//! tokenizer exactly (a test holds it to SQLite's own on real transcripts):
//! a database backend that stores these lexemes matches and counts exactly
//! the words the files index does, so BM25 over them ranks alike.

use std::collections::BTreeMap;
use std::ops::Range;

use super::excerpt::{excerpt, MATCH_CLOSE, MATCH_OPEN};
use super::tokenizer::for_each_word;
use crate::base::error::Result;

/// One document's words: each lexeme with how often it occurs, and how
/// many tokens the document holds (its length for BM25).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lexemes {
    /// Each distinct lexeme and its count, in byte order.
    pub counts: Vec<(String, u32)>,
    /// Tokens in the document, repeats included.
    pub length: u32,
}

/// The lexemes of each document, given as `(speaker, text)` as the files
/// index stores them (speaker and text both count toward the length).
pub fn lexemes_of(documents: &[(&str, &str)]) -> Result<Vec<Lexemes>> {
    Ok(documents
        .iter()
        .map(|(speaker, text)| {
            let mut counts: BTreeMap<String, u32> = BTreeMap::new();
            let mut length = 0u32;
            for column in [speaker, text] {
                for_each_word(column, |lexeme, _| {
                    length += 1;
                    match counts.get_mut(lexeme) {
                        Some(count) => *count += 1,
                        None => {
                            counts.insert(lexeme.to_owned(), 1);
                        }
                    }
                });
            }
            Lexemes {
                counts: counts.into_iter().collect(),
                length,
            }
        })
        .collect())
}

/// The lexemes a query term (a word of [`super::query::terms`]) matches:
/// usually one, its stem; none for a word the tokenizer drops.
pub fn lexemes_of_term(term: &str) -> Result<Vec<String>> {
    let found = lexemes_of(&[("", term)])?;
    Ok(found
        .into_iter()
        .flat_map(|l| l.counts.into_iter().map(|(lexeme, _)| lexeme))
        .collect())
}

/// The excerpt FTS5 would show for `text` matching `expression` (an FTS5
/// query, as [`super::query::any_of`] and [`super::query::all_of`] make:
/// quoted phrases joined by `OR` or by `AND`): the matched words in
/// brackets, cut to the part that holds most of them; empty when `text`
/// does not match.
pub fn excerpt_for(text: &str, expression: &str) -> Result<String> {
    Ok(excerpt(&highlighted(text, expression).unwrap_or_default()))
}

/// `text` with each run of phrase matches between [`MATCH_OPEN`] and
/// [`MATCH_CLOSE`], as FTS5's `highlight()` marks it (overlapping matches
/// merge, adjacent ones do not); `None` when `text` does not match.
pub(crate) fn highlighted(text: &str, expression: &str) -> Option<String> {
    let (phrases, join) = phrases_of(expression);
    let mut tokens: Vec<(String, Range<usize>)> = Vec::new();
    for_each_word(text, |lexeme, span| tokens.push((lexeme.to_owned(), span)));
    // Each phrase's matches, as the token positions they cover.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut matched = 0;
    for phrase in &phrases {
        let before = spans.len();
        if !phrase.is_empty() && phrase.len() <= tokens.len() {
            for first in 0..=tokens.len() - phrase.len() {
                let at = tokens[first..first + phrase.len()].iter();
                if at.zip(phrase).all(|((lexeme, _), word)| lexeme == word) {
                    spans.push((first, first + phrase.len() - 1));
                }
            }
        }
        matched += usize::from(spans.len() > before);
    }
    let matches = match join {
        Join::All => matched == phrases.len() && matched > 0,
        Join::Any => matched > 0,
    };
    if !matches {
        return None;
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (first, last) in spans {
        match merged.last_mut() {
            Some((_, end)) if first <= *end => *end = (*end).max(last),
            _ => merged.push((first, last)),
        }
    }
    let mut out = String::with_capacity(text.len() + 2 * merged.len());
    let mut copied = 0;
    for (first, last) in merged {
        let (start, end) = (tokens[first].1.start, tokens[last].1.end);
        out.push_str(&text[copied..start]);
        out.push(MATCH_OPEN);
        out.push_str(&text[start..end]);
        out.push(MATCH_CLOSE);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// How an expression's phrases join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// `AND`: every phrase must match.
    All,
    /// `OR`: any phrase.
    Any,
}

/// The phrases of an expression of quoted phrases (`""` a quote inside
/// one), each as its lexemes, and how they join.
fn phrases_of(expression: &str) -> (Vec<Vec<String>>, Join) {
    let mut phrases = Vec::new();
    let mut join = Join::Any;
    let mut rest = expression;
    while let Some(open) = rest.find('"') {
        if rest[..open].contains(" AND ") {
            join = Join::All;
        }
        let mut phrase = String::new();
        let mut inside = &rest[open + 1..];
        loop {
            match inside.find('"') {
                Some(quote) if inside[quote + 1..].starts_with('"') => {
                    phrase.push_str(&inside[..=quote]);
                    inside = &inside[quote + 2..];
                }
                Some(quote) => {
                    phrase.push_str(&inside[..quote]);
                    inside = &inside[quote + 1..];
                    break;
                }
                None => {
                    phrase.push_str(inside);
                    inside = "";
                    break;
                }
            }
        }
        let mut words = Vec::new();
        for_each_word(&phrase, |lexeme, _| words.push(lexeme.to_owned()));
        phrases.push(words);
        rest = inside;
    }
    (phrases, join)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::{all_of, any_of, terms};
    use crate::search::tokenizer::fts5;
    use rusqlite::OptionalExtension;

    #[test]
    fn matches_are_highlighted_as_fts5_highlights_them() {
        let texts: Vec<String> = fts5::corpus().into_iter().step_by(7).take(4_000).collect();
        let conn = fts5::table_of(&texts);
        let mut statement = conn
            .prepare("SELECT highlight(t, 0, ?3, ?4) FROM t WHERE t MATCH ?1 AND rowid = ?2")
            .unwrap();
        let (open, close) = (MATCH_OPEN.to_string(), MATCH_CLOSE.to_string());
        let mut compared = 0;
        for (row, text) in texts.iter().enumerate() {
            // Words of the text itself (some twice over, stemmed alike),
            // and one it lacks.
            let mut asked: Vec<String> = terms(text).into_iter().step_by(3).take(4).collect();
            asked.push("zyzzyva".to_owned());
            for expression in [any_of(&asked), all_of(&asked[..asked.len() - 1])]
                .into_iter()
                .flatten()
            {
                let expected: Option<String> = statement
                    .query_row(
                        rusqlite::params![expression, row as i64 + 1, open, close],
                        |r| r.get(0),
                    )
                    .optional()
                    .unwrap();
                assert_eq!(
                    highlighted(text, &expression),
                    expected,
                    "{expression} in {text:?}"
                );
                compared += 1;
            }
        }
        assert!(compared > 4_000, "compared {compared}");
    }

    #[test]
    fn words_are_stemmed_folded_and_counted_as_fts5_does() {
        let found = lexemes_of(&[
            (
                "Caroline",
                "I researched adoption agencies; researching Agencies!",
            ),
            ("", "Café déjà vu"),
        ])
        .unwrap();
        let first: BTreeMap<_, _> = found[0].counts.iter().cloned().collect();
        assert_eq!(first["research"], 2);
        assert_eq!(first["agenc"], 2);
        assert_eq!(first["carolin"], 1);
        assert_eq!(found[0].length, 7);
        let second: Vec<_> = found[1].counts.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(second, ["cafe", "deja", "vu"]);
        assert_eq!(lexemes_of_term("Researching").unwrap(), ["research"]);
        assert!(lexemes_of_term("…").unwrap().is_empty());
    }

    #[test]
    fn the_excerpt_brackets_stemmed_matches() {
        let text = "We looked at adoption agencies in May.";
        let shown = excerpt_for(text, "\"agency\" OR \"june\"").unwrap();
        assert_eq!(shown, "We looked at adoption [agencies] in May.");
        assert_eq!(excerpt_for(text, "\"zebra\"").unwrap(), "");
    }
}
