//! The index's words, for a backend that ranks them itself: what the files
//! index's FTS5 tokenizer (`porter unicode61 remove_diacritics 2`) makes of
//! a document or a query term, and the excerpt FTS5 would highlight.
//!
//! The words come from SQLite's own tokenizer, run on an in-memory FTS5
//! table (one per thread), not from a second implementation: a database
//! backend that stores these lexemes matches and counts exactly the words
//! the files index does, so BM25 over them ranks alike.

use std::cell::RefCell;
use std::collections::BTreeMap;

use rusqlite::{params, Connection};

use super::excerpt::{excerpt, MATCH_CLOSE, MATCH_OPEN};
use crate::base::error::{Error, Result};

/// One document's words: each lexeme with how often it occurs, and how
/// many tokens the document holds (its length for BM25).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lexemes {
    /// Each distinct lexeme and its count, in byte order.
    pub counts: Vec<(String, u32)>,
    /// Tokens in the document, repeats included.
    pub length: u32,
}

const SCRATCH_SCHEMA: &str = "
CREATE VIRTUAL TABLE scratch USING fts5(
    speaker, text, tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE scratch_words USING fts5vocab(scratch, 'instance');
";

thread_local! {
    static SCRATCH: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// Runs `step` on this thread's scratch table, made on first use and left
/// empty after each use.
fn with_scratch<T>(step: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
    SCRATCH.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let conn = Connection::open_in_memory().map_err(scratch_error)?;
            conn.execute_batch(SCRATCH_SCHEMA).map_err(scratch_error)?;
            *slot = Some(conn);
        }
        let conn = slot.as_ref().expect("made above");
        let done = step(conn);
        let emptied = conn.execute("DELETE FROM scratch", []);
        let value = done.map_err(scratch_error)?;
        emptied.map_err(scratch_error)?;
        Ok(value)
    })
}

/// The lexemes of each document, given as `(speaker, text)` as the files
/// index stores them (speaker and text both count toward the length).
pub fn lexemes_of(documents: &[(&str, &str)]) -> Result<Vec<Lexemes>> {
    with_scratch(|conn| {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT INTO scratch(rowid, speaker, text) VALUES (?1, ?2, ?3)")?;
            for (row, (speaker, text)) in documents.iter().enumerate() {
                insert.execute(params![row as i64, speaker, text])?;
            }
        }
        let mut found: Vec<BTreeMap<String, u32>> = vec![BTreeMap::new(); documents.len()];
        let mut lengths = vec![0u32; documents.len()];
        {
            let mut words = tx.prepare_cached(
                "SELECT doc, term, count(*) FROM scratch_words GROUP BY doc, term",
            )?;
            let mut rows = words.query([])?;
            while let Some(row) = rows.next()? {
                let doc = row.get::<_, i64>(0)? as usize;
                let count = row.get::<_, i64>(2)? as u32;
                found[doc].insert(row.get(1)?, count);
                lengths[doc] += count;
            }
        }
        tx.commit()?;
        Ok(found
            .into_iter()
            .zip(lengths)
            .map(|(counts, length)| Lexemes {
                counts: counts.into_iter().collect(),
                length,
            })
            .collect())
    })
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
/// query, as [`super::query::any_of`] makes): the matched words in
/// brackets, cut to the part that holds most of them.
pub fn excerpt_for(text: &str, expression: &str) -> Result<String> {
    let highlighted: Option<String> = with_scratch(|conn| {
        conn.execute(
            "INSERT INTO scratch(rowid, speaker, text) VALUES (1, '', ?1)",
            [text],
        )?;
        let mut statement = conn.prepare_cached(
            "SELECT highlight(scratch, 1, ?2, ?3) FROM scratch WHERE scratch MATCH ?1",
        )?;
        let mut rows = statement.query(params![
            expression,
            MATCH_OPEN.to_string(),
            MATCH_CLOSE.to_string()
        ])?;
        match rows.next()? {
            Some(row) => row.get(0).map(Some),
            None => Ok(None),
        }
    })?;
    Ok(excerpt(&highlighted.unwrap_or_default()))
}

fn scratch_error(error: rusqlite::Error) -> Error {
    Error::Index {
        path: ":memory:".into(),
        message: format!("the in-memory tokenizer failed: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
