//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Measure append throughput, session open time and import speed.
    Bench(BenchArgs),
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

#[derive(Debug, Args)]
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
}
