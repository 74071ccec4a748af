//! Summarizers: compacted history in, a checkpoint summary and facts out.
//!
//! A [`Summarizer`] turns a span of raw [`Event`]s (the part of a session that
//! compaction takes out of the model's view) into a [`Summary`]: nine fixed
//! sections of bullets ([`SECTION_TITLES`]), semantic [`SummaryFact`]s with the ids of
//! the events they came from, and the ids of every event it covered.
//!
//! - [`ExtractiveSummarizer`] is the default: deterministic, no network, it
//!   selects and quotes material from the span (see `extractive`).
//! - An LLM summarizer (in `agentmem-llm`) plugs into the same trait.
//! - [`summarize_hierarchical`] runs any summarizer over a span larger than its
//!   window: chunk, summarize each chunk, merge ([`Summary::merge`]), trim to the
//!   budget ([`Summary::trim_to`]). Nothing of the span is silently dropped.
//! - [`fidelity`] checks which identifiers (paths, URLs, ids, error codes,
//!   hashes, numbers with units) of the span survive in the new context and
//!   writes lookup hints for the rest.
//!
//! A previous summary found in the span (a [`TraceType::Summary`] event, or a
//! message starting with [`SUMMARY_PREFIX`], see [`is_summary`]) is parsed and
//! merged into the new summary, never summarized as conversation, and the
//! rendered summary never contains the prefix: the caller adds it once.
//!
//! ```
//! use agentmem::summarize::{summarize_hierarchical, ExtractiveSummarizer, SummaryRequest};
//! use agentmem::{Encoding, Event};
//!
//! let events = vec![
//!     Event::user("Fix the failing build. Never push to main.").with_id("ev_1"),
//!     Event::tool_call("call_1", "bash", serde_json::json!({"command": "cargo build"})).with_id("ev_2"),
//!     Event::tool_error("call_1", "error[E0425]: cannot find value `x` in src/lib.rs:3").with_id("ev_3"),
//!     Event::assistant("I'll declare `x` first. Next: rerun the build.").with_id("ev_4"),
//! ];
//! let request = SummaryRequest::new(&events, 2_000, Encoding::O200kBase.tokenizer());
//! let summary = summarize_hierarchical(&ExtractiveSummarizer::default(), &request).unwrap();
//! let text = summary.render();
//! assert!(text.starts_with("## Goal\n- Fix the failing build."));
//! assert!(text.contains("E0425"));
//! assert_eq!(summary.covered_event_ids, ["ev_1", "ev_2", "ev_3", "ev_4"]);
//! ```

pub(crate) mod extractive;
pub mod fidelity;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::base::event::{Event, TraceType};
use crate::base::message::SUMMARY_PREFIX;
use crate::tokens::Tokenizer;

pub use extractive::ExtractiveSummarizer;
pub use fidelity::{check_fidelity, extract_identifiers, FidelityReport, MissingIdentifier};

/// Section title: what the user wants (the focus, the first request of the span).
pub(crate) const GOAL: &str = "Goal";
/// Section title: rules the user set (must, never, always, prefer, …).
pub(crate) const CONSTRAINTS: &str = "Constraints and preferences";
/// Section title: done / in progress / blocked.
pub(crate) const PROGRESS: &str = "Progress";
/// Section title: choices the assistant made.
pub(crate) const DECISIONS: &str = "Key decisions";
/// Section title: files read and modified by tools.
pub(crate) const FILES: &str = "Files read and modified";
/// Section title: shell commands and other runnable tool calls.
pub const COMMANDS: &str = "Commands run";
/// Section title: failed tool results.
pub const ERRORS: &str = "Errors seen";
/// Section title: the latest request and the announced next steps.
pub(crate) const NEXT_STEPS: &str = "Next steps";
/// Section title: identifiers (paths, ids, hashes, …) of the span, most frequent first.
pub(crate) const CRITICAL: &str = "Critical context";

/// The fixed sections of a summary, in render order.
pub const SECTION_TITLES: [&str; 9] = [
    GOAL,
    CONSTRAINTS,
    PROGRESS,
    DECISIONS,
    FILES,
    COMMANDS,
    ERRORS,
    NEXT_STEPS,
    CRITICAL,
];

/// The order in which [`Summary::trim_to`] takes bullets away when a summary
/// is over its budget: first section listed loses bullets first. Goal, Next
/// steps and Errors seen survive longest. Sections with other titles (from
/// other summarizers) are trimmed before all of these.
pub(crate) const TRIM_ORDER: [&str; 9] = [
    COMMANDS,
    FILES,
    CRITICAL,
    DECISIONS,
    PROGRESS,
    CONSTRAINTS,
    ERRORS,
    NEXT_STEPS,
    GOAL,
];

