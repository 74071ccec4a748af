//! The `agentmem` binary end to end: real processes on a real data directory.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn agentmem(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    command
        .arg("--dir")
        .arg(dir)
        .env_remove("AGENTMEM_DIR")
        .env_remove("AGENTMEM_DURABILITY");
    command
}

fn run_ok(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Standard output read as one JSON value a line.
fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events_ndjson(n: usize) -> String {
    (0..n)
        .map(|i| match i % 4 {
            0 => json!({"trace_type": "user", "content": format!("request {i}")}),
            1 => json!({"trace_type": "tool_call", "tool_call_id": format!("c{i}"), "tool_name": "bash", "tool_args": {"cmd": "ls"}}),
            2 => json!({"trace_type": "tool_result", "tool_call_id": format!("c{}", i - 1), "content": "a.rs"}),
            _ => json!({"trace_type": "assistant", "content": format!("answer {i}")}),
        })
        .map(|v| format!("{v}\n"))
        .collect()
}

#[test]
fn ingest_list_show_export_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s1"]),
        &events_ndjson(8),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout(&out).trim(), "s1");

    let list: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["sessions", "list", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(list[0]["id"], "s1");
    assert_eq!(list[0]["events"], 8);
    assert_eq!(list[0]["turns"], 2);
    assert_eq!(list[0]["title"], "request 0");

    let table = stdout(&run_ok(agentmem(dir.path()).args(["sessions", "list"])));
    assert!(
        table.starts_with("ID") && table.contains("request 0"),
        "{table}"
    );

    let lines = json_lines(&run_ok(agentmem(dir.path()).args(["export", "s1"])));
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[2]["turn_id"], "turn_0001");

    let messages: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["export", "s1", "--format", "openai-messages"])).stdout,
    )
    .unwrap();
    assert_eq!(messages[1]["tool_calls"][0]["id"], "c1");
    assert_eq!(messages[2]["role"], "tool");

    let tools: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["tools", "s1", "--turn", "2", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert_eq!(tools[0]["tool_call_id"], "c5");
    assert_eq!(tools[0]["status"], "SUCCESS");
}

#[test]
fn malformed_stdin_lines_are_reported_and_the_rest_ingested() {
    let dir = tempfile::tempdir().unwrap();
    let input = "{\"trace_type\":\"user\",\"content\":\"a\"}\nnot json\n{\"trace_type\":\"tool_result\",\"content\":\"orphan\"}\n";
    let out = common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        input,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stdin line 2") && stderr.contains("stdin line 3"),
        "{stderr}"
    );
    let list: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["sessions", "list", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(list[0]["events"], 1);
}

#[test]
fn ids_that_would_escape_the_data_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for args in [
        vec!["--agent", "../x", "sessions", "create"],
        vec!["--agent", "/etc", "sessions", "list"],
        vec!["sessions", "create", "--id", "../../escape"],
        vec!["sessions", "show", "..\\x"],
        vec!["import", "nothing.json", "--session", ".hidden"],
    ] {
        let out = agentmem(&data).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("invalid") || stderr.contains("read the transcript"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!data.exists(), "a refused id created files");
    assert!(!dir.path().join("escape").exists() && !dir.path().join("x").exists());
}

#[test]
fn a_second_writer_process_is_told_who_holds_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = agentmem(dir.path())
        .args(["ingest", "--session", "shared"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_out = BufReader::new(first.stdout.take().unwrap());
    let mut line = String::new();
    first_out.read_line(&mut line).unwrap(); // the session id: the lock is held now
    let second = common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "shared"]),
        "",
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(
        stderr.contains(&format!("locked by pid {}", first.id())),
        "{stderr}"
    );
    // Readers are not blocked by the writer, and prepare falls back to reading.
    run_ok(agentmem(dir.path()).args(["sessions", "show", "shared"]));
    let prepared = run_ok(agentmem(dir.path()).args(["prepare", "shared", "--model", "gpt-4o"]));
    assert!(String::from_utf8_lossy(&prepared.stderr).contains("preparing read-only"));
    drop(first.stdin.take());
    assert!(first.wait().unwrap().success());
}

/// Kills `agentmem ingest` (durability `always`) with SIGKILL at several points;
/// every acknowledged event must be in the log, in order, and the session must open.
#[test]
fn sigkill_during_ingest_loses_no_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let input: Vec<String> = events_ndjson(400).lines().map(str::to_owned).collect();
    for (round, kill_after) in [1usize, 7, 33, 120, 250].into_iter().enumerate() {
        let session = format!("k{round}");
        let mut child = agentmem(dir.path())
            .args([
                "--durability",
                "always",
                "ingest",
                "--ack",
                "--session",
                &session,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder_input = input.clone();
        let feeder = std::thread::spawn(move || {
            for chunk in feeder_input.chunks(3) {
                if stdin
                    .write_all((chunk.join("\n") + "\n").as_bytes())
                    .is_err()
                {
                    break;
                }
            }
        });
        let mut acks = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(acks.next().unwrap().unwrap(), session);
        let acked: Vec<String> = acks.by_ref().take(kill_after).map(Result::unwrap).collect();
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let _ = feeder.join();

        let stored = json_lines(&run_ok(agentmem(dir.path()).args(["export", &session])));
        let stored_ids: Vec<&str> = stored.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(
            &stored_ids[..acked.len()],
            &acked[..],
            "round {round}: acknowledged events missing"
        );
        for (i, event) in stored.iter().enumerate() {
            let sent: Value = serde_json::from_str(&input[i]).unwrap();
            assert_eq!(
                event["trace_type"], sent["trace_type"],
                "round {round}: event {i} out of order"
            );
        }
        // The session opens for writing again (the lock died with the process).
        common::run_with_stdin(
            agentmem(dir.path()).args(["ingest", "--session", &session]),
            &input[0],
        );
    }
}

#[test]
fn fork_then_append_to_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "origin"]),
        &events_ndjson(12),
    );
    let fork = run_ok(agentmem(dir.path()).args([
        "sessions",
        "fork",
        "origin",
        "--at-turn",
        "2",
        "--new-id",
        "branch",
    ]));
    assert_eq!(stdout(&fork).trim(), "branch");
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "branch"]),
        "{\"trace_type\":\"user\",\"content\":\"branch only\"}\n",
    );
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "origin"]),
        "{\"trace_type\":\"user\",\"content\":\"origin only\"}\n",
    );
    let show = |id: &str| -> Value {
        serde_json::from_slice(
            &run_ok(agentmem(dir.path()).args(["sessions", "show", id, "--json"])).stdout,
        )
        .unwrap()
    };
    assert_eq!(show("branch")["events"], 9);
    assert_eq!(show("branch")["forked_from"], "origin");
    assert_eq!(show("origin")["events"], 13);
    let branch = stdout(&run_ok(agentmem(dir.path()).args(["export", "branch"])));
    assert!(branch.contains("branch only") && !branch.contains("origin only"));
    run_ok(agentmem(dir.path()).args(["sessions", "delete", "branch"]));
    let list: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["sessions", "list", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentmem-import/tests/fixtures")
        .join(name)
}

