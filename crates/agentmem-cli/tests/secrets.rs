//! Secrets of 31 kinds planted in one session (user and assistant messages,
//! tool arguments, outputs, errors and structured results, a huge evicted
//! output, working memory, a fact, MEMORY.md), through compactions, the
//! session's end and fact extraction, and recalled from another session
//! every way there is (the library's prepare, the CLI, HTTP, MCP on stdio
//! and over HTTP). No planted secret is in any file but the raw record
//! (logs, archive, evicted outputs, the working memory's materialized
//! state) and the search index, in any prompt or recall answer of the
//! other session, or in a title.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentmem::{AgentId, Config, PrepareRequest, SessionId, Store, Target};
use common::{agentmem_with_input, args};
use serde_json::{json, Value};

/// Each planted secret: its label (said beside it, so the line can be
/// found redacted), the line that says it, and the secret itself.
const PLANTED: &[(&str, &str, &str)] = &[
    ("kind01", "kind01 staging deploy: AWS key id AKIABXOMCZ4G90LYMVLS", "AKIABXOMCZ4G90LYMVLS"),
    ("kind02", "kind02 staging deploy: aws_secret_access_key=xcuaw4Q5SRnH5I9TI/lbSL0SXhpgtPio25wiL/6h", "xcuaw4Q5SRnH5I9TI/lbSL0SXhpgtPio25wiL/6h"),
    ("kind03", "kind03 staging deploy: cloned with ghp_5VAVwh6NG5YvpIJ9u8IRuVOVTaDzZwLzBCBs", "ghp_5VAVwh6NG5YvpIJ9u8IRuVOVTaDzZwLzBCBs"),
    ("kind04", "kind04 staging deploy: 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 is the CI token", "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"),
    ("kind05", "kind05 staging deploy: legacy key 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 rejected", "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"),
    ("kind06", "kind06 staging deploy: OPENAI_API_KEY set to sk-proj-BXy6_CdgxSTgYKVdFVeuo0YM1NvPYTnvKLXOh-UE", "sk-proj-BXy6_CdgxSTgYKVdFVeuo0YM1NvPYTnvKLXOh-UE"),
    ("kind07", "kind07 staging deploy: the summarizer uses sk-ant-api03-8juAmz9eUpJRQVLK7y7I0n_sDRzyDb3o_CWxUxLe-R1S1yJ2yYFGIQoFroqPI0tqv1hXiWxtDzC24TnC6GeZce-hJ4t6UAA", "sk-ant-api03-8juAmz9eUpJRQVLK7y7I0n_sDRzyDb3o_CWxUxLe-R1S1yJ2yYFGIQoFroqPI0tqv1hXiWxtDzC24TnC6GeZce-hJ4t6UAA"),
    ("kind08", "kind08 staging deploy: notify with xoxb-153125722662-4771932681302-SdTMLxxGxeu9ls5OnxLtsOn9", "xoxb-153125722662-4771932681302-SdTMLxxGxeu9ls5OnxLtsOn9"),
    ("kind09", "kind09 staging deploy hook https://hooks.slack.com/services/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", "T12OEAPOC/BC9SWPAYCIE/zhe9acZJMJSd0G1Cn7MrF4Mt"),
    ("kind10", "kind10 staging deploy: billing uses sk_live_TOik5eSulU8KhxGEvIbsGwjR", "sk_live_TOik5eSulU8KhxGEvIbsGwjR"),
    ("kind11", "kind11 staging deploy: maps key AIzagAIHqJQa7ON8MCTSrfLaQmMZ5U9GwaPrDEh", "AIzagAIHqJQa7ON8MCTSrfLaQmMZ5U9GwaPrDEh"),
    ("kind12", "kind12 staging deploy: mail through 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", "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"),
    ("kind13", "kind13 staging deploy storage DefaultEndpointsProtocol=https;AccountName=acmestaging;AccountKey=PYUJwgDB/W/oEOfgI3ImiuBYKV03wYfLHr15TD8yfFyf4X4DLJzjHTwOkHmx+wgr8/54s2kbA4xJsvRBj1Iv/Q==;EndpointSuffix=core.windows.net", "PYUJwgDB/W/oEOfgI3ImiuBYKV03wYfLHr15TD8yfFyf4X4DLJzjHTwOkHmx+wgr8/54s2kbA4xJsvRBj1Iv/Q=="),
    ("kind14", "kind14 staging deploy: app registration secret 1eA8Q~Ta0VeviB6eCPQcYKp1LkkmpfmpmvLiKCGU", "1eA8Q~Ta0VeviB6eCPQcYKp1LkkmpfmpmvLiKCGU"),
    ("kind15", "kind15 staging deploy: session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJkZXBsb3llci03NzQxIiwicm9sZSI6ImFkbWluIn0._dObmNXcBwWfDsWlOuWhOLu3vIJ3Kf1GLgMzie6zLkC", "eyJzdWIiOiJkZXBsb3llci03NzQxIiwicm9sZSI6ImFkbWluIn0._dObmNXcBwWfDsWlOuWhOLu3vIJ3Kf1GLgMzie6zLkC"),
    ("kind16", "kind16 staging deploy key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC2eE74p+MDa/WSMKs0o5+r+q7/+lrwfWQ\n-----END RSA PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC2eE74p+MDa/WSMKs0o5+r+q7/+lrwfWQ"),
    ("kind17", "kind17 staging deploy: the admin password is Blue-Falcon-1984!", "Blue-Falcon-1984"),
    ("kind18", "kind18 staging deploy: curl -u deployer:Zq8wLp2vR7x https://deploy.staging.example.com/api", "Zq8wLp2vR7x"),
    ("kind19", "kind19 staging deploy: mysql -h db.staging -u root -pK7vQx92mZt app", "K7vQx92mZt"),
    ("kind20", "kind20 staging deploy: Authorization: Bearer 7d1f6c2a9e4b4c0f8a3e5d2b1c9f0e7a6b5c4d3e", "7d1f6c2a9e4b4c0f8a3e5d2b1c9f0e7a6b5c4d3e"),
    ("kind21", "kind21 staging deploy: Authorization: Token 9f2b7c4e1a6d3f8b0c5e2a7d4f1b8c3e6a9d2f5b", "9f2b7c4e1a6d3f8b0c5e2a7d4f1b8c3e6a9d2f5b"),
    ("kind22", "kind22 staging deploy: Authorization: Basic ZGVwbG95OnhYQkFVWXM1OFNZRThJ", "ZGVwbG95OnhYQkFVWXM1OFNZRThJ"),
    ("kind23", "kind23 staging deploy: postgres://deploy:Wd7zkP3qZr44@db.staging.internal:5432/app", "Wd7zkP3qZr44"),
    ("kind24", "kind24 staging deploy contact is mara.quinn@corp-example.com", "mara.quinn@corp-example.com"),
    ("kind25", "kind25 staging deploy on-call phone +44 20 7946 0958", "7946 0958"),
    ("kind26", "kind26 staging deploy: charged card 4539 5787 6362 1486", "4539 5787 6362 1486"),
    ("kind27", "kind27 staging deploy: contractor SSN 219-09-9999 on file", "219-09-9999"),
    ("kind28", "kind28 staging deploy: refunds to IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00"),
    ("kind29", "kind29 staging deploy: registry glpat-LPvobyaCM0V_jdf43rw3", "glpat-LPvobyaCM0V_jdf43rw3"),
    ("kind30", "kind30 staging deploy: model pulls with hf_oCPdZO1eLU0zYsdgvh1xYFqJPpEGYxbgsU", "hf_oCPdZO1eLU0zYsdgvh1xYFqJPpEGYxbgsU"),
    ("kind31", "kind31 staging deploy: publish with npm_uet9LuxQ8fRbNvnzfPEH01wTD9gn8z61M8Gd", "npm_uet9LuxQ8fRbNvnzfPEH01wTD9gn8z61M8Gd"),
];

