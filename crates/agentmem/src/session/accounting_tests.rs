use super::*;
use crate::base::event::Usage;
use crate::pipeline::guard::GuardPolicy;
use crate::render::Target;

fn accounting() -> TokenAccounting {
    TokenAccounting::new(Arc::new(ModelRegistry::builtin()))
}

/// What a prepare for gpt-4.1 counted with `events` in the active log.
fn prepared_at(events: usize) -> LastPrepare {
    LastPrepare {
        model: "gpt-4.1".into(),
        counted_tokens: 1_000,
        view_tokens: 800,
        events,
        offset_tokens: 0,
        trigger_tokens: 10_000,
        estimated: false,
    }
}

fn answer_reporting(usage: Usage) -> Event {
    let mut event = Event::assistant("done");
    event.usage = Some(usage);
    event
}

fn reported(prompt_tokens: u64) -> Usage {
    Usage {
        prompt_tokens,
        completion_tokens: 10,
        ..Usage::default()
    }
}

fn transcript_of(events: &[Event]) -> Transcript {
    let mut transcript = Transcript::new(Encoding::default(), GuardPolicy::default());
    transcript.extend(events);
    transcript
}

#[test]
fn a_reported_usage_is_paired_with_the_prepare_it_measured_once() {
    let mut accounting = accounting();
    accounting.record_prepare(prepared_at(3));
    let mut fresh = vec![answer_reporting(reported(1_100))];
    accounting.pair_usage_with_last_prepare(&mut fresh, 3, None);
    let usage = fresh[0].usage.as_ref().unwrap();
    assert_eq!(usage.estimated_prompt_tokens, Some(1_000));
    assert_eq!(usage.estimated_view_tokens, Some(800));
    assert_eq!(usage.model.as_deref(), Some("gpt-4.1"));

    let mut again = vec![answer_reporting(reported(1_200))];
    accounting.pair_usage_with_last_prepare(&mut again, 3, None);
    assert_eq!(
        again[0].usage.as_ref().unwrap().estimated_prompt_tokens,
        None
    );
}

#[test]
fn a_reported_usage_keeps_the_model_and_count_it_names() {
    let mut accounting = accounting();
    accounting.record_prepare(prepared_at(0));
    let usage = Usage {
        model: Some("gpt-4o".into()),
        estimated_prompt_tokens: Some(42),
        ..reported(50)
    };
    let mut fresh = vec![answer_reporting(usage.clone())];
    accounting.pair_usage_with_last_prepare(&mut fresh, 0, None);
    assert_eq!(fresh[0].usage.as_ref(), Some(&usage));
}

#[test]
fn a_usage_after_other_events_is_of_a_call_agentmem_did_not_prepare() {
    let mut accounting = accounting();
    accounting.note_overhead(120);
    accounting.record_prepare(prepared_at(3));
    let mut fresh = vec![answer_reporting(reported(1_100))];
    accounting.pair_usage_with_last_prepare(&mut fresh, 5, None);
    assert_eq!(
        fresh[0].usage.as_ref().unwrap().estimated_prompt_tokens,
        None
    );
    // Such a call is taken to have sent what the latest prepare sent beside
    // the messages: the offset measured from it moves from there.
    let model = accounting.model_info("gpt-4.1");
    let anchor = UsageAnchor {
        reported_prompt_tokens: 1_500,
        transcript_tokens_before: 1_000,
        counted_overhead: None,
        model: None,
    };
    assert_eq!(
        accounting.measured_offset(&model, 150, Some(&anchor)),
        Some(500 + 150 - 120)
    );
}

#[test]
fn estimates_in_the_prepare_are_corrected_by_counting_the_view_before_pairing() {
    let mut accounting = accounting();
    let mut transcript = Transcript::new(Encoding::default(), GuardPolicy::default());
    let said = [
        Event::user("Summarize the failing tests in crates/agentmem"),
        Event::assistant("Three fail: ".repeat(40)),
    ];
    transcript.extend_counting_later(&said);
    assert!(transcript.estimated_tokens() > 0);
    let before = transcript.totals().total;
    accounting.record_prepare(LastPrepare {
        estimated: true,
        ..prepared_at(2)
    });
    let mut fresh = vec![answer_reporting(reported(1_100))];
    accounting.pair_usage_with_last_prepare(&mut fresh, 2, Some(&mut transcript));
    assert_eq!(transcript.estimated_tokens(), 0);
    let after = transcript.totals().total;
    let usage = fresh[0].usage.as_ref().unwrap();
    assert_eq!(usage.estimated_prompt_tokens, Some(1_000 - before + after));
    assert_eq!(usage.estimated_view_tokens, Some(800 - before + after));
}

