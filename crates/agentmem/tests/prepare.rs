//! `Session::prepare`: exact counts, incremental upkeep, usage anchoring,
//! calibration and layered budgets, on real files.

use std::sync::LazyLock;

use agentmem::config::CONFIG_FILE;
use agentmem::pipeline::transcript::Transcript;
use agentmem::render::remove_cache_marks;
use agentmem::tokens::registry::ModelSource;
use agentmem::{
    AgentId, BudgetSettings, Config, Durability, Encoding, Event, PrepareRequest, PromptCache,
    SessionId, Store, Target, Usage,
};
use serde_json::{json, Value};

static O200K: LazyLock<tiktoken_rs::CoreBPE> = LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());

fn tiktoken(text: &str) -> u64 {
    O200K.encode_ordinary(text).len() as u64
}

fn conversation() -> Vec<Event> {
    vec![
        Event::system("You are terse."),
        Event::user("What is the capital of France? Answer in one word."),
        Event::assistant("Paris."),
        Event::user("And of Japan — in kanji, please: 日本の首都は？"),
    ]
}

fn session_with(events: Vec<Event>) -> (tempfile::TempDir, agentmem::Session) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.ingest(events).unwrap();
    (dir, session)
}

/// OpenAI's published rule, applied to the payload itself with tiktoken:
/// 3 tokens a message, plus role and content, plus 3 to prime the reply.
fn cookbook_count(payload: &Value) -> u64 {
    let messages = payload["messages"].as_array().unwrap();
    let per_message: u64 = messages
        .iter()
        .map(|m| {
            3 + tiktoken(m["role"].as_str().unwrap()) + tiktoken(m["content"].as_str().unwrap())
        })
        .sum();
    per_message + 3
}

#[test]
fn the_count_is_openais_published_rule_applied_to_the_payload() {
    let (_dir, mut session) = session_with(conversation());
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.system = Some("Answer geography questions.".into());
    let prepared = session.prepare(&request).unwrap();
    assert_eq!(prepared.payload["messages"].as_array().unwrap().len(), 5);
    assert_eq!(
        prepared.stats.counted_tokens,
        cookbook_count(&prepared.payload.to_value())
    );
    assert_eq!(
        prepared.stats.sections.total(),
        prepared.stats.counted_tokens
    );
    assert_eq!(prepared.stats.model_source, ModelSource::Override);
    assert_eq!(prepared.stats.budget.context_window, 128_000);
}

/// A session of [`conversation`], prepared for gpt-4.1, that `events` then joined.
fn prepared_then_joined(
    events: Vec<Event>,
) -> (tempfile::TempDir, agentmem::Session, PrepareRequest) {
    let (dir, mut session) = session_with(conversation());
    let request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    session.prepare(&request).unwrap();
    session.ingest(events).unwrap();
    (dir, session, request)
}

#[test]
fn upkeep_as_events_arrive_equals_a_fresh_count() {
    let (_dir, mut session, request) = prepared_then_joined(vec![
        Event::assistant("東京."),
        Event::tool_call("c1", "lookup", json!({"q": "population of Tokyo"})),
        Event::tool_result("c1", "37.4 million (metropolitan area, 2023)"),
        Event::assistant("About 37 million people."),
    ]);
    let far_below_the_trigger = session.prepare(&request).unwrap().stats;
    assert!(far_below_the_trigger.estimated_tokens > 0);
    let fresh = Transcript::from_events(Encoding::O200kBase, session.events());
    assert_eq!(
        session.transcript_in(Encoding::O200kBase).totals(),
        fresh.totals()
    );
    let kept_up = session.prepare(&request).unwrap().stats;
    assert_eq!(kept_up.estimated_tokens, 0);
    assert_eq!(
        kept_up.sections.tool_outputs,
        tiktoken("37.4 million (metropolitan area, 2023)")
    );
    assert_eq!(kept_up.messages, fresh.messages().len());
    assert_eq!(far_below_the_trigger.messages, kept_up.messages);
}

