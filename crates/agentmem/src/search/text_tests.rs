use super::*;

/// Words of a toy vocabulary, chosen by a small linear congruence.
fn words(seed: u64, n: usize) -> Vec<String> {
    const VOCABULARY: [&str; 12] = [
        "parser", "cargo", "build", "index", "test", "token", "merge", "query", "cache", "error",
        "thread", "budget",
    ];
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            VOCABULARY[(x >> 33) as usize % VOCABULARY.len()].to_owned()
        })
        .collect()
}

#[test]
fn a_search_split_over_two_threads_finds_what_one_thread_finds() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::open(dir.path()).unwrap();
    let (mut docs, mut tokens) = (0u64, 0u64);
    for generation in 0..4 {
        let mut writer = text.writer().unwrap();
        for i in 0..500 {
            let doc = generation * 500 + i + 1;
            let words = words(doc as u64, 3 + (doc as usize % 17));
            tokens += words.len() as u64;
            docs += 1;
            writer
                .add(TextDoc {
                    doc,
                    kind: DocKind::Event,
                    session: 1 + doc as u64 % 3,
                    role: SearchRole::User,
                    ts: doc as f64,
                    words,
                })
                .unwrap();
        }
        writer.commit(&format!("g{generation}")).unwrap();
    }
    let segments = text.view().searcher.segment_readers().len();
    assert!(segments >= 2, "{segments} segments");
    let totals = Totals { docs, tokens };
    let within = Within::default();
    let mut compared = 0;
    for seed in 0..40 {
        let asked: Vec<Vec<String>> = words(1_000 + seed, 1 + seed as usize % 4)
            .into_iter()
            .map(|w| vec![w])
            .collect();
        for join in [Join::All, Join::Any] {
            for limit in [1, 10, 300] {
                let query = (Table::Events, asked.as_slice(), join, &within);
                let alone = text.top_split(query, limit, totals, u64::MAX).unwrap();
                let split = text.top_split(query, limit, totals, 0).unwrap();
                assert_eq!(split, alone, "{asked:?} {join:?} {limit}");
                compared += usize::from(!alone.is_empty());
            }
        }
    }
    assert!(compared > 100, "compared {compared}");
}

/// A word of a vocabulary of 40 whose first words are far more common
/// than its last (about as `1 / rank`), as a history's words are.
fn skewed_word(x: &mut u64) -> String {
    *x = x
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let draw = ((*x >> 33) % 1_000) as f64 / 1_000.0;
    let rank = (40f64.powf(draw) as usize).min(40);
    format!("w{rank}")
}

/// Documents of 1 to 400 words; some repeat one word many times.
fn skewed_documents(count: u64) -> Vec<TextDoc> {
    let mut x = 7;
    (1..=count)
        .map(|doc| {
            let length = [1, 3, 8, 20, 60, 400][(doc % 6) as usize] + (doc % 5) as usize;
            let mut words: Vec<String> = (0..length).map(|_| skewed_word(&mut x)).collect();
            if doc % 11 == 0 {
                let repeated = skewed_word(&mut x);
                words.extend(std::iter::repeat_n(repeated, 1 + (doc % 7) as usize));
            }
            TextDoc {
                doc: doc as i64,
                kind: DocKind::Event,
                session: 1 + doc % 3,
                role: SearchRole::User,
                ts: doc as f64,
                words,
            }
        })
        .collect()
}

/// A document's words and how often each occurs.
type Counted<'a> = (&'a TextDoc, std::collections::HashMap<&'a str, u32>);

fn counted<'a>(docs: impl Iterator<Item = &'a TextDoc>) -> Vec<Counted<'a>> {
    docs.map(|doc| {
        let mut counts = std::collections::HashMap::new();
        for word in &doc.words {
            *counts.entry(word.as_str()).or_insert(0) += 1;
        }
        (doc, counts)
    })
    .collect()
}

