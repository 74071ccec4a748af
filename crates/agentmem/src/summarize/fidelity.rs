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
//! use agentmem::event::Event;
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

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::event::{Event, TraceType};

/// Lookup hints listed at most; the rest are counted in a last line.
pub const MAX_HINTS: usize = 40;
/// Event ids listed per hint at most.
pub const MAX_IDS_PER_HINT: usize = 5;

/// An identifier of the compacted span that the new context lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingIdentifier {
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
    /// listed, each with at most [`MAX_IDS_PER_HINT`] event ids; a last line
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
/// use agentmem::event::Event;
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

/// The identifiers of one event: in its content, the strings of its tool
/// arguments (and `port` numbers), and its error text when that differs from
/// the content. Deduplicated, in order of appearance. Tool call ids are
/// bookkeeping, not content, and are not scanned.
pub fn event_identifiers(event: &Event) -> Vec<String> {
    identifiers_of_each(&[event]).pop().unwrap_or_default()
}

/// [`event_identifiers`] of each of `events`, in order. A compaction asks
/// for a span's identifiers twice (for the summary's critical context, then
/// for the fidelity check) and a span is a megabyte of text: identifiers are
/// remembered by event id and content, and the events not remembered are
/// scanned on all cores.
pub fn identifiers_of_each(events: &[&Event]) -> Vec<Vec<String>> {
    let pending = PendingScan::new(events);
    let scanned = pending.scan();
    pending.finish(scanned)
}

/// [`identifiers_of_each`] in three steps, so the scanning can run on other
/// threads while the caller does other work: the remembered identifiers are
/// looked up and the new ones kept on the caller's thread, whose memo it is.
pub(crate) struct PendingScan<'e> {
    events: &'e [&'e Event],
    keys: Vec<Option<(String, u64)>>,
    found: Vec<Option<Vec<String>>>,
}

impl<'e> PendingScan<'e> {
    /// Looks up what is remembered of `events`.
    pub(crate) fn new(events: &'e [&'e Event]) -> Self {
        let keys: Vec<Option<(String, u64)>> = events
            .iter()
            .map(|e| (!e.id.is_empty()).then(|| (e.id.clone(), fingerprint(e))))
            .collect();
        let found = SCANNED.with(|memo| {
            let memo = memo.borrow();
            keys.iter()
                .map(|key| key.as_ref().and_then(|k| memo.get(k).cloned()))
                .collect()
        });
        PendingScan {
            events,
            keys,
            found,
        }
    }

    /// Scans the events not remembered, on all cores; from any thread.
    pub(crate) fn scan(&self) -> Vec<(usize, Vec<String>)> {
        let unscanned: Vec<usize> = (0..self.events.len())
            .filter(|&i| self.found[i].is_none())
            .collect();
        scan_in_parallel(self.events, &unscanned)
    }

    /// Every event's identifiers, the newly `scanned` ones remembered.
    pub(crate) fn finish(mut self, scanned: Vec<(usize, Vec<String>)>) -> Vec<Vec<String>> {
        SCANNED.with(|memo| {
            let mut memo = memo.borrow_mut();
            for (i, identifiers) in scanned {
                if let Some(key) = &self.keys[i] {
                    if memo.len() >= SCANNED_MAX_EVENTS {
                        memo.clear();
                    }
                    memo.insert(key.clone(), identifiers.clone());
                }
                self.found[i] = Some(identifiers);
            }
        });
        self.found
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    }
}

/// Bytes of text below which scanning on one core is quicker than starting threads.
const PARALLEL_SCAN_MIN_BYTES: usize = 64 * 1024;

