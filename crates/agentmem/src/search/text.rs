//! The text side of the files index: a tantivy index of every document's
//! words, beside the SQLite database that holds the documents themselves,
//! and the top-k BM25 query over it.
//!
//! # Words
//!
//! Documents are split by [`super::tokenizer`] (FTS5's `porter unicode61
//! remove_diacritics 2`, reproduced exactly) and handed to tantivy already
//! split, each document's length (its tokens, speaker included) kept beside
//! them: the terms, their counts and the lengths are FTS5's.
//!
//! # Ranking
//!
//! Scores are FTS5's `bm25()` to the last digit (`k1 = 1.2`, `b = 0.75`,
//! IDF `ln((N - n + 0.5) / (n + 0.5))` raised to `1e-6` when not positive,
//! the exact document length over the table's average, each query word's
//! share summed in the query's order), computed here from the postings,
//! not by tantivy's own BM25 (another IDF, lengths rounded to a byte).
//! The best `k` come out of a MaxScore traversal: once `k` documents are
//! held, the words whose bound cannot lift a document past the `k`-th are
//! only looked up for documents the other words found.
//!
//! A query word the tokenizer splits in two (rare: a word of a script whose
//! marks FTS5 treats as separators) matches documents holding both halves,
//! anywhere (FTS5 wants them adjacent), counted by the rarer half.
//!
//! # Staying in step with the database
//!
//! The database holds every document; the index takes them in batches,
//! oldest first: a batch adds every document after the index's newest, so
//! the index always holds a prefix of them (document numbers are never used
//! twice). Queries read the rest, the tail, from the database into memory
//! ([`super::tail`]) and search it beside the index, so a document is found
//! as soon as its transaction commits, and adding one costs the database's
//! write alone.
//!
//! Removals are written in the database's transaction: the index commits
//! them first, with the batch the tail holds and the database's new
//! generation as the commit's payload, and then the database. An index
//! whose payload is not the database's generation (a crash between the two,
//! a lost or foreign folder) is rebuilt from the documents the database
//! holds.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tantivy::columnar::ColumnValues;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{PreTokenizedString, Token};
use tantivy::{
    DocId, DocSet, Index, IndexReader, IndexWriter, Searcher, TantivyDocument, Term, TERMINATED,
};

use super::index::DocKind;
use super::tail::Tail;
use super::tokenizer::for_each_word;
use super::SearchRole;
use crate::base::error::{Error, Result};

/// The text index's folder, in the agent's folder.
pub const TEXT_DIR: &str = "search.text";
/// Names the layout of the fields below; an index of another layout is made anew.
const LAYOUT: &str = "agentmem-text-1";
/// How much the writer may buffer before it writes a segment.
const WRITER_MEMORY: usize = 64 << 20;
/// How long a write waits for another writer to let go of the index.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// FTS5's `bm25()` constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Which FTS5 table of the former index a document belongs to: BM25's
/// statistics (document count, average length, document frequencies) are
/// each table's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// Events of sessions.
    Events,
    /// Facts and episodes.
    Memories,
}

impl Table {
    /// The table `kind` belongs to.
    pub(crate) fn of(kind: DocKind) -> Table {
        match kind {
            DocKind::Event => Table::Events,
            DocKind::Fact | DocKind::Episode => Table::Memories,
        }
    }

    /// The stored name, e.g. `events`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Memories => "memories",
        }
    }
}

/// How many documents a table holds and how many tokens they hold together.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Totals {
    pub docs: u64,
    pub tokens: u64,
}

/// How a query's words join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Join {
    /// Every word.
    All,
    /// Any word.
    Any,
}

/// Which documents a query may return.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Within {
    /// Only these kinds (by [`kind_code`]); every kind when empty.
    pub kinds: u8,
    /// Only this session's (by number).
    pub session: Option<u64>,
    /// None of this session's (by number).
    pub not_session: Option<u64>,
    /// Only this role's (by [`role_code`]).
    pub role: Option<u64>,
    /// Only at or after this time.
    pub since: Option<f64>,
    /// Only before this time.
    pub until: Option<f64>,
}

impl Within {
    /// Whether a document is within, its kind, session, role (their codes)
    /// and time read only as the bounds need them.
    pub(crate) fn admits(
        &self,
        kind: impl FnOnce() -> u64,
        session: impl Fn() -> u64,
        role: impl FnOnce() -> u64,
        ts: impl Fn() -> f64,
    ) -> bool {
        (self.kinds == 0 || self.kinds & (1 << kind()) != 0)
            && self.session.is_none_or(|s| session() == s)
            && self.not_session.is_none_or(|s| session() != s)
            && self.role.is_none_or(|r| role() == r)
            && self.since.is_none_or(|t| ts() >= t)
            && self.until.is_none_or(|t| ts() < t)
    }