/// A bullet of [`PROGRESS`] starting with this describes the state at the end
/// of the summarized span; [`Summary::merge`] keeps only those of the latest part.
pub(crate) const IN_PROGRESS_PREFIX: &str = "In progress:";

/// The Goal bullet that states the focus of a summary (`/compact <focus>`).
pub(crate) const FOCUS_PREFIX: &str = "Focus of this summary:";

/// What an empty section renders as.
const EMPTY_BULLET: &str = "(none)";

/// Bullets kept per section after a merge (before the token budget trims more).
const MERGED_SECTION_CAP: usize = 25;

/// Facts kept after a merge, most confident first.
const MERGED_FACT_CAP: usize = 60;

/// Whether `text` is a summary made by a previous compaction: it starts (after
/// leading whitespace) with [`SUMMARY_PREFIX`].
///
/// ```
/// use agentmem::base::message::SUMMARY_PREFIX;
/// use agentmem::summarize::is_summary;
/// assert!(is_summary(&format!("{SUMMARY_PREFIX}\n## Goal\n- fix it")));
/// assert!(!is_summary("please summarize the logs"));
/// ```
pub fn is_summary(text: &str) -> bool {
    text.trim_start().starts_with(SUMMARY_PREFIX)
}

/// Whether `event` carries a previous summary: a [`TraceType::Summary`] event,
/// or a user or system message starting with [`SUMMARY_PREFIX`]. Tool output
/// is never taken for a summary, whatever it contains.
///
/// ```
/// use agentmem::summarize::is_summary_event;
/// use agentmem::{Event, TraceType};
/// assert!(is_summary_event(&Event::new(TraceType::Summary, "## Goal\n- x")));
/// assert!(!is_summary_event(&Event::tool_result("c1", "[SUMMARY OF EARLIER CONVERSATION] hi")));
/// ```
pub fn is_summary_event(event: &Event) -> bool {
    match event.trace_type {
        TraceType::Summary => true,
        TraceType::User | TraceType::System => is_summary(&event.content),
        _ => false,
    }
}

/// What a summarizer is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct SummaryRequest<'a> {
    /// The span to summarize, oldest first.
    pub events: &'a [Event],
    /// `/compact <focus>`: material related to it is preferred, and the
    /// summary says what the focus was.
    pub focus: Option<&'a str>,
    /// The rendered summary ([`Summary::render`]) must fit in this many tokens.
    pub max_tokens: u64,
    /// Counts tokens for the budget and for chunking.
    pub tokenizer: Tokenizer,
}

impl<'a> SummaryRequest<'a> {
    /// A request without a focus.
    ///
    /// ```
    /// use agentmem::{Encoding, SummaryRequest};
    /// let request = SummaryRequest::new(&[], 1_000, Encoding::Approximate.tokenizer())
    ///     .with_focus("the parser bug");
    /// assert_eq!(request.focus, Some("the parser bug"));
    /// ```
    pub fn new(events: &'a [Event], max_tokens: u64, tokenizer: Tokenizer) -> Self {
        SummaryRequest {
            events,
            focus: None,
            max_tokens,
            tokenizer,
        }
    }

    /// Sets the focus (builder style); blank text means no focus.
    pub fn with_focus(mut self, focus: &'a str) -> Self {
        self.focus = Some(focus).filter(|f| !f.trim().is_empty());
        self
    }
}

/// What a [`SummaryFact`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FactKind {
    /// How the user likes things done ("I prefer …").
    Preference,
    /// A choice made during the work ("going with X instead of Y").
    Decision,
    /// A rule that must hold ("never push to main").
    Constraint,
}

impl FactKind {
    /// A lowercase name: `preference`, `decision`, `constraint`.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Preference => "preference",
            FactKind::Decision => "decision",
            FactKind::Constraint => "constraint",
        }
    }
}

/// A semantic fact drawn from the span, for long-term memory.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryFact {
    /// The fact, in one sentence.
    pub text: String,
    /// What the fact records.
    pub kind: FactKind,
    /// 0.0–1.0: how sure the summarizer is that this is a lasting fact.
    pub confidence: f32,
    /// The events it was drawn from (user or assistant messages, never tool output).
    pub source_event_ids: Vec<String>,
}

/// A summary of a span: fixed sections of bullets, facts, and the events covered.
/// [`Summary::empty`] has the nine sections; `Summary::default()` has none.
///
/// ```
/// use agentmem::Summary;
/// let mut summary = Summary::empty();
/// summary.section_mut("Goal").unwrap().push("Fix the CRLF parser bug".into());
/// assert!(summary.render().starts_with("## Goal\n- Fix the CRLF parser bug\n\n## Constraints and preferences\n- (none)\n"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// `(title, bullets)` in render order; the default summarizer always
    /// produces the nine [`SECTION_TITLES`].
    pub sections: Vec<(String, Vec<String>)>,
    /// Semantic facts drawn from the span, for long-term memory.
    pub facts: Vec<SummaryFact>,
    /// Ids of every event the summary stands for, in span order.
    pub covered_event_ids: Vec<String>,
}