#[test]
fn usage_after_an_estimated_prompt_is_paired_with_its_count() {
    let (_dir, mut session, request) = prepared_then_joined(vec![
        Event::assistant("東京."),
        Event::user("And of Italy?"),
    ]);
    let sent = session.prepare(&request).unwrap();
    assert!(sent.stats.estimated_tokens > 0);
    let exact = cookbook_count(&sent.payload.to_value());
    assert_ne!(sent.stats.counted_tokens, exact, "an estimate");
    let mut reply = Event::assistant("Rome.");
    reply.usage = Some(Usage {
        prompt_tokens: exact + 7,
        completion_tokens: 2,
        ..Usage::default()
    });
    session.ingest(vec![reply]).unwrap();
    let usage = session.events().last().unwrap().usage.clone().unwrap();
    assert_eq!(usage.estimated_prompt_tokens, Some(exact));
    let next = session.prepare(&request).unwrap().stats;
    assert_eq!(next.anchored_tokens, Some(next.counted_tokens + 7));
}

/// Events appended far below the trigger are estimated, not counted; a
/// prepare whose checks the bounds cannot settle counts them first, so a
/// session whose text is no denser than what it counted before sends what
/// one counting every event sends, call after call.
#[test]
fn counting_later_sends_what_counting_every_event_sends() {
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/long-coding-session.jsonl"
    ));
    let text = std::fs::read_to_string(path).unwrap();
    let events = agentmem_import::parse(agentmem_import::Format::Events, path, &text)
        .unwrap()
        .events;
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(40_000);
    let (_lazy_dir, mut lazy) = session_with(Vec::new());
    let (_eager_dir, mut eager) = session_with(Vec::new());
    let (mut estimated_calls, mut compactions) = (0, 0);
    for event in events {
        let is_call = event.trace_type == agentmem::TraceType::Assistant;
        lazy.ingest(vec![event.clone()]).unwrap();
        eager.ingest(vec![event]).unwrap();
        if !is_call {
            continue;
        }
        let sent = lazy.prepare(&request).unwrap();
        eager.transcript_in(Encoding::O200kBase);
        let counted = eager.prepare(&request).unwrap();
        assert_eq!(sent.payload.to_value(), counted.payload.to_value());
        assert_eq!(sent.stats.actions, counted.stats.actions);
        assert_eq!(counted.stats.estimated_tokens, 0);
        assert!(sent.stats.context_tokens <= sent.stats.input_budget);
        if sent.stats.estimated_tokens == 0 {
            assert_eq!(sent.stats.counted_tokens, counted.stats.counted_tokens);
        } else {
            estimated_calls += 1;
        }
        compactions += sent
            .stats
            .actions
            .iter()
            .filter(|a| matches!(a, agentmem::pipeline::tiers::Action::Compacted { .. }))
            .count();
    }
    assert!(estimated_calls > 0, "some calls were far below the trigger");
    assert!(compactions > 0, "and some crossed it");
}

#[test]
fn reported_usage_anchors_the_size_and_is_never_overwritten_by_a_count() {
    let (_dir, mut session) = session_with(conversation());
    let request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    let before_reply = session.prepare(&request).unwrap().stats;
    let mut reply = Event::assistant("東京.");
    reply.usage = Some(Usage {
        prompt_tokens: 5_000,
        completion_tokens: 3,
        ..Usage::default()
    });
    session.ingest(vec![reply, Event::user("Thanks!")]).unwrap();
    let stats = session.prepare(&request).unwrap().stats;
    let transcript_before = before_reply.counted_tokens - before_reply.sections.reply;
    let appended = stats.counted_tokens - stats.sections.reply - transcript_before;
    assert_eq!(stats.anchored_tokens, Some(5_000 + appended));
    assert_eq!(
        stats.context_tokens,
        5_000 + appended,
        "the measured figure decides"
    );
    assert!(stats.counted_tokens < 5_000);
}

#[test]
fn calibration_learns_reported_over_counted_and_is_persisted() {
    let (dir, mut session) = session_with(conversation());
    let request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    let counted = session.prepare(&request).unwrap().stats.counted_tokens;
    let mut reply = Event::assistant("東京.");
    reply.usage = Some(Usage {
        prompt_tokens: counted * 2,
        completion_tokens: 4,
        ..Usage::default()
    });
    session.ingest(vec![reply]).unwrap();
    let factor = session.calibration().get("claude-sonnet-4-5").unwrap();
    assert_eq!((factor.factor, factor.samples), (2.0, 1));
    let id = session.id().clone();
    drop(session);

    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let reopened = store.read_session(&AgentId::default(), &id).unwrap();
    let usage = reopened.events().last().unwrap().usage.clone().unwrap();
    assert_eq!(usage.estimated_prompt_tokens, Some(counted));
    assert_eq!(usage.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        reopened
            .calibration()
            .get("claude-sonnet-4-5")
            .unwrap()
            .factor,
        2.0
    );
}

