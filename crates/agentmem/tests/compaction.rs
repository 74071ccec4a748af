//! Compaction, overflow recovery and the strategies, on real files: nothing
//! is ever lost, crashes at each step leave a readable session, failures
//! change nothing, and the prepared context fits.

use std::sync::{Arc, Mutex};

use agentmem::files::snapshot::Snapshot;
use agentmem::pipeline::compact::CompactReason;
use agentmem::pipeline::overflow::{classify_provider_error, ProviderError};
use agentmem::pipeline::strategy::{CompactionTiming, Strategy};
use agentmem::pipeline::tiers::Action;
use agentmem::{
    AgentId, CompactOptions, ContextStats, Durability, Error, Event, PrepareRequest, Session,
    SessionId, Store, SummarizeError, Summarizer, Summary, SummaryRequest, Target, TraceType,
};
use serde_json::json;

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), Durability::Batch).unwrap()
}

fn agent() -> AgentId {
    AgentId::default()
}

/// `turns` turns of a coding session, with explicit ids and times.
fn coding_turns(turns: usize) -> Vec<Event> {
    let mut events = vec![Event::system("You are a coding agent.")
        .with_id("sys")
        .with_ts(1.0)];
    for t in 0..turns {
        let ts = 10.0 + t as f64;
        let call = format!("call_{t}");
        events.push(
            Event::user(format!(
                "Turn {t}: fix crates/mod_{t}/src/lib.rs, error E04{t:02} at line {t}0."
            ))
            .with_id(format!("u{t}"))
            .with_ts(ts),
        );
        events.push(
            Event::tool_call(
                &call,
                "read_file",
                json!({"path": format!("crates/mod_{t}/src/lib.rs")}),
            )
            .with_id(format!("c{t}"))
            .with_ts(ts),
        );
        events.push(
            Event::tool_result(&call, format!("fn handler_{t}() {{}}\n").repeat(150))
                .with_id(format!("r{t}"))
                .with_ts(ts),
        );
        events.push(
            Event::assistant(format!("Fixed mod_{t}; tests pass."))
                .with_id(format!("a{t}"))
                .with_ts(ts),
        );
    }
    events
}

fn session_with(dir: &tempfile::TempDir, events: Vec<Event>) -> Session {
    let mut session = store(dir)
        .create_session(&agent(), Some(SessionId::new("s").unwrap()))
        .unwrap();
    session.ingest(events).unwrap();
    session
}

fn ids(events: &[impl std::borrow::Borrow<Event>]) -> Vec<String> {
    events.iter().map(|e| e.borrow().id.clone()).collect()
}

#[test]
fn compaction_archives_history_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(12);
    let mut session = session_with(&dir, original.clone());
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    assert!(report.tokens_after < report.tokens_before);
    // The tail is the current turn and the four before it: 5 turns of 4 events.
    assert_eq!(session.events().len(), 20);
    assert_eq!(report.events_compacted, original.len() - 20);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&original));

    let base = &session.snapshot().unwrap().base;
    let summary = base
        .iter()
        .find(|e| e.trace_type == TraceType::Summary)
        .unwrap();
    assert!(summary.content.contains("## Goal"), "{}", summary.content);
    assert!(
        base.iter().any(|e| e.trace_type == TraceType::User),
        "user messages are kept"
    );
    let active = std::fs::read_to_string(session.paths().raw_traces()).unwrap();
    assert_eq!(active.lines().count(), 20, "resume reads only the tail");

    let before = session.transcript_in(Default::default()).totals();
    let id = session.id().clone();
    drop(session);
    let mut reopened = store(&dir).open_session(&agent(), &id).unwrap();
    assert_eq!(reopened.transcript_in(Default::default()).totals(), before);
    assert_eq!(ids(&reopened.full_history().unwrap()), ids(&original));
}

#[test]
fn the_archive_and_the_tail_keep_the_bytes_the_log_held() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(12));
    let logged = std::fs::read(session.paths().raw_traces()).unwrap();
    session.compact(&CompactOptions::default()).unwrap();
    let archived = std::fs::read(session.paths().archive()).unwrap();
    let active = std::fs::read(session.paths().raw_traces()).unwrap();
    assert_eq!([archived, active].concat(), logged);
}

#[test]
fn a_log_rewritten_by_hand_is_still_compacted_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(12);
    let session = session_with(&dir, original.clone());
    let (id, log) = (session.id().clone(), session.paths().raw_traces());
    drop(session);
    // The same events with their fields in sorted order: no line starts with its id.
    let reordered: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            format!("{}\n", serde_json::Value::Object(fields))
        })
        .collect();
    assert!(!reordered.starts_with("{\"id\""));
    std::fs::write(&log, reordered).unwrap();
    let mut session = store(&dir).open_session(&agent(), &id).unwrap();
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&original));
}

#[test]
fn what_an_imported_compaction_replaced_is_archived_but_not_summarized_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = coding_turns(12);
    // The agent compacted its own context after turn 3: its model saw the
    // summary from then on, not turns 0 to 3.
    let summary = Event::new(TraceType::Summary, "Turns 0-3 fixed four crates.")
        .with_tag(agentmem::base::event::REPLACES_HISTORY_TAG)
        .with_id("imported-summary")
        .with_ts(13.5);
    events.insert(1 + 4 * 4, summary);
    let original = events.clone();
    let mut session = session_with(&dir, events);
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    let base = &session.snapshot().unwrap().base;
    let text: String = base.iter().map(|e| e.content.as_str()).collect();
    assert!(!text.contains("Turn 2: fix"), "{text}");
    assert!(text.contains("Turn 5: fix"), "{text}");
    assert_eq!(ids(&session.full_history().unwrap()), ids(&original));
}

