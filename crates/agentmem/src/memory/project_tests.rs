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

/// The cross-session block of session `c` made of `episodes` alone.
fn block_of(episodes: &[EpisodicItem], budget: u64, tokenizer: Tokenizer) -> Option<String> {
    let episodes = episodes.to_vec();
    cross_session(
        Vec::new(),
        episodes,
        "c",
        budget,
        RedactionPolicy::default(),
        tokenizer,
    )
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
        let block = block_of(&episodes, budget, tokenizer).unwrap();
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
    let block = block_of(&episodes, 80, tokenizer).unwrap();
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

#[test]
fn a_summary_is_shown_with_more_than_its_heading_or_not_at_all() {
    let tokenizer = Encoding::O200kBase.tokenizer();
    let episodes = vec![episode(
        "a",
        &format!(
            "{}\nThen the queue worker.",
            "Moved billing off cron; ".repeat(30)
        ),
    )];
    let heading = tokenizer.count(CROSS_SESSION_HEADING) as u64;
    let session_heading = tokenizer.count("## Session a (turn_0001)") as u64 + 1;
    // Room for the session's heading, not for its first line.
    let budget = heading + session_heading + 5;
    let block = block_of(&episodes, budget, tokenizer);
    assert_eq!(block, None);
    let block = block_of(&episodes, 400, tokenizer).unwrap();
    assert!(
        block.contains("## Session a") && block.contains("Moved billing"),
        "{block}"
    );
}
