//! `Session::prepare`: the model's view, shaped to fit, rendered for one API.

use std::time::{Duration, Instant};

use super::{CompactOptions, LastPrepare, MemoryStamp, OverheadCache, Session};
use super::{MemoryBlocks, MemoryCache};
use crate::context::compact::CompactReason;
use crate::context::strategy::{CompactionTiming, MemoryInjection, PipelineSettings, Strategy};
use crate::context::tiers::{
    apply_tiers, microcompact_old_results, repair_pairs, trim_oldest_turns, Action, Shrink,
    AUTO_TIERS,
};
use crate::context::tiers::{budget_tool_results, drop_oldest_items};
use crate::error::{Error, Result};
use crate::memory::project::{cross_session_block, memory_block, memory_stamp};
use crate::prepare::{
    prepare, request_overhead, Limits, Measured, PrepareRequest, Prepared, Sections,
};
use crate::search::vectors::EMBED_BATCH_TEXTS;
use crate::tokens::budget::Budget;
use crate::tokens::registry::ModelInfo;
use crate::tokens::Encoding;
use crate::transcript::{measure, message_count, Bound, Transcript};

/// Model names whose registry entries a session remembers.
const RECENT_MODELS: usize = 4;

/// How long a look at the memory files stands for calls that come faster.
///
/// Looking costs a `stat` per file (a few microseconds each on a virtual
/// machine, the largest cost of a call that needs no counting), while an
/// agent's calls come seconds apart: a change made by another process shows
/// from the first call after this interval. This process's own memory
/// writes show at once ([`crate::memory::writes`]).
pub const MEMORY_RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Where the tiers aim once the trigger is crossed, as a percentage of it.
pub const SHRINK_TARGET_PERCENT: u64 = 85;

