use super::*;
use crate::files::records::EpisodicItem;
use crate::tokens::Encoding;

const SECRET: &str = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0";

fn episode(session: &str, summary: &str) -> EpisodicItem {
    EpisodicItem {
        id: format!("ep-{session}"),
        ts: 0.0,
        session_id: session.to_owned(),
        turn_ids: vec!["turn_0001".to_owned()],
        summary: summary.to_owned(),
        tags: Vec::new(),
        salience: 0.5,
    }
}

/// What the block costs as it is fitted: the heading, and each line with its newline.
fn cost(block: &str, tokenizer: Tokenizer) -> u64 {
    let mut lines = block.lines();
    let heading = tokenizer.count(lines.next().unwrap()) as u64;
    heading + lines.map(|l| tokenizer.count(l) as u64 + 1).sum::<u64>()
}

#[test]
fn a_secret_in_what_fits_is_redacted_and_the_block_still_fits() {
    let tokenizer = Encoding::O200kBase.tokenizer();
    let episodes = vec![
        episode("b", &"the queue worker now retries twice; ".repeat(20)),
        episode(
            "a",
            &format!("Deployed billing with {SECRET} and checked the logs."),
        ),
    ];
    for budget in [60, 120, 400] {
        let block = cross_session(
            Vec::new(),
            episodes.clone(),
            "c",
            budget,
            RedactionPolicy::default(),
            tokenizer,
        )
        .unwrap();
        assert!(!block.contains(SECRET), "{block}");
        assert!(
            block.contains("Deployed billing with [REDACTED:secret]"),
            "{block}"
        );
        assert!(cost(&block, tokenizer) <= budget, "{budget}: {block}");
        // As if every summary were redacted before fitting.
        let redacted: Vec<String> = [&episodes[1], &episodes[0]]
            .iter()
            .map(|e| {
                let text = format!(
                    "## Session {} (turn_0001)\n{}",
                    e.session_id,
                    e.summary.trim_end()
                );
                redact(&text, RedactionPolicy::default()).0
            })
            .collect();
        let expected = fit_blocks(redacted.iter().map(String::as_str), budget, tokenizer);
        assert_eq!(Some(block), expected);
    }
}

#[test]
fn clean_summaries_are_fitted_as_they_are() {
    let tokenizer = Encoding::O200kBase.tokenizer();
    let episodes = vec![
        episode("b", &"the worker retries twice; ".repeat(40)),
        episode("a", "Moved billing to the queue worker."),
        episode("c", "This session's own summary."),
    ];
    let block = cross_session(
        Vec::new(),
        episodes,
        "c",
        80,
        RedactionPolicy::default(),
        tokenizer,
    )
    .unwrap();
    let blocks = [
        "## Session a (turn_0001)\nMoved billing to the queue worker.".to_owned(),
        format!(
            "## Session b (turn_0001)\n{}",
            "the worker retries twice; ".repeat(40).trim_end()
        ),
    ];
    let expected = fit_blocks(blocks.iter().map(String::as_str), 80, tokenizer);
    assert_eq!(Some(block.clone()), expected);
    assert!(
        block.contains("Moved billing") && !block.contains("own summary"),
        "{block}"
    );
    assert!(cost(&block, tokenizer) <= 80);
}