#[test]
fn reimporting_a_grown_file_appends_only_the_new_events() {
    let dir = tempfile::tempdir().unwrap();
    let import = |name: &str| -> Value {
        let out = run_ok(
            agentmem(dir.path())
                .args(["--json", "import"])
                .arg(fixture(name)),
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = import("claude-code-turn-1.jsonl");
    assert_eq!(first["format"], "claude-code");
    let second = import("claude-code-turn-2.jsonl");
    assert_eq!(
        second["session"], first["session"],
        "the file's own session id is reused"
    );
    assert_eq!(second["already_present"], first["appended"]);
    let session = second["session"].as_str().unwrap();
    let show: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["sessions", "show", session, "--json"])).stdout,
    )
    .unwrap();
    let total = first["appended"].as_u64().unwrap() + second["appended"].as_u64().unwrap();
    assert_eq!(show["events"].as_u64().unwrap(), total);
    assert_eq!(show["pending_tool_calls"], 0);
}

#[test]
fn every_fixture_imports_with_auto_detection() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::fs::read_dir(fixture("")).unwrap();
    for entry in fixtures {
        let path = entry.unwrap().path();
        let out = run_ok(agentmem(dir.path()).args(["--json", "import"]).arg(&path));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            report["appended"].as_u64().unwrap() > 0,
            "{}: {report}",
            path.display()
        );
    }
}

#[test]
fn an_unknown_format_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "just some text\n").unwrap();
    let out = agentmem(&dir.path().join("data"))
        .arg("import")
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("claude-code") && stderr.contains("--format"),
        "{stderr}"
    );
}

