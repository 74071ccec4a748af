//! A session: one conversation's event log, opened for writing (one writer,
//! holding the lock) or for reading (any number, never blocking).
//!
//! Ingest validates a whole batch before writing any of it, drops events whose
//! id the session already has (so retries and re-imports are idempotent),
//! assigns what the events left empty (id, ts, turn, seq), appends them to the
//! durable log and only then adds them to the in-memory transcript.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Durability;
use crate::error::{Error, Result};
use crate::event::{now_ts, Event, TraceType};
use crate::id::{AgentId, SessionId};
use crate::prepare::{prepare, CalibrationTable, PrepareRequest, Prepared};
use crate::store::jsonl::{self, AppendLog, Recovery};
use crate::store::lock::SessionLock;
use crate::store::meta::{title_from, ImportRecord, SessionMeta};
use crate::store::SessionPaths;
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelRegistry;
use crate::tokens::Encoding;
use crate::tool_interaction::{tool_interactions, ToolInteraction};
use crate::transcript::Transcript;
use crate::turn::TurnTracker;

/// How often, at most, ingest refreshes `meta.json` (it is also written on close).
const META_REFRESH_INTERVAL: Duration = Duration::from_secs(2);

/// How a session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Take the writer lock and repair a torn tail; appends sync per the durability.
    Write(Durability),
    /// Read what is complete on disk; no lock, no repair.
    Read,
}

#[derive(Debug)]
struct Writer {
    log: AppendLog,
    _lock: SessionLock,
}

/// What a session needs to prepare contexts: its layered budget settings and
/// the model registry.
#[derive(Debug, Clone)]
pub struct ContextSettings {
    /// Session over agent over data-directory settings (a request adds the top layer).
    pub budget: BudgetSettings,
    pub registry: Arc<ModelRegistry>,
}

/// The last prepared context, so the usage reported for it can be paired with our count.
#[derive(Debug, Clone)]
struct LastPrepare {
    model: String,
    counted_tokens: u64,
    events: usize,
}

/// What one ingest call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestReport {
    /// Events appended to the log.
    pub appended: usize,
    /// Events skipped because the session already had their id.
    pub duplicates: usize,
}

/// An open session.
#[derive(Debug)]
pub struct Session {
    paths: SessionPaths,
    agent: AgentId,
    id: SessionId,
    meta: SessionMeta,
    events: Vec<Event>,
    ids: HashSet<String>,
    turns: TurnTracker,
    writer: Option<Writer>,
    recoveries: Vec<Recovery>,
    meta_dirty: bool,
    meta_written: Instant,
    settings: ContextSettings,
    transcript: Option<Transcript>,
    calibration: CalibrationTable,
    last_prepare: Option<LastPrepare>,
}

