//! The summarizer against realistic sessions: every import fixture and a
//! 50-turn coding-agent workload. The summary has the nine sections in order,
//! is byte-for-byte deterministic, fits its budget, cites existing events,
//! follows a focus, covers spans far larger than its window, merges previous
//! summaries instead of nesting them; the fidelity check hints what it lost.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentmem::base::message::SUMMARY_PREFIX;
use agentmem::summarize::fidelity::event_identifiers;
use agentmem::summarize::{
    check_fidelity, event_tokens, extract_identifiers, summarize_hierarchical,
    ExtractiveSummarizer, FactKind, SECTION_TITLES,
};
use agentmem::tokens::Tokenizer;
use agentmem::{Encoding, Event, SummarizeError, Summarizer, Summary, SummaryRequest, TraceType};

const FIXTURES: [&str; 8] = [
    "claude-code-turn-1.jsonl",
    "claude-code-turn-2.jsonl",
    "codex-legacy.jsonl",
    "codex-rollout.jsonl",
    "openai-messages.json",
    "openhands.json",
    "swe-agent-legacy.traj",
    "swe-agent.traj",
];

fn tokenizer() -> Tokenizer {
    Encoding::O200kBase.tokenizer()
}

fn fixture(name: &str) -> Vec<Event> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../agentmem-import/tests/fixtures",
        name,
    ]
    .iter()
    .collect();
    let text = std::fs::read_to_string(&path).unwrap();
    let format = agentmem_import::detect_format(&path, &text).unwrap();
    agentmem_import::parse(format, &path, &text).unwrap().events
}

/// The shared 50-turn workload (`../shared/bench/workload.py --turns 50
/// --seed 1`), with ids and turn ids assigned as a session would. Set
/// `AGENTMEM_WORKLOAD` to use a file already generated; without python3 or
/// the script, a built-in generator of the same shape stands in.
fn workload() -> Vec<Event> {
    static TEXT: OnceLock<String> = OnceLock::new();
    let text = TEXT.get_or_init(|| match std::env::var_os("AGENTMEM_WORKLOAD") {
        Some(path) => std::fs::read_to_string(path).unwrap(),
        None => generate_with_script().unwrap_or_else(|| {
            eprintln!("workload.py not available; using the built-in generator");
            builtin_workload(50)
        }),
    });
    let mut events = Vec::new();
    let mut turn = 0;
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let mut event: Event = serde_json::from_str(line).unwrap();
        if event.trace_type == TraceType::User {
            turn += 1;
        }
        event.id = format!("ev_{i:05}");
        event.turn_id = format!("turn_{turn:04}");
        event.seq = i as u64;
        events.push(event);
    }
    events
}

fn generate_with_script() -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench/workload.py");
    if !script.exists() {
        return None;
    }
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(["--turns", "50", "--seed", "1"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).ok())
        .flatten()
}

