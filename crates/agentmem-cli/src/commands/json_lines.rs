//! The loop both line protocols (`serve --stdio`, `mcp`) share: a message a
//! line on stdin, an answer (if any) a line on stdout, flushed at once so a
//! parent process can wait for it.

use std::io::{BufRead, Write};

use serde_json::Value;

/// Answers each non-blank line of stdin with `answer`, until stdin ends.
pub fn answer_lines(mut answer: impl FnMut(&str) -> Option<Value>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = answer(&line) {
            writeln!(stdout, "{reply}")?;
            stdout.flush()?;
        }
    }
    Ok(())
}
