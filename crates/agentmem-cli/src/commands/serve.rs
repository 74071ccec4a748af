//! `agentmem serve`: the engine as a local service. Over HTTP by default
//! (see `agentmem_server::http` and `openapi.json`); with `--stdio`, one JSON
//! command per line in and one JSON result per line out, in order:
//! `{"id"?, "op", …}` → `{"id"?, "ok": true, "result": …}` or
//! `{"id"?, "ok": false, "kind": "…", "error": "…"}`. A bad command changes
//! nothing and the loop goes on.

use std::sync::Arc;

use agentmem_server::http::{HttpServer, ServerOptions};
use agentmem_server::service::{Op, Service, SessionSetup};
use agentmem_server::ServiceError;
use anyhow::Context as _;
use serde_json::{json, Value};

use super::reach_model::{self, ModelFlags};
use super::Context;
use crate::cli::ServeArgs;

pub fn run(ctx: Context, args: &ServeArgs) -> anyhow::Result<()> {
    let setup = summarizer_setup(&ctx, args)?;
    let mut service = Service::new(ctx.store, ctx.agent);
    if let Some(setup) = setup {
        service = service.with_session_setup(setup);
    }
    let service = Arc::new(service);
    if args.stdio {
        super::json_lines::answer_lines(|line| {
            Some(match line {
                Ok(line) => answer(&service, line),
                Err(not_utf8) => refusal(None, &ServiceError::bad_request(not_utf8.to_string())),
            })
        })?;
    } else {
        let token = args.token_file.as_deref().map(read_token).transpose()?;
        let options = ServerOptions {
            addr: args.addr,
            token,
            max_body_bytes: args.max_body_bytes,
            worker_threads: args.threads,
        };
        let server = HttpServer::bind(service.clone(), options)?;
        eprintln!("agentmem: listening on http://{}", server.local_addr());
        server.run_until_interrupted()?;
    }
    Ok(service.close()?)
}

/// Gives every session the LLM summarizer when a summarizer model is named
/// (flag or `[llm] summarizer_model`).
fn summarizer_setup(ctx: &Context, args: &ServeArgs) -> anyhow::Result<Option<SessionSetup>> {
    let flags = ModelFlags {
        summarizer_model: args.summarizer_model.clone(),
        ..ModelFlags::default()
    };
    let endpoint = reach_model::endpoint(&ctx.store, &flags)?;
    let Some(spec) = reach_model::summarizer(ctx, &flags, &endpoint) else {
        return Ok(None);
    };
    // Built once now, so a missing key fails at start and not mid-request.
    spec.build()?;
    Ok(Some(Box::new(move |session| {
        if let Ok(summarizer) = spec.build() {
            session.set_summarizer(Box::new(summarizer));
        }
    })))
}

fn answer(service: &Service, line: &str) -> Value {
    let (id, outcome) = match serde_json::from_str::<Value>(line) {
        Ok(command) => (command.get("id").cloned(), execute(service, &command, line)),
        Err(e) => (
            None,
            Err(ServiceError::bad_request(format!("not JSON: {e}"))),
        ),
    };
    match outcome {
        Ok(result) => {
            let mut reply = json!({"ok": true, "result": result});
            if let Some(id) = id {
                reply["id"] = id;
            }
            reply
        }
        Err(error) => refusal(id, &error),
    }
}

/// The answer to a command that failed (`id` is the command's, if known).
fn refusal(id: Option<Value>, error: &ServiceError) -> Value {
    let mut reply = json!({"ok": false, "kind": error.kind.name(), "error": error.message});
    if let Some(id) = id {
        reply["id"] = id;
    }
    reply
}

fn execute(service: &Service, command: &Value, line: &str) -> Result<Value, ServiceError> {
    let op: Op = command
        .get("op")
        .and_then(Value::as_str)
        .ok_or_else(|| ServiceError::bad_request("the command needs an \"op\" string"))?
        .parse()?;
    service.execute_text(op, command, line.as_bytes())
}

fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    Ok(text.trim().to_owned())
}
