//! Configuration, layered: defaults < `<data dir>/config.toml` < environment < command line.
//!
//! Later layers (agent, session, request) join as the features that need them land.
//!
//! ```toml
//! # <data dir>/config.toml
//! [storage]
//! durability = "always"   # always | batch | os
//! backend = "files"       # files | postgres (with url = "postgres://user:password@host/db",
//!                         # or AGENTMEM_DATABASE_URL, which selects postgres)
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
use crate::storage::Backend;
use crate::tokens::budget::BudgetSettings;
use crate::tokens::registry::ModelOverride;

/// The file name of the configuration inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";

/// The environment variable that overrides the durability setting.
pub(crate) const DURABILITY_ENV: &str = "AGENTMEM_DURABILITY";

/// The environment variable that selects the PostgreSQL backend at its URL.
pub const DATABASE_URL_ENV: &str = "AGENTMEM_DATABASE_URL";

/// Storage settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// How hard a write is pushed to disk before it returns (files backend).
    #[serde(default)]
    pub durability: Durability,
    /// Where sessions are kept (see [`crate::storage`]).
    #[serde(default)]
    pub backend: Backend,
    /// The database of a database backend (`postgres://user:password@host/db`).
    #[serde(default)]
    pub url: Option<DatabaseUrl>,
}

/// A database URL. It may hold a password, so it shows only with the
/// password masked ([`DatabaseUrl::masked`]); [`DatabaseUrl::expose`]
/// gives it whole, for connecting.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The URL as given.
    pub fn new(url: impl Into<String>) -> DatabaseUrl {
        DatabaseUrl(url.into())
    }

    /// The whole URL, password included: for a database client, never for a message.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with its password (in the user part, or a `password=`
    /// parameter) replaced by `***`.
    pub fn masked(&self) -> String {
        mask_password(&self.0)
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({:?})", self.masked())
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

/// `url` with the password of its user part and of any `password=`
/// parameter replaced by `***` (a key-value connection string's
/// `password=` too).
fn mask_password(url: &str) -> String {
    let mut masked = match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            match authority.rsplit_once('@') {
                Some((user, host)) => match user.split_once(':') {
                    Some((name, _password)) => format!("{scheme}://{name}:***@{host}{path}"),
                    None => url.to_owned(),
                },
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    };
    let mut from = 0;
    while let Some(found) = masked[from..].to_ascii_lowercase().find("password=") {
        let start = from + found + "password=".len();
        let end = masked[start..]
            .find(['&', ' '])
            .map_or(masked.len(), |i| start + i);
        masked.replace_range(start..end, "***");
        from = start + 3;
    }
    masked
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
    /// the environment (`DURABILITY_ENV`; [`DATABASE_URL_ENV`], which selects
    /// the PostgreSQL backend at its URL).
    pub fn load(data_dir: &Path) -> Result<Config> {
        let mut config = Config::load_file(&data_dir.join(CONFIG_FILE))?;
        if let Ok(value) = std::env::var(DURABILITY_ENV) {
            config.storage.durability = value.parse().map_err(|message| Error::Config {
                path: DURABILITY_ENV.to_owned(),
                message,
            })?;
        }
        if let Ok(url) = std::env::var(DATABASE_URL_ENV) {
            if !url.is_empty() {
                config.storage.backend = Backend::Postgres;
                config.storage.url = Some(DatabaseUrl::new(url));
            }
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
    fn database_urls_show_without_their_password() {
        for (url, shown) in [
            (
                "postgres://agent:s3cr%2Ft@db.example:5432/mem?sslmode=require",
                "postgres://agent:***@db.example:5432/mem?sslmode=require",
            ),
            ("postgres://agent@db/mem", "postgres://agent@db/mem"),
            (
                "postgres://db/mem?user=a&password=hunter2&sslmode=disable",
                "postgres://db/mem?user=a&password=***&sslmode=disable",
            ),
            (
                "host=db user=a password=hunter2 dbname=m",
                "host=db user=a password=*** dbname=m",
            ),
        ] {
            let url = DatabaseUrl::new(url);
            assert_eq!(url.masked(), shown);
            assert_eq!(url.to_string(), shown);
            assert!(
                !format!("{url:?}").contains("hunter2") && !format!("{url:?}").contains("s3cr")
            );
        }
    }

    #[test]
    fn the_backend_is_read_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[storage]\nbackend = \"postgres\"\nurl = \"postgres://a:b@h/d\"\n",
        )
        .unwrap();
        let config = Config::load_file(&dir.path().join(CONFIG_FILE)).unwrap();
        assert_eq!(config.storage.backend, Backend::Postgres);
        assert_eq!(config.storage.url.unwrap().expose(), "postgres://a:b@h/d");
    }

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