impl Session {
    /// Shapes the session's context for a model call and renders it.
    ///
    /// When the context passes the trigger, the strategy shrinks the view
    /// (for `auto`: budgeting, snip, microcompact, then a persistent
    /// compaction, stopping as soon as it is under the trigger); if it still
    /// exceeds the input budget, the oldest turns are left out so the payload
    /// fits. View-level changes last for the session's lifetime, so each
    /// prepare only handles what is new. With [`CompactionTiming::Background`]
    /// the compaction is drafted on a thread of its own and applied by the
    /// next prepare. Tool pairs are then repaired for the provider on the
    /// copy that is rendered. Every step is listed in `stats.actions`.
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
        let model = self.model_info(&request.model);
        let budget = Budget::resolve(
            model.context_window,
            model.max_output_tokens,
            request.budget.over(self.settings.budget),
        );
        let settings = request
            .context
            .clone()
            .over(self.settings.context.clone())
            .resolve();
        let encoding = Encoding::for_model(&request.model);
        let tokenizer = encoding.tokenizer();
        // Never compacted away: MEMORY.md and project files ride in the
        // system prompt, what changes (recalled memories, the working
        // memory) in the live context after the conversation.
        let memory = match settings.memory {
            MemoryInjection::On => self.memory_blocks(tokenizer),
            MemoryInjection::Off => MemoryBlocks::default(),
        };
        let working = self.working_memory_section(tokenizer);
        let with_memory = with_memory(
            request,
            memory.lasting.as_deref(),
            [
                memory.recalled.as_deref(),
                working.as_ref().map(|(text, _)| text.as_str()),
            ],
        );
        let request = &with_memory;
        // What the provider counts beyond the view: measured when it can be,
        // else the request's own system prompt, tool schemas and priming.
        let overhead = self.request_overhead(request, tokenizer);
        let anchor_offset = self.measured_offset(&model, encoding, overhead.total());
        self.latest_overhead_tokens = Some(overhead.total());
        let offset = anchor_offset.unwrap_or(overhead.total());
        let trigger = Shrink {
            target: budget.trigger_tokens().saturating_sub(offset),
            tokenizer,
            settings: &settings,
        };
        let must_fit = Shrink {
            target: budget.input_budget().saturating_sub(offset),
            ..trigger
        };
        let mut actions = self.shrink_to(&trigger, must_fit.target, encoding)?;
        let calibration = self.calibration.get(&model.family());
        let transcript = self.view_in(encoding);
        let fits = settings.strategy == Strategy::None
            || transcript.is_below(must_fit.target.saturating_add(1), Bound::Certain);
        let intact = transcript.pairs_are_intact();
        if !(intact && fits) {
            // A repaired or cut copy is shaped item by item, by counts.
            transcript.count_now();
        }
        let estimated = transcript.estimated_tokens();
        debug_assert_eq!(
            intact,
            crate::context::normalize::pairs_are_intact(
                transcript.items().iter().map(|i| &*i.event)
            ),
            "the running pair check must agree with a full one"
        );
        let transcript = self.transcript.as_ref().expect("shaped above");
        let renders = &mut self.renders;
        let limits = Limits {
            tokenizer,
            model: &model,
            budget,
        };
        let measured = |view, messages| Measured {
            view,
            messages,
            offset: anchor_offset,
            overhead,
            calibration,
            estimated,
        };
        let prepared = if intact && fits {
            let view = measured(transcript.totals(), transcript.message_count());
            prepare(transcript.items(), limits, request, view, actions, renders)
        } else {
            // On a copy: a pending call may still get its real result, and a
            // last-resort cut is for this call only.
            let mut items = transcript.items().to_vec();
            actions.extend(repair_pairs(&mut items, tokenizer));
            if settings.strategy != Strategy::None {
                actions.extend(fit_as_last_resort(&mut items, &must_fit));
            }
            let view = measured(measure(&items, tokenizer), message_count(&items));
            prepare(&items, limits, request, view, actions, renders)
        };
        let mut prepared = prepared;
        let memory_tokens = match settings.memory {
            MemoryInjection::On => self.memory_cache.as_ref().map_or(0, |cache| cache.tokens),
            MemoryInjection::Off => 0,
        };
        let working_tokens = working.map_or(0, |(_, tokens)| tokens);
        let sections = &mut prepared.stats.sections;
        sections.memory = memory_tokens;
        sections.working_memory = working_tokens;
        sections.system = sections
            .system
            .saturating_sub(memory_tokens)
            .saturating_sub(working_tokens);
        self.last_prepare = Some(LastPrepare {
            model: request.model.clone(),
            counted_tokens: prepared.stats.counted_tokens,
            view_tokens: prepared
                .stats
                .counted_tokens
                .saturating_sub(overhead.total()),
            events: self.events.len(),
            offset_tokens: offset,
            trigger_tokens: prepared.stats.trigger_tokens,
            estimated: estimated > 0,
        });
        Ok(prepared)
    }

    /// Brings the view under `shrink.target` with the strategy: view-level
    /// tiers first, then (for `auto` and `summarize`) a persistent compaction,
    /// then the tiers again on what the compaction left. A compaction drafted
    /// in the background since the last prepare is applied first.
    fn shrink_to(
        &mut self,
        trigger: &Shrink<'_>,
        input_budget: u64,
        encoding: Encoding,
    ) -> Result<Vec<Action>> {
        let settings = trigger.settings;
        let mut actions: Vec<Action> = self.finish_drafting().map(action_of).into_iter().collect();
        let over = |session: &mut Session| {
            !session
                .view_in(encoding)
                .is_below(trigger.target, Bound::Calibrated)
        };
        // Once over the trigger, shrink below it with room to spare, so the
        // next calls do not cross it again straight away.
        let shrink = &Shrink {
            target: trigger.target.saturating_mul(SHRINK_TARGET_PERCENT) / 100,
            ..*trigger
        };
        if settings.max_turns.is_some() || over(self) {
            actions.extend(
                self.transcript_in_mut(encoding)
                    .reshape(|items| shrink_view(items, settings, shrink)),
            );
        }
        let compacts = matches!(settings.strategy, Strategy::Auto | Strategy::Summarize);
        if compacts && over(self) {
            let action = self.compact_for(encoding, trigger, input_budget);
            let drafting = matches!(action, Action::CompactionStarted { .. });
            actions.push(action);
            if !drafting && over(self) {
                actions.extend(
                    self.transcript_in_mut(encoding)
                        .reshape(|items| shrink_view(items, settings, shrink)),
                );
            }
        }
        Ok(actions)
    }

    /// Runs an automatic compaction, or starts drafting it in the background
    /// when the settings say so and the context fits `input_budget` as it
    /// is, and says what came of it.
    fn compact_for(
        &mut self,
        encoding: Encoding,
        trigger: &Shrink<'_>,
        input_budget: u64,
    ) -> Action {
        let total = self.transcript_in(encoding).unshrunk_total();
        if self
            .compactor
            .blocked_below
            .is_some_and(|floor| total < floor)
        {
            return Action::CompactionSkipped {
                reason: "the last compaction freed nothing; waiting for the context to grow".into(),
            };
        }
        if self.writer.is_none() {
            return Action::CompactionWouldRun;
        }
        // The summary and the kept user messages get at most a quarter of
        // the target each, so a small budget is not filled by the snapshot.
        let quarter = trigger.target / 4;
        let mut options = CompactOptions {
            reason: CompactReason::Auto,
            encoding: Some(encoding),
            ..CompactOptions::default()
        };
        options.context = trigger.settings.as_layer();
        options.context.summary_max_tokens = Some(trigger.settings.summary_max_tokens.min(quarter));
        options.context.kept_user_message_tokens =
            Some(trigger.settings.kept_user_message_tokens.min(quarter));
        let fits = self.transcript_in(encoding).totals().total <= input_budget;
        match trigger.settings.compaction_timing {
            CompactionTiming::Background if fits => match self.start_drafting(&options) {
                Ok(0) => Action::CompactionSkipped {
                    reason: NOTHING_TO_COMPACT.into(),
                },
                Ok(events) => Action::CompactionStarted { events },
                Err(error) => action_of(Err(error)),
            },
            CompactionTiming::Background | CompactionTiming::Inline => {
                action_of(self.compact(&options))
            }
        }
    }

    /// The request's own tokens (system prompt with memory, tool schemas,
    /// reply priming), counted once for as long as they stay the same.
    fn request_overhead(
        &mut self,
        request: &PrepareRequest,
        tokenizer: crate::tokens::Tokenizer,
    ) -> Sections {
        if let Some(cached) = &self.overhead_cache {
            if cached.encoding == tokenizer.encoding()
                && cached.system == request.system
                && cached.live_context == request.live_context
                && cached.tools == request.tools
            {
                return cached.sections;
            }
        }
        let sections = request_overhead(request, tokenizer);
        self.overhead_cache = Some(OverheadCache {
            system: request.system.clone(),
            live_context: request.live_context.clone(),
            tools: request.tools.clone(),
            encoding: tokenizer.encoding(),
            sections,
        });
        sections
    }

    /// MEMORY.md, project files, and what earlier sessions left: recalled
    /// for the latest user message that says something (not an "ok") when
    /// there is one, else the agent's best facts and latest summaries.
    /// Rebuilt only when a memory file or that message changed.
    fn memory_blocks(&mut self, tokenizer: crate::tokens::Tokenizer) -> MemoryBlocks {
        let (stamp, looked_at, writes) = self.memory_files_stamp();
        // The latest question, not an "ok, go ahead" after it: that would
        // recall noise and change the live context for nothing.
        let query = self
            .events
            .iter()
            .rev()
            .filter(|e| e.trace_type == crate::event::TraceType::User)
            .find(|e| crate::search::query::says_something(&e.content))
            .map(|e| e.content.clone());
        let encoding = tokenizer.encoding();
        let files_unchanged = self
            .memory_cache
            .as_ref()
            .is_some_and(|c| c.stamp == stamp && c.encoding == encoding);
        if let Some(cache) = &mut self.memory_cache {
            if files_unchanged && cache.query == query {
                // The look stands for the next calls: it found nothing new.
                cache.looked_at = looked_at;
                cache.writes = writes;
                return cache.blocks.clone();
            }
        }
        // The parts made of files alone are rebuilt only when a file changed.
        let (own, cross_session) = match (&self.memory_cache, files_unchanged) {
            (Some(cache), true) => (cache.own.clone(), cache.cross_session.clone()),
            _ => {
                let settings = &self.settings.memory;
                let agent_dir = &self.settings.agent_dir;
                (
                    memory_block(Some(agent_dir), settings, tokenizer),
                    cross_session_block(
                        agent_dir,
                        self.id.as_str(),
                        settings,
                        self.settings.redaction,
                        tokenizer,
                    ),
                )
            }
        };
        let blocks = if query.is_none() || self.nothing_to_recall() {
            // What stands in for recall then changes only with its files:
            // it lasts, in the system prompt.
            let lasting = [own.as_deref(), cross_session.as_deref()];
            let lasting: Vec<&str> = lasting.into_iter().flatten().collect();
            MemoryBlocks {
                lasting: (!lasting.is_empty()).then(|| lasting.join("\n\n")),
                recalled: None,
            }
        } else {
            let recalled = query
                .as_deref()
                .and_then(|q| self.recall_block(q, tokenizer));
            MemoryBlocks {
                lasting: own.clone(),
                recalled: recalled.or_else(|| cross_session.clone()),
            }
        };
        let tokens = match &self.memory_cache {
            Some(cache) if cache.blocks == blocks && cache.encoding == encoding => cache.tokens,
            _ => [&blocks.lasting, &blocks.recalled]
                .into_iter()
                .flatten()
                .map(|b| tokenizer.count(b) as u64)
                .sum(),
        };
        self.memory_cache = Some(MemoryCache {
            stamp,
            looked_at,
            writes,
            encoding,
            query,
            own,
            cross_session,
            blocks: blocks.clone(),
            tokens,
        });
        blocks
    }

    /// The memory files' stamp, when it was taken, and this process's
    /// memory writes just before: the cached stamp while this process wrote
    /// no memory since and it is younger than [`MEMORY_RECHECK_INTERVAL`],
    /// else a fresh look at the files.
    fn memory_files_stamp(&self) -> (MemoryStamp, Instant, u64) {
        let writes = crate::memory::writes();
        if let Some(cache) = &self.memory_cache {
            if cache.writes == writes && cache.looked_at.elapsed() < MEMORY_RECHECK_INTERVAL {
                return (cache.stamp.clone(), cache.looked_at, writes);
            }
        }
        let stamp = memory_stamp(&self.settings.agent_dir, &self.settings.memory);
        (stamp, Instant::now(), writes)
    }

    /// Whether recall can find nothing: the session is alone with its own
    /// history in the agent's index (whose facts its summary holds; facts
    /// given by hand are in the block that stands in), or the index cannot
    /// be read. Alone, a session does not refresh the index's copy of the
    /// facts after each of its compactions. A writer's indexer has the
    /// answer ready, as of the latest events it indexed.
    fn nothing_to_recall(&mut self) -> bool {
        let session = self.id.to_string();
        match self.feeder.as_ref().and_then(|f| f.memories_beyond()) {
            Some(beyond) => !beyond,
            None => self
                .index_mut()
                .is_none_or(|index| !index.has_memories_beyond(&session).unwrap_or(false)),
        }
    }

    /// Facts, episodes and other sessions' events recalled for `query`,
    /// under the cross-session budget, when there is something to recall
    /// ([`Session::nothing_to_recall`]); `None` when nothing matched (the
    /// salience-ordered block stands in).
    fn recall_block(&mut self, query: &str, tokenizer: crate::tokens::Tokenizer) -> Option<String> {
        let budget = self
            .settings
            .memory
            .cross_session_tokens
            .unwrap_or(crate::memory::project::DEFAULT_CROSS_SESSION_TOKENS);
        let heading = crate::memory::project::CROSS_SESSION_HEADING;
        let budget = budget.checked_sub(tokenizer.count(heading) as u64 + 1)?;
        let agent_dir = self.settings.agent_dir.clone();
        let session = self.id.to_string();
        let embedder = self.settings.embedder.clone();
        let redaction = self.settings.redaction;
        let index = self.index_mut()?;
        crate::recall::refresh_memories(index, &agent_dir).ok()?;
        let mut request = crate::recall::RecallRequest::new(query, budget);
        request.exclude_session = Some(session);
        // A backlog larger than one call (a history older than the
        // embedder) is not embedded on the way to a model call: until a
        // recall outside prepare catches up, this one is lexical.
        let vectors = embedder
            .as_ref()
            .map(|e| &*e.0 as &dyn crate::recall::Embedder)
            .filter(|e| {
                index
                    .unembedded_documents(e.model())
                    .is_ok_and(|backlog| backlog <= EMBED_BATCH_TEXTS as u64)
            });
        let recall =
            |vectors| crate::recall::recall(index, &request, tokenizer, vectors, None, redaction);
        let recalled = match recall(vectors) {
            Ok(recalled) => recalled,
            // An embedder that is down must not cost the context its
            // memories: lexical recall still answers.
            Err(_) if vectors.is_some() => recall(None).ok()?,
            Err(_) => return None,
        };
        (!recalled.items.is_empty()).then(|| format!("{heading}\n{}", recalled.block))
    }

    /// The transcript counted in `encoding`, built on first use, every
    /// event in it counted.
    pub fn transcript_in(&mut self, encoding: Encoding) -> &Transcript {
        self.transcript_in_mut(encoding)
    }

    fn transcript_in_mut(&mut self, encoding: Encoding) -> &mut Transcript {
        let transcript = self.view_in(encoding);
        transcript.count_now();
        transcript
    }

    /// The transcript in `encoding`, events appended since the last check
    /// maybe not counted yet (see [`Transcript::extend_counting_later`]).
    fn view_in(&mut self, encoding: Encoding) -> &mut Transcript {
        let stale = self
            .transcript
            .as_ref()
            .is_none_or(|t| t.encoding() != encoding);
        if stale {
            self.transcript = Some(self.build_transcript(encoding));
        }
        self.transcript.as_mut().expect("just built")
    }

    /// The view counted from scratch: snapshot base, the raw tail left by the
    /// last compaction (its usage measured the old context, so it anchors
    /// nothing), then everything after.
    pub(super) fn build_transcript(&self, encoding: Encoding) -> Transcript {
        let mut transcript = Transcript::new(encoding, self.settings.guard.clone());
        let tail = self
            .snapshot
            .as_ref()
            .map_or(0, |s| s.tail_events.min(self.events.len()));
        if let Some(snapshot) = &self.snapshot {
            transcript.extend(&snapshot.base);
            transcript.extend(&self.events[..tail]);
            transcript.forget_anchor();
        }
        transcript.extend(&self.events[tail..]);
        transcript
    }

    /// The registry's entry for `name`, remembered for the last few names
    /// asked (the request's model, the one a usage report named): an agent
    /// asks for the same model call after call, and a lookup matches the
    /// name against the whole table.
    pub(super) fn model_info(&mut self, name: &str) -> ModelInfo {
        if let Some((_, info)) = self.recent_models.iter().find(|(n, _)| n == name) {
            return info.clone();
        }
        let info = self.settings.registry.lookup(name);
        if self.recent_models.len() == RECENT_MODELS {
            self.recent_models.remove(0);
        }
        self.recent_models.push((name.to_owned(), info.clone()));
        info
    }

    /// Tokens the provider counts that the view does not hold — the hidden
    /// system prompt of an imported agent, the provider's own framing — from
    /// the last usage this model reported. A measured figure: counting never
    /// overrides it, but it moves by as much as what agentmem counts beside
    /// the messages changed since that call (a new question recalls other
    /// memories; tools come and go).
    fn measured_offset(
        &mut self,
        model: &ModelInfo,
        encoding: Encoding,
        overhead: u64,
    ) -> Option<u64> {
        let unprepared = self.unprepared_call_overhead_tokens;
        let anchor = self.view_in(encoding).anchor()?;
        let measured = anchor
            .reported_prompt_tokens
            .saturating_sub(anchor.transcript_tokens_before);
        let offset = match anchor.counted_overhead.or(unprepared) {
            Some(then) => measured.saturating_add(overhead).saturating_sub(then),
            None => measured,
        };
        match anchor.model.clone() {
            Some(name) => (self.model_info(&name).family() == model.family()).then_some(offset),
            None => Some(offset),
        }
    }
}

