//! `agentmem chat` end to end against a loopback OpenAI-compatible server:
//! memory tools run by agentmem, slash commands, resume and fork.

mod common;
#[path = "../../agentmem-llm/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use support::{Loopback, Reply};

fn chat(dir: &Path, server: &Loopback, extra: &[&str], input: &str) -> Output {
    chat_on(dir, None, server, extra, input)
}

/// `chat` on the files of `dir`, or on the database at `database`.
fn chat_on(
    dir: &Path,
    database: Option<&str>,
    server: &Loopback,
    extra: &[&str],
    input: &str,
) -> Output {
    let mut arguments = common::args(&["chat", "--model", "llama3.1", "--no-stream", "--base-url"]);
    arguments.push(format!("{}/v1", server.url));
    arguments.extend(common::args(extra));
    let env = [
        ("OPENAI_API_KEY", None),
        ("AGENTMEM_DATABASE_URL", database),
    ];
    common::agentmem_with_input(dir, &arguments, &env, input)
}

fn answer(message: Value) -> Reply {
    Reply::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "llama3.1",
               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
    )
}

fn session_id(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .split("session ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn the_model_writes_memory_through_its_tools_and_a_resumed_chat_continues_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let server = Loopback::start(vec![
        answer(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "write_memory", "arguments": "{\"text\": \"- The user indents with tabs.\"}"}}
        ]})),
        answer(json!({"role": "assistant", "content": "Noted: tabs."})),
        answer(json!({"role": "assistant", "content": "You use tabs."})),
        answer(json!({"role": "assistant", "content": "Still tabs, in the fork."})),
    ]);
    let first = chat(
        dir.path(),
        &server,
        &[],
        "Remember that I indent with tabs.\n/search indent tabs\n/memory\n/quit\n",
    );
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(stdout.contains("Noted: tabs."), "{stdout}");
    assert!(
        stdout.contains("> [turn_0001] User: Remember that I [indent] with [tabs]."),
        "{stdout}"
    );
    assert!(
        stdout.contains("- The user indents with tabs."),
        "/memory shows MEMORY.md"
    );
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert!(
        requests[0].header("authorization").is_none(),
        "no key, none sent"
    );
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read_memory",
            "write_memory",
            "update_memory",
            "search_conversation_history",
            "recall",
            "remember_fact",
            "read_evicted_output",
            "get_working_memory",
            "update_working_memory"
        ]
    );
    let second = requests[1].body["messages"].as_array().unwrap();
    let result = second.last().unwrap();
    assert_eq!(
        (result["role"].as_str(), result["tool_call_id"].as_str()),
        (Some("tool"), Some("call_1"))
    );
    assert!(result["content"].as_str().unwrap().starts_with("Appended."));

    let id = session_id(&first);
    let resumed = chat(
        dir.path(),
        &server,
        &["--resume", &id],
        "Which indentation do I use?\n",
    );
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("You use tabs."));
    let requests = server.requests();
    let before: &Vec<Value> = requests[1].body["messages"].as_array().unwrap();
    let after: &Vec<Value> = requests[2].body["messages"].as_array().unwrap();
    let system = |m: &Value| m["role"] == "system";
    let history = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| !system(m))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (before, after) = (history(before), history(after));
    assert_eq!(
        after[..before.len()],
        before[..],
        "the resumed history starts with the old one"
    );
    let system_prompt = requests[2].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system_prompt.contains("MEMORY.md")
            && system_prompt.contains("- The user indents with tabs."),
        "MEMORY.md is injected: {system_prompt}"
    );

    let forked = chat(
        dir.path(),
        &server,
        &["--resume", &id, "--fork"],
        "And now?\n",
    );
    let fork_id = session_id(&forked);
    assert_ne!(fork_id, id);
    let requests = server.requests();
    let fork_history = history(requests[3].body["messages"].as_array().unwrap());
    assert_eq!(
        fork_history[..after.len()],
        after[..],
        "the fork continues the same history"
    );
}

