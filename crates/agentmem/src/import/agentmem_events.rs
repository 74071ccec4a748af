//! agentmem's own events, one JSON object a line.
//!
//! Also reads the neutral workload format (`{"turn", "kind", "content", …}`):
//! `kind` is an alias of `trace_type`, and `turn` is kept as an extra field.

use super::{stable_id, Imported, Skipped};
use crate::event::Event;

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let mut imported = Imported::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        imported.records += 1;
        match serde_json::from_str::<Event>(line) {
            Ok(mut event) => {
                if event.id.is_empty() {
                    event.id = stable_id("ev", index + 1, line);
                }
                imported.events.push(event);
            }
            Err(e) => imported.skipped.push(Skipped {
                line: index + 1,
                reason: format!("not an event: {e}"),
            }),
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::TraceType;

    #[test]
    fn a_malformed_line_is_reported_and_the_rest_imports() {
        let text = "{\"trace_type\":\"user\",\"content\":\"a\"}\n{not json\n{\"kind\":\"assistant\",\"content\":\"b\",\"turn\":1}\n";
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 2);
        assert_eq!(imported.events[1].trace_type, TraceType::Assistant);
        assert_eq!(imported.skipped.len(), 1);
        assert_eq!(imported.skipped[0].line, 2);
    }

    #[test]
    fn ids_are_stable_across_imports_of_a_grown_file() {
        let first = parse("{\"kind\":\"user\",\"content\":\"a\"}\n").unwrap();
        let grown = parse(
            "{\"kind\":\"user\",\"content\":\"a\"}\n{\"kind\":\"assistant\",\"content\":\"b\"}\n",
        )
        .unwrap();
        assert_eq!(first.events[0].id, grown.events[0].id);
        assert_ne!(grown.events[0].id, grown.events[1].id);
    }
}
