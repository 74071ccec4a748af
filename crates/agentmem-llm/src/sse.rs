//! Server-sent events, the streaming format of all four APIs: `event:` and
//! `data:` lines, a blank line ending each message, `:` lines as comments.

use std::io::BufRead;

/// One server-sent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseMessage {
    /// The `event:` name, when the server gave one (Anthropic, OpenAI Responses).
    pub event: Option<String>,
    /// The `data:` lines, joined by newlines.
    pub data: String,
}

/// The messages of an SSE body, read as they arrive.
///
/// ```
/// use agentmem_llm::sse::SseReader;
/// let body = "event: ping\ndata: {}\n\n: keep-alive\ndata: {\"a\":\ndata: 1}\n\n";
/// let messages: Vec<_> = SseReader::new(body.as_bytes()).map(Result::unwrap).collect();
/// assert_eq!(messages[0].event.as_deref(), Some("ping"));
/// assert_eq!(messages[1].data, "{\"a\":\n1}");
/// ```
pub struct SseReader<R> {
    reader: R,
    line: String,
}

impl<R: BufRead> SseReader<R> {
    pub fn new(reader: R) -> Self {
        SseReader {
            reader,
            line: String::new(),
        }
    }
}

impl<R: BufRead> Iterator for SseReader<R> {
    type Item = std::io::Result<SseMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut event = None;
        let mut data: Option<String> = None;
        loop {
            self.line.clear();
            match self.reader.read_line(&mut self.line) {
                Err(error) => return Some(Err(error)),
                Ok(0) => return data.map(|data| Ok(SseMessage { event, data })),
                Ok(_) => {}
            }
            let line = self.line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if let Some(data) = data.take() {
                    return Some(Ok(SseMessage { event, data }));
                }
                event = None;
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                // Comments (`:`), `id:` and `retry:` carry nothing a model answer needs.
                _ => {}
            }
        }
    }
}
