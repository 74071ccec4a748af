//! Writes `examples/long-coding-session.jsonl`: a long, deterministic coding
//! agent session in agentmem's events format, with the things that make
//! context management hard — large test logs and file reads, repeated reads
//! of the same file, a todo list the agent keeps updating, user preferences
//! stated once early on, an interrupted turn, a tool result that arrives
//! after the next user message, and identifiers (paths, error codes, commit
//! hashes) a summary must not lose.
//!
//! ```sh
//! cargo run -p agentmem-cli --example generate_session            # writes the file
//! cargo run -p agentmem-cli --example generate_session -- OUT 300  # another path, 300 turns
//! ```

use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::{json, Value};

const DEFAULT_TURNS: usize = 120;
const MODULES: &[&str] = &[
    "parser", "lexer", "session", "cache", "auth", "router", "store", "config", "metrics", "cli",
];
const FUNCTIONS: &[&str] = &[
    "parse_header",
    "flush_buffer",
    "load_config",
    "open_session",
    "evict_entry",
    "route_request",
    "check_token",
    "render_metrics",
];
const ERRORS: &[&str] = &["E0425", "E0308", "E0599", "E0277", "E0502"];
const WORDS: &[&str] = &[
    "the",
    "loop",
    "calls",
    "helper",
    "twice",
    "and",
    "cache",
    "is",
    "never",
    "invalidated",
    "after",
    "write",
    "so",
    "request",
    "returns",
    "stale",
    "value",
    "when",
    "session",
    "expires",
    "handler",
    "retries",
    "without",
    "backoff",
    "buffer",
    "grows",
    "until",
    "limit",
    "test",
    "fails",
    "on",
    "empty",
    "input",
    "because",
    "parser",
    "skips",
    "trailing",
    "newline",
];

/// xorshift64*: small, fast, and the same numbers on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn hash(&mut self) -> String {
        format!("{:012x}", self.next() >> 16)
    }
}

struct Writer {
    lines: Vec<Value>,
    calls: usize,
}

impl Writer {
    fn event(&mut self, value: Value) {
        self.lines.push(value);
    }
    fn call(&mut self, tool: &str, args: Value) -> String {
        self.calls += 1;
        let id = format!("call_{:04}", self.calls);
        self.event(json!({"trace_type": "tool_call", "tool_call_id": id, "tool_name": tool, "tool_args": args}));
        id
    }
    fn result(&mut self, id: &str, output: String, error: bool) {
        let mut event = json!({"trace_type": "tool_result", "tool_call_id": id, "content": output});
        if error {
            event["tool_error"] = json!("exit status 101");
        }
        self.event(event);
    }
}

fn source_file(rng: &mut Rng, module: &str, lines: usize) -> String {
    let mut out = format!("//! The {module} module.\n\nuse crate::error::Result;\n\n");
    for i in 0..lines / 6 {
        let f = rng.pick(FUNCTIONS);
        let _ = write!(
            out,
            "/// {}.\npub fn {f}_{i}(input: &str) -> Result<usize> {{\n    let n = input.len() * {};\n    Ok(n)\n}}\n",
            rng.sentence(8),
            rng.below(64)
        );
    }
    out
}

fn test_log(rng: &mut Rng, module: &str, tests: usize, failing: bool) -> String {
    let mut out = format!("   Compiling agentmem-{module} v0.3.1 (/home/dev/proj/crates/{module})\n    Finished test profile in 14.2s\n     Running unittests src/lib.rs\n\nrunning {tests} tests\n");
    for i in 0..tests {
        let _ = writeln!(
            out,
            "test {module}::tests::{}_{i} ... ok",
            rng.pick(FUNCTIONS)
        );
    }
    if failing {
        let f = rng.pick(FUNCTIONS);
        let _ = write!(
            out,
            "test {module}::tests::{f}_edge ... FAILED\n\nfailures:\n\n---- {module}::tests::{f}_edge stdout ----\nthread panicked at crates/{module}/src/lib.rs:{}:9:\nassertion `left == right` failed\n  left: {}\n right: {}\n\ntest result: FAILED. {} passed; 1 failed; finished in 0.{}s\n",
            rng.below(400) + 10,
            rng.below(100),
            rng.below(100),
            tests,
            rng.below(90) + 10
        );
    } else {
        let _ = writeln!(
            out,
            "\ntest result: ok. {tests} passed; 0 failed; finished in 0.{}s",
            rng.below(90) + 10
        );
    }
    out
}

