//! `Session::compact`: old history folded into a summary, raw events moved to
//! the archive, the snapshot rewritten — atomically, and never losing data.
//!
//! The steps are ordered so a crash at any point leaves a readable session
//! that the next writer finishes:
//! 1. the compacted events are appended to `raw_traces_archive.jsonl` (fsynced);
//! 2. `snapshot.json` is replaced atomically: the commit. It names the
//!    tail's first event and carries the archive's new count and what the
//!    compaction leaves in long-term memory;
//! 3. `raw_traces.jsonl` is replaced atomically by the tail;
//! 4. the episodic item and the facts are written, each once;
//! 5. `meta.json` records the compaction as done.
//!
//! A crash before 2 leaves the archive ending in lines the active log still
//! holds: the next writer cuts them (see [`crate::files::archive`]), and the
//! compaction runs again when it is due. A crash after 2 leaves a snapshot
//! that `meta.json` does not count yet: the next writer finishes steps 3 to
//! 5 (the log's part when it opens it, see `log.rs`), and readers see the
//! view as it will be.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use super::drafting::{draft, summarize_or_fall_back, Draft, DraftInput, Outcome};
use super::{BeforeCompactionHook, CompactionHook, Session, SharedSummarizer};
use crate::base::error::{Error, IoContext, Result};
use crate::base::event::{now_ts, Event, TraceType};
use crate::files::records::EpisodicItem;
use crate::files::records::{NewFact, Provenance, Trust};
use crate::files::snapshot::{CompactionMemory, Snapshot};
use crate::memory::episodic::{append_episode, append_episode_once, read_episodes};
use crate::memory::facts::FactStore;
use crate::pipeline::compact::{split_to_compact, CompactReason, CompactReport, Split};
use crate::pipeline::measure::{PrepareRequest, Prepared};
use crate::pipeline::overflow::{sizes_named_in, ProviderError, MAX_OVERFLOW_RETRIES};
use crate::pipeline::strategy::{ContextSettingsLayer, Strategy};
use crate::pipeline::transcript::Transcript;
use crate::redact::{redact, redact_event};
use crate::summarize::{ExtractiveSummarizer, SummaryFact, SummaryRequest};
use crate::tokens::Encoding;

/// The note of a compaction asked for that freed nothing.
fn nothing_freed(report: &CompactReport) -> String {
    format!(
        "nothing was freed: the summary and the messages kept take {} tokens where the {} events they stand for took {} (a history this short is no longer than its summary); the events are in the archive",
        report.tokens_after, report.events_compacted, report.tokens_before
    )
}

/// The share of the provider's limit (in agentmem's count) a recovery from
/// an overflow that named its sizes aims at: the parts of a prompt are not
/// all counted alike by both, so the ratio of the totals is not exact.
const OVERFLOW_ROOM_PERCENT: u128 = 95;

/// How to compact.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    /// What the summary should favour (`/compact focus text`).
    pub focus: Option<String>,
    /// Why the compaction runs (asked for, over the trigger, …), as its report records.
    pub reason: CompactReason,
    /// The encoding to count in; the current transcript's when `None`.
    pub encoding: Option<Encoding>,
    /// Settings for this compaction only (the top layer).
    pub context: ContextSettingsLayer,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            focus: None,
            reason: CompactReason::Manual,
            encoding: None,
            context: ContextSettingsLayer::default(),
        }
    }
}

/// The summarizer and what compaction remembers between runs.
pub(crate) struct Compactor {
    summarizer: SharedSummarizer,
    consecutive_failures: u32,
    /// After a compaction that freed nothing: no automatic one until the
    /// context grows past this many tokens (no compaction loops).
    blocked_below: Option<u64>,
    after_hooks: Vec<CompactionHook>,
    before_hooks: Vec<BeforeCompactionHook>,
    /// While a compaction from the raw log runs: how many of the session's
    /// events, from the first, the archive holds (the active log the rest).
    archived_prefix: usize,
    /// An automatic compaction being drafted in the background, applied by
    /// the next prepare.
    drafting: Option<Drafting>,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("summarizer", &self.summarizer.name())
            .field("consecutive_failures", &self.consecutive_failures)
            .field("blocked_below", &self.blocked_below)
            .finish()
    }
}