#[test]
fn usage_of_another_model_is_not_an_anchor() {
    let mut reply = Event::assistant("ok");
    reply.usage = Some(Usage {
        prompt_tokens: 90_000,
        model: Some("claude-sonnet-4-5".into()),
        ..Usage::default()
    });
    let (_dir, mut session) = session_with(vec![Event::user("hi"), reply]);
    let other = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap()
        .stats;
    assert_eq!(other.anchored_tokens, None);
    let same = session
        .prepare(&PrepareRequest::new(
            "anthropic/claude-sonnet-4-5",
            Target::Anthropic,
        ))
        .unwrap()
        .stats;
    assert!(same.anchored_tokens.unwrap() >= 90_000);
}

/// A real Claude Code session: its usage names `claude-sonnet-4-5-20250929`,
/// the dated name of the model an agent calls `claude-sonnet-4-5`.
fn claude_code_session() -> (tempfile::TempDir, agentmem::Session) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/trajectories/claude-code/session-3fe1b6bc.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let imported =
        agentmem_import::parse(agentmem_import::Format::ClaudeCode, &path, &text).unwrap();
    session_with(imported.events)
}

#[test]
fn usage_anchors_every_spelling_of_the_model_that_reported_it() {
    let (_dir, mut session) = claude_code_session();
    let reported = |session: &mut agentmem::Session, model: &str| {
        session
            .prepare(&PrepareRequest::new(model, Target::Anthropic))
            .unwrap()
            .stats
    };
    let dated = reported(&mut session, "claude-sonnet-4-5-20250929");
    assert!(dated.anchored_tokens.is_some(), "{dated:?}");
    for spelling in [
        "claude-sonnet-4-5",
        "anthropic/claude-sonnet-4.5",
        "claude-sonnet-4-5-latest",
    ] {
        let stats = reported(&mut session, spelling);
        assert_eq!(stats.anchored_tokens, dated.anchored_tokens, "{spelling}");
        assert_eq!(stats.context_tokens, dated.context_tokens, "{spelling}");
    }
    let other = reported(&mut session, "claude-opus-4-1");
    assert_eq!(other.anchored_tokens, None, "another model's usage");
}

/// An answer to the prepare of `request` whose usage the provider reported
/// under `model`, `factor` times agentmem's count.
fn answer_reported(
    session: &mut agentmem::Session,
    request: &PrepareRequest,
    model: &str,
    factor: f64,
) {
    let counted = session.prepare(request).unwrap().stats.counted_tokens;
    let mut reply = Event::assistant("Noted.");
    reply.usage = Some(Usage {
        prompt_tokens: (counted as f64 * factor).round() as u64,
        completion_tokens: 2,
        model: Some(model.into()),
        ..Usage::default()
    });
    session
        .ingest(vec![reply, Event::user("And then?")])
        .unwrap();
}

#[test]
fn calibration_files_reports_under_the_model_they_resolve_to_and_ignores_implausible_ones() {
    let (_dir, mut session) = session_with(conversation());
    let request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    answer_reported(&mut session, &request, "claude-sonnet-4-5-20250929", 1.2);
    // Ten times the count measured something else (a prompt the agent
    // wrapped in its own), and a tenth a prompt mostly left out of the
    // figure: neither says how the two tokenizers compare.
    answer_reported(&mut session, &request, "claude-sonnet-4-5-20250929", 10.0);
    answer_reported(&mut session, &request, "claude-sonnet-4-5", 0.1);
    let learned = session.calibration_for("claude-sonnet-4-5").unwrap();
    assert_eq!(learned.samples, 1, "{learned:?}");
    assert!((learned.factor - 1.2).abs() < 0.01, "{learned:?}");
    assert_eq!(
        session.calibration_for("claude-sonnet-4-5-20250929"),
        Some(learned)
    );
    let stats = session.prepare(&request).unwrap().stats;
    assert_eq!(stats.calibration, Some(learned));
    assert_eq!(session.calibration().all().count(), 1);
}