#[test]
fn a_crash_between_snapshot_and_log_rewrite_is_finished_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(10);
    let mut session = session_with(&dir, original.clone());
    let log = session.paths().raw_traces();
    let before_compaction = std::fs::read(&log).unwrap();
    session.compact(&CompactOptions::default()).unwrap();
    let tail = ids(session.events());
    drop(session);
    // The crash: archive and snapshot written, the old log still in place.
    std::fs::write(&log, &before_compaction).unwrap();

    let reader = store(&dir)
        .read_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert_eq!(ids(reader.events()), tail, "readers see the finished state");
    drop(reader);
    let writer = store(&dir)
        .open_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert_eq!(ids(writer.events()), tail);
    assert_eq!(
        ids(&writer.full_history().unwrap()),
        ids(&original),
        "no duplicates, nothing lost"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        tail.len(),
        "the writer finished the rewrite"
    );
}

#[test]
fn a_crash_after_archiving_leaves_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(10);
    let session = session_with(&dir, original.clone());
    let archive = session.paths().archive();
    drop(session);
    // The crash: the span was appended to the archive, nothing else happened.
    let span: String = original[..9]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(&archive, span).unwrap();

    let session = store(&dir)
        .open_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert_eq!(
        ids(session.events()),
        ids(&original),
        "the view is the uncompacted log"
    );
    assert_eq!(
        ids(&session.full_history().unwrap()),
        ids(&original),
        "archive copies are not shown twice"
    );
}

/// A summarizer that fails on cue.
struct Failing(Arc<Mutex<u32>>);

impl Summarizer for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn version(&self) -> &str {
        "1"
    }
    fn window_tokens(&self) -> u64 {
        100_000
    }
    fn summarize(&self, _: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        *self.0.lock().unwrap() += 1;
        Err(SummarizeError::Failed("the model is down".into()))
    }
}

#[test]
fn a_failing_summarizer_changes_nothing_and_falls_back_after_three() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(10));
    let calls = Arc::new(Mutex::new(0));
    session.set_summarizer(Box::new(Failing(calls.clone())));
    let log = std::fs::read(session.paths().raw_traces()).unwrap();
    for failures in 1..=2 {
        let err = session.compact(&CompactOptions::default()).unwrap_err();
        assert!(
            matches!(err, Error::Summarizer { failures: f, .. } if f == failures),
            "{err}"
        );
        assert_eq!(
            std::fs::read(session.paths().raw_traces()).unwrap(),
            log,
            "history untouched"
        );
        assert!(session.snapshot().is_none());
    }
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied);
    assert!(
        report.fallback.as_deref().unwrap().contains("3 times"),
        "{report:?}"
    );
    let summary = &session.snapshot().unwrap().base.last().unwrap().content;
    assert!(summary.contains("search_conversation_history"), "{summary}");
    assert_eq!(
        session.full_history().unwrap().len(),
        coding_turns(10).len()
    );
    assert_eq!(*calls.lock().unwrap(), 3);
}

#[test]
fn compaction_is_deterministic() {
    let snapshot_of = || {
        let dir = tempfile::tempdir().unwrap();
        let mut session = session_with(&dir, coding_turns(9));
        session
            .compact(&CompactOptions {
                focus: Some("error codes".into()),
                ..Default::default()
            })
            .unwrap();
        session.snapshot().unwrap().base.clone()
    };
    assert_eq!(snapshot_of(), snapshot_of());
}

#[test]
fn identifiers_survive_or_are_hinted() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(10));
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.identifiers > 0);
    let summary = session
        .snapshot()
        .unwrap()
        .base
        .last()
        .unwrap()
        .content
        .clone();
    for t in 0..5 {
        let path = format!("crates/mod_{t}/src/lib.rs");
        assert!(
            summary.contains(&path),
            "{path} is neither kept nor hinted:\n{summary}"
        );
    }
}

#[test]
fn focus_protected_tools_and_aborted_turns_survive_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = coding_turns(3);
    events.push(
        Event::tool_call(
            "todo_1",
            "manage_todo_list",
            json!({"items": ["fix parser"]}),
        )
        .with_id("todo-c"),
    );
    events.push(Event::tool_result("todo_1", "1 item, 0 done").with_id("todo-r"));
    events.push(Event::new(TraceType::TurnAborted, "user pressed Esc").with_id("abort"));
    events.extend(coding_turns(12).into_iter().skip(13).map(|mut e| {
        e.id = format!("late-{}", e.id);
        e
    }));
    let mut session = store(&dir).create_session(&agent(), None).unwrap();
    session.ingest(events).unwrap();
    let mut options = CompactOptions {
        focus: Some("the parser".into()),
        ..Default::default()
    };
    options.context.protected_tools = Some(vec!["manage_todo_list".into()]);
    session.compact(&options).unwrap();
    let base = &session.snapshot().unwrap().base;
    let base_ids = ids(base);
    assert!(
        base_ids.contains(&"todo-c".to_owned()) && base_ids.contains(&"todo-r".to_owned()),
        "{base_ids:?}"
    );
    assert!(base_ids.contains(&"abort".to_owned()));
    assert!(base.last().unwrap().content.contains("the parser"));
}

#[test]
fn auto_keeps_the_context_inside_the_budget_and_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = store(&dir).create_session(&agent(), None).unwrap();
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(6_000);
    request.budget.max_output_tokens = Some(500);
    request.budget.safety_margin = Some(500);
    let mut compacted = false;
    let all = coding_turns(40);
    for turn in all.chunks(4) {
        session.ingest(turn.to_vec()).unwrap();
        let stats = session.prepare(&request).unwrap().stats;
        assert!(stats.context_tokens <= stats.input_budget, "{stats:?}");
        compacted |= stats
            .actions
            .iter()
            .any(|a| matches!(a, Action::Compacted { .. }));
    }
    assert!(
        compacted,
        "a 40-turn session in a 5,000-token budget compacts"
    );
    assert_eq!(ids(&session.full_history().unwrap()), ids(&all));
}