#[test]
fn context_prepare_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &events_ndjson(8),
    );

    let context: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["context", "s", "--model", "gpt-4.1", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(context["budget"]["context_window"], 1_047_576);
    assert_eq!(context["model_source"], "override");
    assert_eq!(context["events"], 8);
    assert!(context["sections"]["tool_outputs"].as_u64().unwrap() > 0);
    assert!(context.get("last_call").is_none(), "no usage yet");

    // A call whose prompt the provider mostly read from its cache.
    let answer = json!({"trace_type": "assistant", "content": "Done.",
        "usage": {"prompt_tokens": 10_000, "cached_tokens": 9_000, "completion_tokens": 100, "model": "gpt-4.1"}});
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &format!("{answer}\n"),
    );
    let context: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["context", "s", "--json"])).stdout,
    )
    .unwrap();
    let last = &context["last_call"];
    assert_eq!(
        (
            last["prompt_tokens"].as_u64(),
            last["cached_tokens"].as_u64()
        ),
        (Some(10_000), Some(9_000))
    );
    // gpt-4.1: $2 a million input, $0.50 cached, $8 output.
    let cost = last["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (1_000.0 * 2.0 + 9_000.0 * 0.5 + 100.0 * 8.0) / 1e6).abs() < 1e-9,
        "{cost}"
    );
    let text = stdout(&run_ok(agentmem(dir.path()).args(["context", "s"])));
    assert!(
        text.contains("9,000 read from the provider's cache (90%)"),
        "{text}"
    );
    let text = stdout(&run_ok(agentmem(dir.path()).args([
        "context",
        "s",
        "--model",
        "nobody-knows-this-model",
    ])));
    assert!(
        text.contains("UNKNOWN MODEL") && text.contains("200,000"),
        "{text}"
    );

    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}]"#,
    )
    .unwrap();
    let prepare_for_claude = |extra: &[&str]| {
        let mut command = agentmem(dir.path());
        let model = ["--model", "claude-sonnet-4-5", "--system", "Be brief."];
        run_ok(command.args(["prepare", "s"]).args(model).args(extra))
    };
    let out = prepare_for_claude(&["--stats", "--tools", tools.to_str().unwrap()]);
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(payload["system"][0]["text"], "Be brief.");
    assert_eq!(payload["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(payload["tools"][0]["name"], "bash");
    assert_eq!(payload["messages"][0]["role"], "user");
    let stats: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(stats["target"], "anthropic");
    assert!(stats["sections"]["tool_schemas"].as_u64().unwrap() > 0);

    let unmarked = prepare_for_claude(&["--prompt-cache", "off"]);
    let payload: Value = serde_json::from_slice(&unmarked.stdout).unwrap();
    assert_eq!(payload["system"], "Be brief.");
    assert!(!stdout(&unmarked).contains("cache_control"));

    let live = run_ok(agentmem(dir.path()).args([
        "prepare",
        "s",
        "--model",
        "gpt-4o",
        "--live-context",
        "Today is Tuesday.",
    ]));
    let payload: Value = serde_json::from_slice(&live.stdout).unwrap();
    let last = payload["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last,
        json!({"role": "system", "content": "Today is Tuesday."})
    );

    let bad = agentmem(dir.path())
        .args(["prepare", "s", "--target", "cohere"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("openai-responses"));

    let count = common::run_with_stdin(
        agentmem(dir.path()).args(["tokens", "--encoding", "o200k_base"]),
        "Hello, world!",
    );
    assert_eq!(stdout(&count).trim(), "4");
}

/// An 8k or 16k model gets room for its prompt, and a model the registry
/// does not know is flagged on stderr, whatever the output mode.
#[test]
fn context_gives_small_windows_a_budget_and_warns_of_an_unknown_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[[models]]\nmodel = \"my-local-llama\"\ncontext_window = 16384\nmax_output_tokens = 4096\n",
    )
    .unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &events_ndjson(8),
    );
    let context = |model: &str| {
        let out = run_ok(agentmem(dir.path()).args(["context", "s", "--json", "--model", model]));
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        (stats, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for (model, input_budget) in [("gpt-4", 3_072), ("my-local-llama", 10_240)] {
        let (stats, stderr) = context(model);
        assert_eq!(stats["input_budget"], input_budget, "{model}: {stats}");
        assert_eq!(stats["over_budget"], false, "{model}");
        assert!(!stderr.contains("unknown"), "{model}: {stderr}");
    }
    let (stats, stderr) = context("nobody-knows-this-model");
    assert_eq!(stats["model_source"], "unknown");
    assert!(
        stderr.contains("\"nobody-knows-this-model\" is unknown")
            && stderr.contains("200000-token window")
            && stderr.contains("[[models]]"),
        "{stderr}"
    );
}

fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The shared workload's task on a small workload of its format: each turn
/// ingested, then one call prepared under the input budget, timed per turn.
/// 40 turns in the shared workload's format, 4 events each.
fn small_workload(dir: &Path) -> std::path::PathBuf {
    let workload = dir.join("workload.jsonl");
    let lines: String = (0..40)
        .flat_map(|turn| {
            let output = format!("line {turn} of the build log\n").repeat(40 + turn * 5);
            [
                json!({"turn": turn, "kind": "user", "content": format!("fix failing test {turn}")}),
                json!({"turn": turn, "kind": "tool_call", "tool_name": "bash", "tool_call_id": format!("c{turn}"), "tool_args": {"cmd": "cargo test"}}),
                json!({"turn": turn, "kind": "tool_result", "tool_name": "bash", "tool_call_id": format!("c{turn}"), "content": output}),
                json!({"turn": turn, "kind": "assistant", "content": format!("test {turn} passes now")}),
            ]
        })
        .map(|v| format!("{v}\n"))
        .collect();
    std::fs::write(&workload, lines).unwrap();
    workload
}

/// `bench --workload` on `workload` under a 4,000-token budget, syncs left to
/// the OS, with `extra` flags: its rows.
fn bench_workload(dir: &Path, workload: &Path, extra: &[&str]) -> Vec<Value> {
    let out = run_ok(
        agentmem(dir)
            .args([
                "--durability",
                "os",
                "bench",
                "--skip-storage",
                "--workload",
            ])
            .arg(workload)
            .args(["--budget", "4000", "--json"])
            .args(extra),
    );
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn bench_workload_times_each_turn_under_the_input_budget() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let rows = bench_workload(dir.path(), &workload, &["--model", "gpt-4o"]);
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["bench"] == name)
            .unwrap_or_else(|| panic!("no {name} row in {rows:?}"))
    };
    let per_turn = row("workload ingest + prepare");
    assert!(per_turn["p50_us"].as_f64().unwrap() > 0.0);
    for window in ["first_window_p50_us", "last_window_p50_us"] {
        let p50 = per_turn[window].as_f64().unwrap();
        let max = per_turn["max_us"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 <= max, "{window}: {p50} of {per_turn}");
    }
    let spans = per_turn["history_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 10, "{per_turn}");
    for (index, span) in spans.iter().enumerate() {
        assert_eq!(span["first_turn"], index * 4 + 1, "{span}");
        assert_eq!(span["last_turn"], index * 4 + 4, "{span}");
        let (mean, p50) = (
            span["mean_us"].as_f64().unwrap(),
            span["p50_us"].as_f64().unwrap(),
        );
        let max = per_turn["max_us"].as_f64().unwrap();
        let p99 = span["p99_us"].as_f64().unwrap();
        assert!(
            mean > 0.0 && mean <= max && p50 <= p99 && p99 <= max,
            "{span}"
        );
    }
    for (key, growth) in [
        ("p50_us", "last_over_second_tenth_p50"),
        ("p99_us", "last_over_second_tenth_p99"),
    ] {
        let tenth = |i: usize| spans[i][key].as_f64().unwrap();
        let expected = tenth(9) / tenth(1);
        let reported = per_turn[growth].as_f64().unwrap();
        assert!(
            (reported - expected).abs() < 1e-9,
            "{growth}: {reported} vs {expected}"
        );
    }
    assert!(per_turn["detail"].as_str().unwrap().contains("40 turns"));
    let slowest = row("workload slowest turns")["turns"].as_array().unwrap();
    assert_eq!(slowest.len(), 5, "{slowest:?}");
    let totals: Vec<f64> = slowest
        .iter()
        .map(|t| t["ingest_us"].as_f64().unwrap() + t["prepare_us"].as_f64().unwrap())
        .collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{totals:?}");
    assert!(slowest
        .iter()
        .all(|t| (1..=40).contains(&t["turn"].as_u64().unwrap())));
    let budget = row("workload budget");
    assert_eq!(budget["turns_over_budget"], 0, "{budget}");
    let detail = budget["detail"].as_str().unwrap();
    assert!(
        detail.contains("input budget 4000 tokens") && detail.contains("durability os"),
        "{detail}"
    );
}

/// With `--earlier`, the timed session's agent has an ended session behind
/// it, and each new user message brings its history into the context;
/// alone, nothing is there to bring.
#[test]
fn bench_workload_after_an_earlier_session_recalls_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let memory_turns = |rows: &[Value]| {
        let budget = rows
            .iter()
            .find(|r| r["bench"] == "workload budget")
            .unwrap_or_else(|| panic!("no budget row in {rows:?}"));
        assert_eq!(budget["turns_over_budget"], 0, "{budget}");
        budget["turns_with_memory"].as_u64().unwrap()
    };
    let alone = bench_workload(dir.path(), &workload, &[]);
    assert_eq!(memory_turns(&alone), 0);
    let after = bench_workload(
        dir.path(),
        &workload,
        &["--earlier", workload.to_str().unwrap()],
    );
    assert_eq!(memory_turns(&after), 40);
}

