//! Fidelity check: which identifiers of a compacted span survive in the new
//! context, and lookup hints for those that do not.
//!
//! Identifiers are what a model cannot reconstruct once they are gone: file
//! paths (`src/lib.rs`, `/home/x/y.py`, `crates/a/b.rs:42`, `Cargo.toml`),
//! URLs, commit hashes (7–40 hex characters with a digit and a letter), ids
//! (`call_abc123`, `toolu_01…`, UUIDs, `#123`), error codes (`E0425`,
//! `ERR_CONNECTION_REFUSED`, `ENOENT`, `HTTP 404`, `exit code 2`), IPv4
//! addresses and `host:port`, numbers with units (`512 MB`, `30s`, `1.5 GB`,
//! `200ms`) and ports (`port 8080`). The scanner is hand-written (no regex),
//! deterministic, and tuned so plain English words never count.
//!
//! ```
//! use agentmem::Event;
//! use agentmem::summarize::fidelity::check_fidelity;
//!
//! let span = [
//!     Event::user("The server at http://localhost:8080/health returns HTTP 503.").with_id("ev_1"),
//!     Event::assistant("The timeout in src/server/config.rs is 30s.").with_id("ev_2"),
//! ];
//! let report = check_fidelity(&span, "## Goal\n- fix src/server/config.rs");
//! assert_eq!(report.identifiers, 4);
//! assert_eq!(report.survived, 1);
//! let hints = report.lookup_hints().unwrap();
//! assert!(hints.contains("- `30s` — search events ev_2"));
//! ```

mod events;
mod scanner;

use std::collections::{BTreeMap, BTreeSet};

use crate::base::event::{Event, TraceType};
use scanner::{is_number, ATTACHED_UNITS, SPACED_UNITS};

pub use events::event_identifiers;
pub(crate) use events::identifiers_of_each;
pub(crate) use events::PendingScan;
pub use scanner::extract_identifiers;

/// Lookup hints listed at most; the rest are counted in a last line.
pub const MAX_HINTS: usize = 40;
/// Event ids listed per hint at most.
pub(crate) const MAX_IDS_PER_HINT: usize = 5;

/// An identifier of the compacted span that the new context lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingIdentifier {
    /// The identifier (a path, an id, a number, …).
    pub identifier: String,
    /// The events it appears in, in span order (an event without an id is
    /// named `@<index in the span>`).
    pub event_ids: Vec<String>,
}

/// How many identifiers of a compacted span survive in the new context.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FidelityReport {
    /// Distinct identifiers found in the compacted span.
    pub identifiers: usize,
    /// Of those, how many appear in the new context.
    pub survived: usize,
    /// Those that do not, most useful first: identifiers named by the user,
    /// the assistant or a tool call before those only seen in tool output,
    /// then those found in more events, then in span order.
    pub missing: Vec<MissingIdentifier>,
}

impl FidelityReport {
    /// `survived / identifiers`, 1.0 when the span had no identifiers.
    ///
    /// ```
    /// use agentmem::summarize::FidelityReport;
    /// let report = FidelityReport { identifiers: 4, survived: 3, missing: vec![] };
    /// assert_eq!(report.survival_rate(), 0.75);
    /// assert_eq!(FidelityReport::default().survival_rate(), 1.0);
    /// ```
    pub fn survival_rate(&self) -> f64 {
        if self.identifiers == 0 {
            1.0
        } else {
            self.survived as f64 / self.identifiers as f64
        }
    }

