//! `agentmem eval locomo`: evidence recall on LoCoMo beside two baselines.

use std::path::{Path, PathBuf};

use agentmem::{Embedder, Encoding, Reranker};

use super::{reach_model, Context};
use crate::cli::EvalCommand;
use crate::eval::locomo;
use crate::output::{print_json, print_table};

pub fn run(ctx: &Context, command: EvalCommand) -> anyhow::Result<()> {
    match command {
        EvalCommand::Locomo {
            paths,
            scratch,
            budgets,
            embedder,
            reranker,
        } => {
            let datasets = paths
                .iter()
                .map(|path| Ok((dataset_name(path), locomo::read(path)?)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let scratch = scratch.unwrap_or_else(default_scratch);
            // On a database backend, the conversations are ingested into it
            // (as agents of their own, removed afterwards) and recalled from its index.
            let database = match ctx.backend() {
                agentmem::Backend::Files => None,
                agentmem::Backend::Postgres => Some(ctx.shared_storage()?),
            };
            let tokenizer = Encoding::O200kBase.tokenizer();
            let named = reach_model::embedder(&ctx.store, &embedder)?;
            let embedder = named
                .as_deref()
                .or(ctx.store.embedder())
                .map(|e| e as &dyn Embedder);
            let named_reranker = reach_model::reranker(&ctx.store, &reranker)?;
            let reranker = named_reranker
                .as_deref()
                .or(ctx.store.reranker())
                .map(|r| r as &dyn Reranker);
            let questions: usize = datasets
                .iter()
                .map(|(_, conversations)| locomo::questions_to_score(conversations))
                .sum();
            let bar =
                crate::progress::bar((questions * budgets.len()) as u64, "evaluating questions");
            let mut reports = Vec::new();
            for (name, conversations) in &datasets {
                reports.extend(locomo::evaluate(
                    name,
                    conversations,
                    &budgets,
                    &scratch,
                    database,
                    tokenizer,
                    embedder,
                    reranker,
                    &mut || bar.inc(1),
                )?);
            }
            bar.finish_and_clear();
            if ctx.json {
                return match &reports[..] {
                    [one] => print_json(one),
                    many => print_json(&many),
                };
            }
            reports.iter().for_each(print_report);
            Ok(())
        }
    }
}

/// A dataset's name in the report: its file's name.
fn dataset_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Where scratch stores go by default: memory (`/dev/shm`) where the system
/// has it, as an evaluation writes thousands of small files it deletes.
fn default_scratch() -> PathBuf {
    let memory = Path::new("/dev/shm");
    match tempfile::tempdir_in(memory) {
        Ok(_) => memory.to_path_buf(),
        Err(_) => std::env::temp_dir(),
    }
}

fn print_report(report: &locomo::LocomoReport) {
    let mut how = report
        .embedder
        .as_ref()
        .map_or("lexical".to_owned(), |model| {
            format!("with {model} vectors")
        });
    if let Some(model) = &report.reranker {
        how.push_str(&format!(", reranked by {model}"));
    }
    println!(
        "{}: evidence recall at {} tokens ({how}): {} conversations, {} questions ({} skipped, {} unknown evidence ids)",
        report.dataset,
        report.budget_tokens,
        report.conversations,
        report.questions,
        report.skipped_questions,
        report.unknown_evidence
    );
    let methods = [
        ("agentmem", &report.agentmem),
        ("bm25", &report.bm25),
        ("trimming", &report.trimming),
    ];
    let rows: Vec<Vec<String>> = methods
        .iter()
        .map(|(name, score)| {
            let mut row = vec![name.to_string(), format!("{:.3}", score.recall)];
            row.extend(locomo::SCORED_CATEGORIES.iter().map(|c| {
                score
                    .by_category
                    .get(c)
                    .map_or("-".into(), |s| format!("{:.3}", s.recall))
            }));
            row.push(format!("{:.3}", score.passage_recall));
            row.push(format!("{:.0}", score.mean_tokens));
            row
        })
        .collect();
    print_table(
        &[
            "METHOD", "RECALL", "CAT 1", "CAT 2", "CAT 3", "CAT 4", "PASSAGES", "TOKENS",
        ],
        &rows,
    );
    print_by_type(&methods);
    println!();
}

/// Recall by the dataset's own type of question, when it has them.
fn print_by_type(methods: &[(&str, &locomo::MethodScore)]) {
    let Some((_, first)) = methods.first() else {
        return;
    };
    if first.by_type.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = first
        .by_type
        .iter()
        .map(|(kind, counted)| {
            let mut row = vec![kind.clone(), counted.questions.to_string()];
            row.extend(methods.iter().map(|(_, score)| {
                score
                    .by_type
                    .get(kind)
                    .map_or("-".into(), |s| format!("{:.3}", s.recall))
            }));
            row
        })
        .collect();
    let mut headers = vec!["QUESTION TYPE".to_owned(), "QUESTIONS".to_owned()];
    headers.extend(methods.iter().map(|(name, _)| name.to_uppercase()));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    println!();
    print_table(&headers, &rows);
}
