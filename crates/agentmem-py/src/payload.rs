//! A prepared payload as Python objects, built from what changed since the
//! session's last call.
//!
//! The engine shares the message list between calls as segments of
//! serialized entries (`agentmem::render::Segment`): a long session's next
//! call repeats the segments of the one before and adds a few at the end.
//! The session keeps the Python objects it built for the latest payload's
//! segments, so a call converts only the segments it has not seen; the
//! others' entries are the same Python objects as before, joined into a
//! fresh list (pointer copies, not JSON). Each call returns a new body dict
//! and a new list, so a caller that appends to the list or sets a field
//! leaves the cache as it was; the entries inside are shared with later
//! calls' payloads and are read-only.
//!
//! The fields around the list (the model, the instructions, the tools) and
//! the list's fixed ends (the system message) are kept too, with the values
//! they were built from: while those stay the same, every call hands out
//! the same objects, so a caller can tell an unchanged entry by identity.
//!
//! New entries are read by Python's `json.loads` from the engine's JSON, so
//! they are exactly the dicts the JSON path gives (a number beyond 64 bits,
//! a float's every digit, key order).

use std::collections::HashMap;
use std::sync::Arc;

use agentmem::render::{Parts, Segment};
use agentmem::{ContextStats, Payload};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyMapping};
use serde_json::{Map, Value};

use crate::json;

/// Python's `json.loads`, looked up once.
static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python objects built for the latest payload's segments.
#[derive(Default)]
pub(crate) struct SegmentCache {
    /// The latest payload's segments, in order, each with where its entries
    /// are in `entries`. Holding the `Arc` keeps the segment alive, so its
    /// address cannot be reused by another segment while it is cached.
    segments: Vec<Cached>,
    /// The entries of those segments as Python objects, in order (never
    /// handed out: a payload gets a copy of the list).
    entries: Option<Py<PyList>>,
    /// The latest payload's fields and fixed list ends, as Python objects.
    around: Option<Around>,
}

/// A payload's fields and the list's fixed ends, with their Python objects
/// `[fields before the list, fields after it, lead entries, closing entries]`
/// (which fields come before the list depends on the list's key).
struct Around {
    list_key: &'static str,
    fields: Map<String, Value>,
    lead: Vec<Value>,
    closing: Vec<Value>,
    objects: Py<PyList>,
}

/// Where the entries of cached segments beyond the common prefix are in
/// the cache's list (start, length), by the segment's address.
type Seen = HashMap<*const Segment, (usize, usize)>;

/// One cached segment and where its entries are in the cache's list.
struct Cached {
    segment: Arc<Segment>,
    start: usize,
    len: usize,
}

