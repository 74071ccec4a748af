//! `agentmem serve --stdio`: the engine for agents that spawn agentmem as a
//! child process. One JSON command per line in, one JSON result per line
//! out, in order: `{"id"?, "op", …}` → `{"id"?, "ok": true, "result": …}` or
//! `{"id"?, "ok": false, "error": "…"}`. A bad command changes nothing and
//! the loop goes on.
//!
//! Sessions a command writes to stay open (their writer lock held) until
//! stdin ends, so an agent loop pays for opening a session once.

use std::collections::HashMap;

use agentmem::context::overflow::classify_provider_error;
use agentmem::event::Event;
use agentmem::id::SessionId;
use agentmem::memory::tools::{self, ToolContext};
use agentmem::prepare::PrepareRequest;
use agentmem::recall::RecallRequest;
use agentmem::render::{Target, ToolSchema};
use agentmem::search::{Role, SearchFilter};
use agentmem::session::{CompactOptions, Session};
use agentmem::tokens::Encoding;
use anyhow::{anyhow, Context as _};
use serde_json::{json, Value};

use super::Context;

/// The operations, as the `op` field names them.
pub const OPERATIONS: [&str; 13] = [
    "create_session",
    "sessions",
    "fork",
    "delete_session",
    "append",
    "prepare",
    "compact",
    "recover_overflow",
    "end_session",
    "search",
    "recall",
    "tool",
    "tools",
];

pub fn run(ctx: &Context) -> anyhow::Result<()> {
    let mut open: HashMap<SessionId, Session> = HashMap::new();
    super::json_lines::answer_lines(|line| {
        let (id, outcome) = match serde_json::from_str::<Value>(line) {
            Ok(command) => (
                command.get("id").cloned(),
                execute(ctx, &mut open, &command),
            ),
            Err(e) => (None, Err(anyhow!("not JSON: {e}"))),
        };
        let mut reply = match outcome {
            Ok(result) => json!({"ok": true, "result": result}),
            Err(error) => json!({"ok": false, "error": format!("{error:#}")}),
        };
        if let Some(id) = id {
            reply["id"] = id;
        }
        Some(reply)
    })?;
    for (_, session) in open {
        session.close()?;
    }
    Ok(())
}