impl Summary {
    /// The nine fixed sections, all empty.
    pub fn empty() -> Self {
        Summary {
            sections: SECTION_TITLES
                .iter()
                .map(|t| (t.to_string(), Vec::new()))
                .collect(),
            facts: Vec::new(),
            covered_event_ids: Vec::new(),
        }
    }

    /// The bullets of the section titled `title`.
    pub fn section(&self, title: &str) -> Option<&[String]> {
        self.sections
            .iter()
            .find(|(t, _)| t == title)
            .map(|(_, b)| b.as_slice())
    }

    /// The bullets of the section titled `title`, to change.
    pub fn section_mut(&mut self, title: &str) -> Option<&mut Vec<String>> {
        self.sections
            .iter_mut()
            .find(|(t, _)| t == title)
            .map(|(_, b)| b)
    }

    /// Markdown: `## Title` then one `- bullet` line per bullet (`- (none)` for
    /// an empty section), sections separated by a blank line. Deterministic;
    /// bullets are kept on one line and [`SUMMARY_PREFIX`] is never emitted.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, (title, bullets)) in self.sections.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&heading_line(title));
            if bullets.is_empty() {
                out.push_str(&bullet_line(EMPTY_BULLET));
            }
            for bullet in bullets {
                out.push_str(&bullet_line(bullet));
            }
        }
        out
    }

    /// Parses text rendered by [`Summary::render`] (optionally preceded by
    /// [`SUMMARY_PREFIX`]) back into sections. Returns `None` when the text has
    /// no `## ` heading of a known section (prose, or another format). Bullets
    /// under unknown headings (such as `## Lookup hints`) and prose before the
    /// first heading go to `CRITICAL` so their identifiers are kept; the
    /// focus line of that earlier summary (`FOCUS_PREFIX`) is dropped.
    ///
    /// ```
    /// use agentmem::Summary;
    /// let mut summary = Summary::empty();
    /// summary.section_mut("Errors seen").unwrap().push("E0425 in src/lib.rs".into());
    /// assert_eq!(Summary::parse_rendered(&summary.render()).unwrap().sections, summary.sections);
    /// assert!(Summary::parse_rendered("just prose").is_none());
    /// ```
    pub fn parse_rendered(text: &str) -> Option<Summary> {
        let text = text.trim_start();
        let text = text.strip_prefix(SUMMARY_PREFIX).unwrap_or(text);
        let mut summary = Summary::empty();
        let mut known = false;
        let mut seen_heading = false;
        let mut current: Option<String> = None;
        let mut preamble: Vec<String> = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(title) = line.strip_prefix("## ") {
                let title = title.trim();
                seen_heading = true;
                known |= SECTION_TITLES.contains(&title);
                current = SECTION_TITLES.contains(&title).then(|| title.to_string());
                continue;
            }
            // The focus of an earlier compaction is not part of what happened.
            if is_focus_line(line) {
                continue;
            }
            let Some(bullet) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) else {
                // Prose before the first heading is kept; prose under a
                // heading (an introduction to lookup hints) is not.
                if !line.is_empty() && !line.starts_with('#') && !seen_heading {
                    preamble.push(line.to_string());
                }
                continue;
            };
            let bullet = bullet.trim();
            if bullet.is_empty() || bullet == EMPTY_BULLET || is_focus_line(bullet) {
                continue;
            }
            let title = current.as_deref().unwrap_or(CRITICAL);
            if let Some(bullets) = summary.section_mut(title) {
                bullets.push(bullet.to_string());
            }
        }
        if !known {
            return None;
        }
        if let Some(bullets) = summary.section_mut(CRITICAL) {
            bullets.extend(preamble);
        }
        Some(summary)
    }

    /// Merges summaries of consecutive spans, oldest first, into one:
    ///
    /// | section | rule |
    /// |---|---|
    /// | Goal | concatenated oldest first (the original goal leads) |
    /// | Next steps | the latest summary that has any |
    /// | Progress | interleaved latest first; `In progress:` bullets only from the latest summary |
    /// | Critical context | interleaved latest first; a bullet that is only an identifier (`` `x` ``) named by another section is dropped |
    /// | all others | interleaved latest first (each part's best bullet before any part's second) |
    ///
    /// Bullets are deduplicated (case and spacing ignored, and a trailing
    /// `(×N)` count), sections capped at 25 bullets; facts are merged by text
    /// (highest confidence, source ids united); covered ids are united in order.
    /// The latest part describes the end of the span: what was in progress in
    /// an earlier part is either done or superseded.
    ///
    /// ```
    /// use agentmem::Summary;
    /// let mut a = Summary::empty();
    /// a.section_mut("Goal").unwrap().push("Fix the parser".into());
    /// a.section_mut("Next steps").unwrap().push("Run the tests".into());
    /// a.covered_event_ids = vec!["e1".into()];
    /// let mut b = Summary::empty();
    /// b.section_mut("Goal").unwrap().push("fix the  parser".into());
    /// b.section_mut("Next steps").unwrap().push("Open a PR".into());
    /// b.covered_event_ids = vec!["e2".into()];
    /// let merged = Summary::merge(&[a, b]);
    /// assert_eq!(merged.section("Goal").unwrap(), ["Fix the parser"]);
    /// assert_eq!(merged.section("Next steps").unwrap(), ["Open a PR"]);
    /// assert_eq!(merged.covered_event_ids, ["e1", "e2"]);
    /// ```
    pub fn merge(parts: &[Summary]) -> Summary {
        let mut titles: Vec<String> = SECTION_TITLES.iter().map(|t| t.to_string()).collect();
        for part in parts {
            for (title, _) in &part.sections {
                if !titles.contains(title) {
                    titles.push(title.clone());
                }
            }
        }
        let mut merged = Summary::default();
        for title in titles {
            let lists: Vec<&[String]> = parts
                .iter()
                .map(|p| p.section(&title).unwrap_or(&[]))
                .collect();
            let bullets: Vec<String> = match title.as_str() {
                GOAL => lists.iter().flat_map(|l| l.iter().cloned()).collect(),
                NEXT_STEPS => lists
                    .iter()
                    .rev()
                    .find(|l| !l.is_empty())
                    .map(|l| l.to_vec())
                    .unwrap_or_default(),
                PROGRESS => {
                    let latest = lists.len().checked_sub(1);
                    let filtered: Vec<Vec<String>> = lists
                        .iter()
                        .enumerate()
                        .map(|(i, l)| {
                            l.iter()
                                .filter(|b| !is_in_progress(b) || Some(i) == latest)
                                .cloned()
                                .collect()
                        })
                        .collect();
                    interleave_latest_first(&filtered)
                }
                _ => {
                    let owned: Vec<Vec<String>> = lists.iter().map(|l| l.to_vec()).collect();
                    interleave_latest_first(&owned)
                }
            };
            let mut bullets = dedupe_bullets(bullets);
            bullets.truncate(MERGED_SECTION_CAP);
            merged.sections.push((title, bullets));
        }
        // A Critical context bullet that only names an identifier another
        // section already names adds nothing.
        let named: String = merged
            .sections
            .iter()
            .filter(|(t, _)| t != CRITICAL)
            .flat_map(|(_, b)| b.iter())
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(critical) = merged.section_mut(CRITICAL) {
            critical.retain(|b| {
                let bare = b.strip_prefix('`').and_then(|r| r.strip_suffix('`'));
                !bare.is_some_and(|id| !id.contains('`') && named.contains(id))
            });
        }
        merged.facts = merge_facts(parts.iter().flat_map(|p| p.facts.iter()));
        merged.facts.truncate(MERGED_FACT_CAP);
        let mut seen = BTreeSet::new();
        for id in parts.iter().flat_map(|p| p.covered_event_ids.iter()) {
            if seen.insert(id.as_str()) {
                merged.covered_event_ids.push(id.clone());
            }
        }
        merged
    }

    /// Takes bullets away until [`Summary::render`] fits `max_tokens`, by
    /// `TRIM_ORDER` priority, in stages (lowest-priority sections first,
    /// last bullets first, stopping as soon as it fits): sections are cut to
    /// 4 bullets while Errors seen, Next steps and Goal stay whole; then to 2
    /// (those three to 6); then to 1 (those three to 3); then long bullets are
    /// shortened; then sections are emptied, those three keeping 1; then those
    /// three are emptied too (Goal last).
    /// Bullets are expected best first. Fails with
    /// [`SummarizeError::BudgetTooSmall`] when even the empty headings do not fit.
    ///
    /// ```
    /// use agentmem::{Encoding, Summary};
    /// let tokenizer = Encoding::O200kBase.tokenizer();
    /// let mut summary = Summary::empty();
    /// for i in 0..50 {
    ///     summary.section_mut("Commands run").unwrap().push(format!("`cargo test --test t{i}` — ok"));
    /// }
    /// summary.section_mut("Goal").unwrap().push("Make the tests pass".into());
    /// summary.trim_to(120, tokenizer).unwrap();
    /// assert!(tokenizer.count(&summary.render()) <= 120);
    /// assert_eq!(summary.section("Goal").unwrap(), ["Make the tests pass"]);
    /// assert!(summary.trim_to(3, tokenizer).is_err());
    /// ```
    pub fn trim_to(&mut self, max_tokens: u64, tokenizer: Tokenizer) -> Result<(), SummarizeError> {
        let max = usize::try_from(max_tokens).unwrap_or(usize::MAX);
        let mut exact = tokenizer.count(&self.render());
        if exact <= max {
            return Ok(());
        }
        // Lowest priority first: unknown sections, then TRIM_ORDER.
        let mut order: Vec<usize> = (0..self.sections.len())
            .filter(|&i| !TRIM_ORDER.contains(&self.sections[i].0.as_str()))
            .collect();
        for title in TRIM_ORDER {
            if let Some(i) = self.sections.iter().position(|(t, _)| t == title) {
                order.push(i);
            }
        }
        let mut costs: Vec<Vec<usize>> = self
            .sections
            .iter()
            .map(|(_, bullets)| {
                bullets
                    .iter()
                    .map(|b| tokenizer.count(&bullet_line(b)))
                    .collect()
            })
            .collect();
        // `estimate` follows the exact count down by the cost of each removed
        // line; the exact count is checked after every round.
        let mut estimate = exact;
        let mut target = max;
        loop {
            let removed = self.trim_round(&order, &mut costs, &mut estimate, target, tokenizer);
            exact = tokenizer.count(&self.render());
            if exact <= max {
                return Ok(());
            }
            let left: usize = self.sections.iter().map(|(_, b)| b.len()).sum();
            if left == 0 {
                return Err(SummarizeError::BudgetTooSmall {
                    max_tokens,
                    needed: exact as u64,
                });
            }
            estimate = exact;
            target = target.saturating_sub(exact - max);
            if !removed {
                // The estimate says it fits but it does not: take one more.
                if let Some(&s) = order.iter().find(|&&s| !self.sections[s].1.is_empty()) {
                    self.sections[s].1.pop();
                    costs[s].pop();
                }
            }
        }
    }

    /// One pass of the trimming stages; returns whether anything changed.
    fn trim_round(
        &mut self,
        order: &[usize],
        costs: &mut [Vec<usize>],
        estimate: &mut usize,
        target: usize,
        tokenizer: Tokenizer,
    ) -> bool {
        const SHORT_BULLET_CHARS: usize = 120;
        let mut changed = false;
        // The last three of TRIM_ORDER (Errors seen, Next steps, Goal) keep more.
        let top: Vec<bool> = self
            .sections
            .iter()
            .map(|(t, _)| TRIM_ORDER[6..].contains(&t.as_str()))
            .collect();
        for floors in [(4, usize::MAX), (2, 6), (1, 3)] {
            changed |= self.cut_sections(order, &top, costs, estimate, target, floors);
        }
        for &s in order {
            let bullets = self.sections[s].1.iter_mut();
            for (bullet, cost) in bullets.zip(costs[s].iter_mut()) {
                if *estimate <= target {
                    break;
                }
                if bullet.chars().count() > SHORT_BULLET_CHARS {
                    let short = truncate_chars(bullet, SHORT_BULLET_CHARS);
                    let new_cost = tokenizer.count(&bullet_line(&short));
                    *estimate = estimate.saturating_sub(cost.saturating_sub(new_cost));
                    *cost = new_cost;
                    *bullet = short;
                    changed = true;
                }
            }
        }
        for floors in [(0, 1), (0, 0)] {
            changed |= self.cut_sections(order, &top, costs, estimate, target, floors);
        }
        changed
    }

    /// Pops last bullets, lowest priority first, down to `floors.0` bullets
    /// (`floors.1` for the top sections) while the estimate is over `target`.
    fn cut_sections(
        &mut self,
        order: &[usize],
        top: &[bool],
        costs: &mut [Vec<usize>],
        estimate: &mut usize,
        target: usize,
        floors: (usize, usize),
    ) -> bool {
        let mut changed = false;
        for &s in order {
            let floor = if top[s] { floors.1 } else { floors.0 };
            while *estimate > target && self.sections[s].1.len() > floor {
                self.sections[s].1.pop();
                *estimate = estimate.saturating_sub(costs[s].pop().unwrap_or(0));
                changed = true;
            }
        }
        changed
    }
}