impl Default for Compactor {
    /// The extractive summarizer, no hooks, nothing learned yet.
    fn default() -> Self {
        Compactor {
            summarizer: Arc::new(ExtractiveSummarizer::default()),
            consecutive_failures: 0,
            blocked_below: None,
            after_hooks: Vec::new(),
            before_hooks: Vec::new(),
            archived_prefix: 0,
            drafting: None,
        }
    }
}

impl Compactor {
    /// Compacts with `summarizer` from now on, its failures counted afresh.
    pub(crate) fn set_summarizer(&mut self, summarizer: SharedSummarizer) {
        self.summarizer = summarizer;
        self.consecutive_failures = 0;
    }

    /// Runs `hook` before every compaction.
    pub(crate) fn add_before_hook(&mut self, hook: BeforeCompactionHook) {
        self.before_hooks.push(hook);
    }

    /// Runs `hook` after every applied compaction.
    pub(crate) fn add_after_hook(&mut self, hook: CompactionHook) {
        self.after_hooks.push(hook);
    }

    /// Whether automatic compaction waits for a context of `total` tokens
    /// to grow: the last one freed nothing.
    pub(crate) fn waits_to_grow_from(&self, total: u64) -> bool {
        self.blocked_below.is_some_and(|floor| total < floor)
    }

    /// The summarizer's name and version, as reports give them.
    fn summarizer_label(&self) -> String {
        format!("{} {}", self.summarizer.name(), self.summarizer.version())
    }

    /// Counts the summarizer's failures in a row (a success starts over);
    /// a failure that left history as it was is [`Error::Summarizer`].
    fn settle(&mut self, outcome: Outcome) -> Result<Settled> {
        match outcome {
            Outcome::Summarized { summary, facts } => {
                self.consecutive_failures = 0;
                Ok(Settled {
                    summary,
                    facts,
                    fallback: None,
                })
            }
            Outcome::Failed { message } => {
                self.consecutive_failures += 1;
                Err(Error::Summarizer {
                    message,
                    failures: self.consecutive_failures,
                })
            }
            Outcome::FellBack { summary, note } => {
                self.consecutive_failures += 1;
                Ok(Settled {
                    summary,
                    facts: Vec::new(),
                    fallback: Some(note),
                })
            }
        }
    }
}

impl Session {
    /// Compacts everything but the raw tail into the snapshot (see the module docs).
    ///
    /// A summarizer failure changes nothing and is returned as
    /// [`Error::Summarizer`]; after three in a row, a deterministic trim
    /// stands in for the summary and the report says so. A compaction asked
    /// for (`CompactReason::Manual`, the default) folds even a short history
    /// (see `split_to_compact`) and is applied even when it frees nothing,
    /// with a `note` saying so; an automatic one that would not free space
    /// is not applied (`applied: false`).
    ///
    /// ```
    /// # use agentmem::{Event, Store, Durability};
    /// use agentmem::CompactOptions;
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// for turn in 0..8 {
    ///     session.ingest(vec![
    ///         Event::user(format!("step {turn}: please refactor src/module_{turn}.rs")),
    ///         Event::assistant("Done. ".repeat(200)),
    ///     ]).unwrap();
    /// }
    /// let report = session.compact(&CompactOptions::default()).unwrap();
    /// assert!(report.applied && report.tokens_after < report.tokens_before);
    /// assert_eq!(session.full_history().unwrap().len(), 16); // nothing lost
    /// ```
    pub fn compact(&mut self, options: &CompactOptions) -> Result<CompactReport> {
        // A compaction drafted in the background is superseded by this one.
        self.compactor.drafting = None;
        let started = Instant::now();
        let Some(input) = self.draft_input(options)? else {
            return Ok(self.empty_report(options, started));
        };
        let encoding = input.tokenizer.encoding();
        self.apply_draft(draft(input), options.reason, encoding, started)
    }

