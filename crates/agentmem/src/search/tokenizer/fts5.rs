//! SQLite's own FTS5 tokenizer, as the reference the Rust one is held to,
//! and the real texts it is compared on (the transcripts and benchmark
//! conversations of `../shared/eval-data`).

use std::path::Path;

use rusqlite::{params, Connection};

/// The table every comparison tokenizes with, as the files index's.
const SCHEMA: &str = "
CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE t_words USING fts5vocab(t, 'instance');
";

/// An in-memory table holding `texts`, one row each (rowid = index + 1).
pub(crate) fn table_of(texts: &[String]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO t(rowid, text) VALUES (?1, ?2)")
            .unwrap();
        for (i, text) in texts.iter().enumerate() {
            insert.execute(params![i as i64 + 1, text]).unwrap();
        }
    }
    tx.commit().unwrap();
    conn
}

/// The words FTS5 makes of each text, in order.
pub(crate) fn words_of(texts: &[String]) -> Vec<Vec<String>> {
    let conn = table_of(texts);
    let mut found = vec![Vec::new(); texts.len()];
    let mut statement = conn
        .prepare("SELECT doc, term FROM t_words ORDER BY doc, offset")
        .unwrap();
    let mut rows = statement.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let doc: i64 = row.get(0).unwrap();
        // A stem can end inside a character (the stemmer works on bytes):
        // read as the Rust tokenizer reads it, lossily.
        let term = row.get_ref(1).unwrap().as_bytes().unwrap();
        found[doc as usize - 1].push(String::from_utf8_lossy(term).into_owned());
    }
    found
}

/// Every distinct string of the transcripts, LoCoMo's conversations and
/// LongMemEval's (the first 20,000 of those).
pub(crate) fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval-data");
    let mut seen = std::collections::HashSet::new();
    let mut texts = Vec::new();
    let mut keep = |value: &serde_json::Value, cap: usize, texts: &mut Vec<String>| {
        let mut kept = 0;
        strings(value, &mut |text| {
            if kept < cap && seen.insert(text.to_owned()) {
                texts.push(text.to_owned());
                kept += 1;
            }
        });
    };
    let mut files = Vec::new();
    collect_files(&root.join("trajectories"), &mut files);
    files.sort();
    for file in files {
        let raw = std::fs::read_to_string(&file).unwrap_or_default();
        let whole: Option<serde_json::Value> = serde_json::from_str(&raw).ok();
        let values: Vec<serde_json::Value> = match whole {
            Some(value) => vec![value],
            None => raw
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        for value in values {
            keep(&value, usize::MAX, &mut texts);
        }
    }
    for (file, cap) in [
        ("locomo/locomo-dev.json", usize::MAX),
        ("longmemeval/longmemeval-s-dev.json", 20_000),
    ] {
        let raw =
            std::fs::read_to_string(root.join(file)).expect("the eval data beside the repository");
        keep(&serde_json::from_str(&raw).unwrap(), cap, &mut texts);
    }
    texts
}

fn collect_files(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the eval data beside the repository") {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(&path, into);
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl" || e == "traj")
        {
            into.push(path);
        }
    }
}

fn strings(value: &serde_json::Value, each: &mut impl FnMut(&str)) {
    match value {
        serde_json::Value::String(text) => each(text),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, each)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, each)),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}
