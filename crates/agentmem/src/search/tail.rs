//! The documents the database holds past the text index's newest: kept in
//! memory, in a small inverted index of their own, and searched beside the
//! text index's segments so that a query sees every document the moment its
//! transaction commits, while the text index takes them in batches (see
//! [`super::text`]'s "Staying in step").

use std::collections::HashMap;

use super::text::{kind_code, role_code, Bm25, Join, Table, TextDoc, Top, Within};

/// The documents newer than the text index's newest, with their words.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    /// The text index's newest document: the tail holds those after it.
    after: i64,
    /// The newest document read into the tail (or `after` when none).
    newest: i64,
    docs: Vec<TailDoc>,
    /// Each table's lexemes: the documents (by place in `docs`) holding
    /// them, with how often.
    events: HashMap<String, Vec<(u32, u32)>>,
    memories: HashMap<String, Vec<(u32, u32)>>,
}

/// What a query needs of a tail document besides its words.
#[derive(Debug, Clone, Copy)]
struct TailDoc {
    doc: i64,
    kind: u64,
    session: u64,
    role: u64,
    ts: f64,
    length: u64,
}

impl Tail {
    /// An empty tail after the text index's newest document `after`.
    pub(crate) fn after(after: i64) -> Tail {
        Tail {
            after,
            newest: after,
            ..Tail::default()
        }
    }

    /// The newest document the tail has read (or the text index's newest).
    pub(crate) fn newest(&self) -> i64 {
        self.newest
    }

    /// The text index's newest document.
    pub(crate) fn newest_indexed(&self) -> i64 {
        self.after
    }

    /// How many documents the tail holds.
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// Takes `doc` if it is newer than every document held.
    pub(crate) fn push(&mut self, doc: TextDoc) {
        if doc.doc <= self.newest {
            return;
        }
        let slot = self.docs.len() as u32;
        let table = Table::of(doc.kind);
        self.docs.push(TailDoc {
            doc: doc.doc,
            kind: kind_code(doc.kind),
            session: doc.session,
            role: role_code(doc.role),
            ts: doc.ts,
            length: doc.words.len() as u64,
        });
        self.newest = self.newest.max(doc.doc);
        let mut counts: HashMap<String, u32> = HashMap::new();
        for word in doc.words {
            *counts.entry(word).or_default() += 1;
        }
        let words = self.words_mut(table);
        for (word, count) in counts {
            words.entry(word).or_default().push((slot, count));
        }
    }

    fn words(&self, table: Table) -> &HashMap<String, Vec<(u32, u32)>> {
        match table {
            Table::Events => &self.events,
            Table::Memories => &self.memories,
        }
    }

    fn words_mut(&mut self, table: Table) -> &mut HashMap<String, Vec<(u32, u32)>> {
        match table {
            Table::Events => &mut self.events,
            Table::Memories => &mut self.memories,
        }
    }

    /// The documents of `table` holding every lexeme of `word`, each with
    /// the word's count (its rarest lexeme's), in document order.
    fn holding(&self, table: Table, word: &[String]) -> Vec<(u32, u32)> {
        let words = self.words(table);
        let mut lists: Vec<&Vec<(u32, u32)>> = Vec::with_capacity(word.len());
        for lexeme in word {
            match words.get(lexeme) {
                Some(list) => lists.push(list),
                None => return Vec::new(),
            }
        }
        let Some((first, rest)) = lists.split_first() else {
            return Vec::new();
        };
        first
            .iter()
            .filter_map(|&(slot, tf)| {
                rest.iter()
                    .try_fold(tf, |least, list| {
                        list.binary_search_by_key(&slot, |&(s, _)| s)
                            .ok()
                            .map(|at| least.min(list[at].1))
                    })
                    .map(|tf| (slot, tf))
            })
            .collect()
    }

    /// How many documents of `table` hold `word` (every lexeme of it).
    pub(crate) fn documents_with(&self, table: Table, word: &[String]) -> u64 {
        self.holding(table, word).len() as u64
    }

    /// Offers `top` the documents of `table` within `within` matching
    /// `words` as `join` says, scored by `scorer`.
    pub(crate) fn offer(
        &self,
        table: Table,
        words: &[Vec<String>],
        join: Join,
        within: &Within,
        scorer: &Bm25,
        top: &mut Top<'_>,
    ) {
        let mut counts: HashMap<u32, Vec<u32>> = HashMap::new();
        for (i, word) in words.iter().enumerate() {
            for (slot, tf) in self.holding(table, word) {
                counts.entry(slot).or_insert_with(|| vec![0; words.len()])[i] = tf;
            }
        }
        for (slot, tf) in counts {
            let doc = self.docs[slot as usize];
            let matches = match join {
                Join::All => tf.iter().all(|&t| t > 0),
                Join::Any => true,
            };
            if matches && within.admits(|| doc.kind, || doc.session, || doc.role, || doc.ts) {
                top.offer(scorer.score(&tf, doc.length), doc.doc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::index::DocKind;
    use crate::search::SearchRole;

    fn doc(id: i64, text: &str) -> TextDoc {
        TextDoc {
            doc: id,
            kind: DocKind::Event,
            session: 1,
            role: SearchRole::User,
            ts: id as f64,
            words: TextDoc::words_of("", text),
        }
    }

    #[test]
    fn a_word_of_two_lexemes_counts_documents_holding_both() {
        let mut tail = Tail::after(10);
        tail.push(doc(11, "alpha beta beta"));
        tail.push(doc(12, "alpha gamma"));
        tail.push(doc(13, "beta"));
        let both = ["alpha".to_owned(), "beta".to_owned()];
        assert_eq!(tail.documents_with(Table::Events, &both), 1);
        assert_eq!(tail.holding(Table::Events, &both), vec![(0, 1)]);
        assert_eq!(tail.documents_with(Table::Memories, &both[..1]), 0);
        assert_eq!(
            (tail.newest_indexed(), tail.newest(), tail.len()),
            (10, 13, 3)
        );
    }
}