/// Why a summary could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummarizeError {
    /// The span had no events.
    #[error("nothing to summarize: the span has no events")]
    Empty,
    /// Even the section headings do not fit the budget.
    #[error("a summary needs at least {needed} tokens but the budget is {max_tokens}; raise the summary budget")]
    BudgetTooSmall {
        /// The summary's budget.
        max_tokens: u64,
        /// The tokens the headings alone take.
        needed: u64,
    },
    /// The summarizer failed (an LLM call, a bad configuration, …).
    #[error("summarizer failed: {0}")]
    Failed(String),
}

/// Turns a span of events into a [`Summary`].
///
/// Implementations must be deterministic for the same request when they can
/// (the extractive one is byte-for-byte), must return a summary whose render
/// fits `request.max_tokens`, and must list every event of the request in
/// `covered_event_ids`. Spans larger than [`Summarizer::window_tokens`] should
/// go through [`summarize_hierarchical`], which never hands a summarizer more
/// than its window.
///
/// ```
/// use agentmem::{Encoding, Event, SummarizeError, Summarizer, Summary, SummaryRequest};
///
/// /// A summarizer that only records what it covered.
/// struct Ids;
/// impl Summarizer for Ids {
///     fn name(&self) -> &str { "ids" }
///     fn version(&self) -> &str { "1" }
///     fn window_tokens(&self) -> u64 { 1_000 }
///     fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
///         let mut summary = Summary::empty();
///         summary.covered_event_ids = request.events.iter().map(|e| e.id.clone()).collect();
///         Ok(summary)
///     }
/// }
/// let events = [Event::user("hi").with_id("e1")];
/// let request = SummaryRequest::new(&events, 500, Encoding::Approximate.tokenizer());
/// assert_eq!(Ids.summarize(&request).unwrap().covered_event_ids, ["e1"]);
/// ```
pub trait Summarizer {
    /// A short name recorded with the summaries it makes (`extractive`, `llm:gpt-4.1`, …).
    fn name(&self) -> &str;
    /// The version of its algorithm or prompt; changes when its output would.
    fn version(&self) -> &str;
    /// Tokens of input it can take at once.
    fn window_tokens(&self) -> u64;
    /// Summarizes `request.events` within `request.max_tokens`.
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError>;
}