#[test]
fn strategies_none_trim_and_placeholder() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(20));
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(8_000);
    request.budget.max_output_tokens = Some(500);
    request.budget.safety_margin = Some(500);

    request.context.strategy = Some(Strategy::None);
    let none = session.prepare(&request).unwrap().stats;
    assert!(none.over_budget && none.actions.iter().all(|a| a.tokens_saved() == 0));

    request.context.strategy = Some(Strategy::Placeholder);
    let placeholder = session.prepare(&request).unwrap();
    assert!(placeholder
        .payload
        .to_string()
        .contains("⟦removed: read_file call_0"));

    let dir2 = tempfile::tempdir().unwrap();
    let mut fresh = session_with(&dir2, coding_turns(20));
    request.context.strategy = Some(Strategy::Trim);
    let trimmed = fresh.prepare(&request).unwrap();
    let messages = trimmed.payload["messages"].as_array().unwrap();
    // Whole turns only: the first message after the system prompt is a user message.
    assert_eq!(messages[1]["role"], "user");
    assert!(trimmed
        .stats
        .actions
        .iter()
        .any(|a| matches!(a, Action::TurnsTrimmed { .. })));
    assert!(trimmed.stats.context_tokens <= trimmed.stats.input_budget);
}

#[test]
fn overflow_recovery_retries_three_times_then_gives_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(12));
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let full = session.prepare(&request).unwrap().stats.context_tokens;
    let error = classify_provider_error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
    );
    assert!(matches!(error, ProviderError::ContextOverflow { .. }));
    let first = session.recover_from_overflow(&error, &request).unwrap();
    assert!(
        first.stats.context_tokens < full,
        "{} !< {full}",
        first.stats.context_tokens
    );
    assert!(session.snapshot().is_some(), "the first recovery compacts");
    session.recover_from_overflow(&error, &request).unwrap();
    session.recover_from_overflow(&error, &request).unwrap();
    let err = session.recover_from_overflow(&error, &request).unwrap_err();
    assert!(
        matches!(err, Error::OverflowUnrecoverable { attempts: 3, .. }),
        "{err}"
    );

    // A model call that goes through (usage reported) resets the count.
    let mut answer = Event::assistant("ok");
    answer.usage = Some(Default::default());
    session.ingest(vec![answer]).unwrap();
    assert!(session.recover_from_overflow(&error, &request).is_ok());
    let other = classify_provider_error(429, "slow down");
    assert!(matches!(
        session.recover_from_overflow(&other, &request),
        Err(Error::NotAnOverflow { .. })
    ));
}

/// A local server may report no usage: its answer still shows the call went
/// through, so the next overflow gets its three recoveries again.
#[test]
fn an_answer_without_usage_resets_the_overflow_count_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(12));
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let error = ProviderError::ContextOverflow {
        message: "400: prompt is too long".into(),
    };
    for _ in 0..3 {
        session.recover_from_overflow(&error, &request).unwrap();
    }
    assert!(session.recover_from_overflow(&error, &request).is_err());
    session.ingest(vec![Event::assistant("ok")]).unwrap();
    for attempt in 1..=3 {
        assert!(
            session.recover_from_overflow(&error, &request).is_ok(),
            "attempt {attempt}"
        );
    }
}

#[test]
fn hooks_run_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(8));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (before, after) = (seen.clone(), seen.clone());
    session.before_compaction(Box::new(move |reason| {
        before.lock().unwrap().push(format!("before {reason:?}"))
    }));
    session.on_compaction(Box::new(move |report| {
        after
            .lock()
            .unwrap()
            .push(format!("after {}", report.tokens_saved > 0))
    }));
    session.compact(&CompactOptions::default()).unwrap();
    assert_eq!(*seen.lock().unwrap(), ["before Manual", "after true"]);
    let _ = CompactReason::Auto;
}

#[test]
fn large_outputs_are_evicted_at_ingest_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let huge =
        "2026-11-22 INFO worker=7 request handled in 12 ms path=/api/v1/items\n".repeat(4_000);
    let mut session = store(&dir).create_session(&agent(), None).unwrap();
    let report = session
        .ingest(vec![
            Event::user("show me the log"),
            Event::tool_call("call_log", "bash", json!({"cmd": "cat app.log"})),
            Event::tool_result("call_log", huge.clone()),
        ])
        .unwrap();
    assert_eq!(report.evicted, 1);
    let path = session.paths().evicted().join("call_log.txt");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), huge);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert_eq!(
        session.events()[2].content,
        huge,
        "the log keeps the full text"
    );
    let payload = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap()
        .payload;
    let shown = payload["messages"][2]["content"].as_str().unwrap();
    assert!(
        shown.len() < 3_000 && shown.contains("read_evicted_output"),
        "{shown}"
    );
    let page =
        agentmem::files::evicted::read_evicted(&session.paths().evicted(), "call_log", 10, 5)
            .unwrap();
    assert_eq!(page.lines_returned, 5);
    assert!(page.has_more);
}