    /// The same bounds without a kind bound that every document of
    /// `table` meets.
    fn within_table(&self, table: Table) -> Within {
        let every = match table {
            Table::Events => 1 << kind_code(DocKind::Event),
            Table::Memories => 1 << kind_code(DocKind::Fact) | 1 << kind_code(DocKind::Episode),
        };
        let mut within = *self;
        if within.kinds & every == every {
            within.kinds = 0;
        }
        within
    }
}

/// One document as the text index holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextDoc {
    /// Its row in the database.
    pub doc: i64,
    pub kind: DocKind,
    /// Its session's number.
    pub session: u64,
    pub role: SearchRole,
    pub ts: f64,
    /// Its words, speaker's first, repeats included.
    pub words: Vec<String>,
}

impl TextDoc {
    /// The words of a document of `speaker` saying `text`, as FTS5 splits them.
    pub(crate) fn words_of(speaker: &str, text: &str) -> Vec<String> {
        let mut words = Vec::new();
        for column in [speaker, text] {
            for_each_word(column, |word, _| words.push(word.to_owned()));
        }
        words
    }
}

/// A kind's bit in [`Within::kinds`] and its stored code.
pub(crate) fn kind_code(kind: DocKind) -> u64 {
    match kind {
        DocKind::Event => 0,
        DocKind::Fact => 1,
        DocKind::Episode => 2,
    }
}

/// A role's stored code.
pub(crate) fn role_code(role: SearchRole) -> u64 {
    match role {
        SearchRole::User => 0,
        SearchRole::Assistant => 1,
        SearchRole::Tool => 2,
        SearchRole::System => 3,
        SearchRole::Fact => 4,
        SearchRole::Episode => 5,
        SearchRole::State => 6,
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    doc: Field,
    kind: Field,
    session: Field,
    /// The session of an event (not of a memory): what removing a session removes.
    events_of: Field,
    role: Field,
    ts: Field,
    length: Field,
    events: Field,
    memories: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut builder = Schema::builder();
        let fast = || NumericOptions::default().set_fast();
        let words = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_index_option(IndexRecordOption::WithFreqs)
                .set_fieldnorms(false),
        );
        let fields = Fields {
            doc: builder.add_i64_field("doc", fast()),
            kind: builder.add_u64_field("kind", fast().set_indexed()),
            session: builder.add_u64_field("session", fast()),
            events_of: builder.add_u64_field("events_of", NumericOptions::default().set_indexed()),
            role: builder.add_u64_field("role", fast()),
            ts: builder.add_f64_field("ts", fast()),
            length: builder.add_u64_field("length", fast()),
            events: builder.add_text_field("events", words.clone()),
            memories: builder.add_text_field("memories", words),
        };
        (builder.build(), fields)
    }

    fn words(&self, table: Table) -> Field {
        match table {
            Table::Events => self.events,
            Table::Memories => self.memories,
        }
    }
}

/// An open text index.
pub(crate) struct TextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    path: PathBuf,
    view: Mutex<View>,
}