    /// Starts drafting an automatic compaction on a thread of its own; a
    /// later prepare applies it ([`CompactionTiming::Background`]). Returns
    /// how many events it compacts (0: nothing to compact).
    ///
    /// [`CompactionTiming::Background`]: crate::pipeline::strategy::CompactionTiming::Background
    pub(super) fn start_drafting(&mut self, options: &CompactOptions) -> Result<usize> {
        let Some(input) = self.draft_input(options)? else {
            return Ok(0);
        };
        let events = input.span_len;
        let encoding = input.tokenizer.encoding();
        let handle = std::thread::Builder::new()
            .name("agentmem-compact".into())
            .spawn(move || draft(input))
            .io("start a thread for", &self.log.paths().dir)?;
        self.compactor.drafting = Some(Drafting {
            state: DraftState::Running(handle),
            events,
            reason: options.reason,
            encoding,
            started: Instant::now(),
        });
        Ok(events)
    }

    /// How many events the compaction being drafted in the background
    /// folds, while there is one.
    pub(super) fn drafting_events(&self) -> Option<usize> {
        self.compactor.drafting.as_ref().map(|d| d.events)
    }

    /// Waits until the compaction drafted in the background, if any, is
    /// ready, without applying it: the next [`Session::prepare`] applies it.
    /// A prepare never waits for a draft with
    /// [`CompactionTiming::Background`]; call this where the next call must
    /// see the compaction (a test, a replay that must be the same on every
    /// run, a batch job about to end). Returns how many events the draft
    /// folds, or `None` when none is being drafted.
    ///
    /// [`CompactionTiming::Background`]: crate::pipeline::strategy::CompactionTiming::Background
    pub fn wait_for_draft(&mut self) -> Option<usize> {
        let drafting = self.compactor.drafting.as_mut()?;
        drafting.state = match std::mem::replace(&mut drafting.state, DraftState::Taken) {
            DraftState::Running(handle) => DraftState::Done(handle.join().map(Box::new)),
            done @ (DraftState::Done(_) | DraftState::Taken) => done,
        };
        Some(drafting.events)
    }

    /// Applies the compaction drafted in the background: when its draft is
    /// ready, or, with [`DraftWait::UntilReady`], once it is. `None` when
    /// none was started, or (with [`DraftWait::IfReady`]) it is still
    /// being drafted.
    pub(super) fn finish_drafting(&mut self, wait: DraftWait) -> Option<Result<CompactReport>> {
        let ready = match &self.compactor.drafting.as_ref()?.state {
            DraftState::Running(handle) => handle.is_finished(),
            DraftState::Done(_) | DraftState::Taken => true,
        };
        match wait {
            DraftWait::IfReady if !ready => return None,
            DraftWait::IfReady | DraftWait::UntilReady => {}
        }
        let drafting = self.compactor.drafting.take()?;
        let joined = match drafting.state {
            DraftState::Running(handle) => handle.join(),
            DraftState::Done(joined) => joined.map(|draft| *draft),
            DraftState::Taken => return None,
        };
        let Ok(draft) = joined else {
            return Some(Err(Error::Summarizer {
                message: "the summarizer panicked while drafting in the background".into(),
                failures: self.compactor.consecutive_failures,
            }));
        };
        Some(self.apply_draft(draft, drafting.reason, drafting.encoding, drafting.started))
    }

