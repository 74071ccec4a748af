//! [`PgStorage`]: the store's side of the seam — connections, sessions,
//! reads, forks and deletes.

use std::sync::{Mutex, MutexGuard};

use agentmem::config::DatabaseUrl;
use agentmem::files::jsonl::encode_lines;
use agentmem::files::meta::SessionMeta;
use agentmem::files::snapshot::Snapshot;
use agentmem::redact::RedactionPolicy;
use agentmem::storage::search::SearchIndex;
use agentmem::storage::{Backend, EventCount, EventRange, SessionWriter, Storage};
use agentmem::{AgentId, Durability, Error, Event, Result, SessionId};
use postgres::{Client, GenericClient, NoTls};

use crate::feed::Feeder;
use crate::pool::{Connections, Nearest};
use crate::search::PgSearch;
use crate::writer::PgWriter;
use crate::{data_error, db_error, migrations};

/// Sessions in a PostgreSQL database (see the crate docs).
pub struct PgStorage {
    pub(crate) config: postgres::Config,
    pub(crate) url: DatabaseUrl,
    redaction: RedactionPolicy,
    /// What a writer's commit waits for (see [`PgStorage::with_durability`]).
    durability: Durability,
    /// Where reads, creations, forks and deletes go; writers have their own.
    reader: Mutex<Client>,
    /// Where changes of agents' facts run their transactions, connected
    /// the first time one does (see [`crate::memory`]).
    pub(crate) memory: Mutex<Option<Client>>,
    /// Where history indexes search, kept open between searches.
    search: std::sync::Arc<Connections>,
    /// What indexes the writers' appends as they commit, started by the first writer.
    feeder: std::sync::OnceLock<std::sync::Arc<Feeder>>,
}

impl std::fmt::Debug for PgStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStorage")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl PgStorage {
    /// Connects to the database at `url` and brings its schema up to date.
    /// Titles are redacted by `redaction`, as the files backend does.
    pub fn connect(url: &DatabaseUrl, redaction: RedactionPolicy) -> Result<PgStorage> {
        let mut config: postgres::Config =
            url.expose()
                .parse()
                .map_err(|e: postgres::Error| Error::Config {
                    path: url.masked(),
                    message: format!("not a PostgreSQL URL: {e}"),
                })?;
        config
            .connect_timeout(crate::CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(crate::KEEPALIVE_IDLE)
            .keepalives_interval(crate::KEEPALIVE_INTERVAL)
            .keepalives_retries(crate::KEEPALIVE_COUNT)
            .application_name(&holder_name());
        let mut reader = connect(&config, url)?;
        migrations::migrate(&mut reader)?;
        let nearest = match migrations::ensure_vector_search(&mut reader)? {
            true => Nearest::Hnsw,
            false => Nearest::ExactScan,
        };
        let search = std::sync::Arc::new(Connections::new(config.clone(), url.clone(), nearest));
        Ok(PgStorage {
            config,
            url: url.clone(),
            redaction,
            durability: Durability::default(),
            reader: Mutex::new(reader),
            memory: Mutex::new(None),
            search,
            feeder: std::sync::OnceLock::new(),
        })
    }

    /// Writers opened from now on commit with `durability`, as PostgreSQL's
    /// `synchronous_commit` on their connection: `always` and `batch` set it
    /// `on` (an append returns once its transaction is flushed to the
    /// server's write-ahead log on disk; one transaction holds the whole
    /// batch, so a batch cut short leaves none of it, in either mode);
    /// `os` sets it `off` (an append returns before that flush: it survives
    /// this process's crash, but a crash of the database server or its host
    /// may lose the last appends, up to three times the server's
    /// `wal_writer_delay`, 600 ms by default; never half a batch).
    pub fn with_durability(mut self, durability: Durability) -> PgStorage {
        self.durability = durability;
        self
    }

    /// Bytes the history index takes in the database (every agent's):
    /// its tables, their indexes and their TOAST.
    pub fn search_index_bytes(&self) -> Result<i64> {
        self.reader()
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE c.relkind = 'r' AND n.nspname = current_schema()
                   AND c.relname LIKE 'agentmem\\_search\\_%'",
                &[],
            )
            .map(|row| row.get(0))
            .map_err(|e| db_error("measure the history index", &e))
    }

    /// The database, its password masked.
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }

    pub(crate) fn reader(&self) -> MutexGuard<'_, Client> {
        // A panic mid-read leaves nothing half-done on the connection.
        self.reader.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A writer for `id`, on a connection of its own holding the session's
    /// lock, or the error a second writer gets.
    fn writer(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>> {
        let mut client = connect(&self.config, &self.url)?;
        client
            .batch_execute(&format!(
                "SET tcp_keepalives_idle = {}; SET tcp_keepalives_interval = {}; \
                 SET tcp_keepalives_count = {}; SET tcp_user_timeout = {}; \
                 SET synchronous_commit = {}",
                crate::KEEPALIVE_IDLE.as_secs(),
                crate::KEEPALIVE_INTERVAL.as_secs(),
                crate::KEEPALIVE_COUNT,
                crate::USER_TIMEOUT.as_millis(),
                synchronous_commit(self.durability),
            ))
            .map_err(|e| db_error("set up the writer connection", &e))?;
        let key = lock_key(agent, id);
        if !try_lock(&mut client, &key)? {
            return Err(locked_error(&mut client, id, &key));
        }
        let feeder = self
            .feeder
            .get_or_init(|| std::sync::Arc::new(Feeder::start(self.search.clone())))
            .clone();
        let writer = PgWriter::open(client, agent.clone(), id.clone(), self.redaction, feeder)?;
        Ok(Box::new(writer))
    }
}