/// What queries read: the reader's segments as last loaded, and the
/// database's documents after the newest of them.
struct View {
    /// The database's generation when the reader was last loaded.
    generation: Option<String>,
    searcher: Searcher,
    tail: Tail,
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TextIndex {
    /// Opens the index in `agent_dir`, making it (empty) when there is none
    /// or it has another layout.
    pub(crate) fn open(agent_dir: &Path) -> Result<TextIndex> {
        let path = agent_dir.join(TEXT_DIR);
        let fail = |e: tantivy::TantivyError| text_error(&path, e);
        let (schema, fields) = Fields::schema();
        let index = match Index::open(PrivateDirectory::open(&path)?) {
            Ok(index) if index.schema() == schema => index,
            Ok(_) | Err(_) => {
                if path.exists() {
                    std::fs::remove_dir_all(&path).map_err(|e| text_error(&path, e))?;
                }
                crate::base::fs::create_dir_all(&path).map_err(|e| text_error(&path, e))?;
                Index::create(
                    PrivateDirectory::open(&path)?,
                    schema,
                    tantivy::IndexSettings::default(),
                )
                .map_err(fail)?
            }
        };
        Self::with_reader(index, fields, path)
    }

    /// Opens the index in `agent_dir` as it is, for reading: `None` when there
    /// is none of this layout.
    pub(crate) fn open_read_only(agent_dir: &Path) -> Result<Option<TextIndex>> {
        let path = agent_dir.join(TEXT_DIR);
        let (schema, fields) = Fields::schema();
        if !path.is_dir() {
            return Ok(None);
        }
        match Index::open(PrivateDirectory::open(&path)?) {
            Ok(index) if index.schema() == schema => {
                Self::with_reader(index, fields, path).map(Some)
            }
            Ok(_) | Err(_) => Ok(None),
        }
    }

    fn with_reader(index: Index, fields: Fields, path: PathBuf) -> Result<TextIndex> {
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(tantivy::ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| text_error(&path, e))?;
        let searcher = reader.searcher();
        let tail = Tail::after(newest_of(&searcher).map_err(|e| text_error(&path, e))?);
        Ok(TextIndex {
            index,
            reader,
            fields,
            path,
            view: Mutex::new(View {
                generation: None,
                searcher,
                tail,
            }),
        })
    }

    /// The generation of the database the index was last committed with.
    pub(crate) fn generation(&self) -> Result<Option<String>> {
        let metas = self.index.load_metas().map_err(|e| self.error(e))?;
        Ok(metas
            .payload
            .and_then(|p| p.strip_prefix(&format!("{LAYOUT}/")).map(str::to_owned)))
    }

    /// Holds the index for writing (another writer, of this process or
    /// another, waits), as of its latest commit.
    pub(crate) fn writer(&self) -> Result<TextWriter<'_>> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        let writer = loop {
            match self.index.writer_with_num_threads(1, WRITER_MEMORY) {
                // Only a lock another writer holds is waited for: a folder
                // gone or unreadable fails at once.
                Err(tantivy::TantivyError::LockFailure(
                    tantivy::directory::error::LockError::LockBusy,
                    _,
                )) if started.elapsed() < LOCK_TIMEOUT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                done => break done.map_err(|e| self.error(e))?,
            }
        };
        let newest = self.reload()?;
        Ok(TextWriter {
            text: self,
            writer,
            newest,
        })
    }

    /// Reloads the reader when the database's generation is not the one it
    /// was loaded at (a removal or a rebuild since).
    pub(crate) fn refresh(&self, generation: &str) -> Result<()> {
        let loaded = self.view().generation.as_deref() == Some(generation);
        if !loaded {
            self.reload_afresh()?;
            self.view().generation = Some(generation.to_owned());
        }
        Ok(())
    }

    /// Loads the index's latest commit; the tail keeps only what is newer
    /// than its newest document, which this returns.
    pub(crate) fn reload(&self) -> Result<i64> {
        self.reader.reload().map_err(|e| self.error(e))?;
        let searcher = self.reader.searcher();
        let newest = newest_of(&searcher).map_err(|e| self.error(e))?;
        let mut view = self.view();
        if view.tail.newest_indexed() != newest {
            view.tail = Tail::after(newest);
        }
        view.searcher = searcher;
        Ok(newest)
    }

    /// Loads the index's latest commit with an empty tail: documents the
    /// tail held may have been removed since.
    fn reload_afresh(&self) -> Result<()> {
        let newest = self.reload()?;
        self.view().tail = Tail::after(newest);
        Ok(())
    }

    /// The newest document queries see, the tail's included.
    pub(crate) fn newest_seen(&self) -> i64 {
        self.view().tail.newest()
    }

    /// The newest document the index held when last loaded.
    pub(crate) fn newest_indexed(&self) -> i64 {
        self.view().tail.newest_indexed()
    }

    /// How many documents the tail holds, past the index's newest.
    pub(crate) fn tail_len(&self) -> usize {
        self.view().tail.len()
    }

    /// Adds documents newer than [`TextIndex::newest_seen`] to the tail, in order.
    pub(crate) fn extend_tail(&self, docs: impl IntoIterator<Item = TextDoc>) {
        let mut view = self.view();
        for doc in docs {
            view.tail.push(doc);
        }
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many documents of `table` hold `word` (its lexemes, all of them).
    pub(crate) fn documents_with(&self, table: Table, word: &[String]) -> Result<u64> {
        let view = self.view();
        let field = self.fields.words(table);
        let mut count = view.tail.documents_with(table, word);
        for segment in view.searcher.segment_readers() {
            if let ([lexeme], None) = (word, segment.alive_bitset()) {
                // The term's own count: no postings to read.
                let inverted = segment.inverted_index(field).map_err(|e| self.error(e))?;
                let term = Term::from_field_text(field, lexeme);
                let info = inverted.get_term_info(&term).map_err(|e| self.error(e))?;
                count += info.map_or(0, |i| u64::from(i.doc_freq));
                continue;
            }
            let Some(mut cursor) =
                WordCursor::open(segment, field, word).map_err(|e| self.error(e))?
            else {
                continue;
            };
            count += match (segment.alive_bitset(), cursor.postings.as_slice()) {
                (None, [one]) => u64::from(one.doc_freq()),
                (alive, _) => {
                    let mut n = 0u64;
                    let mut doc = cursor.doc();
                    while doc != TERMINATED {
                        n += u64::from(alive.is_none_or(|a| a.is_alive(doc)));
                        doc = cursor.advance();
                    }
                    n
                }
            };
        }
        Ok(count)
    }

    /// The best `limit` documents of `table` within `within` matching
    /// `words` (each a query word's lexemes) as `join` says, with their
    /// FTS5 BM25 scores over `totals`: best first, ties by document.
    pub(crate) fn top(
        &self,
        table: Table,
        words: &[Vec<String>],
        join: Join,
        within: &Within,
        limit: usize,
        totals: Totals,
    ) -> Result<Vec<(i64, f64)>> {
        let query = (table, words, join, within);
        self.top_split(query, limit, totals, PARALLEL_SEARCH_DOCUMENTS)
    }

    /// [`TextIndex::top`], on two threads when the index holds more than
    /// `parallel_over` documents.
    fn top_split(
        &self,
        (table, words, join, within): (Table, &[Vec<String>], Join, &Within),
        limit: usize,
        totals: Totals,
        parallel_over: u64,
    ) -> Result<Vec<(i64, f64)>> {
        if limit == 0 || totals.docs == 0 || words.is_empty() {
            return Ok(Vec::new());
        }
        let mut idf = Vec::with_capacity(words.len());
        for word in words {
            idf.push(fts5_idf(totals.docs, self.documents_with(table, word)?));
        }
        let scorer = Bm25 {
            idf,
            avgdl: totals.tokens as f64 / totals.docs as f64,
        };
        let within = &within.within_table(table);
        let view = self.view();
        let field = self.fields.words(table);
        let ask = Asked {
            field,
            words,
            join,
            within,
            scorer: &scorer,
        };
        let threshold = SharedThreshold::default();
        let mut top = Top::new(limit, &threshold);
        view.tail
            .offer(table, words, join, within, &scorer, &mut top);
        let segments = view.searcher.segment_readers();
        let (mine, theirs) = halves_by_documents(segments, parallel_over);
        if theirs.is_empty() {
            ask.search(&mine, &mut top).map_err(|e| self.error(e))?;
            return Ok(top.into_sorted());
        }
        let other = std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                let mut top = Top::new(limit, &threshold);
                ask.search(&theirs, &mut top).map(|()| top.into_sorted())
            });
            let searched = ask.search(&mine, &mut top);
            let other = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            searched.and(other)
        })
        .map_err(|e| self.error(e))?;
        for (doc, score) in other {
            top.offer(score, doc);
        }
        Ok(top.into_sorted())
    }

    fn error(&self, error: impl std::fmt::Display) -> Error {
        text_error(&self.path, error)
    }
}

