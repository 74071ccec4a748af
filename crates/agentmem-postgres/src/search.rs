//! [`PgSearch`]: an agent's history index in the database, the search
//! seam's PostgreSQL side ([`agentmem::storage::search`]).
//!
//! - **Documents**: one row per event of every session, archive included,
//!   numbered per agent in the order indexed (as the files index numbers
//!   its rows), with the event's text as the files index keeps it and its
//!   words as a `tsvector` under a GIN index. The words are the engine's
//!   FTS5 tokenizer's ([`agentmem::search::lexemes`]): each lexeme with
//!   one position per occurrence, so a lexeme's positions count its term
//!   frequency (up to PostgreSQL's 256 positions a lexeme).
//! - **Fed as events are appended**: a writer hands each committed append
//!   to its store's indexer thread ([`crate::feed`]), which adds it on a
//!   connection of its own. When an index is opened, one query still
//!   finds the sessions whose logs hold events it lacks (an append the
//!   indexer had not reached, or a process that died first; a session's
//!   log is numbered densely from 1, so its next number says how many it
//!   holds) and the sessions deleted since: only the missing events are
//!   read and added, in one transaction per session, numbered under a
//!   per-agent advisory lock. Two feeders at once take turns and add each
//!   event once. An index is opened on a connection kept open between
//!   searches ([`crate::pool`]), not on a new one.
//! - **Facts and episodes**: the agent's current facts and its episodes
//!   (compaction and session summaries) are documents too, beside the
//!   events and numbered with them, as on files: replaced together, in one
//!   transaction, when the index is opened after they changed (a
//!   fingerprint of the stored rows says so), and ranked among themselves
//!   with their own BM25 statistics.
//! - **Term statistics**: how many events hold each lexeme is kept in a
//!   table updated in the same transactions as the documents, so a query's
//!   document frequencies are one lookup, not a count over the documents.
//! - **Ranking**: BM25 as FTS5 computes it, from the document counts,
//!   lengths and term frequencies kept here: the database finds the
//!   matching documents and hands over their query lexemes, which are
//!   scored and ranked here. Queries look at the newest documents first
//!   and widen, and common terms only narrow, with the thresholds of the
//!   files index, so the same query returns the same events in the same
//!   order on both backends.
//! - **Vectors**: stored as the files index stores them (unit length, a
//!   signed byte a dimension) and compared by an exact scan, or, where the
//!   database has pgvector, found through its HNSW index
//!   ([`crate::nearest`]) once an agent has enough of them.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use agentmem::memory::recall::memory_documents;
use agentmem::memory::recall::Embedder;
use agentmem::search::index::{
    context_text, indexed_text, speaker, Candidate, DocKind, MemoryDoc, COMMON_TERM_MIN_DOCS,
    COMMON_TERM_SHARE, CONTEXT_EVENTS, EVENT_SALIENCE, FIRST_WINDOW_DOCS,
};
use agentmem::search::lexemes::{excerpt_for, lexemes_of, lexemes_of_term, Lexemes};
use agentmem::search::query;
use agentmem::search::vectors::{
    check_dimensions, dot_with_stored, embed_checked, embedded_text, to_bytes, unit, Similarities,
    EMBED_BATCH_TEXTS,
};
use agentmem::search::{ContextLine, SearchFilter, SearchHit, SearchRole};
use agentmem::storage::search::SearchIndex;
use agentmem::storage::Backend;
use agentmem::{AgentId, Event, Result};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, Row};

use crate::db_error;
use crate::feed::Feeder;
use crate::memory::{read_episodes, read_facts};
use crate::nearest;
use crate::pool::{Connections, Nearest};
use crate::storage::from_json;

/// Documents inserted by one statement while catching up.
const INSERT_BATCH: usize = 2_000;
/// The most positions PostgreSQL keeps for one lexeme of a `tsvector`.
const MAX_POSITIONS: u32 = 256;
/// The longest lexeme a `tsvector` holds, in bytes; longer ones are cut.
const MAX_LEXEME_BYTES: usize = 2_046;

/// The columns a [`Candidate`] is read from, in [`candidate_from_row`]'s order.
const CANDIDATE_COLUMNS: &str =
    "d.kind, d.ref, d.session_id, d.turn, d.ord, d.role, d.ts, d.salience, d.speaker, d.text, d.doc";

/// A matching document's query lexemes, as `tsvector` text: only the
/// lexemes `$3` are kept, each with its positions (its term frequency), so
/// a row carries little and its BM25 is computed here ([`Asked::bm25`]).
/// Scoring in SQL (a function, or the same arithmetic written into the
/// query) cost about three times as much per document.
const QUERY_LEXEMES: &str = "ts_filter(setweight(lexemes, 'A', $3::text[]), '{a}')::text";
/// BM25's term-frequency saturation and length normalisation, FTS5's.
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;

/// One agent's history index in a PostgreSQL database.
pub struct PgSearch {
    /// The connection it searches on, taken from `pool` and handed back
    /// when the index is dropped (`None` only then).
    client: Mutex<Option<Client>>,
    pool: Arc<Connections>,
    agent: AgentId,
}

/// The index's connection, while one call uses it.
struct Held<'a>(MutexGuard<'a, Option<Client>>);

impl Deref for Held<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        self.0
            .as_ref()
            .expect("an index holds its connection until dropped")
    }
}

impl DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.0
            .as_mut()
            .expect("an index holds its connection until dropped")
    }
}

impl Drop for PgSearch {
    fn drop(&mut self) {
        let slot = self.client.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = slot.take() {
            self.pool.give_back(client);
        }
    }
}

impl std::fmt::Debug for PgSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSearch")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// A query term: the lexemes one word of the query stands for.
#[derive(Debug, Clone)]
struct Term {
    /// The word, as the FTS5 expression quotes it.
    word: String,
    lexemes: Vec<String>,
}

/// How one query is asked: all its terms, the terms that are not common
/// (see `agentmem::search::index`'s plan), and how many events hold each
/// of their lexemes.
struct Plan {
    all: Vec<Term>,
    rare: Vec<Term>,
    frequencies: HashMap<String, i64>,
    /// The newest document's number when the query was planned (0: none).
    newest: i64,
}

/// One way of asking a query: what matches and how it scores.
struct Asked {
    /// The FTS5 expression of the same terms (for the excerpt).
    expression: String,
    /// The `tsquery` that matches.
    tsquery: String,
    /// The lexemes scored, and their idfs.
    lexemes: Vec<String>,
    idfs: Vec<f64>,
    avgdl: f64,
}

/// Which of the index's two rankings a query is asked of, as the files
/// index's two FTS5 tables: each has its own BM25 statistics, so scores
/// compare only within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ranked {
    /// The events of every session.
    Events,
    /// The agent's facts and episodes.
    Memories,
}

impl Ranked {
    /// The condition on `kind` selecting its documents, written out so
    /// that the memories' partial indexes serve it.
    fn kinds(self) -> &'static str {
        match self {
            Ranked::Events => "kind = 'event'",
            Ranked::Memories => "kind <> 'event'",
        }
    }
}

