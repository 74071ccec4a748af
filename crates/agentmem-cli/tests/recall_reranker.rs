//! `agentmem recall --reranker-model`: a loopback server speaking OpenAI
//! Chat Completions stands in for the model that reads the candidates;
//! what it is asked, and what its answer puts first.

mod common;
#[path = "../../agentmem-llm/tests/support/mod.rs"]
mod support;

use serde_json::json;
use support::{Loopback, Reply};

const QUESTION: &str = "What did Melanie do with the kids?";
const MEMORIES: [&str; 3] = [
    "Melanie's kids love the kids' show about kids and more kids.",
    "Lunch with Melanie was nice.",
    "Melanie took the kids swimming at the lake.",
];

fn answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 300, "completion_tokens": 5}}),
    )
}

#[test]
fn recall_puts_first_the_lines_the_reranker_names_and_shows_it_every_candidate() {
    let dir = tempfile::tempdir().unwrap();
    common::ingest_user_lines(dir.path(), &MEMORIES);
    // The hybrid's order, all of it: the reranker is shown the lines so numbered.
    let hybrid = common::recall_json(dir.path(), QUESTION, "2000", &[]);
    let order: Vec<&str> = hybrid["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["text"].as_str().unwrap())
        .collect();
    let swimming = order.iter().position(|t| t.contains("swimming")).unwrap();
    assert_ne!(
        swimming, 0,
        "the hybrid ranks another line first: {order:?}"
    );

    let server = Loopback::start(vec![
        answer(&format!("[{swimming}]")),
        answer(&format!("[{swimming}]")),
    ]);
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[llm]\nbase_url = \"{}/v1\"\n", server.url),
    )
    .unwrap();
    let recalled = common::recall_json(
        dir.path(),
        QUESTION,
        "45",
        &["--reranker-model", "gpt-4o-mini"],
    );
    let first = &recalled["items"][0];
    assert!(
        first["text"].as_str().unwrap().contains("swimming"),
        "{recalled}"
    );
    assert_eq!(first["reranked"], json!(1));
    assert!(recalled["block"].as_str().unwrap().contains("swimming"));

    // `[llm] reranker_model` serves recall without the flag.
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[llm]\nbase_url = \"{}/v1\"\nreranker_model = \"gpt-4o-mini\"\n",
            server.url
        ),
    )
    .unwrap();
    let configured = common::recall_json(dir.path(), QUESTION, "45", &[]);
    assert_eq!(configured["items"][0]["reranked"], json!(1));

    let asked = server.requests();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    let body = &asked[0].body;
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["messages"][0]["role"], "system");
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.starts_with(&format!("Question: {QUESTION}")),
        "{prompt}"
    );
    for (number, text) in order.iter().enumerate() {
        assert!(
            prompt.contains(&format!("[{number}] (")) && prompt.contains(&format!("User: {text}")),
            "line {number} ({text}) in {prompt}"
        );
    }
}

#[test]
fn a_configured_reranker_without_its_key_fails_recall_naming_it_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    common::ingest_user_lines(dir.path(), &MEMORIES);
    std::fs::write(
        dir.path().join("config.toml"),
        "[llm]\nreranker_model = \"gpt-4o-mini\"\n",
    )
    .unwrap();
    let no_key = [("OPENAI_API_KEY", None)];
    common::agentmem_with_input(
        dir.path(),
        &common::args(&["sessions", "list"]),
        &no_key,
        "",
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir.path())
        .args(["recall", QUESTION])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reranker gpt-4o-mini") && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
}
