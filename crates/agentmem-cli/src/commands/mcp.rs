//! `agentmem mcp`: the memory tools as a Model Context Protocol server on
//! stdio, one JSON-RPC message per line (`agentmem_server::mcp` answers
//! them; `agentmem serve` offers the same over streamable HTTP at `/mcp`).

use agentmem::tools::ToolContext;

use super::json_lines::{Line, MAX_LINE_BYTES};
use super::Context;

pub fn run(ctx: &Context, session: Option<&str>) -> anyhow::Result<()> {
    let session = session.map(|id| ctx.session_id(id)).transpose()?;
    let context = ToolContext {
        store: &ctx.store,
        agent: &ctx.agent,
        session: session.as_ref(),
        on: ctx.tools_on()?,
    };
    super::json_lines::answer_lines(|line| match line {
        Line::Text(text) => agentmem_server::mcp::answer_line(&context, text),
        Line::TooLong => Some(agentmem_server::mcp::too_large(MAX_LINE_BYTES)),
        Line::NotUtf8(not_utf8) => Some(agentmem_server::mcp::unreadable(&not_utf8.to_string())),
    })
}
