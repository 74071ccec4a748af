//! `Session::prepare`: the model's view, shaped to fit, rendered for one API.

use super::accounting::LastPrepare;
use super::compaction::DraftWait;
use super::{CompactOptions, Session};
use crate::base::error::{Error, Result};
use crate::memory::injector::MemoryBlocks;
use crate::pipeline::compact::CompactReason;
use crate::pipeline::measure::{render_and_measure, Limits, Measured, PrepareRequest, Prepared};
use crate::pipeline::strategy::{CompactionTiming, MemoryInjection, PipelineSettings, Strategy};
use crate::pipeline::tiers::{
    apply_tiers, microcompact_old_results, repair_pairs, trim_oldest_turns, Action, Shrink,
    AUTO_TIERS,
};
use crate::pipeline::tiers::{
    budget_tool_results, drop_oldest_items, leave_out_turns_out_of_reach,
};
use crate::pipeline::transcript::{measure, message_count, Bound};
use crate::tokens::budget::Budget;
use crate::tokens::Encoding;

/// Where the tiers aim once the trigger is crossed, as a percentage of it.
pub(crate) const SHRINK_TARGET_PERCENT: u64 = 85;

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
    /// first prepare that finds it ready, none waiting for it. Tool pairs are then repaired for the provider on the
    /// copy that is rendered. Every step is listed in `stats.actions`.
    ///
    /// ```
    /// # use agentmem::{Event, Store, Durability};
    /// use agentmem::{PrepareRequest, Target};
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
        let model = self.accounting.model_info(&request.model);
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
            MemoryInjection::On => {
                self.injector
                    .blocks(self.log.events(), self.log.feeder(), tokenizer)
            }
            MemoryInjection::Off => MemoryBlocks::default(),
        };
        let working = self.working.section(tokenizer);
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
        let overhead = self.accounting.request_overhead(request, tokenizer);
        let anchor = self.view.in_encoding(encoding, self.log.events()).anchor();
        let anchor_offset = self
            .accounting
            .measured_offset(&model, overhead.total(), anchor);
        self.accounting.note_overhead(overhead.total());
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
        let mut actions = self.shrink_to(&trigger, &must_fit, encoding)?;
        let calibration = self.accounting.calibration().get(&model.family());
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
            crate::pipeline::normalize::pairs_are_intact(
                transcript.items().iter().map(|i| &*i.event)
            ),
            "the running pair check must agree with a full one"
        );
        let (transcript, renders) = self.view.rendering();
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
            render_and_measure(transcript.items(), limits, request, view, actions, renders)
        } else {
            // On a copy: a pending call may still get its real result, and a
            // last-resort cut is for this call only.
            let mut items = transcript.items().to_vec();
            actions.extend(repair_pairs(&mut items, tokenizer));
            if settings.strategy != Strategy::None {
                actions.extend(fit_as_last_resort(&mut items, &must_fit));
            }
            let view = measured(measure(&items, tokenizer), message_count(&items));
            render_and_measure(&items, limits, request, view, actions, renders)
        };
        let mut prepared = prepared;
        let memory_tokens = match settings.memory {
            MemoryInjection::On => self.injector.tokens(),
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
        self.accounting.record_prepare(LastPrepare {
            model: request.model.clone(),
            counted_tokens: prepared.stats.counted_tokens,
            view_tokens: prepared
                .stats
                .counted_tokens
                .saturating_sub(overhead.total()),
            events: self.log.events().len(),
            offset_tokens: offset,
            trigger_tokens: prepared.stats.trigger_tokens,
            estimated: estimated > 0,
        });
        Ok(prepared)
    }

    /// Brings the view under `shrink.target` with the strategy: view-level
    /// tiers first, then (for `auto` and `summarize`) a persistent compaction,
    /// then the tiers again on what the compaction left. A compaction drafted
    /// in the background is applied first when it is ready. Before the tiers,
    /// turns no call within `must_fit` could hold leave the view.
    fn shrink_to(
        &mut self,
        trigger: &Shrink<'_>,
        must_fit: &Shrink<'_>,
        encoding: Encoding,
    ) -> Result<Vec<Action>> {
        let settings = trigger.settings;
        // Inline timing asked for while a draft is out: the compaction this
        // call would have run inline is that one, so it is waited for.
        let wait = match settings.compaction_timing {
            CompactionTiming::Background => DraftWait::IfReady,
            CompactionTiming::Inline => DraftWait::UntilReady,
        };
        let mut actions: Vec<Action> = self
            .finish_drafting(wait)
            .map(action_of)
            .into_iter()
            .collect();
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
                    .reshape(|items| shrink_view(items, settings, shrink, must_fit)),
            );
        }
        let compacts = matches!(settings.strategy, Strategy::Auto | Strategy::Summarize);
        if compacts && over(self) {
            let action = self.compact_for(encoding, trigger);
            let after = match action {
                // Sent as it is (fitted to the budget if need be): the
                // summary may be ready by the next call.
                Action::CompactionStarted { .. } => None,
                // Still drafting: the oldest turns leave the view until the
                // compaction replaces it, so the calls meanwhile are back
                // under the trigger and cost what is new, not a fitting of
                // the whole view each.
                Action::CompactionPending { .. } => Some(Shaping::OldestTurnsOut),
                _ => Some(Shaping::Strategy),
            };
            actions.push(action);
            if let Some(shaping) = after.filter(|_| over(self)) {
                actions.extend(
                    self.transcript_in_mut(encoding)
                        .reshape(|items| match shaping {
                            Shaping::Strategy => shrink_view(items, settings, shrink, must_fit),
                            Shaping::OldestTurnsOut => {
                                trim_oldest_turns(items, shrink).into_iter().collect()
                            }
                        }),
                );
            }
        }
        Ok(actions)
    }

    /// Runs an automatic compaction, or starts drafting it in the background
    /// when the settings say so, and says what came of it. While a draft is
    /// out, no other starts: the call is kept within the budget without it.
    fn compact_for(&mut self, encoding: Encoding, trigger: &Shrink<'_>) -> Action {
        if let Some(events) = self.drafting_events() {
            return Action::CompactionPending { events };
        }
        let total = self.transcript_in(encoding).unshrunk_total();
        if self.compactor.waits_to_grow_from(total) {
            return Action::CompactionSkipped {
                reason: "the last compaction freed nothing; waiting for the context to grow".into(),
            };
        }
        if !self.log.is_writer() {
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
        match trigger.settings.compaction_timing {
            // Over the budget as it is, the call is fitted by the last
            // resort meanwhile (the oldest turns left out of this call).
            CompactionTiming::Background => match self.start_drafting(&options) {
                Ok(0) => Action::CompactionSkipped {
                    reason: NOTHING_TO_COMPACT.into(),
                },
                Ok(events) => Action::CompactionStarted { events },
                Err(error) => action_of(Err(error)),
            },
            CompactionTiming::Inline => action_of(self.compact(&options)),
        }
    }
}

