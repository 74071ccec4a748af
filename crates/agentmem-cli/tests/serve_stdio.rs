//! `agentmem serve`: a whole agent loop as JSON lines (`--stdio`), the way an
//! agent in another language drives agentmem as a child process, and the
//! HTTP server's refusals at start.

mod common;
#[path = "../../agentmem-llm/tests/support/mod.rs"]
mod support;

use serde_json::{json, Value};
use support::{Loopback, Reply};

fn run(dir: &std::path::Path, commands: &[Value]) -> Vec<Value> {
    let mut input: String = commands.iter().map(|c| format!("{c}\n")).collect();
    input.push_str("{broken\n");
    let output =
        common::agentmem_with_input(dir, &common::args(&["serve", "--stdio"]), &[], &input);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_agent_loop_over_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut history = Vec::new();
    for t in 0..10 {
        history.push(json!({"id": format!("u{t}"), "trace_type": "user", "content": format!("Step {t}: fix the flaky test in parser_{t}.rs")}));
        history.push(json!({"id": format!("a{t}"), "trace_type": "assistant", "content": "Fixed the race in the parser. ".repeat(40)}));
    }
    let overflow = r#"{"error":{"message":"maximum context length is 128000 tokens","code":"context_length_exceeded"}}"#;
    let replies = run(
        dir.path(),
        &[
            json!({"id": 1, "op": "create_session", "session": "loop"}),
            json!({"id": 2, "op": "append", "session": "loop", "events": history}),
            json!({"id": 3, "op": "append", "session": "loop", "events": [history[0]]}),
            json!({"id": 4, "op": "prepare", "session": "loop", "model": "gpt-4o", "system": "Be brief.",
                   "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]}),
            json!({"id": 5, "op": "compact", "session": "loop", "focus": "the parser"}),
            json!({"id": 6, "op": "recover_overflow", "session": "loop", "model": "gpt-4o", "status": 400, "error_body": overflow}),
            json!({"id": 7, "op": "search", "query": "flaky parser_3"}),
            json!({"id": 8, "op": "tool", "name": "write_memory", "arguments": {"text": "- Parser tests are flaky under load."}}),
            json!({"id": 9, "op": "append", "session": "loop", "events": "not a list"}),
            json!({"id": 10, "op": "launch_rockets"}),
            json!({"id": 11, "op": "end_session", "session": "loop"}),
            json!({"id": 12, "op": "sessions"}),
        ],
    );
    assert_eq!(replies.len(), 13);
    for (i, reply) in replies.iter().take(12).enumerate() {
        assert_eq!(reply["id"], json!(i + 1), "answers come in order");
    }
    assert_eq!(replies[0]["result"]["session"], "loop");
    assert_eq!(replies[1]["result"]["appended"], 20);
    assert_eq!(
        replies[2]["result"]["duplicates"], 1,
        "appends are idempotent by event id"
    );
    let payload = &replies[3]["result"]["payload"];
    assert_eq!(
        payload["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split("\n\n")
            .next(),
        Some("Be brief.")
    );
    assert_eq!(payload["tools"][0]["function"]["name"], "bash");
    assert!(
        replies[3]["result"]["stats"]["context_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(replies[4]["result"]["applied"], true);
    assert_eq!(replies[4]["result"]["focus"], "the parser");
    assert!(replies[5]["ok"].as_bool().unwrap(), "{}", replies[5]);
    assert!(replies[5]["result"]["payload"]["messages"].is_array());
    assert_eq!(
        replies[6]["result"][0]["event_id"], "u3",
        "archived events are searched too"
    );
    assert!(replies[7]["result"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Appended."));
    assert_eq!(replies[8]["ok"], false);
    assert!(replies[8]["error"].as_str().unwrap().contains("events"));
    assert!(replies[9]["error"]
        .as_str()
        .unwrap()
        .contains("unknown op \"launch_rockets\""));
    assert!(replies[10]["result"]["summary"].is_string());
    let sessions = replies[11]["result"].as_array().unwrap();
    assert_eq!(
        sessions[0]["events"], 20,
        "the failed append changed nothing"
    );
    assert!(replies[12]["error"]
        .as_str()
        .unwrap()
        .starts_with("not JSON"));
}

#[test]
fn serve_refuses_a_network_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
            .arg("--dir")
            .arg(dir.path())
            .args(["serve", "--addr", "0.0.0.0:0"])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = run(&[]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--token-file"), "{stderr}");

    let empty = dir.path().join("token");
    std::fs::write(&empty, "  \n").unwrap();
    let refused = run(&["--token-file", empty.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("token file's token is empty"), "{stderr}");
}

#[test]
fn a_bad_command_names_its_kind_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let replies = run(
        dir.path(),
        &[
            json!({"id": 1, "op": "fly"}),
            json!({"id": 2, "op": "prepare", "session": "missing", "model": "gpt-4o"}),
            json!({"id": 3, "op": "create_session", "session": "s"}),
            json!({"id": 4, "op": "update_state", "session": "s", "patch": {"plan": "ship"}, "expected_version": 0}),
            json!({"id": 5, "op": "update_state", "session": "s", "patch": {"plan": "again"}, "expected_version": 0}),
            json!({"id": 6, "op": "state", "session": "s"}),
        ],
    );
    assert_eq!(replies[0]["kind"], "unknown_operation", "{}", replies[0]);
    assert_eq!(replies[1]["kind"], "not_found", "{}", replies[1]);
    assert_eq!(replies[3]["result"]["version"], 1, "{}", replies[3]);
    assert_eq!(replies[4]["kind"], "conflict", "{}", replies[4]);
    assert_eq!(replies[5]["result"]["document"]["plan"], "ship");
}

#[test]
fn the_service_compacts_with_the_configured_llm_summarizer() {
    let summary = json!({
        "sections": {"Goal": ["Ship the parser fix"], "Next steps": ["Run the tests again"]},
        "facts": [{"text": "The parser lives in src/parser.rs", "kind": "decision", "confidence": 0.9, "source_event_ids": ["u-0"]}]
    });
    let server = Loopback::start(vec![Reply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "llama3.1",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": summary.to_string()}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 500, "completion_tokens": 80}}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[llm]\nbase_url = \"{}/v1\"\nsummarizer_model = \"llama3.1\"\n",
            server.url
        ),
    )
    .unwrap();
    let mut commands = vec![json!({"op": "create_session", "session": "s"})];
    for t in 0..9 {
        commands.push(json!({"op": "append", "session": "s", "events": [
            {"id": format!("u-{t}"), "trace_type": "user", "content": format!("Step {t}: the parser in src/parser.rs fails.")},
            {"trace_type": "assistant", "content": "Looking at it. ".repeat(40)},
        ]}));
    }
    commands.push(json!({"id": "c", "op": "compact", "session": "s", "focus": "the parser fix"}));
    let replies = run(dir.path(), &commands);
    let report = &replies[10];
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(
        report["result"]["summarizer"], "llm:llama3.1 handoff-1",
        "{report}"
    );
    let prompt = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.contains("focus on: the parser fix"), "{prompt}");
    assert!(prompt.contains("[u-0] User: Step 0"), "{prompt}");
}

#[test]
fn the_service_recalls_with_the_embedder_of_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agentmem-embed/tests/tiny-bert"
    );
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[embedder]\ndir = {model:?}\nmodel = \"tiny\"\n"),
    )
    .unwrap();
    run(
        dir.path(),
        &[
            json!({"id": 1, "op": "create_session", "session": "past"}),
            json!({"id": 2, "op": "append", "session": "past", "events": [
                {"id": "u1", "trace_type": "user", "content": "I'm off to go swimming with the kids."}
            ]}),
            json!({"id": 3, "op": "end_session", "session": "past"}),
        ],
    );
    // The service embeds documents in the background and its recall never
    // waits for them; embedding them first keeps this test from racing it.
    let embedded = common::recall_json(dir.path(), "swimming", "500", &["--wait-for-vectors"]);
    assert_eq!(embedded["embedding"]["unembedded"], 0, "{embedded}");
    let replies = run(
        dir.path(),
        &[json!({"id": 1, "op": "recall", "query": "What does Melanie do for fun?"})],
    );
    // The event, and the episode its session left when it ended: both
    // share no word with the question, and both are scored by the model.
    let items = replies[0]["result"]["items"].as_array().unwrap();
    assert!(items.iter().any(|i| i["source"] == "u1"), "{}", replies[0]);
    assert!(items.iter().all(|i| i["vector"].is_f64()), "{}", replies[0]);
}

#[test]
fn the_service_recalls_through_the_configured_reranker() {
    let server = Loopback::start(vec![Reply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "llama3.1",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "[1]"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 200, "completion_tokens": 3}}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[llm]\nbase_url = \"{}/v1\"\nreranker_model = \"llama3.1\"\n",
            server.url
        ),
    )
    .unwrap();
    let replies = run(
        dir.path(),
        &[
            json!({"op": "create_session", "session": "past"}),
            json!({"op": "append", "session": "past", "events": [
                {"id": "u1", "trace_type": "user", "content": "The kids love the kids' show."},
                {"id": "u2", "trace_type": "user", "content": "I took the kids swimming."}
            ]}),
            json!({"op": "recall", "query": "What did I do with the kids?", "budget": 2000}),
        ],
    );
    let items = replies[2]["result"]["items"].as_array().unwrap();
    let prompt = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let second_line = prompt.lines().find(|l| l.starts_with("[1] (")).unwrap();
    let first = &items[0];
    assert_eq!(first["reranked"], 1, "{}", replies[2]);
    assert!(
        second_line.contains(first["text"].as_str().unwrap()),
        "{second_line} / {first}"
    );
}

