//! The append-only JSONL event log: one event a line, appended whole.
//!
//! Whole lines are written with a single `write_all` (an ingest call's lines
//! together, or one line at a time when each is synced), so a crash can only
//! leave a *torn last line*: bytes after the final newline.
//! Opening the log for writing sets such a tail aside in `<log>.corrupt` and
//! cuts the log back to its last complete line; complete lines are never lost.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::base::error::{IoContext, Result};
use crate::base::event::Event;
use crate::base::json;
use crate::files::lock::PendingBatch;

/// When appended events reach stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// fsync each ingest call, and the record of a batch of several events
    /// before it: a returned ingest survives a crash or a power loss, and a
    /// batch cut short by either leaves none of its events.
    Always,
    /// fsync each ingest call: a returned ingest survives a crash or a power
    /// loss; a batch cut short by a process crash leaves none of its events.
    #[default]
    Batch,
    /// Leave flushing to the operating system: survives a process crash, not
    /// a power loss; a batch cut short by a process crash leaves none of its events.
    Os,
}

impl Durability {
    /// How a whole-file rewrite made for a session kept this way reaches the disk.
    pub(crate) fn flush(self) -> crate::base::fs::Flush {
        match self {
            Durability::Always | Durability::Batch => crate::base::fs::Flush::ToDisk,
            Durability::Os => crate::base::fs::Flush::ByOs,
        }
    }
}

impl FromStr for Durability {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" => Ok(Durability::Always),
            "batch" => Ok(Durability::Batch),
            "os" => Ok(Durability::Os),
            other => Err(format!(
                "unknown durability {other:?}; use always, batch or os"
            )),
        }
    }
}

impl std::fmt::Display for Durability {
    /// The name [`FromStr`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Durability::Always => "always",
            Durability::Batch => "batch",
            Durability::Os => "os",
        })
    }
}

/// Something that was wrong with a log when it was opened, and what was done.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    /// The last line was incomplete (a crash mid-append); its bytes were moved aside.
    TornTail {
        /// The log file.
        log: PathBuf,
        /// Bytes moved aside.
        bytes: usize,
        /// Where they were moved (none for a reader, which moves nothing).
        moved_to: Option<PathBuf>,
    },
    /// A complete line did not parse as an event; it was moved aside (writers)
    /// or skipped (readers).
    BadLine {
        /// The log file.
        log: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// Why it could not be used.
        error: String,
        /// Where it was moved (none for a reader, which moves nothing).
        moved_to: Option<PathBuf>,
    },
    /// An append of several events was cut short by a crash: its lines
    /// were moved aside, so none of the batch is in the log.
    UnfinishedBatch {
        /// The log file.
        log: PathBuf,
        /// Bytes moved aside.
        bytes: usize,
        /// Where they were moved.
        moved_to: PathBuf,
    },
    /// A working-memory update in the log no longer applies on replay; the
    /// state was rebuilt without it (the event stays in the log).
    WorkingMemoryUpdate {
        /// The update event's id.
        event_id: String,
        /// Why it could not be used.
        error: String,
    },
    /// A compaction was cut short while archiving: the lines it had
    /// appended (events the active log still holds) were cut from the archive.
    UnfinishedArchiveAppend {
        /// The archive file.
        archive: PathBuf,
        /// Lines cut from the archive.
        lines: usize,
    },
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let aside = |moved: &Option<PathBuf>| match moved {
            Some(p) => format!("moved to {}", p.display()),
            None => "skipped (read-only)".to_owned(),
        };
        match self {
            Recovery::TornTail { log, bytes, moved_to } => write!(
                f,
                "{}: incomplete last line ({bytes} bytes, from an interrupted write) {}; every complete line was kept",
                log.display(),
                aside(moved_to)
            ),
            Recovery::BadLine { log, line, error, moved_to } => write!(
                f,
                "{}, line {line}: not a valid event ({error}), {}",
                log.display(),
                aside(moved_to)
            ),
            Recovery::UnfinishedBatch { log, bytes, moved_to } => write!(
                f,
                "{}: an append of several events was cut short ({bytes} bytes); none of them was kept in the log, and the bytes were moved to {}",
                log.display(),
                moved_to.display()
            ),
            Recovery::UnfinishedArchiveAppend { archive, lines } => write!(
                f,
                "{}: {lines} lines of a compaction that was cut short were cut (their events are still in the active log)",
                archive.display()
            ),
            Recovery::WorkingMemoryUpdate { event_id, error } => write!(
                f,
                "working-memory update {event_id} could not be replayed ({error}); the state was rebuilt without it, and the working memory's history shows the versions that remain"
            ),
        }
    }
}