#[test]
fn recompaction_from_raw_rederives_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(12);
    let mut session = session_with(&dir, original.clone());
    session.compact(&CompactOptions::default()).unwrap();
    let mut options = CompactOptions::default();
    options.context.raw_tail_turns = Some(1);
    let report = session.compact_from_raw(&options).unwrap();
    assert_eq!(report.reason, CompactReason::FromRaw);
    assert!(report.applied);
    assert_eq!(session.events().len(), 8, "the current turn and one more");
    assert_eq!(ids(&session.full_history().unwrap()), ids(&original));
    let archived = std::fs::read_to_string(session.paths().archive())
        .unwrap()
        .lines()
        .count();
    assert_eq!(archived, original.len() - 8, "nothing archived twice");
    let snapshot = Snapshot::read(&session.paths().dir).unwrap().unwrap();
    assert_eq!(
        snapshot.report["reason"], "from_raw",
        "the snapshot was derived afresh"
    );
    // Numbered after the compaction it replaces, so its episode is its own.
    assert_eq!(snapshot.compactions, 2);
    let episodes =
        agentmem::memory::episodic::read_episodes(dir.path().join("agents/default").as_path())
            .unwrap();
    let ids: Vec<&str> = episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        ids[1].ends_with("-0002") && episodes[1].tags.contains(&"from_raw".to_owned()),
        "{ids:?}"
    );
}

#[test]
fn ingest_says_when_a_tool_result_crosses_the_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(1));
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(6_000);
    request.budget.max_output_tokens = Some(500);
    request.budget.safety_margin = Some(500);
    assert!(!session.prepare(&request).unwrap().stats.compaction_due);
    let small = session
        .ingest(vec![
            Event::tool_call("c9", "ls", json!({})),
            Event::tool_result("c9", "a.rs"),
        ])
        .unwrap();
    assert!(!small.compaction_due);
    let big = "error: mismatched types in crates/parser/src/lib.rs\n".repeat(300);
    let report = session
        .ingest(vec![
            Event::tool_call("c10", "bash", json!({})),
            Event::tool_result("c10", big),
        ])
        .unwrap();
    assert!(
        report.compaction_due,
        "checked after each tool result, not only at turn start"
    );
}

#[test]
fn a_huge_output_whose_call_id_cannot_be_a_file_name_is_cut_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "a line of a very long listing\n".repeat(20_000);
    let mut session = store(&dir).create_session(&agent(), None).unwrap();
    let report = session
        .ingest(vec![
            Event::user("list everything"),
            Event::tool_call("fc/../1", "ls", json!({})),
            Event::tool_result("fc/../1", huge),
        ])
        .unwrap();
    assert_eq!(report.evicted, 0);
    assert!(!session.paths().evicted().exists());
    let payload = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap()
        .payload;
    let shown = payload["messages"][2]["content"].as_str().unwrap();
    assert!(
        shown.starts_with("Total output lines: 20000") && shown.contains("tokens truncated"),
        "{}",
        &shown[..200]
    );
}

#[test]
fn the_summarize_strategy_shows_the_summary_as_a_shadow_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    for t in 0..12 {
        events.push(
            Event::user(format!("Question {t}: how does module {t} handle retries?"))
                .with_id(format!("u{t}")),
        );
        events.push(
            Event::assistant(format!("Module {t} retries three times with backoff. ").repeat(30))
                .with_id(format!("a{t}")),
        );
    }
    let mut session = session_with(&dir, events);
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.context.strategy = Some(Strategy::Summarize);
    request.budget.context_window = Some(3_500);
    request.budget.max_output_tokens = Some(300);
    request.budget.safety_margin = Some(200);
    let prepared = session.prepare(&request).unwrap();
    assert!(
        prepared
            .stats
            .actions
            .iter()
            .any(|a| matches!(a, Action::Compacted { .. })),
        "{:?}",
        prepared.stats.actions
    );
    let messages = prepared.payload["messages"].as_array().unwrap();
    let outline: Vec<String> = messages
        .iter()
        .map(|m| format!("{} {:.60}", m["role"], m["content"]))
        .collect();
    let shadow = messages
        .iter()
        .position(|m| m["content"] == "Summarize the conversation so far.")
        .unwrap_or_else(|| panic!("{outline:#?} {:?}", prepared.stats.actions));
    assert_eq!(messages[shadow]["role"], "user");
    assert_eq!(messages[shadow + 1]["role"], "assistant");
    assert!(messages[shadow + 1]["content"]
        .as_str()
        .unwrap()
        .starts_with("[SUMMARY OF EARLIER CONVERSATION]"));
    // The count is still exact: OpenAI's rule applied to the payload itself.
    let tokenizer = agentmem::Encoding::O200kBase.tokenizer();
    let by_rule: u64 = messages
        .iter()
        .map(|m| {
            3 + tokenizer.count(m["role"].as_str().unwrap()) as u64
                + tokenizer.count(m["content"].as_str().unwrap()) as u64
        })
        .sum::<u64>()
        + 3;
    assert_eq!(prepared.stats.counted_tokens, by_rule);
}

#[test]
fn the_guard_policy_comes_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(agentmem::config::CONFIG_FILE),
        "[guard]\ntruncation = { policy = \"bytes\", limit = 1000 }\nevict_over_tokens = 1000000\n",
    )
    .unwrap();
    let store = Store::with_config(dir.path(), agentmem::Config::load(dir.path()).unwrap());
    let mut session = store.create_session(&agent(), None).unwrap();
    let output = "0123456789".repeat(1_000);
    session
        .ingest(vec![
            Event::user("go"),
            Event::tool_call("c", "cat", json!({})),
            Event::tool_result("c", output),
        ])
        .unwrap();
    let payload = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap()
        .payload;
    let shown = payload["messages"][2]["content"].as_str().unwrap();
    assert!(
        shown.len() <= 1_200 && shown.contains("bytes truncated"),
        "{shown}"
    );
}