    /// Copies out of the session what a draft of the compaction `options`
    /// asks for is made from; `None` when the span is empty.
    fn draft_input(&mut self, options: &CompactOptions) -> Result<Option<DraftInput>> {
        self.log.require_writer()?;
        for hook in &mut self.compactor.before_hooks {
            hook(options.reason);
        }
        let settings = options
            .context
            .clone()
            .over(self.settings.context.clone())
            .resolve();
        let encoding = options
            .encoding
            .or_else(|| self.view.encoding())
            .unwrap_or_default();
        let split = keep_tail_in_active_log(
            split_to_compact(self.log.events(), settings.raw_tail_turns, options.reason),
            self.compactor.archived_prefix,
        );
        let Some(span_last) = split.span.last() else {
            return Ok(None);
        };
        let span_last_id = span_last.id.clone();
        let old_base = self
            .view
            .snapshot()
            .map(|s| s.base.clone())
            .unwrap_or_default();
        let redaction = self.settings.redaction;
        let number = self.view.snapshot().map_or(0, |s| s.compactions) + 1;
        let failures_before = self.compactor.consecutive_failures;
        let summarizer = Arc::clone(&self.compactor.summarizer);
        let transcript = self.transcript_in(encoding);
        // Shared with the view, not copied: the draft's thread copies and
        // redacts the span, so starting a draft costs the caller little.
        let view_of = |events: &[Arc<Event>]| -> Vec<Arc<Event>> {
            events
                .iter()
                .filter(|e| e.is_in_model_view())
                .map(|e| transcript.shared_view_of(e))
                .collect()
        };
        // What a summary the agent compacted into replaced, its model no
        // longer saw: the summary stands for it (it is archived all the same).
        let seen_from = split
            .span
            .iter()
            .rposition(|e| e.replaces_history())
            .unwrap_or(0);
        Ok(Some(DraftInput {
            number,
            span_len: split.span.len(),
            span_last_id,
            old_base,
            span_view: view_of(&split.span[seen_from..]),
            tail_view: view_of(&split.tail),
            settings,
            tokenizer: encoding.tokenizer(),
            guard: transcript.guard().clone(),
            redaction,
            focus: options.focus.as_deref().map(|f| redact(f, redaction).0),
            failures_before,
            summarizer,
        }))
    }

    /// Applies `draft` if the active log still starts with its span and it
    /// frees space: archive, snapshot and log, then long-term memory.
    fn apply_draft(
        &mut self,
        draft: Draft,
        reason: CompactReason,
        encoding: Encoding,
        started: Instant,
    ) -> Result<CompactReport> {
        let tokens_before = self.transcript_in(encoding).unshrunk_total();
        let mut report = CompactReport {
            reason,
            tokens_before,
            tokens_after: tokens_before,
            tokens_saved: 0,
            events_compacted: 0,
            identifiers: draft.identifiers,
            identifier_survival: draft.identifier_survival,
            summarizer: self.compactor.summarizer_label(),
            fallback: None,
            focus: draft.focus.clone(),
            duration_ms: 0.0,
            applied: false,
            note: None,
        };
        let settled = self.compactor.settle(draft.outcome)?;
        report.fallback = settled.fallback;
        let number = self.view.snapshot().map_or(0, |s| s.compactions) + 1;
        // Only this session writes its log, and a manual compaction drops
        // the draft; this holds unless the files were changed under it.
        let span_intact = number == draft.number
            && draft
                .span_len
                .checked_sub(1)
                .and_then(|last| self.log.events().get(last))
                .is_some_and(|e| e.id == draft.span_last_id);
        if !span_intact {
            report.duration_ms = draft.drafting_ms;
            return Ok(report);
        }
        let tail = self.log.events()[draft.span_len..].to_vec();
        let before = self.transcript_in(encoding);
        let mut after = match draft.base_view.filter(|v| v.encoding() == encoding) {
            Some(base_view) => base_view,
            None => {
                let mut after = Transcript::new(encoding, before.guard().clone());
                after.extend(&draft.base);
                after
            }
        };
        after.remember_from(before, &tail);
        after.extend(&tail);
        after.forget_anchor();
        report.tokens_after = after.totals().total;
        report.events_compacted = draft.span_len;
        if report.tokens_after >= tokens_before && !reason.is_asked_for() {
            self.compactor.blocked_below = Some(tokens_before.saturating_add(tokens_before / 10));
            report.duration_ms = draft.drafting_ms + started.elapsed().as_secs_f64() * 1e3;
            return Ok(report);
        }
        report.tokens_saved = tokens_before.saturating_sub(report.tokens_after);
        report.note = (report.tokens_saved == 0).then(|| nothing_freed(&report));
        report.applied = true;
        let summary_text = draft
            .base
            .last()
            .map(|e| e.content.clone())
            .unwrap_or_default();
        let span: Vec<Event> = self.log.events()[..draft.span_len]
            .iter()
            .map(|e| Event::clone(e))
            .collect();
        let memory = CompactionMemory {
            episode: self.episode_of(&span, summary_text, number, &report),
            facts: self.new_facts(settled.facts, &span),
        };
        self.persist_compaction(&span, tail, draft.base, number, &report, memory)?;
        self.view.set_transcript(after);
        self.compactor.blocked_below = None;
        report.duration_ms = draft.drafting_ms + started.elapsed().as_secs_f64() * 1e3;
        for hook in &mut self.compactor.after_hooks {
            hook(&report);
        }
        Ok(report)
    }

