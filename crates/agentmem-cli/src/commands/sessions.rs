//! `agentmem sessions list|show|create|fork|end|delete`.

use agentmem::base::event::format_ts;
use agentmem::{Backend, SessionId, SessionMeta};

use super::Context;
use crate::cli::SessionsCommand;
use crate::output::{print_json, print_table};

pub fn run(ctx: &Context, command: SessionsCommand) -> anyhow::Result<()> {
    match command {
        SessionsCommand::List => list(ctx),
        SessionsCommand::Show { id } => match ctx.backend() {
            Backend::Files => show(ctx, &id),
            Backend::Postgres => {
                let meta = ctx
                    .storage()?
                    .session_meta(&ctx.agent, &ctx.session_id(&id)?)?;
                if ctx.json {
                    return print_json(&meta);
                }
                print_meta(&meta);
                Ok(())
            }
        },
        SessionsCommand::Create { id } if ctx.backend() != Backend::Files => {
            let id = id.map_or_else(|| Ok(SessionId::generate()), |id| ctx.session_id(&id))?;
            let writer = ctx.storage()?.create_session(&ctx.agent, &id)?;
            println!("{}", writer.id());
            Ok(())
        }
        SessionsCommand::Create { id } => {
            let id = id.map(|id| ctx.session_id(&id)).transpose()?;
            let session = ctx.store.create_session(&ctx.agent, id)?;
            println!("{}", session.id());
            Ok(session.close()?)
        }
        SessionsCommand::Fork {
            id,
            at_turn,
            new_id,
        } => {
            let new_id =
                new_id.map_or_else(|| Ok(SessionId::generate()), |id| ctx.session_id(&id))?;
            let meta = ctx.storage()?.fork_session(
                &ctx.agent,
                &ctx.session_id(&id)?,
                at_turn.as_deref(),
                &new_id,
            )?;
            if ctx.json {
                print_json(&meta)
            } else {
                println!("{}", meta.id);
                Ok(())
            }
        }
        SessionsCommand::End { id } => {
            let mut session = ctx.write_session(&ctx.session_id(&id)?)?;
            let episode = session.end()?;
            session.close()?;
            match (episode, ctx.json) {
                (Some(episode), true) => print_json(&episode),
                (Some(episode), false) => {
                    println!("{}\n\n{}", episode.id, episode.summary);
                    Ok(())
                }
                (None, _) => {
                    eprintln!("agentmem: session {id} has nothing to summarize");
                    Ok(())
                }
            }
        }
        SessionsCommand::Delete { id } => {
            ctx.storage()?
                .delete_session(&ctx.agent, &ctx.session_id(&id)?)?;
            eprintln!("agentmem: deleted session {id}");
            Ok(())
        }
    }
}

fn list(ctx: &Context) -> anyhow::Result<()> {
    let sessions = ctx.storage()?.list_sessions(&ctx.agent)?;
    if ctx.json {
        return print_json(&sessions);
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|m| {
            vec![
                m.id.clone(),
                m.title.clone().unwrap_or_default(),
                format_ts(m.created),
                format_ts(m.updated),
                m.turns.to_string(),
                m.events.to_string(),
            ]
        })
        .collect();
    print_table(
        &["ID", "TITLE", "CREATED", "UPDATED", "TURNS", "EVENTS"],
        &rows,
    );
    Ok(())
}

fn show(ctx: &Context, id: &str) -> anyhow::Result<()> {
    let id = ctx.session_id(id)?;
    let session = ctx.store.read_session(&ctx.agent, &id)?;
    ctx.report_recoveries(&session);
    let meta = session.current_meta();
    let tools = session.tool_interactions();
    let pending = tools
        .iter()
        .filter(|t| t.status == agentmem::ToolStatus::Pending)
        .count();
    if ctx.json {
        let mut value = serde_json::to_value(&meta)?;
        value["tool_calls"] = tools.len().into();
        value["pending_tool_calls"] = pending.into();
        value["dir"] = session.paths().dir.display().to_string().into();
        return print_json(&value);
    }
    print_meta(&meta);
    println!("tool calls:   {} ({pending} pending)", tools.len());
    println!("directory:    {}", session.paths().dir.display());
    Ok(())
}

fn print_meta(meta: &SessionMeta) {
    println!("session:      {}", meta.id);
    println!("agent:        {}", meta.agent_id);
    println!(
        "title:        {}",
        meta.title.as_deref().unwrap_or("(no user message yet)")
    );
    println!("created:      {}", format_ts(meta.created));
    println!("updated:      {}", format_ts(meta.updated));
    println!("turns:        {}", meta.turns);
    println!("events:       {}", meta.events);
    if let Some(from) = &meta.forked_from {
        println!(
            "forked from:  {from} at {}",
            meta.forked_at_turn.as_deref().unwrap_or("?")
        );
    }
    for import in &meta.imports {
        println!(
            "imported:     {} ({}, {} events)",
            import.path, import.format, import.events_added
        );
    }
}
