//! `agentmem search` and `agentmem recall`: the agent's history and memory,
//! searched and recalled.

use std::sync::Arc;

use agentmem::search::{parse_date, render_hits};
use agentmem::{Encoding, RecallRequest, SearchFilter, SearchRole};

use super::{reach_model, Context};
use crate::cli::{EmbedderArgs, RerankerArgs};
use crate::output::{print_json, print_table};

/// The filters `agentmem search` takes, as typed.
pub struct Filters {
    pub session: Option<String>,
    pub role: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub limit: usize,
}

pub fn search(ctx: &Context, query: &str, filters: Filters) -> anyhow::Result<()> {
    if let Some(session) = &filters.session {
        ctx.session_id(session)?;
    }
    let filter = SearchFilter {
        session: filters.session,
        role: filters.role.as_deref().map(SearchRole::parse).transpose()?,
        since: filters.since.as_deref().map(parse_date).transpose()?,
        until: filters.until.as_deref().map(parse_date).transpose()?,
        limit: filters.limit,
    };
    let hits = ctx
        .store
        .search_on(ctx.storage()?, &ctx.agent, query, &filter)?;
    if ctx.json {
        return print_json(&hits);
    }
    println!("{}", render_hits(&hits));
    Ok(())
}

/// What a recall with an embedder does with the documents not embedded yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backlog {
    /// Embeds them first, showing progress.
    EmbedFirst,
    /// Ranks them by their words; the background embedder gets to them.
    RankByWords,
}

pub fn recall(
    ctx: &Context,
    request: RecallRequest,
    model: &str,
    embedder: &EmbedderArgs,
    backlog: Backlog,
    reranker: &RerankerArgs,
) -> anyhow::Result<()> {
    if let Some(session) = &request.exclude_session {
        ctx.session_id(session)?;
    }
    let budget = request.budget_tokens;
    let tokenizer = Encoding::for_model(model).tokenizer();
    let named = reach_model::embedder(&ctx.store, embedder)?;
    let embedder = match named {
        Some(embedder) => Some(embedder),
        None => reach_model::configured_embedder(&ctx.store)?,
    };
    let mut store = ctx.store.clone();
    if let Some(reranker) = reach_model::reranker(&ctx.store, reranker)? {
        store = store.with_reranker(reranker);
    }
    match (embedder, backlog) {
        (None, Backlog::EmbedFirst | Backlog::RankByWords) => {}
        (Some(embedder), Backlog::RankByWords) => store = store.with_embedder(embedder),
        (Some(embedder), Backlog::EmbedFirst) => {
            let (shown, bar) = embedding_shown(ctx, embedder)?;
            store = store.with_embedder(shown);
            let embedded = store.embed_pending_in(ctx.shared_storage()?, &ctx.agent);
            bar.inspect(indicatif::ProgressBar::finish_and_clear);
            embedded?;
        }
    }
    let recalled = store.recall_on(ctx.storage()?, &ctx.agent, &request, tokenizer)?;
    if ctx.json {
        return print_json(&recalled);
    }
    let rows: Vec<Vec<String>> = recalled
        .items
        .iter()
        .map(|item| {
            vec![
                format!("{:.3}", item.score),
                format!("{:.2}", item.bm25),
                format!("{:?}", item.kind).to_lowercase(),
                format!("{}/{}", item.session, item.source),
                item.text.chars().take(60).collect(),
            ]
        })
        .collect();
    print_table(&["SCORE", "BM25", "KIND", "SOURCE", "TEXT"], &rows);
    if let Some(coverage) = recalled.embedding.as_ref().filter(|c| c.unembedded > 0) {
        let why = coverage
            .failing
            .as_deref()
            .map_or(String::new(), |failing| {
                format!(" (the embedder fails: {failing})")
            });
        eprintln!(
            "{} documents have no {} vector yet and were ranked by their words{why}; --wait-for-vectors embeds them first",
            coverage.unembedded, coverage.model
        );
    }
    println!(
        "\n{} of {} matches, {} tokens of {budget}:\n\n{}",
        recalled.items.len(),
        recalled.considered,
        recalled.tokens,
        recalled.block
    );
    Ok(())
}

/// `embedder`, showing its progress when the history has documents it has
/// not embedded yet (a wait for them embeds them all), and the bar.
fn embedding_shown(
    ctx: &Context,
    embedder: reach_model::Embedding,
) -> anyhow::Result<(reach_model::Embedding, Option<indicatif::ProgressBar>)> {
    // The backlog is counted on the files index; a database's is embedded unshown.
    if ctx.backend() != agentmem::Backend::Files {
        return Ok((embedder, None));
    }
    let index = ctx.store.history_index(&ctx.agent)?;
    let backlog = index.unembedded_documents(embedder.model())?;
    if backlog == 0 {
        return Ok((embedder, None));
    }
    let bar = crate::progress::bar(backlog, "embedding the history");
    let shown = crate::progress::EmbeddingShown::new(embedder, bar.clone());
    Ok((Arc::new(shown), Some(bar)))
}