/// With a model, the workload run reports how far its background embedder
/// fell behind: in documents, and as the age of the oldest one waiting.
#[test]
fn bench_workload_with_a_model_reports_the_embedding_lag() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentmem-embed/tests/tiny-bert");
    let model = model.to_str().unwrap();
    let rows = bench_workload(
        dir.path(),
        &workload,
        &["--model-latency-ms", "5", "--embedder-dir", model],
    );
    let lag = rows
        .iter()
        .find(|r| r["bench"] == "workload embedding lag")
        .unwrap_or_else(|| panic!("no lag row in {rows:?}"));
    let number = |key: &str| {
        lag[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {lag}"))
    };
    assert!(
        number("ingested_docs") >= 80.0,
        "two documents a turn at least: {lag}"
    );
    assert!(
        number("embedded_docs") >= number("ingested_docs"),
        "all embedded at the end: {lag}"
    );
    assert!(
        number("peak_behind_docs") >= number("behind_at_end_docs"),
        "{lag}"
    );
    assert!(number("turns_behind") <= 40.0, "{lag}");
    // The last document waiting at the end waited through the drain too.
    if number("behind_at_end_docs") > 0.0 {
        assert!(
            number("peak_behind_s") >= number("behind_at_end_s"),
            "{lag}"
        );
    }
    // 40 turns of 5 ms each at least.
    assert!(
        number("ingested_per_s") > 0.0 && number("ingested_per_s") < number("ingested_docs") / 0.2,
        "{lag}"
    );
    assert!(number("mean_behind_s") <= number("peak_behind_s"), "{lag}");
    assert!(
        lag["detail"].as_str().unwrap().contains("40 turns"),
        "{lag}"
    );
}

#[test]
fn bench_history_with_a_model_times_embedding_and_recall_with_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentmem-embed/tests/tiny-bert");
    let out = run_ok(
        agentmem(dir.path())
            .args(["bench", "--skip-storage", "--history"])
            .arg(&workload)
            .args(["--vectors", "--embedder-dir"])
            .arg(&model)
            .arg("--json"),
    );
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let row = |name: &str| rows.iter().find(|r| r["bench"] == name).unwrap();
    let stored = row("history vectors stored");
    assert_eq!(stored["documents"], 160, "every event: {stored}");
    assert!(stored["detail"].as_str().unwrap().contains("tiny-bert"));
    let recall = row("history recall with vectors");
    assert!(recall["p50_ms"].as_f64().unwrap() > 0.0, "{recall}");
}

#[test]
fn bench_history_keeps_its_store_and_times_it_again_without_loading() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let kept = dir.path().join("kept");
    let run = || {
        let out = run_ok(
            agentmem(dir.path())
                .args(["bench", "--skip-storage", "--history"])
                .arg(&workload)
                .arg("--history-store")
                .arg(&kept)
                .arg("--json"),
        );
        let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
        let row = |name: &str| rows.iter().find(|r| r["bench"] == name).unwrap().clone();
        (row("history ingest + index"), row("history search"))
    };
    let (loaded, _) = run();
    assert!(
        loaded["events_per_second"].as_f64().unwrap() > 0.0,
        "{loaded}"
    );
    let (again, searched) = run();
    assert_eq!(again["figure"], "kept from an earlier run", "{again}");
    assert!(again["events_per_second"].is_null(), "{again}");
    assert_eq!(again["events"], loaded["events"], "{again}");
    assert!(searched["p50_ms"].as_f64().unwrap() > 0.0, "{searched}");
}

/// The usage a Claude Code session recorded measured Claude Code's own
/// prompts (a system prompt of thousands of tokens): replayed with the same
/// model, it must not stand for the size of the contexts the replay prepares.
#[test]
fn a_replayed_session_is_measured_by_what_the_replay_sends_not_by_its_recorded_usage() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(
        agentmem(dir.path())
            .args(["--durability", "os", "replay"])
            .arg(fixture("claude-code-turn-2.jsonl"))
            .args([
                "--model",
                "claude-sonnet-4-20250514",
                "--budget",
                "3000",
                "--json",
            ]),
    );
    let lines = json_lines(&out);
    let (summary, turns) = lines.split_last().unwrap();
    assert_eq!(summary["turns_over_budget"], 0, "{summary}");
    for turn in turns {
        assert!(turn["context_tokens"].as_u64().unwrap() < 1_500, "{turn}");
        assert_eq!(turn["tokens_saved"], 0, "nothing needed shrinking: {turn}");
    }
}

