//! `agentmem eval locomo`: evidence recall on LoCoMo beside two baselines.

use agentmem::recall::{Embedder, Reranker};
use agentmem::tokens::Encoding;

use super::{reach_model, Context};
use crate::cli::EvalCommand;
use crate::eval::locomo;
use crate::output::{print_json, print_table};

pub fn run(ctx: &Context, command: EvalCommand) -> anyhow::Result<()> {
    match command {
        EvalCommand::Locomo {
            path,
            budgets,
            embedder,
            reranker,
        } => {
            let conversations = locomo::read(&path)?;
            let scratch = std::env::temp_dir();
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
            let questions = locomo::questions_to_score(&conversations) * budgets.len();
            let bar = crate::progress::bar(questions as u64, "evaluating questions");
            let reports = budgets
                .iter()
                .map(|budget| {
                    locomo::evaluate(
                        &conversations,
                        *budget,
                        &scratch,
                        tokenizer,
                        embedder,
                        reranker,
                        &mut || bar.inc(1),
                    )
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
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
        "LoCoMo evidence recall at {} tokens ({how}): {} conversations, {} questions ({} skipped, {} unknown evidence ids)",
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
            row.push(format!("{:.0}", score.mean_tokens));
            row
        })
        .collect();
    print_table(
        &[
            "METHOD", "RECALL", "CAT 1", "CAT 2", "CAT 3", "CAT 4", "TOKENS",
        ],
        &rows,
    );
    println!();
}