#[test]
fn a_prepare_line_takes_its_own_settings_and_refuses_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let turns: Vec<Value> = (0..12)
        .flat_map(|t| {
            [
                json!({"trace_type": "user", "content": format!("Question {t}: why does the parser fail?")}),
                json!({"trace_type": "assistant", "content": "It fails on nested quotes. ".repeat(60)}),
            ]
        })
        .collect();
    let small = json!({"op": "prepare", "session": "s", "model": "gpt-4o", "context_window": 4000,
                       "max_output_tokens": 500, "safety_margin": 0, "trigger_ratio": 0.5});
    let with = |extra: Value| {
        let mut command = small.clone();
        command
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        command
    };
    let replies = run(
        dir.path(),
        &[
            json!({"op": "create_session", "session": "s"}),
            json!({"op": "append", "session": "s", "events": turns}),
            json!({"op": "append_memory", "content": "- The deploy key rotates on Fridays."}),
            with(json!({"id": 1, "strategy": "none", "memory": "off"})),
            with(json!({"id": 2, "strategy": "summarize", "dry_run": true})),
            with(json!({"id": 3, "stratgy": "trim"})),
            json!({"id": 4, "op": "events", "session": "s"}),
        ],
    );
    let quiet = &replies[3]["result"];
    assert_eq!(quiet["stats"]["over_budget"], true, "{}", quiet["stats"]);
    assert_eq!(quiet["stats"]["trigger_tokens"], 1750);
    assert!(!quiet["payload"].to_string().contains("rotates on Fridays"));
    assert_eq!(
        replies[4]["result"]["would_compact"], true,
        "{}",
        replies[4]
    );
    assert!(replies[4]["result"]["payload"]
        .to_string()
        .contains("rotates on Fridays"));
    assert_eq!(replies[5]["kind"], "bad_request", "{}", replies[5]);
    assert!(replies[5]["error"]
        .as_str()
        .unwrap()
        .contains("unknown field `stratgy`"));
    assert_eq!(
        replies[6]["result"]["events"].as_array().unwrap().len(),
        24,
        "the dry run compacted nothing"
    );
}

