//! Input read as lines (JSONL files, NDJSON on stdin, a line protocol): each
//! line is decoded on its own, so a byte that is not UTF-8 costs its line,
//! never the input.

use std::borrow::Cow;
use std::collections::HashSet;

/// The byte-order mark some editors put before UTF-8 text: not part of it.
const BYTE_ORDER_MARK: &[u8] = b"\xef\xbb\xbf";

/// `bytes` without the byte-order mark it starts with, if any.
fn without_byte_order_mark(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes)
}

/// `bytes`, line `line` of an input (from 1), as text; the first line
/// without a byte-order mark.
///
/// ```
/// let bad = agentmem_import::utf8::line(b"caf\xe9", 4).unwrap_err();
/// assert_eq!((bad.line, bad.column, bad.byte), (4, 4, 0xe9));
/// assert_eq!(agentmem_import::utf8::line("café".as_bytes(), 1).unwrap(), "café");
/// assert_eq!(agentmem_import::utf8::line(b"\xef\xbb\xbf{}", 1).unwrap(), "{}");
/// ```
pub fn line(bytes: &[u8], line: usize) -> Result<&str, NotUtf8> {
    let bytes = match line {
        1 => without_byte_order_mark(bytes),
        _ => bytes,
    };
    std::str::from_utf8(bytes).map_err(|error| {
        let at = error.valid_up_to();
        NotUtf8 {
            line,
            column: at + 1,
            byte: bytes[at],
        }
    })
}

/// A whole input as text, with the lines that are not UTF-8 found.
///
/// ```
/// use agentmem_import::utf8::Decoded;
/// let decoded = Decoded::new(b"one\ntw\xff\nthree\n".to_vec());
/// assert_eq!(decoded.text, "one\ntw\u{fffd}\nthree\n");
/// assert_eq!(decoded.not_utf8[0].line, 2);
/// assert_eq!(decoded.without_bad_lines(), "one\n\nthree\n");
/// ```
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The text, with U+FFFD for each byte sequence that is not UTF-8.
    pub text: String,
    /// The lines that are not UTF-8, in order.
    pub not_utf8: Vec<NotUtf8>,
}

impl Decoded {
    /// Decodes `bytes`, without the byte-order mark they may start with;
    /// text that is all UTF-8 is taken as it is.
    pub fn new(mut bytes: Vec<u8>) -> Decoded {
        if bytes.starts_with(BYTE_ORDER_MARK) {
            bytes.drain(..BYTE_ORDER_MARK.len());
        }
        match String::from_utf8(bytes) {
            Ok(text) => Decoded {
                text,
                not_utf8: Vec::new(),
            },
            Err(error) => {
                let bytes = error.into_bytes();
                let not_utf8 = bytes
                    .split(|&b| b == b'\n')
                    .enumerate()
                    .filter_map(|(index, bytes)| line(bytes, index + 1).err())
                    .collect();
                Decoded {
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                    not_utf8,
                }
            }
        }
    }

    /// The text without the lines that are not UTF-8: each is left empty,
    /// so every other line keeps its number.
    pub fn without_bad_lines(&self) -> Cow<'_, str> {
        if self.not_utf8.is_empty() {
            return Cow::Borrowed(&self.text);
        }
        let bad: HashSet<usize> = self.not_utf8.iter().map(|bad| bad.line).collect();
        let lines: Vec<&str> = self
            .text
            .split('\n')
            .enumerate()
            .map(|(index, line)| if bad.contains(&(index + 1)) { "" } else { line })
            .collect();
        Cow::Owned(lines.join("\n"))
    }
}

/// A line of input that is not UTF-8 text, and where it goes wrong: the
/// line is refused (or, inside a JSON document, read with U+FFFD for the
/// bad bytes), never the whole input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} is not UTF-8 text ({}); write the input as UTF-8", self.where_bad())]
pub struct NotUtf8 {
    /// The line, from 1.
    pub line: usize,
    /// The byte column of the first byte that is not UTF-8, from 1.
    pub column: usize,
    /// That byte.
    pub byte: u8,
}

impl NotUtf8 {
    /// Where the line goes wrong: `byte 0xe9 at column 31`.
    pub fn where_bad(&self) -> String {
        format!("byte {:#04x} at column {}", self.byte, self.column)
    }
}