/// The text index held for writing: what it adds and removes is seen by
/// no reader until [`TextWriter::commit`], and dropped if it is not.
pub(crate) struct TextWriter<'a> {
    text: &'a TextIndex,
    writer: IndexWriter<TantivyDocument>,
    newest: i64,
}

impl TextWriter<'_> {
    /// The newest document the index holds: the database's documents after
    /// it are the ones to add.
    pub(crate) fn newest(&self) -> i64 {
        self.newest
    }

    /// The generation of the database the index was last committed with.
    pub(crate) fn generation(&self) -> Result<Option<String>> {
        self.text.generation()
    }

    /// Removes a session's events.
    pub(crate) fn remove_session(&mut self, session: u64) {
        let term = Term::from_field_u64(self.text.fields.events_of, session);
        self.writer.delete_term(term);
    }

    /// Removes every fact and episode.
    pub(crate) fn remove_memories(&mut self) {
        for kind in [DocKind::Fact, DocKind::Episode] {
            let term = Term::from_field_u64(self.text.fields.kind, kind_code(kind));
            self.writer.delete_term(term);
        }
    }

    /// Removes everything.
    pub(crate) fn remove_all(&mut self) -> Result<()> {
        self.writer
            .delete_all_documents()
            .map_err(|e| self.text.error(e))?;
        self.newest = 0;
        Ok(())
    }

    /// Adds `doc`.
    pub(crate) fn add(&mut self, doc: TextDoc) -> Result<()> {
        let f = self.text.fields;
        let mut out = TantivyDocument::new();
        out.add_i64(f.doc, doc.doc);
        out.add_u64(f.kind, kind_code(doc.kind));
        out.add_u64(f.session, doc.session);
        if doc.kind == DocKind::Event {
            out.add_u64(f.events_of, doc.session);
        }
        out.add_u64(f.role, role_code(doc.role));
        out.add_f64(f.ts, doc.ts);
        out.add_u64(f.length, doc.words.len() as u64);
        let tokens = doc
            .words
            .into_iter()
            .enumerate()
            .map(|(position, text)| Token {
                position,
                text,
                ..Token::default()
            })
            .collect();
        out.add_pre_tokenized_text(
            f.words(Table::of(doc.kind)),
            PreTokenizedString {
                text: String::new(),
                tokens,
            },
        );
        self.newest = self.newest.max(doc.doc);
        self.writer
            .add_document(out)
            .map(drop)
            .map_err(|e| self.text.error(e))
    }

    /// Commits what was added and removed as the database's `generation`,
    /// waiting for the merges it starts, and lets other writers in.
    pub(crate) fn commit(mut self, generation: &str) -> Result<()> {
        let fail = |e: tantivy::TantivyError| self.text.error(e);
        let mut prepared = self.writer.prepare_commit().map_err(fail)?;
        prepared.set_payload(&format!("{LAYOUT}/{generation}"));
        prepared.commit().map_err(fail)?;
        self.writer.wait_merging_threads().map_err(fail)?;
        self.text.reload().map(drop)
    }
}

