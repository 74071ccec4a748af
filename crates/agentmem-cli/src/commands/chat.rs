//! `agentmem chat`: a terminal conversation whose context agentmem builds
//! every turn. The model gets the memory tools and the working-memory tools
//! and agentmem runs them (the working-memory ones on the session this chat
//! holds open); the session is saved as it goes, so `--resume` continues it
//! (and `--fork` continues a copy).

use std::io::{BufRead, Write};

use agentmem::memory::facts::FactStore;
use agentmem::memory::notebook::Notebook;
use agentmem::search::render_hits;
use agentmem::{
    tools, CompactOptions, Event, PrepareRequest, SearchFilter, Session, SessionId, TraceType,
};
use agentmem_llm::{call_model, Client, Delivery};
use anyhow::Context as _;

use super::reach_model::{self, ModelFlags};
use super::Context;
use crate::cli::ChatArgs;

/// Model calls per user message at most (tool rounds included).
const MAX_ROUNDS: usize = 8;

const HELP: &str = "/compact [focus]  compact now\n/context          where the context stands\n/search QUERY     search this agent's history\n/memory           show MEMORY.md\n/state            show the working memory\n/facts            list the agent's facts\n/sessions         list the agent's sessions\n/fork             continue in a copy of this session\n/quit             leave (the session is saved)";

pub fn run(ctx: &Context, args: &ChatArgs) -> anyhow::Result<()> {
    let flags = ModelFlags {
        model: args.model.clone(),
        target: args.target.clone(),
        base_url: args.base_url.clone(),
        api_key_env: args.api_key_env.clone(),
        summarizer_model: args.summarizer_model.clone(),
    };
    let endpoint = reach_model::endpoint(&ctx.store, &flags)?;
    let (model, target) = (endpoint.model.clone(), endpoint.target);
    ctx.warn_if_unknown_model(&model);
    let client = Client::new(endpoint.clone())?;
    let mut session = open(ctx, args)?;
    if let Some(summarizer) = reach_model::summarizer(ctx, &flags, &endpoint) {
        session.set_summarizer(Box::new(summarizer.build()?));
    }
    eprintln!(
        "agentmem: session {} with {} ({}); /help lists the commands",
        session.id(),
        model,
        target.name()
    );
    let mut request = PrepareRequest::new(&model, target);
    request.system = args.system.clone();
    request.tools = tools::session_schemas();
    request.cache = args.cache.prompt_cache;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        eprint!("> ");
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let done = match line.strip_prefix('/') {
            Some(command) => slash(ctx, &mut session, &request, command),
            None => say(ctx, &mut session, &client, &request, line, !args.no_stream),
        };
        // A failed call or command changes nothing the session holds: say
        // what went wrong and keep the prompt.
        match done {
            Ok(Next::Continue) => {}
            Ok(Next::Quit) => break,
            Err(error) => eprintln!("agentmem: error: {error:#}"),
        }
    }
    eprintln!("agentmem: session {} saved", session.id());
    Ok(session.close()?)
}

/// The session to talk in: a new one, the one resumed, or a fork of it.
fn open(ctx: &Context, args: &ChatArgs) -> anyhow::Result<Session> {
    let Some(id) = &args.resume else {
        return Ok(ctx
            .store
            .create_session_in(ctx.shared_storage()?, &ctx.agent, None)?);
    };
    let id = ctx.session_id(id)?;
    if args.fork {
        return fork(ctx, &id);
    }
    Ok(ctx.write_session(&id)?)
}

/// A new fork of all of session `id`, opened for writing.
fn fork(ctx: &Context, id: &SessionId) -> anyhow::Result<Session> {
    let new_id = SessionId::generate();
    ctx.storage()?.fork_session(&ctx.agent, id, None, &new_id)?;
    Ok(ctx.write_session(&new_id)?)
}

/// Records what the user said and has the model answer it.
fn say(
    ctx: &Context,
    session: &mut Session,
    client: &Client,
    request: &PrepareRequest,
    line: &str,
    stream: bool,
) -> anyhow::Result<Next> {
    session.ingest(vec![Event::user(line)])?;
    answer(ctx, session, client, request, stream)
        .context("the model did not answer; your message is kept in the session")?;
    Ok(Next::Continue)
}