/// Scans `events[i]` for each `i` of `which`, the work shared among the
/// cores in runs of about equal size; `(i, identifiers)` in `which`'s order.
fn scan_in_parallel(events: &[&Event], which: &[usize]) -> Vec<(usize, Vec<String>)> {
    let size = |i: &usize| events[*i].content.len() + 64;
    let total: usize = which.iter().map(size).sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 || total < PARALLEL_SCAN_MIN_BYTES {
        return which.iter().map(|&i| (i, scan_event(events[i]))).collect();
    }
    let share = total.div_ceil(cores);
    let mut runs: Vec<&[usize]> = Vec::with_capacity(cores);
    let (mut start, mut filled) = (0, 0);
    for (position, i) in which.iter().enumerate() {
        filled += size(i);
        if filled >= share {
            runs.push(&which[start..=position]);
            (start, filled) = (position + 1, 0);
        }
    }
    runs.push(&which[start..]);
    let scan_run = |run: &[usize]| -> Vec<(usize, Vec<String>)> {
        run.iter().map(|&i| (i, scan_event(events[i]))).collect()
    };
    std::thread::scope(|scope| {
        let (first, rest) = runs.split_first().expect("at least one run");
        let helpers: Vec<_> = rest
            .iter()
            .map(|run| scope.spawn(|| scan_run(run)))
            .collect();
        let mut out = scan_run(first);
        for helper in helpers {
            out.extend(helper.join().expect("scanning never panics"));
        }
        out
    })
}

/// Events whose identifiers are remembered, per thread; the memo starts over
/// when full.
const SCANNED_MAX_EVENTS: usize = 4096;

thread_local! {
    /// Identifiers of recently scanned events, by id and fingerprint.
    static SCANNED: RefCell<HashMap<(String, u64), Vec<String>>> = RefCell::default();
}

/// A hash of what [`scan_event`] reads.
fn fingerprint(event: &Event) -> u64 {
    let mut hasher = crate::hash::fingerprint_hasher();
    event.content.hash(&mut hasher);
    event.tool_error.hash(&mut hasher);
    if let Some(args) = &event.tool_args {
        args.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

fn scan_event(event: &Event) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut emit = |id: String| {
        if seen.insert(id.clone()) {
            out.push(id);
        }
    };
    scan(&event.content, &mut emit);
    if let Some(args) = &event.tool_args {
        scan_value(args, None, &mut emit);
    }
    if let Some(error) = &event.tool_error {
        if !event.content.contains(error.as_str()) {
            scan(error, &mut emit);
        }
    }
    out
}

fn scan_value(value: &Value, key: Option<&str>, emit: &mut dyn FnMut(String)) {
    match value {
        Value::String(s) => scan(s, emit),
        Value::Array(items) => {
            for item in items {
                scan_value(item, key, emit);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                scan_value(v, Some(k), emit);
            }
        }
        Value::Number(n) => {
            if key.is_some_and(|k| k.eq_ignore_ascii_case("port")) {
                emit(format!("port {n}"));
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// The identifiers in `text`, deduplicated, in order of first appearance.
///
/// ```
/// use agentmem::summarize::extract_identifiers;
/// let text = "Build failed with error[E0425] in crates/parser/src/header.rs:88 after commit \
///             3f9d2c1b; see https://github.com/org/repo/issues/12 — the worker needs 512 MB \
///             and a 30s timeout on port 8080.";
/// assert_eq!(
///     extract_identifiers(text),
///     ["E0425", "crates/parser/src/header.rs:88", "3f9d2c1b", "https://github.com/org/repo/issues/12",
///      "512 MB", "30s", "port 8080"]
/// );
/// assert!(extract_identifiers("The quick brown fox jumps over the lazy dog, and/or not.").is_empty());
/// ```
pub fn extract_identifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    scan(text, &mut |id: String| {
        if seen.insert(id.clone()) {
            out.push(id);
        }
    });
    out
}

/// Units written right after a number: `30s`, `200ms`, `1.5GB`.
const ATTACHED_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "s", "sec", "secs", "m", "min", "mins", "h", "hr", "hrs", "d", "B",
    "KB", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "Kb", "Mb", "Gb", "Hz", "kHz",
    "MHz", "GHz", "rps", "qps",
];

/// Units written after a number and a space: `512 MB`, `30 seconds`.
const SPACED_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes",
    "hr", "hrs", "hour", "hours", "day", "days", "B", "bytes", "KB", "kB", "MB", "GB", "TB", "PB",
    "KiB", "MiB", "GiB", "TiB", "Kb", "Mb", "Gb", "Hz", "kHz", "MHz", "GHz", "rps", "qps", "req/s",
];

/// File extensions a bare name (`Cargo.toml`) must end with to count as a
/// path. Extensions that are also common words or attribute names (`log`,
/// `lock`, `env`, `db`, `cfg`) are left out: such names count inside a
/// directory (`logs/server.log`) or when well known ([`WELL_KNOWN_FILES`]).
const FILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "kts", "scala",
    "rb", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "swift", "sh", "bash", "zsh",
    "fish", "ps1", "bat", "json", "jsonl", "ndjson", "yaml", "yml", "toml", "ini", "md",
    "markdown", "rst", "txt", "csv", "tsv", "xml", "html", "htm", "css", "scss", "sass", "less",
    "sql", "proto", "graphql", "gql", "vue", "svelte", "dart", "lua", "ipynb", "gradle", "mk",
    "cmake", "tf", "tfvars", "hcl", "patch", "diff", "svg", "png", "jpg", "jpeg", "gif", "pdf",
    "zip", "gz", "tgz", "tar", "wasm", "so", "dylib", "dll", "exe", "pem", "crt", "traj", "sqlite",
    "parquet",
];

/// Extensions that collide with attribute access in code (`event.ts`,
/// `self.c`): a bare name with one counts unless its stem is a usual receiver.
const AMBIGUOUS_EXTENSIONS: &[&str] = &[
    "ts", "c", "h", "go", "rs", "py", "sh", "so", "tf", "js", "md", "zip", "gz", "tar", "diff",
    "patch",
];

/// Stems that name a value, not a file, before an ambiguous extension.
const RECEIVER_STEMS: &[&str] = &[
    "self", "this", "cls", "event", "ev", "e", "msg", "message", "row", "item", "obj", "ctx",
    "req", "res", "resp", "node", "el", "t", "x", "y", "s", "r", "a", "b", "v", "o", "i", "j", "k",
    "args", "opts", "state", "props", "window", "document", "console", "process", "module",
    "exports", "os", "sys", "np", "pd", "it", "record", "entry", "result", "response", "request",
];

/// Names that look like files but are product names (`Node.js`).
const NOT_FILES: &[&str] = &[
    "node.js",
    "next.js",
    "vue.js",
    "react.js",
    "nuxt.js",
    "three.js",
    "d3.js",
    "chart.js",
    "express.js",
];

/// File names without a telling extension that are still files.
pub const WELL_KNOWN_FILES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Vagrantfile",
    "Jenkinsfile",
    "Cargo.lock",
    "yarn.lock",
    "poetry.lock",
    "Gemfile.lock",
    "Pipfile",
    "Pipfile.lock",
    "pnpm-lock.yaml",
    "setup.cfg",
    "tox.ini",
    ".env",
    ".gitignore",
    ".dockerignore",
    ".editorconfig",
    ".bashrc",
    ".zshrc",
    ".npmrc",
    ".profile",
];

