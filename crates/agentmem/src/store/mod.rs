//! The store: one data directory holding agents and their sessions; it
//! opens, creates, lists, forks and deletes sessions, and reaches each
//! agent's memories and history index. Its files' formats are in
//! [`crate::files`].

use std::fs;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::base::error::{Error, IoContext, Result};
use crate::base::event::Event;
use crate::base::id::{AgentId, SessionId};
use crate::config::{Config, CONFIG_FILE};
use crate::files::jsonl;
use crate::files::jsonl::Durability;
use crate::files::meta::SessionMeta;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;
use crate::memory::recall::{Reranker, SharedReranker};
use crate::pipeline::strategy::ContextSettingsLayer;
use crate::search::vectors::{Embedder, SharedEmbedder};
use crate::search::{EmbeddingStatus, HistoryIndex, VectorFeed};
use crate::session::{Access, ContextSettings, Session};
use crate::storage::search::SearchIndex;
use crate::storage::Backend;
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelRegistry;
use vector_feeds::{FeedKey, VectorFeeds};

mod files_memory;
mod files_storage;
mod on_seam;
mod vector_feeds;
pub use files_memory::FilesMemory;
pub use files_storage::FilesStorage;

/// A data directory holding agents and their sessions.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    durability: Durability,
    config: Config,
    registry: Arc<ModelRegistry>,
    embedder: Option<SharedEmbedder>,
    /// The background embedders of the agents' indexes, shared by clones.
    vector_feeds: Option<Arc<VectorFeeds>>,
    reranker: Option<SharedReranker>,
}

/// Sessions from which a catch-up looks their logs up on two threads.
const LOOKUPS_WORTH_A_THREAD: usize = 512;

impl Store {
    /// A store rooted at `root` with default settings; directories are
    /// created when a session is.
    pub fn open(root: impl AsRef<Path>, durability: Durability) -> Result<Store> {
        let mut config = Config::default();
        config.storage.durability = durability;
        Ok(Store::with_config(root, config))
    }

    /// A store rooted at `root` with `config` (see [`Config::load`]).
    pub fn with_config(root: impl AsRef<Path>, config: Config) -> Store {
        Store {
            root: root.as_ref().to_path_buf(),
            durability: config.storage.durability,
            registry: Arc::new(ModelRegistry::builtin().with_overrides(config.models.clone())),
            config,
            embedder: None,
            vector_feeds: None,
            reranker: None,
        }
    }