    /// The report of a compaction that found nothing to compact.
    fn empty_report(&mut self, options: &CompactOptions, started: Instant) -> CompactReport {
        let encoding = options
            .encoding
            .or_else(|| self.view.encoding())
            .unwrap_or_default();
        let tokens = self.transcript_in(encoding).unshrunk_total();
        CompactReport {
            reason: options.reason,
            tokens_before: tokens,
            tokens_after: tokens,
            tokens_saved: 0,
            events_compacted: 0,
            identifiers: 0,
            identifier_survival: 1.0,
            summarizer: self.compactor.summarizer_label(),
            fallback: None,
            focus: options.focus.clone(),
            duration_ms: started.elapsed().as_secs_f64() * 1e3,
            applied: false,
            note: Some(self.why_nothing_to_compact(options.reason).to_owned()),
        }
    }

    /// Why a compaction for `reason` found nothing to fold.
    fn why_nothing_to_compact(&self, reason: CompactReason) -> &'static str {
        if self.log.events().is_empty() {
            "nothing to compact: no events since the last compaction"
        } else if reason.is_asked_for() {
            "nothing to compact yet: the only turn waits for the results of its tool calls; compact once they are in"
        } else {
            "nothing to compact: no turn is older than the raw tail"
        }
    }

    /// Re-derives the working context from the raw log — archive included —
    /// with the current settings (another strategy, or after a model switch):
    /// everything but the raw tail is summarized afresh into a new snapshot
    /// base. The tail stays within the active log, so the archive and the
    /// log still hold no event in common; nothing on disk changes before the
    /// new snapshot commits, and when the compaction is not applied the
    /// session is as it was.
    pub fn compact_from_raw(&mut self, options: &CompactOptions) -> Result<CompactReport> {
        self.log.require_writer()?;
        let archived = self.log.archived_events()?;
        let active = self.log.events();
        let mut history: Vec<Arc<Event>> = Vec::with_capacity(archived.len() + active.len());
        let mut seen = HashSet::with_capacity(archived.len());
        history.extend(
            archived
                .into_iter()
                .filter(|e| seen.insert(e.id.clone()))
                .map(Arc::new),
        );
        let archived_prefix = history.len();
        history.extend(active.iter().filter(|e| !seen.contains(&e.id)).cloned());
        let compactions = self.view.snapshot().map_or(0, |s| s.compactions);
        let fresh_base = Snapshot {
            compactions,
            ..Snapshot::default()
        };
        let events = self.log.swap_events(history);
        let set_aside = self.view.set_aside(fresh_base);
        self.compactor.archived_prefix = archived_prefix;
        let mut options = options.clone();
        options.reason = CompactReason::FromRaw;
        let report = self.compact(&options);
        self.compactor.archived_prefix = 0;
        if !matches!(&report, Ok(report) if report.applied) {
            self.log.swap_events(events);
            self.view.put_back(set_aside);
        }
        report
    }

    /// Recovers from a provider's context-overflow error: the first attempt
    /// compacts (reactive compaction) and prepares under a tighter budget, the
    /// next ones leave out the oldest turns (pairs kept together) under
    /// tighter budgets still; after three, a typed error.
    ///
    /// Returns the payload to retry with.
    pub fn recover_from_overflow(
        &mut self,
        error: &ProviderError,
        request: &PrepareRequest,
    ) -> Result<Prepared> {
        let ProviderError::ContextOverflow { message } = error else {
            return Err(Error::NotAnOverflow {
                message: format!("{error:?}"),
            });
        };
        let attempt = self.accounting.next_overflow_attempt();
        if attempt > MAX_OVERFLOW_RETRIES {
            return Err(Error::OverflowUnrecoverable {
                attempts: MAX_OVERFLOW_RETRIES,
                message: message.clone(),
            });
        }
        let model = self.accounting.model_info(&request.model);
        let window = request
            .budget
            .context_window
            .or(self.settings.budget.context_window)
            .unwrap_or(model.context_window);
        // The provider's count exceeded ours. When it says by how much, the
        // window is what its limit is in our count; else assume the window is
        // smaller than we thought, a bit more at each attempt.
        let scale = [0.75, 0.55, 0.35][(attempt - 1) as usize];
        let guessed = (window as f64 * scale) as u64;
        let tighter_window = self
            .window_in_our_count(message, &request.model)
            .unwrap_or(guessed);
        let mut tighter = request.clone();
        tighter.budget.context_window = Some(tighter_window);
        tighter.budget.max_output_tokens = Some(model.max_output_tokens.min(tighter_window / 8));
        if attempt == 1 && self.log.is_writer() {
            let options = CompactOptions {
                reason: CompactReason::Reactive,
                ..CompactOptions::default()
            };
            match self.compact(&options) {
                Ok(_) | Err(Error::Summarizer { .. }) => {}
                Err(other) => return Err(other),
            }
        } else {
            tighter.context.strategy = Some(Strategy::Trim);
        }
        self.prepare(&tighter)
    }

    /// The provider's limit, named in its overflow `message`, in the tokens
    /// agentmem counts: scaled by how the provider's count of the prompt that
    /// failed compares with agentmem's, with [`OVERFLOW_ROOM_PERCENT`] of it kept.
    fn window_in_our_count(&self, message: &str, model: &str) -> Option<u64> {
        // A prompt within the limit (an OpenAI message counting the reply
        // too) says nothing about how the two counts compare.
        let sizes = sizes_named_in(message).filter(|s| s.prompt_tokens > s.limit_tokens)?;
        let ours = self.accounting.last_count_for(model)?;
        let window = u128::from(sizes.limit_tokens) * u128::from(ours)
            / u128::from(sizes.prompt_tokens.max(1));
        u64::try_from(window * OVERFLOW_ROOM_PERCENT / 100).ok()
    }

    /// The summary's facts as the agent's semantic store keeps them, each
    /// with the events it came from and the trust those events earn.
    fn new_facts(&self, facts: Vec<SummaryFact>, span: &[Event]) -> Vec<NewFact> {
        facts
            .into_iter()
            .map(|fact| {
                let sources: Vec<&Event> = span
                    .iter()
                    .filter(|e| fact.source_event_ids.contains(&e.id))
                    .collect();
                let trust = if sources.iter().any(|e| e.trace_type == TraceType::User) {
                    Trust::User
                } else if sources
                    .iter()
                    .any(|e| e.trace_type == TraceType::ToolResult)
                {
                    Trust::Tool
                } else {
                    Trust::Assistant
                };
                NewFact {
                    // Kept in the snapshot until written, which holds nothing unredacted.
                    fact: redact(&fact.text, self.settings.redaction).0,
                    tags: vec![fact.kind.as_str().to_owned()],
                    confidence: fact.confidence,
                    salience: 0.5,
                    provenance: Provenance {
                        source_event_ids: fact.source_event_ids,
                        session_id: Some(self.log.id().to_string()),
                        extractor: self.compactor.summarizer.name().to_owned(),
                        extractor_version: self.compactor.summarizer.version().to_owned(),
                    },
                    trust,
                }
            })
            .collect()
    }

    /// Writes what the snapshot's compaction leaves in long-term memory,
    /// unless `meta.json` says it is done, then says it is: the last steps
    /// of a compaction, run again on open after a crash, each once.
    pub(super) fn leave_compaction_in_memory(&mut self) -> Result<()> {
        let Some(snapshot) = self.view.snapshot() else {
            return Ok(());
        };
        if snapshot.compactions <= self.log.meta().compactions_finished {
            return Ok(());
        }
        if let Some(memory) = snapshot.memory.as_ref() {
            self.append_episode_once(&memory.episode)?;
            self.fact_store().add_all_once(memory.facts.clone())?;
        }
        let compactions = snapshot.compactions;
        self.log.record_compactions_done(compactions)
    }

    /// The durable steps of the module docs.
    fn persist_compaction(
        &mut self,
        span: &[Event],
        tail: Vec<Arc<Event>>,
        base: Vec<Event>,
        number: u64,
        report: &CompactReport,
        memory: CompactionMemory,
    ) -> Result<()> {
        let archived_prefix = self.compactor.archived_prefix;
        let (first_kept, tail_events) = (tail.first().map(|e| e.id.clone()), tail.len());
        let working_memory = Some(self.working.mark());
        let snapshot =
            self.log
                .commit_compaction(span, tail, archived_prefix, |archived_events| Snapshot {
                    compactions: number,
                    created: now_ts(),
                    active_first_id: first_kept,
                    tail_events,
                    base,
                    report: serde_json::to_value(report).unwrap_or_default(),
                    working_memory,
                    archived_events: Some(archived_events),
                    memory: Some(memory),
                })?;
        self.view.set_snapshot(snapshot);
        self.leave_compaction_in_memory()
    }

    /// Ends the session: summarizes what happened since its last compaction
    /// into an episodic item of the agent (and its facts into the fact
    /// store), so later sessions start from it. Ending again without new
    /// events returns the same item; `None` when nothing was said.
    ///
    /// ```
    /// # use agentmem::{Event, Store, Durability};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let store = Store::open(dir.path(), Durability::Batch).unwrap();
    /// let mut session = store.create_session(&Default::default(), None).unwrap();
    /// session.ingest(vec![Event::user("Move the CI to GitHub Actions"), Event::assistant("Done: .github/workflows/ci.yml")]).unwrap();
    /// let episode = session.end().unwrap().unwrap();
    /// assert!(episode.summary.contains("GitHub Actions") && episode.tags == ["session-end"]);
    /// ```
    pub fn end(&mut self) -> Result<Option<EpisodicItem>> {
        self.log.require_writer()?;
        let said = |e: &Event| matches!(e.trace_type, TraceType::User | TraceType::Assistant);
        if !self.log.events().iter().any(|e| said(e)) {
            return Ok(None);
        }
        let id = format!("ep-{}-end-{}", self.log.id(), self.log.meta().events);
        if let Some(existing) = self.read_episodes()?.into_iter().find(|e| e.id == id) {
            return Ok(Some(existing));
        }
        let span: Vec<Event> = self
            .log
            .events()
            .iter()
            .map(|e| redact_event(Event::clone(e), self.settings.redaction))
            .collect();
        let request = SummaryRequest {
            events: &span,
            focus: None,
            max_tokens: SESSION_SUMMARY_MAX_TOKENS,
            tokenizer: Encoding::default().tokenizer(),
        };
        let failures = self.compactor.consecutive_failures;
        let outcome = summarize_or_fall_back(
            self.compactor.summarizer.as_ref(),
            &request,
            &span,
            failures,
        );
        let Settled { summary, facts, .. } = self.compactor.settle(outcome)?;
        let item = EpisodicItem {
            id,
            ts: span.last().map_or_else(now_ts, |e| e.ts),
            session_id: self.log.id().to_string(),
            turn_ids: turn_ids_of(&span),
            summary: redact(&summary, self.settings.redaction).0,
            tags: vec!["session-end".to_owned()],
            salience: SESSION_SUMMARY_SALIENCE,
        };
        match self.log.seam_memory() {
            None => append_episode(&self.settings.agent_dir, &item)?,
            Some(memory) => drop(memory.append_episode(self.log.agent(), &item)?),
        }
        let facts = self.new_facts(facts, &span);
        if !facts.is_empty() {
            self.fact_store().add_all(facts)?;
        }
        Ok(Some(item))
    }

    /// The agent's facts, where the session's backend keeps them.
    fn fact_store(&self) -> FactStore {
        match self.log.seam_memory() {
            None => FactStore::new(&self.settings.agent_dir, self.settings.redaction),
            Some(memory) => FactStore::on(memory, self.log.agent(), self.settings.redaction),
        }
    }

    /// The agent's episodic items, where the session's backend keeps them.
    fn read_episodes(&self) -> Result<Vec<EpisodicItem>> {
        match self.log.seam_memory() {
            None => read_episodes(&self.settings.agent_dir),
            Some(memory) => memory.read_episodes(self.log.agent()),
        }
    }

    /// Appends `item` to the agent's episodic items unless they hold its id.
    fn append_episode_once(&self, item: &EpisodicItem) -> Result<()> {
        match self.log.seam_memory() {
            None => append_episode_once(&self.settings.agent_dir, item).map(drop),
            Some(memory) => memory.append_episode(self.log.agent(), item).map(drop),
        }
    }

    /// The compacted stretch as an episodic item of the agent, so other
    /// sessions can recall it.
    fn episode_of(
        &self,
        span: &[Event],
        summary: String,
        number: u64,
        report: &CompactReport,
    ) -> EpisodicItem {
        let reason = serde_json::to_value(report.reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        EpisodicItem {
            id: format!("ep-{}-{number:04}", self.log.id()),
            ts: span.last().map_or_else(now_ts, |e| e.ts),
            session_id: self.log.id().to_string(),
            turn_ids: turn_ids_of(span),
            summary,
            tags: std::iter::once("compaction".to_owned())
                .chain(reason)
                .collect(),
            // A summary someone focused is one they meant to keep.
            salience: if report.focus.is_some() { 0.8 } else { 0.5 },
        }
    }
}

