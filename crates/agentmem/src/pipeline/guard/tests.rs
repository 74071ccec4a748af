use std::fs;
use std::path::Path;

use super::*;
use crate::base::error::Error;
use crate::base::error::IdKind;
use crate::files::evicted::read_evicted;
use crate::render::ToolSchema;
use crate::tokens::tokenizer::Cut;
use crate::tokens::Encoding;

fn o200k() -> Tokenizer {
    Encoding::O200kBase.tokenizer()
}

/// A build log with multi-byte text: 74 bytes and 25 tokens (o200k) a line
/// for the first 1,000 lines.
fn log(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("[{i:06}] compiling 日本語 crate-{i} 🦀 ok: 3 warnings, émigré naïve\n"))
        .collect()
}

fn no_evict() -> GuardPolicy {
    GuardPolicy {
        evict_over_tokens: None,
        ..GuardPolicy::default()
    }
}

/// Splits a truncated result into (lines, head, removed, estimated, tail).
fn parse(result: &str, unit: &str) -> (usize, String, u64, bool, String) {
    let rest = result.strip_prefix("Total output lines: ").expect("header");
    let (lines, rest) = rest.split_once("\n\n").expect("blank line after header");
    let (head, rest) = rest.split_once("\n…").expect("marker start");
    let (count, tail) = rest
        .split_once(&format!(" {unit} truncated…\n"))
        .expect("marker end");
    let estimated = count.starts_with('~');
    let removed = count.trim_start_matches('~').parse().expect("a number");
    (
        lines.parse().unwrap(),
        head.to_owned(),
        removed,
        estimated,
        tail.to_owned(),
    )
}

fn guard(
    call_id: &str,
    content: &str,
    policy: &GuardPolicy,
    tokenizer: Tokenizer,
    dir: &Path,
) -> (Guarded, usize) {
    let mut counter = Counter::new(tokenizer);
    let guarded = guard_counted(&mut counter, call_id, content, policy, dir).unwrap();
    (guarded, counter.bytes_counted)
}

#[test]
fn defaults_are_as_documented() {
    assert_eq!(
        Truncation::default().with_buffer(),
        Truncation::Tokens(6_000)
    );
    let policy = GuardPolicy::default();
    assert_eq!(policy.evict_over_tokens, Some(20_000));
    let json = serde_json::to_string(&policy).unwrap();
    assert_eq!(
        json,
        r#"{"truncation":{"policy":"tokens","limit":5000},"evict_over_tokens":20000}"#
    );
    assert_eq!(serde_json::from_str::<GuardPolicy>(&json).unwrap(), policy);
    let toml: GuardPolicy = toml::from_str("truncation = { policy = \"none\" }").unwrap();
    assert_eq!(toml.truncation, Truncation::None);
}

#[test]
fn under_the_cap_is_unchanged_and_short_outputs_are_never_counted() {
    let dir = tempfile::tempdir().unwrap();
    let policy = GuardPolicy::default();
    // 6,000 bytes cannot hold more than 6,000 tokens: no count at all.
    let text = "é".repeat(3_000);
    let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
    assert_eq!(guarded, Guarded::Unchanged);
    assert_eq!(counted, 0);
    // Over 6,000 bytes but under 6,000 tokens: counted, and unchanged.
    let text = log(150);
    let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
    assert_eq!(guarded, Guarded::Unchanged);
    assert_eq!(counted, text.len());
    assert!(text.len() > 6_000 && o200k().count(&text) < 6_000);
    assert_eq!(truncate_middle_tokens(&text, 6_000, o200k()), None);
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_100kb_log_is_cut_to_the_cap_keeping_head_and_tail_on_line_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(1_400);
    assert!(text.len() >= 100_000);
    for tokenizer in [
        o200k(),
        Encoding::Cl100kBase.tokenizer(),
        Encoding::Approximate.tokenizer(),
    ] {
        let (guarded, _) = guard("c1", &text, &no_evict(), tokenizer, dir.path());
        let Guarded::Truncated {
            content,
            original_tokens,
            estimated,
        } = guarded
        else {
            panic!("not truncated: {guarded:?}");
        };
        assert!(tokenizer.count(&content) <= 6_000, "{tokenizer:?}");
        assert!(tokenizer.count(&content) > 5_000, "the budget is used");
        let (lines, head, removed, est, tail) = parse(&content, "tokens");
        assert_eq!(lines, 1_400);
        assert_eq!(est, estimated);
        // Head and tail come from the original, cut at line boundaries.
        assert!(text.starts_with(&head) && text.ends_with(&tail));
        assert_eq!(&text[head.len()..head.len() + 1], "\n");
        assert!(text[..text.len() - tail.len()].ends_with('\n'));
        assert!(head.starts_with("[000000] compiling 日本語"));
        assert!(tail
            .ends_with("[001399] compiling 日本語 crate-1399 🦀 ok: 3 warnings, émigré naïve\n"));
        // The size: exact or a close estimate, and consistent with the marker.
        let exact = tokenizer.count(&text) as u64;
        let kept = (tokenizer.count(&head) + tokenizer.count(&tail)) as u64;
        assert_eq!(removed, original_tokens - kept);
        if estimated {
            let error = original_tokens.abs_diff(exact) as f64 / exact as f64;
            assert!(error < 0.05, "estimate {original_tokens} vs {exact}");
        } else {
            assert_eq!(original_tokens, exact);
        }
    }
}