#[test]
fn a_model_the_registry_does_not_know_is_flagged_when_the_chat_starts() {
    let dir = tempfile::tempdir().unwrap();
    let server = Loopback::start(vec![answer(json!({"role": "assistant", "content": "Hi."}))]);
    let output = chat(dir.path(), &server, &[], "hello\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"llama3.1\" is unknown") && stderr.contains("200000-token window"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("Hi."));
}

#[test]
fn the_model_keeps_its_task_state_in_the_session_it_talks_in() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"patch": {"plan": [{"step": "review auth", "status": "doing"}]}, "expected_version": 0});
    let update = |id: &str| {
        answer(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "update_working_memory", "arguments": plan.to_string()}}
        ]}))
    };
    let server = Loopback::start(vec![
        update("call_1"),
        // The same change again, made against the version it already moved past.
        update("call_2"),
        answer(json!({"role": "assistant", "content": "Planned."})),
        answer(json!({"role": "assistant", "content": "Still reviewing auth."})),
    ]);
    let output = chat(
        dir.path(),
        &server,
        &[],
        "Plan the review.\n/state\nWhat next?\n",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("version 1") && stdout.contains("review auth"),
        "/state shows it: {stdout}"
    );

    let requests = server.requests();
    let messages = |i: usize| requests[i].body["messages"].as_array().unwrap().clone();
    let last_of = |i: usize, role: &str| {
        let messages = messages(i);
        let last = messages.iter().rev().find(|m| m["role"] == role);
        last.unwrap()["content"].as_str().unwrap().to_owned()
    };
    let applied = last_of(1, "tool");
    assert!(applied.contains("now at version 1"), "{applied}");
    let refused = last_of(2, "tool");
    assert!(
        refused.starts_with("error:") && refused.contains("found 1"),
        "{refused}"
    );
    // The state closes the request, after the conversation, as it changes.
    let live = messages(3).last().unwrap().clone();
    let live = live["content"].as_str().unwrap();
    assert_eq!(messages(3).last().unwrap()["role"], "system");
    assert!(
        live.contains("# Working memory (version 1)") && live.contains("review auth"),
        "{live}"
    );
    let system = messages(3)[0]["content"].as_str().unwrap().to_owned();
    assert!(!system.contains("# Working memory"), "{system}");

    let id = session_id(&output);
    let state = common::agentmem_with_input(
        dir.path(),
        &common::args(&["state", &id, "--json"]),
        &[],
        "",
    );
    let state: Value = serde_json::from_slice(&state.stdout).unwrap();
    assert_eq!(state["version"], 1);
    assert_eq!(state["document"]["plan"][0]["status"], "doing");
}

/// The folder of the one session in the data folder `dir`.
fn only_session(dir: &Path) -> std::path::PathBuf {
    let sessions = dir.join("agents/default/sessions");
    let mut entries = std::fs::read_dir(sessions).unwrap();
    entries.next().unwrap().unwrap().path()
}

/// An answer long enough that compacting it frees space.
fn long(first: &str) -> String {
    format!(
        "{first} {}",
        "Details follow about the module layout. ".repeat(60)
    )
}

