//! `agentmem state ID`: a session's working memory — show it, patch it
//! (compare-and-swap with `--expect-version`), set or remove its schema, or
//! list every version with the event that made it.

use std::io::Read;
use std::path::Path;

use agentmem::base::error::SchemaScope;
use agentmem::working::StateVersion;
use agentmem::{Session, StatePatch};
use anyhow::Context as _;
use serde_json::{json, Value};

use super::Context;
use crate::cli::{StateArgs, StateScope};

pub fn run(ctx: &Context, args: &StateArgs) -> anyhow::Result<()> {
    let id = ctx.session_id(&args.id)?;
    let scope = match args.scope {
        StateScope::Session => SchemaScope::Session,
        StateScope::Agent => SchemaScope::Agent,
    };
    if let Some(path) = &args.patch {
        let patch = StatePatch::from_json(read_json(path)?)?;
        let mut session = ctx.write_session(&id)?;
        ctx.report_recoveries(&session);
        session.update_working_memory(patch, args.expect_version)?;
        show(ctx, &session)?;
        return Ok(session.close()?);
    }
    if args.schema.is_some() || args.no_schema {
        let schema = args.schema.as_deref().map(read_json).transpose()?;
        let mut session = ctx.write_session(&id)?;
        ctx.report_recoveries(&session);
        session.set_working_memory_schema(scope, schema.clone())?;
        report_schema(ctx, &session, scope, schema)?;
        return Ok(session.close()?);
    }
    let session = ctx.read_session(&id)?;
    ctx.report_recoveries(&session);
    if args.history {
        return history(ctx, &session.working_memory_history()?);
    }
    show(ctx, &session)
}

/// The current state: the document on stdout (with `--json`, the version,
/// hash and schema too), the version on stderr.
fn show(ctx: &Context, session: &Session) -> anyhow::Result<()> {
    let state = session.working_memory();
    let schema = session.working_memory_schema()?;
    if ctx.json {
        return crate::output::print_json(&json!({
            "session": session.id().as_str(),
            "version": state.version,
            "hash": state.hash,
            "document": state.document,
            "schema": schema.as_ref().map(|s| json!({"scope": s.scope(), "schema": s.json()})),
        }));
    }
    println!("{}", serde_json::to_string_pretty(&state.document)?);
    eprintln!(
        "agentmem: working memory of session {} at version {} ({})",
        session.id(),
        state.version,
        match &schema {
            Some(schema) => format!("kept to the {} schema", schema.scope().as_str()),
            None => "no schema".to_owned(),
        }
    );
    Ok(())
}

fn report_schema(
    ctx: &Context,
    session: &Session,
    scope: SchemaScope,
    schema: Option<Value>,
) -> anyhow::Result<()> {
    let whose = match scope {
        SchemaScope::Session => format!("session {}", session.id()),
        SchemaScope::Agent => format!("agent {}", session.agent()),
    };
    if ctx.json {
        return crate::output::print_json(&json!({"scope": scope, "schema": schema}));
    }
    match schema {
        Some(_) => eprintln!(
            "agentmem: working-memory schema of {whose} set; every update is checked against it"
        ),
        None => eprintln!("agentmem: working-memory schema of {whose} removed"),
    }
    Ok(())
}

/// One line per version: version, turn, time, event id, and the patch.
fn history(ctx: &Context, versions: &[StateVersion]) -> anyhow::Result<()> {
    if ctx.json {
        return crate::output::print_json(&versions);
    }
    if versions.is_empty() {
        eprintln!("agentmem: the working memory was never changed");
    }
    for version in versions {
        let event = &version.event;
        let update = event
            .working_memory
            .as_ref()
            .expect("history lists update events");
        println!(
            "v{:<4} {}  {}  {}  {}: {}",
            version.version,
            event.turn_id,
            agentmem::base::event::format_ts(event.ts),
            event.id,
            update.patch.kind.label(),
            update.patch.patch
        );
    }
    Ok(())
}

/// A JSON file, or stdin for `-`.
fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}
