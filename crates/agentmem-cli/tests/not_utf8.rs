//! A byte that is not UTF-8 costs its line, never the input: `ingest` and
//! `import` store every other line, name the bad one and exit with 65 (the
//! input was partly bad); `serve --stdio` and `mcp` answer the bad line with
//! an error and go on serving. A byte-order mark before UTF-8 text is not
//! part of it: it costs nothing.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

/// The exit status of a command that stored all but some rejected lines.
const INPUT_REJECTED: i32 = 65;

fn agentmem(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    command.arg("--dir").arg(dir).env_remove("AGENTMEM_DIR");
    command
}

fn output_of(dir: &Path, args: &[&str]) -> Value {
    let out = agentmem(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sessions(dir: &Path) -> Vec<Value> {
    output_of(dir, &["--json", "sessions", "list"])
        .as_array()
        .unwrap()
        .clone()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `lines` joined into NDJSON, `bad` (a Latin-1 "é", not UTF-8) in line 2.
fn with_a_bad_second_line(lines: [&str; 3]) -> Vec<u8> {
    let mut input = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if index == 1 {
            input.extend_from_slice(&line.as_bytes()[..line.len() - 2]);
            input.push(0xe9);
            input.extend_from_slice(b"\"}");
        } else {
            input.extend_from_slice(line.as_bytes());
        }
        input.push(b'\n');
    }
    input
}

const EVENTS: [&str; 3] = [
    r#"{"trace_type":"user","content":"what is in the cafe menu?"}"#,
    r#"{"trace_type":"assistant","content":"the cafX"}"#,
    r#"{"trace_type":"assistant","content":"coffee and tea"}"#,
];

#[test]
fn ingest_rejects_the_line_with_the_bad_byte_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run_with_stdin_bytes(
        agentmem(dir.path()).args(["ingest", "--session", "menu"]),
        &with_a_bad_second_line(EVENTS),
    );
    assert_eq!(out.status.code(), Some(INPUT_REJECTED), "{}", stderr(&out));
    let stderr = stderr(&out);
    assert!(
        stderr.contains("stdin line 2") && stderr.contains("UTF-8"),
        "{stderr}"
    );
    let exported = agentmem(dir.path())
        .args(["export", "menu"])
        .output()
        .unwrap();
    let contents: Vec<String> = String::from_utf8(exported.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(contents, ["what is in the cafe menu?", "coffee and tea"]);
}

#[test]
fn nothing_but_bad_lines_creates_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = with_a_bad_second_line(EVENTS);
    bad.drain(..EVENTS[0].len() + 1);
    bad.truncate(bad.len() - EVENTS[2].len() - 1);
    for args in [&["ingest"][..], &["ingest", "--session", "fresh"]] {
        let out = common::run_with_stdin_bytes(agentmem(dir.path()).args(args), &bad);
        assert_eq!(out.status.code(), Some(INPUT_REJECTED), "{}", stderr(&out));
        assert!(stderr(&out).contains("stdin line 1"), "{}", stderr(&out));
    }
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, &bad).unwrap();
    let out = agentmem(dir.path())
        .arg("import")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(INPUT_REJECTED), "{}", stderr(&out));
    assert!(
        sessions(dir.path()).is_empty(),
        "{:?}",
        sessions(dir.path())
    );
}