/// Why a compaction that ran was not applied.
const NOTHING_TO_COMPACT: &str = "nothing to compact, or it would free nothing";

/// The pipeline's account of an automatic compaction.
fn action_of(result: Result<crate::context::compact::CompactReport>) -> Action {
    match result {
        Ok(report) if report.applied => Action::Compacted {
            events: report.events_compacted,
            tokens_saved: report.tokens_saved,
        },
        Ok(_) => Action::CompactionSkipped {
            reason: NOTHING_TO_COMPACT.into(),
        },
        Err(Error::Summarizer { message, failures }) => Action::CompactionSkipped {
            reason: format!(
                "the summarizer failed ({failures} in a row): {message}; history untouched"
            ),
        },
        Err(other) => Action::CompactionSkipped {
            reason: other.to_string(),
        },
    }
}

/// The request with the `lasting` memory block appended to its system
/// prompt, and the `live` blocks (recalled memories, the working-memory
/// section) to its live context, in order.
fn with_memory<'a>(
    request: &PrepareRequest,
    lasting: Option<&str>,
    live: impl IntoIterator<Item = Option<&'a str>>,
) -> PrepareRequest {
    let join = |first: Option<String>, block: &str| match first {
        Some(text) => format!("{text}\n\n{block}"),
        None => block.to_owned(),
    };
    let mut request = request.clone();
    if let Some(block) = lasting {
        request.system = Some(join(request.system.take(), block));
    }
    for block in live.into_iter().flatten() {
        request.live_context = Some(join(request.live_context.take(), block));
    }
    request
}