#[test]
fn the_calibration_table_stays_bounded_whatever_models_report() {
    let (_dir, mut session) = session_with(conversation());
    for n in 0..40 {
        let model = format!("acme-model-{n}");
        let request = PrepareRequest::new(&model, Target::OpenAiChat);
        answer_reported(&mut session, &request, &model, 1.5);
    }
    let models: Vec<String> = session
        .calibration()
        .all()
        .map(|(model, _)| model.to_owned())
        .collect();
    assert!(models.len() <= 16, "{models:?}");
    assert!(
        models.contains(&"acme-model-39".to_owned()),
        "the latest model reported is kept: {models:?}"
    );
    for (_, calibration) in session.calibration().all() {
        assert!((0.5..=2.0).contains(&calibration.factor));
    }
}

#[test]
fn budgets_layer_request_over_session_over_agent_over_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let agent = AgentId::new("coder").unwrap();
    let session_id = SessionId::new("s1").unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE),
        "[budget]\ntrigger_ratio = 0.5\nsafety_margin = 500\n",
    )
    .unwrap();
    let agent_dir = dir.path().join("agents/coder");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join(CONFIG_FILE),
        "[budget]\nsafety_margin = 1000\n",
    )
    .unwrap();
    let store = Store::with_config(dir.path(), Config::load(dir.path()).unwrap());
    drop(
        store
            .create_session(&agent, Some(session_id.clone()))
            .unwrap(),
    );
    std::fs::write(
        agent_dir.join("sessions/s1").join(CONFIG_FILE),
        "[budget]\ncontext_window = 50000\n",
    )
    .unwrap();

    let mut session = store.open_session(&agent, &session_id).unwrap();
    session.ingest(vec![Event::user("hello")]).unwrap();
    let mut request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    request.budget.max_output_tokens = Some(2_000);
    let stats = session.prepare(&request).unwrap().stats;
    assert_eq!(stats.budget.context_window, 50_000, "session layer");
    assert_eq!(
        stats.budget.safety_margin, 1_000,
        "agent layer over the config file"
    );
    assert_eq!(stats.budget.trigger_ratio, 0.5, "config file layer");
    assert_eq!(stats.budget.max_output_tokens, 2_000, "request layer");
    assert_eq!(stats.input_budget, 50_000 - 2_000 - 1_000);
    assert_eq!(stats.trigger_tokens, 23_500);
}

/// The reserves scale with the window: the safety margin is an eighth of it
/// up to 13,000 tokens and the reply reserve at most half of it, so an 8k or
/// 16k model gets a budget a conversation fits in, while every window from
/// 104,000 tokens keeps the 13,000 margin and the model's whole output.
#[test]
fn small_windows_get_a_useful_input_budget_and_large_ones_keep_the_seed_reserves() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE),
        "[[models]]\nmodel = \"my-local-llama\"\ncontext_window = 16384\nmax_output_tokens = 4096\n",
    )
    .unwrap();
    let store = Store::with_config(dir.path(), Config::load(dir.path()).unwrap());
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.ingest(conversation()).unwrap();
    let cases = [
        ("gpt-4", 8_192, 4_096, 1_024),
        ("gpt-3.5-turbo", 16_385, 4_096, 2_048),
        ("my-local-llama", 16_384, 4_096, 2_048),
        ("gpt-4o", 128_000, 16_384, 13_000),
        ("claude-sonnet-4-5", 200_000, 64_000, 13_000),
        ("o3", 200_000, 100_000, 13_000),
    ];
    for (model, window, reply_reserve, margin) in cases {
        let prepared = session
            .prepare(&PrepareRequest::new(model, Target::OpenAiChat))
            .unwrap();
        let stats = prepared.stats;
        assert_eq!(
            (
                stats.budget.context_window,
                stats.budget.max_output_tokens,
                stats.budget.safety_margin
            ),
            (window, reply_reserve, margin),
            "{model}"
        );
        assert_eq!(
            stats.input_budget,
            window - reply_reserve - margin,
            "{model}"
        );
        assert!(
            stats.input_budget >= window * 3 / 8,
            "{model}: {}",
            stats.input_budget
        );
        assert!(!stats.over_budget && !stats.compaction_due, "{model}");
        assert_eq!(prepared.payload["messages"].as_array().unwrap().len(), 4);
    }
}