    /// The same store, whose recall adds `embedder`'s vector score to BM25
    /// (see `crate::search::vectors`). Documents are embedded in the
    /// background as they are indexed, one worker per agent index, never
    /// on ingest's or recall's path; [`Store::embed_pending`] waits for them.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder + Send + Sync>) -> Store {
        let embedder = SharedEmbedder(embedder);
        self.vector_feeds = Some(Arc::new(VectorFeeds::new(embedder.clone())));
        self.embedder = Some(embedder);
        self
    }

    /// The background embedder of `agent`'s index on files, started if it
    /// is not running; `None` without an embedder.
    fn files_feed(&self, agent: &AgentId) -> Option<Arc<VectorFeed>> {
        let dir = self.agent_dir(agent);
        self.vector_feeds.as_ref().map(|feeds| {
            feeds.feed(FeedKey::Files(dir.clone()), || {
                Box::new(move || {
                    let index: Box<dyn SearchIndex> = Box::new(HistoryIndex::open(&dir)?);
                    Ok(index)
                })
            })
        })
    }

    /// The background embedder of `agent`'s index in `storage`.
    fn storage_feed(
        &self,
        storage: &Arc<dyn crate::Storage>,
        agent: &AgentId,
    ) -> Option<Arc<VectorFeed>> {
        match storage.backend() {
            Backend::Files => self.files_feed(agent),
            backend @ Backend::Postgres => self.vector_feeds.as_ref().map(|feeds| {
                feeds.feed(FeedKey::Backend(backend.name(), agent.clone()), || {
                    let (storage, agent) = (Arc::clone(storage), agent.clone());
                    Box::new(move || storage.search_index(&agent))
                })
            }),
        }
    }

    /// Waits until every document of `agent`'s history has a vector of
    /// this store's embedder (at once without one), as an evaluation wants
    /// before it scores; fails with [`Error::EmbeddingBehind`] when the
    /// embedder fails meanwhile (what it embedded is kept).
    pub fn embed_pending(&self, agent: &AgentId) -> Result<()> {
        let Some(feed) = self.files_feed(agent) else {
            return Ok(());
        };
        // The index caught up with the logs and the memory files first: it
        // holds every event, fact and episode a recall can find.
        let mut index = self.history_index(agent)?;
        crate::memory::recall::refresh_memories(&mut index, &self.agent_dir(agent))?;
        drop(index);
        feed.wait_caught_up()
    }

    /// [`Store::embed_pending`] for `agent`'s history kept in `storage`.
    pub fn embed_pending_in(
        &self,
        storage: &Arc<dyn crate::Storage>,
        agent: &AgentId,
    ) -> Result<()> {
        match storage.backend() {
            Backend::Files => self.embed_pending(agent),
            Backend::Postgres => {
                let Some(feed) = self.storage_feed(storage, agent) else {
                    return Ok(());
                };
                // Opening the index catches it up with the sessions.
                storage.search_index(agent)?;
                feed.wait_caught_up()
            }
        }
    }

    /// Stops the background embedders of this store and its clones, each
    /// after the batch it has under way (whose vectors are kept), and waits
    /// for them; a later ingest, recall or wait starts them again. Dropping
    /// the last clone does the same: a program whose embedder needs what
    /// the dropping thread holds (a Python callable and the interpreter's
    /// lock) calls this first, with it released.
    pub fn stop_background_embedding(&self) {
        if let Some(feeds) = &self.vector_feeds {
            feeds.stop_all();
        }
    }

    /// How the background embedding of `agent`'s index in `storage` stands,
    /// when this store has an embedder and its worker runs.
    pub fn embedding_status(
        &self,
        storage: &dyn crate::Storage,
        agent: &AgentId,
    ) -> Option<EmbeddingStatus> {
        self.running_feed(storage.backend(), agent)
            .map(|feed| feed.status())
    }

    fn running_feed(&self, backend: Backend, agent: &AgentId) -> Option<Arc<VectorFeed>> {
        let key = match backend {
            Backend::Files => FeedKey::Files(self.agent_dir(agent)),
            other @ Backend::Postgres => FeedKey::Backend(other.name(), agent.clone()),
        };
        self.vector_feeds.as_ref()?.running(&key)
    }

    /// The same store, whose [`Store::recall`] lets `reranker` read the
    /// best candidates and put first those that answer (see
    /// [`crate::memory::recall::Reranker`]). A session's `prepare` does not ask it:
    /// a model call before every model call would double the wait.
    pub fn with_reranker(mut self, reranker: Arc<dyn Reranker + Send + Sync>) -> Store {
        self.reranker = Some(SharedReranker(reranker));
        self
    }

    /// The reranker [`Store::recall`] uses, if one was given.
    pub fn reranker(&self) -> Option<&(dyn Reranker + Send + Sync)> {
        self.reranker.as_ref().map(|r| &*r.0)
    }

    /// The embedder recall uses, if one was given.
    pub fn embedder(&self) -> Option<&(dyn Embedder + Send + Sync)> {
        self.embedder.as_ref().map(|e| &*e.0)
    }

    /// The token counts earlier processes kept in this data directory
    /// (`token-counts`), loaded into this thread's memo: a short-lived
    /// process that meets only known words never loads an encoding's tables.
    /// Call [`KeptCounts::save`] when done to keep what it counted.
    ///
    /// [`KeptCounts::save`]: crate::tokens::KeptCounts::save
    pub fn load_kept_token_counts(&self) -> crate::tokens::KeptCounts {
        crate::tokens::KeptCounts::load(self.root.join(crate::files::paths::TOKEN_COUNTS_FILE))
    }

    /// The model registry: built-in table plus the configuration's overrides.
    pub fn registry(&self) -> &ModelRegistry {
        &self.registry
    }

    /// The settings a session works with: its own `config.toml` over its
    /// agent's over the data directory's.
    fn context_settings(&self, agent: &AgentId, session: &SessionPaths) -> Result<ContextSettings> {
        let agent_file = self
            .root
            .join("agents")
            .join(agent.as_str())
            .join(CONFIG_FILE);
        let layers = [
            Config::load_file(&session.dir.join(CONFIG_FILE))?,
            Config::load_file(&agent_file)?,
            self.config.clone(),
        ];
        Ok(ContextSettings {
            budget: layers
                .iter()
                .fold(BudgetSettings::default(), |upper, layer| {
                    upper.over(layer.budget)
                }),
            context: layers
                .iter()
                .fold(ContextSettingsLayer::default(), |upper, layer| {
                    upper.over(layer.context.clone())
                }),
            guard: layers
                .iter()
                .find_map(|layer| layer.guard.clone())
                .unwrap_or_default(),
            memory: layers
                .iter()
                .find_map(|layer| layer.memory.clone())
                .unwrap_or_default(),
            redaction: layers
                .iter()
                .find_map(|layer| layer.redaction)
                .unwrap_or_default(),
            agent_dir: self.root.join("agents").join(agent.as_str()),
            registry: Arc::clone(&self.registry),
            embedder: self.embedder.clone(),
            vector_feed: None,
        })
    }

    fn load(
        &self,
        paths: SessionPaths,
        agent: &AgentId,
        id: &SessionId,
        access: Access,
    ) -> Result<Session> {
        let mut settings = self.context_settings(agent, &paths)?;
        if let Access::Write(_) = access {
            settings.vector_feed = self.files_feed(agent);
        }
        Session::load(paths, agent.clone(), id.clone(), access, settings)
    }

    /// The data directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The durability new writers use.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    fn sessions_dir(&self, agent: &AgentId) -> PathBuf {
        self.root
            .join("agents")
            .join(agent.as_str())
            .join("sessions")
    }

    /// Where the files of `session` live.
    pub fn session_paths(&self, agent: &AgentId, session: &SessionId) -> SessionPaths {
        SessionPaths {
            dir: self.sessions_dir(agent).join(session.as_str()),
        }
    }

    /// The agent's MEMORY.md.
    pub fn notebook(&self, agent: &AgentId) -> crate::memory::notebook::Notebook {
        crate::memory::notebook::Notebook::new(&self.root.join("agents").join(agent.as_str()))
            .with_redaction(self.redaction())
    }

    /// The agent's semantic facts.
    pub fn facts(&self, agent: &AgentId) -> crate::memory::facts::FactStore {
        crate::memory::facts::FactStore::new(
            &self.root.join("agents").join(agent.as_str()),
            self.redaction(),
        )
    }

    /// What the configuration's `[redaction]` has redacted (secrets always).
    pub(crate) fn redaction(&self) -> crate::redact::RedactionPolicy {
        self.config.redaction.unwrap_or_default()
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The agent's folder (MEMORY.md, facts, episodes, the search index, sessions).
    pub fn agent_dir(&self, agent: &AgentId) -> PathBuf {
        self.root.join("agents").join(agent.as_str())
    }

    /// The agent's search index, caught up with every session's log: events
    /// the index lacks are added, sessions deleted since are removed.
    ///
    /// A session whose active log has the length it had when the index was
    /// last found to hold all its events is passed over with one `stat`, so
    /// the check costs little even over thousands of sessions.
    pub fn history_index(&self, agent: &AgentId) -> Result<crate::search::HistoryIndex> {
        let mut index = crate::search::HistoryIndex::open(&self.agent_dir(agent))?;
        let indexed: std::collections::HashMap<String, u64> =
            index.indexed_sessions()?.into_iter().collect();
        let checked = index.checked_logs()?;
        let logs = self.session_log_lengths(agent)?;
        let mut now_checked = Vec::new();
        for (id, log_bytes) in &logs {
            if checked.get(id.as_str()) == Some(log_bytes) {
                continue;
            }
            // Read after the length: a log that grows meanwhile is checked
            // again next time, never passed over short of its events.
            let meta = match self.session_meta(agent, id) {
                Ok(meta) => meta,
                // Deleted since the listing: the next catch-up removes it.
                Err(Error::SessionNotFound { .. }) => continue,
                Err(error) => return Err(error),
            };
            if indexed.get(id.as_str()).copied().unwrap_or(0) < meta.events as u64 {
                let history = self.read_session(agent, id)?.full_history()?;
                index.catch_up(id.as_str(), &history)?;
            }
            now_checked.push((id.as_str(), *log_bytes));
        }
        index.record_checked_logs(&now_checked)?;
        let listed: std::collections::HashSet<&str> =
            logs.iter().map(|(id, _)| id.as_str()).collect();
        for session in indexed.keys() {
            if !listed.contains(session.as_str()) {
                index.remove_session(session)?;
            }
        }
        Ok(index)
    }

    /// Every session of `agent` with the length of its active log in bytes
    /// (0 before its first event), in no particular order.
    fn session_log_lengths(&self, agent: &AgentId) -> Result<Vec<(SessionId, u64)>> {
        let ids = self.session_ids(agent)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.sessions_dir(agent);
        let folder = fs::File::open(&dir).io("open", &dir)?;
        let lengths = log_lengths(&folder, &ids);
        Ok(ids.into_iter().zip(lengths).collect())
    }

    /// The ids of `agent`'s session folders, in no particular order
    /// (temporary and foreign entries left out).
    fn session_ids(&self, agent: &AgentId) -> Result<Vec<SessionId>> {
        self.files_backend()?;
        let mut ids = Vec::new();
        for entry in entries_of(&self.sessions_dir(agent))? {
            let name = entry.file_name();
            let Some(Ok(id)) = name.to_str().map(SessionId::new) else {
                continue;
            };
            // The entry's own type costs no `stat`; a link is followed.
            let is_folder = entry
                .file_type()
                .is_ok_and(|t| t.is_dir() || (t.is_symlink() && entry.path().is_dir()));
            if is_folder {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Searches the whole raw history of `agent` (archives included).
    pub fn search(
        &self,
        agent: &AgentId,
        query: &str,
        filter: &crate::search::SearchFilter,
    ) -> Result<Vec<crate::search::SearchHit>> {
        self.history_index(agent)?.search(query, filter)
    }

    /// What recall would inject for `request`: the agent's facts, episodes
    /// and past sessions' events that score best and fit its budget. With
    /// an embedder ([`Store::with_embedder`]), the documents embedded so far
    /// add their similarity and the rest compete by their words
    /// ([`Recalled::embedding`](crate::Recalled::embedding) says how many);
    /// the background embedder is woken, never waited for. With a reranker
    /// ([`Store::with_reranker`]), it reads the best candidates first. What
    /// it shows is redacted as the configuration's `[redaction]` says
    /// (secrets always).
    pub fn recall(
        &self,
        agent: &AgentId,
        request: &crate::memory::recall::RecallRequest,
        tokenizer: crate::tokens::Tokenizer,
    ) -> Result<crate::memory::recall::Recalled> {
        let mut index = self.history_index(agent)?;
        crate::memory::recall::refresh_memories(&mut index, &self.agent_dir(agent))?;
        let feed = self.files_feed(agent);
        feed.as_deref().map(VectorFeed::wake);
        let embedder = self.embedder().map(|e| e as &dyn Embedder);
        let reranker = self.reranker().map(|r| r as &dyn Reranker);
        let redaction = self.redaction();
        let recalled = crate::memory::recall::recall(
            &index, request, tokenizer, embedder, reranker, redaction,
        )?;
        Ok(with_feed_status(recalled, feed.as_deref()))
    }

    /// Searches `agent`'s whole raw history kept in `storage`: this store's
    /// own index on files ([`Store::search`]), the backend's otherwise.
    pub fn search_on(
        &self,
        storage: &dyn crate::Storage,
        agent: &AgentId,
        query: &str,
        filter: &crate::search::SearchFilter,
    ) -> Result<Vec<crate::search::SearchHit>> {
        match storage.backend() {
            crate::Backend::Files => self.search(agent, query, filter),
            crate::Backend::Postgres => storage.search_index(agent)?.search(query, filter),
        }
    }

    /// Recalls for `request` from `agent`'s history kept in `storage`: as
    /// [`Store::recall`] on files; on another backend from its index (the
    /// agent's events, facts and episodes), with this store's embedder and
    /// reranker.
    pub fn recall_on(
        &self,
        storage: &dyn crate::Storage,
        agent: &AgentId,
        request: &crate::memory::recall::RecallRequest,
        tokenizer: crate::tokens::Tokenizer,
    ) -> Result<crate::memory::recall::Recalled> {
        match storage.backend() {
            crate::Backend::Files => self.recall(agent, request, tokenizer),
            crate::Backend::Postgres => {
                let index = storage.search_index(agent)?;
                // Started by the sessions that write there (and by a wait).
                let feed = self.running_feed(storage.backend(), agent);
                feed.as_deref().map(VectorFeed::wake);
                let embedder = self.embedder().map(|e| e as &dyn Embedder);
                let reranker = self.reranker().map(|r| r as &dyn Reranker);
                let redaction = self.redaction();
                let recalled = crate::memory::recall::recall(
                    &*index, request, tokenizer, embedder, reranker, redaction,
                )?;
                Ok(with_feed_status(recalled, feed.as_deref()))
            }
        }
    }

    /// Creates a new, empty session (a fresh id when `id` is `None`) and opens it for writing.
    pub fn create_session(&self, agent: &AgentId, id: Option<SessionId>) -> Result<Session> {
        let id = id.unwrap_or_else(SessionId::generate);
        let paths = self.make_session_dir(agent, &id)?;
        self.load(paths, agent, &id, Access::Write(self.durability))
    }

    /// Makes the folder of the new session `id` with its first `meta.json`;
    /// [`Error::SessionExists`] when there is one.
    fn make_session_dir(&self, agent: &AgentId, id: &SessionId) -> Result<SessionPaths> {
        self.files_backend()?;
        let paths = self.session_paths(agent, id);
        let parent = self.sessions_dir(agent);
        crate::base::fs::create_dir_all(&parent).io("create", &parent)?;
        match crate::base::fs::create_dir(&paths.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::SessionExists {
                    agent: agent.to_string(),
                    session: id.to_string(),
                })
            }
            Err(e) => return Err(e).io("create", &paths.dir),
        }
        let meta = SessionMeta::new_session(agent, id);
        meta.write(&paths.dir)?;
        crate::base::fs::sync_dir(&parent)?;
        Ok(paths)
    }

    /// Opens an existing session for writing (taking its lock).
    pub fn open_session(&self, agent: &AgentId, id: &SessionId) -> Result<Session> {
        let paths = self.existing(agent, id)?;
        self.load(paths, agent, id, Access::Write(self.durability))
    }

    /// Opens an existing session for reading only: no lock, never blocks a writer.
    pub fn read_session(&self, agent: &AgentId, id: &SessionId) -> Result<Session> {
        let paths = self.existing(agent, id)?;
        self.load(paths, agent, id, Access::Read)
    }

    /// Opens `id` for writing, creating it if it does not exist.
    pub fn open_or_create(&self, agent: &AgentId, id: &SessionId) -> Result<Session> {
        match self.open_session(agent, id) {
            Err(Error::SessionNotFound { .. }) => self.create_session(agent, Some(id.clone())),
            other => other,
        }
    }

    /// `Ok` for a store whose sessions are in files. One configured for
    /// another backend refuses to open, list or make sessions, rather than
    /// keep them in files in its place (a program reaches that backend
    /// through its storage crate; see [`crate::storage`]).
    fn files_backend(&self) -> Result<()> {
        match self.config.storage.backend {
            Backend::Files => Ok(()),
            other @ Backend::Postgres => Err(Error::NotOnBackend {
                feature: "opening sessions with the engine's Store",
                backend: other.name(),
            }),
        }
    }

    fn existing(&self, agent: &AgentId, id: &SessionId) -> Result<SessionPaths> {
        self.files_backend()?;
        let paths = self.session_paths(agent, id);
        if paths.dir.is_dir() {
            Ok(paths)
        } else {
            Err(Error::SessionNotFound {
                agent: agent.to_string(),
                session: id.to_string(),
            })
        }
    }

    /// The current description of a session. When `meta.json` lags behind the
    /// log (a writer crashed before refreshing it), the counts are re-derived.
    pub fn session_meta(&self, agent: &AgentId, id: &SessionId) -> Result<SessionMeta> {
        let paths = self.existing(agent, id)?;
        let log_bytes = fs::metadata(paths.raw_traces()).map_or(0, |m| m.len());
        match SessionMeta::read(&paths.dir) {
            Ok(meta) if meta.log_bytes == log_bytes => Ok(meta),
            _ => Ok(self.read_session(agent, id)?.current_meta()),
        }
    }

    /// Every session of `agent`, most recently updated first.
    pub fn list_sessions(&self, agent: &AgentId) -> Result<Vec<SessionMeta>> {
        let mut sessions = self
            .session_ids(agent)?
            .iter()
            .map(|id| self.session_meta(agent, id))
            .collect::<Result<Vec<_>>>()?;
        sessions.sort_by(|a, b| {
            b.updated
                .total_cmp(&a.updated)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(sessions)
    }

    /// Removes the hidden folders a fork or a delete left when its process
    /// was killed midway: each holds a session lock while it is in use, so
    /// one whose lock is free is abandoned.
    fn remove_abandoned_staging(&self, agent: &AgentId) -> Result<()> {
        let dir = self.sessions_dir(agent);
        for entry in entries_of(&dir)? {
            let name = entry.file_name();
            let staged = name
                .to_str()
                .is_some_and(|n| n.starts_with(".fork-") || n.starts_with(".deleted-"));
            if !staged || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if let Ok(_abandoned) = crate::files::lock::SessionLock::acquire(&path, "") {
                fs::remove_dir_all(&path).io("remove", &path)?;
            }
        }
        Ok(())
    }

    /// Deletes a session and all its files. Refused while a writer holds it.
    pub fn delete_session(&self, agent: &AgentId, id: &SessionId) -> Result<()> {
        self.remove_abandoned_staging(agent)?;
        let paths = self.existing(agent, id)?;
        let _lock = crate::files::lock::SessionLock::acquire(&paths.dir, id.as_str())?;
        self.remove_files(agent, id)
    }

    /// Deletes `session` if it holds no event, as a writer that made it for
    /// an input with no event in it does: no empty session is left behind.
    /// Its lock is held until its files are gone, so no other writer can
    /// add an event meanwhile. Says whether it was deleted; a session with
    /// events, or open read-only, is closed and kept.
    pub fn discard_if_empty(&self, agent: &AgentId, session: Session) -> Result<bool> {
        let id = session.id().clone();
        let empty = session.current_meta().events == 0 && session.events().is_empty();
        if !(empty && session.is_writer()) {
            session.close()?;
            return Ok(false);
        }
        self.remove_files(agent, &id)?;
        drop(session);
        Ok(true)
    }

    /// Removes a session's folder: moved aside first, so a crash leaves no
    /// half-deleted session under its name.
    fn remove_files(&self, agent: &AgentId, id: &SessionId) -> Result<()> {
        let dir = self.session_paths(agent, id).dir;
        let doomed = dir.with_file_name(format!(".deleted-{}-{}", id, std::process::id()));
        fs::rename(&dir, &doomed).io("move aside", &dir)?;
        crate::base::fs::sync_dir(&self.sessions_dir(agent))?;
        fs::remove_dir_all(&doomed).io("delete", &doomed)?;
        // The index forgets the session now, or at the next search if this fails.
        if let Ok(mut index) = crate::search::HistoryIndex::open(&self.agent_dir(agent)) {
            let _ = index.remove_session(id.as_str());
        }
        Ok(())
    }

    /// Copies a session's history up to and including `at_turn` (all of it when
    /// `None`) into a new session. The two share nothing afterwards. The
    /// working memory comes along as the copied updates made it (as of
    /// `at_turn`), with the session's own schema.
    ///
    /// The copy is assembled in a hidden folder and renamed into place, so a
    /// crash never leaves a half-made fork.
    pub fn fork_session(
        &self,
        agent: &AgentId,
        source: &SessionId,
        at_turn: Option<&str>,
        new_id: Option<SessionId>,
    ) -> Result<SessionMeta> {
        let original = self.read_session(agent, source)?;
        let new_id = new_id.unwrap_or_else(SessionId::generate);
        let target = self.session_paths(agent, &new_id);
        if target.dir.exists() {
            return Err(Error::SessionExists {
                agent: agent.to_string(),
                session: new_id.to_string(),
            });
        }
        let archived = jsonl::read_log(&original.paths().archive())?.events;
        let fork = crate::storage::fork::plan(
            source,
            original.events(),
            archived,
            Snapshot::read(&original.paths().dir)?,
            at_turn,
        )?;
        self.remove_abandoned_staging(agent)?;
        let staging = SessionPaths {
            dir: target
                .dir
                .with_file_name(format!(".fork-{}-{}", new_id, std::process::id())),
        };
        crate::base::fs::create_dir_all(&staging.dir).io("create", &staging.dir)?;
        // Held while the copy is made, so a fork killed midway is told from one under way.
        let _staging_lock =
            crate::files::lock::SessionLock::acquire(&staging.dir, new_id.as_str())?;
        write_log(&staging.raw_traces(), &fork.active)?;
        if !fork.archive.is_empty() {
            write_log(&staging.archive(), &fork.archive)?;
        }
        if let Some(snapshot) = &fork.snapshot {
            snapshot.write(&staging.dir)?;
        }
        copy_evicted(
            &original.paths().evicted(),
            &staging.evicted(),
            &fork.active,
        )?;
        copy_schema(&original.paths().dir, &staging.dir)?;
        let mut meta = fork.meta(agent, source, &new_id, self.redaction());
        meta.log_bytes = fs::metadata(staging.raw_traces()).map_or(0, |m| m.len());
        meta.write(&staging.dir)?;
        fs::rename(&staging.dir, &target.dir).io("rename into place", &target.dir)?;
        crate::base::fs::sync_dir(&self.sessions_dir(agent))?;
        Ok(meta)
    }
}

/// `recalled`, saying why the background embedder fails when it does.
fn with_feed_status(
    mut recalled: crate::memory::recall::Recalled,
    feed: Option<&VectorFeed>,
) -> crate::memory::recall::Recalled {
    if let (Some(coverage), Some(feed)) = (&mut recalled.embedding, feed) {
        coverage.failing = feed.status().failing;
    }
    recalled
}

/// The entries of the folder `dir`; none when it does not exist.
fn entries_of(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries.map(|entry| entry.io("list", dir)).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).io("list", dir),
    }
}

fn write_log(path: &Path, events: &[Event]) -> Result<()> {
    let bytes = jsonl::encode_lines(events);
    let mut file = crate::base::fs::create(path).io("create", path)?;
    std::io::Write::write_all(&mut file, &bytes).io("write", path)?;
    file.sync_all().io("fsync", path)
}

/// Copies the evicted outputs that the kept events refer to.
fn copy_evicted(from: &Path, to: &Path, kept: &[Event]) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    for call_id in kept.iter().filter_map(|e| e.tool_call_id.as_deref()) {
        let source = from.join(format!("{call_id}.txt"));
        if crate::base::id::validate_path_id(crate::base::error::IdKind::ToolCall, call_id).is_ok()
            && source.is_file()
        {
            crate::base::fs::create_dir_all(to).io("create", to)?;
            fs::copy(&source, to.join(format!("{call_id}.txt"))).io("copy", &source)?;
        }
    }
    Ok(())
}