/// The parsed contents of a log file.
#[derive(Debug, Default)]
pub struct LogContents {
    /// The events of the valid lines, in order.
    pub events: Vec<Event>,
    /// Length in bytes of the complete, valid prefix.
    pub valid_len: u64,
    /// Bytes after the last newline, if any.
    pub torn_tail: Vec<u8>,
    /// Complete lines that did not parse: (1-based line number, error, raw bytes).
    pub bad_lines: Vec<(usize, String, Vec<u8>)>,
}

/// Reads every complete line of `path`; a missing file reads as empty.
pub fn read_log(path: &Path) -> Result<LogContents> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LogContents::default()),
        Err(e) => return Err(e).io("read", path),
    };
    Ok(parse_log(&bytes))
}

/// Parses log bytes: complete lines into events, the rest set apart.
pub fn parse_log(bytes: &[u8]) -> LogContents {
    let complete = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
    let mut contents = LogContents {
        valid_len: complete as u64,
        torn_tail: bytes[complete..].to_vec(),
        ..LogContents::default()
    };
    for (index, line) in lines(&bytes[..complete]).enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => contents.events.push(event),
            Err(e) => contents
                .bad_lines
                .push((index + 1, e.to_string(), line.to_vec())),
        }
    }
    contents
}

/// The lines of `bytes`, which end with a newline, without it; found with
/// `memchr`: a log's lines are kilobytes of tool output.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes).map(move |end| {
        let line = &bytes[start..end];
        start = end + 1;
        line
    })
}

/// Reads `path` for writing: repairs a torn tail or bad lines first (see the
/// module docs) and reports what it repaired.
pub(crate) fn read_and_repair(path: &Path) -> Result<(Vec<Event>, Vec<Recovery>)> {
    let contents = read_log(path)?;
    let mut recoveries = Vec::new();
    if contents.torn_tail.is_empty() && contents.bad_lines.is_empty() {
        return Ok((contents.events, recoveries));
    }
    let aside = corrupt_path(path);
    let mut moved = Vec::new();
    for (line, error, raw) in &contents.bad_lines {
        moved.extend_from_slice(raw);
        moved.push(b'\n');
        recoveries.push(Recovery::BadLine {
            log: path.to_path_buf(),
            line: *line,
            error: error.clone(),
            moved_to: Some(aside.clone()),
        });
    }
    if !contents.torn_tail.is_empty() {
        moved.extend_from_slice(&contents.torn_tail);
        moved.push(b'\n');
        recoveries.push(Recovery::TornTail {
            log: path.to_path_buf(),
            bytes: contents.torn_tail.len(),
            moved_to: Some(aside.clone()),
        });
    }
    append_durably(&aside, &moved)?;
    if contents.bad_lines.is_empty() {
        let file = OpenOptions::new().write(true).open(path).io("open", path)?;
        file.set_len(contents.valid_len).io("truncate", path)?;
        file.sync_all().io("fsync", path)?;
    } else {
        crate::base::fs::write_atomic(path, &encode_lines(&contents.events))?;
    }
    Ok((contents.events, recoveries))
}

/// The file a log's unreadable bytes are moved to.
pub(crate) fn corrupt_path(log: &Path) -> PathBuf {
    let mut name = log.file_name().unwrap_or_default().to_os_string();
    name.push(".corrupt");
    log.with_file_name(name)
}