/// The best `limit` of `docs` for `asked`, every document scored.
fn scored_one_by_one(
    docs: &[Counted<'_>],
    asked: &[Vec<String>],
    join: Join,
    limit: usize,
) -> Vec<(i64, f64)> {
    let tf = |counts: &std::collections::HashMap<&str, u32>| -> Vec<u32> {
        asked
            .iter()
            .map(|word| counts.get(word[0].as_str()).copied().unwrap_or(0))
            .collect()
    };
    let holding = |word: &str| docs.iter().filter(|(_, c)| c.contains_key(word)).count();
    let tokens: usize = docs.iter().map(|(d, _)| d.words.len()).sum();
    let scorer = Bm25 {
        idf: asked
            .iter()
            .map(|word| fts5_idf(docs.len() as u64, holding(&word[0]) as u64))
            .collect(),
        avgdl: tokens as f64 / docs.len() as f64,
    };
    let mut scored: Vec<(i64, f64)> = docs
        .iter()
        .filter_map(|(doc, counts)| {
            let tf = tf(counts);
            let matches = match join {
                Join::All => tf.iter().all(|&t| t > 0),
                Join::Any => tf.iter().any(|&t| t > 0),
            };
            matches.then(|| (doc.doc, scorer.score(&tf, doc.words.len() as u64)))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

#[test]
fn the_pruned_search_finds_what_scoring_every_document_finds() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::open(dir.path()).unwrap();
    let docs = skewed_documents(9_000);
    for (generation, part) in docs.chunks(3_000).enumerate() {
        let mut writer = text.writer().unwrap();
        for doc in part {
            writer.add(doc.clone()).unwrap();
        }
        writer.commit(&format!("g{generation}")).unwrap();
    }
    // Removed documents stay in their segments, marked removed.
    let mut writer = text.writer().unwrap();
    writer.remove_session(2);
    writer.commit("removed").unwrap();
    let alive = counted(docs.iter().filter(|d| d.session != 2));
    let totals = Totals {
        docs: alive.len() as u64,
        tokens: alive.iter().map(|(d, _)| d.words.len() as u64).sum(),
    };
    let within = Within::default();
    let mut x = 99;
    let mut compared = 0;
    for query in 0..60 {
        let asked: Vec<Vec<String>> = (0..1 + query % 4)
            .map(|_| vec![skewed_word(&mut x)])
            .collect();
        for join in [Join::All, Join::Any] {
            for limit in [1, 10, 100] {
                let expected = scored_one_by_one(&alive, &asked, join, limit);
                let query = (Table::Events, asked.as_slice(), join, &within);
                let alone = text.top_split(query, limit, totals, u64::MAX).unwrap();
                assert_eq!(alone, expected, "{asked:?} {join:?} {limit}");
                let split = text.top_split(query, limit, totals, 0).unwrap();
                assert_eq!(split, expected, "split: {asked:?} {join:?} {limit}");
                compared += usize::from(!expected.is_empty());
            }
        }
    }
    assert!(compared > 300, "compared {compared}");
}

#[test]
fn one_segment_is_searched_in_two_halves() {
    let dir = tempfile::tempdir().unwrap();
    let text = TextIndex::open(dir.path()).unwrap();
    let docs = skewed_documents(1_000);
    let mut writer = text.writer().unwrap();
    for doc in &docs {
        writer.add(doc.clone()).unwrap();
    }
    writer.commit("g0").unwrap();
    let searcher = text.view().searcher.clone();
    let [segment] = searcher.segment_readers() else {
        panic!("{} segments", searcher.segment_readers().len());
    };
    let (first, second) = halves_by_documents(searcher.segment_readers(), 0);
    let runs = |parts: &[Part<'_>]| -> Vec<(DocId, DocId)> {
        parts.iter().map(|p| (p.first, p.end)).collect()
    };
    assert_eq!(runs(&first), [(0, 500)]);
    assert_eq!(runs(&second), [(500, segment.max_doc())]);
    let all = counted(docs.iter());
    let totals = Totals {
        docs: all.len() as u64,
        tokens: all.iter().map(|(d, _)| d.words.len() as u64).sum(),
    };
    let asked = [vec!["w1".to_owned()], vec!["w9".to_owned()]];
    for join in [Join::All, Join::Any] {
        let query = (Table::Events, asked.as_slice(), join, &Within::default());
        let split = text.top_split(query, 20, totals, 0).unwrap();
        assert_eq!(split, scored_one_by_one(&all, &asked, join, 20), "{join:?}");
    }
}