/// The planted line labelled `label`.
fn line(label: &str) -> &'static str {
    PLANTED.iter().find(|(l, _, _)| *l == label).unwrap().1
}

fn ndjson(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

/// Session `a`'s turns: each a user message, a tool call, its output and an
/// answer, the planted lines spread over every place an event holds text.
fn turns_of_a(labels: &[&str]) -> Vec<Value> {
    let filler = "Working through the staging deploy checklist step by step. ".repeat(40);
    let mut events = Vec::new();
    for chunk in labels.chunks(5) {
        let said = |i: usize| chunk.get(i).map_or("staging deploy", |l| line(l));
        let call = format!("c-{}", chunk[0]);
        events.push(json!({"trace_type": "user", "content": format!("Always keep this for the staging deploy: {}", said(0))}));
        events.push(json!({"trace_type": "tool_call", "tool_call_id": call, "tool_name": "bash", "tool_args": {"cmd": said(1)}}));
        events.push(json!({"trace_type": "tool_result", "tool_call_id": call, "content": said(2), "tool_result": {"stdout": said(2), "note": said(3)}}));
        let failed = format!("f-{}", chunk[0]);
        events.push(json!({"trace_type": "tool_call", "tool_call_id": failed, "tool_name": "deploy", "tool_args": {"target": "staging"}}));
        events.push(json!({"trace_type": "tool_result", "tool_call_id": failed, "content": "staging deploy failed", "tool_error": said(3)}));
        events
            .push(json!({"trace_type": "assistant", "content": format!("{}\n{filler}", said(4))}));
    }
    // Turns after them, so a compaction takes them in.
    for n in 0..5 {
        events.push(
            json!({"trace_type": "user", "content": format!("Next staging deploy step {n}.")}),
        );
        events.push(json!({"trace_type": "assistant", "content": filler}));
    }
    events
}

fn run(dir: &Path, arguments: &[&str], input: &str) -> String {
    let output = agentmem_with_input(dir, &args(arguments), &[("OPENAI_API_KEY", None)], input);
    String::from_utf8(output.stdout).unwrap()
}

/// Session `a`, through two compactions and its end; a fact and a MEMORY.md
/// line beside it.
fn plant(dir: &Path) {
    let first = json!({"trace_type": "user", "content": format!("Set up the staging deploy: {}", line("kind01"))});
    let in_events: Vec<&str> = [
        "kind02", "kind03", "kind04", "kind05", "kind06", "kind07", "kind08", "kind10", "kind11",
        "kind12", "kind14", "kind15", "kind16", "kind17",
    ]
    .to_vec();
    let mut events = vec![first];
    events.extend(turns_of_a(&in_events));
    run(dir, &["ingest", "--session", "a"], &ndjson(&events));
    let state = json!({"deploy": {"note": "staging deploy targets", "kind09": line("kind09"), "kind13": line("kind13")}});
    run(dir, &["state", "a", "--patch", "-"], &state.to_string());
    let compacted: Value =
        serde_json::from_str(&run(dir, &["--json", "compact", "a"], "")).unwrap();
    assert_eq!(compacted["applied"], true, "{compacted}");
    let later = [
        "kind18", "kind19", "kind20", "kind21", "kind22", "kind23", "kind26", "kind27", "kind28",
        "kind29", "kind30",
    ];
    let mut events = turns_of_a(&later);
    // A huge output, evicted to a file: its start says the secret.
    events.push(json!({"trace_type": "tool_call", "tool_call_id": "big", "tool_name": "bash", "tool_args": {"cmd": "npm publish"}}));
    let huge = format!(
        "{}\n{}",
        line("kind31"),
        "npm notice staging deploy tarball file\n".repeat(12_000)
    );
    events.push(json!({"trace_type": "tool_result", "tool_call_id": "big", "content": huge}));
    events.push(json!({"trace_type": "user", "content": "Is the staging deploy done?"}));
    run(dir, &["ingest", "--session", "a"], &ndjson(&events));
    let compacted: Value =
        serde_json::from_str(&run(dir, &["--json", "compact", "a"], "")).unwrap();
    assert_eq!(compacted["applied"], true, "{compacted}");
    run(dir, &["sessions", "end", "a"], "");
    run(dir, &["facts", "add", line("kind24")], "");
    run(dir, &["memory", "append", line("kind25")], "");
    let evicted = dir.join("agents/default/sessions/a/evicted/big.txt");
    assert!(evicted.is_file(), "the huge output was not evicted");
}

/// What session `b` is shown, every way: prepared payloads (library, CLI,
/// HTTP), recall (CLI, HTTP, MCP on stdio and over HTTP), and session lists.
struct Shown {
    /// Each answer, with where it came from.
    answers: Vec<(String, String)>,
    /// The CLI's recall block.
    recall_block: String,
}

const QUESTION: &str = "How do we do the staging deploy?";
const BUDGET: &str = "30000";

fn library_prepares(dir: &Path) -> Vec<(String, String)> {
    let store = Store::with_config(dir, Config::load(dir).unwrap());
    let mut b = store
        .open_session(&AgentId::default(), &SessionId::new("b").unwrap())
        .unwrap();
    [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Anthropic,
        Target::Gemini,
    ]
    .into_iter()
    .map(|target| {
        let prepared = b.prepare(&PrepareRequest::new("gpt-4o", target)).unwrap();
        (
            format!("library prepare {target:?}"),
            serde_json::to_string(&prepared.payload).unwrap(),
        )
    })
    .collect()
}

fn cli_answers(dir: &Path) -> (Vec<(String, String)>, String) {
    let recall = run(
        dir,
        &[
            "--json",
            "recall",
            QUESTION,
            "--budget",
            BUDGET,
            "--session",
            "b",
        ],
        "",
    );
    let block = serde_json::from_str::<Value>(&recall).unwrap()["block"]
        .as_str()
        .unwrap()
        .to_owned();
    let mcp_messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": QUESTION, "budget_tokens": 30_000}}}),
    ];
    let answers = vec![
        ("CLI recall".to_owned(), recall),
        (
            "CLI prepare".to_owned(),
            run(dir, &["prepare", "b", "--model", "gpt-4o"], ""),
        ),
        (
            "CLI prepare anthropic".to_owned(),
            run(
                dir,
                &[
                    "prepare",
                    "b",
                    "--model",
                    "claude-sonnet-4-5",
                    "--target",
                    "anthropic",
                ],
                "",
            ),
        ),
        (
            "MCP stdio recall".to_owned(),
            run(dir, &["mcp", "--session", "b"], &ndjson(&mcp_messages)),
        ),
        (
            "CLI sessions list".to_owned(),
            run(dir, &["sessions", "list"], ""),
        ),
        (
            "CLI sessions list --json".to_owned(),
            run(dir, &["--json", "sessions", "list"], ""),
        ),
        (
            "CLI sessions show".to_owned(),
            run(dir, &["sessions", "show", "a"], ""),
        ),
    ];
    (answers, block)
}