#[test]
fn replay_prints_a_line_per_turn_fits_the_budget_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("context.svg");
    let out = run_ok(
        agentmem(dir.path())
            .args(["--durability", "os", "replay"])
            .arg(example("long-coding-session.jsonl"))
            // Inline, so that the compactions are counted whatever the
            // machine's load: drafted in the background (the default), a
            // replay with no model latency may outrun every draft.
            .args([
                "--model",
                "gpt-4o",
                "--budget",
                "16000",
                "--compaction-timing",
                "inline",
                "--session",
                "kept",
                "--json",
                "--plot",
            ])
            .arg(&plot),
    );
    let lines = json_lines(&out);
    let (summary, turns) = lines.split_last().unwrap();
    assert_eq!(summary["summary"], true);
    assert_eq!(summary["turns"].as_u64().unwrap() as usize, turns.len());
    assert!(turns.len() > 100);
    assert_eq!(summary["turns_over_budget"], 0);
    assert!(summary["compactions"].as_u64().unwrap() >= 1, "{summary}");
    let repeated = summary["prefix_repeated_share"].as_f64().unwrap();
    assert!(repeated > 0.5 && repeated < 1.0, "{summary}");
    for turn in turns {
        assert!(
            turn["context_tokens"].as_u64().unwrap() <= turn["budget"].as_u64().unwrap(),
            "{turn}"
        );
        assert!(turn["engine_us"].as_f64().unwrap() > 0.0);
    }
    let mean_us = |window: &[Value]| {
        window
            .iter()
            .map(|t| t["engine_us"].as_f64().unwrap())
            .sum::<f64>()
            / 100.0
    };
    // JSON parsing may round a float's last bit: compare within a millionth.
    let close = |field: &str, expected: f64| {
        let got = summary[field].as_f64().unwrap();
        assert!(
            (got - expected).abs() <= expected * 1e-6,
            "{field}: {got} vs {expected}"
        );
    };
    close("engine_us_mean_first_100", mean_us(&turns[..100]));
    close(
        "engine_us_mean_last_100",
        mean_us(&turns[turns.len() - 100..]),
    );
    let median_us = |window: &[Value]| {
        let mut engine: Vec<f64> = window
            .iter()
            .map(|t| t["engine_us"].as_f64().unwrap())
            .collect();
        engine.sort_by(f64::total_cmp);
        engine[50]
    };
    close("engine_us_p50_first_100", median_us(&turns[..100]));
    close(
        "engine_us_p50_last_100",
        median_us(&turns[turns.len() - 100..]),
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("compaction trigger")
            && svg.contains("stroke-dasharray=\"3,3\"")
    );

    // The replayed session was kept: its whole history is still exported.
    let exported = stdout(&run_ok(agentmem(dir.path()).args(["export", "kept"])));
    let source_events = std::fs::read_to_string(example("long-coding-session.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(exported.lines().count(), source_events);
}

#[test]
fn compact_with_focus_and_read_evicted_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "line of a very long build log with a path src/main.rs:12\n".repeat(3_000);
    let mut input = events_ndjson(40);
    input.push_str(&format!(
        "{}\n",
        json!({"trace_type": "user", "content": "show the build log"})
    ));
    input.push_str(&format!("{}\n", json!({"trace_type": "tool_call", "tool_call_id": "big", "tool_name": "bash", "tool_args": {"cmd": "cargo build"}})));
    input.push_str(&format!(
        "{}\n",
        json!({"trace_type": "tool_result", "tool_call_id": "big", "content": huge})
    ));
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &input,
    );

    let page =
        run_ok(agentmem(dir.path()).args(["evicted", "s", "big", "--offset", "2", "--limit", "3"]));
    assert_eq!(stdout(&page).lines().count(), 3);
    assert!(String::from_utf8_lossy(&page.stderr).contains("--offset 5"));
    let missing = agentmem(dir.path())
        .args(["evicted", "s", "nope"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let bad = agentmem(dir.path())
        .args(["evicted", "s", "../../etc/passwd"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid tool call id"));

    let report: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["compact", "s", "--focus", "the build log", "--json"]))
            .stdout,
    )
    .unwrap();
    assert_eq!(report["applied"], true);
    assert_eq!(report["focus"], "the build log");
    assert!(report["tokens_saved"].as_u64().unwrap() > 0);
    let context: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["context", "s", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(context["compactions"], 1);
    let exported = stdout(&run_ok(agentmem(dir.path()).args(["export", "s"])));
    assert_eq!(
        exported.lines().count(),
        43,
        "export still returns the whole history"
    );
}

/// Asked for, a compaction folds a history of two short exchanges, and says
/// that it freed nothing.
#[test]
fn compact_summarizes_a_short_history_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let events = json!({"trace_type": "user", "content": "Hello?"}).to_string()
        + "\n"
        + &json!({"trace_type": "assistant", "content": "Hi."}).to_string()
        + "\n";
    for session in ["text", "json", "text", "json"] {
        common::run_with_stdin(
            agentmem(dir.path()).args(["ingest", "--session", session]),
            &events,
        );
    }
    let text = stdout(&run_ok(agentmem(dir.path()).args(["compact", "text"])));
    assert!(
        text.starts_with("compacted 2 events") && text.contains("note: nothing was freed"),
        "{text}"
    );
    let context: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["context", "text", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(context["compactions"], 1, "{context}");

    let report: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["compact", "json", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(report["applied"], true, "{report}");
    assert_eq!(report["tokens_saved"], 0, "{report}");
    assert!(report["note"]
        .as_str()
        .unwrap()
        .contains("nothing was freed"));
    let exported = stdout(&run_ok(agentmem(dir.path()).args(["export", "json"])));
    assert_eq!(exported.lines().count(), 4, "nothing lost");
}

#[test]
fn reimport_after_compaction_adds_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let import = || -> Value {
        let out = run_ok(
            agentmem(dir.path())
                .args(["--json", "import"])
                .arg(fixture("claude-code-turn-2.jsonl")),
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = import();
    let session = first["session"].as_str().unwrap().to_owned();
    let report: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["compact", &session, "--keep-turns", "0", "--json"]))
            .stdout,
    )
    .unwrap();
    assert_eq!(report["applied"], true, "{report}");
    let again = import();
    assert_eq!(again["appended"], 0, "{again}");
    assert_eq!(again["already_present"], first["appended"]);
}

#[test]
fn memory_show_append_replace_with_compare_and_swap() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(agentmem(dir.path()).args(["memory", "append", "- prefers tabs"]));
    let shown: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["memory", "show", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(shown["content"], "- prefers tabs\n");
    let hash = shown["hash"].as_str().unwrap().to_owned();
    run_ok(agentmem(dir.path()).args([
        "memory",
        "replace",
        "tabs",
        "spaces",
        "--expect-hash",
        &hash,
    ]));
    let stale = agentmem(dir.path())
        .args(["memory", "append", "- other", "--expect-hash", &hash])
        .output()
        .unwrap();
    assert!(!stale.status.success());
    assert!(String::from_utf8_lossy(&stale.stderr).contains("changed since you read it"));
    let text = stdout(&run_ok(agentmem(dir.path()).args(["memory", "show"])));
    assert_eq!(text, "- prefers spaces\n");
}

/// `agentmem state ID --json`, parsed.
fn state_json(dir: &Path, id: &str) -> Value {
    serde_json::from_slice(&run_ok(agentmem(dir).args(["state", id, "--json"])).stdout).unwrap()
}