/// The lines of `log` (each with its newline), when it holds exactly
/// `events`, one a line and in order; `None` when it does not.
///
/// A compaction moves the lines it archives as the log holds them: they were
/// encoded once when appended, and encoding megabytes of events again cost
/// more than all of its writes.
///
/// ```
/// use agentmem::{Event, files::jsonl};
/// let mut events = vec![Event::user("hello"), Event::assistant("hi")];
/// events[0].id = "ev-1".into();
/// events[1].id = "ev-2".into();
/// let log = jsonl::encode_lines(&events);
/// let lines = jsonl::lines_for(&log, &events).unwrap();
/// assert_eq!(lines.concat(), log);
/// assert!(jsonl::lines_for(&log, &events[..1]).is_none());
/// ```
pub fn lines_for<'log>(
    log: &'log [u8],
    events: &[impl std::borrow::Borrow<Event>],
) -> Option<Vec<&'log [u8]>> {
    let lines: Vec<&[u8]> = log
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    let holds_them = lines.len() == events.len()
        && lines
            .iter()
            .zip(events)
            .all(|(line, event)| line.ends_with(b"\n") && starts_with_id(line, &event.borrow().id));
    holds_them.then_some(lines)
}

/// Whether `line` is the encoding of the event with `id` (the id is its first field).
fn starts_with_id(line: &[u8], id: &str) -> bool {
    let Ok(quoted) = serde_json::to_string(id) else {
        return false;
    };
    line.strip_prefix(b"{\"id\":")
        .is_some_and(|rest| rest.starts_with(quoted.as_bytes()))
}

/// Serializes events as JSONL.
pub fn encode_lines<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<u8> {
    let mut out = Vec::new();
    for event in events {
        encode_line(event, &mut out);
    }
    out
}

fn encode_line(event: &Event, out: &mut Vec<u8>) {
    write_event(out, event);
    out.push(b'\n');
}

/// Appends `event` as `serde_json` would serialize it, field by field in the
/// order it declares them, with its texts escaped on the fast path.
///
/// Every field is named, so a field added to [`Event`] does not compile
/// here until it is written too.
fn write_event(out: &mut Vec<u8>, event: &Event) {
    let Event {
        id,
        ts,
        turn_id,
        seq,
        trace_type,
        content,
        source_event,
        media,
        tool_name,
        tool_call_id,
        tool_args,
        tool_result,
        tool_error,
        correlation_id,
        tags,
        tool_result_ref,
        usage,
        opaque,
        working_memory,
        extra,
    } = event;
    let mut fields = Fields::open(out);
    fields.text("id", id);
    fields.small("ts", ts);
    fields.text("turn_id", turn_id);
    fields.small("seq", seq);
    fields.small("trace_type", trace_type);
    fields.text("content", content);
    fields.text("source_event", source_event);
    fields.optional_small("media", media);
    fields.optional_text("tool_name", tool_name);
    fields.optional_text("tool_call_id", tool_call_id);
    fields.optional_value("tool_args", tool_args);
    fields.optional_value("tool_result", tool_result);
    fields.optional_text("tool_error", tool_error);
    fields.optional_text("correlation_id", correlation_id);
    if !tags.is_empty() {
        fields.texts("tags", tags);
    }
    fields.optional_text("tool_result_ref", tool_result_ref);
    fields.optional_small("usage", usage);
    fields.optional_value("opaque", opaque);
    fields.optional_small("working_memory", working_memory);
    for (key, raw) in extra.iter() {
        fields.raw(key, raw);
    }
    fields.close();
}

/// The fields of one JSON object being written, with the commas between them.
struct Fields<'out> {
    out: &'out mut Vec<u8>,
    first: bool,
}

impl<'out> Fields<'out> {
    fn open(out: &'out mut Vec<u8>) -> Self {
        out.push(b'{');
        Fields { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        json::write_str(self.out, key);
        self.out.push(b':');
    }

    fn text(&mut self, key: &str, text: &str) {
        self.key(key);
        json::write_str(self.out, text);
    }

    fn texts(&mut self, key: &str, texts: &[String]) {
        self.key(key);
        self.out.push(b'[');
        for (index, text) in texts.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            json::write_str(self.out, text);
        }
        self.out.push(b']');
    }

    fn value(&mut self, key: &str, value: &serde_json::Value) {
        self.key(key);
        json::write_value(self.out, value);
    }