#[test]
fn an_unknown_model_gets_the_default_window_and_says_so() {
    let (_dir, mut session) = session_with(conversation());
    let stats = session
        .prepare(&PrepareRequest::new("my-private-model", Target::OpenAiChat))
        .unwrap()
        .stats;
    assert_eq!(stats.model_source, ModelSource::Unknown);
    assert_eq!(stats.budget.context_window, 200_000);
}

#[test]
fn compaction_is_due_past_the_trigger() {
    let long = "word ".repeat(3_500);
    let (_dir, mut session) = session_with(vec![Event::user(long)]);
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.budget.context_window = Some(5_000);
    request.budget.max_output_tokens = Some(1_000);
    request.budget.safety_margin = Some(0);
    let stats = session.prepare(&request).unwrap().stats;
    assert_eq!(stats.trigger_tokens, 3_200);
    assert!(stats.context_tokens > 3_500 && stats.compaction_due && !stats.over_budget);
}

#[test]
fn an_anchor_follows_what_changed_outside_the_view_since_it_was_measured() {
    let (_dir, mut session) = session_with(conversation());
    let mut request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    request.system = Some("Answer geography questions.".into());
    let before_reply = session.prepare(&request).unwrap().stats;
    let mut reply = Event::assistant("東京.");
    reply.usage = Some(Usage {
        prompt_tokens: before_reply.counted_tokens,
        completion_tokens: 3,
        ..Usage::default()
    });
    session.ingest(vec![reply, Event::user("Thanks!")]).unwrap();
    let same = session.prepare(&request).unwrap().stats;
    assert_eq!(same.anchored_tokens, Some(same.counted_tokens));

    // A provider that counts as agentmem does: the anchor stays exact when
    // the system prompt, the tools or the memory block change after it.
    request.system = Some("Answer geography questions. ".repeat(200));
    request.tools = vec![agentmem::ToolSchema {
        name: "lookup".into(),
        description: "Looks a place up.".into(),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    }];
    let grown = session.prepare(&request).unwrap().stats;
    assert!(grown.counted_tokens > same.counted_tokens + 500);
    assert_eq!(grown.anchored_tokens, Some(grown.counted_tokens));
    request.system = None;
    request.tools = Vec::new();
    let shrunk = session.prepare(&request).unwrap().stats;
    assert_eq!(shrunk.anchored_tokens, Some(shrunk.counted_tokens));
}

#[test]
fn a_system_prompt_grown_since_the_last_reported_usage_still_fits_the_budget() {
    let mut events = vec![Event::user("Tell me about rivers.")];
    for i in 0..12 {
        events.push(Event::assistant(format!(
            "River {i}: it rises in the hills, winds through three valleys and reaches the sea."
        )));
        events.push(Event::user(format!("And river {}?", i + 1)));
    }
    let (_dir, mut session) = session_with(events);
    let mut request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    request.budget = BudgetSettings {
        context_window: Some(700),
        max_output_tokens: Some(200),
        safety_margin: Some(0),
        trigger_ratio: Some(0.9),
    };
    let first = session.prepare(&request).unwrap().stats;
    let input_budget = first.input_budget;
    assert!(first.counted_tokens <= input_budget);
    assert!(first.counted_tokens > input_budget / 2, "{first:?}");
    let mut reply = Event::assistant("River 12 is the longest of them.");
    reply.usage = Some(Usage {
        prompt_tokens: first.counted_tokens,
        completion_tokens: 9,
        ..Usage::default()
    });
    session
        .ingest(vec![reply, Event::user("Which was the shortest?")])
        .unwrap();

    request.system = Some("Answer as a geographer would, with care. ".repeat(25));
    let prepared = session.prepare(&request).unwrap();
    let counted = prepared.stats.counted_tokens;
    assert!(
        counted > first.counted_tokens / 2,
        "the system prompt is large"
    );
    assert!(
        counted <= input_budget,
        "{counted} tokens sent, budget {input_budget}"
    );
    assert_eq!(prepared.stats.context_tokens, counted);
}