    /// A `## Lookup hints` markdown section naming each missing identifier and
    /// the events to search for it, or `None` when nothing is missing. The
    /// first [`MAX_HINTS`] identifiers of [`FidelityReport::missing`] are
    /// listed, each with at most `MAX_IDS_PER_HINT` event ids; a last line
    /// counts the rest.
    ///
    /// ```
    /// use agentmem::summarize::{FidelityReport, MissingIdentifier};
    /// let report = FidelityReport {
    ///     identifiers: 2,
    ///     survived: 1,
    ///     missing: vec![MissingIdentifier {
    ///         identifier: "src/x.rs".into(),
    ///         event_ids: vec!["ev_1".into(), "ev_2".into()],
    ///     }],
    /// };
    /// let hints = report.lookup_hints().unwrap();
    /// assert!(hints.starts_with("## Lookup hints\n"));
    /// assert!(hints.contains("- `src/x.rs` — search events ev_1, ev_2\n"));
    /// ```
    pub fn lookup_hints(&self) -> Option<String> {
        if self.missing.is_empty() {
            return None;
        }
        let mut out = String::from("## Lookup hints\n");
        out.push_str(
            "These identifiers from the compacted history are not in this context; \
             search the listed events to recover them.\n",
        );
        for missing in self.missing.iter().take(MAX_HINTS) {
            let shown: Vec<&str> = missing
                .event_ids
                .iter()
                .take(MAX_IDS_PER_HINT)
                .map(String::as_str)
                .collect();
            out.push_str(&format!(
                "- `{}` — search events {}",
                missing.identifier,
                shown.join(", ")
            ));
            if missing.event_ids.len() > MAX_IDS_PER_HINT {
                out.push_str(&format!(
                    " (+{} more)",
                    missing.event_ids.len() - MAX_IDS_PER_HINT
                ));
            }
            out.push('\n');
        }
        if self.missing.len() > MAX_HINTS {
            out.push_str(&format!(
                "- … and {} more identifiers; search the archived history\n",
                self.missing.len() - MAX_HINTS
            ));
        }
        Some(out)
    }
}

/// Which identifiers of `compacted` (events in the model's view: content,
/// argument strings, error text) appear in `new_context`. An identifier
/// survives when it appears verbatim; a number with a unit also survives
/// written with or without the space (`512 MB` / `512MB`).
///
/// ```
/// use agentmem::Event;
/// use agentmem::summarize::check_fidelity;
/// let span = [
///     Event::tool_error("c1", "error[E0425]: cannot find value `x`\n --> src/main.rs:4:5").with_id("ev_9"),
/// ];
/// let report = check_fidelity(&span, "Fixed E0425.");
/// assert_eq!((report.identifiers, report.survived), (2, 1));
/// assert_eq!(report.missing[0].identifier, "src/main.rs:4:5");
/// assert_eq!(report.missing[0].event_ids, ["ev_9"]);
/// ```
pub fn check_fidelity(compacted: &[Event], new_context: &str) -> FidelityReport {
    struct Found {
        identifier: String,
        event_ids: Vec<String>,
        /// Named outside tool output (by the user, the assistant, a tool call).
        authored: bool,
    }
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut found: Vec<Found> = Vec::new();
    let in_view: Vec<(usize, &Event)> = compacted
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_in_model_view())
        .collect();
    let events: Vec<&Event> = in_view.iter().map(|&(_, e)| e).collect();
    for ((position, event), identifiers) in in_view.into_iter().zip(identifiers_of_each(&events)) {
        let id = if event.id.is_empty() {
            format!("@{position}")
        } else {
            event.id.clone()
        };
        let authored = event.trace_type != TraceType::ToolResult;
        for identifier in identifiers {
            match index.get(&identifier) {
                Some(&i) => {
                    let entry = &mut found[i];
                    entry.authored |= authored;
                    if entry.event_ids.last() != Some(&id) {
                        entry.event_ids.push(id.clone());
                    }
                }
                None => {
                    index.insert(identifier.clone(), found.len());
                    found.push(Found {
                        identifier,
                        event_ids: vec![id.clone()],
                        authored,
                    });
                }
            }
        }
    }
    let in_context: BTreeSet<String> = extract_identifiers(new_context).into_iter().collect();
    let mut report = FidelityReport {
        identifiers: found.len(),
        ..FidelityReport::default()
    };
    let survivors = surviving(
        found.iter().map(|e| e.identifier.as_str()),
        &in_context,
        new_context,
    );
    let mut missing = Vec::new();
    for (entry, survived) in found.into_iter().zip(survivors) {
        if survived {
            report.survived += 1;
        } else {
            missing.push(entry);
        }
    }
    // Stable: ties stay in span order.
    missing.sort_by(|a, b| {
        b.authored
            .cmp(&a.authored)
            .then(b.event_ids.len().cmp(&a.event_ids.len()))
    });
    report.missing = missing
        .into_iter()
        .map(|m| MissingIdentifier {
            identifier: m.identifier,
            event_ids: m.event_ids,
        })
        .collect();
    report
}