/// errno and signal names.
const ERRNO_NAMES: &[&str] = &[
    "ENOENT",
    "EACCES",
    "EPERM",
    "EEXIST",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENOSPC",
    "ENOMEM",
    "EAGAIN",
    "EBADF",
    "EPIPE",
    "EBUSY",
    "EMFILE",
    "ENOTEMPTY",
    "ECONNREFUSED",
    "ECONNRESET",
    "ECONNABORTED",
    "ETIMEDOUT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "SIGSEGV",
    "SIGKILL",
    "SIGTERM",
    "SIGABRT",
    "SIGBUS",
    "SIGPIPE",
    "SIGINT",
    "SIGHUP",
    "OOMKilled",
];

/// Characters that end a word besides whitespace.
fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';' | '|' | '='
    )
}

/// Scans `text` and calls `emit` for each identifier occurrence.
fn scan(text: &str, emit: &mut dyn FnMut(String)) {
    let mut words: Vec<&str> = Vec::new();
    for line in text.lines() {
        let diff_header = line.starts_with("diff --git ")
            || line.starts_with("--- a/")
            || line.starts_with("+++ b/");
        words.clear();
        for chunk in line.split_whitespace() {
            split_chunk(chunk, &mut words);
        }
        for i in 0..words.len() {
            classify(&words, i, diff_header, emit);
        }
    }
}

/// Splits one whitespace-separated chunk into words, URLs kept whole.
fn split_chunk<'t>(chunk: &'t str, words: &mut Vec<&'t str>) {
    let mut rest = chunk;
    while !rest.is_empty() {
        match find_url(rest) {
            Some((start, end)) => {
                push_words(&rest[..start], words);
                words.push(&rest[start..end]);
                rest = &rest[end..];
            }
            None => {
                push_words(rest, words);
                break;
            }
        }
    }
}