/// A deterministic stand-in with the workload's shape (user prose, tool
/// calls with large results, assistant prose).
fn builtin_workload(turns: usize) -> String {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let words =
        "the cache is never invalidated after the write so the worker retries and the test fails \
                 because the budget must stay below the limit only when the session store flushes"
            .split(' ')
            .collect::<Vec<_>>();
    let modules = [
        "core", "api", "db", "cache", "auth", "sessions", "store", "io",
    ];
    const COMMANDS: [&str; 3] = [
        "journalctl -u app --since today",
        "cargo build --release",
        "npm run build",
    ];
    let mut lines = Vec::new();
    let prose = |next: &mut dyn FnMut(usize) -> usize, n: usize| -> String {
        let mut s: Vec<String> = (0..n)
            .map(|_| words[next(words.len())].to_string())
            .collect();
        s.push(format!(
            "`src/{}/{}.rs`.",
            modules[next(8)],
            words[next(words.len())]
        ));
        s.join(" ")
    };
    for t in 0..turns {
        let user = prose(&mut next, 40);
        lines.push(serde_json::json!({"turn": t, "kind": "user", "content": user}));
        for c in 0..next(4) {
            let id = format!("call_{t:05}_{c:06}");
            let (tool, args, body) = match next(4) {
                0 => (
                    "bash",
                    serde_json::json!({"command": COMMANDS[next(3)]}),
                    (0..200)
                        .map(|i| {
                            format!(
                                "2026-11-0{}T00:00:{:02}.000Z INFO core: line {i}\n",
                                next(9) + 1,
                                i % 60
                            )
                        })
                        .collect::<String>(),
                ),
                1 => (
                    "read_file",
                    serde_json::json!({"path": format!("src/{}/mod_{t}.rs", modules[next(8)])}),
                    (0..300)
                        .map(|i| format!("{i:5}\tlet x_{i} = y.get({i});\n"))
                        .collect(),
                ),
                2 => (
                    "run_tests",
                    serde_json::json!({"selector": format!("tests/{}", modules[next(8)])}),
                    (0..150)
                        .map(|i| {
                            format!(
                                "tests/io/test_{i}.py::test_x {}\n",
                                if next(10) == 0 { "FAILED" } else { "PASSED" }
                            )
                        })
                        .collect(),
                ),
                _ => (
                    "edit_file",
                    serde_json::json!({"path": format!("src/{}/edit_{t}.py", modules[next(8)]), "old": "a", "new": "b"}),
                    "Applied edit.".to_string(),
                ),
            };
            lines.push(serde_json::json!({"turn": t, "kind": "tool_call", "content": "", "tool_name": tool, "tool_call_id": id, "tool_args": args}));
            lines.push(serde_json::json!({"turn": t, "kind": "tool_result", "content": body, "tool_name": tool, "tool_call_id": id}));
        }
        let answer = prose(&mut next, 80);
        lines.push(serde_json::json!({"turn": t, "kind": "assistant", "content": answer}));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn summarize(events: &[Event], focus: Option<&str>, max_tokens: u64) -> Summary {
    let mut request = SummaryRequest::new(events, max_tokens, tokenizer());
    request.focus = focus;
    summarize_hierarchical(&ExtractiveSummarizer::default(), &request).unwrap()
}

/// What holds for every summary of `events`.
fn assert_well_formed(name: &str, events: &[Event], summary: &Summary, max_tokens: u64) {
    let text = summary.render();
    // The nine sections, in order.
    let mut last = 0;
    for title in SECTION_TITLES {
        let heading = format!("## {title}\n");
        let at = text[last..]
            .find(&heading)
            .unwrap_or_else(|| panic!("{name}: section {title} missing or out of order:\n{text}"));
        last += at + heading.len();
    }
    assert_eq!(
        text.matches("\n## ").count() + 1,
        9,
        "{name}: exactly nine sections"
    );
    // Within budget.
    let tokens = tokenizer().count(&text);
    assert!(
        tokens as u64 <= max_tokens,
        "{name}: {tokens} > {max_tokens}"
    );
    // The caller adds the prefix, once.
    assert!(
        !text.contains(SUMMARY_PREFIX),
        "{name}: prefix in the summary"
    );
    // Every event covered; facts cite events of the span.
    let ids: BTreeSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let covered: BTreeSet<&str> = summary
        .covered_event_ids
        .iter()
        .map(String::as_str)
        .collect();
    assert!(covered.is_superset(&ids), "{name}: not every event covered");
    for fact in &summary.facts {
        assert!(
            !fact.source_event_ids.is_empty(),
            "{name}: fact without a source"
        );
        assert!((0.0..=1.0).contains(&fact.confidence));
        for id in &fact.source_event_ids {
            let source = events.iter().find(|e| &e.id == id);
            let source = source.unwrap_or_else(|| panic!("{name}: fact cites unknown event {id}"));
            // Tool output is never the source of a fact.
            assert!(
                matches!(source.trace_type, TraceType::User | TraceType::Assistant),
                "{name}: fact from a {:?} event",
                source.trace_type
            );
            if fact.kind != FactKind::Decision {
                assert_eq!(
                    source.trace_type,
                    TraceType::User,
                    "{name}: constraint not from the user"
                );
            }
        }
    }
}

fn bullets<'s>(summary: &'s Summary, title: &str) -> &'s [String] {
    summary.section(title).unwrap()
}