#[test]
fn state_patch_schema_history_with_compare_and_swap() {
    let dir = tempfile::tempdir().unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &events_ndjson(8),
    );
    let file = |name: &str, value: Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path
    };
    let plan = file(
        "plan.json",
        json!({"plan": [{"step": "read", "done": false}], "files": []}),
    );
    run_ok(
        agentmem(dir.path())
            .args(["state", "s", "--expect-version", "0", "--patch"])
            .arg(&plan),
    );
    let add = json!([{"op": "add", "path": "/files/-", "value": "src/auth.rs"}]);
    let add_file = file("add.json", add.clone());
    let stale = agentmem(dir.path())
        .args(["state", "s", "--expect-version", "0", "--patch"])
        .arg(&add_file)
        .output()
        .unwrap();
    assert!(!stale.status.success());
    assert!(String::from_utf8_lossy(&stale.stderr).contains("expected version 0, found 1"));
    assert_eq!(state_json(dir.path(), "s")["version"], 1, "nothing changed");

    let schema = file(
        "schema.json",
        json!({"type": "object", "properties": {"plan": {"type": "array", "items": {"properties": {"done": {"type": "boolean"}}}}}}),
    );
    run_ok(
        agentmem(dir.path())
            .args(["state", "s", "--schema"])
            .arg(&schema),
    );
    let bad = file(
        "bad.json",
        json!({"plan": [{"step": "read", "done": "yes"}]}),
    );
    let refused = agentmem(dir.path())
        .args(["state", "s", "--patch"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("invalid at /plan/0/done"));

    // A patch on stdin, checked against the version it was made for.
    let from_stdin = common::run_with_stdin(
        agentmem(dir.path()).args(["state", "s", "--patch", "-", "--expect-version", "1"]),
        &add.to_string(),
    );
    assert!(
        from_stdin.status.success(),
        "{}",
        String::from_utf8_lossy(&from_stdin.stderr)
    );
    let state = state_json(dir.path(), "s");
    assert_eq!(state["version"], 2);
    assert_eq!(state["document"]["files"], json!(["src/auth.rs"]));
    assert_eq!(state["schema"]["scope"], "session");

    let history = stdout(&run_ok(agentmem(dir.path()).args([
        "state",
        "s",
        "--history",
    ])));
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(lines.len(), 2, "{history}");
    assert!(
        lines[0].starts_with("v1") && lines[0].contains("merge patch"),
        "{history}"
    );
    assert!(
        lines[1].starts_with("v2") && lines[1].contains("JSON patch"),
        "{history}"
    );

    // Compacted, forked and prepared, the state is the same and in the context.
    run_ok(agentmem(dir.path()).args(["compact", "s", "--keep-turns", "0"]));
    run_ok(agentmem(dir.path()).args(["sessions", "fork", "s", "--new-id", "f"]));
    assert_eq!(state_json(dir.path(), "f")["document"], state["document"]);
    let payload = stdout(&run_ok(
        agentmem(dir.path()).args(["prepare", "f", "--model", "gpt-4.1"]),
    ));
    assert!(payload.contains("# Working memory (version 2)") && payload.contains("src/auth.rs"));
    let context: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["context", "f", "--model", "gpt-4.1", "--json"])).stdout,
    )
    .unwrap();
    assert!(context["sections"]["working_memory"].as_u64().unwrap() > 0);
    let found = stdout(&run_ok(
        agentmem(dir.path()).args(["search", "auth", "--role", "state"]),
    ));
    assert!(found.contains("src/[auth].rs"), "{found}");
}