impl SegmentCache {
    /// `payload` as a Python dict, and `stats` as one: segments the cache
    /// holds reuse their objects, the others are converted and cached, and
    /// segments the payload no longer has are dropped.
    pub(crate) fn convert<'py>(
        &mut self,
        py: Python<'py>,
        payload: &Payload,
        stats: &ContextStats,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyAny>)> {
        let parts = payload.parts();
        let entries = self.segment_entries(py, &parts)?;
        let around = self.around_objects(py, &parts)?;
        let moving =
            json::write(&(parts.last_entry, stats)).map_err(|error| error.into_pyerr(py))?;
        let moving = loads(py, &moving)?.cast_into::<PyList>()?;
        let list = PyList::empty(py);
        extend(&list, &around.get_item(2)?)?;
        extend(&list, &entries)?;
        if parts.last_entry.is_some() {
            list.set_item(list.len() - 1, moving.get_item(0)?)?;
        }
        extend(&list, &around.get_item(3)?)?;
        let body = PyDict::new(py);
        body.update(around.get_item(0)?.cast::<PyMapping>()?)?;
        body.set_item(parts.list_key, list)?;
        body.update(around.get_item(1)?.cast::<PyMapping>()?)?;
        Ok((body, moving.get_item(1)?))
    }

    /// The Python objects of `parts`' fields and fixed list ends: the
    /// cached ones while their values are the same, else read afresh.
    fn around_objects<'py>(
        &mut self,
        py: Python<'py>,
        parts: &Parts<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        if let Some(around) = &self.around {
            if around.list_key == parts.list_key
                && around.fields == *parts.fields
                && around.lead == parts.lead
                && around.closing == parts.closing
            {
                return Ok(around.objects.bind(py).clone());
            }
        }
        let before = parts.fields_before_list();
        let fixed = Fixed {
            before: parts.fields.iter().take(before).collect(),
            after: parts.fields.iter().skip(before).collect(),
            lead: parts.lead,
            closing: parts.closing,
        };
        let text = json::write(&fixed).map_err(|error| error.into_pyerr(py))?;
        let objects = loads(py, &text)?.cast_into::<PyList>()?;
        self.around = Some(Around {
            list_key: parts.list_key,
            fields: parts.fields.clone(),
            lead: parts.lead.to_vec(),
            closing: parts.closing.to_vec(),
            objects: objects.clone().unbind(),
        });
        Ok(objects)
    }

    /// The entries of `parts`' segments as Python objects, in order: the
    /// cache's own list, to be copied, never handed out.
    fn segment_entries<'py>(
        &mut self,
        py: Python<'py>,
        parts: &Parts<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        let old = std::mem::take(&mut self.segments);
        let old_entries = match self.entries.take() {
            Some(list) => list.into_bound(py),
            None => PyList::empty(py),
        };
        // The common prefix is kept as one slice; segments seen further on
        // (a compaction keeps the newest turns) are found by address.
        let prefix = old
            .iter()
            .zip(parts.segments)
            .take_while(|(cached, segment)| Arc::ptr_eq(&cached.segment, segment))
            .count();
        let seen: Seen = old[prefix..]
            .iter()
            .map(|cached| (Arc::as_ptr(&cached.segment), (cached.start, cached.len)))
            .collect();
        let kept_end = old[..prefix].last().map_or(0, |c| c.start + c.len);
        let entries = old_entries.get_slice(0, kept_end);
        let mut segments: Vec<Cached> = old.into_iter().take(prefix).collect();
        let fresh = convert_unseen(py, &parts.segments[prefix..], &seen)?;
        let mut fresh_at = 0;
        for segment in &parts.segments[prefix..] {
            let start = entries.len();
            match seen.get(&Arc::as_ptr(segment)) {
                Some(&(start, len)) => {
                    extend(&entries, &old_entries.get_slice(start, start + len))?
                }
                None => {
                    extend(
                        &entries,
                        &fresh.get_slice(fresh_at, fresh_at + segment.len()),
                    )?;
                    fresh_at += segment.len();
                }
            }
            segments.push(Cached {
                segment: Arc::clone(segment),
                start,
                len: segment.len(),
            });
        }
        self.segments = segments;
        self.entries = Some(entries.clone().unbind());
        Ok(entries)
    }
}

/// The entries of the segments in `segments` that are not in `seen`, in
/// order, read by one `json.loads`.
fn convert_unseen<'py>(
    py: Python<'py>,
    segments: &[Arc<Segment>],
    seen: &Seen,
) -> PyResult<Bound<'py, PyList>> {
    let unseen = segments
        .iter()
        .filter(|segment| !seen.contains_key(&Arc::as_ptr(segment)));
    let mut text = String::from("[");
    for entry in unseen.flat_map(|segment| segment.entries()) {
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(entry.get());
    }
    text.push(']');
    Ok(loads(py, &text)?.cast_into::<PyList>()?)
}

/// A payload's fields around its list and the list's fixed ends, written
/// as one JSON list for one `json.loads`.
struct Fixed<'a> {
    before: Vec<(&'a String, &'a Value)>,
    after: Vec<(&'a String, &'a Value)>,
    lead: &'a [Value],
    closing: &'a [Value],
}

impl serde::Serialize for Fixed<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut tuple = serializer.serialize_tuple(4)?;
        tuple.serialize_element(&Fields(&self.before))?;
        tuple.serialize_element(&Fields(&self.after))?;
        tuple.serialize_element(self.lead)?;
        tuple.serialize_element(self.closing)?;
        tuple.end()
    }
}

/// Fields written as a JSON object, in order.
struct Fields<'a>(&'a [(&'a String, &'a Value)]);

impl serde::Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

/// `json.loads(text)`.
fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    LOADS.import(py, "json", "loads")?.call1((text,))
}

/// Appends `items` (a list) to `list`.
fn extend(list: &Bound<'_, PyList>, items: &Bound<'_, PyAny>) -> PyResult<()> {
    let end = list.len();
    list.set_slice(end, end, items)
}