/// A fingerprint of the agent's facts and episodes as they are stored:
/// it changes whenever they do, so the index replaces its copy of them
/// only then (as the files index does on its files' stamp).
const MEMORY_STAMP: &str = "
    SELECT (SELECT md5(coalesce(string_agg(fact_id || E'\\t' || line, E'\\n' ORDER BY position, fact_id), ''))
            FROM agentmem_facts WHERE agent_id = $1)
        || ':' || (SELECT count(*) || ':' || coalesce(max(position), 0)
                   FROM agentmem_episodes WHERE agent_id = $1)";

impl Asked {
    /// A document's BM25 as FTS5 computes it, from its length and its query
    /// lexemes as [`QUERY_LEXEMES`] reads them (summed in their order, as
    /// the SQL it replaces summed them).
    fn bm25(&self, length: f64, query_lexemes: &str) -> f64 {
        let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / self.avgdl);
        let mut score = 0.0;
        for (lexeme, frequency) in term_frequencies(query_lexemes) {
            let Some(at) = self.lexemes.iter().position(|l| *l == lexeme) else {
                continue;
            };
            let tf = f64::from(frequency);
            score += self.idfs[at] * (tf * (BM25_K1 + 1.0)) / (tf + norm);
        }
        score
    }
}

/// The lexemes of `tsvector` text (`'it''s':1A,2A 'x':3A`) with how many
/// positions each has.
fn term_frequencies(text: &str) -> Vec<(String, u32)> {
    let mut found = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut lexeme = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    lexeme.push('\'');
                }
                '\'' => break,
                '\\' => lexeme.extend(chars.next()),
                c => lexeme.push(c),
            }
        }
        let mut positions = 0;
        if chars.peek() == Some(&':') {
            positions = 1;
            while let Some(c) = chars.next_if(|c| *c != ' ') {
                positions += u32::from(c == ',');
            }
        }
        found.push((lexeme, positions));
    }
    found
}

/// How the terms of an [`Asked`] are joined.
#[derive(Debug, Clone, Copy)]
enum Join {
    /// Documents with every term.
    All,
    /// Documents with any term.
    Any,
}

impl PgSearch {
    /// `agent`'s index, on a connection from `pool`, caught up with the
    /// agent's sessions but for the events `feeder`, this process's
    /// indexer, was handed and will add.
    pub(crate) fn open(
        pool: &Arc<Connections>,
        agent: AgentId,
        feeder: Option<&Feeder>,
    ) -> Result<PgSearch> {
        let index = PgSearch {
            client: Mutex::new(Some(pool.take()?)),
            pool: Arc::clone(pool),
            agent,
        };
        index.catch_up(feeder)?;
        Ok(index)
    }

