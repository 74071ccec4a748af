//! `agentmem prepare`: the payload a model call would send.

use std::path::Path;

use agentmem::pipeline::strategy::CompactionTiming;
use agentmem::pipeline::tiers::Action;
use agentmem::{BudgetSettings, PrepareRequest, Session, Target, ToolSchema};
use anyhow::Context as _;

use super::Context;
use crate::cli::{ModelArgs, PromptArgs};

/// What `prepare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The payload on stdout.
    Payload,
    /// The payload on stdout, the stats as JSON on stderr.
    PayloadAndStats,
    /// One JSON object on stdout (payload, stats, would_compact), from the
    /// session opened read-only: nothing is written.
    DryRun,
}

pub fn run(
    ctx: &Context,
    id: &str,
    args: &ModelArgs,
    tools: Option<&Path>,
    prompt: PromptArgs,
    output: Output,
) -> anyhow::Result<()> {
    // Opened for writing, so a compaction this prepare runs is persisted;
    // while another process writes the session, read-only (and said so).
    let id = ctx.session_id(id)?;
    let opened = match output {
        Output::DryRun => ctx.read_session(&id),
        Output::Payload | Output::PayloadAndStats => ctx.write_session(&id),
    };
    let mut session = match opened {
        Err(agentmem::Error::SessionLocked { pid, .. }) => {
            eprintln!("agentmem: session {id} is being written by pid {pid}; preparing read-only (no compaction is saved)");
            ctx.read_session(&id)?
        }
        other => other?,
    };
    ctx.report_recoveries(&session);
    let mut request = request_for(&session, args)?;
    request.system = prompt.system;
    request.live_context = prompt.live_context;
    if let Some(path) = tools {
        request.tools = read_tools(path)?;
    }
    let prepared = session.prepare(&request)?;
    let payload = prepared.payload.to_value();
    match output {
        Output::Payload => println!("{}", serde_json::to_string_pretty(&payload)?),
        Output::PayloadAndStats => {
            println!("{}", serde_json::to_string_pretty(&payload)?);
            eprintln!("{}", serde_json::to_string_pretty(&prepared.stats)?);
        }
        Output::DryRun => {
            let would_compact = prepared
                .stats
                .actions
                .iter()
                .any(|action| matches!(action, Action::CompactionWouldRun));
            let report = serde_json::json!({
                "dry_run": true,
                "would_compact": would_compact,
                "payload": payload,
                "stats": prepared.stats,
            });
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
    }
    Ok(session.close()?)
}

/// The request the model arguments describe, with the session's defaults.
pub fn request_for(session: &Session, args: &ModelArgs) -> anyhow::Result<PrepareRequest> {
    let model = args
        .model
        .clone()
        .or_else(|| last_reported_model(session))
        .or_else(|| std::env::var("AGENTMEM_MODEL").ok())
        .unwrap_or_else(|| "gpt-4.1".to_owned());
    let target = match &args.target {
        Some(name) => name.parse::<Target>().map_err(anyhow::Error::msg)?,
        None => Target::for_model(&model),
    };
    let mut request = PrepareRequest::new(model, target);
    request.cache = args.cache.prompt_cache;
    request.context.strategy = args.strategy;
    request.context.memory = args.memory;
    // One call and the process ends: a compaction drafted for a next call
    // in this process would be dropped with it.
    request.context.compaction_timing = Some(CompactionTiming::Inline);
    request.budget = BudgetSettings {
        context_window: args.context_window,
        max_output_tokens: args.max_output_tokens,
        safety_margin: args.safety_margin,
        trigger_ratio: args.trigger_ratio,
    };
    Ok(request)
}

fn last_reported_model(session: &Session) -> Option<String> {
    session
        .events()
        .iter()
        .rev()
        .find_map(|e| e.usage.as_ref()?.model.clone())
}

fn read_tools(path: &Path) -> anyhow::Result<Vec<ToolSchema>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let list = value
        .as_array()
        .or_else(|| value.get("tools").and_then(serde_json::Value::as_array))
        .with_context(|| format!("{}: expected a list of tool schemas", path.display()))?;
    list.iter()
        .map(|tool| ToolSchema::from_json(tool).map_err(anyhow::Error::msg))
        .collect()
}
