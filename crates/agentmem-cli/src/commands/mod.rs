//! One module per subcommand; [`run`] dispatches.

mod bench;
mod bench_cold;
mod bench_load;
mod bench_search;
mod bench_serve;
mod bench_workload;
mod chat;
mod compact;
mod context;
mod eval;
mod evicted;
mod export;
mod facts;
mod import;
mod ingest;
mod json_lines;
mod mcp;
mod memory;
mod migrate;
mod models;
mod prepare;
mod reach_model;
pub mod replay;
mod search;
mod serve;
mod sessions;
mod state;
mod tokens;
mod tools;

use agentmem::{AgentId, Config, Durability, SessionId, Store};
use anyhow::Context as _;

use crate::cli::{Cli, Command, Global};

/// What every command works with: the store, the agent, the output mode.
pub struct Context {
    pub store: Store,
    /// The configured backend's sessions (the store's files by default),
    /// reached on first use: a command that needs no session never connects.
    storage: std::cell::OnceCell<crate::storage::Opened>,
    pub agent: AgentId,
    pub json: bool,
}

impl Context {
    fn new(global: &Global, command: &Command) -> anyhow::Result<Context> {
        let agent = AgentId::new(&global.agent)?;
        let mut config = Config::load(&global.dir)?;
        if config.storage.backend != agentmem::Backend::Files {
            if let Some(feature) = crate::storage::beyond_the_seam(command) {
                return Err(agentmem::Error::NotOnBackend {
                    feature,
                    backend: config.storage.backend.name(),
                }
                .into());
            }
        }
        // From the command line, project memory files are looked for where
        // users keep them, unless the configuration names the folders.
        config
            .memory
            .get_or_insert_with(|| agentmem::memory::project::MemorySettings {
                project_dirs: agentmem::memory::project::default_project_dirs(),
                ..Default::default()
            });
        if let Some(flag) = &global.durability {
            config.storage.durability = flag.parse::<Durability>().map_err(anyhow::Error::msg)?;
        }
        let store = Store::with_config(&global.dir, config);
        // `[embedder]` of config.toml serves every recall: the CLI's, the
        // memory tools', the server's.
        let store = match reach_model::configured_embedder(&store)? {
            Some(embedder) => store.with_embedder(embedder),
            None => store,
        };
        // So does `[llm] reranker_model`, but for `prepare`'s.
        let store = match reach_model::configured_reranker(&store)? {
            Some(reranker) => store.with_reranker(reranker),
            None => store,
        };
        Ok(Context {
            store,
            storage: std::cell::OnceCell::new(),
            agent,
            json: global.json,
        })
    }

    /// Which backend keeps the sessions.
    pub fn backend(&self) -> agentmem::Backend {
        self.store.config().storage.backend
    }

    /// The configured backend's sessions, connected to on first use.
    pub fn storage(&self) -> agentmem::Result<&dyn agentmem::Storage> {
        Ok(&**self.shared_storage()?)
    }

    /// The configured backend's sessions, as sessions opened on it hold them.
    pub fn shared_storage(&self) -> agentmem::Result<&std::sync::Arc<dyn agentmem::Storage>> {
        Ok(&self.opened()?.sessions)
    }

    /// The configured backend's agent memory (the store's files by
    /// default), connected to on first use.
    pub fn memory(&self) -> agentmem::Result<&std::sync::Arc<dyn agentmem::MemoryStorage>> {
        Ok(&self.opened()?.memory)
    }

    fn opened(&self) -> agentmem::Result<&crate::storage::Opened> {
        if let Some(opened) = self.storage.get() {
            return Ok(opened);
        }
        let opened = crate::storage::open(&self.store, &self.store.config().storage)?;
        Ok(self.storage.get_or_init(|| opened))
    }

    /// What `[redaction]` of the configuration redacts (secrets always).
    pub fn redaction(&self) -> agentmem::redact::RedactionPolicy {
        self.store.config().redaction.unwrap_or_default()
    }

