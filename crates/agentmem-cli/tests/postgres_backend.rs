//! The CLI on the PostgreSQL backend (the database of
//! `AGENTMEM_TEST_DATABASE_URL`, which `scripts/postgres run` provides):
//! every command works there as on files (the session commands, ingest and
//! import, working memory, the context pipeline, `search` and `recall`,
//! the memory tools over MCP, `chat` and `serve`, `replay --session`),
//! nothing goes to files, and the URL's password is never shown.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

mod common;

struct Cli {
    dir: tempfile::TempDir,
    url: String,
    agent: String,
}

impl Cli {
    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentmem"))
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--agent", &self.agent])
            .args(args)
            .env("AGENTMEM_DATABASE_URL", &self.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    fn ok(&self, args: &[&str], stdin: &str) -> String {
        let output = self.run(args, stdin);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }
}

/// A data directory and an agent of its own for the test `name` (so tests
/// share the database without meeting).
fn cli(name: &str) -> Option<Cli> {
    let url = agentmem_postgres::test_database(name)?;
    Some(Cli {
        dir: tempfile::tempdir().unwrap(),
        url: url.expose().to_owned(),
        agent: format!("{name}-{}", std::process::id()),
    })
}

#[test]
fn sessions_and_ingest_work_on_postgres_and_nothing_goes_to_files() {
    let Some(cli) = cli("sessions-and-ingest") else {
        return;
    };
    let events = concat!(
        r#"{"trace_type":"user","content":"run the tests","id":"e1"}"#,
        "\n",
        r#"{"trace_type":"tool_call","tool_call_id":"c1","tool_name":"bash","tool_args":{"cmd":"cargo test"}}"#,
        "\n",
        r#"{"trace_type":"tool_result","tool_call_id":"c1","content":"ok","n":123456789012345678901234567890}"#,
        "\n",
    );
    let acked = cli.ok(&["ingest", "--session", "demo", "--ack"], events);
    assert_eq!(acked.lines().count(), 4, "the id, then one line per event");
    // Idempotent by id: the same user event again is not appended.
    cli.ok(
        &["ingest", "--session", "demo"],
        &events[..events.find('\n').unwrap() + 1],
    );
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["--json", "sessions", "list"], "")).unwrap();
    assert_eq!(listed[0]["id"], "demo");
    assert_eq!(listed[0]["events"], 3);
    assert_eq!(listed[0]["title"], "run the tests");
    cli.ok(&["sessions", "fork", "demo", "--new-id", "branch"], "");
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["--json", "sessions", "show", "branch"], "")).unwrap();
    assert_eq!(shown["forked_from"], "demo");
    cli.ok(&["sessions", "delete", "branch"], "");
    assert!(!cli.ok(&["sessions", "list"], "").contains("branch"));
    // Nothing of it is in the data directory.
    assert!(!cli.dir.path().join("agents").exists());
}

#[test]
fn search_and_recall_read_the_database_index_and_nothing_goes_to_files() {
    let Some(cli) = cli("search-and-recall") else {
        return;
    };
    let first = concat!(
        r#"{"trace_type":"user","content":"The flaky parser test fails with error E0502"}"#,
        "\n",
        r#"{"trace_type":"assistant","content":"I will borrow the tokens immutably to fix E0502."}"#,
        "\n",
    );
    cli.ok(&["ingest", "--session", "early"], first);
    cli.ok(
        &["ingest", "--session", "late"],
        "{\"trace_type\":\"user\",\"content\":\"what did we do about E0502?\"}\n",
    );
    let hits: Value =
        serde_json::from_str(&cli.ok(&["--json", "search", "parser tests failing"], "")).unwrap();
    assert_eq!(hits[0]["session"], "early");
    assert_eq!(hits[0]["turn_id"], "turn_0001");
    assert!(hits[0]["excerpt"].as_str().unwrap().contains("[parser]"));
    let hits: Value =
        serde_json::from_str(&cli.ok(&["--json", "search", "E0502", "--role", "assistant"], ""))
            .unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1);
    let recalled: Value = serde_json::from_str(&cli.ok(
        &[
            "--json",
            "recall",
            "how was E0502 fixed?",
            "--session",
            "late",
        ],
        "",
    ))
    .unwrap();
    let block = recalled["block"].as_str().unwrap();
    assert!(block.contains("borrow the tokens"), "{block}");
    assert!(
        !block.contains("what did we do"),
        "the asking session is left out"
    );
    assert!(!cli.dir.path().join("agents").exists());
}

