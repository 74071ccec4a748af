//! `agentmem import`: a transcript file into a session.

use std::path::Path;

use agentmem::SessionId;
use agentmem_import::{self as import, Format, Imported};
use anyhow::Context as _;

use super::{Context, InputRejected, Stored};

/// Events appended per ingest call during an import.
const IMPORT_CHUNK_EVENTS: usize = 2_000;

pub fn run(ctx: &Context, path: &Path, format: &str, session: Option<&str>) -> anyhow::Result<()> {
    let (format, mut imported) = import::read(path, format_choice(format)?)?;
    // Nothing to import makes no session.
    let stored = if imported.events.is_empty() {
        None
    } else {
        Some(store(ctx, path, format, session, &mut imported)?)
    };
    report_skipped(path, &imported.skipped);
    let (appended, duplicates) = stored
        .as_ref()
        .map_or((0, 0), |s| (s.appended, s.duplicates));
    let session_id = stored.as_ref().map(|s| s.session.as_str());
    if ctx.json {
        let report = serde_json::json!({
            "session": session_id,
            "format": format.name(),
            "records": imported.records,
            "appended": appended,
            "already_present": duplicates,
            "skipped": imported.skipped.iter().map(|s| serde_json::json!({"record": s.line, "reason": s.reason})).collect::<Vec<_>>(),
        });
        crate::output::print_json(&report)?;
    } else {
        if let Some(id) = session_id {
            println!("{id}");
        }
        eprintln!(
            "agentmem: imported {} ({}): {appended} events appended, {duplicates} already present, {} records skipped",
            path.display(),
            format.name(),
            imported.skipped.len()
        );
    }
    let damaged = imported
        .skipped
        .iter()
        .filter(|s| s.kind.is_damage())
        .count();
    if damaged == 0 {
        return Ok(());
    }
    Err(InputRejected {
        lines: damaged,
        stored: match stored {
            Some(_) => Stored::TheRest,
            None => Stored::Nothing,
        },
    }
    .into())
}

/// The format `--format` names: `None` for `auto` (detected from the file).
pub fn format_choice(name: &str) -> anyhow::Result<Option<Format>> {
    match name {
        "auto" => Ok(None),
        name => Format::from_name(name).map(Some).with_context(|| {
            format!(
                "unknown format {name:?}; use auto or one of: {}",
                Format::names()
            )
        }),
    }
}

/// What an import stored, and where.
struct StoredImport {
    session: SessionId,
    appended: usize,
    duplicates: usize,
}

/// Appends the events of `imported` (taking them) to the session they go to.
fn store(
    ctx: &Context,
    path: &Path,
    format: Format,
    session: Option<&str>,
    imported: &mut Imported,
) -> anyhow::Result<StoredImport> {
    let session_id = match session {
        Some(id) => ctx.session_id(id)?,
        None => import::session_id_for(ctx.storage()?, &ctx.agent, format, imported)?,
    };
    let mut events = std::mem::take(&mut imported.events);
    let mut session =
        ctx.store
            .open_or_create_in(ctx.shared_storage()?, &ctx.agent, &session_id)?;
    ctx.report_recoveries(&session);
    // A re-import must not bring back what a compaction archived.
    session.learn_archived_ids()?;

    let bar = crate::progress::bar(events.len() as u64, "importing events");
    let (mut appended, mut duplicates) = (0, 0);
    while !events.is_empty() {
        let rest = events.split_off(events.len().min(IMPORT_CHUNK_EVENTS));
        let chunk = std::mem::replace(&mut events, rest);
        bar.inc(chunk.len() as u64);
        let report = session.ingest(chunk)?;
        appended += report.appended;
        duplicates += report.duplicates;
    }
    bar.finish_and_clear();
    session.record_import(&path.display().to_string(), format.name(), appended)?;
    session.close()?;
    Ok(StoredImport {
        session: session_id,
        appended,
        duplicates,
    })
}

/// Skipped records, grouped by reason, with the records they were.
fn report_skipped(path: &Path, skipped: &[import::Skipped]) {
    let mut by_reason: Vec<(&str, Vec<usize>)> = Vec::new();
    for s in skipped {
        match by_reason.iter_mut().find(|(reason, _)| *reason == s.reason) {
            Some((_, records)) => records.push(s.line),
            None => by_reason.push((&s.reason, vec![s.line])),
        }
    }
    for (reason, records) in by_reason {
        let shown: Vec<String> = records.iter().take(10).map(usize::to_string).collect();
        let more = if records.len() > 10 { ", …" } else { "" };
        eprintln!(
            "agentmem: {}: skipped {} record(s), {reason} (records {}{more})",
            path.display(),
            records.len(),
            shown.join(", ")
        );
    }
}