/// Calls the model until it answers without asking for tools (or the rounds run out).
fn answer(
    ctx: &Context,
    session: &mut Session,
    client: &Client,
    request: &PrepareRequest,
    stream: bool,
) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout();
    for _ in 0..MAX_ROUNDS {
        let completion = if stream {
            let mut print = |text: &str| {
                let _ = write!(stdout, "{text}");
                let _ = stdout.flush();
            };
            call_model(session, client, request, Delivery::Streamed(&mut print))?
        } else {
            let completion = call_model(session, client, request, Delivery::Whole)?;
            for event in completion.events.iter() {
                if event.trace_type == TraceType::Assistant {
                    write!(stdout, "{}", event.content)?;
                }
            }
            completion
        };
        writeln!(stdout)?;
        let calls: Vec<&Event> = completion
            .events
            .iter()
            .filter(|e| e.trace_type == TraceType::ToolCall)
            .collect();
        if calls.is_empty() {
            return Ok(());
        }
        let mut results = Vec::new();
        for call in calls {
            let name = call.tool_name.as_deref().unwrap_or_default();
            let arguments = call.tool_args.clone().unwrap_or_default();
            let call_id = call.tool_call_id.clone().unwrap_or_default();
            eprintln!("agentmem: running {name}");
            let output = tools::run_in_session(
                &ctx.store,
                &ctx.agent,
                ctx.tools_on()?,
                session,
                name,
                &arguments,
            );
            results.push(match output {
                Some(output) => Event::tool_result(call_id, output),
                None => Event::tool_error(
                    call_id,
                    format!("unknown tool {name:?}: this chat offers only the memory tools"),
                ),
            });
        }
        session.ingest(results)?;
    }
    eprintln!("agentmem: stopped after {MAX_ROUNDS} model calls for one message");
    Ok(())
}

/// What the loop does after a slash command.
enum Next {
    Continue,
    Quit,
}

fn slash(
    ctx: &Context,
    session: &mut Session,
    request: &PrepareRequest,
    command: &str,
) -> anyhow::Result<Next> {
    let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
    let rest = rest.trim();
    match name {
        "quit" | "exit" => return Ok(Next::Quit),
        "compact" => {
            let spinner = indicatif::ProgressBar::new_spinner().with_message("compacting");
            spinner.enable_steady_tick(std::time::Duration::from_millis(100));
            let options = CompactOptions {
                focus: (!rest.is_empty()).then(|| rest.to_owned()),
                ..CompactOptions::default()
            };
            let report = session.compact(&options);
            spinner.finish_and_clear();
            print!("{}", super::compact::describe(&report?));
        }
        "context" => {
            let stats = session.prepare(request)?.stats;
            print!(
                "{}",
                super::context::report(session, ctx.store.registry(), &stats)
            );
        }
        "search" => {
            let hits =
                ctx.store
                    .search_on(ctx.storage()?, &ctx.agent, rest, &SearchFilter::default())?;
            println!("{}", render_hits(&hits));
        }
        "memory" => {
            let notebook = Notebook::on(ctx.memory()?.clone(), &ctx.agent, ctx.redaction());
            println!("{}", notebook.read()?.content);
        }
        "state" => {
            let state = session.working_memory();
            println!(
                "version {}\n{}",
                state.version,
                serde_json::to_string_pretty(&state.document)?
            );
        }
        "facts" => {
            let facts = FactStore::on(ctx.memory()?.clone(), &ctx.agent, ctx.redaction());
            for fact in facts.current()? {
                println!("- {} ({})", fact.fact, fact.id);
            }
        }
        "sessions" => {
            for meta in ctx.storage()?.list_sessions(&ctx.agent)? {
                let mark = if meta.id == session.id().as_str() {
                    '*'
                } else {
                    ' '
                };
                println!("{mark} {} {}", meta.id, meta.title.unwrap_or_default());
            }
        }
        "fork" => {
            let fork = fork(ctx, session.id())?;
            let left = std::mem::replace(session, fork);
            println!("now in {} (forked from {})", session.id(), left.id());
            left.close()?;
        }
        _ => println!("{HELP}"),
    }
    Ok(Next::Continue)
}
