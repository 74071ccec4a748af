//! agentmem's own events, one JSON object a line.
//!
//! Also reads the neutral workload format (`{"turn", "kind", "content", …}`):
//! `kind` is an alias of `trace_type`, and `turn` is kept as an extra field.

use agentmem::Event;

use crate::imported::{Imported, Skipped};
use crate::record::{keep_too_deep_values_as_text, stable_id};

pub(super) fn parse(text: &str) -> Result<Imported, String> {
    let mut imported = Imported::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        imported.records += 1;
        match serde_json::from_str::<Event>(line)
            .map_err(|e| format!("not an event: {e}"))
            .and_then(|mut event| {
                keep_too_deep_values_as_text(&mut event);
                event.validate().map(|()| event)
            }) {
            Ok(mut event) => {
                if event.id.is_empty() {
                    event.id = stable_id("ev", index + 1, line);
                }
                imported.events.push(event);
            }
            Err(reason) => imported.skipped.push(Skipped::malformed(index + 1, reason)),
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imported::SkipKind;
    use agentmem::TraceType;

    #[test]
    fn a_malformed_line_is_reported_and_the_rest_imports() {
        let text = "{\"trace_type\":\"user\",\"content\":\"a\"}\n{not json\n{\"kind\":\"assistant\",\"content\":\"b\",\"turn\":1}\n";
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 2);
        assert_eq!(imported.events[1].trace_type, TraceType::Assistant);
        assert_eq!(imported.skipped.len(), 1);
        assert_eq!(imported.skipped[0].line, 2);
    }

    /// An event a session would refuse (here a result naming no call) is
    /// left out on its own, not with the whole chunk it is stored in.
    #[test]
    fn an_invalid_event_is_left_out_with_its_line() {
        let text = "{\"trace_type\":\"user\",\"content\":\"a\"}\n{\"trace_type\":\"tool_result\",\"content\":\"orphan\"}\n";
        let imported = parse(text).unwrap();
        assert_eq!(imported.events.len(), 1);
        assert_eq!(imported.skipped[0].line, 2);
        assert_eq!(imported.skipped[0].kind, SkipKind::Malformed);
        assert!(imported.skipped[0].reason.contains("tool_call_id"));
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
