//! Vectors of the index's documents, so that recall can score similarity in
//! meaning beside BM25: "What activities does Melanie partake in?" shares
//! no word with "I'm off to go swimming with the kids".
//!
//! An [`Embedder`] turns texts into vectors. Documents are embedded in the
//! background as they are indexed (the store's embedding thread), not on
//! ingest's path: ingest stays free of the model's cost and failures, and
//! recall never waits for them. Each document is embedded once per model;
//! its vector is stored beside it in the index and is deleted with it.
//!
//! Nearness is exact until a model has tens of thousands of vectors: the
//! query's vector is compared with every vector in scope, stored one signed
//! byte a dimension with the document's kind and session beside it, so the
//! scan reads nothing else (about 0.3 µs a document: 32 ms over 100,000).
//! Past [`super::graph::GraphPolicy::from_vectors`], a nearest-neighbour
//! graph built in the background picks the documents to score
//! ([`super::graph`]).

use rusqlite::{params, OptionalExtension};

use super::index::{Candidate, DocKind, HistoryIndex};
use crate::base::error::{Error, Result};
use crate::redact::{redact, RedactionPolicy};

/// Texts sent to the embedder in one call.
pub const EMBED_BATCH_TEXTS: usize = 64;
/// The most of a document's text that is embedded: embedding models read a
/// few hundred tokens and ignore the rest.
pub(crate) const MAX_EMBEDDED_BYTES: usize = 2048;

/// Turns texts into vectors, so similarity in meaning can join recall's
/// score. Recall works without one, on BM25 alone.
///
/// ```
/// use agentmem::Embedder;
/// /// Vectors of letter counts: a toy, but a real embedder in shape.
/// struct Letters;
/// impl Embedder for Letters {
///     fn model(&self) -> &str { "letters" }
///     fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
///         Ok(texts.iter().map(|t| {
///             let mut v = vec![0.0; 26];
///             for b in t.bytes().filter(u8::is_ascii_lowercase) { v[usize::from(b - b'a')] += 1.0; }
///             v
///         }).collect())
///     }
/// }
/// assert_eq!(Letters.embed(&["ab"]).unwrap()[0][..3], [1.0, 1.0, 0.0]);
/// ```
pub trait Embedder {
    /// The model's name: vectors of one model are never compared with
    /// another's, and changing it embeds the documents again.
    fn model(&self) -> &str;
    /// One vector per text, in order, all of one length.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// An embedder a store and its clones share.
#[derive(Clone)]
pub struct SharedEmbedder(pub std::sync::Arc<dyn Embedder + Send + Sync>);

impl std::fmt::Debug for SharedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedEmbedder")
            .field(&self.0.model())
            .finish()
    }
}

/// How similar in meaning each document in scope is to one query (cosine).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Similarities {
    /// In row order (the scan's), so a document is found by bisection.
    by_doc: Vec<(i64, f64)>,
}

impl Similarities {
    /// The similarities of the documents numbered as given, in any order.
    pub fn from_scores(mut by_doc: Vec<(i64, f64)>) -> Similarities {
        by_doc.sort_by_key(|(doc, _)| *doc);
        Similarities { by_doc }
    }

    /// The similarity of the document in row `doc`, if it has a vector.
    pub fn of(&self, doc: i64) -> Option<f64> {
        self.by_doc
            .binary_search_by_key(&doc, |(d, _)| *d)
            .ok()
            .map(|i| self.by_doc[i].1)
    }

    /// The `n` most similar documents, most similar first.
    pub fn best(&self, n: usize) -> Vec<i64> {
        let mut ranked = self.by_doc.clone();
        let most_similar_first =
            |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if n < ranked.len() {
            ranked.select_nth_unstable_by(n, most_similar_first);
            ranked.truncate(n);
        }
        ranked.sort_by(most_similar_first);
        ranked.into_iter().map(|(doc, _)| doc).collect()
    }
}

impl HistoryIndex {
    /// Embeds every document that has no vector of `embedder`'s model yet,
    /// in the order they were indexed, a batch per transaction: a failing
    /// embedder loses no finished batch, and what has vectors is always
    /// the documents up to one row, which is all that needs remembering.
    /// Returns how many it embedded.
    pub fn embed_missing(&self, embedder: &dyn Embedder) -> Result<usize> {
        let mut embedded = 0;
        loop {
            match self.embed_next_batch(embedder)? {
                0 => return Ok(embedded),
                batch => embedded += batch,
            }
        }
    }

