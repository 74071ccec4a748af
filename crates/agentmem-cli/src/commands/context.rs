//! `agentmem context`: where a session stands against a model's budget.

use std::fmt::Write as _;

use agentmem::pipeline::measure::Sections;
use agentmem::tokens::registry::{ModelRegistry, ModelSource};
use agentmem::{ContextStats, Session, TraceType, Usage};

use super::Context;
use crate::cli::ModelArgs;
use crate::output::thousands;

/// Width of the usage bar, in characters.
const BAR_WIDTH: usize = 40;

pub fn run(ctx: &Context, id: &str, args: &ModelArgs) -> anyhow::Result<()> {
    let mut session = ctx.read_session(&ctx.session_id(id)?)?;
    ctx.report_recoveries(&session);
    let request = super::prepare::request_for(&session, args)?;
    ctx.warn_if_unknown_model(&request.model);
    let stats = session.prepare(&request)?.stats;
    if !ctx.json {
        print!("{}", report(&session, ctx.store.registry(), &stats));
        return Ok(());
    }
    let extra = Extra::of(&session, ctx.store.registry(), &stats.model);
    let mut value = serde_json::to_value(&stats)?;
    value["compactions"] = extra.compactions.into();
    value["history_bytes"] = extra.history_bytes.into();
    if let Some(last) = &extra.last_call {
        value["last_call"] = serde_json::json!({
            "model": last.model,
            "prompt_tokens": last.usage.prompt_tokens,
            "cached_tokens": last.usage.cached_tokens,
            "completion_tokens": last.usage.completion_tokens,
            "cost_usd": last.cost_usd,
        });
    }
    value["calibration_by_model"] = session
        .calibration()
        .all()
        .map(|(model, c)| {
            (
                model.to_owned(),
                serde_json::to_value(c).unwrap_or_default(),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    crate::output::print_json(&value)
}

/// Where `session` stands by `stats`, as `agentmem context` and chat's
/// `/context` show it: the model and its reserves, the usage bar against
/// the budget and the trigger, the sections, the session's size, what was
/// measured, the last call and the calibration.
pub fn report(session: &Session, registry: &ModelRegistry, stats: &ContextStats) -> String {
    let extra = Extra::of(session, registry, &stats.model);
    let mut text = String::new();
    write_report(&mut text, stats, &extra, session).expect("writing to a String");
    text
}

/// Facts about the session beyond the context itself.
struct Extra {
    compactions: usize,
    history_bytes: u64,
    last_call: Option<LastCall>,
}

/// The latest model call the log holds usage of: how much of its prompt the
/// provider read from its cache, and what it cost where prices are known.
struct LastCall {
    model: String,
    usage: Usage,
    cost_usd: Option<f64>,
}

impl LastCall {
    fn of(session: &Session, registry: &ModelRegistry, model: &str) -> Option<LastCall> {
        let usage = session
            .events()
            .iter()
            .rev()
            .find_map(|e| e.usage.clone())?;
        let model = usage.model.clone().unwrap_or_else(|| model.to_owned());
        let cost_usd = registry.lookup(&model).cost_usd(
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.completion_tokens,
        );
        Some(LastCall {
            model,
            usage,
            cost_usd,
        })
    }
}

impl Extra {
    fn of(session: &Session, registry: &ModelRegistry, model: &str) -> Extra {
        let size = |path: std::path::PathBuf| std::fs::metadata(path).map_or(0, |m| m.len());
        Extra {
            compactions: session.snapshot().map_or(0, |s| s.compactions as usize)
                + session
                    .events()
                    .iter()
                    .filter(|e| e.trace_type == TraceType::Summary)
                    .count(),
            history_bytes: size(session.paths().raw_traces()) + size(session.paths().archive()),
            last_call: LastCall::of(session, registry, model),
        }
    }
}

fn write_report(
    out: &mut String,
    stats: &ContextStats,
    extra: &Extra,
    session: &Session,
) -> std::fmt::Result {
    let source = match stats.model_source {
        ModelSource::Override => "agentmem's table",
        ModelSource::Registry => "models.dev registry",
        ModelSource::Config => "your configuration",
        ModelSource::Unknown => "UNKNOWN MODEL: assumed 200,000-token window",
    };
    writeln!(
        out,
        "{} via {} — window {}, reply reserve {}, safety margin {} ({source})",
        stats.model,
        stats.target,
        thousands(stats.budget.context_window),
        thousands(stats.budget.max_output_tokens),
        thousands(stats.budget.safety_margin)
    )?;
    let used = stats.context_tokens;
    let percent = 100.0 * used as f64 / stats.input_budget.max(1) as f64;
    writeln!(
        out,
        "{}  {} / {} tokens ({percent:.1}%), compaction at {} ({:.0}%){}",
        bar(used, stats.trigger_tokens, stats.input_budget),
        thousands(used),
        thousands(stats.input_budget),
        thousands(stats.trigger_tokens),
        stats.budget.trigger_ratio * 100.0,
        if stats.over_budget {
            " — OVER BUDGET"
        } else if stats.compaction_due {
            " — compaction due"
        } else {
            ""
        }
    )?;
    write_sections(out, &stats.sections, stats.counted_tokens)?;
    writeln!(
        out,
        "messages {} · events {} · compactions {} · history {} · counted in {}",
        stats.messages,
        stats.events,
        extra.compactions,
        bytes(extra.history_bytes),
        stats.encoding
    )?;
    match stats.anchored_tokens {
        Some(anchored) => writeln!(
            out,
            "measured: {} (last provider-reported prompt plus what came after); counted: {}",
            thousands(anchored),
            thousands(stats.counted_tokens)
        )?,
        None => writeln!(
            out,
            "measured: no provider usage yet; the figure above is counted"
        )?,
    }
    if let Some(last) = &extra.last_call {
        let usage = &last.usage;
        let share = 100.0 * usage.cached_tokens as f64 / usage.prompt_tokens.max(1) as f64;
        let cost = last
            .cost_usd
            .map_or(String::new(), |usd| format!(", ${usd:.4}"));
        writeln!(
            out,
            "last call ({}): prompt {}, {} read from the provider's cache ({share:.0}%){cost}",
            last.model,
            thousands(usage.prompt_tokens),
            thousands(usage.cached_tokens)
        )?;
    }
    for (model, c) in session.calibration().all() {
        writeln!(
            out,
            "calibration {model}: reported/counted ×{:.3} over {} calls",
            c.factor, c.samples
        )?;
    }
    Ok(())
}

fn write_sections(out: &mut String, sections: &Sections, total: u64) -> std::fmt::Result {
    let rows = [
        ("system", sections.system),
        ("memory", sections.memory),
        ("working memory", sections.working_memory),
        ("tool schemas", sections.tool_schemas),
        ("history", sections.history),
        ("tool outputs", sections.tool_outputs),
        ("reasoning", sections.reasoning),
        ("reply priming", sections.reply),
    ];
    for (name, tokens) in rows {
        let share = 100.0 * tokens as f64 / total.max(1) as f64;
        writeln!(out, "  {name:<15}{:>12}  {share:5.1}%", thousands(tokens))?;
    }
    Ok(())
}

/// `[████▒▒░░░]`: used, then free up to the trigger, then free past it.
fn bar(used: u64, trigger: u64, budget: u64) -> String {
    let cell =
        |tokens: u64| ((tokens as f64 / budget.max(1) as f64) * BAR_WIDTH as f64).round() as usize;
    let used_cells = cell(used).min(BAR_WIDTH);
    let trigger_cells = cell(trigger).clamp(used_cells, BAR_WIDTH);
    format!(
        "[{}{}{}]",
        "█".repeat(used_cells),
        "▒".repeat(trigger_cells - used_cells),
        "░".repeat(BAR_WIDTH - trigger_cells)
    )
}

fn bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}