    fn client(&self) -> Held<'_> {
        // A panic mid-query leaves nothing half-done on the connection.
        Held(self.client.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Adds the events the agent's sessions hold that the index lacks
    /// (reading only those) and `feeder` was not handed, and removes the
    /// sessions deleted since.
    fn catch_up(&self, feeder: Option<&Feeder>) -> Result<()> {
        let action = "catch the history index up with the sessions";
        let mut client = self.client();
        let lagging = client
            .query(
                "SELECT s.session_id, coalesce(i.events, 0), s.next_seq - 1
                 FROM agentmem_sessions s
                 LEFT JOIN agentmem_search_sessions i
                   ON i.agent_id = s.agent_id AND i.session_id = s.session_id
                 WHERE s.agent_id = $1 AND s.next_seq - 1 > coalesce(i.events, 0)
                 ORDER BY (s.meta::jsonb ->> 'created')::float8, s.session_id",
                &[&self.agent()],
            )
            .map_err(|e| db_error(action, &e))?;
        for row in &lagging {
            let (session, have, logged): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
            if feeder.is_some_and(|f| f.will_index(&self.agent, &session, logged as u64)) {
                continue;
            }
            catch_up_session(&mut client, &self.agent, &session, have as u64)?;
        }
        let gone = client
            .query(
                "SELECT i.session_id FROM agentmem_search_sessions i
                 WHERE i.agent_id = $1 AND NOT EXISTS (
                     SELECT 1 FROM agentmem_sessions s
                     WHERE s.agent_id = i.agent_id AND s.session_id = i.session_id)",
                &[&self.agent()],
            )
            .map_err(|e| db_error(action, &e))?;
        for row in &gone {
            remove_session(&mut client, &self.agent, row.get(0))?;
        }
        sync_memories(&mut client, &self.agent)
    }

    fn agent(&self) -> &str {
        self.agent.as_str()
    }

    /// The newest document's number (0: none).
    fn newest_doc(&self, client: &mut Client) -> Result<i64> {
        client
            .query_one(
                "SELECT coalesce(max(doc), 0) FROM agentmem_search_docs WHERE agent_id = $1",
                &[&self.agent()],
            )
            .map(|row| row.get(0))
            .map_err(|e| db_error("read the history index", &e))
    }

    /// The query's terms and which of them are rare, as the files index plans.
    fn plan(&self, client: &mut Client, text: &str, ranked: Ranked) -> Result<Plan> {
        let mut all = Vec::new();
        for word in query::terms(text) {
            let lexemes = lexemes_of_term(&word)?
                .into_iter()
                .map(|l| cut_lexeme(&l))
                .collect();
            all.push(Term { word, lexemes });
        }
        let frequencies = match ranked {
            Ranked::Events => self.frequencies(client, &all)?,
            Ranked::Memories => self.memory_frequencies(client, &all)?,
        };
        let newest = self.newest_doc(client)?;
        let cap = ((newest as f64 * COMMON_TERM_SHARE) as i64).max(COMMON_TERM_MIN_DOCS);
        let mut rare = Vec::new();
        for term in &all {
            if newest <= cap {
                rare.push(term.clone());
                continue;
            }
            let count = match term.lexemes.as_slice() {
                [one] => frequencies.get(one).copied().unwrap_or(0),
                _ => self.documents_with(client, term, cap, ranked)?,
            };
            if count < cap {
                rare.push(term.clone());
            }
        }
        Ok(Plan {
            all,
            rare,
            frequencies,
            newest,
        })
    }

    /// How many events hold each lexeme of `terms`, from the term statistics.
    fn frequencies(&self, client: &mut Client, terms: &[Term]) -> Result<HashMap<String, i64>> {
        let lexemes: Vec<&str> = terms
            .iter()
            .flat_map(|t| t.lexemes.iter().map(String::as_str))
            .collect();
        if lexemes.is_empty() {
            return Ok(HashMap::new());
        }
        let rows = client
            .query(
                "SELECT q.lexeme, t.docs FROM unnest($2::text[]) AS q(lexeme),
                 LATERAL (SELECT docs FROM agentmem_search_terms
                          WHERE agent_id = $1 AND lexeme = q.lexeme LIMIT 1) t",
                &[&self.agent(), &lexemes],
            )
            .map_err(|e| db_error("read the history index's term statistics", &e))?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// How many facts and episodes hold each lexeme of `terms`, counted
    /// over them (a handful of rows, under an index of their own).
    fn memory_frequencies(
        &self,
        client: &mut Client,
        terms: &[Term],
    ) -> Result<HashMap<String, i64>> {
        let lexemes: Vec<&str> = terms
            .iter()
            .flat_map(|t| t.lexemes.iter().map(String::as_str))
            .collect();
        if lexemes.is_empty() {
            return Ok(HashMap::new());
        }
        let any: Vec<String> = lexemes.iter().map(|l| quoted(l)).collect();
        let rows = client
            .query(
                "SELECT u.lexeme, count(*) FROM agentmem_search_docs d, unnest(d.lexemes) AS u
                 WHERE d.agent_id = $1 AND d.kind <> 'event' AND d.lexemes @@ $3::text::tsquery
                   AND u.lexeme = ANY($2)
                 GROUP BY u.lexeme",
                &[&self.agent(), &lexemes, &any.join(" | ")],
            )
            .map_err(|e| db_error("count the facts and episodes holding a word", &e))?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// How many documents of `ranked` hold every lexeme of `term`, counting
    /// up to `cap` only.
    fn documents_with(
        &self,
        client: &mut Client,
        term: &Term,
        cap: i64,
        ranked: Ranked,
    ) -> Result<i64> {
        let Some(tsquery) = tsquery(std::slice::from_ref(term), Join::All) else {
            return Ok(0);
        };
        client
            .query_one(
                &format!(
                    "SELECT count(*) FROM (SELECT 1 FROM agentmem_search_docs
                       WHERE agent_id = $1 AND {} AND lexemes @@ $2::text::tsquery
                       LIMIT $3) AS found",
                    ranked.kinds()
                ),
                &[&self.agent(), &tsquery, &cap],
            )
            .map(|row| row.get(0))
            .map_err(|e| db_error("count the events holding a word", &e))
    }

    /// How `terms` are asked, joined by `join`, with the statistics BM25
    /// needs: `None` when they hold no word.
    fn asked(
        &self,
        client: &mut Client,
        terms: &[Term],
        frequencies: &HashMap<String, i64>,
        join: Join,
        ranked: Ranked,
    ) -> Result<Option<Asked>> {
        let Some(tsquery) = tsquery(terms, join) else {
            return Ok(None);
        };
        let words: Vec<String> = terms.iter().map(|t| t.word.clone()).collect();
        let expression = match join {
            Join::All => query::all_of(&words),
            Join::Any => query::any_of(&words),
        }
        .unwrap_or_default();
        let statistics = match ranked {
            Ranked::Events => {
                "SELECT coalesce(sum(events), 0)::float8, coalesce(sum(tokens), 0)::float8
                 FROM agentmem_search_sessions WHERE agent_id = $1"
            }
            Ranked::Memories => {
                "SELECT coalesce(sum(docs), 0)::float8, coalesce(sum(tokens), 0)::float8
                 FROM agentmem_search_memories WHERE agent_id = $1"
            }
        };
        let stats = client
            .query_one(statistics, &[&self.agent()])
            .map_err(|e| db_error("read the history index's statistics", &e))?;
        let (rows, tokens): (f64, f64) = (stats.get(0), stats.get(1));
        let mut lexemes = Vec::new();
        let mut idfs = Vec::new();
        for term in terms {
            for lexeme in &term.lexemes {
                let hits = frequencies.get(lexeme).copied().unwrap_or(0) as f64;
                let idf = ((rows - hits + 0.5) / (hits + 0.5)).ln();
                lexemes.push(lexeme.clone());
                idfs.push(if idf <= 0.0 { 1e-6 } else { idf });
            }
        }
        Ok(Some(Asked {
            expression,
            tsquery,
            lexemes,
            idfs,
            avgdl: if rows > 0.0 { tokens / rows } else { 1.0 },
        }))
    }

    /// Runs `query` on the [`FIRST_WINDOW_DOCS`] documents up to `newest`,
    /// then on four times as many, and so on, until it returns `wanted` rows
    /// or has seen the whole index (as the files index does).
    fn newest_first<T>(
        client: &mut Client,
        newest: i64,
        wanted: usize,
        mut query: impl FnMut(&mut Client, i64) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let mut window = FIRST_WINDOW_DOCS;
        loop {
            let lowest = newest.saturating_sub(window).max(0);
            let found = query(client, lowest)?;
            if found.len() >= wanted || lowest == 0 {
                return Ok(found);
            }
            window = window.saturating_mul(4);
        }
    }

    /// The best `limit` documents of `kinds` (all of `ranked`'s) matching
    /// `asked` from document `lowest` on, outside `exclude_session`.
    fn matches_from(
        &self,
        client: &mut Client,
        asked: &Asked,
        (ranked, kinds): (Ranked, &[&str]),
        exclude_session: Option<&str>,
        limit: usize,
        lowest: i64,
    ) -> Result<Vec<Candidate>> {
        let condition = format!(
            "doc >= $4 AND {} AND kind = ANY($5::text[]) AND ($6::text IS NULL OR session_id <> $6)",
            ranked.kinds()
        );
        let top = self.top_documents(
            client,
            asked,
            &condition,
            &[&lowest, &kinds, &exclude_session],
            limit,
        )?;
        let docs: Vec<i64> = top.iter().map(|(doc, _)| *doc).collect();
        let scores: HashMap<i64, f64> = top.into_iter().collect();
        let mut found = self.candidates_by_id_on(client, &docs)?;
        for candidate in &mut found {
            candidate.bm25 = scores[&candidate.doc];
        }
        Ok(found)
    }

    /// The best `limit` documents matching `asked` that `condition` (on
    /// `agentmem_search_docs`, its parameters `params` from `$4` on) keeps,
    /// with their BM25: best first, the older first among equals.
    fn top_documents(
        &self,
        client: &mut Client,
        asked: &Asked,
        condition: &str,
        params: &[&(dyn ToSql + Sync)],
        limit: usize,
    ) -> Result<Vec<(i64, f64)>> {
        let agent = self.agent();
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&agent, &asked.tsquery, &asked.lexemes];
        all.extend_from_slice(params);
        let rows = client
            .query(
                &format!(
                    "SELECT doc, length, {QUERY_LEXEMES} FROM agentmem_search_docs
                     WHERE agent_id = $1 AND lexemes @@ $2::text::tsquery AND {condition}"
                ),
                &all,
            )
            .map_err(|e| db_error("look up the history index", &e))?;
        let mut scored: Vec<(i64, f64)> = rows
            .iter()
            .map(|row| {
                let length: i32 = row.get(1);
                (row.get(0), asked.bm25(f64::from(length), row.get(2)))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(limit);
        Ok(scored)
    }

    /// The best `limit` documents of `kinds` (of `ranked`) for `text`: its
    /// rarer terms when it has some, else all of them (as the files index
    /// ranks for recall), newest documents first.
    fn best_of(
        &self,
        client: &mut Client,
        text: &str,
        (ranked, kinds): (Ranked, &[&str]),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let plan = self.plan(client, text, ranked)?;
        let (terms, join) = match plan.rare.is_empty() {
            false => (&plan.rare, Join::Any),
            true => (&plan.all, Join::All),
        };
        let Some(asked) = self.asked(client, terms, &plan.frequencies, join, ranked)? else {
            return Ok(Vec::new());
        };
        Self::newest_first(client, plan.newest, limit, |client, lowest| {
            self.matches_from(
                client,
                &asked,
                (ranked, kinds),
                exclude_session,
                limit,
                lowest,
            )
        })
    }

    /// The best `filter.limit` events matching `asked` within `filter`,
    /// from document `lowest` on, with their document numbers and texts.
    fn ranked_events(
        &self,
        client: &mut Client,
        asked: &Asked,
        filter: &SearchFilter,
        lowest: i64,
    ) -> Result<Vec<(i64, SearchHit, String)>> {
        let role = filter.role.map(SearchRole::as_str);
        let top = self.top_documents(
            client,
            asked,
            "doc >= $4 AND kind = 'event'
             AND ($5::text IS NULL OR session_id = $5)
             AND ($6::text IS NULL OR role = $6)
             AND ($7::float8 IS NULL OR ts >= $7)
             AND ($8::float8 IS NULL OR ts < $8)",
            &[
                &lowest,
                &filter.session,
                &role,
                &filter.since,
                &filter.until,
            ],
            filter.limit,
        )?;
        if top.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<i64> = top.iter().map(|(doc, _)| *doc).collect();
        let rows = client
            .query(
                "SELECT d.* FROM unnest($2::bigint[]) AS q(doc),
                 LATERAL (SELECT doc, session_id, ref, turn, ord, role, ts, text
                          FROM agentmem_search_docs WHERE agent_id = $1 AND doc = q.doc LIMIT 1) d",
                &[&self.agent(), &docs],
            )
            .map_err(|e| db_error("search the history index", &e))?;
        let mut by_doc: HashMap<i64, &Row> = rows.iter().map(|row| (row.get(0), row)).collect();
        Ok(top
            .iter()
            .filter_map(|(doc, score)| {
                let row = by_doc.remove(doc)?;
                let hit = SearchHit {
                    session: row.get(1),
                    event_id: row.get(2),
                    turn_id: row.get(3),
                    ord: row.get::<_, i64>(4) as u64,
                    role: SearchRole::parse_stored(row.get(5)),
                    ts: row.get(6),
                    score: *score,
                    excerpt: String::new(),
                    context: Vec::new(),
                };
                Some((*doc, hit, row.get(7)))
            })
            .collect())
    }

    /// The events around each of `events` (a session and a position):
    /// those from `ord - radius` to `ord + radius`, the event itself
    /// included, as rows of [`CANDIDATE_COLUMNS`], one list per event in
    /// the order given. One statement: an index probe per event (a join,
    /// which the planner may pick for a new agent whose rows its statistics
    /// have not counted, reads every row of the agent).
    fn rows_around(
        &self,
        client: &mut Client,
        events: &[(&str, u64)],
        radius: u64,
    ) -> Result<Vec<Vec<Row>>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let sessions: Vec<&str> = events.iter().map(|(session, _)| *session).collect();
        let ords: Vec<i64> = events.iter().map(|(_, ord)| as_position(*ord)).collect();
        let radius = as_position(radius);
        let rows = client
            .query(
                &format!(
                    "SELECT d.*, q.i FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY
                         AS q(session, ord, i),
                     LATERAL (SELECT {CANDIDATE_COLUMNS} FROM agentmem_search_docs d
                              WHERE d.agent_id = $1 AND d.kind = 'event'
                                AND d.session_id = q.session
                                AND d.ord BETWEEN q.ord - $4 AND q.ord + $4
                              ORDER BY d.ord LIMIT 2 * $4 + 1) d
                     ORDER BY q.i, d.ord"
                ),
                &[&self.agent(), &sessions, &ords, &radius],
            )
            .map_err(|e| db_error("read the events around the matches", &e))?;
        let mut around: Vec<Vec<Row>> = events.iter().map(|_| Vec::new()).collect();
        for row in rows {
            let at: i64 = row.get(11);
            around[at as usize - 1].push(row);
        }
        Ok(around)
    }

    /// The documents `docs` as unscored candidates, in that order (those
    /// gone left out), read on `client`.
    fn candidates_by_id_on(&self, client: &mut Client, docs: &[i64]) -> Result<Vec<Candidate>> {
        if docs.is_empty() {
            return Ok(Vec::new());
        }
        let rows = client
            .query(
                &format!(
                    "SELECT d.* FROM unnest($2::bigint[]) WITH ORDINALITY AS q(doc, i),
                     LATERAL (SELECT {CANDIDATE_COLUMNS} FROM agentmem_search_docs d
                              WHERE d.agent_id = $1 AND d.doc = q.doc LIMIT 1) d
                     ORDER BY q.i"
                ),
                &[&self.agent(), &docs],
            )
            .map_err(|e| db_error("read documents of the history index", &e))?;
        rows.iter()
            .map(|row| candidate_from_row(row, 0.0))
            .collect()
    }

    /// The last document embedded with `model` (0: none).
    fn embedded_through(&self, client: &mut Client, model: &str) -> Result<i64> {
        client
            .query_opt(
                "SELECT through FROM agentmem_search_embedded WHERE agent_id = $1 AND model = $2",
                &[&self.agent(), &model],
            )
            .map_err(|e| db_error("read how far the documents are embedded", &e))
            .map(|row| row.map_or(0, |row| row.get(0)))
    }

    /// The next batch of documents after `through`, as they are embedded.
    fn documents_after(
        &self,
        client: &mut Client,
        through: i64,
    ) -> Result<Vec<(i64, String, String, String)>> {
        let rows = client
            .query(
                "SELECT doc, kind, session_id, speaker, text FROM agentmem_search_docs
                 WHERE agent_id = $1 AND doc > $2 ORDER BY doc LIMIT $3",
                &[&self.agent(), &through, &(EMBED_BATCH_TEXTS as i64)],
            )
            .map_err(|e| db_error("read the documents to embed", &e))?;
        Ok(rows
            .iter()
            .map(|row| {
                let text = embedded_text(row.get(3), row.get(4));
                (row.get(0), row.get(1), row.get(2), text)
            })
            .collect())
    }
}

impl SearchIndex for PgSearch {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn add_events(&mut self, session: &str, first_ord: u64, events: &[Event]) -> Result<usize> {
        let agent = self.agent.clone();
        add_events(&mut self.client(), &agent, session, first_ord, events)
    }

    fn indexed_sessions(&self) -> Result<Vec<(String, u64)>> {
        let rows = self
            .client()
            .query(
                "SELECT session_id, events FROM agentmem_search_sessions WHERE agent_id = $1",
                &[&self.agent()],
            )
            .map_err(|e| db_error("read the history index's sessions", &e))?;
        Ok(rows
            .iter()
            .map(|row| (row.get(0), row.get::<_, i64>(1) as u64))
            .collect())
    }

    fn remove_session(&mut self, session: &str) -> Result<()> {
        let agent = self.agent.clone();
        remove_session(&mut self.client(), &agent, session)
    }

    fn search(&self, text: &str, filter: &SearchFilter) -> Result<Vec<SearchHit>> {
        let mut client = self.client();
        let client = &mut *client;
        let plan = self.plan(client, text, Ranked::Events)?;
        let mut ranked: Vec<(i64, SearchHit, String, String)> = Vec::new();
        // Events with every word first; then, if too few, those with the rarer words.
        for (terms, join) in [(&plan.all, Join::All), (&plan.rare, Join::Any)] {
            if ranked.len() >= filter.limit {
                break;
            }
            let Some(asked) = self.asked(client, terms, &plan.frequencies, join, Ranked::Events)?
            else {
                continue;
            };
            let found = Self::newest_first(client, plan.newest, filter.limit, |client, lowest| {
                self.ranked_events(client, &asked, filter, lowest)
            })?;
            for (doc, hit, body) in found {
                if ranked.len() < filter.limit && !ranked.iter().any(|(seen, ..)| *seen == doc) {
                    ranked.push((doc, hit, body, asked.expression.clone()));
                }
            }
        }
        let events: Vec<(&str, u64)> = ranked
            .iter()
            .map(|(_, hit, ..)| (hit.session.as_str(), hit.ord))
            .collect();
        let around = self.rows_around(client, &events, u64::from(CONTEXT_EVENTS))?;
        let mut hits = Vec::with_capacity(ranked.len());
        for ((_, mut hit, body, expression), rows) in ranked.into_iter().zip(around) {
            hit.excerpt = excerpt_for(&body, &expression)?;
            hit.context = rows
                .iter()
                .map(|row| ContextLine {
                    event_id: row.get(1),
                    turn_id: row.get(3),
                    is_hit: row.get::<_, i64>(4) as u64 == hit.ord,
                    role: SearchRole::parse_stored(row.get(5)),
                    speaker: Some(row.get::<_, String>(8)).filter(|s| !s.is_empty()),
                    text: context_text(row.get(9)),
                })
                .collect();
            hits.push(hit);
        }
        Ok(hits)
    }

    fn candidates(
        &self,
        text: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Candidate>> {
        let mut client = self.client();
        let client = &mut *client;
        let memories: Vec<&str> = kinds
            .iter()
            .filter(|k| **k != DocKind::Event)
            .map(|k| k.as_str())
            .collect();
        let mut found = Vec::new();
        if !memories.is_empty() {
            found.extend(self.best_of(
                client,
                text,
                (Ranked::Memories, &memories),
                exclude_session,
                limit,
            )?);
        }
        if !kinds.contains(&DocKind::Event) {
            return Ok(found);
        }
        if let Some(session) = exclude_session {
            let others: bool = client
                .query_one(
                    "SELECT EXISTS(SELECT 1 FROM agentmem_search_sessions
                     WHERE agent_id = $1 AND session_id <> $2 AND session_id <> '' AND events > 0)",
                    &[&self.agent(), &session],
                )
                .map(|row| row.get(0))
                .map_err(|e| db_error("read the history index's sessions", &e))?;
            if !others {
                return Ok(found);
            }
        }
        found.extend(self.best_of(
            client,
            text,
            (Ranked::Events, &[DocKind::Event.as_str()]),
            exclude_session,
            limit,
        )?);
        Ok(found)
    }

    fn neighbours(&self, events: &[(&str, u64)], radius: u64) -> Result<Vec<Vec<Candidate>>> {
        let around = self.rows_around(&mut self.client(), events, radius)?;
        around
            .iter()
            .zip(events)
            .map(|(rows, (_, ord))| {
                rows.iter()
                    .filter(|row| row.get::<_, i64>(4) as u64 != *ord)
                    .map(|row| candidate_from_row(row, 0.0))
                    .collect()
            })
            .collect()
    }

    fn speakers_named_in(&self, text: &str) -> Result<Vec<String>> {
        let rows = self
            .client()
            .query(
                "SELECT name FROM agentmem_search_speakers WHERE agent_id = $1 ORDER BY name",
                &[&self.agent()],
            )
            .map_err(|e| db_error("read the history index's speakers", &e))?;
        Ok(query::names_in(
            text,
            rows.iter().map(|row| row.get::<_, String>(0)),
        ))
    }

    fn embed_missing(&self, embedder: &dyn Embedder) -> Result<usize> {
        let mut embedded = 0;
        loop {
            match self.embed_next_batch(embedder)? {
                0 => return Ok(embedded),
                batch => embedded += batch,
            }
        }
    }

    fn embed_next_batch(&self, embedder: &dyn Embedder) -> Result<usize> {
        let model = embedder.model();
        let mut client = self.client();
        let action = "store the documents' vectors";
        let through = self.embedded_through(&mut client, model)?;
        let batch = self.documents_after(&mut client, through)?;
        let Some(last) = batch.last().map(|d| d.0) else {
            return Ok(0);
        };
        // The connection is not held while the embedder works.
        drop(client);
        let texts: Vec<&str> = batch.iter().map(|d| d.3.as_str()).collect();
        let vectors = embed_checked(embedder, &texts)?;
        self.ensure_dimensions(model, vectors[0].len())?;
        let mut client = self.client();
        let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
        for ((doc, kind, session, _), vector) in batch.iter().zip(&vectors) {
            tx.execute(
                "INSERT INTO agentmem_search_vectors
                     (agent_id, model, doc, kind, session_id, vector)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (agent_id, model, doc) DO UPDATE SET vector = excluded.vector",
                &[&self.agent(), &model, doc, kind, session, &to_bytes(vector)],
            )
            .map_err(|e| db_error(action, &e))?;
        }
        // Never back: another process may have embedded further meanwhile.
        tx.execute(
            "INSERT INTO agentmem_search_embedded (agent_id, model, through) VALUES ($1, $2, $3)
             ON CONFLICT (agent_id, model) DO UPDATE SET through = excluded.through
             WHERE agentmem_search_embedded.through < excluded.through",
            &[&self.agent(), &model, &last],
        )
        .map_err(|e| db_error(action, &e))?;
        tx.commit().map_err(|e| db_error(action, &e))?;
        if self.pool.nearest() == Nearest::Hnsw {
            nearest::ensure_index(&mut client, self.pool.indexed(), model, vectors[0].len())?;
        }
        Ok(batch.len())
    }

    fn unembedded(
        &self,
        model: &str,
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<u64> {
        let mut client = self.client();
        let through = self.embedded_through(&mut client, model)?;
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        client
            .query_one(
                "SELECT count(*) FROM agentmem_search_docs
                 WHERE agent_id = $1 AND doc > $2 AND kind = ANY($3)
                   AND ($4::text IS NULL OR session_id <> $4)",
                &[&self.agent(), &through, &kinds, &exclude_session],
            )
            .map(|row| row.get::<_, i64>(0) as u64)
            .map_err(|e| db_error("count the documents not embedded yet", &e))
    }

    fn ensure_dimensions(&self, model: &str, dimensions: usize) -> Result<()> {
        let stored: Option<i32> = self
            .client()
            .query_opt(
                "SELECT length(vector) FROM agentmem_search_vectors
                 WHERE agent_id = $1 AND model = $2 LIMIT 1",
                &[&self.agent(), &model],
            )
            .map_err(|e| db_error("read the stored vectors' length", &e))?
            .map(|row| row.get(0));
        check_dimensions(model, dimensions, stored.map(|n| n as usize))
    }

    fn similarities(
        &self,
        model: &str,
        query: &[f32],
        kinds: &[DocKind],
        exclude_session: Option<&str>,
    ) -> Result<Similarities> {
        let query = unit(query);
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let rows = self
            .client()
            .query(
                "SELECT doc, vector FROM agentmem_search_vectors
                 WHERE agent_id = $1 AND model = $2 AND kind = ANY($3)
                   AND ($4::text IS NULL OR session_id <> $4)",
                &[&self.agent(), &model, &kinds, &exclude_session],
            )
            .map_err(|e| db_error("scan the stored vectors", &e))?;
        Ok(Similarities::from_scores(
            rows.iter()
                .map(|row| (row.get(0), dot_with_stored(&query, row.get(1))))
                .collect(),
        ))
    }

    fn nearest(
        &self,
        model: &str,
        query: &[f32],
        (kinds, exclude_session): (&[DocKind], Option<&str>),
        n: usize,
        also: &[i64],
    ) -> Result<Similarities> {
        if self.pool.nearest() == Nearest::Hnsw {
            let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            let scope = nearest::Scope {
                agent: self.agent(),
                model,
                kinds: &kinds,
                exclude_session,
            };
            let mut client = self.client();
            let vectors = self.embedded_through(&mut client, model)?;
            let indexed = self.pool.indexed();
            if let Some(found) =
                nearest::by_index(&mut client, indexed, &scope, (query, n), also, vectors)?
            {
                return Ok(found);
            }
        }
        self.similarities(model, query, kinds, exclude_session)
    }

    fn candidates_by_id(&self, docs: &[i64]) -> Result<Vec<Candidate>> {
        self.candidates_by_id_on(&mut self.client(), docs)
    }
}

/// Adds the events of `session`'s log from position `have` on (the index
/// holds the ones before), read from the events table.
fn catch_up_session(client: &mut Client, agent: &AgentId, session: &str, have: u64) -> Result<()> {
    let events = client
        .query(
            "SELECT line FROM agentmem_events
             WHERE agent_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq",
            &[
                &agent.as_str(),
                &session,
                &(have.min(i64::MAX as u64) as i64),
            ],
        )
        .map_err(|e| db_error("catch the history index up with a session", &e))?
        .iter()
        .map(|row| from_json::<Event>("read an event", row.get(0)))
        .collect::<Result<Vec<_>>>()?;
    add_events(client, agent, session, have, &events)?;
    Ok(())
}

/// Events just appended to one session, as a writer hands them over.
pub(crate) struct IndexedRun<'a> {
    pub(crate) agent: &'a AgentId,
    pub(crate) session: &'a str,
    /// The first one's position in the session's full history.
    pub(crate) first_ord: u64,
    pub(crate) events: &'a [Event],
}

/// Indexes `run`'s events the index lacks; when it holds less of the
/// session than where `run` starts (an append it never saw), everything
/// it lacks of the session, read from the log: the index always holds a
/// prefix of each session's history.
pub(crate) fn feed_session(client: &mut Client, run: &IndexedRun<'_>) -> Result<()> {
    let have: i64 = client
        .query_opt(
            "SELECT events FROM agentmem_search_sessions WHERE agent_id = $1 AND session_id = $2",
            &[&run.agent.as_str(), &run.session],
        )
        .map_err(|e| db_error("read the history index's sessions", &e))?
        .map_or(0, |row| row.get(0));
    let have = have.max(0) as u64;
    if have < run.first_ord {
        return catch_up_session(client, run.agent, run.session, have);
    }
    let skip = usize::try_from(have - run.first_ord)
        .unwrap_or(usize::MAX)
        .min(run.events.len());
    if skip < run.events.len() {
        add_events(
            client,
            run.agent,
            run.session,
            run.first_ord + skip as u64,
            &run.events[skip..],
        )?;
    }
    Ok(())
}

/// Indexes `events` of `session` (the first at position `first_ord`) that
/// the index lacks, in one transaction; returns how many it added.
fn add_events(
    client: &mut Client,
    agent: &AgentId,
    session: &str,
    first_ord: u64,
    events: &[Event],
) -> Result<usize> {
    let action = "add events to the history index";
    let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
    // Numbering takes turns per agent: documents are numbered in the order indexed.
    take_turns(&mut tx, agent, action)?;
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let present: std::collections::HashSet<String> = tx
        .query(
            "SELECT ref FROM agentmem_search_docs
             WHERE agent_id = $1 AND kind = 'event' AND session_id = $2 AND ref = ANY($3)",
            &[&agent.as_str(), &session, &ids],
        )
        .map_err(|e| db_error(action, &e))?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let fresh: Vec<(u64, &Event)> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (first_ord.saturating_add(i as u64), e))
        .filter(|(_, e)| !present.contains(&e.id) && seen.insert(e.id.as_str()))
        .collect();
    let mut next: i64 = tx
        .query_one(
            "SELECT coalesce(max(doc), 0) + 1 FROM agentmem_search_docs WHERE agent_id = $1",
            &[&agent.as_str()],
        )
        .map_err(|e| db_error(action, &e))?
        .get(0);
    let mut tokens: i64 = 0;
    let mut holding: HashMap<String, i64> = HashMap::new();
    let mut speakers = std::collections::BTreeSet::new();
    for chunk in fresh.chunks(INSERT_BATCH) {
        let rows: Vec<Document> = chunk
            .iter()
            .map(|(ord, event)| Document::of(session, *ord, event))
            .collect();
        let texts: Vec<(&str, &str)> = rows
            .iter()
            .map(|d| (d.speaker.as_str(), d.text.as_str()))
            .collect();
        let words = lexemes_of(&texts)?;
        tokens += words.iter().map(|w| i64::from(w.length)).sum::<i64>();
        for merged in words.iter().map(merged_lexemes) {
            for (lexeme, _) in merged {
                *holding.entry(lexeme).or_default() += 1;
            }
        }
        speakers.extend(
            rows.iter()
                .filter(|d| !d.speaker.is_empty())
                .map(|d| d.speaker.clone()),
        );
        insert_documents(&mut tx, agent, &rows, &words, next)?;
        next += rows.len() as i64;
    }
    tx.execute(
        "INSERT INTO agentmem_search_sessions (agent_id, session_id, events, tokens)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (agent_id, session_id) DO UPDATE
         SET events = agentmem_search_sessions.events + excluded.events,
             tokens = agentmem_search_sessions.tokens + excluded.tokens",
        &[&agent.as_str(), &session, &(fresh.len() as i64), &tokens],
    )
    .map_err(|e| db_error(action, &e))?;
    let speakers: Vec<String> = speakers.into_iter().collect();
    tx.execute(
        "INSERT INTO agentmem_search_speakers (agent_id, name)
         SELECT $1, name FROM unnest($2::text[]) AS name ON CONFLICT DO NOTHING",
        &[&agent.as_str(), &speakers],
    )
    .map_err(|e| db_error(action, &e))?;
    let mut holding: Vec<(String, i64)> = holding.into_iter().collect();
    holding.sort_unstable();
    let (lexemes, counts): (Vec<String>, Vec<i64>) = holding.into_iter().unzip();
    tx.execute(
        "INSERT INTO agentmem_search_terms (agent_id, lexeme, docs)
         SELECT $1, lexeme, docs FROM unnest($2::text[], $3::bigint[]) AS t(lexeme, docs)
         ON CONFLICT (agent_id, lexeme) DO UPDATE
         SET docs = agentmem_search_terms.docs + excluded.docs",
        &[&agent.as_str(), &lexemes, &counts],
    )
    .map_err(|e| db_error(action, &e))?;
    tx.commit().map_err(|e| db_error(action, &e))?;
    Ok(fresh.len())
}

/// Waits for the agent's index to be free of other writers of it (until
/// the transaction ends): documents are numbered, and term statistics
/// counted, one transaction at a time.
fn take_turns(tx: &mut postgres::Transaction<'_>, agent: &AgentId, action: &str) -> Result<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&format!("agentmem search {}", agent.as_str())],
    )
    .map(|_| ())
    .map_err(|e| db_error(action, &e))
}

