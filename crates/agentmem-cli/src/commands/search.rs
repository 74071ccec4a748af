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

pub fn recall(
    ctx: &Context,
    query: &str,
    budget: u64,
    session: Option<String>,
    model: &str,
    embedder: &EmbedderArgs,
    reranker: &RerankerArgs,
) -> anyhow::Result<()> {
    if let Some(session) = &session {
        ctx.session_id(session)?;
    }
    let mut request = RecallRequest::new(query, budget);
    request.exclude_session = session;
    let tokenizer = Encoding::for_model(model).tokenizer();
    let named = reach_model::embedder(&ctx.store, embedder)?;
    let embedder = match named {
        Some(embedder) => Some(embedder),
        None => reach_model::configured_embedder(&ctx.store)?,
    };
    let mut store = ctx.store.clone();
    let mut bar = None;
    if let Some(embedder) = embedder {
        let (shown, progress) = embedding_shown(ctx, embedder)?;
        store = store.with_embedder(shown);
        bar = progress;
    }
    if let Some(reranker) = reach_model::reranker(&ctx.store, reranker)? {
        store = store.with_reranker(reranker);
    }
    let recalled = store.recall_on(ctx.storage()?, &ctx.agent, &request, tokenizer);
    bar.inspect(indicatif::ProgressBar::finish_and_clear);
    let recalled = recalled?;
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
/// not embedded yet (the first recall with it embeds them all), and the bar.
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
