//! `agentmem serve`: the engine as a local service. Over HTTP by default
//! (see `agentmem_server::http` and `openapi.json`); with `--stdio`, one JSON
//! command per line in and one JSON result per line out, in order:
//! `{"id"?, "op", …}` → `{"id"?, "ok": true, "result": …}` or
//! `{"id"?, "ok": false, "kind": "…", "error": "…"}`. A bad command changes
//! nothing and the loop goes on.

use std::sync::Arc;

use agentmem_server::http::{HttpServer, ServerOptions};
use agentmem_server::service::{Answer, Op, Service, SessionSetup};
use agentmem_server::{ErrorKind, ServiceError};
use anyhow::Context as _;
use serde_json::Value;

use super::json_lines::{Line, MAX_LINE_BYTES};
use super::reach_model::{self, ModelFlags};
use super::Context;
use crate::cli::ServeArgs;

pub fn run(ctx: Context, args: &ServeArgs) -> anyhow::Result<()> {
    let setup = summarizer_setup(&ctx, args)?;
    let storage = Arc::clone(ctx.shared_storage()?);
    let memory = Arc::clone(ctx.memory()?);
    let mut service = Service::new(ctx.store, ctx.agent)
        .with_storage(storage)
        .with_memory(memory);
    if let Some(setup) = setup {
        service = service.with_session_setup(setup);
    }
    let service = Arc::new(service);
    if args.stdio {
        super::json_lines::answer_lines(|line| {
            Some(match line {
                Line::Text(text) => answer(&service, text),
                Line::TooLong => reply(None, Err(line_too_long())),
                Line::NotUtf8(not_utf8) => {
                    reply(None, Err(ServiceError::bad_request(not_utf8.to_string())))
                }
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

fn answer(service: &Service, line: &str) -> String {
    let (id, outcome) = match serde_json::from_str::<Value>(line) {
        Ok(command) => (command.get("id").cloned(), execute(service, &command, line)),
        Err(e) => (
            None,
            Err(ServiceError::bad_request(format!("not JSON: {e}"))),
        ),
    };
    reply(id, outcome)
}

/// The refusal of a line over [`MAX_LINE_BYTES`], which was not read.
fn line_too_long() -> ServiceError {
    ServiceError::new(
        ErrorKind::TooLarge,
        format!("the line is over the limit of {MAX_LINE_BYTES} bytes and was not read; send fewer events per command"),
    )
}

/// The line answering a command with `id`.
fn reply(id: Option<Value>, outcome: Result<Answer, ServiceError>) -> String {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<Value>,
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Answer>,
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    }
    let line = match outcome {
        Ok(result) => Line {
            id,
            ok: true,
            result: Some(result),
            kind: None,
            error: None,
        },
        Err(error) => Line {
            id,
            ok: false,
            result: None,
            kind: Some(error.kind.name()),
            error: Some(error.message),
        },
    };
    serde_json::to_string(&line).expect("a reply serializes")
}

/// Runs a command (the JSON `line`, read as `command`): its `op` names the
/// operation, and the fields beside `op` and `id` are the operation's.
fn execute(service: &Service, command: &Value, line: &str) -> Result<Answer, ServiceError> {
    let op: Op = command
        .get("op")
        .and_then(Value::as_str)
        .ok_or_else(|| ServiceError::bad_request("the command needs an \"op\" string"))?
        .parse()?;
    let mut arguments = command.clone();
    if let Some(fields) = arguments.as_object_mut() {
        fields.remove("op");
        fields.remove("id");
    }
    service.execute_text(op, &arguments, line.as_bytes())
}

fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    warn_if_others_read(path);
    Ok(text.trim().to_owned())
}

/// Warns when users other than the owner may read the token file: any of
/// them could then call the server.
#[cfg(unix)]
fn warn_if_others_read(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(mode) = std::fs::metadata(path).map(|m| m.permissions().mode()) else {
        return;
    };
    if mode & 0o044 != 0 {
        eprintln!(
            "agentmem: warning: the token file {} is readable by other users (mode {:o}); `chmod 600 {}` keeps the token yours",
            path.display(),
            mode & 0o777,
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn warn_if_others_read(_path: &std::path::Path) {}