/// Removes `session`'s events from `agent`'s index, and them from its term statistics.
fn remove_session(client: &mut Client, agent: &AgentId, session: &str) -> Result<()> {
    let action = "remove a deleted session from the history index";
    let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
    take_turns(&mut tx, agent, action)?;
    for statement in [
        "WITH gone AS (
             DELETE FROM agentmem_search_docs
             WHERE agent_id = $1 AND session_id = $2 AND kind = 'event'
             RETURNING lexemes),
         held AS (
             SELECT u.lexeme, count(*) AS docs FROM gone, unnest(gone.lexemes) AS u
             GROUP BY u.lexeme)
         UPDATE agentmem_search_terms t SET docs = t.docs - held.docs
         FROM held WHERE t.agent_id = $1 AND t.lexeme = held.lexeme",
        "DELETE FROM agentmem_search_terms WHERE agent_id = $1 AND docs <= 0 AND $2::text IS NOT NULL",
        "DELETE FROM agentmem_search_sessions WHERE agent_id = $1 AND session_id = $2",
    ] {
        tx.execute(statement, &[&agent.as_str(), &session])
            .map_err(|e| db_error(action, &e))?;
    }
    tx.commit().map_err(|e| db_error(action, &e))
}

/// Replaces the index's copy of `agent`'s facts and episodes when they
/// changed since it was made (see [`MEMORY_STAMP`]), in one transaction.
fn sync_memories(client: &mut Client, agent: &AgentId) -> Result<()> {
    let action = "index the agent's facts and episodes";
    let stamp: String = client
        .query_one(MEMORY_STAMP, &[&agent.as_str()])
        .map_err(|e| db_error(action, &e))?
        .get(0);
    let indexed: Option<String> = client
        .query_opt(
            "SELECT stamp FROM agentmem_search_memories WHERE agent_id = $1",
            &[&agent.as_str()],
        )
        .map_err(|e| db_error(action, &e))?
        .map(|row| row.get(0));
    if indexed.as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    let memories = memory_documents(&read_facts(client, agent)?, read_episodes(client, agent)?);
    let rows: Vec<Document> = memories.iter().map(Document::of_memory).collect();
    let texts: Vec<(&str, &str)> = rows.iter().map(|d| ("", d.text.as_str())).collect();
    let words = lexemes_of(&texts)?;
    let tokens: i64 = words.iter().map(|w| i64::from(w.length)).sum();
    let mut tx = client.transaction().map_err(|e| db_error(action, &e))?;
    take_turns(&mut tx, agent, action)?;
    tx.execute(
        "DELETE FROM agentmem_search_docs WHERE agent_id = $1 AND kind <> 'event'",
        &[&agent.as_str()],
    )
    .map_err(|e| db_error(action, &e))?;
    let next: i64 = tx
        .query_one(
            "SELECT coalesce(max(doc), 0) + 1 FROM agentmem_search_docs WHERE agent_id = $1",
            &[&agent.as_str()],
        )
        .map_err(|e| db_error(action, &e))?
        .get(0);
    let batches = rows.chunks(INSERT_BATCH).zip(words.chunks(INSERT_BATCH));
    for (i, (chunk, words)) in batches.enumerate() {
        let first = next + (i * INSERT_BATCH) as i64;
        insert_documents(&mut tx, agent, chunk, words, first)?;
    }
    tx.execute(
        "INSERT INTO agentmem_search_memories (agent_id, stamp, docs, tokens)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (agent_id) DO UPDATE
         SET stamp = excluded.stamp, docs = excluded.docs, tokens = excluded.tokens",
        &[&agent.as_str(), &stamp, &(rows.len() as i64), &tokens],
    )
    .map_err(|e| db_error(action, &e))?;
    tx.commit().map_err(|e| db_error(action, &e))
}