/// The newest document `searcher`'s segments hold (0 when none). Document
/// numbers are never used twice, so every document of the database up to
/// it is in the index.
fn newest_of(searcher: &Searcher) -> tantivy::Result<i64> {
    let mut newest = 0;
    for segment in searcher.segment_readers() {
        if segment.max_doc() > 0 {
            let column = segment.fast_fields().i64("doc")?.first_or_default_col(0);
            newest = newest.max(column.max_value());
        }
    }
    Ok(newest)
}

/// tantivy's memory-mapped folder, its files readable by their owner only
/// (they hold what was said, as the logs do).
#[derive(Debug, Clone)]
struct PrivateDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl PrivateDirectory {
    fn open(path: &Path) -> Result<PrivateDirectory> {
        crate::base::fs::create_dir_all(path).map_err(|e| text_error(path, e))?;
        let inner = MmapDirectory::open(path).map_err(|e| text_error(path, e))?;
        Ok(PrivateDirectory {
            inner,
            root: path.to_path_buf(),
        })
    }
}

impl Directory for PrivateDirectory {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<std::sync::Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> std::result::Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> std::result::Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> std::result::Result<WritePtr, OpenWriteError> {
        let written = self.inner.open_write(path)?;
        // Made empty a moment ago: private before anything is written to it.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::Permissions::from_mode(crate::base::fs::PRIVATE_FILE_MODE);
            std::fs::set_permissions(self.root.join(path), private)
                .map_err(|e| OpenWriteError::wrap_io_error(e, path.to_path_buf()))?;
        }
        Ok(written)
    }

    fn atomic_read(&self, path: &Path) -> std::result::Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        // Written through a temporary file made private.
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> std::result::Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}

/// FTS5's IDF of a word `n` of `docs` documents hold.
fn fts5_idf(docs: u64, n: u64) -> f64 {
    let (docs, n) = (docs as f64, n as f64);
    let idf = ((docs - n + 0.5) / (n + 0.5)).ln();
    if idf <= 0.0 {
        1e-6
    } else {
        idf
    }
}

/// FTS5's BM25 for one query.
pub(crate) struct Bm25 {
    /// Each query word's IDF, in the query's order.
    idf: Vec<f64>,
    avgdl: f64,
}

impl Bm25 {
    /// The score of a document of `length` tokens holding each query word
    /// `tf[i]` times, summed in the query's order as FTS5 sums it.
    pub(crate) fn score(&self, tf: &[u32], length: u64) -> f64 {
        let d = length as f64;
        let mut score = 0.0;
        for (idf, &tf) in self.idf.iter().zip(tf) {
            let tf = f64::from(tf);
            score += idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * d / self.avgdl)));
        }
        score
    }

    /// More than word `i` can add to any document's score.
    fn bound(&self, i: usize) -> f64 {
        self.idf[i] * (K1 + 1.0)
    }
}

