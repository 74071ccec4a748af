//! The loop both line protocols (`serve --stdio`, `mcp`) share: a message a
//! line on stdin, an answer (if any) a line on stdout, flushed at once so a
//! parent process can wait for it.

use std::io::{BufRead, Write};

use agentmem::error::NotUtf8;
use serde_json::Value;

/// Answers each non-blank line of stdin with `answer`, until stdin ends. A
/// line that is not UTF-8 is handed over as the error it is, to be answered
/// too: one bad line never ends the loop.
pub fn answer_lines(
    mut answer: impl FnMut(Result<&str, NotUtf8>) -> Option<Value>,
) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let mut stdin = std::io::stdin().lock();
    let (mut line, mut line_no) = (Vec::new(), 0usize);
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        line_no += 1;
        let text = agentmem::utf8::line(&line, line_no);
        if text.as_ref().is_ok_and(|text| text.trim().is_empty()) {
            continue;
        }
        if let Some(reply) = answer(text) {
            writeln!(stdout, "{reply}")?;
            stdout.flush()?;
        }
    }
}
