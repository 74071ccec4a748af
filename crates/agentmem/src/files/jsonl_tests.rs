use super::*;
use crate::base::error::Error;
use crate::base::event::TraceType;

#[test]
fn a_torn_tail_is_moved_aside_and_complete_lines_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw_traces.jsonl");
    let mut log = AppendLog::open(&path, Durability::Always).unwrap();
    log.append(&[Event::user("one"), Event::user("two")])
        .unwrap();
    drop(log);
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    let torn = br#"{"trace_type":"user","cont"#;
    file.write_all(torn).unwrap();

    let (events, recoveries) = read_and_repair(&path).unwrap();
    assert_eq!(events.len(), 2);
    assert!(matches!(&recoveries[..], [Recovery::TornTail { bytes, .. }] if *bytes == torn.len()));
    assert_eq!(
        fs::read(corrupt_path(&path)).unwrap(),
        [&torn[..], b"\n"].concat()
    );
    // The log is whole again: a new append lands on its own line.
    AppendLog::open(&path, Durability::Always)
        .unwrap()
        .append(&[Event::user("three")])
        .unwrap();
    assert_eq!(read_log(&path).unwrap().events.len(), 3);
}

/// A time reads back as the number written, to the last bit, so a line
/// encoded again (a fork, a compaction, an export) is the same line.
#[test]
fn every_time_reads_back_as_the_number_written() {
    for ts in [
        1_768_499_120.623_000_1,
        1_700_000_000.125,
        0.1,
        1e-7,
        2.5e15,
    ] {
        let mut event = Event::user("x").with_id("e");
        event.ts = ts;
        let line = encode_lines([&event]);
        let read = parse_log(&line).events;
        assert_eq!(read[0].ts.to_bits(), ts.to_bits(), "{ts}");
        assert_eq!(encode_lines(&read), line);
    }
}

/// What the indexer is handed: the bytes the latest append added, under
/// every durability.
#[test]
fn appended_is_what_the_latest_append_added_to_the_log() {
    for durability in [Durability::Always, Durability::Batch, Durability::Os] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw_traces.jsonl");
        let mut log = AppendLog::open(&path, durability).unwrap();
        log.append(&[Event::user("zero")]).unwrap();
        let before = fs::read(&path).unwrap().len();
        let events = [Event::user("one\ntwo"), Event::assistant("three")];
        log.append(&events).unwrap();
        let file = fs::read(&path).unwrap();
        assert_eq!(log.appended(), &file[before..], "{durability:?}");
        assert_eq!(parse_log(log.appended()).events, events, "{durability:?}");
    }
}

/// A write that fails (a full disk) is a typed error, and leaves the
/// log as it was: none of the batch is in it.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_an_error_and_keeps_none_of_the_batch() {
    for durability in [Durability::Always, Durability::Batch, Durability::Os] {
        let mut log = AppendLog::open(Path::new("/dev/full"), durability).unwrap();
        let error = log
            .append(&[Event::user("one"), Event::user("two")])
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::Io {
                    action: "append to",
                    ..
                }
            ),
            "{durability:?}: {error:?}"
        );
        assert_eq!(log.len(), 0);
    }
}

/// A log line is the event as `serde_json` serializes it, whichever
/// fields it sets and whatever characters its texts hold.
#[test]
fn a_line_is_the_event_as_serde_json_writes_it() {
    let awkward = "tab\there \"quoted\" back\\slash \u{1}\u{1f} é😀\n";
    let every_field: Event = serde_json::from_value(serde_json::json!({
        "id": "ev-1", "ts": 1_700_000_000.125, "turn_id": "turn_0001", "seq": 3,
        "trace_type": "tool_result", "content": awkward, "source_event": "ingest",
        "media": {"images": ["data:image/png;base64,AAAA"]},
        "tool_name": "read_file", "tool_call_id": "call_1",
        "tool_args": {"path": awkward, "lines": [1, 2.5]},
        "tool_result": {"ok": true, "text": awkward}, "tool_error": awkward,
        "correlation_id": "c-1", "tags": ["a", awkward],
        "tool_result_ref": "evicted/call_1.txt",
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 1,
                  "model": "gpt-4o", "estimated_prompt_tokens": 9},
        "opaque": {"encrypted": awkward},
        "working_memory": {"kind": "merge_patch", "patch": {"goal": awkward}, "version": 2, "hash": "h"},
        "vendor_field": {"nested": [awkward]}, "another": null
    }))
    .unwrap();
    let no_field = Event::new(TraceType::User, "");
    for event in [every_field, no_field, Event::assistant(awkward)] {
        let expected = serde_json::to_string(&event).unwrap() + "\n";
        let line = String::from_utf8(encode_lines(std::slice::from_ref(&event))).unwrap();
        assert_eq!(line, expected);
    }
}

