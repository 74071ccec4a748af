//! `eval locomo` on a small conversation in LoCoMo's shape, malformed
//! evidence ids included.

use std::path::Path;

use agentmem::Encoding;

use super::{
    finish, parse_session_date, recall, repair_evidence, tally, Evidence, MethodScore, Question,
    Recalled,
};
use crate::eval::locomo;

fn mini() -> Vec<locomo::Conversation> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/locomo/mini.json");
    locomo::read(&path).unwrap()
}

#[test]
fn the_dataset_is_read_with_dates_and_repaired_evidence_ids() {
    let conversations = mini();
    let conversation = &conversations[0];
    assert_eq!(conversation.sample_id, "mini-1");
    assert_eq!(conversation.sessions.len(), 3);
    assert_eq!(
        agentmem::base::event::format_ts(conversation.sessions[1].ts),
        "2024-03-17T19:40:00.000Z"
    );
    let evidence: Vec<&[String]> = conversation
        .questions
        .iter()
        .map(|q| q.evidence.as_slice())
        .collect();
    assert_eq!(evidence[1], ["D1:6"]);
    assert_eq!(evidence[2], ["D2:1"]);
    assert_eq!(evidence[3], ["D2:6", "D3:11"]);
    let image = &conversation.sessions[0].turns[2];
    assert_eq!(
        image.image_caption.as_deref(),
        Some("a photo of a grey dog running on grass")
    );
}

#[test]
fn recall_beats_trimming_and_plain_bm25_under_a_tight_budget() {
    let scratch = tempfile::tempdir().unwrap();
    let tokenizer = Encoding::O200kBase.tokenizer();
    let mut done = 0;
    let reports = locomo::evaluate(
        "mini.json",
        &mini(),
        &[120, 1_000],
        scratch.path(),
        None,
        tokenizer,
        None,
        None,
        &mut || done += 1,
    )
    .unwrap();
    let (report, generous) = (&reports[0], &reports[1]);
    assert_eq!((report.budget_tokens, generous.budget_tokens), (120, 1_000));
    assert_eq!(report.dataset, "mini.json");
    // Every question of a scored category is reported done, once a budget.
    assert_eq!(done, 2 * locomo::questions_to_score(&mini()));
    assert_eq!(done, 2 * (report.questions + report.skipped_questions));
    // Category 5 is not scored; an empty evidence list is skipped; D9:9 names no turn.
    assert_eq!(
        (
            report.questions,
            report.skipped_questions,
            report.unknown_evidence
        ),
        (5, 1, 1)
    );
    for score in [&report.agentmem, &report.bm25, &report.trimming] {
        assert!(score.mean_tokens <= 120.0, "{score:?}");
    }
    assert_eq!(report.trimming.recalled, 0, "the evidence is all early");
    // "Why did Ben choose the cello?" is answered by the reply after the line that matches.
    assert_eq!(report.agentmem.by_category[&4].recall, 1.0);
    assert_eq!(report.bm25.by_category[&4].recall, 0.5);
    assert!(report.agentmem.recall >= report.bm25.recall);
    assert!(report.misses.iter().all(|m| !m.missing.is_empty()));
    assert!(
        std::fs::read_dir(scratch.path()).unwrap().next().is_none(),
        "scratch stores removed"
    );

    assert_eq!(generous.agentmem.recall, 1.0);
    assert_eq!(generous.trimming.recall, 1.0);
}