    /// Embeds the next batch (up to [`EMBED_BATCH_TEXTS`]) of the documents
    /// without a vector of `embedder`'s model, in one transaction; returns
    /// how many it embedded (0: none was waiting).
    pub fn embed_next_batch(&self, embedder: &dyn Embedder) -> Result<usize> {
        let model = embedder.model();
        let stamp = format!("vectors/{model}");
        let through = self.embedded_through(&stamp)?;
        let batch = self.documents_after(through)?;
        let Some(last) = batch.last().map(|d| d.id) else {
            return Ok(0);
        };
        let texts: Vec<&str> = batch.iter().map(|d| d.text.as_str()).collect();
        let vectors = embed_checked(embedder, &texts)?;
        self.ensure_dimensions(model, vectors[0].len())?;
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| self.error(e))?;
        for (doc, vector) in batch.iter().zip(&vectors) {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO vectors(id, model, kind, session, vector)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    doc.id,
                    model,
                    doc.kind,
                    doc.session,
                    to_bytes(vector)
                ])
            })
            .map_err(|e| self.error(e))?;
        }
        // Never back: another process may have embedded further meanwhile.
        tx.execute(
            "INSERT INTO stamps(name, stamp) VALUES (?1, ?2)
             ON CONFLICT(name) DO UPDATE SET stamp = excluded.stamp
             WHERE CAST(excluded.stamp AS INTEGER) > CAST(stamps.stamp AS INTEGER)",
            params![stamp, last.to_string()],
        )
        .map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(batch.len())
    }

    /// How similar `query` (a vector of `model`) is to every document of
    /// `kinds` outside `exclude_session` that has a vector of that model.
    pub(crate) fn similarities(
        &self,
        model: &str,
        query: &[f32],
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<Similarities> {
        let by_doc = self.similarities_after(model, &unit(query), 0, (kinds, exclude_session))?;
        Ok(Similarities { by_doc })
    }

    /// How similar `query` (at unit length) is to each vector of `model`
    /// in scope stored after document `through`, in document order.
    pub(super) fn similarities_after(
        &self,
        model: &str,
        query: &[f32],
        through: i64,
        (kinds, exclude_session): (&[DocKind], Option<&str>),
    ) -> Result<Vec<(i64, f64)>> {
        let mut statement = self
            .conn
            .prepare_cached(
                // The scope is read from the vectors' own columns: a look
                // into `docs` for each would read pages of text it never uses.
                "SELECT id, vector FROM vectors
                 WHERE id > ?1 AND model = ?2 AND instr(?3, ',' || kind || ',') > 0
                   AND (?4 IS NULL OR session <> ?4)
                 ORDER BY id",
            )
            .map_err(|e| self.error(e))?;
        let mut rows = statement
            .query(params![through, model, kind_list(kinds), exclude_session])
            .map_err(|e| self.error(e))?;
        let mut by_doc = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            by_doc.push(self.similarity_of_row(row, query, 1)?);
        }
        Ok(by_doc)
    }

    /// A row's document (its first column) and the similarity of `query`
    /// to its stored vector (column `vector_at`).
    pub(super) fn similarity_of_row(
        &self,
        row: &rusqlite::Row<'_>,
        query: &[f32],
        vector_at: usize,
    ) -> Result<(i64, f64)> {
        let doc: i64 = row.get(0).map_err(|e| self.error(e))?;
        let bytes = row
            .get_ref(vector_at)
            .and_then(|v| Ok(v.as_blob()?))
            .map_err(|e| self.error(e))?;
        Ok((doc, dot_with_stored(query, bytes)))
    }

    /// The documents in rows `docs`, as candidates without a BM25 score
    /// (a row deleted since, by another process, is left out).
    pub(crate) fn candidates_by_id(&self, docs: &[i64]) -> Result<Vec<Candidate>> {
        let unscored: Vec<(i64, f64)> = docs.iter().map(|doc| (*doc, 0.0)).collect();
        self.candidates_of(&unscored)
    }

    /// Fails when vectors of `model` are stored with another length than
    /// `dimensions`: another model was given the same name, and its vectors
    /// and these are not comparable.
    pub(crate) fn ensure_dimensions(&self, model: &str, dimensions: usize) -> Result<()> {
        let stored: Option<i64> = self
            .conn
            .prepare_cached("SELECT length(vector) FROM vectors WHERE model = ?1 LIMIT 1")
            .and_then(|mut s| s.query_row([model], |row| row.get(0)).optional())
            .map_err(|e| self.error(e))?;
        check_dimensions(model, dimensions, stored.map(|n| n as usize))
    }

    /// How many documents have no vector of `model` yet.
    pub fn unembedded_documents(&self, model: &str) -> Result<u64> {
        let through = self.embedded_through(&format!("vectors/{model}"))?;
        self.conn
            .prepare_cached("SELECT count(*) FROM docs WHERE id > ?1")
            .and_then(|mut s| s.query_row([through], |row| row.get::<_, i64>(0)))
            .map(|count| count as u64)
            .map_err(|e| self.error(e))
    }

    /// How many documents of `kinds` outside `exclude_session` have no
    /// vector of `model` yet: those a recall in that scope ranks by their
    /// words alone.
    pub(crate) fn unembedded_in_scope(
        &self,
        model: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<u64> {
        let through = self.embedded_through(&format!("vectors/{model}"))?;
        self.conn
            .prepare_cached(
                "SELECT count(*) FROM docs
                 WHERE id > ?1 AND instr(?2, ',' || kind || ',') > 0
                   AND (?3 IS NULL OR session <> ?3)",
            )
            .and_then(|mut s| {
                s.query_row(params![through, kind_list(kinds), exclude_session], |row| {
                    row.get::<_, i64>(0)
                })
            })
            .map(|count| count as u64)
            .map_err(|e| self.error(e))
    }

    /// The last row embedded with the model of `stamp` (0: none).
    fn embedded_through(&self, stamp: &str) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT stamp FROM stamps WHERE name = ?1")
            .and_then(|mut s| {
                s.query_row([stamp], |row| row.get::<_, String>(0))
                    .optional()
            })
            .map(|found| found.and_then(|s| s.parse().ok()).unwrap_or(0))
            .map_err(|e| self.error(e))
    }

    /// The next batch of documents after row `through`.
    fn documents_after(&self, through: i64) -> Result<Vec<Unembedded>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, kind, session, speaker, text FROM docs WHERE id > ?1 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![through, EMBED_BATCH_TEXTS as i64], |row| {
                let speaker: String = row.get(3)?;
                let text: String = row.get(4)?;
                Ok(Unembedded {
                    id: row.get(0)?,
                    kind: row.get(1)?,
                    session: row.get(2)?,
                    text: embedded_text(&speaker, &text),
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }
}

/// A document waiting for its vector.
struct Unembedded {
    id: i64,
    kind: String,
    session: String,
    /// What is embedded of it.
    text: String,
}

/// Fails when `stored` vectors of `model` (their length, if any are) and
/// the `dimensions` it gives now differ: another model was given the same
/// name, and its vectors and these are not comparable.
pub fn check_dimensions(model: &str, dimensions: usize, stored: Option<usize>) -> Result<()> {
    match stored {
        Some(stored) if stored != dimensions => Err(Error::Embedder {
            model: model.to_owned(),
            message: format!(
                "it gives vectors of {dimensions} dimensions, but those stored under its name have {stored}: \
                 give a different model a name of its own (the embedder's model name)"
            ),
        }),
        Some(_) | None => Ok(()),
    }
}

/// Embeds `texts`, holding the embedder to one vector per text, all of one
/// non-zero length.
pub fn embed_checked(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let vectors = embedder.embed(texts)?;
    let fail = |message: String| Error::Embedder {
        model: embedder.model().to_owned(),
        message,
    };
    if vectors.len() != texts.len() {
        return Err(fail(format!(
            "returned {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    let length = vectors.first().map_or(0, Vec::len);
    if vectors.iter().any(|v| v.len() != length || v.is_empty()) {
        return Err(fail(
            "returned empty vectors or vectors of different lengths".into(),
        ));
    }
    Ok(vectors)
}

/// What of a document is embedded: who said it, then its text's start,
/// redacted. The embedder may be a remote API, and meaning needs no
/// credential, address or card number.
pub fn embedded_text(speaker: &str, text: &str) -> String {
    let mut end = text.len().min(MAX_EMBEDDED_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let (text, _) = redact(&text[..end], RedactionPolicy::default());
    match speaker {
        "" => text,
        speaker => format!("{speaker}: {text}"),
    }
}

fn kind_list(kinds: &[DocKind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    format!(",{},", names.join(","))
}

/// Vectors are stored at unit length, so a similarity is one dot product,
/// and as one signed byte a dimension (×127): a quarter of the bytes to
/// scan, for an error in the similarity of well under 0.01.
pub fn to_bytes(vector: &[f32]) -> Vec<u8> {
    unit(vector)
        .iter()
        .map(|x| (x * QUANTUM).round().clamp(-QUANTUM, QUANTUM) as i8 as u8)
        .collect()
}

/// A stored dimension's value at 1.0.
const QUANTUM: f32 = 127.0;

/// `vector` scaled to length 1 (a zero vector as it is).
pub fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        return vector.to_vec();
    }
    vector.iter().map(|x| x / norm).collect()
}

/// The dot product of `query` with a stored vector (0 when their lengths
/// differ: a vector of another shape is not comparable).
pub fn dot_with_stored(query: &[f32], stored: &[u8]) -> f64 {
    if stored.len() != query.len() {
        return 0.0;
    }
    // Eight running sums, so the compiler can keep them in one vector register.
    let mut lanes = [0f32; 8];
    let (bytes, rest_bytes) = stored.split_at(stored.len() / 8 * 8);
    let (values, rest_values) = query.split_at(bytes.len());
    for (b, q) in bytes.chunks_exact(8).zip(values.chunks_exact(8)) {
        for lane in 0..8 {
            lanes[lane] += f32::from(b[lane] as i8) * q[lane];
        }
    }
    let rest: f32 = rest_bytes
        .iter()
        .zip(rest_values)
        .map(|(b, q)| f32::from(*b as i8) * q)
        .sum();
    f64::from((lanes.iter().sum::<f32>() + rest) / QUANTUM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::event::Event;

    struct Lengths;
    impl Embedder for Lengths {
        fn model(&self) -> &str {
            "lengths"
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    fn stored_vectors(index: &HistoryIndex) -> i64 {
        index
            .conn
            .query_row("SELECT count(*) FROM vectors", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn vectors_are_stored_once_compared_within_scope_and_go_with_their_documents() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = HistoryIndex::open(dir.path()).unwrap();
        let user = |id: &str, text: &str| {
            let mut event = Event::user(text);
            event.id = id.to_owned();
            event
        };
        index
            .add_events("a", 0, &[user("e1", "one"), user("e2", "two")])
            .unwrap();
        index.add_events("b", 0, &[user("e1", "three")]).unwrap();
        let events = [DocKind::Event];
        assert_eq!(index.unembedded_documents("lengths").unwrap(), 3);
        assert_eq!(index.embed_missing(&Lengths).unwrap(), 3);
        assert_eq!(index.unembedded_documents("lengths").unwrap(), 0);
        assert_eq!(index.embed_missing(&Lengths).unwrap(), 0);
        index.add_events("b", 1, &[user("e2", "four")]).unwrap();
        assert_eq!(
            index.embed_missing(&Lengths).unwrap(),
            1,
            "the new one only"
        );

        let similar = index
            .similarities("lengths", &[5.0, 1.0], &events, Some("a"))
            .unwrap();
        let best = similar.best(10);
        assert_eq!(best.len(), 2, "session a left out");
        let b = index.candidates_by_id(&best).unwrap();
        assert_eq!((b[0].text.as_str(), b[1].text.as_str()), ("three", "four"));
        assert!((similar.of(best[0]).unwrap() - 1.0).abs() < 0.01);
        assert!(index
            .similarities("another-model", &[5.0, 1.0], &events, None)
            .unwrap()
            .best(10)
            .is_empty());

        index.remove_session("a").unwrap();
        assert_eq!(stored_vectors(&index), 2);
        assert!(index.candidates_by_id(&[9_999]).unwrap().is_empty());
    }

    #[test]
    fn embedded_text_names_the_speaker_is_redacted_and_cut_on_a_char_boundary() {
        assert_eq!(embedded_text("Ann", "hi"), "Ann: hi");
        assert_eq!(
            embedded_text(
                "",
                "key sk-ant-api03-abcdefghijklmnopqrstu, mail jo@example.com"
            ),
            "key [REDACTED:secret], mail [REDACTED:email]"
        );
        let long = "é".repeat(MAX_EMBEDDED_BYTES);
        let cut = embedded_text("", &long);
        assert!(cut.len() <= MAX_EMBEDDED_BYTES && cut.len() >= MAX_EMBEDDED_BYTES - 1);
    }
}
