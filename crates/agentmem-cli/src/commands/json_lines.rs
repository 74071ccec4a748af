//! The loop both line protocols (`serve --stdio`, `mcp`) share: a message a
//! line on stdin, an answer (if any) a line on stdout, flushed at once so a
//! parent process can wait for it.

use std::io::{BufRead, Read, Write};

use agentmem_import::utf8::NotUtf8;

/// The longest line taken, in bytes (the newline aside): the HTTP server's
/// default body limit, so neither transport holds more of one request.
pub const MAX_LINE_BYTES: usize = agentmem_server::http::DEFAULT_MAX_BODY_BYTES;

/// One line of stdin.
pub enum Line<'a> {
    Text(&'a str),
    /// Over [`MAX_LINE_BYTES`]: read past, never held whole.
    TooLong,
    /// Not UTF-8, and where it is not.
    NotUtf8(NotUtf8),
}

/// Answers each non-blank line of stdin with `answer`, until stdin ends. A
/// line too long or not UTF-8 is handed over as what it is, to be answered
/// too: one bad line never ends the loop.
pub fn answer_lines<R: std::fmt::Display>(
    mut answer: impl FnMut(Line<'_>) -> Option<R>,
) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let mut stdin = std::io::stdin().lock();
    let (mut buffer, mut line_no) = (Vec::new(), 0usize);
    loop {
        buffer.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        if (&mut stdin).take(limit).read_until(b'\n', &mut buffer)? == 0 {
            return Ok(());
        }
        line_no += 1;
        let line = if buffer.len() > MAX_LINE_BYTES && buffer.last() != Some(&b'\n') {
            skip_line(&mut stdin)?;
            Line::TooLong
        } else {
            match agentmem_import::utf8::line(&buffer, line_no) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => Line::Text(text.trim_end_matches(['\n', '\r'])),
                Err(not_utf8) => Line::NotUtf8(not_utf8),
            }
        };
        if let Some(reply) = answer(line) {
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