/// The same commands on files (`cli` with no database) and on the
/// database (`cli`): their stdout, each, as JSON.
fn on_both(files: &Cli, database: &Cli, steps: &[(&[&str], &str)]) -> Vec<(Value, Value)> {
    steps
        .iter()
        .map(|(args, stdin)| {
            let answer = |cli: &Cli| -> Value {
                let out = cli.ok(args, stdin);
                serde_json::from_str(&out).unwrap_or(Value::String(out))
            };
            (answer(files), answer(database))
        })
        .collect()
}

/// A data directory of its own on files, for the agent of `cli`.
fn files_beside(cli: &Cli) -> Cli {
    Cli {
        dir: tempfile::tempdir().unwrap(),
        url: String::new(),
        agent: cli.agent.clone(),
    }
}

#[test]
fn working_memory_runs_on_postgres_as_on_files() {
    let Some(cli) = cli("state") else { return };
    let files = files_beside(&cli);
    let update = |patch: &str| {
        format!(
            "{{\"trace_type\":\"working_memory\",\"working_memory\":{{\"kind\":\"merge_patch\",\"patch\":{patch}}}}}\n"
        )
    };
    let schema =
        r#"{"type":"object","properties":{"goal":{"type":"string"},"done":{"type":"boolean"}}}"#;
    let steps: &[(&[&str], &str)] = &[
        (
            &["ingest", "--session", "s"],
            "{\"trace_type\":\"user\",\"content\":\"plan it\"}\n",
        ),
        (&["--json", "state", "s", "--schema", "-"], schema),
        (
            &[
                "--json",
                "state",
                "s",
                "--patch",
                "-",
                "--expect-version",
                "0",
            ],
            r#"{"goal": "ship"}"#,
        ),
        (&["ingest", "--session", "s"], &update(r#"{"done":true}"#)),
        (&["--json", "state", "s"], ""),
    ];
    // The session ids ingest prints aside, both answer alike.
    for (on_files, on_database) in on_both(&files, &cli, steps) {
        assert_eq!(on_files, on_database);
    }
    let state: Value = serde_json::from_str(&cli.ok(&["--json", "state", "s"], "")).unwrap();
    assert_eq!(state["version"], 2, "{state}");
    assert_eq!(state["document"], json!({"goal": "ship", "done": true}));
    assert_eq!(state["schema"]["scope"], "session");
    // Compare-and-swap: a stale version changes nothing, on both.
    for place in [&files, &cli] {
        let stale = place.run(
            &["state", "s", "--patch", "-", "--expect-version", "1"],
            r#"{"goal": "other"}"#,
        );
        assert!(!stale.status.success());
        let stderr = String::from_utf8_lossy(&stale.stderr);
        assert!(stderr.contains("version"), "{stderr}");
        // The schema refuses an update that breaks it, in a batch too.
        let refused = place.run(&["ingest", "--session", "s"], &update(r#"{"done":"yes"}"#));
        assert!(!refused.status.success());
    }
    let history = |place: &Cli| -> Vec<(Value, Value)> {
        let versions: Value =
            serde_json::from_str(&place.ok(&["--json", "state", "s", "--history"], "")).unwrap();
        versions
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["version"].clone(), v["document"].clone()))
            .collect()
    };
    assert_eq!(history(&cli), history(&files));
    assert_eq!(history(&cli).len(), 2);
    // Another process sees the state the database keeps, and nothing went to files.
    let shown: Value = serde_json::from_str(&cli.ok(&["--json", "state", "s"], "")).unwrap();
    assert_eq!(shown, state);
    assert!(!cli.dir.path().join("agents").exists());
}

/// A real coding agent's transcript.
const TRANSCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/eval-data/trajectories/claude-code/session-3fe1b6bc.jsonl"
);

#[test]
fn import_and_replay_run_on_postgres_as_on_files() {
    let Some(cli) = cli("import-replay") else {
        return;
    };
    let files = files_beside(&cli);
    let steps: &[(&[&str], &str)] = &[
        (&["--json", "import", TRANSCRIPT, "--session", "real"], ""),
        // Again: nothing new.
        (&["--json", "import", TRANSCRIPT, "--session", "real"], ""),
        (&["export", "real", "--format", "events"], ""),
        (&["export", "real", "--format", "openai-messages"], ""),
        (&["--json", "tools", "real"], ""),
    ];
    for (n, (on_files, on_database)) in on_both(&files, &cli, steps).into_iter().enumerate() {
        assert_eq!(on_files, on_database, "step {n}");
    }
    // Without --session an import finds its session by the transcript's own id.
    let named: Value =
        serde_json::from_str(&cli.ok(&["--json", "import", TRANSCRIPT], "")).unwrap();
    let again: Value =
        serde_json::from_str(&cli.ok(&["--json", "import", TRANSCRIPT], "")).unwrap();
    assert_eq!(named["session"], again["session"], "{named} {again}");
    // A replay kept with --session is kept in the database, whole.
    let replay = |place: &Cli| {
        let out = place.ok(
            &[
                "--json",
                "replay",
                TRANSCRIPT,
                "--model",
                "gpt-4o",
                "--budget",
                "8000",
                "--session",
                "rp",
            ],
            "",
        );
        let turns = out.lines().count() - 1;
        let exported = place.ok(&["export", "rp", "--format", "events"], "");
        (turns, exported.lines().count())
    };
    let (turns, events) = replay(&cli);
    assert!(turns > 10 && events > 100, "{turns} turns, {events} events");
    assert_eq!(replay(&files), (turns, events));
    assert!(!cli.dir.path().join("agents").exists());
}

#[test]
fn the_memory_tools_run_on_postgres_over_mcp_and_the_server() {
    let Some(cli) = cli("tools") else { return };
    cli.ok(
        &["ingest", "--session", "past"],
        "{\"trace_type\":\"user\",\"content\":\"The staging database listens on port 6432.\"}\n",
    );
    let tool_call = |id: u64, tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
        .to_string()
    };
    let messages = [
        tool_call(
            1,
            "write_memory",
            json!({"content": "- deploys go through the canary"}),
        ),
        tool_call(
            2,
            "search_conversation_history",
            json!({"query": "staging port"}),
        ),
        tool_call(
            3,
            "recall",
            json!({"query": "which port does staging listen on?"}),
        ),
        tool_call(
            4,
            "remember_fact",
            json!({"fact": "The staging port is 6432."}),
        ),
        tool_call(
            5,
            "update_working_memory",
            json!({"patch": {"step": "checked staging"}}),
        ),
    ];
    let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
    let out = cli.ok(&["mcp", "--session", "current"], &input);
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text = |n: usize| {
        replies[n]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(text(0).starts_with("Appended."), "{}", text(0));
    assert!(text(1).contains("6432"), "{}", text(1));
    assert!(text(2).contains("6432"), "{}", text(2));
    assert!(text(3).starts_with("Remembered"), "{}", text(3));
    assert!(
        replies[4]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "MCP serves the memory tools; a session's working memory is its own loop's: {}",
        replies[4]
    );
    assert_eq!(
        cli.ok(&["memory", "show"], ""),
        "- deploys go through the canary\n"
    );
    assert!(cli.ok(&["facts", "list"], "").contains("6432"));
    // The server's tool route, the working-memory tools on a session included.
    let server = serve(&cli);
    let base = server.base.clone();
    let (status, _) = call(&base, "/v1/sessions", Some(json!({"session": "web"})));
    assert_eq!(status, 201);
    let (status, answer) = call(
        &base,
        "/v1/tools/update_working_memory",
        Some(
            json!({"session": "web", "arguments": {"patch": {"goal": "ship"}, "expected_version": 0}}),
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let (_, stale) = call(
        &base,
        "/v1/tools/update_working_memory",
        Some(
            json!({"session": "web", "arguments": {"patch": {"goal": "x"}, "expected_version": 0}}),
        ),
    );
    assert!(
        stale["text"].as_str().unwrap().starts_with("error:"),
        "{stale}"
    );
    let (status, read) = call(
        &base,
        "/v1/tools/read_memory",
        Some(json!({"arguments": {}})),
    );
    assert_eq!(status, 200, "{read}");
    assert!(read["text"].as_str().unwrap().contains("canary"), "{read}");
    let (_, recalled) = call(
        &base,
        "/v1/tools/recall",
        Some(json!({"session": "web", "arguments": {"query": "staging port"}})),
    );
    assert!(
        recalled["text"].as_str().unwrap().contains("6432"),
        "{recalled}"
    );
    drop(server);
    let state: Value = serde_json::from_str(&cli.ok(&["--json", "state", "web"], "")).unwrap();
    assert_eq!(state["document"], json!({"goal": "ship"}));
    assert!(!cli.dir.path().join("agents").exists());
}

#[test]
fn a_wrong_password_is_reported_without_the_password() {
    let Some(mut cli) = cli("wrong-password") else {
        return;
    };
    let (start, end) = (
        cli.url.find("://").unwrap() + 3,
        cli.url.rfind('@').unwrap(),
    );
    let user = cli.url[start..end].split(':').next().unwrap().to_owned();
    cli.url = format!(
        "{}{user}:not-the-Pa55word{}",
        &cli.url[..start],
        &cli.url[end..]
    );
    let output = cli.run(&["sessions", "list"], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("password authentication failed"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("{user}:***@")), "{stderr}");
    assert!(!stderr.contains("not-the-Pa55word"), "{stderr}");
}

#[test]
fn migrate_copies_a_data_directory_and_resumes() {
    let Some(cli) = cli("migrate") else { return };
    let on_files = Cli {
        dir: tempfile::tempdir().unwrap(),
        url: String::new(),
        agent: cli.agent.clone(),
    };
    let transcript = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/claude-code-session.jsonl"
    );
    on_files.ok(&["import", transcript, "--session", "cc"], "");
    on_files.ok(&["compact", "cc"], "");
    on_files.ok(
        &[
            "sessions",
            "fork",
            "cc",
            "--at-turn",
            "2",
            "--new-id",
            "cc2",
        ],
        "",
    );
    let from = on_files.dir.path().to_str().unwrap();
    let tally = |cli: &Cli| -> serde_json::Value {
        serde_json::from_str(&cli.ok(&["--json", "migrate", "--from", from], "")).unwrap()
    };
    let first = tally(&cli);
    assert_eq!(
        (first["sessions"].as_u64(), first["copied"].as_u64()),
        (Some(2), Some(2))
    );
    let again = tally(&cli);
    assert_eq!(again["already_there"], 2);
    let list = |cli: &Cli| -> Vec<serde_json::Value> {
        let mut listed: Vec<serde_json::Value> =
            serde_json::from_str(&cli.ok(&["--json", "sessions", "list"], "")).unwrap();
        for meta in &mut listed {
            // The size of a files log; a database has none.
            meta.as_object_mut().unwrap().remove("log_bytes");
        }
        listed
    };
    let (files_list, postgres_list) = (list(&on_files), list(&cli));
    assert_eq!(files_list, postgres_list);
    // Each session's history exports byte for byte the same from both.
    for id in ["cc", "cc2"] {
        for format in ["events", "openai-messages"] {
            let args = ["export", id, "--format", format];
            assert_eq!(
                on_files.ok(&args, ""),
                cli.ok(&args, ""),
                "{id} as {format}"
            );
        }
    }
    assert!(files_list
        .iter()
        .any(|m| m["archived_events"].as_u64() > Some(0)));
}

#[test]
fn commands_that_need_no_session_never_connect() {
    let unreachable = Cli {
        dir: tempfile::tempdir().unwrap(),
        url: "postgres://agentmem:hunter2@127.0.0.1:1/agentmem".to_owned(),
        agent: "default".to_owned(),
    };
    assert!(unreachable.ok(&["models", "gpt-4o"], "").contains("gpt-4o"));
    let output = unreachable.run(&["sessions", "list"], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("failed to connect to postgres://agentmem:***@127.0.0.1:1/agentmem"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

/// Four coding turns as NDJSON, with ids.
fn four_turns() -> String {
    (1..=4)
        .flat_map(|n| {
            [
                json!({"id": format!("u{n}"), "trace_type": "user", "content": format!("step {n}: run the suite and fix FooError{n}")}),
                json!({"id": format!("c{n}"), "trace_type": "tool_call", "tool_call_id": format!("call{n}"), "tool_name": "bash", "tool_args": {"cmd": "cargo test"}}),
                json!({"id": format!("r{n}"), "trace_type": "tool_result", "tool_call_id": format!("call{n}"), "content": format!("test t{n} ... ok\n").repeat(30)}),
                json!({"id": format!("a{n}"), "trace_type": "assistant", "content": format!("FooError{n} is fixed in src/m{n}.rs.")}),
            ]
        })
        .map(|event| format!("{event}\n"))
        .collect()
}

#[test]
fn prepare_context_and_compact_run_on_postgres() {
    let Some(cli) = cli("pipeline") else { return };
    cli.ok(&["ingest", "--session", "p"], &four_turns());
    let prepared: Value =
        serde_json::from_str(&cli.ok(&["prepare", "p", "--model", "gpt-4o"], "")).unwrap();
    let messages = prepared["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 16, "{prepared}");
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("FooError1"));
    let context: Value =
        serde_json::from_str(&cli.ok(&["--json", "context", "p", "--model", "gpt-4o"], ""))
            .unwrap();
    assert!(context["context_tokens"].as_u64().unwrap() > 0, "{context}");
    let report: Value =
        serde_json::from_str(&cli.ok(&["--json", "compact", "p", "--keep-turns", "1"], ""))
            .unwrap();
    assert_eq!(report["applied"], true, "{report}");
    let shown: Value =
        serde_json::from_str(&cli.ok(&["--json", "sessions", "show", "p"], "")).unwrap();
    assert_eq!(shown["events"], 16, "{shown}");
    let exported = cli.ok(&["export", "p", "--format", "events"], "");
    assert_eq!(
        exported.lines().count(),
        16,
        "the archive and the active log, each event once"
    );
    // After the compaction the context holds the summary, not the
    // compacted tool outputs, and the turns kept raw.
    let prepared: Value =
        serde_json::from_str(&cli.ok(&["prepare", "p", "--model", "gpt-4o"], "")).unwrap();
    let text = prepared["messages"].to_string();
    assert!(text.contains("SUMMARY OF EARLIER CONVERSATION"), "{text}");
    assert!(
        text.contains("test t4 ... ok") && !text.contains("test t1 ... ok"),
        "{text}"
    );
    assert!(
        !cli.dir.path().join("agents").exists(),
        "nothing went to files"
    );
}

/// `agentmem serve` on `cli`'s database.
fn serve(cli: &Cli) -> common::PgServer {
    common::serve_on_database(cli.dir.path(), &cli.url, &cli.agent)
}

/// Sends `body` (GET when `None`) to `path`; the status and the JSON answer.
fn call(base: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("{base}{path}");
    let mut response = match body {
        None => agent.get(&url).call().unwrap(),
        Some(body) => agent
            .post(&url)
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap(),
    };
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn serve_on_postgres_answers_append_prepare_compact_and_events() {
    let Some(cli) = cli("serve") else { return };
    let server = serve(&cli);
    let base = server.base.clone();
    let events: Vec<Value> = four_turns()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let (status, _) = call(&base, "/v1/sessions", Some(json!({"session": "web"})));
    assert_eq!(status, 201);
    let (status, appended) = call(
        &base,
        "/v1/sessions/web/events",
        Some(json!({"events": events[..12]})),
    );
    assert_eq!(
        (status, appended["appended"].clone()),
        (200, json!(12)),
        "{appended}"
    );
    // A retry of an acknowledged batch, with the rest: only the rest is new.
    let (_, appended) = call(
        &base,
        "/v1/sessions/web/events",
        Some(json!({"events": events})),
    );
    assert_eq!(
        (appended["appended"].clone(), appended["duplicates"].clone()),
        (json!(4), json!(12))
    );
    let (status, prepared) = call(
        &base,
        "/v1/sessions/web/prepare",
        Some(json!({"model": "gpt-4o"})),
    );
    assert_eq!(status, 200, "{prepared}");
    assert_eq!(
        prepared["payload"]["messages"].as_array().unwrap().len(),
        16
    );
    let (status, report) = call(&base, "/v1/sessions/web/compact", Some(json!({})));
    assert_eq!(
        (status, report["applied"].clone()),
        (200, json!(true)),
        "{report}"
    );
    let (status, page) = call(&base, "/v1/sessions/web/events", None);
    assert_eq!(status, 200, "{page}");
    let ids: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let sent: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, sent, "every event once, in order, archive included");
    // The agent's memory is served from the database too.
    let (status, written) = call(
        &base,
        "/v1/memory",
        Some(json!({"text": "- served from the database"})),
    );
    assert_eq!(status, 200, "{written}");
    let (status, read) = call(&base, "/v1/memory", None);
    assert_eq!((status, &read), (200, &written));
    let (status, stale) = call(
        &base,
        "/v1/memory",
        Some(json!({"text": "- another note", "expected_hash": "0000000000000000"})),
    );
    assert_eq!(status, 409, "{stale}");
    drop(server);
    assert_eq!(
        cli.ok(&["memory", "show"], ""),
        "- served from the database\n"
    );
    // Another process reads what the service wrote.
    let listed: Value = serde_json::from_str(&cli.ok(&["--json", "sessions", "list"], "")).unwrap();
    assert_eq!(listed[0]["events"], 16);
    assert!(
        !cli.dir.path().join("agents").exists(),
        "nothing went to files"
    );
}

/// Every file under `dir`, by its path inside it, with its bytes.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                found.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

#[test]
fn migrate_round_trips_a_real_store_and_its_memory_and_resumes() {
    let Some(cli) = cli("round-trip") else { return };
    let on_files = |dir: tempfile::TempDir| Cli {
        dir,
        url: String::new(),
        agent: cli.agent.clone(),
    };
    let original = on_files(tempfile::tempdir().unwrap());
    let transcript = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/eval-data/trajectories/claude-code/session-3fe1b6bc.jsonl"
    );
    // Tool outputs over 1,000 tokens are evicted, so the store holds some.
    std::fs::write(
        original.dir.path().join("config.toml"),
        "[guard]\nevict_over_tokens = 1000\n",
    )
    .unwrap();
    original.ok(&["import", transcript, "--session", "real"], "");
    original.ok(&["compact", "real"], "");
    original.ok(&["memory", "append", "- the user prefers tabs"], "");
    original.ok(&["facts", "add", "The deploy target is fly.io."], "");
    original.ok(&["facts", "add", "The CI runs on GitHub Actions."], "");
    let listed: Vec<Value> =
        serde_json::from_str(&original.ok(&["--json", "facts", "list"], "")).unwrap();
    let first = listed[0]["id"].as_str().unwrap().to_owned();
    original.ok(
        &["facts", "supersede", &first, "The deploy target is Render."],
        "",
    );
    original.ok(
        &["state", "real", "--schema", "-"],
        r#"{"type": "object", "properties": {"goal": {"type": "string"}}}"#,
    );
    original.ok(
        &["state", "real", "--scope", "agent", "--schema", "-"],
        r#"{"type": "object"}"#,
    );
    original.ok(
        &["state", "real", "--patch", "-"],
        r#"{"goal": "ship the fix"}"#,
    );
    let agent_dir = original.dir.path().join("agents").join(&cli.agent);
    let evicted = agent_dir.join("sessions/real/evicted");
    assert!(
        std::fs::read_dir(&evicted).unwrap().count() > 0,
        "the import evicted large tool outputs"
    );
    let from = original.dir.path().to_str().unwrap();
    // Interrupted: the database holds another session under the same id,
    // so the first run stops there; once it is gone a second run finishes.
    cli.ok(
        &["ingest", "--session", "real"],
        "{\"trace_type\":\"user\",\"content\":\"not the same\"}\n",
    );
    let stopped = cli.run(&["migrate", "--from", from], "");
    assert!(!stopped.status.success());
    cli.ok(&["sessions", "delete", "real"], "");
    let first: Value =
        serde_json::from_str(&cli.ok(&["--json", "migrate", "--from", from], "")).unwrap();
    assert_eq!(first["copied"], 1, "{first}");
    assert!(first["evicted_outputs"].as_u64() > Some(0), "{first}");
    assert_eq!(
        (
            first["notebooks"].as_u64(),
            first["facts"].as_u64(),
            first["episodes"].as_u64()
        ),
        (Some(1), Some(3), Some(1)),
        "the notebook, two facts and one superseded, the compaction's episode: {first}"
    );
    assert_eq!(
        first["schemas"], 2,
        "the agent's and the session's: {first}"
    );
    let again: Value =
        serde_json::from_str(&cli.ok(&["--json", "migrate", "--from", from], "")).unwrap();
    assert_eq!(
        (
            again["already_there"].as_u64(),
            again["facts"].as_u64(),
            again["episodes"].as_u64()
        ),
        (Some(1), Some(0), Some(0)),
        "nothing twice: {again}"
    );
    assert_eq!(again["schemas"], 0, "{again}");
    // The memory and the working memory (its schema too) read the same on the database.
    for args in [
        &["memory", "show"][..],
        &["--json", "facts", "list", "--all"],
        &["--json", "state", "real"],
    ] {
        assert_eq!(original.ok(args, ""), cli.ok(args, ""), "{args:?}");
    }
    // And back to files: the same export, memory and evicted outputs.
    let back = on_files(tempfile::tempdir().unwrap());
    let to = back.dir.path().to_str().unwrap().to_owned();
    cli.ok(&["migrate", "--from", &cli.url, "--to", &to], "");
    for format in ["events", "openai-messages"] {
        let args = ["export", "real", "--format", format];
        assert_eq!(original.ok(&args, ""), back.ok(&args, ""), "{format}");
    }
    for args in [
        &["memory", "show"][..],
        &["--json", "facts", "list", "--all"],
        &["--json", "state", "real"],
    ] {
        assert_eq!(original.ok(args, ""), back.ok(args, ""), "{args:?}");
    }
    let back_dir = back.dir.path().join("agents").join(&cli.agent);
    for name in [
        "MEMORY.md",
        "semantic.jsonl",
        "episodic.jsonl",
        "facts.key",
        "working_memory.schema.json",
        "sessions/real/working_memory.schema.json",
    ] {
        assert_eq!(
            std::fs::read(agent_dir.join(name)).ok().is_some(),
            name != "facts.key",
            "{name}: only a redacted fact makes a key"
        );
        // Byte for byte: a schema is written back as files write it.
        assert_eq!(
            std::fs::read(agent_dir.join(name)).ok(),
            std::fs::read(back_dir.join(name)).ok(),
            "{name}"
        );
    }
    assert_eq!(
        files_under(&evicted),
        files_under(&back_dir.join("sessions/real/evicted"))
    );
}

#[test]
fn memory_evictions_endings_and_injection_work_on_postgres() {
    let Some(cli) = cli("memory") else { return };
    // Tool outputs over 100 tokens are evicted: each of four_turns' is.
    std::fs::write(
        cli.dir.path().join("config.toml"),
        "[guard]\nevict_over_tokens = 100\n",
    )
    .unwrap();
    cli.ok(&["memory", "append", "- the user prefers tabs"], "");
    cli.ok(&["facts", "add", "The deploy target is fly.io."], "");
    cli.ok(&["ingest", "--session", "m"], &four_turns());
    let page: Value =
        serde_json::from_str(&cli.ok(&["--json", "evicted", "m", "call2"], "")).unwrap();
    assert_eq!(page["text"], "test t2 ... ok\n".repeat(30), "{page}");
    assert_eq!(page["total_lines"], 30);
    let missing = cli.run(&["evicted", "m", "call9"], "");
    assert!(!missing.status.success());
    assert!(cli.ok(&["tools", "m"], "").contains("call4"));
    // MEMORY.md and the facts ride in the context, read from the database.
    let prepared = cli.ok(&["prepare", "m", "--model", "gpt-4o"], "");
    assert!(prepared.contains("the user prefers tabs"), "{prepared}");
    assert!(prepared.contains("fly.io"), "{prepared}");
    // A compaction's episode, and an ending's, are kept in the database and
    // given to the agent's other sessions.
    let report: Value =
        serde_json::from_str(&cli.ok(&["--json", "compact", "m", "--keep-turns", "1"], ""))
            .unwrap();
    assert_eq!(report["applied"], true, "{report}");
    let ended: Value =
        serde_json::from_str(&cli.ok(&["--json", "sessions", "end", "m"], "")).unwrap();
    assert_eq!(ended["tags"], json!(["session-end"]), "{ended}");
    let again: Value =
        serde_json::from_str(&cli.ok(&["--json", "sessions", "end", "m"], "")).unwrap();
    assert_eq!(
        again, ended,
        "ending again without new events gives the same item"
    );
    cli.ok(
        &["ingest", "--session", "n"],
        "{\"trace_type\":\"user\",\"content\":\"ok\"}\n",
    );
    let other = cli.ok(&["prepare", "n", "--model", "gpt-4o"], "");
    assert!(
        other.contains("# What you know from earlier sessions"),
        "{other}"
    );
    assert!(other.contains("## Session m (turn_"), "{other}");
    assert!(
        !cli.dir.path().join("agents").exists(),
        "nothing went to files"
    );
}