/// One HTTP/1.1 exchange with the server at `addr`: status and body.
fn http(addr: &str, method: &str, path: &str, body: &Value) -> (u16, String) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (
        head.split_whitespace().nth(1).unwrap().parse().unwrap(),
        body.to_owned(),
    )
}

fn http_answers(dir: &Path) -> Vec<(String, String)> {
    let mut server = Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .rsplit("http://")
        .next()
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    let calls = [
        ("GET", "/v1/sessions".to_owned(), json!({})),
        (
            "POST",
            "/v1/recall".to_owned(),
            json!({"query": QUESTION, "budget": 30_000, "session": "b"}),
        ),
        (
            "POST",
            "/v1/recall".to_owned(),
            json!({"query": QUESTION, "budget": 30_000}),
        ),
        (
            "POST",
            "/v1/sessions/b/prepare".to_owned(),
            json!({"model": "gpt-4o"}),
        ),
        (
            "POST",
            "/mcp?session=b".to_owned(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": QUESTION, "budget_tokens": 30_000}}}),
        ),
    ];
    let answers = calls
        .into_iter()
        .map(|(method, path, body)| {
            let (status, text) = http(&addr, method, &path, &body);
            assert_eq!(status, 200, "{method} {path}: {text}");
            (format!("HTTP {method} {path}"), text)
        })
        .collect();
    server.kill().unwrap();
    server.wait().unwrap();
    answers
}

fn shown_to_b(dir: &Path) -> Shown {
    run(
        dir,
        &["ingest", "--session", "b"],
        &ndjson(&[json!({"trace_type": "user", "content": QUESTION})]),
    );
    let mut answers = library_prepares(dir);
    let (cli, recall_block) = cli_answers(dir);
    answers.extend(cli);
    answers.extend(http_answers(dir));
    Shown {
        answers,
        recall_block,
    }
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The raw record (what happened, kept for audit and for the session's
/// own use) and the search index over it: the only files a secret may be in.
fn is_raw_record_or_index(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name == "raw_traces.jsonl"
        || name == "raw_traces_archive.jsonl"
        || name.ends_with(".corrupt")
        || name.starts_with("search.sqlite")
        || path.parent().is_some_and(|p| p.ends_with("search.text"))
        || name == "working_memory.json"
        || path.parent().is_some_and(|p| p.ends_with("evicted"))
}

#[test]
fn no_planted_secret_leaves_the_raw_record_or_reaches_another_session() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[memory]\ncross_session_tokens = 30000\n[context]\nprotected_tools = [\"bash\"]\n",
    )
    .unwrap();
    plant(dir.path());
    let shown = shown_to_b(dir.path());

    let mut leaks = Vec::new();
    let mut scanned = 0;
    for file in files_under(dir.path()) {
        if is_raw_record_or_index(&file) {
            continue;
        }
        scanned += 1;
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        leaks.extend(
            PLANTED
                .iter()
                .filter(|(_, _, s)| text.contains(s))
                .map(|(l, _, _)| format!("{l} in {}", file.display())),
        );
    }
    for (source, text) in &shown.answers {
        leaks.extend(
            PLANTED
                .iter()
                .filter(|(_, _, s)| text.contains(s))
                .map(|(l, _, _)| format!("{l} in {source}")),
        );
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    assert!(scanned >= 8, "only {scanned} files scanned");

    // The planted lines were shown, each with its secret redacted.
    let everything: String = shown.answers.iter().map(|(_, t)| t.as_str()).collect();
    for (label, _, _) in PLANTED {
        assert!(
            everything.contains(label),
            "{label} never reached session b"
        );
    }
    let listed = &shown
        .answers
        .iter()
        .find(|(s, _)| s == "CLI sessions list")
        .unwrap()
        .1;
    assert!(
        listed.contains("Set up the staging deploy: kind01 staging deploy: AWS key id [REDACTED"),
        "{listed}"
    );
    for recalled in shown.recall_block.lines().filter(|l| l.contains("kind")) {
        assert!(
            recalled.contains("[REDACTED:"),
            "recalled unredacted: {recalled}"
        );
    }
    // The raw record keeps what happened.
    let raw: String = [
        "raw_traces.jsonl",
        "raw_traces_archive.jsonl",
        "evicted/big.txt",
    ]
    .iter()
    .map(|name| {
        std::fs::read_to_string(dir.path().join("agents/default/sessions/a").join(name)).unwrap()
    })
    .collect();
    for (label, _, secret) in PLANTED
        .iter()
        .filter(|(l, _, _)| !["kind24", "kind25"].contains(l))
    {
        assert!(
            raw.contains(&secret.replace('\n', "\\n")) || raw.contains(secret),
            "{label} lost from the raw record"
        );
    }
}