/// A long evidence turn the context shows only in part counts as recalled
/// by its matching passage, never by the whole-turn rule.
#[test]
fn a_turn_shown_by_its_matching_passage_counts_for_passages_only() {
    let filler = "We talked about the weather and the garden for a while. ".repeat(12);
    let turn = format!("{filler}\nMy sourdough starter needs rye flour twice a day.\n{filler}");
    let question = Question {
        question: "What does my sourdough starter need?".into(),
        category: 1,
        question_type: None,
        asked_at: None,
        evidence: vec!["D1:1".into()],
    };
    let passage = recall::matching_passage(&turn, &question.question).unwrap();
    assert!(passage.contains("sourdough starter"), "{passage}");
    let context = |block: String| Recalled {
        items: Vec::new(),
        considered: 0,
        tokens: 10,
        block,
        embedding: None,
    };
    let evidence = Evidence {
        turns: &[turn.as_str()],
        passages: std::slice::from_ref(&passage),
    };
    let mut score = MethodScore::default();
    tally(
        &mut score,
        &question,
        &context(format!("A: …{passage}…")),
        &evidence,
    );
    tally(
        &mut score,
        &question,
        &context("A: the weather".into()),
        &evidence,
    );
    tally(
        &mut score,
        &question,
        &context(format!("A: {turn}")),
        &evidence,
    );
    finish(&mut score);
    assert_eq!((score.recalled, score.questions), (1, 3));
    assert_eq!((score.passages_shown, score.evidence_turns), (2, 3));
    assert!((score.passage_recall - 2.0 / 3.0).abs() < 1e-9);
}

#[test]
fn malformed_evidence_ids_are_repaired() {
    assert_eq!(repair_evidence("D1:3"), ["D1:3"]);
    assert_eq!(repair_evidence("D:11:26"), ["D11:26"]);
    assert_eq!(repair_evidence("D30:05"), ["D30:5"]);
    assert_eq!(repair_evidence("D8:6; D9:17"), ["D8:6", "D9:17"]);
    assert!(repair_evidence("D10").is_empty());
}

#[test]
fn session_dates_are_read() {
    let ts = parse_session_date("1:56 pm on 8 May, 2023").unwrap();
    assert_eq!(
        agentmem::base::event::format_ts(ts),
        "2023-05-08T13:56:00.000Z"
    );
    let ts = parse_session_date("2023/05/20 (Sat) 02:21").unwrap();
    assert_eq!(
        agentmem::base::event::format_ts(ts),
        "2023-05-20T02:21:00.000Z"
    );
    assert!(parse_session_date("someday").is_none());
}

/// The first conversations of LoCoMo's dev split: evidence recall from a
/// PostgreSQL backend's index is within 0.01 of the files index's at every
/// budget (both rank with the same BM25 over the same words).
#[test]
fn locomo_recall_on_postgres_is_within_a_hundredth_of_files() {
    let Some(url) = agentmem_postgres::test_database("LoCoMo recall on postgres") else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/locomo/locomo-dev.json");
    let conversations: Vec<_> = locomo::read(&path).unwrap().into_iter().take(2).collect();
    let database: std::sync::Arc<dyn agentmem::Storage> = std::sync::Arc::new(
        agentmem_postgres::PgStorage::connect(&url, Default::default()).unwrap(),
    );
    let budgets = [1_000, 2_000, 4_000];
    let scratch = tempfile::tempdir().unwrap();
    let tokenizer = Encoding::O200kBase.tokenizer();
    let run = |database| {
        let path = scratch.path();
        locomo::evaluate(
            "dev",
            &conversations,
            &budgets,
            path,
            database,
            tokenizer,
            None,
            None,
            &mut || {},
        )
        .unwrap()
    };
    let (on_files, on_postgres) = (run(None), run(Some(&database)));
    for (files, postgres) in on_files.iter().zip(&on_postgres) {
        assert!(
            files.questions > 50,
            "questions scored: {}",
            files.questions
        );
        for (a, b) in [
            (&files.agentmem, &postgres.agentmem),
            (&files.bm25, &postgres.bm25),
        ] {
            assert!(
                (a.recall - b.recall).abs() <= 0.01,
                "at {} tokens: {} on files, {} on postgres",
                files.budget_tokens,
                a.recall,
                b.recall
            );
        }
    }
    let left = database.list_agents().unwrap();
    assert!(
        !left.iter().any(|a| a.as_str().starts_with("conv-")),
        "the evaluation's sessions are removed: {left:?}"
    );
}