#[test]
fn every_fixture_summarizes_to_nine_sections_within_budget_deterministically() {
    for name in FIXTURES {
        let events = fixture(name);
        for max_tokens in [200, 600, 2_000] {
            let first = summarize(&events, None, max_tokens);
            let second = summarize(&events, None, max_tokens);
            assert_eq!(first.render(), second.render(), "{name}: not deterministic");
            assert_eq!(first, second, "{name}: not deterministic");
            assert_well_formed(name, &events, &first, max_tokens);
        }
    }
}

#[test]
fn fixtures_yield_what_happened() {
    let s = summarize(&fixture("codex-rollout.jsonl"), None, 2_000);
    assert_eq!(
        bullets(&s, "Goal")[0],
        "Rename the `cfg` module to `config` and fix the imports."
    );
    assert!(bullets(&s, "Commands run")
        .contains(&"`git mv src/cfg.rs src/config.rs && cargo check` — failed".to_string()));
    assert!(bullets(&s, "Files read and modified").contains(&"`src/lib.rs` (modified)".to_string()));
    assert!(bullets(&s, "Errors seen")[0].contains("error[E0432]: unresolved import `crate::cfg`"));
    assert!(bullets(&s, "Progress")
        .iter()
        .any(|b| b.starts_with("In progress: the user interrupted")));
    assert!(bullets(&s, "Progress")
        .iter()
        .any(|b| b.starts_with("Blocked: `git mv")));
    assert!(bullets(&s, "Next steps")
        .contains(&"Latest user request: Yes, and then run the tests.".to_string()));

    let s = summarize(&fixture("claude-code-turn-2.jsonl"), None, 2_000);
    let files = bullets(&s, "Files read and modified");
    assert!(
        files.contains(&"`/home/dev/proj/crates/parser/src/header.rs` (modified)".to_string()),
        "{files:?}"
    );
    assert!(bullets(&s, "Errors seen")[0].contains("parses_header_with_crlf ... FAILED"));
    // The fix was reported done afterwards: not blocked.
    assert!(!bullets(&s, "Progress")
        .iter()
        .any(|b| b.starts_with("Blocked")));
    assert!(bullets(&s, "Progress")
        .iter()
        .any(|b| b.starts_with("Done:") && b.contains("split_header")));
    // Claude Code's `summary` line is the title its resume picker shows,
    // never sent to its model: not earlier context.
    assert!(!s
        .render()
        .contains("Parser header test failing on CRLF input"));
    // The subagent's inner Grep call is not the parent's.
    assert!(!bullets(&s, "Commands run")
        .iter()
        .any(|b| b.contains("Grep")));

    let s = summarize(&fixture("openhands.json"), None, 2_000);
    assert!(bullets(&s, "Errors seen")[0].contains("No replacement was performed"));
    assert!(
        !bullets(&s, "Progress")
            .iter()
            .any(|b| b.starts_with("Blocked")),
        "a later edit succeeded"
    );
    // The request is also a rule: listed once (as the goal), kept as a fact.
    assert!(bullets(&s, "Goal")[0].contains(r#"should be "top-10-tips""#));
    assert!(s.facts.iter().any(|f| f.kind == FactKind::Constraint
        && f.text.contains(r#"should be "top-10-tips""#)
        && f.source_event_ids == ["oh-1"]));
    assert!(
        bullets(&s, "Progress")[0].starts_with("Done: `slugify` now keeps digits"),
        "the finish message counts"
    );

    let s = summarize(&fixture("openai-messages.json"), None, 2_000);
    assert_eq!(bullets(&s, "Commands run"), ["`make release` — failed"]);
    assert!(bullets(&s, "Errors seen")[0].contains("cannot create regular file 'dist/'"));
    assert!(bullets(&s, "Files read and modified").contains(&"`Makefile` (read)".to_string()));

    let s = summarize(&fixture("codex-legacy.jsonl"), None, 2_000);
    assert!(bullets(&s, "Constraints and preferences")
        .contains(&"Always run `cargo fmt` before you finish.".to_string()));
    // A system instruction is listed but is not the user's fact.
    assert!(s.facts.is_empty());
}

#[test]
fn the_workload_summarizes_within_budget_deterministically() {
    let events = workload();
    assert!(events.len() > 200);
    for max_tokens in [300, 1_000, 3_000] {
        let first = summarize(&events, None, max_tokens);
        let second = summarize(&events, None, max_tokens);
        assert_eq!(first.render(), second.render());
        assert_well_formed("workload", &events, &first, max_tokens);
    }
    let s = summarize(&events, None, 3_000);
    // The workload's prose is random words: it announces no decisions.
    for title in SECTION_TITLES.iter().filter(|t| **t != "Key decisions") {
        assert!(!bullets(&s, title).is_empty(), "workload: {title} is empty");
    }
    assert!(!s.facts.is_empty());
}

#[test]
fn a_focus_changes_what_is_selected() {
    let events = workload();
    let focus = "journalctl logs";
    let plain = summarize(&events, None, 800);
    let focused = summarize(&events, Some(focus), 800);
    assert_well_formed("focused", &events, &focused, 800);
    assert_eq!(
        bullets(&focused, "Goal")[0],
        format!("Focus of this summary: {focus}")
    );
    let mentions = |s: &Summary| {
        s.sections
            .iter()
            .flat_map(|(_, b)| b.iter())
            .filter(|b| !b.starts_with("Focus of this summary"))
            .filter(|b| b.contains("journalctl") || b.contains("logs/"))
            .count()
    };
    assert!(
        mentions(&focused) > mentions(&plain),
        "focused {} vs plain {}",
        mentions(&focused),
        mentions(&plain)
    );
    assert!(bullets(&focused, "Commands run")[0].contains("journalctl"));

    // On a small span: among many rules, the one about the focus is kept first.
    let mut span: Vec<Event> = (0..30)
        .map(|i| Event::user(format!("You must keep module_{i} stable.")).with_id(format!("u{i}")))
        .collect();
    span.push(Event::user("Never change the tokenizer cache layout.").with_id("u_cache"));
    let request = SummaryRequest::new(&span, 2_000, tokenizer());
    let plain = ExtractiveSummarizer::default().summarize(&request).unwrap();
    let focused = ExtractiveSummarizer::default()
        .summarize(&request.with_focus("tokenizer cache"))
        .unwrap();
    assert_eq!(
        bullets(&focused, "Constraints and preferences")[0],
        "Never change the tokenizer cache layout."
    );
    assert_ne!(
        bullets(&plain, "Constraints and preferences")[0],
        "Never change the tokenizer cache layout."
    );
}

/// Wraps a summarizer to check it is never handed more than its window.
struct Windowed<'a> {
    inner: &'a dyn Summarizer,
    calls: Cell<usize>,
}

impl Summarizer for Windowed<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn version(&self) -> &str {
        self.inner.version()
    }
    fn window_tokens(&self) -> u64 {
        self.inner.window_tokens()
    }
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        self.calls.set(self.calls.get() + 1);
        let tokens: usize = request
            .events
            .iter()
            .map(|e| event_tokens(e, request.tokenizer))
            .sum();
        assert!(
            tokens as u64 <= self.window_tokens(),
            "{tokens} tokens handed to a {}-token window",
            self.window_tokens()
        );
        self.inner.summarize(request)
    }
}

