//! The LLM summarizer against a loopback server: what it asks, what it keeps.

mod support;

use agentmem::pipeline::strategy::{CompactionTiming, Strategy};
use agentmem::pipeline::tiers::Action;
use agentmem::{
    AgentId, CompactOptions, Durability, Event, PrepareRequest, Session, Store, Target,
};
use agentmem_llm::{Client, Endpoint, LlmSummarizer};
use serde_json::json;
use support::{Loopback, Reply};

fn answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 900, "completion_tokens": 120}}),
    )
}

/// An LLM summarizer on `gpt-4o-mini` through `server`, its key in `key_env`.
fn chat_summarizer(server: &Loopback, key_env: &str) -> LlmSummarizer {
    std::env::set_var(key_env, "k");
    let endpoint = Endpoint {
        base_url: format!("{}/v1", server.url),
        api_key_env: key_env.into(),
        ..Endpoint::official(Target::OpenAiChat, "gpt-4o-mini")
    };
    LlmSummarizer::new(Client::new(endpoint).unwrap(), "gpt-4o-mini", 100_000)
}

/// A session of the default agent in a new store, summarized by `summarizer`.
fn session_summarized_by(summarizer: LlmSummarizer) -> (tempfile::TempDir, Store, Session) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.set_summarizer(Box::new(summarizer));
    (dir, store, session)
}