/// Summarizes a span of any size: when it fits the summarizer's window (events
/// counted with `request.tokenizer`) this is one call; otherwise the span is cut
/// into window-sized chunks (an event larger than a window is split into
/// pieces, each keeping the event's id), each chunk is summarized with the
/// same focus and budget, and the chunk summaries are merged
/// ([`Summary::merge`]); with a focus, the bullets of each section that share
/// more words with it are moved first (stable); the result is trimmed to
/// `request.max_tokens` ([`Summary::trim_to`]). Every event of the span is covered.
///
/// ```
/// use agentmem::summarize::{summarize_hierarchical, ExtractiveSummarizer, SummaryRequest};
/// use agentmem::{Encoding, Event};
///
/// let events: Vec<Event> = (0..40)
///     .map(|i| Event::user(format!("step {i}: please check module_{i}.rs carefully")).with_id(format!("e{i}")))
///     .collect();
/// let small_window = ExtractiveSummarizer { window_tokens: 60 };
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// let summary = summarize_hierarchical(&small_window, &SummaryRequest::new(&events, 400, tokenizer)).unwrap();
/// assert_eq!(summary.covered_event_ids.len(), 40);
/// assert!(tokenizer.count(&summary.render()) <= 400);
/// ```
pub fn summarize_hierarchical(
    summarizer: &dyn Summarizer,
    request: &SummaryRequest<'_>,
) -> Result<Summary, SummarizeError> {
    if request.events.is_empty() {
        return Err(SummarizeError::Empty);
    }
    let window = summarizer.window_tokens();
    if window == 0 {
        return Err(SummarizeError::Failed(format!(
            "summarizer {} has a window of 0 tokens; configure a window",
            summarizer.name()
        )));
    }
    let window = usize::try_from(window).unwrap_or(usize::MAX);
    let sizes: Vec<usize> = request
        .events
        .iter()
        .map(|e| event_tokens(e, request.tokenizer))
        .collect();
    if sizes.iter().fold(0usize, |a, &b| a.saturating_add(b)) <= window {
        return summarizer.summarize(request);
    }
    let chunks = chunk_events(request.events, &sizes, window, request.tokenizer);
    let mut parts = Vec::with_capacity(chunks.len());
    for chunk in &chunks {
        let chunk_request = SummaryRequest {
            events: chunk,
            focus: request.focus,
            max_tokens: request.max_tokens,
            tokenizer: request.tokenizer,
        };
        parts.push(summarizer.summarize(&chunk_request)?);
    }
    let mut merged = Summary::merge(&parts);
    // The merge interleaves the parts; with a focus, what is about it leads again.
    let focus = Focus::new(request.focus);
    if !focus.terms.is_empty() {
        for (_, bullets) in &mut merged.sections {
            // Stable: equal scores keep the merge order.
            bullets.sort_by_cached_key(|b| std::cmp::Reverse(focus.score(b)));
        }
    }
    merged.trim_to(request.max_tokens, request.tokenizer)?;
    Ok(merged)
}