/// A document as the index keeps it: an event, a fact or an episode.
struct Document {
    kind: DocKind,
    session: String,
    ord: i64,
    reference: String,
    turn: String,
    role: &'static str,
    ts: f64,
    salience: f64,
    speaker: String,
    text: String,
}

impl Document {
    /// `event`, at position `ord` of `session`'s full history.
    fn of(session: &str, ord: u64, event: &Event) -> Document {
        Document {
            kind: DocKind::Event,
            session: session.to_owned(),
            ord: ord.min(i64::MAX as u64) as i64,
            reference: event.id.clone(),
            turn: event.turn_id.clone(),
            role: SearchRole::of(event.trace_type).as_str(),
            ts: event.ts,
            salience: EVENT_SALIENCE,
            speaker: speaker(event).unwrap_or_default(),
            text: indexed_text(event),
        }
    }

    /// A fact or an episode, as the files index keeps it.
    fn of_memory(memory: &MemoryDoc) -> Document {
        let role = match memory.kind {
            DocKind::Fact => SearchRole::Fact,
            DocKind::Episode | DocKind::Event => SearchRole::Episode,
        };
        Document {
            kind: memory.kind,
            session: memory.session.clone(),
            ord: 0,
            reference: memory.id.clone(),
            turn: memory.turns.clone(),
            role: role.as_str(),
            ts: memory.ts,
            salience: memory.salience,
            speaker: String::new(),
            text: memory.text.clone(),
        }
    }
}

