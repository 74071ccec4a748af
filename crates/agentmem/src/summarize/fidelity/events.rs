//! The identifiers events hold: each event scanned once (large spans in
//! parallel), its arguments and results included, and the results kept by
//! the event's fingerprint.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::scanner::scan;
use crate::base::event::Event;

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
pub(crate) fn identifiers_of_each(events: &[&Event]) -> Vec<Vec<String>> {
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
pub(super) const PARALLEL_SCAN_MIN_BYTES: usize = 64 * 1024;

/// Scans `events[i]` for each `i` of `which`, the work shared among the
/// cores in runs of about equal size; `(i, identifiers)` in `which`'s order.
pub(super) fn scan_in_parallel(events: &[&Event], which: &[usize]) -> Vec<(usize, Vec<String>)> {
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
pub(super) const SCANNED_MAX_EVENTS: usize = 4096;

thread_local! {
    /// Identifiers of recently scanned events, by id and fingerprint.
    static SCANNED: RefCell<HashMap<(String, u64), Vec<String>>> = RefCell::default();
}

/// A hash of what [`scan_event`] reads.
pub(super) fn fingerprint(event: &Event) -> u64 {
    let mut hasher = crate::base::hash::fingerprint_hasher();
    event.content.hash(&mut hasher);
    event.tool_error.hash(&mut hasher);
    if let Some(args) = &event.tool_args {
        args.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

pub(super) fn scan_event(event: &Event) -> Vec<String> {
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

pub(super) fn scan_value(value: &Value, key: Option<&str>, emit: &mut dyn FnMut(String)) {
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