#[test]
fn facts_add_merge_supersede_delete() {
    let dir = tempfile::tempdir().unwrap();
    let added: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["facts", "add", "Deploys go through staging."])).stdout,
    )
    .unwrap();
    assert_eq!(added["outcome"], "added");
    let id = added["id"].as_str().unwrap().to_owned();
    let merged: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["facts", "add", "deploys go through staging"])).stdout,
    )
    .unwrap();
    assert_eq!(merged, json!({"outcome": "merged", "id": id}));
    let new_id = stdout(&run_ok(agentmem(dir.path()).args([
        "facts",
        "supersede",
        &id,
        "Deploys go through staging, then canary.",
    ])));
    let all: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["facts", "list", "--all", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(all[0]["superseded_by"], new_id.trim());
    let current: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["facts", "list", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(current.as_array().unwrap().len(), 1);
    run_ok(agentmem(dir.path()).args(["facts", "delete", new_id.trim()]));
    assert!(!agentmem(dir.path())
        .args(["facts", "delete", "fact-9999"])
        .output()
        .unwrap()
        .status
        .success());
}

#[test]
fn search_an_archived_session_and_recall_for_a_query() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = format!(
        "{}\n",
        json!({"trace_type": "user", "content": "The deploy script fails with error E4031 on the staging host"})
    );
    input.push_str(&events_ndjson(40));
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "old"]),
        &input,
    );
    let report: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["compact", "old", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(report["applied"], true);

    let hits: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["search", "E4031 staging", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(hits[0]["session"], "old");
    assert_eq!(hits[0]["turn_id"], "turn_0001");
    assert_eq!(hits[0]["role"], "user");
    let text = stdout(&run_ok(agentmem(dir.path()).args([
        "search",
        "E4031",
        "--role",
        "user",
        "--session",
        "old",
    ])));
    assert!(
        text.contains("> [turn_0001] User: The deploy script fails with error [E4031]"),
        "{text}"
    );
    let none = stdout(&run_ok(
        agentmem(dir.path()).args(["search", "E4031", "--role", "tool"]),
    ));
    assert!(none.contains("No match"));
    let bad = agentmem(dir.path())
        .args(["search", "x", "--role", "robot"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("use one of: user, assistant, tool, system")
    );
    let bad = agentmem(dir.path())
        .args(["search", "x", "--since", "last tuesday"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("YYYY-MM-DD"));

    let recalled: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args([
            "recall",
            "why does the deploy fail on staging?",
            "--budget",
            "200",
            "--json",
        ]))
        .stdout,
    )
    .unwrap();
    assert!(recalled["tokens"].as_u64().unwrap() <= 200);
    let items = recalled["items"].as_array().unwrap();
    assert!(items.iter().any(|i| i["kind"] == "episode"));
    let event = items.iter().find(|i| i["kind"] == "event").unwrap();
    assert_eq!(event["session"], "old");
    assert!(event["score"].as_f64().unwrap() > 0.0);
    assert!(recalled["block"].as_str().unwrap().contains("E4031"));

    let ended: Value = serde_json::from_slice(
        &run_ok(agentmem(dir.path()).args(["sessions", "end", "old", "--json"])).stdout,
    )
    .unwrap();
    assert_eq!(ended["tags"], json!(["session-end"]));
    assert_eq!(ended["session_id"], "old");
}

#[test]
fn eval_locomo_reports_recall_beside_both_baselines() {
    let dir = tempfile::tempdir().unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/locomo/mini.json");
    let report: Value = serde_json::from_slice(
        &run_ok(
            agentmem(dir.path())
                .args(["eval", "locomo", "--budget", "120", "--json"])
                .arg(&path),
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(report["budget_tokens"], 120);
    assert_eq!(report["questions"], 5);
    for method in ["agentmem", "bm25", "trimming"] {
        assert!(report[method]["recall"].is_number(), "{method}");
        let share = report[method]["passage_recall"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{method}: {share}");
        assert!(
            report[method]["evidence_turns"].as_u64().unwrap() >= 5,
            "{method}"
        );
    }
    let table = stdout(&run_ok(
        agentmem(dir.path())
            .args(["eval", "locomo", "--budget", "120", "--budget", "1000"])
            .arg(&path),
    ));
    assert_eq!(table.matches("mini.json: evidence recall at").count(), 2);
    assert!(table.contains("trimming") && table.contains("bm25"));
    assert!(table.contains("PASSAGES"), "{table}");
}

/// Several files in one run, each scored at every budget; a file whose
/// questions carry LongMemEval's `question_type` (and its dates) is scored
/// by type too.
#[test]
fn eval_locomo_reads_several_files_and_scores_longmemeval_types() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/locomo");
    let reports: Value = serde_json::from_slice(
        &run_ok(
            agentmem(dir.path())
                .args([
                    "eval", "locomo", "--budget", "120", "--budget", "1000", "--json",
                ])
                .arg(fixtures.join("mini.json"))
                .arg(fixtures.join("longmemeval-mini.json")),
        )
        .stdout,
    )
    .unwrap();
    let runs: Vec<(String, u64)> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["dataset"].as_str().unwrap().to_owned(),
                r["budget_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("mini.json", 120),
        ("mini.json", 1000),
        ("longmemeval-mini.json", 120),
        ("longmemeval-mini.json", 1000),
    ];
    assert_eq!(runs, expected.map(|(d, b)| (d.to_owned(), b)));
    let generous = &reports[3];
    assert_eq!(generous["questions"], 2);
    let types = &generous["agentmem"]["by_type"];
    assert_eq!(types["knowledge-update"]["questions"], 1, "{generous}");
    assert_eq!(types["single-session-user"]["recall"], 1.0, "{generous}");
    assert!(
        reports[0]["agentmem"].get("by_type").is_none(),
        "LoCoMo has no types"
    );
    let table = stdout(&run_ok(
        agentmem(dir.path())
            .args(["eval", "locomo", "--budget", "1000"])
            .arg(fixtures.join("longmemeval-mini.json")),
    ));
    assert!(
        table.contains("QUESTION TYPE") && table.contains("knowledge-update"),
        "{table}"
    );
}

#[test]
fn search_shows_the_text_that_matched_deep_in_a_long_event() {
    let dir = tempfile::tempdir().unwrap();
    let filler = "The migration plan covers every table in the schema. ".repeat(12);
    let content =
        format!("{filler}The orders table needs a composite index on customer_id. {filler}");
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &format!(
            "{}\n",
            json!({"trace_type": "assistant", "content": content})
        ),
    );
    let text = stdout(&run_ok(
        agentmem(dir.path()).args(["search", "composite index"]),
    ));
    let hit = text.lines().find(|l| l.starts_with('>')).unwrap();
    assert!(hit.contains("[composite] [index] on customer_id"), "{text}");
}

/// Every file of a folder with its bytes.
/// The files that differ between two listings of [`files_of`].
fn changed(
    before: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    after: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
) -> Vec<std::path::PathBuf> {
    let paths: std::collections::BTreeSet<_> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter(|path| before.get(*path) != after.get(*path))
        .cloned()
        .collect()
}

fn files_of(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn prepare_takes_strategy_memory_and_budget_per_call_and_a_dry_run_changes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let turns: String = (0..12)
        .flat_map(|t| {
            [
                json!({"trace_type": "user", "content": format!("Question {t}: why does the parser fail?")}),
                json!({"trace_type": "assistant", "content": "It fails on nested quotes. ".repeat(60)}),
            ]
        })
        .map(|event| format!("{event}\n"))
        .collect();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &turns,
    );
    run_ok(agentmem(dir.path()).args(["memory", "append", "- The deploy key rotates on Fridays."]));
    let small = [
        "prepare",
        "s",
        "--model",
        "gpt-4o",
        "--context-window",
        "4000",
        "--max-output-tokens",
        "500",
        "--safety-margin",
        "0",
    ];
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "other"]),
        "{\"trace_type\": \"user\", \"content\": \"the parser fails on nested quotes in lexer.rs\"}\n",
    );
    let folder = dir.path().join("agents/default/sessions/s");
    // Nothing in the data directory changes, the agent's search index
    // included: not made when it is missing, not caught up when it is there.
    for index in std::fs::read_dir(dir.path().join("agents/default")).unwrap() {
        let index = index.unwrap().path();
        if index.to_string_lossy().contains("search.sqlite") {
            std::fs::remove_file(index).unwrap();
        }
    }
    let before = files_of(dir.path());
    let dry: Value = serde_json::from_slice(
        &run_ok(
            agentmem(dir.path())
                .args(small)
                .args(["--strategy", "summarize", "--dry-run"]),
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["would_compact"], true, "{}", dry["stats"]);
    assert!(dry["payload"].to_string().contains("rotates on Fridays"));
    let none: Vec<std::path::PathBuf> = Vec::new();
    assert_eq!(
        changed(&before, &files_of(dir.path())),
        none,
        "a dry run writes nothing"
    );
    run_ok(agentmem(dir.path()).args(["search", "parser"]));
    let indexed = files_of(dir.path());
    let read = run_ok(agentmem(dir.path()).args(small).arg("--dry-run"));
    assert!(
        stdout(&read).contains("lexer.rs"),
        "recalled from the index as it is"
    );
    assert_eq!(
        changed(&indexed, &files_of(dir.path())),
        none,
        "a dry run writes nothing"
    );

    let quiet = run_ok(agentmem(dir.path()).args(small).args([
        "--memory",
        "off",
        "--strategy",
        "none",
        "--stats",
    ]));
    assert!(!stdout(&quiet).contains("rotates on Fridays"), "memory off");
    let stats: Value = serde_json::from_slice(&quiet.stderr).unwrap();
    assert_eq!(stats["over_budget"], true, "none sends everything: {stats}");
    assert_eq!(stats["sections"]["memory"], 0);

    let real =
        run_ok(
            agentmem(dir.path())
                .args(small)
                .args(["--strategy", "summarize", "--stats"]),
        );
    let stats: Value = serde_json::from_slice(&real.stderr).unwrap();
    let actions = stats["actions"].as_array().unwrap();
    assert!(
        actions.iter().any(|a| a["action"] == "compacted"),
        "{actions:?}"
    );
    assert_ne!(files_of(&folder), before, "the real call compacted");
    let refused = agentmem(dir.path())
        .args(small)
        .args(["--memory", "maybe"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("on or off"));
}

/// Fields agentmem does not know go into the log as they were written: a
/// number beyond 64 bits is not rounded to a float, whether the event came
/// through `ingest`, `import` or `serve --stdio`.
#[test]
fn ingest_import_and_serve_keep_unknown_numbers_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"trace_type":"user","content":"hi","vendor":123456789012345678901234567890,"price":{"exact":0.10000000000000000000001}}"#;
    let file = dir.path().join("events.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "live"]),
        &format!("{line}\n"),
    );
    run_ok(
        agentmem(dir.path())
            .args(["import", "--session", "imported"])
            .arg(&file),
    );
    let append = format!(r#"{{"op":"append","session":"served","events":[{line}]}}"#);
    let served = common::run_with_stdin(
        agentmem(dir.path()).args(["serve", "--stdio"]),
        &format!("{{\"op\":\"create_session\",\"session\":\"served\"}}\n{append}\n"),
    );
    assert!(
        stdout(&served).contains(r#""appended":1"#),
        "{}",
        stdout(&served)
    );
    let reads: String = ["live", "imported", "served"]
        .iter()
        .map(|session| format!("{{\"op\":\"events\",\"session\":\"{session}\"}}\n"))
        .collect();
    let read = stdout(&common::run_with_stdin(
        agentmem(dir.path()).args(["serve", "--stdio"]),
        &reads,
    ));
    assert_eq!(read.lines().count(), 3, "{read}");
    for (session, served) in ["live", "imported", "served"].iter().zip(read.lines()) {
        let exported = stdout(&run_ok(agentmem(dir.path()).args(["export", session])));
        for text in [exported.as_str(), served] {
            assert!(
                text.contains(r#""vendor":123456789012345678901234567890"#)
                    && text.contains(r#""price":{"exact":0.10000000000000000000001}"#),
                "{session}: {text}"
            );
        }
    }
}

/// A command keeps the token counts it made in the data directory; the next
/// command finds every piece it counts there, so it writes nothing new and
/// its output is the same; a damaged file is ignored and written anew.
#[test]
fn commands_keep_token_counts_for_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    common::run_with_stdin(
        agentmem(dir.path()).args(["ingest", "--session", "s1"]),
        &events_ndjson(40),
    );
    let kept = dir.path().join("token-counts");
    let context = || {
        stdout(&run_ok(
            agentmem(dir.path()).args(["--json", "context", "s1"]),
        ))
    };
    let first = context();
    assert!(
        kept.exists(),
        "context counted the session and kept the counts"
    );
    let written = std::fs::read(&kept).unwrap();
    let modified = std::fs::metadata(&kept).unwrap().modified().unwrap();
    assert_eq!(context(), first);
    assert_eq!(std::fs::read(&kept).unwrap(), written);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().modified().unwrap(),
        modified
    );
    std::fs::write(&kept, b"damaged").unwrap();
    assert_eq!(context(), first, "a damaged file only costs time");
    assert_ne!(
        std::fs::read(&kept).unwrap(),
        b"damaged",
        "and is written anew"
    );
}

/// `bench --cold` times the query commands as whole processes on a store of
/// the replayed workload, with and without kept token counts.
#[test]
fn bench_cold_times_the_query_commands_as_processes() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let out = run_ok(
        agentmem(dir.path())
            .args(["--json", "bench", "--skip-storage", "--cold"])
            .arg(&workload)
            .args(["--cold-runs", "2"]),
    );
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["bench"].as_str().unwrap()).collect();
    let commands = [
        "cold process start (--version)",
        "cold search",
        "cold recall",
        "cold context",
        "cold prepare",
    ];
    assert_eq!(names, [commands, commands].concat());
    for (row, kept) in rows.iter().zip(
        ["token counts kept"; 5]
            .into_iter()
            .chain(["no token counts kept"; 5]),
    ) {
        let (p50, p99) = (
            row["p50_ms"].as_f64().unwrap(),
            row["p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{row}");
        assert!(row["detail"].as_str().unwrap().ends_with(kept), "{row}");
    }
}

/// `bench --cold --cold-history` ingests a LoCoMo file's conversations into
/// the store first, so search and recall run over their sessions too.
#[test]
fn bench_cold_times_the_commands_beside_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let workload = small_workload(dir.path());
    let history = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/locomo/mini.json");
    let out = run_ok(
        agentmem(dir.path())
            .args(["--json", "bench", "--skip-storage", "--cold"])
            .arg(&workload)
            .args(["--cold-runs", "1", "--cold-history"])
            .arg(&history),
    );
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.len(), 10);
    for row in &rows {
        let detail = row["detail"].as_str().unwrap();
        assert!(
            detail.contains("beside a history of 3 sessions (27 turns)"),
            "{row}"
        );
    }
}