/// The `synchronous_commit` setting of a writer with `durability`.
fn synchronous_commit(durability: Durability) -> &'static str {
    match durability {
        Durability::Always | Durability::Batch => "on",
        Durability::Os => "off",
    }
}

/// Connects with `config`; errors name the database by its masked URL.
pub(crate) fn connect(config: &postgres::Config, url: &DatabaseUrl) -> Result<Client> {
    config
        .connect(NoTls)
        .map_err(|e| db_error(format!("connect to {}", url.masked()), &e))
}

/// How a connection names itself to the server (`pg_stat_activity`), so a
/// second writer learns who holds a lock: this process and its host.
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let host = host.trim();
    let host = if host.is_empty() {
        "unknown-host"
    } else {
        host
    };
    format!("agentmem {} on {host}", std::process::id())
}

/// The advisory lock key of a session: one 64-bit number from its agent and id.
pub(crate) fn lock_key(agent: &AgentId, id: &SessionId) -> String {
    format!("agentmem session {}/{}", agent.as_str(), id.as_str())
}

/// Takes the session's lock on `client` if it is free; says whether it did.
pub(crate) fn try_lock(client: &mut impl GenericClient, key: &str) -> Result<bool> {
    client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
            &[&key],
        )
        .map(|row| row.get(0))
        .map_err(|e| db_error("take a session's writer lock", &e))
}

/// The error a second writer gets: the same kind as on files, naming the
/// holder's process and host when the server tells.
pub(crate) fn locked_error(client: &mut impl GenericClient, id: &SessionId, key: &str) -> Error {
    let holder = client
        .query_opt(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
               AND l.classid::bigint = (hashtextextended($1, 0) >> 32) & 4294967295 \
               AND l.objid::bigint = hashtextextended($1, 0) & 4294967295",
            &[&key],
        )
        .ok()
        .flatten()
        .map(|row| row.get::<_, String>(0));
    let pid = holder
        .as_deref()
        .and_then(|name| name.strip_prefix("agentmem "))
        .map_or_else(|| "unknown (another host)".to_owned(), str::to_owned);
    Error::SessionLocked {
        session: id.to_string(),
        pid,
    }
}