#[cfg(unix)]
#[test]
fn in_a_terminal_a_rate_limit_and_an_overflow_are_handled_and_compact_takes_a_focus() {
    let dir = tempfile::tempdir().unwrap();
    let overflow = Reply::json(
        400,
        json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}}),
    );
    let server = Loopback::start(vec![
        Reply::json(429, json!({"error": {"message": "slow down"}}))
            .with_header("retry-after", "0"),
        answer(json!({"role": "assistant", "content": long("The parser is in src/parse.rs.")})),
        overflow,
        answer(json!({"role": "assistant", "content": long("Recovered and answered.")})),
        answer(json!({"role": "assistant", "content": long("Tokens come from src/lex.rs.")})),
        answer(json!({"role": "assistant", "content": long("Errors are in src/error.rs.")})),
        answer(json!({"role": "assistant", "content": long("Tests live in tests/parse.rs.")})),
        answer(json!({"role": "assistant", "content": long("The grammar is in docs/grammar.md.")})),
        answer(json!({"role": "assistant", "content": "After the checkpoint."})),
        answer(json!({"role": "assistant", "content": "Resumed after the checkpoint."})),
    ]);
    let args: Vec<String> = ["chat", "--model", "llama3.1", "--no-stream", "--base-url"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("{}/v1", server.url)])
        .collect();
    let shown = common::in_terminal(
        dir.path(),
        &args,
        "Where is the parser?\nAnd the lexer?\nTokens?\nErrors?\nTests?\nGrammar?\n/compact the parser\n/context\nNext?\n/quit\n",
    );
    assert!(shown.contains("The parser is in src/parse.rs."), "{shown}");
    assert!(shown.contains("Recovered and answered."), "{shown}");
    assert!(shown.contains("%), compaction at "), "{shown}");
    assert_eq!(
        server.requests().len(),
        9,
        "429 retried once, overflow retried once"
    );
    let session = only_session(dir.path());
    let snapshot = std::fs::read_to_string(session.join("snapshot.json"))
        .unwrap_or_else(|_| panic!("no compaction: {shown}"));
    assert!(
        snapshot.contains("Focus of this summary: the parser"),
        "{snapshot}"
    );

    // After the compaction the summary rides with its prefix, tool pairs
    // intact, and a resumed chat sends that history again as its prefix.
    let compacted = history(&server.requests()[8].body);
    assert!(compacted.iter().any(|m| m["content"]
        .to_string()
        .contains("[SUMMARY OF EARLIER CONVERSATION]")));
    let id = session.file_name().unwrap().to_str().unwrap().to_owned();
    let mut resume = args.clone();
    resume.extend(["--resume".to_owned(), id]);
    common::in_terminal(dir.path(), &resume, "Still there?\n/quit\n");
    let resumed = history(&server.requests()[9].body);
    assert_eq!(resumed[..compacted.len()], compacted[..]);
}

/// The messages of a request other than the system prompt (which carries
/// memory that may change between calls).
fn history(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect()
}

#[test]
fn the_api_key_is_sent_but_never_written_under_the_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-test-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1";
    let server = Loopback::start(vec![answer(json!({"role": "assistant", "content": "Hi."}))]);
    let mut arguments = common::args(&["chat", "--model", "gpt-4o", "--no-stream", "--base-url"]);
    arguments.push(format!("{}/v1", server.url));
    common::agentmem_with_input(
        dir.path(),
        &arguments,
        &[("OPENAI_API_KEY", Some(key))],
        "hello\n",
    );
    let bearer = format!("Bearer {key}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(bearer.as_str())
    );
    let mut stack = vec![dir.path().to_path_buf()];
    let mut files = 0;
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            files += 1;
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                "the key is in {}",
                path.display()
            );
        }
    }
    assert!(files >= 3, "the session was written ({files} files)");
}

#[test]
fn compact_in_chat_uses_the_summarizer_model_when_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = (0..6)
        .map(|i| answer(json!({"role": "assistant", "content": long(&format!("Answer {i}."))})))
        .collect();
    let summary = json!({"sections": {"Goal": ["Map the code base"], "Next steps": ["Read src/parse.rs"]}, "facts": []});
    replies.push(answer(
        json!({"role": "assistant", "content": summary.to_string()}),
    ));
    let server = Loopback::start(replies);
    chat(
        dir.path(),
        &server,
        &["--summarizer-model", "llama3.2:1b"],
        "One?\nTwo?\nThree?\nFour?\nFive?\nSix?\n/compact\n/quit\n",
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    assert_eq!(requests[6].body["model"], "llama3.2:1b");
    let snapshot = std::fs::read_to_string(only_session(dir.path()).join("snapshot.json")).unwrap();
    assert!(
        snapshot.contains("Map the code base") && snapshot.contains("llm:llama3.2:1b"),
        "{snapshot}"
    );
}