/// One segment's columns and what of it a query may return.
struct SegmentView<'a> {
    reader: &'a tantivy::SegmentReader,
    doc: std::sync::Arc<dyn ColumnValues<i64>>,
    kind: std::sync::Arc<dyn ColumnValues<u64>>,
    session: std::sync::Arc<dyn ColumnValues<u64>>,
    role: std::sync::Arc<dyn ColumnValues<u64>>,
    ts: std::sync::Arc<dyn ColumnValues<f64>>,
    length: std::sync::Arc<dyn ColumnValues<u64>>,
    /// The documents of the segment searched end before this one.
    end: DocId,
    within: Within,
}

impl<'a> SegmentView<'a> {
    fn open(part: &Part<'a>, within: &Within) -> tantivy::Result<SegmentView<'a>> {
        let reader = part.segment;
        let fast = reader.fast_fields();
        Ok(SegmentView {
            reader,
            end: part.end,
            doc: fast.i64("doc")?.first_or_default_col(0),
            kind: fast.u64("kind")?.first_or_default_col(0),
            session: fast.u64("session")?.first_or_default_col(0),
            role: fast.u64("role")?.first_or_default_col(0),
            ts: fast.f64("ts")?.first_or_default_col(0.0),
            length: fast.u64("length")?.first_or_default_col(0),
            within: *within,
        })
    }

    /// Whether document `doc` is alive and within the query's bounds.
    fn admits(&self, doc: DocId) -> bool {
        if self
            .reader
            .alive_bitset()
            .is_some_and(|a| a.is_deleted(doc))
        {
            return false;
        }
        self.within.admits(
            || self.kind.get_val(doc),
            || self.session.get_val(doc),
            || self.role.get_val(doc),
            || self.ts.get_val(doc),
        )
    }
}

/// A query word's postings in one segment: the documents holding all its lexemes.
struct WordCursor {
    postings: Vec<SegmentPostings>,
}

impl WordCursor {
    /// `None` when the segment lacks one of the word's lexemes (or it has none).
    fn open(
        segment: &tantivy::SegmentReader,
        field: Field,
        word: &[String],
    ) -> tantivy::Result<Option<WordCursor>> {
        if word.is_empty() {
            return Ok(None);
        }
        let inverted = segment.inverted_index(field)?;
        let mut postings = Vec::with_capacity(word.len());
        for lexeme in word {
            let term = Term::from_field_text(field, lexeme);
            match inverted.read_postings(&term, IndexRecordOption::WithFreqs)? {
                Some(p) => postings.push(p),
                None => return Ok(None),
            }
        }
        postings.sort_by_key(|p| p.doc_freq());
        let mut cursor = WordCursor { postings };
        let first = cursor.postings[0].doc();
        cursor.align(first);
        Ok(Some(cursor))
    }

    fn doc(&self) -> DocId {
        self.postings[0].doc()
    }

    /// How often the word occurs in the current document.
    fn term_freq(&self) -> u32 {
        self.postings
            .iter()
            .map(|p| p.term_freq())
            .min()
            .unwrap_or(0)
    }

    fn advance(&mut self) -> DocId {
        let next = self.postings[0].advance();
        self.align(next)
    }

    /// The first document at or after `target` holding every lexeme.
    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc() >= target {
            return self.doc();
        }
        let first = self.postings[0].seek(target);
        self.align(first)
    }

    fn align(&mut self, mut candidate: DocId) -> DocId {
        'outer: loop {
            if candidate == TERMINATED {
                return TERMINATED;
            }
            for p in &mut self.postings[1..] {
                let at = seek(p, candidate);
                if at > candidate {
                    candidate = self.postings[0].seek(at);
                    continue 'outer;
                }
            }
            return candidate;
        }
    }
}

/// The first document of `postings` at or after `target` (it stays when past it).
fn seek(postings: &mut SegmentPostings, target: DocId) -> DocId {
    match postings.doc() >= target {
        true => postings.doc(),
        false => postings.seek(target),
    }
}