/// A summary the session keeps, with its facts.
struct Settled {
    summary: String,
    facts: Vec<SummaryFact>,
    /// Why a trim stood in for the summarizer, when one did.
    fallback: Option<String>,
}

/// A compaction being drafted on its own thread.
#[derive(Debug)]
struct Drafting {
    state: DraftState,
    /// How many events it folds.
    events: usize,
    reason: CompactReason,
    encoding: Encoding,
    started: Instant,
}

/// Where a draft is.
#[derive(Debug)]
enum DraftState {
    /// Its thread is still at work (or done, not joined yet).
    Running(std::thread::JoinHandle<Draft>),
    /// Its thread was joined: the draft, or the panic that ended it.
    Done(std::thread::Result<Box<Draft>>),
    /// Moved out while being joined; never seen by other code.
    Taken,
}

/// Whether applying a draft waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DraftWait {
    /// Applies it only if it is ready; else it keeps drafting.
    IfReady,
    /// Waits for it, then applies it.
    UntilReady,
}

/// The longest session-end summary, in tokens.
const SESSION_SUMMARY_MAX_TOKENS: u64 = 1_000;
/// A session's own summary outranks a compaction's by default.
const SESSION_SUMMARY_SALIENCE: f32 = 0.6;

/// The distinct turns of `events`, in order.
fn turn_ids_of(events: &[Event]) -> Vec<String> {
    let mut turn_ids: Vec<String> = Vec::new();
    for event in events {
        if !turn_ids.contains(&event.turn_id) {
            turn_ids.push(event.turn_id.clone());
        }
    }
    turn_ids
}

/// The split with its tail inside the active log, which holds the log's events
/// from `archived_prefix` on (the archive the rest): a compaction from the
/// raw log summarizes the archive anew but archives nothing twice.
fn keep_tail_in_active_log<E>(split: Split<E>, archived_prefix: usize) -> Split<E> {
    if split.span.len() >= archived_prefix {
        return split;
    }
    let mut span = split.span;
    span.extend(split.tail);
    let tail = span.split_off(archived_prefix.min(span.len()));
    Split { span, tail }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