#[test]
fn compaction_with_the_llm_summarizer_keeps_its_sections_and_grounded_facts() {
    let summary = json!({
        "sections": {
            "Goal": ["Migrate the billing job to the queue worker"],
            "Constraints and preferences": ["Never deploy on Fridays"],
            "Progress": ["Done: worker/billing.rs written"],
            "Next steps": ["Remove the cron entry"],
            "Critical context": ["worker/billing.rs", "E4031"]
        },
        "facts": [
            {"text": "Never deploy on Fridays", "kind": "constraint", "confidence": 0.95, "source_event_ids": ["ask-0"]},
            {"text": "Made up", "kind": "decision", "confidence": 0.9, "source_event_ids": ["not-in-span"]}
        ]
    });
    let server = Loopback::start(vec![answer(&format!("```json\n{summary}\n```"))]);
    let summarizer = chat_summarizer(&server, "AM_TEST_KEY_SUMMARIZER");

    let (_dir, store, mut session) = session_summarized_by(summarizer);
    for t in 0..9 {
        session
            .ingest(vec![
                Event::user(format!(
                    "Step {t} of the billing migration. Never deploy on Fridays."
                ))
                .with_id(format!("ask-{t}")),
                Event::assistant("Working on worker/billing.rs. ".repeat(30)),
            ])
            .unwrap();
    }
    let report = session
        .compact(&CompactOptions {
            focus: Some("the billing job".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(report.applied, "{report:?}");
    assert_eq!(report.summarizer, "llm:gpt-4o-mini handoff-1");

    let sent = &server.requests()[0].body;
    assert_eq!(sent["model"], "gpt-4o-mini");
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("checkpoint"));
    let prompt = sent["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("[ask-0] User: Step 0 of the billing migration"));
    assert!(prompt.contains("focus on: the billing job"));

    let base = &session.snapshot().unwrap().base;
    let summary_text = &base.last().unwrap().content;
    assert!(summary_text.contains("Migrate the billing job to the queue worker"));
    assert!(summary_text.contains("Remove the cron entry"));
    let facts = store.facts(&AgentId::default()).current().unwrap();
    assert_eq!(
        facts.len(),
        1,
        "the fact citing no event of the span is dropped"
    );
    assert_eq!(facts[0].fact, "Never deploy on Fridays");
    assert_eq!(facts[0].provenance.source_event_ids, ["ask-0"]);
    assert_eq!(facts[0].provenance.extractor, "llm:gpt-4o-mini");
}

/// With `compaction_timing = background` the summarizer model is asked
/// while the agent goes on: the prepare that finds a compaction due returns
/// before the model answers, the session keeps ingesting meanwhile, and a
/// prepare once the draft is ready applies the model's summary.
#[test]
fn a_background_compaction_asks_the_model_while_the_agent_goes_on() {
    let summary = json!({"sections": {"Goal": ["Ship the v2.4 release notes"]}, "facts": []});
    let (release, held) = std::sync::mpsc::channel();
    let server = Loopback::start_held(vec![answer(&summary.to_string())], held);
    let summarizer = chat_summarizer(&server, "AM_TEST_KEY_SUMMARIZER_BACKGROUND");
    let (_dir, _store, mut session) = session_summarized_by(summarizer);
    // About 15,900 tokens: over the trigger (14,400), within the budget (18,000).
    for t in 0..13 {
        session
            .ingest(vec![
                Event::user(format!("Step {t} of the release notes.")),
                Event::assistant("Drafting the release notes for v2.4 now. ".repeat(100)),
            ])
            .unwrap();
    }
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(20_000);
    request.budget.max_output_tokens = Some(1_000);
    request.budget.safety_margin = Some(1_000);
    request.context.strategy = Some(Strategy::Summarize);
    request.context.compaction_timing = Some(CompactionTiming::Background);

    let first = session.prepare(&request).unwrap().stats;
    assert!(
        first
            .actions
            .iter()
            .any(|a| matches!(a, Action::CompactionStarted { .. })),
        "{:?}",
        first.actions
    );
    // The model has the request and has not answered: the agent goes on.
    for _ in 0..5_000 {
        if !server.requests().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(server.requests().len(), 1, "the draft asked the model");
    assert!(session.snapshot().is_none());
    session
        .ingest(vec![Event::user("Also link the changelog.").with_id("late")])
        .unwrap();
    release.send(()).unwrap();

    // No prepare waits for a draft: this one is to apply it.
    session.wait_for_draft();
    let second = session.prepare(&request).unwrap().stats;
    assert!(
        second
            .actions
            .iter()
            .any(|a| matches!(a, Action::Compacted { .. })),
        "{:?}",
        second.actions
    );
    let summary_text = &session.snapshot().unwrap().base.last().unwrap().content;
    assert!(
        summary_text.contains("Ship the v2.4 release notes"),
        "{summary_text}"
    );
    assert_eq!(session.events().last().unwrap().id, "late");
}

#[test]
fn an_answer_without_json_is_a_summarizer_failure_and_history_stays() {
    let server = Loopback::start(vec![answer("Sorry, I cannot help with that.")]);
    let summarizer = chat_summarizer(&server, "AM_TEST_KEY_SUMMARIZER_BAD");
    let (_dir, _store, mut session) = session_summarized_by(summarizer);
    for t in 0..9 {
        session
            .ingest(vec![
                Event::user(format!("step {t}")),
                Event::assistant("ok ".repeat(80)),
            ])
            .unwrap();
    }
    let error = session.compact(&CompactOptions::default()).unwrap_err();
    assert!(error.to_string().contains("no JSON object"), "{error}");
    assert!(session.snapshot().is_none());
    assert_eq!(session.events().len(), 18, "nothing was archived");
}

#[test]
fn a_summary_request_asks_for_no_cache_write() {
    let summary = json!({"sections": {"Goal": ["Tidy the parser"]}, "facts": []});
    let server = Loopback::start(vec![Reply::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
               "content": [{"type": "text", "text": summary.to_string()}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 900, "output_tokens": 40}}),
    )]);
    std::env::set_var("AM_TEST_KEY_SUMMARIZER_ANTHROPIC", "k");
    let endpoint = Endpoint {
        base_url: format!("{}/v1", server.url),
        api_key_env: "AM_TEST_KEY_SUMMARIZER_ANTHROPIC".into(),
        ..Endpoint::official(Target::Anthropic, "claude-haiku-4-5")
    };
    let client = Client::new(endpoint).unwrap();
    let summarizer = LlmSummarizer::new(client, "claude-haiku-4-5", 100_000);
    let (_dir, _store, mut session) = session_summarized_by(summarizer);
    for t in 0..9 {
        let ask = Event::user(format!("Step {t}: tidy the parser."));
        let reply = Event::assistant("Tidying src/parse.rs. ".repeat(30));
        session.ingest(vec![ask, reply]).unwrap();
    }
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    let sent = &server.requests()[0].body;
    assert!(sent["system"].is_string(), "{sent}");
    assert!(!sent.to_string().contains("cache_control"), "{sent}");
}