/// An overflow message that names the provider's count and limit sets the
/// retry's window: the limit in agentmem's count, so the retry fits at once
/// (a guess of three quarters of the model's 200,000 tokens would not).
#[test]
fn an_overflow_that_names_its_sizes_is_recovered_from_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(12));
    let mut request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    request.context.strategy = Some(Strategy::Trim);
    request.budget.safety_margin = Some(200); // the default is as large as this session
    let sent = session.prepare(&request).unwrap().stats.counted_tokens;
    // The provider counts a quarter more than agentmem, and its limit is
    // below what was sent: in agentmem's count, the limit is 64% of it.
    let (prompt, limit) = (sent * 5 / 4, sent * 4 / 5);
    let error = classify_provider_error(
        400,
        &format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"prompt is too long: {prompt} tokens > {limit} maximum"}}}}"#
        ),
    );
    let retry = session
        .recover_from_overflow(&error, &request)
        .unwrap()
        .stats;
    let limit_in_our_count = limit * sent / prompt;
    assert!(
        retry.counted_tokens <= limit_in_our_count,
        "{} sent, the limit is {limit_in_our_count} in our count",
        retry.counted_tokens
    );
    assert_eq!(
        retry.budget.context_window,
        limit_in_our_count * 95 / 100,
        "the retry's window is the limit in our count, less 5%"
    );
}

// ---------------------------------------------------------------------------
// Background compaction: drafted on a thread of its own while the model
// answers, applied by the first prepare that finds it ready, none waiting
// for it. It makes the snapshot an inline compaction makes, leaves the files
// untouched until it is applied, keeps every call within the budget while
// it is drafted, and handles a failing summarizer and a superseded draft
// like any compaction.
// ---------------------------------------------------------------------------

/// An 18,000-token input budget, its trigger at 14,400; the `summarize`
/// strategy, so only a compaction shrinks the view.
fn timed_request(timing: CompactionTiming) -> PrepareRequest {
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(20_000);
    request.budget.max_output_tokens = Some(1_000);
    request.budget.safety_margin = Some(1_000);
    request.context.strategy = Some(Strategy::Summarize);
    request.context.compaction_timing = Some(timing);
    request
}

fn prepare_with(session: &mut Session, timing: CompactionTiming) -> ContextStats {
    session.prepare(&timed_request(timing)).unwrap().stats
}

fn compacted(stats: &ContextStats) -> Option<usize> {
    stats.actions.iter().find_map(|action| match *action {
        Action::Compacted { events, .. } => Some(events),
        _ => None,
    })
}

fn started(stats: &ContextStats) -> Option<usize> {
    stats.actions.iter().find_map(|action| match *action {
        Action::CompactionStarted { events } => Some(events),
        _ => None,
    })
}

#[test]
fn a_draft_is_applied_by_the_next_prepare_as_an_inline_compaction_would_be() {
    let events = coding_turns(16);
    let (inline_dir, background_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut inline = session_with(&inline_dir, events.clone());
    let inline_stats = prepare_with(&mut inline, CompactionTiming::Inline);
    let inline_events = compacted(&inline_stats).expect("the inline prepare compacts");

    let mut session = session_with(&background_dir, events.clone());
    let log = std::fs::read(session.paths().raw_traces()).unwrap();
    let first = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(started(&first), Some(inline_events), "{:?}", first.actions);
    assert_eq!(compacted(&first), None);
    assert!(
        first.context_tokens > first.trigger_tokens && first.context_tokens <= first.input_budget,
        "sent as it is, over the trigger but within the budget: {first:?}"
    );
    assert_eq!(std::fs::read(session.paths().raw_traces()).unwrap(), log);
    assert!(!session.paths().archive().exists() && session.snapshot().is_none());

    assert_eq!(session.wait_for_draft(), Some(inline_events));
    let second = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(
        compacted(&second),
        Some(inline_events),
        "{:?}",
        second.actions
    );
    assert_eq!(
        session.snapshot().unwrap().base,
        inline.snapshot().unwrap().base
    );
    assert_eq!(second.context_tokens, inline_stats.context_tokens);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&events));
}

#[test]
fn events_that_arrive_while_drafting_stay_in_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(16));
    let drafted = started(&prepare_with(&mut session, CompactionTiming::Background)).unwrap();
    let late = Event::user("Also bump the version to 2.4.1.").with_id("late");
    session.ingest(vec![late]).unwrap();
    session.wait_for_draft();
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(compacted(&stats), Some(drafted));
    assert_eq!(session.events().last().unwrap().id, "late");
    let all = session.full_history().unwrap();
    assert_eq!(all.len(), coding_turns(16).len() + 1);
}

#[test]
fn a_context_over_the_budget_is_fitted_while_its_compaction_is_drafted() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(20));
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert!(started(&stats).is_some(), "{:?}", stats.actions);
    assert!(
        stats
            .actions
            .iter()
            .any(|a| matches!(a, Action::TurnsTrimmed { .. })),
        "the oldest turns left out of this call: {:?}",
        stats.actions
    );
    assert!(stats.context_tokens <= stats.input_budget, "{stats:?}");
    assert!(session.snapshot().is_none());
    session.wait_for_draft();
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert!(compacted(&stats).is_some(), "{:?}", stats.actions);
    assert!(stats.context_tokens <= stats.input_budget);
}