fn push_words<'t>(text: &'t str, words: &mut Vec<&'t str>) {
    let mut push = |word: &'t str| {
        let word = trim_word(word);
        if !word.is_empty() {
            words.push(word);
        }
    };
    for piece in text.split(is_delimiter) {
        // `::` separates path segments of code (`crate::cfg`, `test.py::test_x`).
        if has_byte(piece, b':') {
            piece.split("::").for_each(&mut push);
        } else {
            push(piece);
        }
    }
}

/// Whether `text` holds the ASCII byte `byte`: a quick test before a
/// substring search, which costs more to set up than most words are long.
fn has_byte(text: &str, byte: u8) -> bool {
    // A plain loop: words are short, and a call to memchr costs more than
    // looking at a dozen bytes.
    text.bytes().any(|b| b == byte)
}

fn trim_word(word: &str) -> &str {
    word.trim_start_matches(['*', '_'])
        .trim_end_matches(['.', ',', ':', ';', '!', '?', '*', '_'])
}

/// The byte range of a URL in `text` (no whitespace inside), if any.
fn find_url(text: &str) -> Option<(usize, usize)> {
    if !has_byte(text, b':') {
        return None; // neither `scheme://` nor `user@host:path`
    }
    let start = if let Some(i) = text.find("://") {
        // Walk back over the scheme.
        let scheme_start = text[..i]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .last()
            .map(|(j, _)| j)?;
        let scheme = &text[scheme_start..i];
        if !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        scheme_start
    } else if let Some(at) = text.find('@') {
        // scp-like git remote: git@host:owner/repo.git
        let colon = text[at..].find(':')? + at;
        let user = &text[..at];
        let host = &text[at + 1..colon];
        let user_start = user
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .last()
            .map(|(j, _)| j)?;
        if host.is_empty()
            || !host.contains('.')
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
            || !text[colon + 1..].contains('/')
        {
            return None;
        }
        user_start
    } else {
        return None;
    };
    let body = &text[start..];
    let mut end = body
        .find(['"', '\'', '`', '<', '>', '|', '\\', '{', '}'])
        .unwrap_or(body.len());
    // Trailing punctuation and an unbalanced closing bracket are not part of it.
    loop {
        let url = &body[..end];
        let Some(last) = url.chars().last() else {
            break;
        };
        let unbalanced = (last == ')' && url.matches('(').count() < url.matches(')').count())
            || (last == ']' && url.matches('[').count() < url.matches(']').count());
        if matches!(last, '.' | ',' | ';' | ':' | '!' | '?' | '*') || unbalanced {
            end -= last.len_utf8();
        } else {
            break;
        }
    }
    let url = &body[..end];
    // Something after the scheme or host is needed.
    let after = url.split_once("://").map_or(url, |(_, a)| a);
    if after.len() < 3 {
        return None;
    }
    Some((start, start + end))
}

