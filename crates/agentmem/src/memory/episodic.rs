//! Episodic memory: one item per compaction, kept per agent in
//! `agents/<agent>/episodic.jsonl` — what happened in a session, in which
//! turns, summarized — so later sessions can recall it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

use crate::base::error::{IoContext, Result};
use crate::files::lock::MemoryLock;
use crate::files::paths::EPISODIC_FILE;
use crate::files::records::EpisodicItem;

/// Appends `item` to the agent's episodic store (one line, synced).
pub(crate) fn append_episode(agent_dir: &Path, item: &EpisodicItem) -> Result<()> {
    let _lock = MemoryLock::acquire(agent_dir)?;
    append_locked(agent_dir, item)
}

/// Appends `item` unless the store already holds an item with its id: a
/// step that may run again after a crash runs once. Says whether it appended.
pub(crate) fn append_episode_once(agent_dir: &Path, item: &EpisodicItem) -> Result<bool> {
    let _lock = MemoryLock::acquire(agent_dir)?;
    if read_episodes(agent_dir)?.iter().any(|e| e.id == item.id) {
        return Ok(false);
    }
    append_locked(agent_dir, item).map(|()| true)
}

/// Appends `item` on a line of its own: a torn last line a killed writer
/// left is set aside first, so the new line is not joined to it.
fn append_locked(agent_dir: &Path, item: &EpisodicItem) -> Result<()> {
    let path = agent_dir.join(EPISODIC_FILE);
    let mut line = serde_json::to_vec(item).expect("an episodic item serializes");
    line.push(b'\n');
    let mut file = crate::base::fs::private_options()
        .create(true)
        .read(true)
        .append(true)
        .open(&path)
        .io("open", &path)?;
    crate::files::jsonl::set_aside_torn_tail(&path, &mut file)?;
    let written = file
        .write_all(&line)
        .io("append to", &path)
        .and_then(|()| file.sync_data().io("fsync", &path));
    super::count_write();
    written
}

/// Every episodic item of the agent, oldest first; a torn or foreign line is skipped.
///
/// The store only grows, and every session of the agent reads it when it
/// builds its memory block: the items parsed are kept in memory, and a read
/// parses only the lines appended since (the whole file again when it
/// changed otherwise).
pub fn read_episodes(agent_dir: &Path) -> Result<Vec<EpisodicItem>> {
    let path = agent_dir.join(EPISODIC_FILE);
    let mut cache = PARSED.lock().unwrap_or_else(PoisonError::into_inner);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            cache.remove(&path);
            return Ok(Vec::new());
        }
        Err(e) => return Err(e).io("read", &path),
    };
    if cache.len() >= PARSED_MAX_STORES && !cache.contains_key(&path) {
        cache.clear();
    }
    let parsed = cache.entry(path).or_default();
    parsed.catch_up(&bytes);
    let mut items = parsed.items.clone();
    // A last line without its newline is read, not kept: it may be torn.
    items.extend(parse_lines(&bytes[parsed.len..]));
    Ok(items)
}

/// Stores kept parsed at most; the cache starts over when full.
const PARSED_MAX_STORES: usize = 16;

/// The parsed stores of this process, by file.
static PARSED: LazyLock<Mutex<HashMap<PathBuf, Parsed>>> = LazyLock::new(Mutex::default);

/// The items of a store's first `len` bytes (whole lines).
#[derive(Default)]
struct Parsed {
    len: usize,
    /// A hash of those bytes, to tell an append from a rewrite.
    hash: u64,
    items: Vec<EpisodicItem>,
}

impl Parsed {
    /// Brings the items up to the last whole line of `bytes`, the file's
    /// contents: parsing only what follows the kept bytes when the file
    /// still starts with them, else everything.
    fn catch_up(&mut self, bytes: &[u8]) {
        let kept = bytes
            .get(..self.len)
            .filter(|prefix| hash(prefix) == self.hash);
        if kept.is_none() {
            *self = Parsed::default();
        }
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole <= self.len {
            return;
        }
        self.items.extend(parse_lines(&bytes[self.len..whole]));
        self.len = whole;
        self.hash = hash(&bytes[..whole]);
    }
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = crate::base::hash::fingerprint_hasher();
    hasher.write(bytes);
    hasher.finish()
}

fn parse_lines(bytes: &[u8]) -> impl Iterator<Item = EpisodicItem> + '_ {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: usize) -> EpisodicItem {
        EpisodicItem {
            id: format!("ep-{n}"),
            ts: n as f64,
            session_id: "s1".into(),
            turn_ids: vec![format!("turn_{n}")],
            summary: format!("## Goal\n- step {n}"),
            tags: vec![],
            salience: 0.5,
        }
    }

    fn ids(dir: &Path) -> Vec<String> {
        read_episodes(dir)
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect()
    }

    #[test]
    fn an_append_after_a_torn_line_starts_a_line_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        append_episode(dir.path(), &item(1)).unwrap();
        let path = dir.path().join(EPISODIC_FILE);
        let torn = &serde_json::to_string(&item(2)).unwrap()[..15];
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(torn.as_bytes()).unwrap();
        append_episode(dir.path(), &item(3)).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-3"]);
        let aside = std::fs::read_to_string(dir.path().join("episodic.jsonl.corrupt")).unwrap();
        assert_eq!(aside, format!("{torn}\n"));
        append_episode_once(dir.path(), &item(3)).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-3"], "once");
    }

    #[test]
    fn reads_follow_appends_rewrites_and_torn_lines() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ids(dir.path()).is_empty());
        append_episode(dir.path(), &item(1)).unwrap();
        append_episode(dir.path(), &item(2)).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-2"]);
        append_episode(dir.path(), &item(3)).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-2", "ep-3"]);
        // A torn last line is skipped until it is whole.
        let path = dir.path().join(EPISODIC_FILE);
        let whole = std::fs::read_to_string(&path).unwrap();
        let line = serde_json::to_string(&item(4)).unwrap();
        std::fs::write(&path, format!("{whole}{}", &line[..10])).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-2", "ep-3"]);
        std::fs::write(&path, format!("{whole}{line}\n")).unwrap();
        assert_eq!(ids(dir.path()), ["ep-1", "ep-2", "ep-3", "ep-4"]);
        // Rewritten, even to a longer file: read anew, not appended to.
        let other: String = [5, 6, 7, 8, 9]
            .map(|n| serde_json::to_string(&item(n)).unwrap() + "\n")
            .concat();
        std::fs::write(&path, other).unwrap();
        assert_eq!(ids(dir.path()), ["ep-5", "ep-6", "ep-7", "ep-8", "ep-9"]);
        std::fs::remove_file(&path).unwrap();
        assert!(ids(dir.path()).is_empty());
    }
}
