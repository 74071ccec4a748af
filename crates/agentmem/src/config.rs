//! Configuration, layered: defaults < `<data dir>/config.toml` < environment < command line.
//!
//! Later layers (agent, session, request) join as the features that need them land.
//!
//! ```toml
//! # <data dir>/config.toml
//! [storage]
//! durability = "always"   # always | batch | os
//!
//! [budget]                # also in agents/<id>/config.toml and <session dir>/config.toml
//! safety_margin = 13000  # default: an eighth of the window, at most 13,000
//! trigger_ratio = 0.8
//!
//! [context]               # also per agent and per session, like [budget]
//! strategy = "auto"       # none | trim | summarize | placeholder | auto
//! keep_tool_results = 5
//! raw_tail_turns = 4
//! protected_tools = ["manage_todo_list"]
//! compaction_timing = "inline"   # or "background": drafted while the model answers
//! memory = "on"           # "off": no long-term memory injected (a request may choose)
//!
//! [guard]                 # how tool outputs are cut when written (also per agent / session)
//! truncation = { policy = "tokens", limit = 5000 }   # or "bytes", or { policy = "none" }
//! evict_over_tokens = 20000
//!
//! [memory]                # what is injected into every context
//! project_dirs = ["/etc/agentmem", "/home/me/.agentmem", "."]   # AGENT.md, MEMORY.md, .agent-context.md
//! injected_lines = 200    # of the agent's MEMORY.md
//! injected_tokens = 4000
//!
//! [redaction]             # of long-term memory, titles and recall; secrets always
//! emails = true
//! phones = true
//! cards = true
//! ssns = true
//! ibans = true
//!
//! [llm]                   # what `agentmem chat` talks to (its flags win)
//! model = "gpt-4.1"
//! base_url = "http://localhost:11434/v1"   # an OpenAI-compatible server
//! api_key_env = "WORK_OPENAI_KEY"          # the variable holding the key (never the key)
//! summarizer_model = "gpt-4.1-mini"
//! reranker_model = "gpt-4.1-mini"          # reads each recall's best candidates (not prepare's)
//!
//! [embedder]              # vectors that join BM25 in recall (absent: lexical recall)
//! dir = "/opt/models/all-MiniLM-L6-v2"   # a sentence-transformers model, run in process
//! # or: url = "http://127.0.0.1:8088/v1" # an OpenAI-compatible embeddings API
//! model = "all-MiniLM-L6-v2"              # what its vectors are stored under
//! api_key_env = "OPENAI_API_KEY"          # only if the server wants a key
//!
//! [[models]]              # your own limits for a model, over the built-in registry
//! model = "my-local-llama"
//! context_window = 32768
//! max_output_tokens = 4096
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::base::error::{Error, IoContext, Result};
use crate::files::jsonl::Durability;
use crate::memory::project::MemorySettings;
use crate::pipeline::guard::GuardPolicy;
use crate::pipeline::strategy::ContextSettingsLayer;
use crate::redact::RedactionPolicy;
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelOverride;

/// The file name of the configuration inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";

/// The environment variable that overrides the durability setting.
pub(crate) const DURABILITY_ENV: &str = "AGENTMEM_DURABILITY";

/// Storage settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// How hard a write is pushed to disk before it returns.
    #[serde(default)]
    pub durability: Durability,
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Storage settings.
    #[serde(default)]
    pub storage: StorageConfig,
    /// Budget settings (the config-file layer).
    #[serde(default)]
    pub budget: BudgetSettings,
    /// Pipeline settings (the config-file layer).
    #[serde(default)]
    pub context: ContextSettingsLayer,
    /// The write-time guard; the most specific file that sets it wins.
    #[serde(default)]
    pub guard: Option<GuardPolicy>,
    /// Memory injected into every context; the most specific file that sets it wins.
    #[serde(default)]
    pub memory: Option<MemorySettings>,
    /// Personal data redacted before anything enters long-term memory or a
    /// title, and from what recall shows (secrets always are).
    #[serde(default)]
    pub redaction: Option<RedactionPolicy>,
    /// Models added to the registry, or entries of it overridden.
    #[serde(default)]
    pub models: Vec<ModelOverride>,
    /// The model endpoint of `agentmem chat`.
    #[serde(default)]
    pub llm: LlmSettings,
    /// The embeddings endpoint of recall's vector score.
    #[serde(default)]
    pub embedder: EmbedderSettings,
}

/// Where recall's vectors come from: a model folder run in process, or an
/// OpenAI-compatible embeddings API. The engine only reads these; the CLI
/// and server make the embedder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderSettings {
    /// A model folder to run in process.
    pub dir: Option<std::path::PathBuf>,
    /// An OpenAI-compatible embeddings endpoint.
    pub url: Option<String>,
    /// The embedding model to ask the endpoint for.
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
}

/// Where model calls go. Keys are never configured, only the name of the
/// environment variable that holds one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// The chat model.
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// The model that writes compaction summaries, when not the chat model.
    pub summarizer_model: Option<String>,
    /// The model that reads each recall's best candidates and puts first
    /// those that answer (see [`crate::memory::recall::Reranker`]); absent: the
    /// hybrid's order. `prepare` never asks it.
    pub reranker_model: Option<String>,
}

impl Config {
    /// Reads `<data_dir>/config.toml` (defaults when it is absent), then applies
    /// the environment (`DURABILITY_ENV`).
    pub fn load(data_dir: &Path) -> Result<Config> {
        let mut config = Config::load_file(&data_dir.join(CONFIG_FILE))?;
        if let Ok(value) = std::env::var(DURABILITY_ENV) {
            config.storage.durability = value.parse().map_err(|message| Error::Config {
                path: DURABILITY_ENV.to_owned(),
                message,
            })?;
        }
        Ok(config)
    }

    /// Reads one configuration file; a missing file is the empty configuration.
    pub(crate) fn load_file(path: &Path) -> Result<Config> {
        let config: Config = match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).map_err(|e| Error::Config {
                path: path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(e).io("read", path),
        };
        config.budget.validate().map_err(|message| Error::Config {
            path: path.display().to_string(),
            message,
        })?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durability_reads_back_from_its_name() {
        for durability in [Durability::Always, Durability::Batch, Durability::Os] {
            assert_eq!(durability.to_string().parse(), Ok(durability));
        }
    }

    #[test]
    fn reads_durability_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[storage]\ndurability = \"os\"\n",
        )
        .unwrap();
        let config: Config =
            toml::from_str(&std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap())
                .unwrap();
        assert_eq!(config.storage.durability, Durability::Os);
    }

    #[test]
    fn an_unknown_key_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[storage]\ndurabilty = \"os\"\n",
        )
        .unwrap();
        let err = Config::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("durabilty"), "{err}");
    }
}
