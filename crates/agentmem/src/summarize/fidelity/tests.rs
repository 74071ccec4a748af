use super::events::{event_identifiers, identifiers_of_each, PARALLEL_SCAN_MIN_BYTES};
use super::scanner::extract_identifiers;
use super::*;

fn ids(text: &str) -> Vec<String> {
    extract_identifiers(text)
}

#[test]
fn remembered_identifiers_follow_the_content_not_just_the_id() {
    let first = Event::tool_result("c1", "see src/main.rs").with_id("r1");
    let edited = Event::tool_result("c1", "see src/lib.rs").with_id("r1");
    assert_eq!(event_identifiers(&first), ["src/main.rs"]);
    assert_eq!(event_identifiers(&first), ["src/main.rs"]);
    assert_eq!(event_identifiers(&edited), ["src/lib.rs"]);
}

#[test]
fn a_large_span_has_the_identifiers_of_each_event_alone_in_order() {
    // Over PARALLEL_SCAN_MIN_BYTES: scanned on every core there is.
    let events: Vec<Event> = (0..400)
        .map(|i| {
            let text = format!(
                "step {i}: edited src/mod_{i}.rs:{i} and ran `make` (exit code {}), \
                 commit {:08x}, listening on port {} {}",
                i % 3,
                0xabc0_0000_u32 + i,
                8000 + i,
                "and nothing else of note ".repeat(8)
            );
            Event::tool_result(format!("c{i}"), text).with_id(format!("r{i}"))
        })
        .collect();
    let refs: Vec<&Event> = events.iter().collect();
    assert!(events.iter().map(|e| e.content.len()).sum::<usize>() > PARALLEL_SCAN_MIN_BYTES);
    let alone: Vec<Vec<String>> = events.iter().map(|e| ids(&e.content)).collect();
    assert!(alone.iter().all(|found| found.len() >= 3), "{:?}", alone[0]);
    assert_eq!(identifiers_of_each(&refs), alone);
    // Asked again: remembered, the same.
    assert_eq!(identifiers_of_each(&refs), alone);
}

#[test]
fn the_trigram_set_never_rules_out_what_occurs() {
    let text = "error[E0425] in src/main.rs:4:5 — 512 MB at http://localhost:8080/a ✓";
    let trigrams = Trigrams::of(text);
    for start in 0..text.len() {
        for end in start..=text.len() {
            if let Some(part) = text.get(start..end) {
                assert!(trigrams.may_contain(part), "{part:?}");
            }
        }
    }
    assert!(!trigrams.may_contain("src/lib.rs"));
    assert!(!trigrams.may_contain("3f9d2c1b"));
}

#[test]
fn paths() {
    assert_eq!(
        ids("edit src/lib.rs and /home/x/y.py then crates/a/b.rs:42 and ./run.sh, ~/notes/todo.md"),
        [
            "src/lib.rs",
            "/home/x/y.py",
            "crates/a/b.rs:42",
            "./run.sh",
            "~/notes/todo.md"
        ]
    );
    assert_eq!(
        ids("Open `Cargo.toml` and README.md."),
        ["Cargo.toml", "README.md"]
    );
    assert_eq!(
        ids("thread 'main' panicked at crates/parser/src/header.rs:88:9:"),
        ["crates/parser/src/header.rs:88:9"]
    );
    assert_eq!(ids("--> src/server.rs:1:12"), ["src/server.rs:1:12"]);
    assert_eq!(ids("/etc/hosts and /tmp"), ["/etc/hosts"]);
    assert_eq!(ids(r"C:\Users\dev\app.exe"), [r"C:\Users\dev\app.exe"]);
    assert_eq!(
        ids("diff --git a/src/x.rs b/src/x.rs"),
        ["src/x.rs"],
        "diff headers name the path once"
    );
    assert_eq!(ids("src/config/.env"), ["src/config/.env"]);
    assert_eq!(
        ids("Run make: see Makefile and Cargo.lock, logs/app.log"),
        ["Makefile", "Cargo.lock", "logs/app.log"]
    );
    assert!(ids("event.ts self.c console.log cli.db: self.lock config.env").is_empty());
}

#[test]
fn urls() {
    assert_eq!(
        ids("See https://example.com/a?b=1&c=(2). Also (http://x.io/y) and git@github.com:org/repo.git"),
        ["https://example.com/a?b=1&c=(2)", "http://x.io/y", "git@github.com:org/repo.git"]
    );
    assert_eq!(
        ids("[docs](https://docs.rs/serde/latest/serde/)"),
        ["https://docs.rs/serde/latest/serde/"]
    );
}