#[test]
fn events_and_state_are_read_while_another_process_holds_the_writer_lock() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let agentmem = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"));
        command.arg("--dir").arg(dir.path());
        command
    };
    let patch = dir.path().join("patch.json");
    std::fs::write(&patch, r#"{"plan": "ship the fix"}"#).unwrap();
    assert!(agentmem()
        .args(["sessions", "create", "--id", "s"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
        .success());
    assert!(agentmem()
        .args(["state", "s", "--patch"])
        .arg(&patch)
        .status()
        .unwrap()
        .success());
    let mut writer = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir.path())
        .args(["ingest", "--session", "s", "--ack"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    let mut acks = BufReader::new(writer.stdout.take().unwrap());
    for content in ["first question", "second question"] {
        writeln!(
            stdin,
            "{}",
            json!({"trace_type": "user", "content": content})
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let mut line = String::new();
    for _ in 0..3 {
        line.clear();
        acks.read_line(&mut line).unwrap(); // the session id, then each event's ack
    }
    let replies = run(
        dir.path(),
        &[
            json!({"id": 1, "op": "events", "session": "s"}),
            json!({"id": 2, "op": "append", "session": "s", "events": [{"trace_type": "user", "content": "x"}]}),
            json!({"id": 3, "op": "state", "session": "s"}),
            json!({"id": 4, "op": "state_history", "session": "s"}),
            json!({"id": 5, "op": "resume_session", "session": "s"}),
        ],
    );
    let events = replies[0]["result"]["events"].as_array();
    assert_eq!(events.map(Vec::len), Some(3), "{}", replies[0]);
    assert_eq!(
        replies[2]["result"]["document"]["plan"], "ship the fix",
        "{}",
        replies[2]
    );
    let versions = replies[3]["result"]["versions"].as_array();
    assert_eq!(versions.map(Vec::len), Some(1), "{}", replies[3]);
    assert_eq!(replies[4]["result"]["meta"]["events"], 3, "{}", replies[4]);
    assert_eq!(
        replies[1]["kind"], "locked",
        "a write still is refused: {}",
        replies[1]
    );
    drop(stdin);
    assert!(writer.wait().unwrap().success());
}

#[test]
fn a_line_over_eight_mib_is_refused_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let huge = json!({"id": 2, "op": "append", "session": "s", "events": [
        {"trace_type": "user", "content": "x".repeat(9 * 1024 * 1024)}
    ]});
    let replies = run(
        dir.path(),
        &[
            json!({"id": 1, "op": "create_session", "session": "s"}),
            huge,
            json!({"id": 3, "op": "events", "session": "s"}),
        ],
    );
    assert_eq!(replies[1]["ok"], false);
    assert_eq!(replies[1]["kind"], "too_large", "{}", replies[1]);
    assert!(
        replies[1]["error"]
            .as_str()
            .unwrap()
            .contains("8388608 bytes"),
        "{}",
        replies[1]
    );
    assert_eq!(replies[2]["id"], 3, "the next line is answered");
    assert_eq!(
        replies[2]["result"]["events"],
        json!([]),
        "nothing was appended"
    );
}

/// What `agentmem serve … --token-file FILE` says on stderr until it
/// listens (then it is stopped) or exits, and whether it listened.
fn serve_until_listening(dir: &std::path::Path, token_file: &std::path::Path) -> (String, bool) {
    use std::io::{BufRead, BufReader};
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir)
        .args(["serve", "--addr", "0.0.0.0:0", "--token-file"])
        .arg(token_file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = Vec::new();
    let mut listened = false;
    for line in BufReader::new(server.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        listened = line.contains("listening on");
        said.push(line);
        if listened {
            server.kill().unwrap();
            break;
        }
    }
    server.wait().unwrap();
    (said.join("\n"), listened)
}

#[test]
fn a_short_token_is_refused_for_a_network_address_and_a_readable_token_file_is_warned_of() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "hunter2\n").unwrap();
    std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (said, listened) = serve_until_listening(dir.path(), &short);
    assert!(!listened, "{said}");
    assert!(said.contains("at least 16 characters"), "{said}");

    let readable = dir.path().join("readable");
    std::fs::write(&readable, "a-long-enough-secret-token\n").unwrap();
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (said, listened) = serve_until_listening(dir.path(), &readable);
    assert!(listened, "{said}");
    assert!(said.contains("readable by other users"), "{said}");
    assert!(said.contains("chmod 600"), "{said}");
}