/// Classifies `words[i]` (with its neighbours as context) and emits it if it
/// is an identifier.
fn classify(words: &[&str], i: usize, diff_header: bool, emit: &mut dyn FnMut(String)) {
    let word = words[i];
    // Most words are plain words: of all the shapes below, only a well-known
    // file name or an errno name can be spelled with letters alone, and
    // both start with a capital.
    if word.bytes().all(|b| b.is_ascii_alphabetic()) {
        let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
        if capital && (WELL_KNOWN_FILES.contains(&word) || ERRNO_NAMES.contains(&word)) {
            emit(word.to_string());
        }
        return;
    }
    let prev = i.checked_sub(1).map(|j| words[j]);
    let next = words.get(i + 1).copied();

    if has_byte(word, b':') && find_url(word) == Some((0, word.len())) {
        emit(word.to_string());
        return;
    }
    if let Some(digits) = word.strip_prefix('#') {
        if digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit()) {
            emit(word.to_string());
        }
        return;
    }
    if is_uuid(word) {
        emit(word.to_string());
        return;
    }
    if let Some(path) = as_path(word, diff_header) {
        emit(path.to_string());
        return;
    }
    if is_ipv4_or_host_port(word) {
        emit(word.to_string());
        return;
    }
    if is_hex_hash(word) {
        emit(word.to_string());
        return;
    }
    if is_number(word) {
        if let Some(next) = next.map(trim_word) {
            if SPACED_UNITS.contains(&next) {
                emit(format!("{word} {next}"));
                return;
            }
        }
        if let Some(prev) = prev {
            let prev_plain = prev.trim_start_matches('-').to_ascii_lowercase();
            let digits = word.chars().all(|c| c.is_ascii_digit());
            if digits && prev_plain == "port" && (2..=5).contains(&word.len()) {
                emit(format!("port {word}"));
                return;
            }
            let code: u32 = if digits && word.len() == 3 {
                word.parse().unwrap_or(0)
            } else {
                0
            };
            if (100..=599).contains(&code) && prev_plain.starts_with("http") {
                emit(format!("HTTP {word}"));
                return;
            }
            if (prev_plain == "code" || prev_plain == "status") && digits && word != "0" {
                let before = i.checked_sub(2).map(|j| words[j].to_ascii_lowercase());
                if before.as_deref() == Some("exit") {
                    emit(format!("exit {prev_plain} {word}"));
                    return;
                }
                if (100..=599).contains(&code) {
                    emit(format!("{prev_plain} {word}"));
                    return;
                }
            }
        }
        return;
    }
    if let Some(split) = word.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        let (number, unit) = word.split_at(split);
        if is_number(number) && ATTACHED_UNITS.contains(&unit) {
            emit(word.to_string());
            return;
        }
    }
    if is_error_code(word) || ERRNO_NAMES.contains(&word) || is_upper_snake(word) {
        emit(word.to_string());
        return;
    }
    if is_separated_id(word) || is_opaque_token(word) {
        emit(word.to_string());
    }
}

fn is_number(word: &str) -> bool {
    let mut parts = word.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    !int.is_empty()
        && int.chars().all(|c| c.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()))
}

fn is_uuid(word: &str) -> bool {
    word.len() == 36
        && word.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// 7–40 (or 64) hex characters with at least one digit and one letter.
fn is_hex_hash(word: &str) -> bool {
    ((7..=40).contains(&word.len()) || word.len() == 64)
        && word.chars().all(|c| c.is_ascii_hexdigit())
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
        // One case only, as hashes are written.
        && !(word.chars().any(|c| c.is_ascii_lowercase()) && word.chars().any(|c| c.is_ascii_uppercase()))
}

/// `E0425`, `TS2304`, `C2065`: 1–4 capitals then 3–5 digits.
fn is_error_code(word: &str) -> bool {
    let letters = word.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = &word[letters..];
    (1..=4).contains(&letters)
        && (3..=5).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
}

/// `ERR_CONNECTION_REFUSED`, `AGENTMEM_DIR`: capitals and digits joined by `_`.
fn is_upper_snake(word: &str) -> bool {
    word.len() >= 6
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.contains('_')
        && !word.starts_with('_')
        && !word.ends_with('_')
        && !word.contains("__")
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && word.chars().filter(|c| c.is_ascii_uppercase()).count() >= 4
}

/// `call_abc123`, `toolu_01A7…`, `req-7f3a9`: alphanumeric parts joined by `_`
/// or `-`, with a digit and a letter, at least 6 characters.
fn is_separated_id(word: &str) -> bool {
    word.len() >= 6
        && word.contains(['_', '-'])
        && word
            .split(['_', '-'])
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric()))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// A long opaque token (`01HqW8tK3VfL2pN6xYd9aBcE`): 16+ alphanumerics with
/// at least two digits and two letters.
fn is_opaque_token(word: &str) -> bool {
    word.len() >= 16
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.chars().filter(|c| c.is_ascii_digit()).count() >= 2
        && word.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 2
}