    /// Where the memory tools find the agent's memory and history: the
    /// store's files, or the configured backend behind the storage seam.
    pub fn tools_on(&self) -> agentmem::Result<agentmem::tools::ToolsOn<'_>> {
        Ok(match self.backend() {
            agentmem::Backend::Files => agentmem::tools::ToolsOn::StoreFiles,
            agentmem::Backend::Postgres => agentmem::tools::ToolsOn::Seam(self.shared_storage()?),
        })
    }

    /// Opens the session `id` on the configured backend, for writing
    /// (taking its lock) or for reading.
    pub fn open_session(
        &self,
        id: &SessionId,
        access: agentmem::session::Access,
    ) -> agentmem::Result<agentmem::Session> {
        self.store
            .open_session_in(self.shared_storage()?, &self.agent, id, access)
    }

    /// Opens the session `id` on the configured backend for writing.
    pub fn write_session(&self, id: &SessionId) -> agentmem::Result<agentmem::Session> {
        self.open_session(
            id,
            agentmem::session::Access::Write(self.store.durability()),
        )
    }

    /// Opens the session `id` on the configured backend for reading.
    pub fn read_session(&self, id: &SessionId) -> agentmem::Result<agentmem::Session> {
        self.open_session(id, agentmem::session::Access::Read)
    }

    /// Parses a session id given on the command line.
    pub fn session_id(&self, id: &str) -> anyhow::Result<SessionId> {
        SessionId::new(id).with_context(|| format!("bad session id {id:?}"))
    }

    /// Warns that `model`'s limits are guessed when the registry does not
    /// know it: a model smaller than the window assumed would overflow.
    pub fn warn_if_unknown_model(&self, model: &str) {
        if self.store.registry().lookup(model).is_known() {
            return;
        }
        eprintln!(
            "agentmem: warning: model {model:?} is unknown, so its limits are guessed: a {}-token window unless you give one; name its limits with a [[models]] entry in config.toml (model, context_window, max_output_tokens)",
            agentmem::tokens::registry::DEFAULT_CONTEXT_WINDOW
        );
    }

    /// Prints what opening a session repaired.
    pub fn report_recoveries(&self, session: &agentmem::Session) {
        for recovery in session.recoveries() {
            eprintln!("agentmem: warning: {recovery}");
            if let Some(hint) = crate::hints::for_recovery(recovery) {
                eprintln!("agentmem: hint: {hint}");
            }
        }
    }
}

/// The exit status of a command that stored its input but for some lines it
/// rejected (each named on stderr): `EX_DATAERR` of `sysexits.h`, "the input
/// data was incorrect".
pub const INPUT_REJECTED_EXIT: u8 = 65;

/// A command's input had lines it could not take; everything else was
/// stored. The command ends with [`INPUT_REJECTED_EXIT`].
#[derive(Debug)]
pub struct InputRejected {
    /// How many lines were rejected.
    pub lines: usize,
    /// Whether anything was stored (an input of nothing but bad lines
    /// creates no session).
    pub stored: Stored,
}

/// What became of the rest of an input some lines of which were rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// The other lines were stored.
    TheRest,
    /// Nothing was left to store: no session was created.
    Nothing,
}

impl std::fmt::Display for InputRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines = match self.lines {
            1 => "1 line".to_owned(),
            n => format!("{n} lines"),
        };
        match self.stored {
            Stored::TheRest => write!(f, "{lines} of the input rejected (named above); the rest was stored"),
            Stored::Nothing => write!(f, "{lines} of the input rejected (named above); nothing was left to store, so no session was created"),
        }
    }
}

impl std::error::Error for InputRejected {}

/// Runs the command `cli` names.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(work) = tables_ahead(&cli.command) {
        // On a spare core, while this one opens the store: the command's
        // first use of a table then finds it built, or waits for the build.
        // Without a thread to be had, the command builds them itself.
        let _ = std::thread::Builder::new()
            .name("tables-ahead".into())
            .spawn(move || agentmem::ahead::build_tables(work));
    }
    let ctx = Context::new(&cli.global, &cli.command)?;
    // A command counts mostly words earlier commands counted: with their
    // counts kept in the data directory, it need not load an encoding.
    // `search` counts none, so it does not read them.
    let counts_tokens = !matches!(cli.command, Command::Search { .. });
    let kept = counts_tokens.then(|| ctx.store.load_kept_token_counts());
    let root = ctx.store.root().to_path_buf();
    let dry_run = matches!(cli.command, Command::Prepare { dry_run: true, .. });
    let done = run_command(ctx, cli.command);
    // Only into a data directory that exists (a command such as `tokens`
    // makes none), never from a dry run, and as a cache: a failed write
    // costs the next command time, never data.
    if let Some(kept) = kept.filter(|_| root.is_dir() && !dry_run) {
        let _ = kept.save();
    }
    done
}