/// Inserts `rows` (with their `words`) numbered from `first_doc`, in one statement.
fn insert_documents(
    client: &mut impl GenericClient,
    agent: &AgentId,
    rows: &[Document],
    words: &[Lexemes],
    first_doc: i64,
) -> Result<()> {
    let docs: Vec<i64> = (first_doc..).take(rows.len()).collect();
    let kinds: Vec<&str> = rows.iter().map(|d| d.kind.as_str()).collect();
    let sessions: Vec<&str> = rows.iter().map(|d| d.session.as_str()).collect();
    let saliences: Vec<f64> = rows.iter().map(|d| d.salience).collect();
    let refs: Vec<&str> = rows.iter().map(|d| d.reference.as_str()).collect();
    let ords: Vec<i64> = rows.iter().map(|d| d.ord).collect();
    let turns: Vec<&str> = rows.iter().map(|d| d.turn.as_str()).collect();
    let roles: Vec<&str> = rows.iter().map(|d| d.role).collect();
    let times: Vec<f64> = rows.iter().map(|d| d.ts).collect();
    let speakers: Vec<&str> = rows.iter().map(|d| d.speaker.as_str()).collect();
    let texts: Vec<&str> = rows.iter().map(|d| d.text.as_str()).collect();
    let vectors: Vec<String> = words.iter().map(tsvector).collect();
    let lengths: Vec<i32> = words.iter().map(|w| w.length as i32).collect();
    let params: [&(dyn ToSql + Sync); 14] = [
        &agent.as_str(),
        &kinds,
        &docs,
        &refs,
        &ords,
        &turns,
        &roles,
        &times,
        &speakers,
        &texts,
        &vectors,
        &lengths,
        &sessions,
        &saliences,
    ];
    client
        .execute(
            "INSERT INTO agentmem_search_docs
                 (agent_id, doc, kind, ref, session_id, ord, turn, role, ts, salience,
                  speaker, text, lexemes, length)
             SELECT $1, doc, kind, ref, session_id, ord, turn, role, ts, salience, speaker, text,
                    lexemes::tsvector, length
             FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[],
                         $7::text[], $8::float8[], $9::text[], $10::text[], $11::text[],
                         $12::int[], $13::text[], $14::float8[])
                  AS e(kind, doc, ref, ord, turn, role, ts, speaker, text, lexemes, length,
                       session_id, salience)",
            &params,
        )
        .map_err(|e| db_error("add documents to the history index", &e))?;
    Ok(())
}