/// Tokens an event weighs for chunking: its content, arguments and error text
/// plus a small per-event overhead.
pub fn event_tokens(event: &Event, tokenizer: Tokenizer) -> usize {
    const OVERHEAD: usize = 4;
    let mut n = OVERHEAD + tokenizer.count(&event.content);
    if let Some(args) = &event.tool_args {
        n += tokenizer.count(&args_text(args));
    }
    if let Some(name) = &event.tool_name {
        n += tokenizer.count(name);
    }
    if let Some(error) = &event.tool_error {
        if error != &event.content {
            n += tokenizer.count(error);
        }
    }
    n
}

/// Cuts `events` into consecutive chunks of at most `window` tokens; an event
/// larger than the window becomes several pieces.
fn chunk_events(
    events: &[Event],
    sizes: &[usize],
    window: usize,
    tokenizer: Tokenizer,
) -> Vec<Vec<Event>> {
    let mut chunks: Vec<Vec<Event>> = Vec::new();
    let mut current: Vec<Event> = Vec::new();
    let mut used = 0usize;
    for (event, &size) in events.iter().zip(sizes) {
        let pieces = if size > window {
            split_event(event, window, tokenizer)
        } else {
            vec![(event.clone(), size)]
        };
        for (piece, size) in pieces {
            if used + size > window && !current.is_empty() {
                chunks.push(std::mem::take(&mut current));
                used = 0;
            }
            used += size;
            current.push(piece);
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// Splits an event too large for one window into pieces that each fit,
/// keeping its id, type and tool fields. Long argument strings move into the
/// content so they are split too; short ones stay on the first piece.
fn split_event(event: &Event, window: usize, tokenizer: Tokenizer) -> Vec<(Event, usize)> {
    const LONG_ARG_CHARS: usize = 300;
    let mut base = event.clone();
    let mut text = event.content.clone();
    if let Some(Value::Object(map)) = &event.tool_args {
        let mut short = serde_json::Map::new();
        for (key, value) in map {
            match value {
                Value::String(s) if s.chars().count() > LONG_ARG_CHARS => {
                    text.push_str(&format!("\n{key}: {s}"));
                }
                Value::Array(_) | Value::Object(_) if value.to_string().len() > LONG_ARG_CHARS => {
                    text.push_str(&format!("\n{key}: {value}"));
                }
                _ => {
                    short.insert(key.clone(), value.clone());
                }
            }
        }
        base.tool_args = Some(Value::Object(short));
    } else if let Some(args) = &event.tool_args {
        if args_text(args).chars().count() > LONG_ARG_CHARS {
            text.push('\n');
            text.push_str(&args_text(args));
            base.tool_args = None;
        }
    }
    if let Some(error) = &event.tool_error {
        // Keep the failure visible on every piece without repeating it whole.
        base.tool_error = Some(truncate_chars(error.lines().next().unwrap_or(""), 200));
    }
    base.content = String::new();
    let overhead = event_tokens(&base, tokenizer);
    let budget = window.saturating_sub(overhead).max(1);
    let mut pieces = Vec::new();
    for (i, piece) in split_text(&text, budget, tokenizer).into_iter().enumerate() {
        let mut e = base.clone();
        if i > 0 {
            e.tool_args = None;
        }
        e.content = piece;
        let size = event_tokens(&e, tokenizer);
        pieces.push((e, size));
    }
    if pieces.is_empty() {
        pieces.push((base.clone(), overhead));
    }
    pieces
}

/// Splits `text` into pieces of at most `budget` tokens, at line ends where
/// it can and at character boundaries where a single line is too long.
fn split_text(text: &str, budget: usize, tokenizer: Tokenizer) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut used = 0usize;
    // Token counts of separate lines add up to about the count of the whole;
    // aim a little under the budget and verify each piece.
    let aim = (budget * 9 / 10).max(1);
    for line in text.split_inclusive('\n') {
        let n = tokenizer.count(line);
        if n > aim {
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                used = 0;
            }
            pieces.extend(split_long_line(line, aim, tokenizer));
            continue;
        }
        if used + n > aim && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push_str(line);
        used += n;
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    // Verify: a piece over the budget is halved until it fits.
    let mut out = Vec::with_capacity(pieces.len());
    let mut stack: Vec<String> = pieces.into_iter().rev().collect();
    while let Some(piece) = stack.pop() {
        if piece.chars().count() <= 1 || tokenizer.count(&piece) <= budget {
            out.push(piece);
        } else {
            let mid = char_boundary_at(&piece, piece.chars().count() / 2);
            stack.push(piece[mid..].to_string());
            stack.push(piece[..mid].to_string());
        }
    }
    out
}

/// Splits one long line into pieces of about `aim` tokens by characters.
fn split_long_line(line: &str, aim: usize, tokenizer: Tokenizer) -> Vec<String> {
    let tokens = tokenizer.count(line).max(1);
    let chars = line.chars().count();
    let per_piece = ((chars as u128 * aim as u128) / tokens as u128).max(1) as usize;
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let cut = char_boundary_at(rest, per_piece);
        let cut = if cut == 0 { rest.len() } else { cut };
        out.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    out
}

/// The byte index of the `n`th character (or the end).
fn char_boundary_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// Tool arguments as text: a JSON string as itself, anything else as JSON.
pub(crate) fn args_text(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The words of a focus, to score text against.
pub(crate) struct Focus {
    pub(crate) text: Option<String>,
    pub(crate) terms: Vec<String>,
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "onto", "about", "what", "when",
    "where", "which", "who", "how", "why", "are", "was", "were", "been", "being", "have", "has",
    "had", "not", "but", "all", "any", "its", "our", "your", "their", "them", "then", "than",
    "only", "just", "also", "some", "more", "most", "such", "very", "can", "could", "should",
    "would", "will", "shall", "may", "might", "must", "focus", "keep", "on", "of", "to", "in",
];

impl Focus {
    pub(crate) fn new(focus: Option<&str>) -> Self {
        let text = focus.map(one_line).filter(|f| !f.is_empty());
        let mut terms: Vec<String> = Vec::new();
        if let Some(text) = &text {
            for word in words(text) {
                if word.chars().count() >= 3
                    && !STOPWORDS.contains(&word.as_str())
                    && !terms.contains(&word)
                {
                    terms.push(word);
                }
            }
        }
        Focus { text, terms }
    }

    /// How many focus terms `text` contains (as words).
    pub(crate) fn score(&self, text: &str) -> usize {
        if self.terms.is_empty() {
            return 0;
        }
        let set: BTreeSet<String> = words(text).collect();
        self.terms.iter().filter(|t| set.contains(*t)).count()
    }
}

/// Lowercase alphanumeric words of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Cuts `text` to at most `max` characters, ending with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut = char_boundary_at(text, max.saturating_sub(1));
    format!("{}…", text[..cut].trim_end())
}

/// One bullet as rendered: on one line, without the summary prefix.
fn bullet_line(bullet: &str) -> String {
    format!("- {}\n", one_line(bullet))
}

fn heading_line(title: &str) -> String {
    format!("## {}\n", one_line(title))
}

/// Collapses whitespace (newlines included) and removes [`SUMMARY_PREFIX`].
pub(crate) fn one_line(text: &str) -> String {
    let text = if text.contains(SUMMARY_PREFIX) {
        std::borrow::Cow::Owned(text.replace(SUMMARY_PREFIX, " "))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn is_focus_line(line: &str) -> bool {
    line.trim_start_matches(['-', '*', ' '])
        .starts_with(FOCUS_PREFIX)
}

fn is_in_progress(bullet: &str) -> bool {
    bullet
        .get(..IN_PROGRESS_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(IN_PROGRESS_PREFIX))
}

/// Round-robin over `lists`, latest list first: every list's first bullet,
/// then every list's second, …
fn interleave_latest_first(lists: &[Vec<String>]) -> Vec<String> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..longest {
        for list in lists.iter().rev() {
            if let Some(b) = list.get(i) {
                out.push(b.clone());
            }
        }
    }
    out
}

/// The key bullets are deduplicated by: lowercase, single spaces, without a
/// trailing `(×N)` count.
pub(crate) fn dedupe_key(bullet: &str) -> String {
    let mut key = one_line(bullet).to_lowercase();
    if key.ends_with(')') {
        if let Some(i) = key.rfind(" (×") {
            key.truncate(i);
        }
    }
    key
}

fn dedupe_bullets(bullets: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    bullets
        .into_iter()
        .filter(|b| !b.trim().is_empty() && seen.insert(dedupe_key(b)))
        .collect()
}

/// Merges facts by text (case and spacing ignored): highest confidence, first
/// kind, source ids united in order; most confident first, then first seen.
pub(crate) fn merge_facts<'f>(facts: impl Iterator<Item = &'f SummaryFact>) -> Vec<SummaryFact> {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut merged: Vec<SummaryFact> = Vec::new();
    for fact in facts {
        let key = dedupe_key(&fact.text);
        match index.get(&key) {
            Some(&i) => {
                let into = &mut merged[i];
                into.confidence = into.confidence.max(fact.confidence);
                for id in &fact.source_event_ids {
                    if !into.source_event_ids.contains(id) {
                        into.source_event_ids.push(id.clone());
                    }
                }
            }
            None => {
                index.insert(key, merged.len());
                merged.push(fact.clone());
            }
        }
    }
    // Stable: ties keep first-seen order.
    merged.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    merged
}

#[cfg(test)]
mod tests;