impl Storage for PgStorage {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn memory(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn agentmem::MemoryStorage> {
        self
    }

    fn search_index(&self, agent: &AgentId) -> Result<Box<dyn SearchIndex>> {
        Ok(Box::new(PgSearch::open(&self.search, agent.clone(), None)?))
    }

    fn search_index_as_fed(&self, agent: &AgentId) -> Result<Box<dyn SearchIndex>> {
        let feeder = self.feeder.get().map(|f| &**f);
        Ok(Box::new(PgSearch::open(
            &self.search,
            agent.clone(),
            feeder,
        )?))
    }

    fn create_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>> {
        let meta = SessionMeta::new_session(agent, id);
        let inserted = self
            .reader()
            .execute(
                "INSERT INTO agentmem_sessions (agent_id, session_id, meta) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING",
                &[&agent.as_str(), &id.as_str(), &to_json(&meta)],
            )
            .map_err(|e| db_error("create a session", &e))?;
        if inserted == 0 {
            return Err(Error::SessionExists {
                agent: agent.to_string(),
                session: id.to_string(),
            });
        }
        self.writer(agent, id)
    }

    fn lock_session(&self, agent: &AgentId, id: &SessionId) -> Result<Box<dyn SessionWriter>> {
        self.writer(agent, id)
    }

    fn session_meta(&self, agent: &AgentId, id: &SessionId) -> Result<SessionMeta> {
        read_meta(&mut *self.reader(), agent, id)
    }

    fn list_agents(&self) -> Result<Vec<AgentId>> {
        let rows = self
            .reader()
            .query(
                "SELECT DISTINCT agent_id FROM agentmem_sessions ORDER BY agent_id",
                &[],
            )
            .map_err(|e| db_error("list agents", &e))?;
        rows.iter()
            .map(|row| AgentId::new(row.get::<_, String>(0)))
            .collect()
    }

    fn list_sessions(&self, agent: &AgentId) -> Result<Vec<SessionMeta>> {
        let rows = self
            .reader()
            .query(
                "SELECT meta FROM agentmem_sessions WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .map_err(|e| db_error("list sessions", &e))?;
        let mut sessions = rows
            .iter()
            .map(|row| from_json::<SessionMeta>("read a session's description", row.get(0)))
            .collect::<Result<Vec<_>>>()?;
        sessions.sort_by(|a, b| {
            b.updated
                .total_cmp(&a.updated)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(sessions)
    }

    fn read_events(
        &self,
        agent: &AgentId,
        id: &SessionId,
        range: EventRange,
    ) -> Result<Vec<Event>> {
        let mut client = self.reader();
        let mut tx = one_moment(&mut client, "read a session's events")?;
        let count = read_counts(&mut tx, agent, id)?;
        let positions = range.positions(count.active);
        read_lines(
            &mut tx,
            agent,
            id,
            Rows::Active {
                offset: positions.start,
                limit: positions.len(),
            },
        )
    }

    fn event_count(&self, agent: &AgentId, id: &SessionId) -> Result<EventCount> {
        read_counts(&mut *self.reader(), agent, id)
    }

    fn archived_events(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>> {
        let mut client = self.reader();
        read_meta(&mut *client, agent, id)?;
        read_lines(&mut *client, agent, id, Rows::Archived)
    }

    fn full_history(&self, agent: &AgentId, id: &SessionId) -> Result<Vec<Event>> {
        let mut client = self.reader();
        let mut tx = one_moment(&mut client, "read a session's history")?;
        read_meta(&mut tx, agent, id)?;
        let mut history = read_lines(&mut tx, agent, id, Rows::Archived)?;
        history.extend(read_lines(&mut tx, agent, id, Rows::all_active())?);
        Ok(history)
    }

    fn snapshot(&self, agent: &AgentId, id: &SessionId) -> Result<Option<Snapshot>> {
        read_snapshot(&mut *self.reader(), agent, id)
    }

    fn fork_session(
        &self,
        agent: &AgentId,
        source: &SessionId,
        at_turn: Option<&str>,
        new_id: &SessionId,
    ) -> Result<SessionMeta> {
        let mut client = self.reader();
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .map_err(|e| db_error("fork a session", &e))?;
        let active = read_lines(&mut tx, agent, source, Rows::all_active())?;
        let archived = read_lines(&mut tx, agent, source, Rows::Archived)?;
        let snapshot = read_snapshot(&mut tx, agent, source)?;
        let plan = agentmem::storage::fork::plan(source, &active, archived, snapshot, at_turn)?;
        let meta = plan.meta(agent, source, new_id, self.redaction);
        let snapshot = plan.snapshot.as_ref().map(to_json);
        let total = (plan.archive.len() + plan.active.len()) as i64;
        let inserted = tx
            .execute(
                "INSERT INTO agentmem_sessions (agent_id, session_id, meta, snapshot, next_seq) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[
                    &agent.as_str(),
                    &new_id.as_str(),
                    &to_json(&meta),
                    &snapshot,
                    &(total + 1),
                ],
            )
            .map_err(|e| db_error("fork a session", &e))?;
        if inserted == 0 {
            return Err(Error::SessionExists {
                agent: agent.to_string(),
                session: new_id.to_string(),
            });
        }
        insert_events(&mut tx, agent, new_id, 1, &plan.archive, Archived::Yes)?;
        let next = plan.archive.len() as i64 + 1;
        insert_events(&mut tx, agent, new_id, next, &plan.active, Archived::No)?;
        crate::memory::copy_session_schema(&mut tx, agent, source, new_id)?;
        tx.commit().map_err(|e| db_error("fork a session", &e))?;
        Ok(meta)
    }

    fn delete_session(&self, agent: &AgentId, id: &SessionId) -> Result<()> {
        let mut client = self.reader();
        read_meta(&mut *client, agent, id)?;
        let key = lock_key(agent, id);
        if !try_lock(&mut *client, &key)? {
            return Err(locked_error(&mut *client, id, &key));
        }
        let deleted = client
            .execute(
                "DELETE FROM agentmem_sessions WHERE agent_id = $1 AND session_id = $2",
                &[&agent.as_str(), &id.as_str()],
            )
            .map_err(|e| db_error("delete a session", &e));
        let unlocked = client
            .execute(
                "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                &[&key],
            )
            .map_err(|e| db_error("release a session's lock", &e));
        deleted.and(unlocked).map(|_| ())
    }
}

/// A read-only transaction that sees the database as it was when it began.
fn one_moment<'a>(client: &'a mut Client, action: &str) -> Result<postgres::Transaction<'a>> {
    client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| db_error(action, &e))
}

/// Whether inserted events go to the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Archived {
    Yes,
    No,
}