/// How the view is shrunk after a compaction was due.
#[derive(Debug, Clone, Copy)]
enum Shaping {
    /// The strategy's view-level tiers, on what the compaction left.
    Strategy,
    /// The oldest whole turns left out, while a draft is out.
    OldestTurnsOut,
}

/// Why a compaction that ran was not applied.
const NOTHING_TO_COMPACT: &str = "nothing to compact, or it would free nothing";

/// The pipeline's account of an automatic compaction.
fn action_of(result: Result<crate::pipeline::compact::CompactReport>) -> Action {
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
    items: &mut Vec<crate::pipeline::transcript::ViewItem>,
    must_fit: &Shrink<'_>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    let over = |items: &[crate::pipeline::transcript::ViewItem]| {
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

/// The view-level part of each strategy, after the turns out of
/// `must_fit`'s reach left the view (all but `none`, which sends everything).
fn shrink_view(
    items: &mut Vec<crate::pipeline::transcript::ViewItem>,
    settings: &PipelineSettings,
    shrink: &Shrink<'_>,
    must_fit: &Shrink<'_>,
) -> Vec<Action> {
    let mut actions: Vec<Action> = match settings.strategy {
        Strategy::None => return Vec::new(),
        Strategy::Summarize | Strategy::Trim | Strategy::Placeholder | Strategy::Auto => {
            leave_out_turns_out_of_reach(items, must_fit)
                .into_iter()
                .collect()
        }
    };
    match settings.strategy {
        Strategy::None | Strategy::Summarize => {}
        Strategy::Trim => actions.extend(trim_oldest_turns(items, shrink)),
        Strategy::Placeholder => actions.extend(microcompact_old_results(items, shrink)),
        Strategy::Auto => actions.extend(apply_tiers(items, AUTO_TIERS, shrink)),
    }
    actions
}