/// The tables `command` builds before it is done, for the query commands
/// scripts and hooks run as short processes.
fn tables_ahead(command: &Command) -> Option<agentmem::ahead::Work> {
    use agentmem::{ahead::Work, Encoding};
    match command {
        Command::Recall { model, .. } => Some(Work::Recall(Encoding::for_model(model))),
        // Without a model named, the session's own: most likely o200k's.
        Command::Context { model, .. } | Command::Prepare { model, .. } => {
            Some(Work::BuildContext(
                model
                    .model
                    .as_deref()
                    .map_or(Encoding::O200kBase, Encoding::for_model),
            ))
        }
        _ => None,
    }
}

fn run_command(ctx: Context, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Ingest { session, ack } => ingest::run(&ctx, session.as_deref(), ack),
        Command::Import {
            path,
            format,
            session,
        } => import::run(&ctx, &path, &format, session.as_deref()),
        Command::Sessions(command) => sessions::run(&ctx, command),
        Command::Export { id, format } => export::run(&ctx, &id, format),
        Command::Tools { id, turn } => tools::run(&ctx, &id, turn.as_deref()),
        Command::Context { id, model } => context::run(&ctx, &id, &model),
        Command::Prepare {
            id,
            model,
            tools,
            prompt,
            stats,
            dry_run,
        } => {
            let output = match (dry_run, stats) {
                (true, _) => prepare::Output::DryRun,
                (false, true) => prepare::Output::PayloadAndStats,
                (false, false) => prepare::Output::Payload,
            };
            prepare::run(&ctx, &id, &model, tools.as_deref(), prompt, output)
        }
        Command::Tokens { encoding, model } => {
            tokens::run(&ctx, encoding.as_deref(), model.as_deref())
        }
        Command::Models { names } => models::run(&ctx, &names),
        Command::Compact {
            id,
            focus,
            from_raw,
            keep_turns,
        } => compact::run(&ctx, &id, focus, from_raw, keep_turns),
        Command::Evicted {
            id,
            call_id,
            offset,
            limit,
        } => evicted::run(&ctx, &id, &call_id, offset, limit),
        Command::Memory(command) => memory::run(&ctx, command),
        Command::State(args) => state::run(&ctx, &args),
        Command::Facts(command) => facts::run(&ctx, command),
        Command::Search {
            query,
            session,
            role,
            since,
            until,
            limit,
        } => search::search(
            &ctx,
            &query,
            search::Filters {
                session,
                role,
                since,
                until,
                limit,
            },
        ),
        Command::Recall {
            query,
            budget,
            session,
            model,
            embedder,
            wait_for_vectors,
            reranker,
        } => {
            let mut request = agentmem::RecallRequest::new(query, budget);
            request.exclude_session = session;
            let backlog = match wait_for_vectors {
                true => search::Backlog::EmbedFirst,
                false => search::Backlog::RankByWords,
            };
            search::recall(&ctx, request, &model, &embedder, backlog, &reranker)
        }
        Command::Eval(command) => eval::run(&ctx, command),
        Command::Chat(args) => chat::run(&ctx, &args),
        Command::Mcp { session } => mcp::run(&ctx, session.as_deref()),
        Command::Serve(args) => serve::run(ctx, &args),
        Command::Replay(args) => replay::run(&ctx, &args),
        Command::Bench(args) => bench::run(
            &args,
            &bench::Backing {
                settings: &ctx.store.config().storage,
                agent: &ctx.agent,
            },
            ctx.store.durability(),
            ctx.json,
        ),
        Command::Migrate(args) => migrate::run(&ctx, &args),
    }
}