/// A document's distinct lexemes as a `tsvector` keeps them (cut to what
/// it holds, the counts of those cut alike added up), with their counts.
fn merged_lexemes(words: &Lexemes) -> Vec<(String, u32)> {
    if words
        .counts
        .iter()
        .all(|(l, _)| l.len() <= MAX_LEXEME_BYTES)
    {
        return words.counts.clone();
    }
    let mut merged: Vec<(String, u32)> = Vec::with_capacity(words.counts.len());
    for (lexeme, count) in &words.counts {
        let lexeme = cut_lexeme(lexeme);
        match merged.iter_mut().find(|(seen, _)| *seen == lexeme) {
            Some(entry) => entry.1 += count,
            None => merged.push((lexeme, *count)),
        }
    }
    merged
}

/// A document's words as a `tsvector` literal: each lexeme with one
/// position per occurrence (at most [`MAX_POSITIONS`]).
fn tsvector(words: &Lexemes) -> String {
    let mut out = String::new();
    for (lexeme, count) in merged_lexemes(words) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&quoted(&lexeme));
        out.push(':');
        let positions: Vec<String> = (1..=count.min(MAX_POSITIONS))
            .map(|p| p.to_string())
            .collect();
        out.push_str(&positions.join(","));
    }
    out
}

/// `terms` as a `tsquery`: each term's lexemes together, the terms joined
/// by `join`; `None` when no term has a lexeme.
fn tsquery(terms: &[Term], join: Join) -> Option<String> {
    let parts: Vec<String> = terms
        .iter()
        .filter(|t| !t.lexemes.is_empty())
        .map(|t| {
            let lexemes: Vec<String> = t.lexemes.iter().map(|l| quoted(l)).collect();
            format!("({})", lexemes.join(" & "))
        })
        .collect();
    let operator = match join {
        Join::All => " & ",
        Join::Any => " | ",
    };
    (!parts.is_empty()).then(|| parts.join(operator))
}

