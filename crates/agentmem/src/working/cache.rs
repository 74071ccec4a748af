//! `working_memory.json`: the current state, materialized so reading it
//! costs one file read instead of a replay of the log.
//!
//! The log is the truth; this file is a cache of it, rewritten atomically
//! after every update and trusted only while its version and hash match the
//! last update the session recorded (in its log or its snapshot). When it
//! is missing, damaged or behind, the state is rebuilt from the log.

use std::borrow::Borrow;

use std::path::Path;

use super::{hash_of, replay, Keep, Replayed, StateMark, WorkingMemory};
use crate::base::error::Result;
use crate::base::event::Event;
use crate::base::fs::write_atomic;
use crate::files::jsonl;
use crate::files::paths::SessionPaths;
use crate::files::snapshot::Snapshot;

/// The materialized state's file name inside a session folder.
pub const STATE_FILE: &str = "working_memory.json";

/// The materialized state in `session_dir`, if it is there and readable.
pub fn read(session_dir: &Path) -> Option<WorkingMemory> {
    let bytes = std::fs::read(session_dir.join(STATE_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Replaces the materialized state in `session_dir` atomically.
pub fn write(session_dir: &Path, state: &WorkingMemory) -> Result<()> {
    let json = serde_json::to_vec(state).expect("a working memory serializes");
    write_atomic(&session_dir.join(STATE_FILE), &json)
}

/// The session's state: the materialized file when it is current, else a
/// replay of the log. `active` is the active log; the snapshot, when there
/// is one, names the state as of the last compaction (see
/// [`replay_log`] for where a replay starts).
pub(crate) fn current_state(
    paths: &SessionPaths,
    snapshot: Option<&Snapshot>,
    active: &[impl Borrow<Event>],
) -> Result<Freshness> {
    let last_recorded = last_recorded(snapshot, active);
    let cached = read(&paths.dir);
    match (&cached, &last_recorded) {
        (Some(cached), Some(last)) if StateMark::of(cached) == *last => {
            return Ok(Freshness::Current(cached.clone()));
        }
        // Nothing recorded anywhere: the empty state, with nothing to write.
        (None, None) if !paths.archive().exists() => {
            return Ok(Freshness::Current(WorkingMemory::default()));
        }
        // The last state recorded is the empty one (a compaction names the
        // state even when no update made one): the archive holds no update
        // to replay, and a session that never had a state has no file.
        (None, Some(last)) if *last == StateMark::of(&WorkingMemory::default()) => {
            return Ok(Freshness::Current(WorkingMemory::default()));
        }
        _ => {}
    }
    let replayed = replay_log(paths, snapshot, active, Keep::LastOnly)?;
    Ok(match cached {
        Some(cached) if cached == replayed.state => Freshness::Current(cached),
        Some(_) | None => Freshness::Rebuilt(replayed),
    })
}

/// Whether the materialized file could be used as it was.
#[derive(Debug, Clone)]
pub(crate) enum Freshness {
    /// The file matched the log.
    Current(WorkingMemory),
    /// The file was missing, damaged or behind: the log was replayed.
    Rebuilt(Replayed),
}

/// Replays the session's whole history of updates (see [`current_state`]).
/// For the last state only, the replay starts from the materialized file
/// when it holds a state the session recorded at or after its last
/// compaction (a crash can leave it an update behind), and replays the
/// active log over it; otherwise, and for every version, it starts from the
/// archive. The snapshot names that state but does not hold it.
pub(crate) fn replay_log(
    paths: &SessionPaths,
    snapshot: Option<&Snapshot>,
    active: &[impl Borrow<Event>],
    keep: Keep,
) -> Result<Replayed> {
    let recorded = read(&paths.dir).filter(|state| {
        keep == Keep::LastOnly && is_recorded_since_compaction(state, snapshot, active)
    });
    let start = match recorded {
        Some(state) => Replayed {
            state,
            ..Replayed::default()
        },
        None => {
            let archive = jsonl::read_log(&paths.archive())?.events;
            replay(WorkingMemory::default(), &archive, keep)
        }
    };
    let rest = replay(start.state, active.iter().map(Borrow::borrow), keep);
    Ok(Replayed {
        state: rest.state,
        versions: [start.versions, rest.versions].concat(),
        skipped: [start.skipped, rest.skipped].concat(),
    })
}

/// Whether `state` is whole (its hash is its document's) and is the state
/// the snapshot names or one an update of the active log made.
fn is_recorded_since_compaction(
    state: &WorkingMemory,
    snapshot: Option<&Snapshot>,
    active: &[impl Borrow<Event>],
) -> bool {
    let mark = StateMark::of(state);
    let named = snapshot.and_then(|s| s.working_memory.as_ref()) == Some(&mark);
    let made = || {
        active
            .iter()
            .filter_map(|e| e.borrow().state_update())
            .any(|u| u.version == mark.version && u.hash == mark.hash)
    };
    (named || made()) && hash_of(&state.document) == state.hash
}

/// The version and hash of the last update the session recorded, if any.
pub(crate) fn last_recorded(
    snapshot: Option<&Snapshot>,
    active: &[impl Borrow<Event>],
) -> Option<StateMark> {
    let in_log = active
        .iter()
        .rev()
        .find_map(|e| e.borrow().state_update())
        .map(|u| StateMark {
            version: u.version,
            hash: u.hash.clone(),
        });
    let in_snapshot = snapshot.and_then(|s| s.working_memory.clone());
    in_log
        .into_iter()
        .chain(in_snapshot)
        .max_by_key(|mark| mark.version)
}