#[test]
fn calibration_learns_within_its_band_under_the_models_family() {
    let mut accounting = accounting();
    let paired = |prompt_tokens: u64, model: &str| {
        Arc::new(answer_reporting(Usage {
            model: Some(model.into()),
            estimated_prompt_tokens: Some(1_000),
            ..reported(prompt_tokens)
        }))
    };
    accounting.observe(&[paired(1_100, "gpt-4.1-2025-04-14")]);
    // Out of the plausible band: a report of another prompt, not a factor.
    accounting.observe(&[paired(5_000, "gpt-4.1")]);
    // No count of ours to compare with.
    let unpaired = Arc::new(answer_reporting(Usage {
        model: Some("gpt-4.1".into()),
        ..reported(900)
    }));
    accounting.observe(&[unpaired]);
    let calibration = accounting.calibration_for("gpt-4.1").unwrap();
    assert_eq!(calibration.samples, 1);
    assert!((calibration.factor - 1.1).abs() < 1e-9);
    assert_eq!(accounting.calibration_for("gpt-4.1-mini"), None);
}

#[test]
fn a_models_answer_ends_a_run_of_overflow_recoveries() {
    let mut accounting = accounting();
    assert_eq!(accounting.next_overflow_attempt(), 1);
    accounting.observe(&[Arc::new(Event::user("try again"))]);
    assert_eq!(accounting.next_overflow_attempt(), 2);
    accounting.observe(&[Arc::new(Event::assistant("done"))]);
    assert_eq!(accounting.next_overflow_attempt(), 1);
}

#[test]
fn the_view_passes_the_trigger_of_the_last_prepare_less_its_offset() {
    let mut accounting = accounting();
    let mut transcript = transcript_of(&[Event::user("hello there"), Event::assistant("hi")]);
    let total = transcript.totals().total;
    assert!(!accounting.passes_last_trigger(Some(&mut transcript)));
    accounting.record_prepare(LastPrepare {
        trigger_tokens: total + 100,
        ..prepared_at(2)
    });
    assert!(!accounting.passes_last_trigger(Some(&mut transcript)));
    assert!(!accounting.passes_last_trigger(None));
    accounting.record_prepare(LastPrepare {
        trigger_tokens: total + 100,
        offset_tokens: 100,
        ..prepared_at(2)
    });
    assert!(accounting.passes_last_trigger(Some(&mut transcript)));
}

#[test]
fn the_request_overhead_is_counted_again_only_when_the_request_changed() {
    let mut accounting = accounting();
    let tokenizer = Encoding::default().tokenizer();
    let mut request = PrepareRequest::new("gpt-4.1", Target::OpenAiChat);
    request.system = Some("Be brief.".into());
    let counted = accounting.request_overhead(&request, tokenizer);
    assert!(counted.system > 0);
    let mark_cached = |accounting: &mut TokenAccounting| {
        accounting.overhead_cache.as_mut().unwrap().sections.system = 9_999;
    };
    mark_cached(&mut accounting);
    assert_eq!(
        accounting.request_overhead(&request, tokenizer).system,
        9_999
    );
    request.live_context = Some("The build is green.".into());
    let recounted = accounting.request_overhead(&request, tokenizer);
    assert!(recounted.system > counted.system && recounted.system != 9_999);
    mark_cached(&mut accounting);
    let other_encoding = Encoding::Cl100kBase.tokenizer();
    assert_ne!(
        accounting.request_overhead(&request, other_encoding).system,
        9_999
    );
}

#[test]
fn the_measured_offset_moves_with_the_overhead_for_the_model_that_reported_it() {
    let mut accounting = accounting();
    let anchor = UsageAnchor {
        reported_prompt_tokens: 1_500,
        transcript_tokens_before: 1_000,
        counted_overhead: Some(300),
        model: Some("gpt-4.1-2025-04-14".into()),
    };
    let gpt = accounting.model_info("gpt-4.1");
    assert_eq!(
        accounting.measured_offset(&gpt, 350, Some(&anchor)),
        Some(550)
    );
    let claude = accounting.model_info("claude-sonnet-4-5");
    assert_eq!(
        accounting.measured_offset(&claude, 350, Some(&anchor)),
        None
    );
    assert_eq!(accounting.measured_offset(&gpt, 350, None), None);
    let unnamed = UsageAnchor {
        counted_overhead: None,
        model: None,
        ..anchor
    };
    assert_eq!(
        accounting.measured_offset(&claude, 350, Some(&unnamed)),
        Some(500)
    );
}

#[test]
fn the_registry_entries_of_the_last_few_models_are_remembered() {
    let mut accounting = accounting();
    for name in ["gpt-4.1", "gpt-4o", "o3", "claude-sonnet-4-5", "gpt-5"] {
        let looked_up = accounting.model_info(name);
        assert_eq!(accounting.model_info(name), looked_up);
    }
    let names: Vec<&str> = accounting
        .recent_models
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(names, ["gpt-4o", "o3", "claude-sonnet-4-5", "gpt-5"]);
    assert_eq!(
        accounting.last_count_for("gpt-4.1"),
        None,
        "nothing was prepared"
    );
    accounting.record_prepare(prepared_at(0));
    assert_eq!(accounting.last_count_for("gpt-4.1"), Some(1_000));
    assert_eq!(accounting.last_count_for("gpt-4o"), None);
}
