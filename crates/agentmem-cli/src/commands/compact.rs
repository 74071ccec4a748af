//! `agentmem compact`: compaction on demand, with its report.

use agentmem::session::CompactOptions;

use super::Context;

pub fn run(
    ctx: &Context,
    id: &str,
    focus: Option<String>,
    from_raw: bool,
    keep_turns: Option<usize>,
) -> anyhow::Result<()> {
    let mut session = ctx.store.open_session(&ctx.agent, &ctx.session_id(id)?)?;
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
    if !report.applied {
        println!(
            "nothing compacted: {}",
            if report.events_compacted == 0 {
                "no turns older than the raw tail"
            } else {
                "it would not have freed space"
            }
        );
        return Ok(());
    }
    println!(
        "compacted {} events: {} → {} tokens ({} saved) in {:.0} ms",
        report.events_compacted,
        report.tokens_before,
        report.tokens_after,
        report.tokens_saved,
        report.duration_ms
    );
    println!(
        "identifiers: {} in the compacted span, {:.0}% still in the context (the rest are listed as lookup hints)",
        report.identifiers,
        report.identifier_survival * 100.0
    );
    println!("summarizer: {}", report.summarizer);
    if let Some(fallback) = &report.fallback {
        println!("fallback: {fallback}");
    }
    Ok(())
}