    /// A value kept as JSON text: written as it is.
    fn raw(&mut self, key: &str, raw: &serde_json::value::RawValue) {
        self.key(key);
        self.out.extend_from_slice(raw.get().as_bytes());
    }

    fn small<T: serde::Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        json::write_small(self.out, value);
    }

    fn optional_text(&mut self, key: &str, text: &Option<String>) {
        if let Some(text) = text {
            self.text(key, text);
        }
    }

    fn optional_value(&mut self, key: &str, value: &Option<serde_json::Value>) {
        if let Some(value) = value {
            self.value(key, value);
        }
    }

    fn optional_small<T: serde::Serialize>(&mut self, key: &str, value: &Option<T>) {
        if let Some(value) = value {
            self.small(key, value);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

/// The inode of a file, which an atomic replacement changes (0 off Unix).
pub(crate) fn inode(meta: &fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::ino(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// Takes a batch a crash cut short out of the log at `path`: when the log
/// `batch` names (the same file) ends inside it, the batch's bytes go to
/// `<log>.corrupt` and the log is cut back to where the batch began.
/// Returns what was done, if anything.
pub(crate) fn cut_unfinished_batch(path: &Path, batch: PendingBatch) -> Result<Option<Recovery>> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).io("open", path),
    };
    let meta = file.metadata().io("stat", path)?;
    let len = meta.len();
    let same_log = inode(&meta) == batch.log_inode;
    if !same_log || len <= batch.start || len >= batch.end {
        return Ok(None);
    }
    let mut partial = vec![0; (len - batch.start) as usize];
    file.seek(SeekFrom::Start(batch.start)).io("read", path)?;
    file.read_exact(&mut partial).io("read", path)?;
    if !partial.ends_with(b"\n") {
        partial.push(b'\n');
    }
    append_durably(&corrupt_path(path), &partial)?;
    file.set_len(batch.start).io("truncate", path)?;
    file.sync_all().io("fsync", path)?;
    Ok(Some(Recovery::UnfinishedBatch {
        log: path.to_path_buf(),
        bytes: (len - batch.start) as usize,
        moved_to: corrupt_path(path),
    }))
}

/// `bytes`, read from a log whose inode is `log_inode`, without the lines
/// of a batch its writer has under way (`batch`): what a reader sees of a
/// batch is all of it or none.
pub(crate) fn without_unfinished_batch(
    mut bytes: Vec<u8>,
    log_inode: u64,
    batch: Option<PendingBatch>,
) -> Vec<u8> {
    if let Some(batch) = batch {
        let len = bytes.len() as u64;
        if batch.log_inode == log_inode && len > batch.start && len < batch.end {
            bytes.truncate(batch.start as usize);
        }
    }
    bytes
}

/// Reads `path` as [`read_log`] does, leaving out the lines of a batch its
/// writer (whose record is in `session_dir`) has under way.
pub(crate) fn read_log_as_reader(path: &Path, session_dir: &Path) -> Result<LogContents> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LogContents::default()),
        Err(e) => return Err(e).io("open", path),
    };
    let log_inode = inode(&file.metadata().io("stat", path)?);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).io("read", path)?;
    // Read after the log: a batch recorded since is not in the bytes read.
    let batch = super::lock::pending_batch(session_dir);
    Ok(parse_log(&without_unfinished_batch(
        bytes, log_inode, batch,
    )))
}

/// Bytes read at a time when looking for the start of a file's last line.
const BACKWARD_READ_BYTES: u64 = 64 * 1024;

/// Where the last line of the file's first `len` bytes starts (a last
/// line may lack its newline).
pub(crate) fn last_line_start(file: &mut File, len: u64) -> std::io::Result<u64> {
    // The line's own newline, when it has one, is not its start.
    let mut end = len.saturating_sub(1);
    let mut chunk = Vec::new();
    while end > 0 {
        let from = end.saturating_sub(BACKWARD_READ_BYTES);
        chunk.resize((end - from) as usize, 0);
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut chunk)?;
        if let Some(newline) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + newline as u64 + 1);
        }
        end = from;
    }
    Ok(0)
}