proptest::proptest! {
    /// Any texts, tags, tool arguments and unknown fields, in any
    /// combination of the optional fields, make the line `serde_json`
    /// would write.
    #[test]
    fn any_event_makes_the_line_serde_json_writes(
        texts in proptest::collection::vec(proptest::prelude::any::<String>(), 6),
        set in proptest::collection::vec(proptest::prelude::any::<bool>(), 6),
        ts in proptest::prelude::any::<f64>(),
        seq in proptest::prelude::any::<u64>(),
    ) {
        let pick = |i: usize| set[i].then(|| texts[i].clone());
        let mut event = Event::tool_call(&texts[1], &texts[2], serde_json::json!({texts[3].clone(): [texts[0].clone(), ts]}));
        event.content = texts[0].clone();
        event.ts = ts;
        event.seq = seq;
        event.tool_error = pick(4);
        event.correlation_id = pick(5);
        event.tool_result = set[0].then(|| serde_json::Value::String(texts[5].clone()));
        if set[1] {
            event.tags = vec![texts[4].clone(), texts[5].clone()];
        }
        if set[2] {
            event.extra.insert(texts[3].clone(), serde_json::json!({"k": texts[4].clone()}));
        }
        let expected = serde_json::to_string(&event).unwrap() + "\n";
        let line = String::from_utf8(encode_lines(std::slice::from_ref(&event))).unwrap();
        proptest::prop_assert_eq!(line, expected);
    }
}

/// Unknown fields go back out as they came: a number beyond 64 bits, a
/// float's every digit, nested ones too (whitespace aside).
#[test]
fn unknown_fields_are_written_back_as_they_were_written() {
    let fields = r#""vendor":123456789012345678901234567890,"nested":{"n":-18446744073709551617,"f":1.00000000000000000001,"e":1E400},"list":[1.50,2e-5]"#;
    let line = format!(
        r#"{{"id":"ev-1","ts":1.5,"turn_id":"turn_0001","seq":1,"trace_type":"user","content":"hi","source_event":"ingest",{fields}}}"#
    );
    let event: Event = serde_json::from_str(&line).unwrap();
    let written = String::from_utf8(encode_lines(std::slice::from_ref(&event))).unwrap();
    for field in [
        r#""vendor":123456789012345678901234567890"#,
        r#""nested":{"n":-18446744073709551617,"f":1.00000000000000000001,"e":1E400}"#,
        r#""list":[1.50,2e-5]"#,
    ] {
        assert!(written.contains(field), "{field} in {written}");
    }
    assert_eq!(written, serde_json::to_string(&event).unwrap() + "\n");
    let spaced: Event = serde_json::from_str(
        r#"{"trace_type":"user", "vendor": { "n" : 123456789012345678901234567890 , "s": "a b" }}"#,
    )
    .unwrap();
    let written = String::from_utf8(encode_lines(&[spaced])).unwrap();
    assert!(
        written.contains(r#""vendor":{"n":123456789012345678901234567890,"s":"a b"}"#),
        "{written}"
    );
}

#[test]
fn a_bad_line_in_the_middle_is_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw_traces.jsonl");
    let good = String::from_utf8(encode_lines(&[Event::user("ok")])).unwrap();
    fs::write(&path, format!("{good}garbage\n{good}")).unwrap();
    let (events, recoveries) = read_and_repair(&path).unwrap();
    assert_eq!(events.len(), 2);
    assert!(matches!(
        recoveries[..],
        [Recovery::BadLine { line: 2, .. }]
    ));
    assert_eq!(read_log(&path).unwrap().bad_lines.len(), 0);
}