fn execute(
    ctx: &Context,
    open: &mut HashMap<SessionId, Session>,
    command: &Value,
) -> anyhow::Result<Value> {
    let op = str_field(command, "op")?;
    match op {
        "create_session" => {
            let id = opt_str(command, "session")
                .map(SessionId::new)
                .transpose()?;
            let session = ctx.store.create_session(&ctx.agent, id)?;
            let id = session.id().clone();
            open.insert(id.clone(), session);
            Ok(json!({"session": id.as_str()}))
        }
        "sessions" => Ok(serde_json::to_value(ctx.store.list_sessions(&ctx.agent)?)?),
        "fork" => {
            let id = session_id(command)?;
            let meta = ctx.store.fork_session(
                &ctx.agent,
                &id,
                opt_str(command, "at_turn"),
                opt_str(command, "new_session")
                    .map(SessionId::new)
                    .transpose()?,
            )?;
            Ok(serde_json::to_value(meta)?)
        }
        "delete_session" => {
            let id = session_id(command)?;
            if let Some(session) = open.remove(&id) {
                session.close()?;
            }
            ctx.store.delete_session(&ctx.agent, &id)?;
            Ok(json!({"deleted": id.as_str()}))
        }
        "append" => {
            let events: Vec<Event> = serde_json::from_value(
                command
                    .get("events")
                    .cloned()
                    .context("\"events\": a list of events")?,
            )
            .context("\"events\" are not agentmem events")?;
            let report = writer(ctx, open, command)?.ingest(events)?;
            Ok(json!({
                "appended": report.appended,
                "duplicates": report.duplicates,
                "evicted": report.evicted,
                "compaction_due": report.compaction_due,
            }))
        }
        "prepare" => {
            let request = prepare_request(command)?;
            let prepared = writer(ctx, open, command)?.prepare(&request)?;
            Ok(json!({"payload": prepared.payload, "stats": prepared.stats}))
        }
        "compact" => {
            let options = CompactOptions {
                focus: opt_str(command, "focus").map(str::to_owned),
                ..CompactOptions::default()
            };
            let report = writer(ctx, open, command)?.compact(&options)?;
            Ok(serde_json::to_value(report)?)
        }
        "recover_overflow" => {
            let request = prepare_request(command)?;
            let status = command.get("status").and_then(Value::as_u64).unwrap_or(400) as u16;
            let error = classify_provider_error(status, str_field(command, "error_body")?);
            let prepared = writer(ctx, open, command)?.recover_from_overflow(&error, &request)?;
            Ok(json!({"payload": prepared.payload, "stats": prepared.stats}))
        }
        "end_session" => Ok(serde_json::to_value(writer(ctx, open, command)?.end()?)?),
        "search" => {
            let filter = SearchFilter {
                session: opt_str(command, "session").map(str::to_owned),
                role: opt_str(command, "role").map(Role::parse).transpose()?,
                since: opt_str(command, "since")
                    .map(agentmem::search::parse_date)
                    .transpose()?,
                until: opt_str(command, "until")
                    .map(agentmem::search::parse_date)
                    .transpose()?,
                limit: command.get("limit").and_then(Value::as_u64).unwrap_or(10) as usize,
            };
            let hits = ctx
                .store
                .search(&ctx.agent, str_field(command, "query")?, &filter)?;
            Ok(serde_json::to_value(hits)?)
        }
        "recall" => {
            let budget = command
                .get("budget")
                .and_then(Value::as_u64)
                .unwrap_or(2_000);
            let mut request = RecallRequest::new(str_field(command, "query")?, budget);
            request.exclude_session = opt_str(command, "session").map(str::to_owned);
            let recalled =
                ctx.store
                    .recall(&ctx.agent, &request, Encoding::default().tokenizer())?;
            Ok(serde_json::to_value(recalled)?)
        }
        "tool" => {
            let session = opt_str(command, "session")
                .map(SessionId::new)
                .transpose()?;
            let context = ToolContext {
                store: &ctx.store,
                agent: &ctx.agent,
                session: session.as_ref(),
            };
            let name = str_field(command, "name")?;
            let arguments = command.get("arguments").cloned().unwrap_or(json!({}));
            let text = tools::run(&context, name, &arguments)
                .with_context(|| format!("unknown tool {name:?}; \"tools\" lists them"))?;
            Ok(json!({"text": text}))
        }
        "tools" => Ok(json!(tools::schemas()
            .iter()
            .map(ToolSchema::to_json)
            .collect::<Vec<_>>())),
        other => Err(anyhow!(
            "unknown op {other:?}; use one of: {}",
            OPERATIONS.join(", ")
        )),
    }
}

/// The session the command names, opened for writing (once).
fn writer<'a>(
    ctx: &Context,
    open: &'a mut HashMap<SessionId, Session>,
    command: &Value,
) -> anyhow::Result<&'a mut Session> {
    let id = session_id(command)?;
    if !open.contains_key(&id) {
        let session = ctx.store.open_session(&ctx.agent, &id)?;
        open.insert(id.clone(), session);
    }
    Ok(open.get_mut(&id).expect("inserted above"))
}

fn prepare_request(command: &Value) -> anyhow::Result<PrepareRequest> {
    let model = str_field(command, "model")?;
    let target = match opt_str(command, "target") {
        Some(name) => name.parse::<Target>().map_err(anyhow::Error::msg)?,
        None => Target::for_model(model),
    };
    let mut request = PrepareRequest::new(model, target);
    request.system = opt_str(command, "system").map(str::to_owned);
    if let Some(tools) = command.get("tools") {
        request.tools = tools
            .as_array()
            .context("\"tools\": a list of tool schemas")?
            .iter()
            .map(|tool| ToolSchema::from_json(tool).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<_>>()?;
    }
    Ok(request)
}

fn session_id(command: &Value) -> anyhow::Result<SessionId> {
    Ok(SessionId::new(str_field(command, "session")?)?)
}

fn str_field<'a>(command: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    opt_str(command, key).with_context(|| format!("the command needs a \"{key}\" string"))
}

fn opt_str<'a>(command: &'a Value, key: &str) -> Option<&'a str> {
    command.get(key).and_then(Value::as_str)
}
