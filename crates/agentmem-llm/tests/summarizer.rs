//! The LLM summarizer against a loopback server: what it asks, what it keeps.

mod support;

use agentmem::event::Event;
use agentmem::id::AgentId;
use agentmem::render::Target;
use agentmem::session::CompactOptions;
use agentmem::store::Store;
use agentmem::Durability;
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
    std::env::set_var("AM_TEST_KEY_SUMMARIZER", "k");
    let endpoint = Endpoint {
        base_url: format!("{}/v1", server.url),
        api_key_env: "AM_TEST_KEY_SUMMARIZER".into(),
        ..Endpoint::official(Target::OpenAiChat, "gpt-4o-mini")
    };
    let summarizer = LlmSummarizer::new(Client::new(endpoint).unwrap(), "gpt-4o-mini", 100_000);

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let agent = AgentId::default();
    let mut session = store.create_session(&agent, None).unwrap();
    session.set_summarizer(Box::new(summarizer));
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
    let facts = store.facts(&agent).current().unwrap();
    assert_eq!(
        facts.len(),
        1,
        "the fact citing no event of the span is dropped"
    );
    assert_eq!(facts[0].fact, "Never deploy on Fridays");
    assert_eq!(facts[0].provenance.source_event_ids, ["ask-0"]);
    assert_eq!(facts[0].provenance.extractor, "llm:gpt-4o-mini");
}

#[test]
fn an_answer_without_json_is_a_summarizer_failure_and_history_stays() {
    let server = Loopback::start(vec![answer("Sorry, I cannot help with that.")]);
    std::env::set_var("AM_TEST_KEY_SUMMARIZER_BAD", "k");
    let endpoint = Endpoint {
        base_url: format!("{}/v1", server.url),
        api_key_env: "AM_TEST_KEY_SUMMARIZER_BAD".into(),
        ..Endpoint::official(Target::OpenAiChat, "gpt-4o-mini")
    };
    let summarizer = LlmSummarizer::new(Client::new(endpoint).unwrap(), "gpt-4o-mini", 100_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.set_summarizer(Box::new(summarizer));
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
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.set_summarizer(Box::new(summarizer));
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
