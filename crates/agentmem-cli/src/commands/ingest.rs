//! `agentmem ingest`: events NDJSON on stdin, appended as they arrive.
//!
//! Lines already read are appended together; whenever stdin has nothing more
//! buffered, the batch is appended (and synced per the durability setting)
//! before waiting for more, so a slow producer's events are stored as they come.
//!
//! A line that is not an event (not UTF-8, not JSON, not valid) is named on
//! stderr and skipped; the others are stored, and the command ends with
//! [`super::INPUT_REJECTED_EXIT`]. An input with no event in it leaves no
//! session behind.

use std::io::{BufRead, Write};

use agentmem::{Backend, Event, Session, SessionId};

use super::{Context, InputRejected, Stored};

/// Most events appended in one call.
const MAX_BATCH_EVENTS: usize = 1024;

pub fn run(ctx: &Context, session: Option<&str>, ack: bool) -> anyhow::Result<()> {
    let mut destination = Destination::open(ctx, session)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", destination.writer.id())?;
    out.flush()?;

    let mut reader = std::io::BufReader::with_capacity(1 << 16, std::io::stdin());
    let (mut batch, mut line, mut line_no) = (Vec::new(), Vec::new(), 0usize);
    let (mut appended, mut duplicates, mut rejected) = (0usize, 0usize, 0usize);
    loop {
        line.clear();
        let eof = reader.read_until(b'\n', &mut line)? == 0;
        if !eof {
            line_no += 1;
            match parse_line(&line, line_no) {
                Ok(Some(event)) => batch.push(event),
                Ok(None) => {}
                Err(reason) => {
                    rejected += 1;
                    eprintln!("agentmem: stdin line {line_no}: {reason}; skipped");
                }
            }
        }
        let drained = reader.buffer().is_empty();
        if !batch.is_empty() && (eof || drained || batch.len() >= MAX_BATCH_EVENTS) {
            let report = flush(&mut destination.writer, &mut batch, ack, &mut out)?;
            appended += report.appended;
            duplicates += report.duplicates;
        }
        if eof {
            break;
        }
    }
    let stored = destination.close(ctx)?;
    eprintln!("agentmem: {appended} events appended, {duplicates} already present, {rejected} lines skipped");
    if rejected == 0 {
        return Ok(());
    }
    Err(InputRejected {
        lines: rejected,
        stored,
    }
    .into())
}

/// The session events go to, open for writing from the start (its lock held
/// while stdin is read). One made for this input and left without an event
/// is removed at the end: an input with no event makes no session.
struct Destination {
    writer: Writer,
    made: Made,
}

/// What appends the events: an engine session, kept in its folder (files)
/// or behind the storage seam on another backend, which refuses what is not
/// behind the seam before anything of a batch is stored.
enum Writer {
    Session(Box<Session>),
    Seam(Box<Session>),
}

impl Writer {
    fn id(&self) -> &SessionId {
        match self {
            Writer::Session(session) | Writer::Seam(session) => session.id(),
        }
    }
}

/// Whether the session existed before this command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    Before,
    Now,
}

impl Destination {
    fn open(ctx: &Context, session: Option<&str>) -> anyhow::Result<Destination> {
        let id = match session {
            Some(id) => ctx.session_id(id)?,
            None => SessionId::generate(),
        };
        if ctx.backend() != Backend::Files {
            let storage = ctx.shared_storage()?;
            let (session, made) = match ctx.write_session(&id) {
                Ok(session) => (session, Made::Before),
                Err(agentmem::Error::SessionNotFound { .. }) => (
                    ctx.store.create_session_in(storage, &ctx.agent, Some(id))?,
                    Made::Now,
                ),
                Err(other) => return Err(other.into()),
            };
            return Ok(Destination {
                writer: Writer::Seam(Box::new(session)),
                made,
            });
        }
        let (session, made) = match ctx.store.open_session(&ctx.agent, &id) {
            Ok(session) => (session, Made::Before),
            Err(agentmem::Error::SessionNotFound { .. }) => {
                (ctx.store.create_session(&ctx.agent, Some(id))?, Made::Now)
            }
            Err(other) => return Err(other.into()),
        };
        ctx.report_recoveries(&session);
        Ok(Destination {
            writer: Writer::Session(Box::new(session)),
            made,
        })
    }

    /// Closes the session (removing it if this command made it for
    /// nothing); says whether there is one the input went to.
    fn close(self, ctx: &Context) -> anyhow::Result<Stored> {
        let discarded = match (self.writer, self.made) {
            (Writer::Session(session), Made::Now) => {
                ctx.store.discard_if_empty(&ctx.agent, *session)?
            }
            (Writer::Session(session), Made::Before) => {
                session.close()?;
                false
            }
            (Writer::Seam(session), Made::Now) if session.current_meta().events == 0 => {
                let id = session.id().clone();
                drop(session);
                ctx.storage()?.delete_session(&ctx.agent, &id)?;
                true
            }
            (Writer::Seam(session), Made::Now | Made::Before) => {
                session.close()?;
                false
            }
        };
        Ok(if discarded {
            Stored::Nothing
        } else {
            Stored::TheRest
        })
    }
}

/// Line `line_no` of stdin as an event: `None` for a blank line, else why it
/// is not one.
fn parse_line(line: &[u8], line_no: usize) -> Result<Option<Event>, String> {
    let line = agentmem_import::utf8::line(line, line_no)
        .map_err(|bad| format!("not UTF-8 text ({})", bad.where_bad()))?;
    if line.trim().is_empty() {
        return Ok(None);
    }
    let event: Event = serde_json::from_str(line).map_err(|e| format!("not an event: {e}"))?;
    event.validate()?;
    Ok(Some(event))
}

fn flush(
    writer: &mut Writer,
    batch: &mut Vec<Event>,
    ack: bool,
    out: &mut impl Write,
) -> anyhow::Result<agentmem::IngestReport> {
    let (Writer::Session(session) | Writer::Seam(session)) = writer;
    let before = session.events().len();
    let report = session.ingest(std::mem::take(batch))?;
    let ids: Vec<String> = session.events()[before..]
        .iter()
        .map(|e| e.id.clone())
        .collect();
    if ack {
        for id in ids {
            writeln!(out, "{id}")?;
        }
        out.flush()?;
    }
    Ok(report)
}