#[test]
fn the_configuration_names_the_model_the_server_and_the_key_variable() {
    let dir = tempfile::tempdir().unwrap();
    let server = Loopback::start(vec![answer(
        json!({"role": "assistant", "content": "Configured."}),
    )]);
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[llm]\nmodel = \"qwen2.5-coder\"\nbase_url = \"{}/v1\"\napi_key_env = \"AM_CHAT_CONFIG_KEY\"\n",
            server.url
        ),
    )
    .unwrap();
    let output = common::agentmem_with_input(
        dir.path(),
        &common::args(&["chat", "--no-stream"]),
        &[("AM_CHAT_CONFIG_KEY", Some("from-the-named-variable"))],
        "hi\n",
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("Configured."));
    let sent = &server.requests()[0];
    assert_eq!(sent.body["model"], "qwen2.5-coder");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer from-the-named-variable")
    );
}

/// The lines `agentmem context` prints for `id`, as the model `llama3.1`.
fn context_lines(dir: &Path, id: &str) -> Vec<String> {
    let output = common::agentmem_with_input(
        dir,
        &common::args(&["context", id, "--model", "llama3.1"]),
        &[],
        "",
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn context_in_chat_shows_what_the_context_command_shows() {
    let dir = tempfile::tempdir().unwrap();
    let server = Loopback::start(vec![answer(
        json!({"role": "assistant", "content": "The parser is in src/parse.rs."}),
    )]);
    let output = chat(
        dir.path(),
        &server,
        &[],
        "Where is the parser?\n/context\n/quit\n",
    );
    let shown = String::from_utf8_lossy(&output.stdout);
    let id = session_id(&output);
    let printed = context_lines(dir.path(), &id);
    // The same model line and the same facts about the session.
    for line in [
        &printed[0],
        printed.iter().find(|l| l.starts_with("messages ")).unwrap(),
    ] {
        assert!(shown.contains(line.as_str()), "{line:?} not in {shown}");
    }
    let bar = shown.lines().find(|l| l.starts_with('[')).unwrap();
    assert!(
        bar.contains(" tokens (") && bar.contains("%), compaction at "),
        "{bar}"
    );
    for section in [
        "system",
        "memory",
        "working memory",
        "tool schemas",
        "history",
        "reply priming",
    ] {
        assert!(
            shown.lines().any(|l| l.trim_start().starts_with(section)),
            "{section} in {shown}"
        );
    }
    // The chat's own request: its tools are counted.
    let schemas = shown
        .lines()
        .find(|l| l.trim_start().starts_with("tool schemas"))
        .unwrap();
    assert!(!schemas.contains(" 0 "), "{schemas}");
}

#[test]
fn an_unreachable_model_is_reported_and_the_chat_goes_on() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let arguments = common::args(&[
        "chat",
        "--model",
        "llama3.1",
        "--no-stream",
        "--base-url",
        &url,
    ]);
    let output = common::agentmem_with_input(
        dir.path(),
        &arguments,
        &[("OPENAI_API_KEY", None)],
        "Anyone there?\n/context\n/quit\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("agentmem: error:"), "{stderr}");
    assert!(
        stderr.contains("saved"),
        "the chat ended as asked: {stderr}"
    );
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("compaction at"),
        "/context still ran: {shown}"
    );
    let id = session_id(&output);
    let exported =
        common::agentmem_with_input(dir.path(), &common::args(&["export", &id]), &[], "");
    assert!(
        String::from_utf8_lossy(&exported.stdout).contains("Anyone there?"),
        "the message is kept"
    );
}

#[test]
fn an_overflow_is_retried_three_times_then_reported_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let overflow = Reply::json(
        400,
        json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}}),
    );
    let mut replies = vec![overflow; 4];
    replies.push(answer(
        json!({"role": "assistant", "content": "This one fits."}),
    ));
    let server = Loopback::start(replies);
    let output = chat(
        dir.path(),
        &server,
        &[],
        "A huge question?\nA small one?\n/quit\n",
    );
    assert_eq!(
        server.requests().len(),
        5,
        "the first call and 3 retries, then the next message"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("agentmem: error:") && stderr.contains("3"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("This one fits."));
}