/// `10.0.0.1`, `10.0.0.1:5432`, `localhost:8080`, `db.internal:5432`.
fn is_ipv4_or_host_port(word: &str) -> bool {
    let (host, port) = match word.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (word, None),
    };
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
    }
    let octets: Vec<&str> = host.split('.').collect();
    let ipv4 = octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.chars().all(|c| c.is_ascii_digit())
                && o.parse::<u16>().is_ok_and(|n| n <= 255)
        });
    if ipv4 {
        return true;
    }
    port.is_some()
        && (host == "localhost"
            || (host.contains('.')
                && host.split('.').all(|l| {
                    !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
                && host.rsplit('.').next().is_some_and(|tld| {
                    tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
                })))
}

/// The path in `word` (with a `:line[:col]` suffix), if it is one.
fn as_path(word: &str, diff_header: bool) -> Option<&str> {
    let word = if diff_header {
        word.strip_prefix("a/")
            .or_else(|| word.strip_prefix("b/"))
            .unwrap_or(word)
    } else {
        word
    };
    // Windows: C:\dir\file.ext
    let bytes = word.as_bytes();
    if bytes.len() > 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\' {
        return Some(word);
    }
    let (base, suffix) = match word.find(':') {
        Some(i) => (&word[..i], &word[i + 1..]),
        None => (word, ""),
    };
    if !suffix.is_empty() {
        let mut parts = suffix.split(':');
        let ok = parts
            .next()
            .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            && parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return None;
        }
    } else if word.ends_with(':') {
        return None;
    }
    if base.is_empty()
        || !base
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '~' | '@' | '+'))
        || !base.chars().any(|c| c.is_alphabetic())
        || base.starts_with("//")
        || base.contains("//")
    {
        return None;
    }
    let segments: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    let last = *segments.last()?;
    let has_ext = has_file_extension(last, false);
    let is_path = if base.contains('/') {
        if !segments
            .iter()
            .any(|s| s.chars().any(|c| c.is_alphabetic()))
        {
            false
        } else if base.starts_with('/') || base.starts_with("~/") {
            segments.len() >= 2 || has_ext
        } else {
            has_file_extension(last, true)
                || segments.len() >= 3
                || (base.ends_with('/') && segments.len() >= 2)
        }
    } else {
        WELL_KNOWN_FILES.contains(&base)
            || (has_ext
                && !NOT_FILES.contains(&base.to_ascii_lowercase().as_str())
                && !is_receiver(base))
    };
    is_path.then_some(word)
}

/// `event.ts`, `self.c`: a value's attribute, not a file.
fn is_receiver(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        AMBIGUOUS_EXTENSIONS.contains(&ext)
            && RECEIVER_STEMS.contains(&stem.to_ascii_lowercase().as_str())
    })
}

