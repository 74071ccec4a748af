//! The targets. Each reads its bytes as the path it covers would, and
//! checks what must hold whatever they are.

use std::path::{Path, PathBuf};

use agentmem::base::message::messages_from_events;
use agentmem::files::jsonl;
use agentmem::files::snapshot::Snapshot;
use agentmem::pipeline::guard::{self, GuardPolicy};
use agentmem::pipeline::normalize::{normalize_pairs, pairs_are_intact};
use agentmem::render::RenderRequest;
use agentmem::tools::{ToolContext, ToolsOn};
use agentmem::{
    AgentId, CompactOptions, Durability, Encoding, Event, PrepareRequest, PromptCache, SessionMeta,
    Store, Target, ToolSchema,
};
use agentmem_import::{self as import, Format};
use agentmem_server::service::{Op, Service};
use serde_json::Value;

/// Lines a service or MCP input is cut to: each may create files.
const MAX_COMMANDS: usize = 12;

/// The guard's cuts may exceed a cap too small for their own header and
/// marker (they are then all a cut holds); above it they must fit.
const CUT_FRAME_TOKENS: u64 = 64;
const CUT_FRAME_BYTES: usize = 160;

/// Every importer (the first byte picks one) and format detection, on any
/// bytes. Each event an importer makes that a session would take is
/// written to a log line that reads back as the same event.
pub fn importers(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let path = Path::new("input");
    let _ = import::detect_format(path, &text);
    let format = Format::ALL[usize::from(pick) % Format::ALL.len()];
    if let Ok(imported) = import::parse(format, path, &text) {
        imported
            .events
            .iter()
            .filter(|e| e.validate().is_ok())
            .for_each(assert_log_line_round_trips);
    }
}

/// The log reader, and the snapshot and meta readers, on any bytes: the
/// events read are written back as lines that read back as themselves, and
/// a snapshot read is written back as it reads.
pub fn log(data: &[u8]) {
    let contents = jsonl::parse_log(data);
    contents
        .events
        .iter()
        .filter(|e| e.validate().is_ok())
        .for_each(assert_log_line_round_trips);
    if let Ok(snapshot) = serde_json::from_slice::<Snapshot>(data) {
        let written = serde_json::to_vec(&snapshot).expect("a snapshot serializes");
        let again: Snapshot = serde_json::from_slice(&written).expect("a written snapshot reads");
        assert_eq!(serde_json::to_vec(&again).unwrap(), written);
    }
    let _ = serde_json::from_slice::<SessionMeta>(data);
}

/// One event as ingest reads it: validated, and when valid, written to a
/// log line that reads back as itself; its text is what a model sees.
pub fn event(data: &[u8]) {
    let Ok(event) = serde_json::from_slice::<Event>(data) else {
        return;
    };
    let _ = event.text();
    if event.validate().is_ok() {
        assert_log_line_round_trips(&event);
    }
}

/// The write-time guard on any text, with a cap from the first two bytes:
/// a cut fits its cap in tokens or bytes, on character boundaries.
pub fn guard(data: &[u8]) {
    let [high, low, rest @ ..] = data else {
        return;
    };
    let cap = u16::from_be_bytes([*high, *low]);
    let text = String::from_utf8_lossy(rest);
    let tokenizer = Encoding::O200kBase.tokenizer();
    if let Some(cut) = guard::truncate_middle_tokens(&text, u64::from(cap), tokenizer) {
        let tokens = tokenizer.count(&cut) as u64;
        assert!(
            tokens <= u64::from(cap).max(CUT_FRAME_TOKENS),
            "{tokens} tokens cut to a cap of {cap}"
        );
    }
    if let Some(cut) = guard::truncate_middle_bytes(&text, usize::from(cap)) {
        assert!(
            cut.len() <= usize::from(cap).max(CUT_FRAME_BYTES),
            "{} bytes cut to a cap of {cap}",
            cut.len()
        );
    }
    let _ = guard::should_evict(&text, &GuardPolicy::default(), tokenizer);
    let _ = guard::eviction_preview("call_1", &text);
}

