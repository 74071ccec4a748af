//! `agentmem ingest`: events NDJSON on stdin, appended as they arrive.
//!
//! Lines already read are appended together; whenever stdin has nothing more
//! buffered, the batch is appended (and synced per the durability setting)
//! before waiting for more, so a slow producer's events are stored as they come.

use std::io::{BufRead, Write};

use agentmem::event::Event;
use agentmem::session::Session;

use super::Context;

/// Most events appended in one call.
const MAX_BATCH_EVENTS: usize = 1024;

pub fn run(ctx: &Context, session: Option<&str>, ack: bool) -> anyhow::Result<()> {
    let mut session = match session {
        Some(id) => ctx.store.open_or_create(&ctx.agent, &ctx.session_id(id)?)?,
        None => ctx.store.create_session(&ctx.agent, None)?,
    };
    ctx.report_recoveries(&session);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", session.id())?;
    out.flush()?;

    let mut reader = std::io::BufReader::with_capacity(1 << 16, std::io::stdin());
    let (mut batch, mut line, mut line_no) = (Vec::new(), String::new(), 0usize);
    let (mut appended, mut duplicates, mut rejected) = (0usize, 0usize, 0usize);
    loop {
        line.clear();
        let eof = reader.read_line(&mut line)? == 0;
        if !eof {
            line_no += 1;
            match parse_line(&line) {
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
            let report = flush(&mut session, &mut batch, ack, &mut out)?;
            appended += report.appended;
            duplicates += report.duplicates;
        }
        if eof {
            break;
        }
    }
    session.close()?;
    eprintln!("agentmem: {appended} events appended, {duplicates} already present, {rejected} lines skipped");
    Ok(())
}

fn parse_line(line: &str) -> Result<Option<Event>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let event: Event = serde_json::from_str(line).map_err(|e| format!("not an event: {e}"))?;
    event.validate()?;
    Ok(Some(event))
}

fn flush(
    session: &mut Session,
    batch: &mut Vec<Event>,
    ack: bool,
    out: &mut impl Write,
) -> anyhow::Result<agentmem::session::IngestReport> {
    let before = session.events().len();
    let report = session.ingest(std::mem::take(batch))?;
    if ack {
        for event in &session.events()[before..] {
            writeln!(out, "{}", event.id)?;
        }
        out.flush()?;
    }
    Ok(report)
}