#[test]
fn a_draft_that_failed_leaves_history_untouched_until_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(16));
    let calls = Arc::new(Mutex::new(0));
    session.set_summarizer(Box::new(Failing(calls.clone())));
    let log = std::fs::read(session.paths().raw_traces()).unwrap();
    assert!(started(&prepare_with(&mut session, CompactionTiming::Background)).is_some());
    for failures in 1..=2 {
        // The failure is reported, and the next draft started at once.
        session.wait_for_draft();
        let stats = prepare_with(&mut session, CompactionTiming::Background);
        let said = format!("{:?}", stats.actions);
        assert!(
            said.contains(&format!("failed ({failures} in a row)")),
            "{said}"
        );
        assert!(started(&stats).is_some(), "{said}");
        assert_eq!(std::fs::read(session.paths().raw_traces()).unwrap(), log);
        assert!(session.snapshot().is_none());
    }
    session.wait_for_draft();
    assert!(compacted(&prepare_with(&mut session, CompactionTiming::Background)).is_some());
    let summary = &session.snapshot().unwrap().base.last().unwrap().content;
    assert!(
        summary.contains("search_conversation_history"),
        "a trim stood in: {summary}"
    );
    assert_eq!(*calls.lock().unwrap(), 3);
}

#[test]
fn a_manual_compaction_supersedes_a_draft() {
    let dir = tempfile::tempdir().unwrap();
    let events = coding_turns(16);
    let mut session = session_with(&dir, events.clone());
    assert!(started(&prepare_with(&mut session, CompactionTiming::Background)).is_some());
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied);
    assert_eq!(session.wait_for_draft(), None, "the draft is dropped");
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(compacted(&stats), None, "{:?}", stats.actions);
    assert_eq!(session.snapshot().unwrap().compactions, 1);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&events));
}

/// The extractive summarizer, held at the gate until the test opens it:
/// a summarizer as slow as the test wants, with no clock involved.
struct Gated {
    gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
    inner: agentmem::summarize::ExtractiveSummarizer,
}

impl Gated {
    fn new() -> (Gated, impl Fn()) {
        let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let opener = Arc::clone(&gate);
        let open = move || {
            *opener.0.lock().unwrap() = true;
            opener.1.notify_all();
        };
        let inner = agentmem::summarize::ExtractiveSummarizer::default();
        (Gated { gate, inner }, open)
    }
}

impl Summarizer for Gated {
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
        let (open, opened) = &*self.gate;
        let mut is_open = open.lock().unwrap();
        while !*is_open {
            is_open = opened.wait(is_open).unwrap();
        }
        self.inner.summarize(request)
    }
}

fn pending(stats: &ContextStats) -> Option<usize> {
    stats.actions.iter().find_map(|action| match *action {
        Action::CompactionPending { events } => Some(events),
        _ => None,
    })
}

#[test]
fn no_call_waits_for_a_draft_and_every_call_stays_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let events = coding_turns(16);
    let mut session = session_with(&dir, events.clone());
    let (gated, open) = Gated::new();
    session.set_summarizer(Box::new(gated));
    let log = std::fs::read(session.paths().raw_traces()).unwrap();
    let drafted = started(&prepare_with(&mut session, CompactionTiming::Background)).unwrap();
    // The summarizer is held: each call below would wait forever if any did.
    let mut later = coding_turns(26).split_off(events.len());
    let (mut over_budget_calls, mut pending_calls) = (0, 0);
    for turn in later.chunks(4) {
        session.ingest(turn.to_vec()).unwrap();
        let prepared = session
            .prepare(&timed_request(CompactionTiming::Background))
            .unwrap();
        let stats = &prepared.stats;
        assert!(stats.context_tokens <= stats.input_budget, "{stats:?}");
        assert_eq!(compacted(stats), None, "{:?}", stats.actions);
        assert_eq!(started(stats), None, "one draft at a time");
        pending_calls += usize::from(pending(stats) == Some(drafted));
        over_budget_calls += usize::from(
            stats
                .actions
                .iter()
                .any(|a| matches!(a, Action::TurnsTrimmed { .. })),
        );
        // The latest question is always sent.
        let sent = serde_json::to_string(&prepared.payload).unwrap();
        assert!(sent.contains(&turn[0].content), "{sent}");
    }
    assert!(
        over_budget_calls > 0 && pending_calls > 0,
        "the history grew past the trigger while the draft was held: {over_budget_calls} calls trimmed, {pending_calls} found it pending"
    );
    assert_eq!(
        &std::fs::read(session.paths().raw_traces()).unwrap()[..log.len()],
        &log[..],
        "nothing written but the new events"
    );
    assert!(session.snapshot().is_none());
    open();
    assert_eq!(session.wait_for_draft(), Some(drafted));
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(compacted(&stats), Some(drafted), "{:?}", stats.actions);
    assert!(stats.context_tokens <= stats.input_budget);
    later.splice(0..0, events);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&later));
}