/// The pair passes and every renderer over the events the lines of `data`
/// hold: the passes leave pairs intact and change nothing a second time,
/// and every body serializes.
pub fn render(data: &[u8]) {
    let mut events = events_of(data);
    normalize_pairs(&mut events);
    assert!(pairs_are_intact(&events), "pairs broken after the passes");
    let mut again = events.clone();
    normalize_pairs(&mut again);
    assert!(
        again == events,
        "a second run of the passes changed the events"
    );
    let messages = messages_from_events(&events);
    let tools = [ToolSchema {
        name: "bash".into(),
        description: "Run a command.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }];
    for target in Target::ALL {
        for cache in [PromptCache::On, PromptCache::Off] {
            let request = RenderRequest {
                model: "fuzz-model",
                system: Some("You are terse."),
                messages: &messages,
                tools: &tools,
                max_output_tokens: 1_000,
                cache,
                live_context: Some("Today is Friday."),
            };
            let body = agentmem::render::render(target, &request);
            serde_json::to_vec(&body).expect("a rendered body serializes");
        }
    }
}

/// A whole session over the events the lines of `data` hold: ingested,
/// prepared for every API under a small budget, compacted, and opened again
/// with nothing to repair.
pub fn pipeline(data: &[u8]) {
    let events = events_of(data);
    let dir = scratch_dir();
    let store = Store::open(dir.path(), Durability::Os).expect("a store opens");
    let agent = AgentId::default();
    let mut session = store
        .create_session(&agent, None)
        .expect("a session is created");
    let id = session.id().clone();
    if session.ingest(events).is_err() {
        return; // a refused batch writes nothing
    }
    for (index, target) in Target::ALL.into_iter().enumerate() {
        let mut request = PrepareRequest::new("gpt-4o", target);
        request.budget.context_window = Some(3_000 + 1_000 * index as u64);
        request.budget.max_output_tokens = Some(300);
        request.budget.safety_margin = Some(200);
        if let Ok(prepared) = session.prepare(&request) {
            serde_json::to_vec(&prepared.payload).expect("a payload serializes");
        }
    }
    let _ = session.compact(&CompactOptions::default());
    drop(session);
    let reopened = store
        .open_session(&agent, &id)
        .expect("the session opens again");
    assert!(
        reopened.recoveries().is_empty(),
        "opening again repaired {:?}",
        reopened.recoveries()
    );
}

/// The service's JSON lines (`serve --stdio`), run as it runs them, on a
/// scratch store: an answer or a refusal, never a panic.
pub fn service(data: &[u8]) {
    let dir = scratch_dir();
    let store = Store::open(dir.path(), Durability::Os).expect("a store opens");
    let service = Service::new(store, AgentId::default());
    for line in String::from_utf8_lossy(data).lines().take(MAX_COMMANDS) {
        let Ok(command) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(Ok(op)) = command
            .get("op")
            .and_then(Value::as_str)
            .map(str::parse::<Op>)
        else {
            continue;
        };
        let mut arguments = command.clone();
        if let Some(fields) = arguments.as_object_mut() {
            fields.remove("op");
            fields.remove("id");
        }
        if let Ok(answer) = service.execute_text(op, &arguments, line.as_bytes()) {
            serde_json::to_vec(&answer).expect("an answer serializes");
        }
    }
}

/// MCP messages and batches, a line each, answered by the memory tools on a
/// scratch store: every answer serializes.
pub fn mcp(data: &[u8]) {
    let dir = scratch_dir();
    let store = Store::open(dir.path(), Durability::Os).expect("a store opens");
    let agent = AgentId::default();
    let context = ToolContext {
        store: &store,
        agent: &agent,
        session: None,
        on: ToolsOn::StoreFiles,
    };
    for line in String::from_utf8_lossy(data).lines().take(MAX_COMMANDS) {
        if let Some(answer) = agentmem_server::mcp::answer_line(&context, line) {
            serde_json::to_vec(&answer).expect("an answer serializes");
        }
    }
}

/// The events the lines of `data` hold, as ingest would take them.
fn events_of(data: &[u8]) -> Vec<Event> {
    String::from_utf8_lossy(data)
        .lines()
        .filter_map(|line| serde_json::from_str::<Event>(line).ok())
        .filter(|event| event.validate().is_ok())
        .collect()
}

/// The log line `event` is written as reads back as `event`, written again
/// as the same line.
fn assert_log_line_round_trips(event: &Event) {
    let line = jsonl::encode_lines(std::slice::from_ref(event));
    let read = jsonl::parse_log(&line);
    assert!(
        read.bad_lines.is_empty() && read.torn_tail.is_empty(),
        "a written line does not read back: {:?}",
        read.bad_lines
    );
    assert_eq!(read.events.len(), 1);
    assert_eq!(
        jsonl::encode_lines(&read.events),
        line,
        "read back unlike written"
    );
}

/// A fresh folder for one run, in memory where the system offers it.
fn scratch_dir() -> tempfile::TempDir {
    let shm = PathBuf::from("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm),
        false => tempfile::tempdir(),
    }
    .expect("a scratch folder")
}