/// The blocks of every message of an Anthropic body that carry a cache mark,
/// as (message index, block index).
fn cache_marks(payload: &Value) -> Vec<(usize, usize)> {
    let messages = payload["messages"].as_array().unwrap();
    let marked = |(m, message): (usize, &Value)| {
        let blocks = message["content"].as_array().unwrap();
        let at = blocks.iter().enumerate();
        at.filter(|(_, b)| b.get("cache_control").is_some())
            .map(|(b, _)| (m, b))
            .collect::<Vec<_>>()
    };
    messages.iter().enumerate().flat_map(marked).collect()
}

#[test]
fn the_cache_mark_follows_the_end_of_the_conversation_from_call_to_call() {
    let (_dir, mut session) = session_with(vec![Event::user("list the files")]);
    let mut request = PrepareRequest::new("claude-sonnet-4-5", Target::Anthropic);
    request.system = Some("You are a coding agent.".into());
    let first = session.prepare(&request).unwrap().payload;
    assert_eq!(
        first["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(cache_marks(&first.to_value()), [(0, 0)]);

    session
        .ingest(vec![
            Event::tool_call("c1", "ls", json!({})),
            Event::tool_result("c1", "a.rs\nb.rs"),
        ])
        .unwrap();
    let second = session.prepare(&request).unwrap().payload;
    // The first call's last message is the same render, now unmarked; the
    // tool result that ends this call carries the mark.
    assert_eq!(cache_marks(&second.to_value()), [(2, 0)]);
    assert_eq!(
        second["messages"][0]["content"][0],
        json!({"type": "text", "text": "list the files"})
    );
    let sent: Value = serde_json::from_str(&second.to_string()).unwrap();
    assert_eq!(sent, second.to_value(), "the body sent is the body read");

    request.cache = PromptCache::Off;
    let unmarked = session.prepare(&request).unwrap().payload;
    assert!(!unmarked.to_string().contains("cache_control"));
    assert_eq!(unmarked["system"], "You are a coding agent.");
}

/// A body's message list, and everything else of it, without cache marks.
fn unmarked(target: Target, mut body: Value) -> (Vec<Value>, Value) {
    remove_cache_marks(&mut body);
    let list = body.as_object_mut().unwrap().remove(target.list_key());
    (list.unwrap().as_array().unwrap().clone(), body)
}

#[test]
fn a_changed_working_memory_leaves_the_prefix_sent_before_it_as_it_was() {
    use agentmem::StatePatch;
    for target in Target::ALL {
        let (_dir, mut session) = session_with(vec![Event::user("review the auth module")]);
        let mut request = PrepareRequest::new("a-model", target);
        request.system = Some("You are a coding agent.".into());
        request.live_context = Some("Today is 2026-11-24.".into());
        let state = |step: &str| StatePatch::from_json(json!({"step": step})).unwrap();
        session.update_working_memory(state("read"), None).unwrap();
        let first = session.prepare(&request).unwrap().payload.to_value();

        session
            .ingest(vec![
                Event::tool_call("c1", "read_file", json!({"path": "src/auth.rs"})),
                Event::tool_result("c1", "fn login() {}"),
            ])
            .unwrap();
        session.update_working_memory(state("fix"), None).unwrap();
        let second = session.prepare(&request).unwrap().payload.to_value();

        let (first_list, first_rest) = unmarked(target, first);
        let (second_list, second_rest) = unmarked(target, second);
        let sent_before = &first_list[..first_list.len() - 1];
        assert_eq!(
            &second_list[..sent_before.len()],
            sent_before,
            "{target}: what was sent before the last entry is sent again as it was"
        );
        let (closing, rest) = (
            second_list.last().unwrap().to_string(),
            second_rest.to_string(),
        );
        if target == Target::Gemini {
            // Function responses stand alone in their content: the live
            // context goes to the system instruction instead.
            assert!(rest.contains("Working memory (version 2)"), "{rest}");
            assert!(!closing.contains("Working memory"), "{closing}");
            continue;
        }
        assert_eq!(first_rest, second_rest, "{target}: the system prompt stays");
        assert!(
            closing.contains("Working memory (version 2)") && closing.contains("Today is"),
            "{target}: the live context closes the list: {closing}"
        );
    }
}
