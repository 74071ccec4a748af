//! The default summarizer: extractive and deterministic, no network.
//!
//! It selects and quotes material from the span; nothing is invented. How each
//! section is filled (bullets are ordered best first; with a focus, bullets
//! sharing more focus words come first everywhere):
//!
//! | section | source |
//! |---|---|
//! | Goal | the focus (if any), the first user request of the span, and with a focus up to two later requests about it |
//! | Constraints and preferences | user (then system) sentences with *must, never, always, don't, do not, prefer, make sure, should, only, avoid* |
//! | Progress | `In progress:` the last assistant message unless it reports the work done (or the interruption); `Blocked:` failures with no later success of the same command or tool and no later "done"; `Done:` assistant sentences with *done, fixed, passes, completed, works, …* |
//! | Key decisions | assistant sentences with *decided, I'll, we will, going with, instead, chose, let's, switch to, …* |
//! | Files read and modified | paths from the arguments of read tools (read/cat/view/open) and write tools (edit/write/apply_patch/str_replace/create), and of `cat`/`mv`/`rm`/… commands; modified first |
//! | Commands run | command strings of shell/run/exec tools (else `tool key=value`), with their outcome and a count |
//! | Errors seen | failed tool results (a `tool_error`, or error markers such as `error:`, `FAILED`, `Traceback`, `panicked at`): the first telling line, deduplicated, latest first |
//! | Next steps | the latest user request, and the *next / then / TODO / still / remaining* sentences and the questions of the last assistant message |
//! | Critical context | identifiers of the span ([`super::fidelity`]) not already named above, most frequent first |
//!
//! "The assistant" includes the final message of a finishing tool call
//! (`finish`, `attempt_completion`, …). Failures are judged by `tool_error`;
//! for command tools also by markers in the output; the output of other tools
//! (file text, search hits, diffs) is data, failing only when its first line
//! says so.
//!
//! Facts: user constraint sentences become `Constraint` facts (or
//! `Preference` with *prefer, rather, I like, instead of*), confidence
//! 0.7–0.9; assistant decision sentences become `Decision` facts, 0.6–0.7.
//! Tool output is never the source of a fact or of a constraint: it is data,
//! not instruction. Previous summaries in the span are parsed and merged
//! ([`Summary::merge`]), oldest first; events tagged as a subagent's
//! (sidechain) are covered but not quoted, since the model never saw them.

mod sections;
mod tools;
mod words;

use super::{SummarizeError, Summarizer, Summary, SummaryRequest};
use sections::Extraction;

/// The default window of [`ExtractiveSummarizer`], in tokens.
pub(crate) const DEFAULT_WINDOW_TOKENS: u64 = 100_000;

/// The default summarizer: extractive, deterministic (same events, focus and
/// budget → byte-identical output), no network. It can read a span of any
/// size in one call; `window_tokens` only tells
/// [`super::summarize_hierarchical`] how to chunk.
///
/// ```
/// use agentmem::summarize::{ExtractiveSummarizer, FactKind, Summarizer, SummaryRequest};
/// use agentmem::{Encoding, Event};
///
/// let events = vec![
///     Event::user("Rename `cfg` to `config`. Never touch the public API.").with_id("u1"),
///     Event::tool_call("c1", "shell", serde_json::json!({"command": ["bash", "-lc", "cargo check"]})).with_id("t1"),
///     Event::tool_error("c1", "error[E0432]: unresolved import `crate::cfg`\n --> src/server.rs:1:12").with_id("r1"),
///     Event::assistant("`cargo check` still fails on src/server.rs. Shall I update that import too?").with_id("a1"),
/// ];
/// let request = SummaryRequest::new(&events, 1_000, Encoding::O200kBase.tokenizer());
/// let summary = ExtractiveSummarizer::default().summarize(&request).unwrap();
/// assert_eq!(summary.section("Commands run").unwrap(), ["`cargo check` — failed"]);
/// assert!(summary.section("Errors seen").unwrap()[0].contains("E0432"));
/// assert_eq!(summary.facts[0].kind, FactKind::Constraint);
/// assert_eq!(summary.facts[0].source_event_ids, ["u1"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractiveSummarizer {
    /// Tokens of input per call; [`super::summarize_hierarchical`] chunks by it.
    pub window_tokens: u64,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        ExtractiveSummarizer {
            window_tokens: DEFAULT_WINDOW_TOKENS,
        }
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> &str {
        "extractive"
    }

    fn version(&self) -> &str {
        "1"
    }

    fn window_tokens(&self) -> u64 {
        self.window_tokens
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        if request.events.is_empty() {
            return Err(SummarizeError::Empty);
        }
        let mut summary = Extraction::new(request).run();
        summary.trim_to(request.max_tokens, request.tokenizer)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests;
