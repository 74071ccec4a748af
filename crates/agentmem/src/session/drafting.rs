//! A compaction's draft: the summary and the new snapshot base, worked out
//! from a copy of what is compacted. Pure and owned, so it runs on the
//! session's thread or, for [`CompactionTiming::Background`], on its own
//! while the model answers; only applying it (`Session::compact` and the
//! prepare after the one that started it) touches the session's files.
//!
//! [`CompactionTiming::Background`]: crate::pipeline::strategy::CompactionTiming::Background

use std::sync::Arc;
use std::time::Instant;

use crate::base::event::Event;
use crate::pipeline::compact::{build_base, fallback_summary};
use crate::pipeline::guard::GuardPolicy;
use crate::pipeline::strategy::{PipelineSettings, SUMMARIZER_FAILURES_BEFORE_FALLBACK};
use crate::pipeline::transcript::Transcript;
use crate::redact::{redact, redact_event, RedactionPolicy};
use crate::summarize::fidelity::check_fidelity;
use crate::summarize::{summarize_hierarchical, Summarizer, SummaryFact, SummaryRequest};
use crate::tokens::Tokenizer;

/// The summarizer a session compacts with, shared with a draft's thread.
pub(crate) type SharedSummarizer = Arc<dyn Summarizer + Send + Sync>;

/// Everything a draft is made from, copied out of the session.
pub(super) struct DraftInput {
    /// The number the compaction will have (the snapshot's count plus one).
    pub number: u64,
    /// How many of the active log's events the span is, and the last one's
    /// id: the draft applies only while the log still starts with them.
    pub span_len: usize,
    pub span_last_id: String,
    /// The previous snapshot's base.
    pub old_base: Vec<Event>,
    /// The span as the model saw it, shared with the view: copied and
    /// redacted on the draft's thread, off the caller's path.
    pub span_view: Vec<Arc<Event>>,
    /// The tail as the model saw it when the draft was started.
    pub tail_view: Vec<Arc<Event>>,
    pub settings: PipelineSettings,
    pub tokenizer: Tokenizer,
    /// How the view cuts tool outputs: the new base is counted as the
    /// view will count it.
    pub guard: GuardPolicy,
    pub redaction: RedactionPolicy,
    pub focus: Option<String>,
    /// Summarizer failures in a row before this one.
    pub failures_before: u32,
    pub summarizer: SharedSummarizer,
}

/// What the summarizer made of a span.
#[derive(Debug)]
pub(super) enum Outcome {
    Summarized {
        summary: String,
        facts: Vec<SummaryFact>,
    },
    /// It failed; history stays as it was.
    Failed { message: String },
    /// It failed once too often: a deterministic trim stands in, and says so.
    FellBack { summary: String, note: String },
}

impl Outcome {
    /// The summary, unless the summarizer failed.
    pub fn summary(&self) -> Option<&str> {
        match self {
            Outcome::Summarized { summary, .. } | Outcome::FellBack { summary, .. } => {
                Some(summary)
            }
            Outcome::Failed { .. } => None,
        }
    }
}

/// A compaction worked out and ready to apply.
#[derive(Debug)]
pub(super) struct Draft {
    pub number: u64,
    pub span_len: usize,
    pub span_last_id: String,
    pub outcome: Outcome,
    /// The new snapshot base, ending with the summary (empty when the
    /// summarizer failed).
    pub base: Vec<Event>,
    /// The view of the base alone, counted: what the view after the
    /// compaction starts from, so applying it counts only the tail.
    pub base_view: Option<Transcript>,
    pub identifiers: usize,
    pub identifier_survival: f64,
    pub focus: Option<String>,
    /// How long drafting took.
    pub drafting_ms: f64,
}

/// Summarizes the span, builds the new base and checks which identifiers
/// of the span it lost (listing them as lookup hints in the summary).
pub(super) fn draft(input: DraftInput) -> Draft {
    let started = Instant::now();
    // The summarizer reads the old base and the span as one list, with no
    // secrets: what it writes enters long-term memory.
    let old_base_len = input.old_base.len();
    let mut events = input.old_base;
    events.extend(
        input
            .span_view
            .into_iter()
            .map(|e| redact_event(Arc::unwrap_or_clone(e), input.redaction)),
    );
    let span = &events[old_base_len..];
    let request = SummaryRequest {
        events: &events,
        focus: input.focus.as_deref(),
        max_tokens: input.settings.summary_max_tokens,
        tokenizer: input.tokenizer,
    };
    let outcome = summarize_or_fall_back(
        input.summarizer.as_ref(),
        &request,
        span,
        input.failures_before,
    );
    let summary = outcome.summary().map(str::to_owned);
    let mut draft = Draft {
        number: input.number,
        span_len: input.span_len,
        span_last_id: input.span_last_id,
        outcome,
        base: Vec::new(),
        base_view: None,
        identifiers: 0,
        identifier_survival: 1.0,
        focus: input.focus.clone(),
        drafting_ms: 0.0,
    };
    if let Some(summary) = summary {
        // The summary enters long-term memory (snapshot, episodic store): no secrets.
        let summary = redact(&summary, input.redaction).0;
        let old_base = &events[..old_base_len];
        let mut base = build_base(
            old_base,
            span,
            summary,
            &input.settings,
            input.tokenizer,
            input.number,
        );
        let new_context: String = base
            .iter()
            .map(|e| e.content.as_str())
            .chain(input.tail_view.iter().map(|e| e.content.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        let fidelity = check_fidelity(span, &new_context);
        draft.identifiers = fidelity.identifiers;
        draft.identifier_survival = fidelity.survival_rate();
        if let Some(hints) = fidelity.lookup_hints() {
            let summary = base.last_mut().expect("the base ends with the summary");
            summary.content = format!("{}\n\n{hints}", summary.content);
        }
        let mut base_view = Transcript::new(input.tokenizer.encoding(), input.guard);
        base_view.extend(&base);
        draft.base_view = Some(base_view);
        draft.base = base;
    }
    draft.drafting_ms = started.elapsed().as_secs_f64() * 1e3;
    draft
}

/// What came of asking `summarizer` for a summary of `request.events`;
/// after [`SUMMARIZER_FAILURES_BEFORE_FALLBACK`] failures in a row, a trim
/// of `span` stands in.
pub(super) fn summarize_or_fall_back(
    summarizer: &dyn Summarizer,
    request: &SummaryRequest<'_>,
    span: &[Event],
    failures_before: u32,
) -> Outcome {
    match summarize_hierarchical(summarizer, request) {
        Ok(summary) => Outcome::Summarized {
            summary: summary.render(),
            facts: summary.facts,
        },
        Err(error) => {
            let failures = failures_before.saturating_add(1);
            if failures < SUMMARIZER_FAILURES_BEFORE_FALLBACK {
                return Outcome::Failed {
                    message: error.to_string(),
                };
            }
            Outcome::FellBack {
                summary: fallback_summary(span, failures),
                note: format!(
                    "the summarizer failed {failures} times in a row ({error}); trimmed instead"
                ),
            }
        }
    }
}
