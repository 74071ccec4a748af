//! `agentmem recall` with an embedder: a loopback server speaking the OpenAI
//! embeddings protocol stands in for the model; what it is asked, and what
//! its vectors change in what is recalled.

mod common;
#[path = "../../agentmem-llm/tests/support/mod.rs"]
mod support;

use serde_json::{json, Value};
use support::{Loopback, Reply};

const QUESTION: &str = "What activities does Melanie partake in?";
const MEMORIES: [&str; 3] = [
    "I'm off to go swimming with the kids this weekend.",
    "The build broke with a linker error.",
    "Lunch was a sandwich.",
];

fn vectors(rows: &[[f32; 2]]) -> Reply {
    let data: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(index, v)| json!({"object": "embedding", "index": index, "embedding": v}))
        .collect();
    Reply::json(200, json!({"object": "list", "data": data, "model": "toy"}))
}

fn recall(dir: &std::path::Path, extra: &[&str]) -> Value {
    common::recall_json(dir, QUESTION, "60", extra)
}

#[test]
fn recall_asks_the_embedder_once_per_memory_and_finds_what_shares_no_word() {
    let dir = tempfile::tempdir().unwrap();
    common::ingest_user_lines(dir.path(), &MEMORIES);
    let lexical = recall(dir.path(), &[]);
    assert!(!lexical["block"].as_str().unwrap().contains("swimming"));

    let server = Loopback::start(vec![
        vectors(&[[1.0, 0.0], [0.0, 1.0], [0.3, 0.3]]),
        vectors(&[[0.9, 0.1]]),
        vectors(&[[0.9, 0.1]]),
    ]);
    let url = format!("{}/v1", server.url);
    let recalled = recall(
        dir.path(),
        &[
            "--embedder-url",
            &url,
            "--embedder-model",
            "toy",
            "--wait-for-vectors",
        ],
    );
    assert_eq!(recalled["embedding"]["unembedded"], 0);
    let first = &recalled["items"][0];
    assert!(first["text"].as_str().unwrap().contains("swimming"));
    assert!(first["vector"].as_f64().unwrap() > 0.99);
    assert!(recalled["block"].as_str().unwrap().contains("swimming"));
    let asked = server.requests();
    assert_eq!(
        (asked[0].method.as_str(), asked[0].path.as_str()),
        ("POST", "/v1/embeddings")
    );
    assert_eq!(asked[0].body, json!({"model": "toy", "input": MEMORIES}));
    assert_eq!(asked[1].body, json!({"model": "toy", "input": [QUESTION]}));

    // config.toml's [embedder] serves recall too; the vectors were kept.
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[embedder]\nurl = \"{url}\"\nmodel = \"toy\"\n"),
    )
    .unwrap();
    let recalled = recall(dir.path(), &[]);
    assert!(recalled["items"][0]["text"]
        .as_str()
        .unwrap()
        .contains("swimming"));
    let asked = server.requests();
    assert_eq!(asked.len(), 3, "the query only");
    assert_eq!(asked[2].body["input"], json!([QUESTION]));
}

#[test]
fn recall_runs_a_model_folder_in_process_and_names_a_folder_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    common::agentmem_with_input(
        dir.path(),
        &common::args(&["ingest", "--session", "past"]),
        &[],
        &format!(
            "{}\n",
            json!({"trace_type": "user", "content": MEMORIES[0]})
        ),
    );
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agentmem-embed/tests/tiny-bert"
    );
    // Without waiting, the one memory may or may not have its vector yet:
    // the answer says which.
    let unwaited = recall(dir.path(), &["--embedder-dir", model]);
    assert_eq!(unwaited["embedding"]["model"], "all-MiniLM-L6-v2");
    let unembedded = unwaited["embedding"]["unembedded"].as_u64().unwrap();
    assert!(unembedded <= 1, "{unwaited}");
    let recalled = recall(dir.path(), &["--embedder-dir", model, "--wait-for-vectors"]);
    let item = &recalled["items"][0];
    assert!(item["text"].as_str().unwrap().contains("swimming"));
    assert!(item["vector"].is_f64(), "scored by the model: {item}");
    let mpnet = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agentmem-embed/tests/tiny-mpnet"
    );
    let recalled = recall(
        dir.path(),
        &[
            "--embedder-dir",
            mpnet,
            "--embedder-model",
            "tiny-mpnet",
            "--wait-for-vectors",
        ],
    );
    let item = &recalled["items"][0];
    assert!(item["vector"].is_f64(), "scored by the MPNet model: {item}");

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir.path())
        .args(["recall", QUESTION, "--embedder-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("loading the embedding model") && stderr.contains("config.json"),
        "{stderr}"
    );
}

#[test]
fn a_configured_model_folder_is_read_only_by_recall() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[embedder]\ndir = \"/nonexistent/model\"\n",
    )
    .unwrap();
    common::agentmem_with_input(dir.path(), &common::args(&["sessions", "list"]), &[], "");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir.path())
        .args(["recall", QUESTION])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("embedder all-MiniLM-L6-v2") && stderr.contains("/nonexistent/model"),
        "{stderr}"
    );
}