/// Documents holding every word: the rarest word leads, the others are sought.
fn all_words(
    segment: &SegmentView<'_>,
    cursors: Vec<Option<WordCursor>>,
    scorer: &Bm25,
    top: &mut Top<'_>,
) {
    let Some(mut cursors) = cursors.into_iter().collect::<Option<Vec<_>>>() else {
        return;
    };
    let mut order: Vec<usize> = (0..cursors.len()).collect();
    order.sort_by_key(|&i| cursors[i].postings[0].doc_freq());
    let mut tf = vec![0u32; cursors.len()];
    let lead = order[0];
    let mut doc = cursors[lead].doc();
    'docs: while doc < segment.end {
        for &i in &order[1..] {
            let at = cursors[i].seek(doc);
            if at > doc {
                doc = cursors[lead].seek(at);
                continue 'docs;
            }
        }
        if segment.admits(doc) {
            for (i, cursor) in cursors.iter().enumerate() {
                tf[i] = cursor.term_freq();
            }
            let score = scorer.score(&tf, segment.length.get_val(doc));
            top.offer(score, segment.doc.get_val(doc));
        }
        doc = cursors[lead].advance();
    }
}

/// Documents holding any word, by MaxScore: the words sorted by their
/// bounds, those whose bounds together cannot lift a document into the
/// top `k` are only sought for the documents the others bring.
fn any_word(
    segment: &SegmentView<'_>,
    cursors: Vec<Option<WordCursor>>,
    scorer: &Bm25,
    top: &mut Top<'_>,
) {
    let words = cursors.len();
    let mut present: Vec<(usize, WordCursor)> = cursors
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (i, c)))
        .collect();
    if present.is_empty() {
        return;
    }
    present.sort_by(|a, b| scorer.bound(a.0).total_cmp(&scorer.bound(b.0)));
    // prefix[j]: the bounds of the j weakest words together.
    let mut prefix = vec![0.0; present.len() + 1];
    for (j, (i, _)) in present.iter().enumerate() {
        prefix[j + 1] = prefix[j] + scorer.bound(*i);
    }
    let mut tf = vec![0u32; words];
    // Words before `first_essential` cannot bring a document on their own.
    let mut first_essential = 0;
    loop {
        let threshold = top.threshold();
        while first_essential < present.len() && below(prefix[first_essential + 1], threshold) {
            first_essential += 1;
        }
        if first_essential == present.len() {
            return;
        }
        let doc = present[first_essential..]
            .iter()
            .map(|(_, c)| c.doc())
            .min()
            .unwrap_or(TERMINATED);
        if doc >= segment.end {
            return;
        }
        // What the essential words holding `doc` could add, at most.
        let mut bound = prefix[first_essential];
        for (i, cursor) in &present[first_essential..] {
            if cursor.doc() == doc {
                bound += scorer.bound(*i);
            }
        }
        let mut keep = !below(bound, threshold) && segment.admits(doc);
        if keep {
            tf.iter_mut().for_each(|t| *t = 0);
            for (i, cursor) in &present[first_essential..] {
                if cursor.doc() == doc {
                    tf[*i] = cursor.term_freq();
                }
            }
            // The weak words, strongest first, while they could still matter.
            for j in (0..first_essential).rev() {
                let (i, cursor) = &mut present[j];
                if cursor.seek(doc) == doc {
                    tf[*i] = cursor.term_freq();
                } else {
                    bound -= scorer.bound(*i);
                    if below(bound, threshold) {
                        keep = false;
                        break;
                    }
                }
            }
        }
        if keep {
            let score = scorer.score(&tf, segment.length.get_val(doc));
            top.offer(score, segment.doc.get_val(doc));
        }
        for (_, cursor) in &mut present[first_essential..] {
            if cursor.doc() == doc {
                cursor.advance();
            }
        }
    }
}

/// Whether a score of at most `bound` surely stays out of a top whose
/// worst is `threshold` (a margin for sums taken in another order).
fn below(bound: f64, threshold: Option<f64>) -> bool {
    threshold.is_some_and(|t| bound + 1e-9 * (1.0 + t.abs()) < t)
}

/// Indexes of more documents than this are searched on two threads, each
/// over about half of the documents: a query's time then halves on an idle
/// machine, while below it starting a thread costs more than it saves.
const PARALLEL_SEARCH_DOCUMENTS: u64 = 200_000;

/// A run of one segment's documents, `first..end`.
#[derive(Clone, Copy)]
struct Part<'a> {
    segment: &'a tantivy::SegmentReader,
    first: DocId,
    end: DocId,
}

