//! `agentmem tools`: tool calls joined with their results.

use agentmem::base::turn::turn_id;

use super::Context;
use crate::output::{print_json, print_table};

/// Longest result preview in the table, in characters.
const PREVIEW_CHARS: usize = 60;

pub fn run(ctx: &Context, id: &str, turn: Option<&str>) -> anyhow::Result<()> {
    let session = ctx.read_session(&ctx.session_id(id)?)?;
    ctx.report_recoveries(&session);
    let wanted = turn.map(|t| {
        t.parse::<u64>()
            .map(turn_id)
            .unwrap_or_else(|_| t.to_owned())
    });
    let tools: Vec<_> = session
        .tool_interactions()
        .into_iter()
        .filter(|t| wanted.as_ref().is_none_or(|w| &t.turn_id == w))
        .collect();
    if ctx.json {
        return print_json(&tools);
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            vec![
                t.turn_id.clone(),
                t.tool_call_id.clone(),
                t.tool_name.clone(),
                format!("{:?}", t.status).to_uppercase(),
                preview(t.result.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    print_table(&["TURN", "CALL ID", "TOOL", "STATUS", "RESULT"], &rows);
    Ok(())
}

fn preview(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}