#[test]
fn a_compact_that_fails_is_reported_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = (0..6)
        .map(|i| answer(json!({"role": "assistant", "content": long(&format!("Answer {i}."))})))
        .collect();
    replies.push(Reply::json(
        400,
        json!({"error": {"message": "unknown model llama3.2:1b"}}),
    ));
    replies.push(answer(
        json!({"role": "assistant", "content": "Still here."}),
    ));
    let server = Loopback::start(replies);
    let output = chat(
        dir.path(),
        &server,
        &["--summarizer-model", "llama3.2:1b"],
        "One?\nTwo?\nThree?\nFour?\nFive?\nSix?\n/compact\nSeven?\n/quit\n",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("agentmem: error:") && stderr.contains("summar"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("Still here."));
    assert!(!only_session(dir.path()).join("snapshot.json").exists());
}

/// On PostgreSQL the chat's session, the memory its model writes through
/// its tools, its working memory and its forks are kept in the database.
#[test]
fn a_chat_on_postgres_keeps_its_session_memory_and_state_in_the_database() {
    let Some(url) = agentmem_postgres::test_database("chat on postgres") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("chat-{}", std::process::id());
    let tool_call = |id: &str, name: &str, arguments: Value| {
        answer(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
        ]}))
    };
    let server = Loopback::start(vec![
        tool_call(
            "call_1",
            "write_memory",
            json!({"text": "- The user indents with tabs."}),
        ),
        tool_call(
            "call_2",
            "update_working_memory",
            json!({"patch": {"goal": "tabs everywhere"}, "expected_version": 0}),
        ),
        answer(json!({"role": "assistant", "content": "Noted: tabs."})),
        answer(json!({"role": "assistant", "content": "Tabs, in the fork."})),
    ]);
    let on_database = |extra: &[&str], input: &str| {
        let mut all = vec!["--agent", agent.as_str()];
        all.extend_from_slice(extra);
        chat_on(dir.path(), Some(url.expose()), &server, &all, input)
    };
    let first = on_database(
        &[],
        "Remember that I indent with tabs.\n/memory\n/state\n/quit\n",
    );
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(stdout.contains("Noted: tabs."), "{stdout}");
    assert!(stdout.contains("- The user indents with tabs."), "{stdout}");
    assert!(
        stdout.contains("version 1") && stdout.contains("tabs everywhere"),
        "{stdout}"
    );
    let id = session_id(&first);
    let forked = on_database(&["--resume", &id, "--fork"], "And now?\n");
    assert!(String::from_utf8_lossy(&forked.stdout).contains("Tabs, in the fork."));
    let fork_id = session_id(&forked);
    assert_ne!(fork_id, id);
    let system_prompt = server.requests()[3].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system_prompt.contains("- The user indents with tabs."),
        "MEMORY.md from the database is injected: {system_prompt}"
    );
    let cli = |args: &[&str]| {
        let mut all = vec!["--agent", agent.as_str()];
        all.extend_from_slice(args);
        let output = common::agentmem_with_input(
            dir.path(),
            &common::args(&all),
            &[("AGENTMEM_DATABASE_URL", Some(url.expose()))],
            "",
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let state: Value = serde_json::from_str(&cli(&["--json", "state", &fork_id])).unwrap();
    assert_eq!(
        state["document"],
        json!({"goal": "tabs everywhere"}),
        "the fork has it"
    );
    assert!(cli(&["sessions", "list"]).contains(&fork_id));
    assert!(!dir.path().join("agents").exists(), "nothing went to files");
}