#[test]
fn a_span_five_times_the_window_is_summarized_in_chunks_and_fully_covered() {
    let events = workload();
    let total: usize = events.iter().map(|e| event_tokens(e, tokenizer())).sum();
    let inner = ExtractiveSummarizer {
        window_tokens: (total / 5) as u64,
    };
    let windowed = Windowed {
        inner: &inner,
        calls: Cell::new(0),
    };
    let request = SummaryRequest::new(&events, 1_500, tokenizer());
    let summary = summarize_hierarchical(&windowed, &request).unwrap();
    assert!(windowed.calls.get() >= 5, "{} calls", windowed.calls.get());
    assert_well_formed("hierarchical", &events, &summary, 1_500);
    let again = summarize_hierarchical(&inner, &request).unwrap();
    assert_eq!(summary.render(), again.render());
    // The original goal leads; the latest request is the next step.
    let first_user = events
        .iter()
        .find(|e| e.trace_type == TraceType::User)
        .unwrap();
    let first_words: String = first_user
        .content
        .split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(bullets(&summary, "Goal")[0].starts_with(&first_words));
    let last_user = events
        .iter()
        .rev()
        .find(|e| e.trace_type == TraceType::User)
        .unwrap();
    let last_words: String = last_user
        .content
        .split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(bullets(&summary, "Next steps")[0].contains(&last_words));
    // Only one "In progress" survives the merge.
    assert_eq!(
        bullets(&summary, "Progress")
            .iter()
            .filter(|b| b.starts_with("In progress:"))
            .count(),
        1
    );

    // A window smaller than single events: they are split, never truncated.
    let tiny = ExtractiveSummarizer {
        window_tokens: 2_000,
    };
    let windowed = Windowed {
        inner: &tiny,
        calls: Cell::new(0),
    };
    let span = &events[..60];
    let biggest = span
        .iter()
        .map(|e| event_tokens(e, tokenizer()))
        .max()
        .unwrap();
    assert!(
        biggest > 2_000,
        "the span has an event larger than the window"
    );
    let summary =
        summarize_hierarchical(&windowed, &SummaryRequest::new(span, 1_000, tokenizer())).unwrap();
    assert_well_formed("split events", span, &summary, 1_000);
}