impl Session {
    /// Opens the session in `paths` (see [`crate::store::Store`] for the usual entry points).
    pub fn load(
        paths: SessionPaths,
        agent: AgentId,
        id: SessionId,
        access: Access,
        settings: ContextSettings,
    ) -> Result<Session> {
        let (writer, events, recoveries) = match access {
            Access::Write(durability) => {
                let lock = SessionLock::acquire(&paths.dir, id.as_str())?;
                let (events, recoveries) = jsonl::read_and_repair(&paths.raw_traces())?;
                let log = AppendLog::open(&paths.raw_traces(), durability)?;
                (Some(Writer { log, _lock: lock }), events, recoveries)
            }
            Access::Read => {
                let contents = jsonl::read_log(&paths.raw_traces())?;
                let recoveries = read_only_recoveries(&paths, &contents);
                (None, contents.events, recoveries)
            }
        };
        let meta = SessionMeta::read(&paths.dir)
            .unwrap_or_else(|_| crate::store::meta_for(&events, &agent, &id));
        let mut calibration = CalibrationTable::default();
        events
            .iter()
            .filter_map(|e| e.usage.as_ref())
            .for_each(|u| calibration.observe(u));
        let mut session = Session {
            settings,
            transcript: None,
            calibration,
            last_prepare: None,
            ids: events.iter().map(|e| e.id.clone()).collect(),
            turns: TurnTracker::from_events(&events),
            paths,
            agent,
            id,
            meta,
            events,
            writer,
            recoveries,
            meta_dirty: false,
            meta_written: Instant::now(),
        };
        session.refresh_meta_counts();
        if session.writer.is_some() && session.meta_is_stale() {
            session.write_meta()?;
        }
        Ok(session)
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent the session belongs to.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// The session's files.
    pub fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// The events of the active log, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The whole raw history: archived events first, then the active log.
    pub fn full_history(&self) -> Result<Vec<Event>> {
        let mut history = jsonl::read_log(&self.paths.archive())?.events;
        history.extend_from_slice(&self.events);
        Ok(history)
    }

    /// Each tool call with its result and status.
    pub fn tool_interactions(&self) -> Vec<ToolInteraction> {
        tool_interactions(&self.events)
    }

    /// What was repaired or skipped when the session was opened.
    pub fn recoveries(&self) -> &[Recovery] {
        &self.recoveries
    }

    /// The session's description with counts as of now.
    pub fn current_meta(&self) -> SessionMeta {
        self.meta.clone()
    }

    /// The turn the next non-user event joins.
    pub fn current_turn(&self) -> &str {
        self.turns.current_turn()
    }

    /// Appends `events` to the log. See the module docs for the rules.
    ///
    /// ```
    /// # use agentmem::{event::Event, store::Store, Durability};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// let first = Event::user("hello").with_id("e1");
    /// assert_eq!(session.ingest(vec![first.clone()]).unwrap().appended, 1);
    /// // A retry of the same event is recognised by its id.
    /// assert_eq!(session.ingest(vec![first]).unwrap().duplicates, 1);
    /// ```
    pub fn ingest(&mut self, events: Vec<Event>) -> Result<IngestReport> {
        if self.writer.is_none() {
            return Err(Error::ReadOnly {
                session: self.id.to_string(),
            });
        }
        for (index, event) in events.iter().enumerate() {
            event
                .validate()
                .map_err(|reason| Error::InvalidEvent { index, reason })?;
        }
        let mut report = IngestReport::default();
        let mut fresh = Vec::with_capacity(events.len());
        let mut batch_ids = HashSet::new();
        for mut event in events {
            if !event.id.is_empty()
                && (self.ids.contains(&event.id) || !batch_ids.insert(event.id.clone()))
            {
                report.duplicates += 1;
                continue;
            }
            self.assign(&mut event);
            fresh.push(event);
        }
        self.pair_usage_with_last_prepare(&mut fresh);
        let writer = self.writer.as_mut().expect("checked above");
        if let Err(failure) = writer.log.append(&fresh) {
            fresh.truncate(failure.written);
            self.turns = TurnTracker::from_events(self.events.iter().chain(&fresh));
            self.remember(fresh);
            return Err(failure.error);
        }
        report.appended = fresh.len();
        self.remember(fresh);
        self.maybe_refresh_meta()?;
        Ok(report)
    }

    /// Renders the session for a model call and measures it against the budget.
    ///
    /// The transcript is counted once, on first use, in the model's encoding,
    /// and kept current as events arrive; later calls cost what was added.
    ///
    /// ```
    /// # use agentmem::{event::Event, store::Store, Durability};
    /// use agentmem::prepare::PrepareRequest;
    /// use agentmem::render::Target;
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// session.ingest(vec![Event::user("What is 2 + 2?")]).unwrap();
    /// let prepared = session.prepare(&PrepareRequest::new("gpt-4.1", Target::OpenAiChat)).unwrap();
    /// assert_eq!(prepared.payload["messages"][0]["content"], "What is 2 + 2?");
    /// assert!(!prepared.stats.compaction_due);
    /// ```
    pub fn prepare(&mut self, request: &PrepareRequest) -> Result<Prepared> {
        request.budget.validate().map_err(|message| Error::Config {
            path: "request".into(),
            message,
        })?;
        let model = self.settings.registry.lookup(&request.model);
        let calibration = self.calibration.get(&request.model);
        let settings = self.settings.budget;
        let registry = Arc::clone(&self.settings.registry);
        let transcript = self.transcript_in(Encoding::for_model(&request.model));
        // Usage another model reported measures another tokenizer: not an anchor here.
        let anchor = transcript.anchor().filter(|a| {
            a.model
                .as_deref()
                .is_none_or(|m| registry.lookup(m).model == model.model)
        });
        let prepared = prepare(transcript, &model, settings, request, anchor, calibration);
        self.last_prepare = Some(LastPrepare {
            model: request.model.clone(),
            counted_tokens: prepared.stats.counted_tokens,
            events: self.events.len(),
        });
        Ok(prepared)
    }

    /// The transcript counted in `encoding`, built on first use.
    pub fn transcript_in(&mut self, encoding: Encoding) -> &Transcript {
        let stale = self
            .transcript
            .as_ref()
            .is_none_or(|t| t.encoding() != encoding);
        if stale {
            self.transcript = Some(Transcript::from_events(encoding, &self.events));
        }
        self.transcript.as_ref().expect("just built")
    }

    /// Per-model calibration factors learned so far.
    pub fn calibration(&self) -> &CalibrationTable {
        &self.calibration
    }

    /// Gives the first reported usage in `fresh` our count of the prompt it
    /// measured, when that prompt is the context prepared last.
    fn pair_usage_with_last_prepare(&mut self, fresh: &mut [Event]) {
        let Some(last) = &self.last_prepare else {
            return;
        };
        if last.events != self.events.len() {
            return; // events arrived between the prepare and this response
        }
        if let Some(usage) = fresh.iter_mut().find_map(|e| e.usage.as_mut()) {
            if usage.estimated_prompt_tokens.is_none() {
                usage.estimated_prompt_tokens = Some(last.counted_tokens);
                usage.model.get_or_insert_with(|| last.model.clone());
            }
            self.last_prepare = None;
        }
    }

    /// Records that `events_added` events came from an import of `path`.
    pub fn record_import(&mut self, path: &str, format: &str, events_added: usize) -> Result<()> {
        self.meta.imports.push(ImportRecord {
            path: path.to_owned(),
            format: format.to_owned(),
            ts: now_ts(),
            events_added,
        });
        self.write_meta()
    }

    /// Writes pending meta changes and releases the writer lock.
    pub fn close(mut self) -> Result<()> {
        if self.meta_dirty {
            self.write_meta()?;
        }
        Ok(())
    }

    fn assign(&mut self, event: &mut Event) {
        if event.id.is_empty() {
            event.id = format!("ev_{}", uuid::Uuid::now_v7().simple());
        }
        if event.ts == 0.0 {
            event.ts = now_ts();
        }
        self.turns.assign(event);
    }

    fn remember(&mut self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        if let Some(transcript) = &mut self.transcript {
            transcript.extend(&events);
        }
        events
            .iter()
            .filter_map(|e| e.usage.as_ref())
            .for_each(|u| self.calibration.observe(u));
        for event in &events {
            self.ids.insert(event.id.clone());
            if event.trace_type == TraceType::User {
                self.meta.turns += 1;
                if self.meta.title.is_none() {
                    self.meta.title = Some(title_from(&event.content));
                    self.meta_written = Instant::now() - META_REFRESH_INTERVAL;
                }
            }
        }
        // Imported history can predate the session: it started when its first event did.
        self.meta.created = self.meta.created.min(events[0].ts);
        self.meta.updated = self.meta.updated.max(events.last().map_or(0.0, |e| e.ts));
        self.events.extend(events);
        self.meta.events = self.events.len();
        self.meta_dirty = true;
    }

    fn refresh_meta_counts(&mut self) {
        let fresh = crate::store::meta_for(&self.events, &self.agent, &self.id);
        self.meta.events = fresh.events;
        self.meta.turns = fresh.turns;
        if self.meta.title.is_none() {
            self.meta.title = fresh.title;
        }
        if let Some(last) = self.events.last() {
            self.meta.updated = self.meta.updated.max(last.ts);
        }
    }

    fn log_bytes(&self) -> u64 {
        match &self.writer {
            Some(writer) => writer.log.len(),
            None => std::fs::metadata(self.paths.raw_traces()).map_or(0, |m| m.len()),
        }
    }

    fn meta_is_stale(&self) -> bool {
        self.meta.log_bytes != self.log_bytes()
    }

    fn maybe_refresh_meta(&mut self) -> Result<()> {
        if self.meta_dirty && self.meta_written.elapsed() >= META_REFRESH_INTERVAL {
            self.write_meta()?;
        }
        Ok(())
    }

    fn write_meta(&mut self) -> Result<()> {
        self.meta.log_bytes = self.log_bytes();
        self.meta.write(&self.paths.dir)?;
        self.meta_dirty = false;
        self.meta_written = Instant::now();
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.writer.is_some() && self.meta_dirty {
            // Best effort: a stale meta is detected by its log size and re-derived.
            let _ = self.write_meta();
        }
    }
}

fn read_only_recoveries(paths: &SessionPaths, contents: &jsonl::LogContents) -> Vec<Recovery> {
    let log = paths.raw_traces();
    let mut recoveries: Vec<Recovery> = contents
        .bad_lines
        .iter()
        .map(|(line, error, _)| Recovery::BadLine {
            log: log.clone(),
            line: *line,
            error: error.clone(),
            moved_to: None,
        })
        .collect();
    if !contents.torn_tail.is_empty() {
        recoveries.push(Recovery::TornTail {
            log,
            bytes: contents.torn_tail.len(),
            moved_to: None,
        });
    }
    recoveries
}