#[test]
fn sizes_under_the_exact_limit_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(400); // ~12,000 tokens
    let exact = o200k().count(&text) as u64;
    assert!(exact > 6_000 && exact < EXACT_COUNT_LIMIT_TOKENS);
    let (guarded, _) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
    let Guarded::Truncated {
        content,
        original_tokens,
        estimated,
    } = guarded
    else {
        panic!("not truncated: {guarded:?}");
    };
    assert_eq!((original_tokens, estimated), (exact, false));
    let (_, head, removed, est, tail) = parse(&content, "tokens");
    assert!(!est && !content.contains("…~"));
    assert_eq!(
        removed,
        exact - (o200k().count(&head) + o200k().count(&tail)) as u64
    );
}

#[test]
fn multibyte_text_without_newlines_is_cut_on_char_boundaries() {
    let text = "日本語🦀é".repeat(20_000);
    for tokenizer in [o200k(), Encoding::Approximate.tokenizer()] {
        let cut = truncate_middle_tokens(&text, 1_000, tokenizer).unwrap();
        assert!(tokenizer.count(&cut) <= 1_000);
        let (lines, head, _, _, tail) = parse(&cut, "tokens");
        assert_eq!(lines, 1);
        assert!(text.starts_with(&head) && text.ends_with(&tail));
        assert!(head.len() > 500 && tail.len() > 500, "the budget is used");
    }
    // One long word: a single pre-tokenized piece is cut inside.
    let word = "a".repeat(200_000);
    let cut = truncate_middle_tokens(&word, 300, o200k()).unwrap();
    assert!(o200k().count(&cut) <= 300);
    let (_, head, _, _, tail) = parse(&cut, "tokens");
    assert!(head.len() > 100 && tail.len() > 100);
}

#[test]
fn cuts_prefer_line_boundaries_only_when_close() {
    // Short lines: the head ends right before a newline.
    let text = log(300);
    let cut = truncate_middle_bytes(&text, 4_000).unwrap();
    let (_, head, _, _, tail) = parse(&cut, "bytes");
    assert_eq!(text.as_bytes()[head.len()], b'\n');
    assert!(text[..text.len() - tail.len()].ends_with('\n'));
    // Lines far longer than the snap distance: cut mid-line.
    let long: String = (0..20)
        .map(|i| format!("{i}{}\n", "x".repeat(5_000)))
        .collect();
    let cut = truncate_middle_bytes(&long, 4_000).unwrap();
    let (_, head, _, _, tail) = parse(&cut, "bytes");
    assert!(head.len() > 1_500 && !head.contains('\n'));
    assert!(tail.len() > 1_500);
}

#[test]
fn the_bytes_policy_cuts_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(1_000);
    let policy = GuardPolicy {
        truncation: Truncation::Bytes(10_000),
        evict_over_tokens: None,
    };
    let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
    assert_eq!(counted, 0, "the bytes policy needs no token count");
    let Guarded::Truncated { content, .. } = guarded else {
        panic!("not truncated: {guarded:?}");
    };
    assert!(content.len() <= 12_000 && content.len() > 11_000);
    let (lines, head, removed, est, tail) = parse(&content, "bytes");
    assert_eq!(lines, 1_000);
    assert!(!est);
    assert_eq!(removed as usize, text.len() - head.len() - tail.len());
    assert!(text.starts_with(&head) && text.ends_with(&tail));
    // Under the cap: unchanged.
    let (guarded, _) = guard("c1", &log(10), &policy, o200k(), dir.path());
    assert_eq!(guarded, Guarded::Unchanged);
    // Tiny caps and multi-byte text.
    let emoji = "🦀".repeat(1_000);
    for max in [0, 1, 40, 60, 61, 62, 63, 100] {
        let cut = truncate_middle_bytes(&emoji, max).unwrap();
        assert!(cut.len() <= max.max(51), "{max}: {cut}");
    }
}

