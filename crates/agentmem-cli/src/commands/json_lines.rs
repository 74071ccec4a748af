//! The loop both line protocols (`serve --stdio`, `mcp`) share: a message a
//! line on stdin, an answer (if any) a line on stdout, flushed at once so a
//! parent process can wait for it.

use std::io::{BufRead, Read, Write};

use serde_json::Value;

/// The longest line taken, in bytes (the newline aside): the HTTP server's
/// default body limit, so neither transport holds more of one request.
pub const MAX_LINE_BYTES: usize = agentmem_server::http::DEFAULT_MAX_BODY_BYTES;

/// One line of stdin.
pub enum Line<'a> {
    Text(&'a str),
    /// Over [`MAX_LINE_BYTES`]: read past, never held whole.
    TooLong,
}

/// Answers each non-blank line of stdin with `answer`, until stdin ends.
pub fn answer_lines(mut answer: impl FnMut(Line<'_>) -> Option<Value>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let mut stdin = std::io::stdin().lock();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        if (&mut stdin).take(limit).read_until(b'\n', &mut buffer)? == 0 {
            return Ok(());
        }
        let reply = if buffer.len() > MAX_LINE_BYTES && buffer.last() != Some(&b'\n') {
            skip_line(&mut stdin)?;
            answer(Line::TooLong)
        } else {
            let text = std::str::from_utf8(&buffer)?.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            answer(Line::Text(text))
        };
        if let Some(reply) = reply {
            writeln!(stdout, "{reply}")?;
            stdout.flush()?;
        }
    }
}

/// Reads past the rest of the current line, a buffer at a time.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(end) => {
                input.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = chunk.len();
                input.consume(all);
            }
        }
    }
}