fn grep_hits(rng: &mut Rng, pattern: &str, hits: usize) -> String {
    (0..hits)
        .map(|_| {
            format!(
                "crates/{}/src/lib.rs:{}:    let x = {pattern}(&input)?;",
                rng.pick(MODULES),
                rng.below(900) + 1
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn turn(w: &mut Writer, rng: &mut Rng, n: usize, todo: &mut Vec<(String, bool)>) {
    let module = rng.pick(MODULES);
    let function = rng.pick(FUNCTIONS);
    let request = match n {
        0 => "We are fixing the flaky tests across the workspace. Ground rules: always use snake_case, never edit anything under migrations/, and run the full test suite before you say something is done.".to_owned(),
        _ if n.is_multiple_of(17) => format!("New priority: `{function}` in crates/{module} panics on empty input ({}). Fix that first.", rng.pick(ERRORS)),
        _ => format!("Next: look at crates/{module}/src/lib.rs — {}. Then run its tests.", rng.sentence(10)),
    };
    w.event(json!({"trace_type": "user", "content": request}));
    if n % 23 == 11 {
        w.event(json!({"trace_type": "assistant", "content": format!("Looking at crates/{module} first.")}));
        w.event(json!({"trace_type": "turn_aborted", "content": "the user pressed Esc"}));
        return;
    }
    w.event(json!({"trace_type": "assistant", "content": format!("I'll read crates/{module}/src/lib.rs, then run the {module} tests.")}));
    let path = format!("crates/{module}/src/lib.rs");
    let read = w.call("read_file", json!({"path": path}));
    let size = if rng.below(10) == 0 {
        900
    } else {
        40 + rng.below(160)
    };
    let file = source_file(rng, module, size);
    w.result(&read, file, false);
    if rng.below(3) == 0 {
        let grep = w.call("grep", json!({"pattern": function, "path": "crates/"}));
        let count = 5 + rng.below(40);
        let hits = grep_hits(rng, function, count);
        w.result(&grep, hits, false);
    }
    let failing = rng.below(3) == 0;
    let tests = if rng.below(12) == 0 {
        2_500
    } else {
        20 + rng.below(200)
    };
    let run = w.call(
        "bash",
        json!({"command": format!("cargo test -p agentmem-{module}")}),
    );
    let log = test_log(rng, module, tests, failing);
    if n % 29 == 5 {
        // The result of this call arrives after the user's next message.
        w.event(json!({"trace_type": "user", "content": "(still running? take your time)"}));
    }
    w.result(&run, log, failing);
    if failing {
        let edit = w.call("edit_file", json!({"path": path, "old": format!("{function}(input)"), "new": format!("{function}(input.trim_end())")}));
        w.result(
            &edit,
            format!("Edited {path}: 1 replacement. Commit {}", rng.hash()),
            false,
        );
    }
    todo.push((format!("{function} in crates/{module}"), !failing));
    if n.is_multiple_of(6) {
        let items: Vec<Value> = todo
            .iter()
            .rev()
            .take(8)
            .map(|(t, done)| json!({"task": t, "done": done}))
            .collect();
        let call = w.call("manage_todo_list", json!({"items": items}));
        w.result(
            &call,
            format!(
                "todo list updated: {} items, {} done",
                items.len(),
                items.iter().filter(|i| i["done"] == true).count()
            ),
            false,
        );
    }
    let verdict = if failing {
        format!("The {module} test failed at the edge case; I decided to trim the trailing newline in `{function}` instead of changing the caller. Next I'll rerun the suite.")
    } else {
        format!(
            "All {module} tests pass ({tests} tests). {}.",
            rng.sentence(12)
        )
    };
    w.event(json!({"trace_type": "assistant", "content": verdict}));
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .unwrap_or_else(|| "examples/long-coding-session.jsonl".to_owned());
    let turns = args
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or(DEFAULT_TURNS);
    let mut rng = Rng(0x5eed_cafe_f00d_beef);
    let mut writer = Writer {
        lines: Vec::new(),
        calls: 0,
    };
    writer.event(json!({"trace_type": "system", "content": "You are a careful coding agent working in the user's Rust workspace at /home/dev/proj."}));
    let mut todo = Vec::new();
    for n in 0..turns {
        turn(&mut writer, &mut rng, n, &mut todo);
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(&out)?);
    for line in &writer.lines {
        writeln!(file, "{line}")?;
    }
    file.flush()?;
    eprintln!("wrote {out}: {turns} turns, {} events", writer.lines.len());
    Ok(())
}