#[test]
fn hashes_ids_and_codes() {
    assert_eq!(
        ids("at commit 3f9d2c1 (was a1b2c3d4e5f6)"),
        ["3f9d2c1", "a1b2c3d4e5f6"]
    );
    assert_eq!(
        ids("call_abc123 toolu_01A7bQz4RkV3mWcXe9TgHs2L 0b6e1c52-8f0e-4a7c-b1d2-3c4d5e6f7a81"),
        [
            "call_abc123",
            "toolu_01A7bQz4RkV3mWcXe9TgHs2L",
            "0b6e1c52-8f0e-4a7c-b1d2-3c4d5e6f7a81"
        ]
    );
    assert_eq!(ids("error[E0425]: cannot find value"), ["E0425"]);
    assert_eq!(
        ids("net::ERR_CONNECTION_REFUSED and ENOENT, got HTTP 404 then status 503; exit code 2"),
        [
            "ERR_CONNECTION_REFUSED",
            "ENOENT",
            "HTTP 404",
            "status 503",
            "exit code 2"
        ]
    );
    assert_eq!(ids("fixes #1234"), ["#1234"]);
    assert_eq!(
        ids("msg_01HqW8tK3VfL2pN6xYd9aBcE"),
        ["msg_01HqW8tK3VfL2pN6xYd9aBcE"]
    );
}

#[test]
fn numbers_with_units_and_ports() {
    assert_eq!(
        ids("needs 512 MB, took 30s (1.5 GB peak, p99 200ms); listen on port 8080 or --port=9000"),
        ["512 MB", "30s", "1.5 GB", "200ms", "port 8080", "port 9000"]
    );
    assert_eq!(
        ids("connect to 10.0.0.1:5432 or localhost:3000"),
        ["10.0.0.1:5432", "localhost:3000"]
    );
    assert_eq!(ids("3 passed in 0.04s"), ["0.04s"]);
}

#[test]
fn plain_text_has_no_identifiers() {
    let prose = "I'll run that test on its own first. The header name keeps a trailing carriage \
                 return, so CRLF input fails; and/or the read/write split is wrong. Let's see: \
                 e.g. the Node.js build, version 3.11.7, took 3 passes and 42 files. Deadbeef! \
                 It's 10 o'clock. Content-Type is fine; see split_header() and crate::cfg::Settings.";
    assert_eq!(ids(prose), Vec::<String>::new());
}

#[test]
fn realistic_tool_output() {
    let log = "2026-11-21T00:18:14.272Z DEBUG workers.tracing.cache: rate method index_job=19369 elapsed_ms=343.\n\
               src/auth/memory/net/offset_model.md:1621:    batch_pool = view.delete(budget_middleware_state)  # must input\n\
               @@ -304,19 +512,3 @@ def handle_state_account_budget\n\
               ============================= test session starts ==============================\n\
               platform linux -- Python 3.11.7, pytest-8.3.2\n\
               tests/api/test_path_account.py::test_get_server_total FAILED [ 70%]";
    assert_eq!(
        ids(log),
        [
            "src/auth/memory/net/offset_model.md:1621",
            "tests/api/test_path_account.py"
        ]
    );
}

#[test]
fn fidelity_counts_and_hints() {
    let span = [
        Event::user("look at src/a.rs and src/b.rs").with_id("e1"),
        Event::tool_call(
            "c1",
            "read_file",
            serde_json::json!({"path": "src/b.rs", "port": 8080}),
        )
        .with_id("e2"),
        Event::tool_result("c1", "see https://x.io/doc and src/a.rs").with_id("e3"),
    ];
    let report = check_fidelity(&span, "worked on `src/a.rs`");
    assert_eq!(report.identifiers, 4);
    assert_eq!(report.survived, 1);
    assert_eq!(report.survival_rate(), 0.25);
    let missing: Vec<(&str, Vec<&str>)> = report
        .missing
        .iter()
        .map(|m| {
            (
                m.identifier.as_str(),
                m.event_ids.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // Named by the user or a tool call first, then by number of events.
    assert_eq!(
        missing,
        [
            ("src/b.rs", vec!["e1", "e2"]),
            ("port 8080", vec!["e2"]),
            ("https://x.io/doc", vec!["e3"])
        ]
    );
    let hints = report.lookup_hints().unwrap();
    assert!(
        hints.contains("- `src/b.rs` — search events e1, e2\n"),
        "{hints}"
    );
    assert!(hints.contains("- `port 8080` — search events e2\n"));
}

#[test]
fn units_survive_with_or_without_the_space() {
    let span = [Event::user("limit is 512 MB and 30s").with_id("e1")];
    let report = check_fidelity(&span, "512MB only");
    assert_eq!(report.survived, 1);
    assert_eq!(report.missing[0].identifier, "30s");
    let report = check_fidelity(&span, "512MB, 30 s");
    assert_eq!(report.survived, 2);
}

#[test]
fn hints_are_capped() {
    let missing: Vec<MissingIdentifier> = (0..100)
        .map(|i| MissingIdentifier {
            identifier: format!("src/f{i}.rs"),
            event_ids: (0..8).map(|j| format!("e{j}")).collect(),
        })
        .collect();
    let report = FidelityReport {
        identifiers: 100,
        survived: 0,
        missing,
    };
    let hints = report.lookup_hints().unwrap();
    assert_eq!(
        hints.lines().filter(|l| l.starts_with("- `")).count(),
        MAX_HINTS
    );
    assert!(hints.contains("(+3 more)"));
    assert!(hints.contains("60 more identifiers"));
    assert!(FidelityReport::default().lookup_hints().is_none());
}

#[test]
fn sidechain_events_are_not_checked() {
    let span = [Event::user("src/secret.rs")
        .with_id("e1")
        .with_tag(crate::base::event::SIDECHAIN_TAG)];
    assert_eq!(check_fidelity(&span, "").identifiers, 0);
}