#[test]
fn fidelity_hints_dropped_identifiers_with_their_events() {
    let span = vec![
        Event::user("The deploy of commit 3f9d2c1b fails with HTTP 502 on port 8443.")
            .with_id("ev_1"),
        Event::tool_call(
            "call_1",
            "read_file",
            serde_json::json!({"path": "deploy/nginx.conf"}),
        )
        .with_id("ev_2"),
        Event::tool_result(
            "call_1",
            "upstream http://10.0.0.7:8080/api timeout 30s\nclient_max_body_size 512 MB;",
        )
        .with_id("ev_3"),
        Event::assistant("The upstream in deploy/nginx.conf times out after 30s; raising it.")
            .with_id("ev_4"),
    ];
    let expected = [
        ("3f9d2c1b", vec!["ev_1"]),
        ("HTTP 502", vec!["ev_1"]),
        ("port 8443", vec!["ev_1"]),
        ("deploy/nginx.conf", vec!["ev_2", "ev_4"]),
        ("http://10.0.0.7:8080/api", vec!["ev_3"]),
        ("30s", vec!["ev_3", "ev_4"]),
        ("512 MB", vec!["ev_3"]),
    ];
    let context = "## Goal\n- fix the deploy of 3f9d2c1b (HTTP 502)\n## Files read and modified\n- `deploy/nginx.conf` (read)\n";
    let report = check_fidelity(&span, context);
    assert_eq!(report.identifiers, expected.len());
    assert_eq!(report.survived, 3);
    assert!((report.survival_rate() - 3.0 / 7.0).abs() < 1e-12);
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
    // Those named by the user or the assistant first, then by number of events.
    assert_eq!(
        missing,
        [
            ("30s", vec!["ev_3", "ev_4"]),
            ("port 8443", vec!["ev_1"]),
            ("http://10.0.0.7:8080/api", vec!["ev_3"]),
            ("512 MB", vec!["ev_3"]),
        ]
    );
    let hints = report.lookup_hints().unwrap();
    assert!(hints.starts_with("## Lookup hints\n"));
    assert!(
        hints.contains("- `30s` — search events ev_3, ev_4\n"),
        "{hints}"
    );
    assert!(hints.contains("- `port 8443` — search events ev_1\n"));
    assert!(!hints.contains("deploy/nginx.conf"));

    // Everything kept: no hints, full survival.
    let all: String = expected.iter().map(|(id, _)| format!("{id}\n")).collect();
    let report = check_fidelity(&span, &all);
    assert_eq!(report.survival_rate(), 1.0);
    assert!(report.lookup_hints().is_none());
}