/// Which identifiers appear in the new context, as written or in their other
/// unit spelling (`512 MB` ⇄ `512MB`). One pass over the context finds them
/// all (Aho-Corasick), however many identifiers a span has; an identifier
/// with a trigram the context lacks is not looked for.
fn surviving<'a>(
    identifiers: impl Iterator<Item = &'a str>,
    in_context: &BTreeSet<String>,
    context: &str,
) -> Vec<bool> {
    let mut survived = Vec::new();
    let (mut patterns, mut owners) = (Vec::new(), Vec::new());
    let trigrams = Trigrams::of(context);
    for (i, identifier) in identifiers.enumerate() {
        let as_written = in_context.contains(identifier);
        survived.push(as_written);
        if as_written {
            continue; // no need to look for it within longer words
        }
        for spelling in std::iter::once(identifier.to_owned()).chain(other_spelling(identifier)) {
            if trigrams.may_contain(&spelling) {
                patterns.push(spelling);
                owners.push(i);
            }
        }
    }
    if let Ok(automaton) = aho_corasick::AhoCorasick::builder()
        .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
        .build(&patterns)
    {
        for found in automaton.find_overlapping_iter(context) {
            survived[owners[found.pattern().as_usize()]] = true;
        }
    }
    survived
}

/// The byte trigrams of a text, as a set of their hashes: a pattern with a
/// trigram the text lacks cannot occur in it. Most identifiers of a
/// compacted span are nowhere in the new context, and this rules them out
/// without building an automaton of thousands of patterns.
struct Trigrams {
    bits: Vec<u64>,
}

/// Bits of the trigram set: a few times more than a context has trigrams,
/// so few patterns pass by a collision.
const TRIGRAM_SET_BITS: usize = 1 << 20;

impl Trigrams {
    fn of(text: &str) -> Trigrams {
        let mut bits = vec![0u64; TRIGRAM_SET_BITS / 64];
        for trigram in text.as_bytes().windows(3) {
            let slot = Trigrams::slot(trigram);
            bits[slot / 64] |= 1 << (slot % 64);
        }
        Trigrams { bits }
    }

    /// Whether `pattern` may occur in the text: false only when it surely does not.
    fn may_contain(&self, pattern: &str) -> bool {
        pattern.as_bytes().windows(3).all(|trigram| {
            let slot = Trigrams::slot(trigram);
            self.bits[slot / 64] & (1 << (slot % 64)) != 0
        })
    }

    fn slot(trigram: &[u8]) -> usize {
        let packed = u32::from_le_bytes([trigram[0], trigram[1], trigram[2], 0]);
        // Fibonacci hashing: the top 20 bits of the product.
        (packed.wrapping_mul(0x9E37_79B1) >> (32 - TRIGRAM_SET_BITS.trailing_zeros())) as usize
    }
}

/// `512 MB` for `512MB` and back, for numbers with units.
fn other_spelling(identifier: &str) -> Option<String> {
    if let Some((number, unit)) = identifier.split_once(' ') {
        if is_number(number) && SPACED_UNITS.contains(&unit) {
            return Some(format!("{number}{unit}"));
        }
    }
    let split = identifier.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = identifier.split_at(split);
    (is_number(number) && ATTACHED_UNITS.contains(&unit)).then(|| format!("{number} {unit}"))
}

#[cfg(test)]
mod tests;
