//! `agentmem replay`: a transcript fed through the engine turn by turn, as an
//! agent loop would — ingest what happened, prepare before every model call —
//! with a line per turn and a summary, readable or (`--json`) JSON.

use std::sync::Arc;
use std::time::Instant;

use agentmem::pipeline::tiers::Action;
use agentmem::render::{remove_cache_marks, Segment};
use agentmem::{Event, Payload, PrepareRequest, Session, Store, Target, TraceType};
use agentmem_import as import;
use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;

use super::Context;
use crate::cli::ReplayArgs;
use crate::measure::{median, set_input_budget, TurnLine};
use crate::output::thousands;

pub fn run(ctx: &Context, args: &ReplayArgs) -> anyhow::Result<()> {
    let choice = super::import::format_choice(&args.format)?;
    let (_, imported) = import::read(&args.path, choice)?;
    let events = without_recorded_usage(imported.events);
    let scratch = tempfile::tempdir()?;
    let mut session = match &args.session {
        // Kept on the configured backend, where the replayed session can be
        // looked at afterwards.
        Some(id) => ctx.store.create_session_in(
            ctx.shared_storage()?,
            &ctx.agent,
            Some(ctx.session_id(id)?),
        )?,
        // Nothing kept: a throwaway folder, whatever the backend.
        None => {
            Store::open(scratch.path(), ctx.store.durability())?.create_session(&ctx.agent, None)?
        }
    };
    let request = request(args, &ctx.store)?;
    let mut lines = Vec::new();
    let mut prefixes = PrefixMeter::default();
    let turns = split_turns(events);
    let bar = crate::progress::bar(turns.len() as u64, "replaying turns");
    for (n, turn) in turns.into_iter().enumerate() {
        let line = replay_turn(&mut session, &request, &mut prefixes, n, turn)?;
        let printed = match ctx.json {
            true => serde_json::to_string(&line)?,
            false => describe_turn(&line),
        };
        bar.suspend(|| println!("{printed}"));
        bar.inc(1);
        lines.push(line);
    }
    bar.finish_and_clear();
    let summary = summarize(&lines, &prefixes);
    match ctx.json {
        true => println!("{}", serde_json::to_string(&summary)?),
        false => println!("{}", describe_summary(&summary)),
    }
    if let Some(path) = &args.plot {
        std::fs::write(
            path,
            crate::plot::context_svg(&args.path.display().to_string(), &args.model, &lines),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("agentmem: plot written to {}", path.display());
    }
    session.close()?;
    Ok(())
}

fn request(args: &ReplayArgs, store: &Store) -> anyhow::Result<PrepareRequest> {
    let target = match &args.target {
        Some(name) => name.parse::<Target>().map_err(anyhow::Error::msg)?,
        None => Target::for_model(&args.model),
    };
    let mut request = PrepareRequest::new(&args.model, target);
    if let Some(strategy) = &args.strategy {
        request.context.strategy = Some(strategy.parse().map_err(anyhow::Error::msg)?);
    }
    request.context.compaction_timing = Some(args.compaction_timing);
    if let Some(budget) = args.budget {
        set_input_budget(&mut request, store, budget);
    }
    Ok(request)
}

/// The events without the usage their provider reported: it measured the
/// prompts of the recorded agent (its own system prompt, its uncompacted
/// history), not the contexts the replay prepares, and taken as a measure of
/// them it would say a compacted context is as large as the original.
fn without_recorded_usage(mut events: Vec<Event>) -> Vec<Event> {
    events.iter_mut().for_each(|e| e.usage = None);
    events
}

/// Events grouped by turn: a user message starts one.
fn split_turns(events: Vec<Event>) -> Vec<Vec<Event>> {
    let mut turns: Vec<Vec<Event>> = vec![Vec::new()];
    for event in events {
        let starts_turn =
            event.trace_type == TraceType::User && !turns.last().is_some_and(Vec::is_empty);
        if starts_turn {
            turns.push(Vec::new());
        }
        turns.last_mut().expect("never empty").push(event);
    }
    turns.retain(|t| !t.is_empty());
    turns
}

/// Ingests one turn and prepares before each model call in it: before each
/// run of model output (and once at the end when the turn holds none).
fn replay_turn(
    session: &mut Session,
    request: &PrepareRequest,
    prefixes: &mut PrefixMeter,
    n: usize,
    turn: Vec<Event>,
) -> anyhow::Result<TurnLine> {
    let mut line = TurnLine {
        turn: n + 1,
        context_tokens: 0,
        estimated_tokens: 0,
        budget: 0,
        trigger: 0,
        actions: Vec::new(),
        tokens_saved: 0,
        engine_us: 0.0,
        model_calls: 0,
    };
    let mut pending: Vec<Event> = Vec::new();
    let mut previous_was_output = false;
    for event in turn {
        let is_output = event.trace_type.is_model_output();
        if is_output && !previous_was_output {
            let events = std::mem::take(&mut pending);
            model_call(session, request, prefixes, events, &mut line)?;
        }
        previous_was_output = is_output;
        pending.push(event);
    }
    let started = Instant::now();
    session.ingest(pending)?;
    line.engine_us += started.elapsed().as_secs_f64() * 1e6;
    if line.model_calls == 0 {
        model_call(session, request, prefixes, Vec::new(), &mut line)?;
    }
    Ok(line)
}

fn model_call(
    session: &mut Session,
    request: &PrepareRequest,
    prefixes: &mut PrefixMeter,
    events: Vec<Event>,
    line: &mut TurnLine,
) -> anyhow::Result<()> {
    let started = Instant::now();
    session.ingest(events)?;
    let prepared = session.prepare(request)?;
    line.engine_us += started.elapsed().as_secs_f64() * 1e6;
    prefixes.observe(&prepared.payload);
    let stats = prepared.stats;
    line.context_tokens = stats.context_tokens;
    line.estimated_tokens = stats.estimated_tokens;
    line.budget = stats.input_budget;
    line.trigger = stats.trigger_tokens;
    line.tokens_saved += stats.tokens_saved;
    line.actions.extend(
        stats
            .actions
            .into_iter()
            .filter(|a| !matches!(a, Action::PairsRepaired { .. })),
    );
    line.model_calls += 1;
    Ok(())
}

/// How much of each prepared body repeats the one before it from its first
/// byte: what a provider's prefix cache can serve. The body is read in the
/// order providers cache it (everything but the message list, then the
/// list), cache marks left out: they say where to cache, they are not content.
///
/// A body is read as the chunks it is sent in: its fields, then each list
/// entry and the separator after it. An entry of a segment the previous body
/// shared is known equal without reading it, so metering costs what changed,
/// like the prepare it meters, and does not pass a long context through the
/// processor's caches between the calls it times.
#[derive(Debug, Default)]
struct PrefixMeter {
    previous: Vec<Chunk>,
    sent_bytes: u64,
    repeated_bytes: u64,
}

/// A run of a body's text, as [`PrefixMeter`] reads it.
#[derive(Debug)]
enum Chunk {
    /// Entry `.1` of a shared segment, as sent.
    Shared(Arc<Segment>, usize),
    /// Text made for this body alone.
    Own(String),
}

impl Chunk {
    fn text(&self) -> &str {
        match self {
            Chunk::Shared(segment, i) => segment.entries()[*i].get(),
            Chunk::Own(text) => text,
        }
    }

    /// Whether `self` and `other` are surely the same text without reading them.
    fn same_entry(&self, other: &Chunk) -> bool {
        match (self, other) {
            (Chunk::Shared(a, i), Chunk::Shared(b, j)) => Arc::ptr_eq(a, b) && i == j,
            (Chunk::Shared(..) | Chunk::Own(_), _) => false,
        }
    }
}

impl PrefixMeter {
    fn observe(&mut self, payload: &Payload) {
        let chunks = unmarked_chunks(payload);
        let mut repeated = 0;
        for (before, now) in self.previous.iter().zip(&chunks) {
            if before.same_entry(now) || before.text() == now.text() {
                repeated += now.text().len();
                continue;
            }
            let common = before.text().bytes().zip(now.text().bytes());
            repeated += common.take_while(|(a, b)| a == b).count();
            break;
        }
        let sent: usize = chunks.iter().map(|c| c.text().len()).sum();
        self.sent_bytes += sent as u64;
        self.repeated_bytes += repeated as u64;
        self.previous = chunks;
    }

    fn share(&self) -> f64 {
        self.repeated_bytes as f64 / self.sent_bytes.max(1) as f64
    }
}

/// `payload` as [`PrefixMeter`] reads it: the fields but the list as one
/// object, then `[`, the entries each followed by `,` (`]` after the last),
/// cache marks removed. A shared segment holds no marks (they go on a copy of
/// the list's end), so its entries are taken as they are.
fn unmarked_chunks(payload: &Payload) -> Vec<Chunk> {
    let parts = payload.parts();
    let unmarked = |value: &Value| {
        let mut value = value.clone();
        remove_cache_marks(&mut value);
        value.to_string()
    };
    let fields = unmarked(&Value::Object(parts.fields.clone()));
    let mut chunks = vec![Chunk::Own(format!("{fields}["))];
    let mut entries: Vec<Chunk> = parts.lead.iter().map(|e| Chunk::Own(unmarked(e))).collect();
    for segment in parts.segments {
        entries.extend((0..segment.len()).map(|i| Chunk::Shared(Arc::clone(segment), i)));
    }
    if let Some(last) = parts.last_entry {
        // It stands for the segments' last entry (there is one when it is set).
        let last: Value = serde_json::from_str(last.get()).expect("an entry is JSON");
        entries.pop();
        entries.push(Chunk::Own(unmarked(&last)));
    }
    entries.extend(parts.closing.iter().map(|e| Chunk::Own(unmarked(e))));
    let count = entries.len();
    for (i, entry) in entries.into_iter().enumerate() {
        chunks.push(entry);
        chunks.push(Chunk::Own(
            if i + 1 == count { "]" } else { "," }.to_owned(),
        ));
    }
    if count == 0 {
        chunks.push(Chunk::Own("]".to_owned()));
    }
    chunks
}

/// Turns at each end of a replay whose mean and median engine time the
/// summary gives: whether the cost per turn grows with history.
const FLATNESS_WINDOW_TURNS: usize = 100;

/// The replay as a whole.
#[derive(Debug, Serialize)]
struct Summary {
    /// Always true: tells the summary line from the turns' lines.
    summary: bool,
    turns: usize,
    model_calls: usize,
    compactions: usize,
    max_context_tokens: u64,
    turns_over_budget: usize,
    tokens_saved: u64,
    engine_us_p50: f64,
    engine_us_p99: f64,
    engine_ms_total: f64,
    engine_us_mean_first_100: f64,
    engine_us_mean_last_100: f64,
    engine_us_p50_first_100: f64,
    engine_us_p50_last_100: f64,
    sent_bytes: u64,
    prefix_repeated_share: f64,
}

/// The summary of the replay that made `lines`.
fn summarize(lines: &[TurnLine], prefixes: &PrefixMeter) -> Summary {
    let mean_us = |window: &[TurnLine]| {
        window.iter().map(|l| l.engine_us).sum::<f64>() / window.len().max(1) as f64
    };
    let window = FLATNESS_WINDOW_TURNS.min(lines.len());
    let (head, tail) = (&lines[..window], &lines[lines.len() - window..]);
    let median_us = |window: &[TurnLine]| {
        let engine: Vec<f64> = window.iter().map(|l| l.engine_us).collect();
        median(&engine)
    };
    let per_turn: Vec<f64> = lines.iter().map(|l| l.engine_us).collect();
    let percentile = |p: f64| crate::measure::percentile(&per_turn, p);
    let compactions = lines
        .iter()
        .flat_map(|l| &l.actions)
        .filter(|a| matches!(a, Action::Compacted { .. }))
        .count();
    Summary {
        summary: true,
        turns: lines.len(),
        model_calls: lines.iter().map(|l| l.model_calls).sum(),
        compactions,
        max_context_tokens: lines.iter().map(|l| l.context_tokens).max().unwrap_or(0),
        turns_over_budget: lines.iter().filter(|l| l.context_tokens > l.budget).count(),
        tokens_saved: lines.iter().map(|l| l.tokens_saved).sum(),
        engine_us_p50: percentile(0.5),
        engine_us_p99: percentile(0.99),
        engine_ms_total: per_turn.iter().sum::<f64>() / 1e3,
        engine_us_mean_first_100: mean_us(head),
        engine_us_mean_last_100: mean_us(tail),
        engine_us_p50_first_100: median_us(head),
        engine_us_p50_last_100: median_us(tail),
        sent_bytes: prefixes.sent_bytes,
        prefix_repeated_share: prefixes.share(),
    }
}

/// A turn's line as people read it: the context against the budget, the
/// calls, the engine's time, then what the pipeline did.
fn describe_turn(line: &TurnLine) -> String {
    let estimated = match line.estimated_tokens {
        0 => String::new(),
        n => format!(", {} estimated", thousands(n)),
    };
    let mut text = format!(
        "turn {}: {} / {} tokens (trigger {}{estimated}), {} model call{}, {:.2} ms",
        line.turn,
        thousands(line.context_tokens),
        thousands(line.budget),
        thousands(line.trigger),
        line.model_calls,
        if line.model_calls == 1 { "" } else { "s" },
        line.engine_us / 1e3
    );
    for action in &line.actions {
        text.push_str("; ");
        text.push_str(&describe_action(action));
    }
    text
}

pub(super) fn describe_action(action: &Action) -> String {
    let saved = |tokens: &u64| format!("{} tokens saved", thousands(*tokens));
    match action {
        Action::PairsRepaired { pass, .. } => format!("tool pairs repaired ({pass})"),
        Action::ResultsBudgeted {
            results,
            tokens_saved,
        } => format!("{results} tool results cut, {}", saved(tokens_saved)),
        Action::Snipped {
            pairs,
            tokens_saved,
        } => format!("{pairs} repeated calls dropped, {}", saved(tokens_saved)),
        Action::Microcompacted {
            results,
            tokens_saved,
        } => format!(
            "{results} old tool results replaced by placeholders, {}",
            saved(tokens_saved)
        ),
        Action::TurnsTrimmed {
            turns,
            tokens_saved,
        } => format!("{turns} oldest turns left out, {}", saved(tokens_saved)),
        Action::TurnsOutOfReach {
            turns,
            tokens_saved,
        } => format!(
            "{turns} oldest turns out of the budget's reach left out, {}",
            saved(tokens_saved)
        ),
        Action::ItemsDropped {
            items,
            tokens_saved,
        } => format!(
            "{items} items of the current turn left out, {}",
            saved(tokens_saved)
        ),
        Action::Compacted {
            events,
            tokens_saved,
        } => format!("compacted {events} events, {}", saved(tokens_saved)),
        Action::CompactionStarted { events } => {
            format!("drafting a compaction of {events} events")
        }
        Action::CompactionPending { events } => {
            format!("a compaction of {events} events is still being drafted")
        }
        Action::CompactionSkipped { reason } => format!("no compaction: {reason}"),
        Action::CompactionWouldRun => "a compaction is due (not run: read-only)".to_owned(),
    }
}

/// The summary line as people read it.
fn describe_summary(summary: &Summary) -> String {
    format!(
        "replayed {} turns, {} model calls: {} compactions, largest context {} tokens, {} over budget, {} tokens saved; engine {:.2} ms a turn (median), {:.2} ms at p99, {:.0} ms in all; {:.0}% of the bytes sent repeat the call before",
        summary.turns,
        summary.model_calls,
        summary.compactions,
        thousands(summary.max_context_tokens),
        summary.turns_over_budget,
        thousands(summary.tokens_saved),
        summary.engine_us_p50 / 1e3,
        summary.engine_us_p99 / 1e3,
        summary.engine_ms_total,
        summary.prefix_repeated_share * 100.0
    )
}

#[cfg(test)]
mod tests {
    use agentmem::base::message::{Message, Role};
    use agentmem::render::RenderRequest;
    use agentmem::PromptCache;

    use super::*;

    fn body(target: Target, messages: &[Message]) -> Payload {
        let request = RenderRequest {
            model: "a-model",
            system: Some("Be brief."),
            messages,
            tools: &[],
            max_output_tokens: 1024,
            cache: PromptCache::On,
            live_context: None,
        };
        Payload::render(target, &request)
    }

    #[test]
    fn the_meter_counts_what_a_body_repeats_of_the_one_before_marks_aside() {
        let asked = [Message::text(Role::User, "hi")];
        let answered = [asked[0].clone(), Message::text(Role::Assistant, "Hello.")];
        for target in [Target::OpenAiChat, Target::Anthropic] {
            let mut meter = PrefixMeter::default();
            meter.observe(&body(target, &asked));
            let first = meter.sent_bytes;
            assert_eq!(meter.repeated_bytes, 0);
            meter.observe(&body(target, &answered));
            // All of the first body but the `]` that closed its list.
            assert_eq!(meter.repeated_bytes, first - 1, "{target}");
            let share = meter.share();
            assert!(share > 0.0 && share < 0.5, "{target}: {share}");
        }
    }

    /// The old reading: the whole body parsed, marks removed, written out.
    fn whole_body_text(target: Target, payload: &Payload) -> String {
        let mut body = payload.to_value();
        remove_cache_marks(&mut body);
        let Value::Object(mut fields) = body else {
            panic!("a body is an object");
        };
        let list = fields.remove(target.list_key()).unwrap_or_default();
        format!("{}{list}", Value::Object(fields))
    }

    #[test]
    fn the_meter_reads_a_sessions_bodies_as_a_whole_body_reading_would() {
        for target in Target::ALL {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), agentmem::Durability::Os).unwrap();
            let agent = agentmem::AgentId::new("agent").unwrap();
            let mut session = store.create_session(&agent, None).unwrap();
            let request = PrepareRequest::new("gpt-4.1", target);
            let (mut meter, mut previous, mut repeated, mut sent) =
                (PrefixMeter::default(), String::new(), 0, 0);
            for turn in 0..6 {
                let call = format!("call_{turn}");
                session
                    .ingest(vec![
                        Event::user(format!("Step {turn}: read the file.")),
                        Event::tool_call(&call, "read_file", serde_json::json!({"path": "a.rs"})),
                        Event::tool_result(&call, format!("fn step_{turn}() {{}}")),
                    ])
                    .unwrap();
                let payload = session.prepare(&request).unwrap().payload;
                meter.observe(&payload);
                let text = whole_body_text(target, &payload);
                let common = previous.bytes().zip(text.bytes());
                repeated += common.take_while(|(a, b)| a == b).count() as u64;
                sent += text.len() as u64;
                previous = text;
                session
                    .ingest(vec![Event::assistant(format!("Done {turn}."))])
                    .unwrap();
            }
            assert_eq!(
                (meter.repeated_bytes, meter.sent_bytes),
                (repeated, sent),
                "{target}"
            );
            assert!(meter.share() > 0.5, "{target}: {}", meter.share());
        }
    }
}