#[test]
fn fidelity_of_real_summaries_is_consistent() {
    let mut spans: Vec<(String, Vec<Event>)> = FIXTURES
        .iter()
        .map(|n| (n.to_string(), fixture(n)))
        .collect();
    spans.push(("workload".to_string(), workload()));
    for (name, events) in spans {
        let summary = summarize(&events, None, 1_500);
        let text = summary.render();
        let report = check_fidelity(&events, &text);
        assert_eq!(
            report.survived + report.missing.len(),
            report.identifiers,
            "{name}"
        );
        // Whatever the summary names survives.
        for identifier in extract_identifiers(&text) {
            assert!(
                !report.missing.iter().any(|m| m.identifier == identifier),
                "{name}: {identifier}"
            );
        }
        // Each hint points at events that hold the identifier.
        let by_id: BTreeMap<&str, BTreeSet<String>> = events
            .iter()
            .map(|e| (e.id.as_str(), event_identifiers(e).into_iter().collect()))
            .collect();
        for missing in &report.missing {
            assert!(
                !text.contains(&missing.identifier),
                "{name}: {} is in the summary",
                missing.identifier
            );
            for id in &missing.event_ids {
                assert!(
                    by_id[id.as_str()].contains(&missing.identifier),
                    "{name}: {id}"
                );
            }
        }
        if report.identifiers > 0 {
            assert!(
                report.survived > 0,
                "{name}: the summary keeps some identifiers"
            );
        }
        // Summary plus hints names every identifier of the span (the hints list is capped).
        if let Some(hints) = report.lookup_hints() {
            let with_hints = format!("{text}\n{hints}");
            let after = check_fidelity(&events, &with_hints);
            let capped = report
                .missing
                .len()
                .saturating_sub(agentmem::summarize::fidelity::MAX_HINTS);
            assert_eq!(after.missing.len(), capped, "{name}");
        }
    }
}

#[test]
fn a_previous_summary_is_merged_not_nested() {
    let events = workload();
    let half = events.len() / 2;
    let earlier = summarize(&events[..half], None, 1_200);
    // The caller stores the summary with the prefix; the next compaction finds it in its span.
    let as_message =
        Event::user(format!("{SUMMARY_PREFIX}\n{}", earlier.render())).with_id("summary_1");
    let as_event = Event::new(TraceType::Summary, earlier.render()).with_id("summary_1");
    // As a compaction stores it: with the focus it had and the lookup hints appended.
    let hints = check_fidelity(&events[..half], &earlier.render())
        .lookup_hints()
        .unwrap();
    let with_hints = Event::new(
        TraceType::Summary,
        format!(
            "Focus of this summary: old focus\n\n{}\n\n{hints}",
            earlier.render()
        ),
    )
    .with_id("summary_1");
    for previous in [as_message, as_event, with_hints] {
        let mut span = vec![previous];
        span.extend_from_slice(&events[half..]);
        let summary = summarize(&span, None, 1_200);
        assert_well_formed("merged", &span, &summary, 1_200);
        let text = summary.render();
        assert!(!text.contains(SUMMARY_PREFIX));
        assert_eq!(text.matches("## Goal\n").count(), 1);
        // The earlier goal still leads.
        assert_eq!(bullets(&summary, "Goal")[0], bullets(&earlier, "Goal")[0]);
        // The summary text was not quoted as if it were a user request.
        assert!(bullets(&summary, "Goal").iter().all(|b| !b.contains("## ")));
        assert!(bullets(&summary, "Constraints and preferences")
            .iter()
            .all(|b| !b.contains("## ")));
        assert!(summary.covered_event_ids.contains(&"summary_1".to_string()));
        assert!(!text.contains("old focus"));
        // Summarizing again is stable.
        assert_eq!(text, summarize(&span, None, 1_200).render());
    }
}

#[test]
fn budgets_are_honoured_or_refused() {
    let events = fixture("claude-code-turn-2.jsonl");
    for max_tokens in [110, 150, 250, 400, 800, 5_000] {
        let summary = summarize(&events, None, max_tokens);
        assert!(tokenizer().count(&summary.render()) as u64 <= max_tokens);
    }
    let request = SummaryRequest::new(&events, 20, tokenizer());
    let err = summarize_hierarchical(&ExtractiveSummarizer::default(), &request).unwrap_err();
    assert!(
        matches!(err, SummarizeError::BudgetTooSmall { max_tokens: 20, .. }),
        "{err}"
    );
    let request = SummaryRequest::new(&[], 1_000, tokenizer());
    assert_eq!(
        summarize_hierarchical(&ExtractiveSummarizer::default(), &request).unwrap_err(),
        SummarizeError::Empty
    );
}