#[test]
fn a_draft_applied_late_is_what_the_inline_compaction_of_its_span_makes() {
    let events = coding_turns(16);
    let (inline_dir, background_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut inline = session_with(&inline_dir, events.clone());
    let inline_stats = prepare_with(&mut inline, CompactionTiming::Inline);
    let inline_events = compacted(&inline_stats).unwrap();

    let mut session = session_with(&background_dir, events.clone());
    let (gated, open) = Gated::new();
    session.set_summarizer(Box::new(gated));
    assert_eq!(
        started(&prepare_with(&mut session, CompactionTiming::Background)),
        Some(inline_events)
    );
    // Two turns arrive and are prepared for while the summary is held.
    let late = coding_turns(18).split_off(events.len());
    for turn in late.chunks(4) {
        session.ingest(turn.to_vec()).unwrap();
        let stats = prepare_with(&mut session, CompactionTiming::Background);
        assert_eq!(compacted(&stats), None, "{:?}", stats.actions);
        assert_eq!(started(&stats), None, "{:?}", stats.actions);
    }
    open();
    session.wait_for_draft();
    let stats = prepare_with(&mut session, CompactionTiming::Background);
    assert_eq!(
        compacted(&stats),
        Some(inline_events),
        "{:?}",
        stats.actions
    );
    // The same snapshot base as inline made of the same span; the tail holds
    // what inline kept and the turns that came while drafting.
    assert_eq!(
        session.snapshot().unwrap().base,
        inline.snapshot().unwrap().base
    );
    inline.ingest(late.clone()).unwrap();
    assert_eq!(ids(session.events()), ids(inline.events()));
    assert_eq!(
        session
            .transcript_in(agentmem::Encoding::O200kBase)
            .items()
            .len(),
        inline
            .transcript_in(agentmem::Encoding::O200kBase)
            .items()
            .len()
    );
    let files = |s: &Session| {
        (
            std::fs::read(s.paths().archive()).unwrap(),
            std::fs::read(s.paths().raw_traces()).unwrap(),
        )
    };
    assert_eq!(
        files(&session),
        files(&inline),
        "archive and log byte for byte"
    );
}

#[test]
fn a_session_dropped_while_drafting_keeps_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(16));
    let log = std::fs::read(session.paths().raw_traces()).unwrap();
    assert!(started(&prepare_with(&mut session, CompactionTiming::Background)).is_some());
    drop(session);
    let mut session = store(&dir)
        .open_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert_eq!(std::fs::read(session.paths().raw_traces()).unwrap(), log);
    assert!(session.snapshot().is_none());
    assert!(started(&prepare_with(&mut session, CompactionTiming::Background)).is_some());
}

#[test]
fn the_timing_comes_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(agentmem::config::CONFIG_FILE),
        "[context]\nstrategy = \"summarize\"\ncompaction_timing = \"background\"\n",
    )
    .unwrap();
    let store = Store::with_config(dir.path(), agentmem::Config::load(dir.path()).unwrap());
    let mut session = store.create_session(&agent(), None).unwrap();
    session.ingest(coding_turns(16)).unwrap();
    let mut request = timed_request(CompactionTiming::Inline);
    request.context = Default::default();
    let stats = session.prepare(&request).unwrap().stats;
    assert!(started(&stats).is_some(), "{:?}", stats.actions);
}

/// `turns` short exchanges: a summary of them is no smaller than they are.
fn small_talk(turns: usize) -> Vec<Event> {
    (0..turns)
        .flat_map(|t| {
            [
                Event::user(format!("Hello {t}?")).with_id(format!("u{t}")),
                Event::assistant("Hi.").with_id(format!("a{t}")),
            ]
        })
        .collect()
}

fn summary_of(session: &Session) -> Option<String> {
    let base = &session.snapshot()?.base;
    let summary = base.iter().find(|e| e.trace_type == TraceType::Summary)?;
    Some(summary.content.clone())
}

#[test]
fn a_compaction_asked_for_summarizes_a_short_history_and_says_when_it_freed_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, small_talk(3));
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    assert!(report.events_compacted > 0, "{report:?}");
    assert_eq!(report.tokens_saved, 0, "{report:?}");
    let note = report.note.as_deref().unwrap_or_default();
    assert!(note.contains("nothing was freed"), "{report:?}");
    assert!(summary_of(&session).is_some(), "a summary snapshot");
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let payload = session.prepare(&request).unwrap().payload.to_value();
    assert!(
        payload
            .to_string()
            .contains("[SUMMARY OF EARLIER CONVERSATION]"),
        "{payload}"
    );
    assert_eq!(
        ids(&session.full_history().unwrap()),
        ids(&small_talk(3)),
        "nothing lost"
    );

    // A longer span frees space, and then there is nothing to note.
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, coding_turns(3));
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied && report.tokens_saved > 0, "{report:?}");
    assert_eq!(report.note, None);
    assert_eq!(ids(&session.full_history().unwrap()), ids(&coding_turns(3)));
}

#[test]
fn a_compaction_asked_for_keeps_as_much_of_the_raw_tail_as_leaves_something_to_fold() {
    let dir = tempfile::tempdir().unwrap();
    // The system prompt, then three turns: the first is all a tail of the
    // current turn and one before it leaves to fold.
    let mut session = session_with(&dir, coding_turns(3));
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert_eq!(report.events_compacted, 5, "{report:?}");
    assert_eq!(ids(session.events()), ids(&coding_turns(3)[5..]));
}

#[test]
fn a_single_turn_is_compacted_whole_once_its_calls_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(
        &dir,
        vec![
            Event::user("Where is the parser?").with_id("u0"),
            Event::tool_call("call_0", "grep", json!({"pattern": "fn parse"})).with_id("c0"),
        ],
    );
    let waiting = session.compact(&CompactOptions::default()).unwrap();
    assert!(!waiting.applied, "{waiting:?}");
    let note = waiting.note.as_deref().unwrap_or_default();
    assert!(note.contains("waits for"), "{waiting:?}");
    assert!(session.snapshot().is_none());

    session
        .ingest(vec![
            Event::tool_result("call_0", "src/parse.rs:12: fn parse").with_id("r0"),
            Event::assistant("The parser is in src/parse.rs.").with_id("a0"),
        ])
        .unwrap();
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied, "{report:?}");
    assert_eq!(report.events_compacted, 4);
    assert!(session.events().is_empty());
    let view = session.view_events();
    assert_eq!(
        view[0].content, "Where is the parser?",
        "the question stays"
    );
    assert!(summary_of(&session).unwrap().contains("src/parse.rs"));
    assert_eq!(session.full_history().unwrap().len(), 4);
}