/// Which of a session's event rows to read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rows {
    /// Active rows from position `offset`, at most `limit`.
    Active { offset: usize, limit: usize },
    /// Every archived row.
    Archived,
}

impl Rows {
    pub(crate) fn all_active() -> Rows {
        Rows::Active {
            offset: 0,
            limit: usize::MAX,
        }
    }
}

/// The statement inserting events as a session's rows: `$1` agent, `$2`
/// session, `$3` archived, and the rows' columns as arrays ([`EventRows`]):
/// `$4` seqs, `$5` event ids, `$6` lines. One round trip however many.
pub(crate) const INSERT_EVENTS: &str =
    "INSERT INTO agentmem_events (agent_id, session_id, seq, event_id, archived, line) \
     SELECT $1, $2, s, i, $3, l FROM unnest($4::bigint[], $5::text[], $6::text[]) AS t(s, i, l)";

/// Events as the columns of their rows, numbered from a first seq.
pub(crate) struct EventRows {
    pub(crate) seqs: Vec<i64>,
    pub(crate) ids: Vec<String>,
    pub(crate) lines: Vec<String>,
}

impl EventRows {
    pub(crate) fn new(first_seq: i64, events: &[Event]) -> EventRows {
        EventRows {
            seqs: (first_seq..).take(events.len()).collect(),
            ids: events.iter().map(|e| e.id.clone()).collect(),
            lines: events.iter().map(line_of).collect(),
        }
    }
}