/// A lexeme quoted for a `tsvector` or `tsquery` literal.
fn quoted(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

/// `lexeme` cut to what a `tsvector` holds, on a char boundary.
fn cut_lexeme(lexeme: &str) -> String {
    let mut end = lexeme.len().min(MAX_LEXEME_BYTES);
    while !lexeme.is_char_boundary(end) {
        end -= 1;
    }
    lexeme[..end].to_owned()
}

/// A candidate from a row of [`CANDIDATE_COLUMNS`], scored `bm25`.
fn candidate_from_row(row: &Row, bm25: f64) -> Result<Candidate> {
    Ok(Candidate {
        doc: row.get(10),
        kind: DocKind::parse(row.get(0)),
        reference: row.get(1),
        session: row.get(2),
        turn_id: row.get(3),
        ord: row.get::<_, i64>(4) as u64,
        role: SearchRole::parse_stored(row.get(5)),
        ts: row.get(6),
        salience: row.get(7),
        speaker: Some(row.get::<_, String>(8)).filter(|s| !s.is_empty()),
        text: row.get(9),
        bm25,
    })
}

/// A position or a count as the database's `bigint` (the largest when over).
fn as_position(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexemes_become_tsvector_positions_and_quoted_queries() {
        let words = Lexemes {
            counts: vec![("it's".into(), 2), ("research".into(), 300)],
            length: 302,
        };
        let literal = tsvector(&words);
        assert!(literal.starts_with("'it''s':1,2 'research':1,2,3,"));
        assert!(literal.ends_with(",256"));
        let terms = [
            Term {
                word: "a".into(),
                lexemes: vec!["a".into()],
            },
            Term {
                word: "…".into(),
                lexemes: vec![],
            },
            Term {
                word: "b\\c".into(),
                lexemes: vec!["b".into(), "c\\".into()],
            },
        ];
        assert_eq!(
            tsquery(&terms, Join::Any).unwrap(),
            "('a') | ('b' & 'c\\\\')"
        );
        assert!(tsquery(&terms[1..2], Join::All).is_none());
    }

    #[test]
    fn tsvector_text_gives_each_lexeme_and_its_term_frequency() {
        assert_eq!(
            term_frequencies(r"'it''s':1A,2A 'c\\':7A 'bare' 'x':3A"),
            [
                ("it's".to_owned(), 2),
                ("c\\".to_owned(), 1),
                ("bare".to_owned(), 0),
                ("x".to_owned(), 1)
            ]
        );
        assert!(term_frequencies("").is_empty());
    }

    #[test]
    fn bm25_sums_each_query_lexeme_as_fts5_does() {
        let asked = Asked {
            expression: String::new(),
            tsquery: String::new(),
            lexemes: vec!["a".into(), "b".into()],
            idfs: vec![2.0, 0.5],
            avgdl: 10.0,
        };
        let norm = 1.2 * (1.0 - 0.75 + 0.75 * 20.0 / 10.0);
        let expected = 2.0 * (3.0 * 2.2) / (3.0 + norm) + 0.5 * 2.2 / (1.0 + norm);
        let score = asked.bm25(20.0, "'a':1A,2A,3A 'b':4A 'other':5A");
        assert!((score - expected).abs() < 1e-12, "{score} vs {expected}");
        assert_eq!(asked.bm25(20.0, ""), 0.0);
    }
}