/// Makes the view fit the input budget whatever it takes, short of the
/// latest user message: the oldest whole turns first, then every tool result
/// cut down and replaced by its placeholder, the latest ones included.
fn fit_as_last_resort(
    items: &mut Vec<crate::transcript::ViewItem>,
    must_fit: &Shrink<'_>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    let over = |items: &[crate::transcript::ViewItem]| {
        measure(items, must_fit.tokenizer).total > must_fit.target
    };
    if over(items) {
        actions.extend(trim_oldest_turns(items, must_fit));
    }
    if over(items) {
        let keep_none = PipelineSettings {
            keep_tool_results: 0,
            protected_tools: Vec::new(),
            ..must_fit.settings.clone()
        };
        let everything = Shrink {
            settings: &keep_none,
            ..*must_fit
        };
        actions.extend(budget_tool_results(items, &everything));
        actions.extend(microcompact_old_results(items, &everything));
    }
    // Measured after each step: placeholders and framing can leave it a few tokens over.
    while over(items) {
        match drop_oldest_items(items, must_fit) {
            Some(action) => actions.push(action),
            None => break,
        }
    }
    actions
}

/// The view-level part of each strategy.
fn shrink_view(
    items: &mut Vec<crate::transcript::ViewItem>,
    settings: &PipelineSettings,
    shrink: &Shrink<'_>,
) -> Vec<Action> {
    match settings.strategy {
        Strategy::None | Strategy::Summarize => Vec::new(),
        Strategy::Trim => trim_oldest_turns(items, shrink).into_iter().collect(),
        Strategy::Placeholder => microcompact_old_results(items, shrink)
            .into_iter()
            .collect(),
        Strategy::Auto => apply_tiers(items, AUTO_TIERS, shrink),
    }
}