#[test]
fn the_none_policy_never_truncates_and_never_counts() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(20_000);
    let policy = GuardPolicy {
        truncation: Truncation::None,
        evict_over_tokens: None,
    };
    let (guarded, counted) = guard("c1", &text, &policy, o200k(), dir.path());
    assert_eq!((guarded, counted), (Guarded::Unchanged, 0));
    // With eviction on, only eviction applies.
    let policy = GuardPolicy {
        truncation: Truncation::None,
        ..GuardPolicy::default()
    };
    let (guarded, _) = guard("c1", &log(300), &policy, o200k(), dir.path());
    assert_eq!(guarded, Guarded::Unchanged);
}

#[test]
fn eviction_writes_the_exact_original_privately_and_previews_it() {
    let dir = tempfile::tempdir().unwrap();
    let evicted = dir.path().join("evicted");
    let text = log(2_000);
    let (guarded, _) = guard(
        "toolu_01AB",
        &text,
        &GuardPolicy::default(),
        o200k(),
        &evicted,
    );
    let Guarded::Evicted {
        preview,
        path,
        original_tokens,
        estimated,
    } = guarded
    else {
        panic!("not evicted: {guarded:?}");
    };
    assert_eq!(path, evicted.join("toolu_01AB.txt"));
    assert_eq!(fs::read(&path).unwrap(), text.as_bytes());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Only the file: no temporary left behind.
    let names: Vec<_> = fs::read_dir(&evicted)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["toolu_01AB.txt"]);

    let lines: Vec<&str> = text.lines().collect();
    for line in &lines[..5] {
        assert!(preview.contains(line), "{line}");
    }
    for line in &lines[lines.len() - 5..] {
        assert!(preview.contains(line), "{line}");
    }
    assert!(!preview.contains(lines[5]) && !preview.contains(lines[lines.len() - 6]));
    assert!(preview.contains("toolu_01AB") && preview.contains("read_evicted_output"));
    assert!(preview.contains("2000 lines") && preview.contains("[… 1990 lines omitted …]"));
    assert!(preview.contains(&format!("{} bytes", text.len())) && estimated);
    let exact = o200k().count(&text) as u64;
    assert!(
        original_tokens.abs_diff(exact) * 20 < exact,
        "{original_tokens} vs {exact}"
    );
    assert!(o200k().count(&preview) < 1_000);

    // Eviction again (a re-ingest) replaces the file.
    let (guarded, _) = guard(
        "toolu_01AB",
        &log(2_001),
        &GuardPolicy::default(),
        o200k(),
        &evicted,
    );
    assert!(matches!(guarded, Guarded::Evicted { .. }));
    assert_eq!(fs::read_to_string(&path).unwrap(), log(2_001));
}

#[test]
fn previews_of_few_huge_lines_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}\n{}", "x".repeat(100_000), "y".repeat(100_000));
    let (guarded, _) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
    let Guarded::Evicted { preview, .. } = guarded else {
        panic!("not evicted: {guarded:?}");
    };
    assert!(preview.len() < 2_000, "{}", preview.len());
    assert!(preview.contains("2 lines") && preview.contains("more bytes]"));
}

#[test]
fn bad_call_ids_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let evicted = dir.path().join("evicted");
    let text = log(2_000);
    for bad in ["../x", "a/b", "", ".hidden", "a\0b"] {
        let result = guard_tool_output(
            bad,
            &text,
            &GuardPolicy::default(),
            o200k(),
            evicted.as_path(),
        );
        assert!(
            matches!(
                result,
                Err(Error::InvalidId {
                    kind: IdKind::ToolCall,
                    ..
                })
            ),
            "{bad:?}: {result:?}"
        );
        assert!(matches!(
            read_evicted(&evicted, bad, 0, 10),
            Err(Error::InvalidId { .. })
        ));
    }
    assert!(!evicted.exists());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn huge_outputs_are_never_counted_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(28_000);
    assert!(text.len() > 2_000_000);

    // Eviction: the decision costs at most the threshold's worth of text.
    let (guarded, counted) = guard("c1", &text, &GuardPolicy::default(), o200k(), dir.path());
    assert!(matches!(
        guarded,
        Guarded::Evicted {
            estimated: true,
            ..
        }
    ));
    assert!(counted < 100_000, "counted {counted} bytes");

    // Truncation: the scan to the exact-count limit plus what is kept.
    let (guarded, counted) = guard("c1", &text, &no_evict(), o200k(), dir.path());
    let Guarded::Truncated {
        content, estimated, ..
    } = guarded
    else {
        panic!("not truncated: {guarded:?}");
    };
    assert!(estimated && content.contains("…~"));
    assert!(o200k().count(&content) <= 6_000);
    assert!(counted < text.len() / 10, "counted {counted} bytes");

    // A tighter cap without eviction: the same bound, whatever the size.
    let policy = GuardPolicy {
        truncation: Truncation::Tokens(1_000),
        evict_over_tokens: None,
    };
    // Each on a thread of its own: the cuts above are remembered on this one.
    let counted = |text: &str| {
        std::thread::scope(|s| {
            s.spawn(|| guard("c1", text, &policy, o200k(), dir.path()).1)
                .join()
                .unwrap()
        })
    };
    let (counted_2mb, counted_1mb) = (counted(&text), counted(&log(14_000)));
    assert!(
        counted_2mb.abs_diff(counted_1mb) < 10_000,
        "{counted_2mb} vs {counted_1mb}"
    );

    // The threshold is decided exactly: just over evicts, just under does not.
    let cut = 74 * 700; // a line boundary, followed by "[000700]"
    let policy = GuardPolicy {
        truncation: Truncation::None,
        evict_over_tokens: Some(o200k().count(&text[..cut]) as u64),
    };
    let (under, _) = guard("c2", &text[..cut], &policy, o200k(), dir.path());
    assert_eq!(under, Guarded::Unchanged);
    let (over, _) = guard("c2", &text[..cut + 8], &policy, o200k(), dir.path());
    assert!(matches!(over, Guarded::Evicted { .. }));
}