#[test]
fn import_of_jsonl_rejects_the_line_with_the_bad_byte_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("events.jsonl");
    std::fs::write(&file, with_a_bad_second_line(EVENTS)).unwrap();
    let out = agentmem(&dir.path().join("data"))
        .args(["--json", "import"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(INPUT_REJECTED), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["appended"], 2, "{report}");
    assert_eq!(report["skipped"][0]["record"], 2, "{report}");
    assert!(report["skipped"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("UTF-8"));
    assert!(stderr(&out).contains("UTF-8"), "{}", stderr(&out));
}

#[test]
fn import_of_a_json_document_reads_the_bad_byte_as_a_replacement_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let messages = json!([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Translate the menu."},
        {"role": "assistant", "content": "cafX au lait"},
        {"role": "user", "content": "Thanks."}
    ]);
    let text = serde_json::to_string_pretty(&messages).unwrap();
    let bad_line = text.lines().position(|l| l.contains("cafX")).unwrap() + 1;
    let bytes: Vec<u8> = text
        .bytes()
        .map(|b| if b == b'X' { 0xe9 } else { b })
        .collect();
    let file = dir.path().join("chat.json");
    std::fs::write(&file, bytes).unwrap();
    let data = dir.path().join("data");
    let out = agentmem(&data)
        .args(["--json", "import", "--format", "openai-messages"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(INPUT_REJECTED), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["appended"], 4, "{report}");
    assert_eq!(report["skipped"][0]["record"], bad_line, "{report}");
    let session = report["session"].as_str().unwrap();
    let exported = agentmem(&data).args(["export", session]).output().unwrap();
    assert!(String::from_utf8(exported.stdout)
        .unwrap()
        .contains("caf\u{fffd} au lait"));
}

/// The answers of a line protocol (`serve` for `serve --stdio`, or `mcp`)
/// to `input`, one JSON value a line; it must end well.
fn replies_of(dir: &Path, protocol: &str, input: &[u8]) -> Vec<Value> {
    let args: &[&str] = match protocol {
        "serve" => &["serve", "--stdio"],
        _ => &["mcp"],
    };
    let out = common::run_with_stdin_bytes(agentmem(dir).args(args), input);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `serve --stdio` answers each line, the bad one with an error, in order.
#[test]
fn serve_stdio_answers_a_bad_line_with_an_error_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = Vec::new();
    input.extend_from_slice(
        json!({"id": 1, "op": "create_session", "session": "s"})
            .to_string()
            .as_bytes(),
    );
    input.extend_from_slice(b"\n{\"id\":2,\"op\":\"append\",\"session\":\"s\",\"events\":[{\"trace_type\":\"user\",\"content\":\"caf\xe9\"}]}\n");
    let append = json!({"id": 3, "op": "append", "session": "s", "events": [{"trace_type": "user", "content": "tea"}]});
    input.extend_from_slice(format!("{append}\n").as_bytes());
    input.extend_from_slice(json!({"id": 4, "op": "sessions"}).to_string().as_bytes());
    input.push(b'\n');
    let replies = replies_of(dir.path(), "serve", &input);
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert_eq!(replies[1]["ok"], false);
    assert!(
        replies[1]["error"].as_str().unwrap().contains("UTF-8"),
        "{}",
        replies[1]
    );
    assert_eq!(replies[2]["id"], 3);
    assert_eq!(replies[2]["result"]["appended"], 1);
    assert_eq!(replies[3]["result"][0]["events"], 1);
}

/// `mcp` answers a bad line with a JSON-RPC parse error and goes on.
#[test]
fn mcp_answers_a_bad_line_with_a_parse_error_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut input =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n"
            .to_vec();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    input.extend_from_slice(format!("{ping}\n").as_bytes());
    let replies = replies_of(dir.path(), "mcp", &input);
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[0]["error"]["code"], -32700);
    assert!(replies[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("UTF-8"));
    assert_eq!(replies[1]["id"], 2);
}

#[test]
fn a_byte_order_mark_costs_no_line_of_ingest_import_or_serve() {
    let dir = tempfile::tempdir().unwrap();
    let bom = b"\xef\xbb\xbf";
    let lines = [
        bom.as_slice(),
        EVENTS[0].as_bytes(),
        b"\n",
        EVENTS[2].as_bytes(),
        b"\n",
    ]
    .concat();
    let out = common::run_with_stdin_bytes(
        agentmem(dir.path()).args(["ingest", "--session", "s"]),
        &lines,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let exported = output_of(dir.path(), &["export", "s", "--format", "openai-messages"]);
    assert_eq!(exported.as_array().map(Vec::len), Some(2), "{exported}");

    let document = dir.path().join("messages.json");
    let messages =
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]);
    std::fs::write(
        &document,
        [bom.as_slice(), messages.to_string().as_bytes()].concat(),
    )
    .unwrap();
    let out = agentmem(dir.path())
        .args(["import", "--format", "openai-messages", "--session", "m"])
        .arg(&document)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let command = json!({"id": 1, "op": "sessions"}).to_string();
    let replies = replies_of(
        dir.path(),
        "serve",
        &[bom.as_slice(), command.as_bytes(), b"\n"].concat(),
    );
    assert_eq!(replies[0]["ok"], true, "{}", replies[0]);
}