/// Inserts `events` as the session's rows from `first_seq` on.
pub(crate) fn insert_events(
    client: &mut impl GenericClient,
    agent: &AgentId,
    id: &SessionId,
    first_seq: i64,
    events: &[Event],
    archived: Archived,
) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let rows = EventRows::new(first_seq, events);
    client
        .execute(
            INSERT_EVENTS,
            &[
                &agent.as_str(),
                &id.as_str(),
                &(archived == Archived::Yes),
                &rows.seqs,
                &rows.ids,
                &rows.lines,
            ],
        )
        .map_err(|e| db_error("store events", &e))?;
    Ok(())
}

/// The event as the files backend's log line (without its newline): every
/// field, unknown ones and exact numbers included, kept as written.
fn line_of(event: &Event) -> String {
    let mut line = encode_lines([event]);
    line.pop();
    String::from_utf8(line).expect("events encode as UTF-8")
}

pub(crate) fn read_lines(
    client: &mut impl GenericClient,
    agent: &AgentId,
    id: &SessionId,
    rows: Rows,
) -> Result<Vec<Event>> {
    let (archived, offset, limit) = match rows {
        Rows::Active { offset, limit } => (false, offset, limit),
        Rows::Archived => (true, 0, usize::MAX),
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(
            "SELECT line FROM agentmem_events \
             WHERE agent_id = $1 AND session_id = $2 AND archived = $3 \
             ORDER BY seq OFFSET $4 LIMIT $5",
            &[
                &agent.as_str(),
                &id.as_str(),
                &archived,
                &(offset as i64),
                &limit,
            ],
        )
        .map_err(|e| db_error("read a session's events", &e))?;
    rows.iter()
        .map(|row| from_json::<Event>("read an event", row.get(0)))
        .collect()
}

pub(crate) fn read_meta(
    client: &mut impl GenericClient,
    agent: &AgentId,
    id: &SessionId,
) -> Result<SessionMeta> {
    let row = client
        .query_opt(
            "SELECT meta FROM agentmem_sessions WHERE agent_id = $1 AND session_id = $2",
            &[&agent.as_str(), &id.as_str()],
        )
        .map_err(|e| db_error("read a session's description", &e))?;
    match row {
        Some(row) => from_json("read a session's description", row.get(0)),
        None => Err(Error::SessionNotFound {
            agent: agent.to_string(),
            session: id.to_string(),
        }),
    }
}

fn read_snapshot(
    client: &mut impl GenericClient,
    agent: &AgentId,
    id: &SessionId,
) -> Result<Option<Snapshot>> {
    let row = client
        .query_opt(
            "SELECT snapshot FROM agentmem_sessions WHERE agent_id = $1 AND session_id = $2",
            &[&agent.as_str(), &id.as_str()],
        )
        .map_err(|e| db_error("read a session's snapshot", &e))?;
    match row {
        Some(row) => row
            .get::<_, Option<String>>(0)
            .map(|text| from_json("read a session's snapshot", text))
            .transpose(),
        None => Err(Error::SessionNotFound {
            agent: agent.to_string(),
            session: id.to_string(),
        }),
    }
}

fn read_counts(
    client: &mut impl GenericClient,
    agent: &AgentId,
    id: &SessionId,
) -> Result<EventCount> {
    read_meta(client, agent, id)?;
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE NOT archived), count(*) FILTER (WHERE archived) \
             FROM agentmem_events WHERE agent_id = $1 AND session_id = $2",
            &[&agent.as_str(), &id.as_str()],
        )
        .map_err(|e| db_error("count a session's events", &e))?;
    Ok(EventCount {
        active: row.get::<_, i64>(0) as usize,
        archived: row.get::<_, i64>(1) as usize,
    })
}

pub(crate) fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("descriptions and snapshots serialize")
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(action: &str, text: String) -> Result<T> {
    serde_json::from_str(&text).map_err(|e| data_error(action, e))
}