#[test]
fn scan_is_exact_and_stops_early() {
    let text = log(500);
    let exact = o200k().count(&text) as u64;
    let mut counter = Counter::new(o200k());
    let scan = counter.scan(&text, exact);
    assert!(scan.complete && scan.tokens == exact);
    let mut counter = Counter::new(o200k());
    let scan = counter.scan(&text, 1_000);
    assert!(!scan.complete && scan.tokens <= 1_000);
    assert_eq!(o200k().count(&text[..scan.end]) as u64, scan.tokens);
    assert!(counter.bytes_counted < 5_000, "{}", counter.bytes_counted);
}

#[test]
fn a_text_counted_whole_is_not_counted_again_by_a_scan() {
    let text = log(400);
    let exact = o200k().count(&text) as u64;
    let mut counter = Counter::new(o200k());
    let scan = counter.scan(&text, exact);
    assert!(scan.complete && scan.tokens == exact);
    assert_eq!(counter.bytes_counted, 0, "remembered, not counted");
    // Under a lower limit the scan stops where it always did.
    let scan = counter.scan(&text, exact / 2);
    assert!(!scan.complete && scan.tokens <= exact / 2);
    assert!(counter.bytes_counted > 0);
}

#[test]
fn a_cut_made_once_is_found_again_without_counting() {
    let text = log(1_400);
    let cuts = |counter: &mut Counter| {
        [
            counter.fit_prefix(&text, 700) as u64,
            counter.fit_suffix(&text, 700) as u64,
            counter.scan(&text, 900).end as u64,
        ]
    };
    let mut first = Counter::new(o200k());
    let found = cuts(&mut first);
    assert!(first.bytes_counted > 0);
    let mut again = Counter::new(o200k());
    assert_eq!(cuts(&mut again), found);
    assert_eq!(again.bytes_counted, 0, "remembered, not counted");
    // A remembered place that cannot be one in the text is counted anew.
    let other = log(1_300);
    let fresh = std::thread::scope(|s| {
        s.spawn(|| Counter::new(o200k()).fit_prefix(&other, 700))
            .join()
            .unwrap()
    });
    o200k().remember_cut(&other, Cut::Head(700), [other.len() as u64 + 1, 0]);
    let mut counter = Counter::new(o200k());
    assert_eq!(counter.fit_prefix(&other, 700), fresh);
    assert!(counter.bytes_counted > 0);
}

#[test]
fn eviction_decided_by_pieces_agrees_with_counting() {
    let policy = GuardPolicy {
        evict_over_tokens: Some(300),
        ..GuardPolicy::default()
    };
    let texts = [
        "ok ".repeat(299),
        "ok ".repeat(301),
        "supercalifragilistic_identifier_0123456789 ".repeat(40),
        "日本語のテキスト ".repeat(60),
        log(30),
    ];
    for text in &texts {
        let tokens = o200k().count(text) as u64;
        assert_eq!(
            should_evict(text, &policy, o200k()),
            tokens > 300,
            "{tokens} tokens"
        );
        if more_pieces_than(text, 300, o200k()) {
            assert!(tokens > 300);
        }
    }
}

#[test]
fn the_tool_schema_is_well_formed() {
    let schema = read_evicted_output_schema();
    let parsed = ToolSchema::from_json(&schema.to_json()).unwrap();
    assert_eq!(parsed.name, "read_evicted_output");
    let props = &schema.parameters["properties"];
    assert_eq!(props["call_id"]["type"], "string");
    assert_eq!(props["offset"]["type"], "integer");
    assert_eq!(props["offset"]["default"], 0);
    assert_eq!(props["limit"]["default"], 200);
}
