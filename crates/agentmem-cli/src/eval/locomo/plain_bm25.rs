//! The plain-BM25 baseline: the index's best BM25 matches for the
//! question, each shown whole as `speaker: text`, packed in rank order
//! while they fit the budget. It shares nothing with recall's scoring or
//! packing — no passages, neighbours, weights, dates, speaker focus or
//! deduplication — so a change to recall never moves the baseline it is
//! measured against.

use agentmem::search::index::{Candidate, DocKind};
use agentmem::storage::search::SearchIndex;
use agentmem::tokens::Tokenizer;
use agentmem::Recalled;

/// How many matches the baseline ranks: more than any budget evaluated
/// here can show.
const HITS: usize = 300;
/// Packing stops when less than this is left of the budget.
const MIN_USEFUL_TOKENS: u64 = 16;

/// The baseline's context for `query` under `budget` tokens: the best
/// BM25 matches among `index`'s events, in rank order, each whole; a match
/// too long for what is left is skipped, not cut.
pub(super) fn plain_bm25(
    index: &dyn SearchIndex,
    query: &str,
    budget: u64,
    tokenizer: Tokenizer,
) -> agentmem::Result<Recalled> {
    let mut hits = index.candidates(query, &[DocKind::Event], None, HITS)?;
    // Stable: equal scores keep the index's order.
    hits.sort_by(|a, b| b.bm25.total_cmp(&a.bm25));
    let considered = hits.len();
    let mut lines = Vec::new();
    let mut used = 0u64;
    for hit in &hits {
        if budget.saturating_sub(used) < MIN_USEFUL_TOKENS {
            break;
        }
        let line = line_of(hit);
        let cost = tokenizer.count(&line) as u64 + 1;
        if used + cost <= budget {
            used += cost;
            lines.push(line);
        }
    }
    Ok(Recalled {
        items: Vec::new(),
        considered,
        tokens: used,
        block: lines.join("\n"),
        embedding: None,
    })
}

fn line_of(hit: &Candidate) -> String {
    let speaker = hit.speaker.as_deref().unwrap_or(hit.role.label());
    let text = hit.text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{speaker}: {text}")
}

#[cfg(test)]
mod tests {
    use agentmem::memory::recall::{self, Weights};
    use agentmem::redact::RedactionPolicy;
    use agentmem::{AgentId, Durability, Encoding, Event, RecallRequest, SessionId, Store};
    use serde_json::Value;

    use super::plain_bm25;

    fn said(speaker: &str, text: &str, ts: f64) -> Event {
        let mut event = Event::user(text);
        event.ts = ts;
        event.extra.insert("name", Value::String(speaker.into()));
        event
    }

    /// A long match is shown whole or not at all, never by a passage; the
    /// turns around a match that do not match stay out; the order is
    /// BM25's alone. Recall, even on BM25's weight alone, shows this history
    /// otherwise, so the test fails if the baseline takes recall's ways.
    #[test]
    fn the_baseline_shows_whole_matches_in_bm25_order_and_nothing_of_recall() {
        let scratch = tempfile::tempdir().unwrap();
        let store = Store::open(scratch.path(), Durability::Os).unwrap();
        let agent = AgentId::new("plain").unwrap();
        let filler = "We talked about the weather and the garden for a while. ".repeat(150);
        let long = format!("{filler} Ben said the cello lessons start in May. {filler}");
        let day = 86_400.0;
        let sessions = [
            vec![
                said("Ann", "What should we do this weekend?", 0.0),
                said("Ben", &long, 1.0),
                said("Ann", "Sounds good to me.", 2.0),
            ],
            vec![
                said(
                    "Ann",
                    "Ben, I found a cheap cello bow and a cello case.",
                    30.0 * day,
                ),
                said("Ben", "Great, thanks!", 30.0 * day + 1.0),
            ],
        ];
        for (number, events) in sessions.into_iter().enumerate() {
            let id = SessionId::new(format!("session_{number}")).unwrap();
            let mut log = store.create_session(&agent, Some(id)).unwrap();
            log.ingest(events).unwrap();
            log.close().unwrap();
        }
        let index = store.history_index(&agent).unwrap();
        let tokenizer = Encoding::O200kBase.tokenizer();
        let query = "What about the cello?";
        let bow = "Ann: Ben, I found a cheap cello bow and a cello case.";
        let whole = format!(
            "Ben: {}",
            long.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let long_tokens = tokenizer.count(&whole) as u64 + 1;
        assert!(long_tokens > 1_000, "{long_tokens}");

        let roomy = plain_bm25(&index, query, long_tokens + 100, tokenizer).unwrap();
        let head = |block: &str| block.chars().take(300).collect::<String>();
        assert!(
            roomy.block == format!("{bow}\n{whole}"),
            "{}",
            head(&roomy.block)
        );
        assert_eq!(roomy.considered, 2);
        assert_eq!(roomy.tokens, long_tokens + tokenizer.count(bow) as u64 + 1);
        // Too little room for the long match: it is left out, not cut.
        let tight = plain_bm25(&index, query, 1_000, tokenizer).unwrap();
        assert_eq!(tight.block, bow);

        // Recall on the same history, even on BM25's weight alone, shows
        // a passage of the long turn and a neighbour of a match.
        let mut request = RecallRequest::new(query, 1_000);
        request.weights = Weights {
            recency: 0.0,
            salience: 0.0,
            named_date: 0.0,
            ..Weights::default()
        };
        let redaction = RedactionPolicy::default();
        let recalled = recall::recall(&index, &request, tokenizer, None, None, redaction).unwrap();
        assert!(recalled.block.contains('⟦'), "{}", head(&recalled.block));
        assert!(
            recalled.block.contains("Great, thanks!"),
            "{}",
            head(&recalled.block)
        );
    }
}
