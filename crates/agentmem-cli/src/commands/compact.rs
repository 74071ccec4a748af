//! `agentmem compact`: compaction on demand, with its report.

use agentmem::pipeline::compact::CompactReport;
use agentmem::CompactOptions;

use super::Context;

pub fn run(
    ctx: &Context,
    id: &str,
    focus: Option<String>,
    from_raw: bool,
    keep_turns: Option<usize>,
) -> anyhow::Result<()> {
    let mut session = ctx.write_session(&ctx.session_id(id)?)?;
    ctx.report_recoveries(&session);
    let mut options = CompactOptions {
        focus,
        ..CompactOptions::default()
    };
    options.context.raw_tail_turns = keep_turns;
    let report = if from_raw {
        session.compact_from_raw(&options)?
    } else {
        session.compact(&options)?
    };
    session.close()?;
    if ctx.json {
        return crate::output::print_json(&report);
    }
    print!("{}", describe(&report));
    Ok(())
}

/// The report as people read it, a line per fact (`compact` and chat's `/compact`).
pub fn describe(report: &CompactReport) -> String {
    if !report.applied {
        let why = report
            .note
            .as_deref()
            .unwrap_or("it would not have freed space");
        return format!("nothing compacted: {why}\n");
    }
    let mut text = format!(
        "compacted {} events: {} → {} tokens ({} saved) in {:.0} ms\n",
        report.events_compacted,
        report.tokens_before,
        report.tokens_after,
        report.tokens_saved,
        report.duration_ms
    );
    text.push_str(&format!(
        "identifiers: {} in the compacted span, {:.0}% still in the context (the rest are listed as lookup hints)\n",
        report.identifiers,
        report.identifier_survival * 100.0
    ));
    text.push_str(&format!("summarizer: {}\n", report.summarizer));
    for (label, line) in [("fallback", &report.fallback), ("note", &report.note)] {
        if let Some(line) = line {
            text.push_str(&format!("{label}: {line}\n"));
        }
    }
    text
}