/// Copies the session's own working-memory schema, if it has one: the fork
/// keeps to the same rules. (Its state is rebuilt from the copied log.)
fn copy_schema(from: &Path, to: &Path) -> Result<()> {
    let source = crate::working::schema::schema_path(from);
    if source.is_file() {
        let target = crate::working::schema::schema_path(to);
        fs::copy(&source, &target).io("copy", &source)?;
    }
    Ok(())
}

/// The length in bytes of each session's active log (0 when it has none),
/// in the order of `ids`, looked up from the open `sessions` folder: two
/// path steps a session rather than the whole path from the root.
fn log_lengths(folder: &fs::File, ids: &[SessionId]) -> Vec<u64> {
    let length = |id: &SessionId| {
        let log = Path::new(id.as_str()).join(crate::files::paths::RAW_TRACES_FILE);
        let stat = rustix::fs::statat(folder, &log, rustix::fs::AtFlags::empty());
        stat.map_or(0, |s| s.st_size.max(0) as u64)
    };
    if ids.len() < LOOKUPS_WORTH_A_THREAD {
        return ids.iter().map(length).collect();
    }
    // Path lookups are CPU work in the kernel: two cores halve them.
    let (first, second) = ids.split_at(ids.len() / 2);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| second.iter().map(length).collect::<Vec<_>>());
        let mut lengths: Vec<u64> = first.iter().map(length).collect();
        lengths.extend(
            other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        );
        lengths
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lengths_on_two_threads_keep_the_order_of_the_ids() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = LOOKUPS_WORTH_A_THREAD + 89;
        let ids: Vec<SessionId> = (0..sessions)
            .map(|i| SessionId::new(format!("s{i:04}")).unwrap())
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let folder = dir.path().join(id.as_str());
            fs::create_dir(&folder).unwrap();
            // Every seventh session has no log yet.
            if i % 7 != 0 {
                let log = folder.join(crate::files::paths::RAW_TRACES_FILE);
                fs::write(log, vec![b'x'; i]).unwrap();
            }
        }
        let folder = fs::File::open(dir.path()).unwrap();
        let expected: Vec<u64> = (0..sessions)
            .map(|i| if i % 7 == 0 { 0 } else { i as u64 })
            .collect();
        assert_eq!(log_lengths(&folder, &ids), expected);
        assert_eq!(log_lengths(&folder, &ids[..10]), expected[..10]);
    }
}