#[test]
fn an_automatic_compaction_of_a_short_history_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, small_talk(3));
    let options = CompactOptions {
        reason: CompactReason::Auto,
        ..CompactOptions::default()
    };
    let report = session.compact(&options).unwrap();
    assert!(
        !report.applied && report.events_compacted == 0,
        "{report:?}"
    );
    assert!(session.snapshot().is_none());
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_with(&dir, small_talk(8));
    let report = session.compact(&options).unwrap();
    assert!(!report.applied, "frees nothing, so not applied: {report:?}");
    assert!(session.snapshot().is_none());
}

#[test]
fn a_crash_before_the_log_rewrite_of_a_compaction_that_kept_no_tail_is_finished_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let original = small_talk(1);
    let mut session = session_with(&dir, original.clone());
    let log = session.paths().raw_traces();
    let before_compaction = std::fs::read(&log).unwrap();
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    assert!(session.events().is_empty());
    drop(session);
    // The crash: archive and snapshot written, the old log still in place.
    std::fs::write(&log, &before_compaction).unwrap();

    let writer = store(&dir)
        .open_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert!(writer.events().is_empty(), "{:?}", ids(writer.events()));
    assert_eq!(ids(&writer.full_history().unwrap()), ids(&original));
    drop(writer);
    // What comes after is kept on the next open.
    let mut writer = store(&dir)
        .open_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    writer
        .ingest(vec![Event::user("Hello again?").with_id("u9")])
        .unwrap();
    drop(writer);
    let reader = store(&dir)
        .read_session(&agent(), &SessionId::new("s").unwrap())
        .unwrap();
    assert_eq!(ids(reader.events()), ["u9"]);
}

/// A fork shows the model what the original showed: one that keeps the
/// whole archive keeps its summary; one cut inside the archive keeps the
/// events through that turn, back in its log, unsummarized. Neither writes
/// the original's long-term memory again.
#[test]
fn a_fork_of_a_compacted_session_keeps_what_the_model_saw() {
    let dir = tempfile::tempdir().unwrap();
    let original = coding_turns(12);
    let mut session = session_with(&dir, original.clone());
    let report = session.compact(&CompactOptions::default()).unwrap();
    assert!(report.applied);
    let view = session.transcript_in(Default::default()).totals();
    let episodes = dir.path().join("agents/default/episodic.jsonl");
    let remembered = std::fs::read_to_string(&episodes).unwrap();
    let store = store(&dir);

    let whole = SessionId::new("whole").unwrap();
    let meta = store
        .fork_session(&agent(), session.id(), None, Some(whole.clone()))
        .unwrap();
    assert_eq!(meta.events, original.len());
    assert_eq!(meta.archived_events, report.events_compacted);
    let mut fork = store.open_session(&agent(), &whole).unwrap();
    assert_eq!(fork.transcript_in(Default::default()).totals(), view);
    assert_eq!(ids(&fork.full_history().unwrap()), ids(&original));

    let early = SessionId::new("early").unwrap();
    let meta = store
        .fork_session(&agent(), session.id(), Some("2"), Some(early.clone()))
        .unwrap();
    assert_eq!(meta.forked_at_turn.as_deref(), Some("turn_0002"));
    let fork = store.open_session(&agent(), &early).unwrap();
    assert!(fork.snapshot().is_none());
    assert_eq!(
        ids(fork.events()),
        ids(&original[..9]),
        "the system prompt, two turns"
    );
    drop(fork);
    assert_eq!(std::fs::read_to_string(&episodes).unwrap(), remembered);
}

/// `turns` turns whose user messages alone take about 1,500 tokens each,
/// each with a 2,000-token tool result.
fn long_asking_turns(turns: usize) -> Vec<Event> {
    let mut events = vec![Event::system("You are a coding agent.").with_id("sys")];
    for t in 0..turns {
        let call = format!("call_{t}");
        events.extend([
            Event::user(format!("Turn {t}: look at parser case {t}. ").repeat(150))
                .with_id(format!("u{t}")),
            Event::tool_call(&call, "read_file", json!({"path": format!("src/p{t}.rs")}))
                .with_id(format!("c{t}")),
            Event::tool_result(&call, format!("fn case_{t}() {{}}\n").repeat(400))
                .with_id(format!("r{t}")),
            Event::assistant(format!("Case {t} looks fine.")).with_id(format!("a{t}")),
        ]);
    }
    events
}

#[test]
fn turns_no_call_could_hold_leave_the_view_before_any_tier_looks_at_them() {
    let dir = tempfile::tempdir().unwrap();
    let turns = 30;
    let mut session = session_with(&dir, long_asking_turns(turns));
    let mut request = timed_request(CompactionTiming::Inline);
    request.context.strategy = Some(Strategy::Placeholder);
    let stats = session.prepare(&request).unwrap().stats;
    let Some(Action::TurnsOutOfReach { turns: out, .. }) = stats.actions.first() else {
        panic!("the unreachable turns leave first: {:?}", stats.actions);
    };
    // 18,000 tokens of input budget hold the user messages of about twelve turns.
    assert!((14..turns - 8).contains(out), "{out} of {turns}");
    // Only the reachable turns' results were left for the placeholders.
    let replaced: usize = stats
        .actions
        .iter()
        .map(|a| match a {
            Action::Microcompacted { results, .. } => *results,
            _ => 0,
        })
        .sum();
    assert!(replaced <= turns - out, "{replaced} of {}", turns - out);
    assert!(stats.context_tokens <= stats.input_budget, "{stats:?}");
    // The last resort fitted the rest: the oldest turn sent is newer than any left out.
    let payload = session.prepare(&request).unwrap().payload.to_string();
    assert!(!payload.contains(&format!("Turn {}: look", out - 1)));
    assert!(payload.contains(&format!("Turn {}: look", turns - 1)));
}