/// Whether `name` ends with a file extension: a known one, or (when `loose`,
/// for names inside a directory) any short alphanumeric one with a letter.
fn has_file_extension(name: &str, loose: bool) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if stem.is_empty() || stem.chars().all(|c| c == '.') || ext.is_empty() {
        // Dotfiles (`.env`, `.gitignore`) inside a directory still count.
        return loose
            && stem.is_empty()
            && ext.len() >= 2
            && ext.chars().all(|c| c.is_ascii_alphanumeric());
    }
    if FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
        return true;
    }
    loose
        && ext.len() <= 10
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<String> {
        extract_identifiers(text)
    }

    #[test]
    fn remembered_identifiers_follow_the_content_not_just_the_id() {
        let first = Event::tool_result("c1", "see src/main.rs").with_id("r1");
        let edited = Event::tool_result("c1", "see src/lib.rs").with_id("r1");
        assert_eq!(event_identifiers(&first), ["src/main.rs"]);
        assert_eq!(event_identifiers(&first), ["src/main.rs"]);
        assert_eq!(event_identifiers(&edited), ["src/lib.rs"]);
    }

    #[test]
    fn a_large_span_has_the_identifiers_of_each_event_alone_in_order() {
        // Over PARALLEL_SCAN_MIN_BYTES: scanned on every core there is.
        let events: Vec<Event> = (0..400)
            .map(|i| {
                let text = format!(
                    "step {i}: edited src/mod_{i}.rs:{i} and ran `make` (exit code {}), \
                     commit {:08x}, listening on port {} {}",
                    i % 3,
                    0xabc0_0000_u32 + i,
                    8000 + i,
                    "and nothing else of note ".repeat(8)
                );
                Event::tool_result(format!("c{i}"), text).with_id(format!("r{i}"))
            })
            .collect();
        let refs: Vec<&Event> = events.iter().collect();
        assert!(events.iter().map(|e| e.content.len()).sum::<usize>() > PARALLEL_SCAN_MIN_BYTES);
        let alone: Vec<Vec<String>> = events.iter().map(|e| ids(&e.content)).collect();
        assert!(alone.iter().all(|found| found.len() >= 3), "{:?}", alone[0]);
        assert_eq!(identifiers_of_each(&refs), alone);
        // Asked again: remembered, the same.
        assert_eq!(identifiers_of_each(&refs), alone);
    }

    #[test]
    fn the_trigram_set_never_rules_out_what_occurs() {
        let text = "error[E0425] in src/main.rs:4:5 — 512 MB at http://localhost:8080/a ✓";
        let trigrams = Trigrams::of(text);
        for start in 0..text.len() {
            for end in start..=text.len() {
                if let Some(part) = text.get(start..end) {
                    assert!(trigrams.may_contain(part), "{part:?}");
                }
            }
        }
        assert!(!trigrams.may_contain("src/lib.rs"));
        assert!(!trigrams.may_contain("3f9d2c1b"));
    }

    #[test]
    fn paths() {
        assert_eq!(
            ids("edit src/lib.rs and /home/x/y.py then crates/a/b.rs:42 and ./run.sh, ~/notes/todo.md"),
            ["src/lib.rs", "/home/x/y.py", "crates/a/b.rs:42", "./run.sh", "~/notes/todo.md"]
        );
        assert_eq!(
            ids("Open `Cargo.toml` and README.md."),
            ["Cargo.toml", "README.md"]
        );
        assert_eq!(
            ids("thread 'main' panicked at crates/parser/src/header.rs:88:9:"),
            ["crates/parser/src/header.rs:88:9"]
        );
        assert_eq!(ids("--> src/server.rs:1:12"), ["src/server.rs:1:12"]);
        assert_eq!(ids("/etc/hosts and /tmp"), ["/etc/hosts"]);
        assert_eq!(ids(r"C:\Users\dev\app.exe"), [r"C:\Users\dev\app.exe"]);
        assert_eq!(
            ids("diff --git a/src/x.rs b/src/x.rs"),
            ["src/x.rs"],
            "diff headers name the path once"
        );
        assert_eq!(ids("src/config/.env"), ["src/config/.env"]);
        assert_eq!(
            ids("Run make: see Makefile and Cargo.lock, logs/app.log"),
            ["Makefile", "Cargo.lock", "logs/app.log"]
        );
        assert!(ids("event.ts self.c console.log cli.db: self.lock config.env").is_empty());
    }

    #[test]
    fn urls() {
        assert_eq!(
            ids("See https://example.com/a?b=1&c=(2). Also (http://x.io/y) and git@github.com:org/repo.git"),
            ["https://example.com/a?b=1&c=(2)", "http://x.io/y", "git@github.com:org/repo.git"]
        );
        assert_eq!(
            ids("[docs](https://docs.rs/serde/latest/serde/)"),
            ["https://docs.rs/serde/latest/serde/"]
        );
    }

    #[test]
    fn hashes_ids_and_codes() {
        assert_eq!(
            ids("at commit 3f9d2c1 (was a1b2c3d4e5f6)"),
            ["3f9d2c1", "a1b2c3d4e5f6"]
        );
        assert_eq!(
            ids("call_abc123 toolu_01A7bQz4RkV3mWcXe9TgHs2L 0b6e1c52-8f0e-4a7c-b1d2-3c4d5e6f7a81"),
            [
                "call_abc123",
                "toolu_01A7bQz4RkV3mWcXe9TgHs2L",
                "0b6e1c52-8f0e-4a7c-b1d2-3c4d5e6f7a81"
            ]
        );
        assert_eq!(ids("error[E0425]: cannot find value"), ["E0425"]);
        assert_eq!(
            ids(
                "net::ERR_CONNECTION_REFUSED and ENOENT, got HTTP 404 then status 503; exit code 2"
            ),
            [
                "ERR_CONNECTION_REFUSED",
                "ENOENT",
                "HTTP 404",
                "status 503",
                "exit code 2"
            ]
        );
        assert_eq!(ids("fixes #1234"), ["#1234"]);
        assert_eq!(
            ids("msg_01HqW8tK3VfL2pN6xYd9aBcE"),
            ["msg_01HqW8tK3VfL2pN6xYd9aBcE"]
        );
    }

    #[test]
    fn numbers_with_units_and_ports() {
        assert_eq!(
            ids("needs 512 MB, took 30s (1.5 GB peak, p99 200ms); listen on port 8080 or --port=9000"),
            ["512 MB", "30s", "1.5 GB", "200ms", "port 8080", "port 9000"]
        );
        assert_eq!(
            ids("connect to 10.0.0.1:5432 or localhost:3000"),
            ["10.0.0.1:5432", "localhost:3000"]
        );
        assert_eq!(ids("3 passed in 0.04s"), ["0.04s"]);
    }

    #[test]
    fn plain_text_has_no_identifiers() {
        let prose = "I'll run that test on its own first. The header name keeps a trailing carriage \
                     return, so CRLF input fails; and/or the read/write split is wrong. Let's see: \
                     e.g. the Node.js build, version 3.11.7, took 3 passes and 42 files. Deadbeef! \
                     It's 10 o'clock. Content-Type is fine; see split_header() and crate::cfg::Settings.";
        assert_eq!(ids(prose), Vec::<String>::new());
    }

    #[test]
    fn realistic_tool_output() {
        let log = "2026-11-21T00:18:14.272Z DEBUG workers.tracing.cache: rate method index_job=19369 elapsed_ms=343.\n\
                   src/auth/memory/net/offset_model.md:1621:    batch_pool = view.delete(budget_middleware_state)  # must input\n\
                   @@ -304,19 +512,3 @@ def handle_state_account_budget\n\
                   ============================= test session starts ==============================\n\
                   platform linux -- Python 3.11.7, pytest-8.3.2\n\
                   tests/api/test_path_account.py::test_get_server_total FAILED [ 70%]";
        assert_eq!(
            ids(log),
            [
                "src/auth/memory/net/offset_model.md:1621",
                "tests/api/test_path_account.py"
            ]
        );
    }

    #[test]
    fn fidelity_counts_and_hints() {
        let span = [
            Event::user("look at src/a.rs and src/b.rs").with_id("e1"),
            Event::tool_call(
                "c1",
                "read_file",
                serde_json::json!({"path": "src/b.rs", "port": 8080}),
            )
            .with_id("e2"),
            Event::tool_result("c1", "see https://x.io/doc and src/a.rs").with_id("e3"),
        ];
        let report = check_fidelity(&span, "worked on `src/a.rs`");
        assert_eq!(report.identifiers, 4);
        assert_eq!(report.survived, 1);
        assert_eq!(report.survival_rate(), 0.25);
        let missing: Vec<(&str, Vec<&str>)> = report
            .missing
            .iter()
            .map(|m| {
                (
                    m.identifier.as_str(),
                    m.event_ids.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        // Named by the user or a tool call first, then by number of events.
        assert_eq!(
            missing,
            [
                ("src/b.rs", vec!["e1", "e2"]),
                ("port 8080", vec!["e2"]),
                ("https://x.io/doc", vec!["e3"])
            ]
        );
        let hints = report.lookup_hints().unwrap();
        assert!(
            hints.contains("- `src/b.rs` — search events e1, e2\n"),
            "{hints}"
        );
        assert!(hints.contains("- `port 8080` — search events e2\n"));
    }

    #[test]
    fn units_survive_with_or_without_the_space() {
        let span = [Event::user("limit is 512 MB and 30s").with_id("e1")];
        let report = check_fidelity(&span, "512MB only");
        assert_eq!(report.survived, 1);
        assert_eq!(report.missing[0].identifier, "30s");
        let report = check_fidelity(&span, "512MB, 30 s");
        assert_eq!(report.survived, 2);
    }

    #[test]
    fn hints_are_capped() {
        let missing: Vec<MissingIdentifier> = (0..100)
            .map(|i| MissingIdentifier {
                identifier: format!("src/f{i}.rs"),
                event_ids: (0..8).map(|j| format!("e{j}")).collect(),
            })
            .collect();
        let report = FidelityReport {
            identifiers: 100,
            survived: 0,
            missing,
        };
        let hints = report.lookup_hints().unwrap();
        assert_eq!(
            hints.lines().filter(|l| l.starts_with("- `")).count(),
            MAX_HINTS
        );
        assert!(hints.contains("(+3 more)"));
        assert!(hints.contains("60 more identifiers"));
        assert!(FidelityReport::default().lookup_hints().is_none());
    }

    #[test]
    fn sidechain_events_are_not_checked() {
        let span = [Event::user("src/secret.rs")
            .with_id("e1")
            .with_tag(crate::event::SIDECHAIN_TAG)];
        assert_eq!(check_fidelity(&span, "").identifiers, 0);
    }
}
