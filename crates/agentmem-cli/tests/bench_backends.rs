//! `agentmem bench` on either storage backend: append throughput per
//! durability mode lands in PostgreSQL when it is the configured backend
//! (the database of `AGENTMEM_TEST_DATABASE_URL`, which `scripts/postgres
//! run` provides), and the `--serve` load test runs real `agentmem serve`
//! processes, several on one database, without losing or doubling an event.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary with `args` in a fresh data folder as `agent`, on the
/// database at `url` or on files.
fn agentmem(url: Option<&str>, agent: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentmem"));
    command
        .arg("--dir")
        .arg(dir.path())
        .args(["--agent", agent])
        .args(args);
    match url {
        Some(url) => command.env("AGENTMEM_DATABASE_URL", url),
        None => command.env_remove("AGENTMEM_DATABASE_URL"),
    };
    command.output().unwrap()
}

fn rows(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["bench"] == name)
        .unwrap_or_else(|| panic!("no {name} row in {rows:?}"))
}

#[test]
fn append_throughput_is_measured_in_the_database_per_durability_mode() {
    let Some(url) = agentmem_postgres::test_database("bench append") else {
        return;
    };
    let agent = format!("bench-append-{}", std::process::id());
    let rows = rows(&agentmem(
        Some(url.expose()),
        &agent,
        &["--json", "bench", "--events", "60", "--open-events", "6"],
    ));
    for (mode, events, means) in [
        ("os", 60, "synchronous_commit off"),
        ("batch", 60, "synchronous_commit on"),
        ("always", 6, "synchronous_commit on"),
    ] {
        let append = row(&rows, &format!("append ({mode})"));
        assert_eq!(append["backend"], "postgres", "{append}");
        assert_eq!(append["events"], events, "{append}");
        assert!(append["events_per_second"].as_f64().unwrap() > 0.0);
        assert!(
            append["detail"].as_str().unwrap().starts_with(means),
            "{append}"
        );
    }
    // The sessions are in the database, under the bench's agent.
    let listed = agentmem(Some(url.expose()), &agent, &["--json", "sessions", "list"]);
    let sessions: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let mut counts: Vec<u64> = sessions
        .iter()
        .map(|s| s["events"].as_u64().unwrap())
        .collect();
    counts.sort_unstable();
    assert_eq!(counts, [6, 60, 60], "{sessions:?}");
}

#[test]
fn several_servers_share_one_database_under_load() {
    let Some(url) = agentmem_postgres::test_database("bench serve") else {
        return;
    };
    let agent = format!("bench-serve-{}", std::process::id());
    let rows = rows(&agentmem(
        Some(url.expose()),
        &agent,
        &[
            "--json",
            "bench",
            "--skip-storage",
            "--serve",
            "--clients",
            "4",
            "--turns",
            "3",
            "--servers",
            "1",
            "2",
        ],
    ));
    for servers in ["1 server", "2 servers"] {
        for phase in ["separate_sessions", "shared_session"] {
            let report = &row(&rows, &format!("serve {phase} ({servers})"))["report"];
            assert_eq!(report["errors"], 0, "{report}");
            assert_eq!(report["events_sent"], 4 * 3 * 4, "{report}");
            assert_eq!(report["events_logged"], report["events_sent"], "{report}");
            assert_eq!(report["events_lost"], 0, "{report}");
            assert_eq!(report["events_duplicated"], 0, "{report}");
            assert_eq!(report["clients_out_of_order"], 0, "{report}");
            assert_eq!(report["sessions_read"], report["sessions"], "{report}");
        }
    }
    // Each client starts on its own server's sessions; a shared session is
    // written through the one server holding it, the others turn clients
    // away to it.
    let redirects = |name: &str| row(&rows, name)["report"]["redirects"].clone();
    assert_eq!(redirects("serve separate_sessions (2 servers)"), 0);
    assert_eq!(redirects("serve shared_session (1 server)"), 0);
    assert!(
        redirects("serve shared_session (2 servers)")
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn the_files_backend_serves_from_one_process() {
    let agent = "bench-files";
    let rows = rows(&agentmem(
        None,
        agent,
        &[
            "--json",
            "bench",
            "--skip-storage",
            "--serve",
            "--clients",
            "2",
            "--turns",
            "2",
        ],
    ));
    let report = &row(&rows, "serve shared_session (1 server)")["report"];
    assert_eq!(
        row(&rows, "serve shared_session (1 server)")["backend"],
        "files"
    );
    assert_eq!(report["events_logged"], 2 * 2 * 4, "{report}");
    let refused = agentmem(
        None,
        agent,
        &["bench", "--skip-storage", "--serve", "--servers", "2"],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("measure 2 servers on postgres"), "{stderr}");
}

#[test]
fn history_search_is_timed_at_each_checkpoint_on_both_backends() {
    let Some(url) = agentmem_postgres::test_database("bench history") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..2)
        .map(|session| {
            let path = dir.path().join(format!("{session}.jsonl"));
            let lines: Vec<String> = (0..30)
                .flat_map(|turn| {
                    [
                        serde_json::json!({"turn": turn, "trace_type": "user",
                            "content": format!("session {session} turn {turn}: why does the parser reject tabs")}),
                        serde_json::json!({"turn": turn, "trace_type": "assistant",
                            "content": format!("the lexer in step {turn} drops tabs before parsing")}),
                    ]
                })
                .map(|line| line.to_string())
                .collect();
            std::fs::write(&path, lines.join("\n")).unwrap();
            path.to_str().unwrap().to_owned()
        })
        .collect();
    let mut args = vec!["--json", "bench", "--skip-storage", "--history"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--measure-at", "50", "--history-on", "files", "postgres"]);
    let rows = rows(&agentmem(Some(url.expose()), "bench-history", &args));
    for prefix in ["", "postgres: "] {
        for bench in ["history search", "history recall"] {
            let name = format!("{prefix}{bench}");
            let timed: Vec<&Value> = rows.iter().filter(|r| r["bench"] == name).collect();
            let events: Vec<&Value> = timed.iter().map(|r| &r["events"]).collect();
            assert_eq!(
                events,
                [60, 120],
                "{name}: timed after each checkpoint and at the end"
            );
            assert!(timed.iter().all(|r| r["p99_ms"].as_f64().unwrap() > 0.0));
        }
    }
    let built: Vec<&Value> = rows
        .iter()
        .filter(|r| r["bench"] == "postgres: history append + index")
        .collect();
    assert_eq!(built.len(), 2);
    assert!(built[1]["index_mb"].as_f64().unwrap() > 0.0, "{}", built[1]);
    let searched = |name: &str| {
        rows.iter()
            .filter(|r| r["bench"] == name)
            // "p99 …; 200 queries … over N events, H hits each"
            .map(|r| {
                r["detail"]
                    .as_str()
                    .unwrap()
                    .split_once("; ")
                    .unwrap()
                    .1
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        searched("history search"),
        searched("postgres: history search"),
        "the same queries find as many hits on both backends"
    );
}