/// `segments`' documents split in two runs of about equal documents (the
/// segment at the middle cut in two), the second empty when they hold
/// `parallel_over` documents or fewer: an index merged into one large
/// segment is split as evenly as one of many.
fn halves_by_documents(
    segments: &[tantivy::SegmentReader],
    parallel_over: u64,
) -> (Vec<Part<'_>>, Vec<Part<'_>>) {
    fn whole(segment: &tantivy::SegmentReader) -> Part<'_> {
        Part {
            segment,
            first: 0,
            end: segment.max_doc(),
        }
    }
    let total: u64 = segments.iter().map(|s| u64::from(s.max_doc())).sum();
    if total <= parallel_over {
        return (segments.iter().map(whole).collect(), Vec::new());
    }
    let (mut first_half, mut second_half) = (Vec::new(), Vec::new());
    let mut before = 0u64;
    for segment in segments {
        let documents = u64::from(segment.max_doc());
        // How many of this segment's documents belong to the first half.
        let cut = (total / 2).saturating_sub(before).min(documents) as DocId;
        if cut > 0 {
            first_half.push(Part {
                end: cut,
                ..whole(segment)
            });
        }
        if cut < segment.max_doc() {
            second_half.push(Part {
                first: cut,
                ..whole(segment)
            });
        }
        before += documents;
    }
    (first_half, second_half)
}

/// One query as every segment is asked it.
struct Asked<'a> {
    field: Field,
    words: &'a [Vec<String>],
    join: Join,
    within: &'a Within,
    scorer: &'a Bm25,
}

impl Asked<'_> {
    /// Offers `top` the documents of `parts` that match.
    fn search(&self, parts: &[Part<'_>], top: &mut Top<'_>) -> tantivy::Result<()> {
        for part in parts {
            let segment = SegmentView::open(part, self.within)?;
            let mut cursors = Vec::with_capacity(self.words.len());
            for word in self.words {
                let mut cursor = WordCursor::open(segment.reader, self.field, word)?;
                if let Some(cursor) = &mut cursor {
                    cursor.seek(part.first);
                }
                cursors.push(cursor);
            }
            match self.join {
                Join::All => all_words(&segment, cursors, self.scorer, top),
                Join::Any => any_word(&segment, cursors, self.scorer, top),
            }
        }
        Ok(())
    }
}

/// The best threshold any of a query's [`Top`]s has reached, as the bits of
/// an `f64` (0 while none is full): a document scoring below it is below
/// the query's own, since that many documents score at least as well.
/// BM25 scores are positive, and positive `f64`s order as their bits do.
#[derive(Debug, Default)]
pub(crate) struct SharedThreshold(AtomicU64);

impl SharedThreshold {
    fn get(&self) -> Option<f64> {
        let bits = self.0.load(AtomicOrdering::Relaxed);
        (bits != 0).then(|| f64::from_bits(bits))
    }

    fn raise(&self, threshold: f64) {
        if threshold > 0.0 {
            self.0
                .fetch_max(threshold.to_bits(), AtomicOrdering::Relaxed);
        }
    }
}

/// The best `limit` documents offered: higher score first, then lower document.
pub(crate) struct Top<'a> {
    limit: usize,
    heap: BinaryHeap<Ranked>,
    shared: &'a SharedThreshold,
}

/// A scored document, ordered worst last (so the heap's top is the worst held).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranked {
    score: f64,
    doc: i64,
}

impl Eq for Ranked {}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.doc.cmp(&other.doc))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<'a> Top<'a> {
    pub(crate) fn new(limit: usize, shared: &'a SharedThreshold) -> Top<'a> {
        Top {
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
            shared,
        }
    }

    /// The score a document must reach to matter: the worst held once
    /// full, or another part of the query's search's when that is higher.
    fn threshold(&self) -> Option<f64> {
        let own = self.own_threshold();
        match (own, self.shared.get()) {
            (Some(own), Some(shared)) => Some(own.max(shared)),
            (own, shared) => own.or(shared),
        }
    }

    fn own_threshold(&self) -> Option<f64> {
        (self.heap.len() >= self.limit)
            .then(|| self.heap.peek().map(|r| r.score))
            .flatten()
    }

    pub(crate) fn offer(&mut self, score: f64, doc: i64) {
        let ranked = Ranked { score, doc };
        if self.heap.len() < self.limit {
            self.heap.push(ranked);
        } else if self.heap.peek().is_some_and(|worst| ranked < *worst) {
            self.heap.pop();
            self.heap.push(ranked);
        } else {
            return;
        }
        if let Some(own) = self.own_threshold() {
            self.shared.raise(own);
        }
    }

    fn into_sorted(self) -> Vec<(i64, f64)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| (r.doc, r.score))
            .collect()
    }
}

fn text_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Index {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