/// Sets aside a torn last line of the JSONL file at `path`, open (for
/// reading and appending) as `file`: its bytes go to `<path>.corrupt` and
/// the file is cut back to its last whole line, so the next append starts
/// a line of its own instead of joining the torn one.
pub(crate) fn set_aside_torn_tail(path: &Path, file: &mut File) -> Result<()> {
    let len = file.metadata().io("stat", path)?.len();
    let mut last = [0u8];
    if len == 0 {
        return Ok(());
    }
    file.seek(SeekFrom::Start(len - 1)).io("read", path)?;
    file.read_exact(&mut last).io("read", path)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let start = last_line_start(file, len).io("read", path)?;
    let mut torn = vec![0; (len - start) as usize];
    file.seek(SeekFrom::Start(start)).io("read", path)?;
    file.read_exact(&mut torn).io("read", path)?;
    torn.push(b'\n');
    append_durably(&corrupt_path(path), &torn)?;
    file.set_len(start).io("truncate", path)?;
    file.sync_all().io("fsync", path)
}

fn append_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = crate::base::fs::open_append(path).io("open", path)?;
    file.write_all(bytes).io("append to", path)?;
    file.sync_all().io("fsync", path)
}

/// An open log that events are appended to.
#[derive(Debug)]
pub struct AppendLog {
    path: PathBuf,
    file: File,
    durability: Durability,
    len: u64,
    inode: u64,
    buffer: Vec<u8>,
}

impl AppendLog {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path, durability: Durability) -> Result<Self> {
        let file = crate::base::fs::open_append(path).io("open", path)?;
        let meta = file.metadata().io("stat", path)?;
        Ok(AppendLog {
            path: path.to_path_buf(),
            file,
            durability,
            len: meta.len(),
            inode: inode(&meta),
            buffer: Vec::new(),
        })
    }

    /// Appends `events`, one line each, all or nothing: the lines go out in
    /// one write, synced unless the durability is `os`. On failure the log
    /// is cut back to where it ended, and none of them is in it.
    pub fn append(&mut self, events: &[Event]) -> Result<()> {
        self.encode(events);
        self.write_encoded()
    }

    /// Encodes `events` as the lines the next `AppendLog::write_encoded`
    /// writes; [`AppendLog::pending`] says where they will go.
    pub fn encode(&mut self, events: &[Event]) {
        self.buffer.clear();
        for event in events {
            encode_line(event, &mut self.buffer);
        }
    }

    /// Where the encoded lines will go: this log, from its end on.
    pub fn pending(&self) -> PendingBatch {
        PendingBatch {
            log_inode: self.inode,
            start: self.len,
            end: self.len + self.buffer.len() as u64,
        }
    }

    /// Writes the encoded lines (see [`AppendLog::append`]).
    pub(crate) fn write_encoded(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let before = self.len;
        let written = self
            .file
            .write_all(&self.buffer)
            .io("append to", &self.path)
            .and_then(|()| match self.durability {
                Durability::Always | Durability::Batch => {
                    self.file.sync_data().io("fsync", &self.path)
                }
                Durability::Os => Ok(()),
            });
        if written.is_err() {
            // Lines whose sync failed are not kept: the caller is told none were written.
            let _ = self.file.set_len(before);
            return written;
        }
        self.len += self.buffer.len() as u64;
        Ok(())
    }

    /// The lines the latest [`AppendLog::append`] (or
    /// [`AppendLog::encode`]) encoded: after one that succeeded, exactly the
    /// bytes it added to the log.
    pub fn appended(&self) -> &[u8] {
        &self.buffer
    }

    /// Appends lines already encoded (by [`encode_lines`], or read from a log
    /// with [`lines_for`]) in one write, synced unless the durability is `os`.
    pub(crate) fn append_encoded(&mut self, lines: &[u8]) -> Result<()> {
        debug_assert!(lines.is_empty() || lines.ends_with(b"\n"));
        self.buffer.clear();
        self.buffer.extend_from_slice(lines);
        self.write_encoded()
    }

    /// When appends are synced.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The size of the log in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
