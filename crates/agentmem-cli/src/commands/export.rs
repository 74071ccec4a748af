//! `agentmem export`: the whole raw history, archive included.

use std::io::Write;

use agentmem::export::to_openai_messages;
use agentmem::Backend;

use super::Context;
use crate::cli::ExportFormat;

pub fn run(ctx: &Context, id: &str, format: ExportFormat) -> anyhow::Result<()> {
    let id = ctx.session_id(id)?;
    let history = match ctx.backend() {
        Backend::Files => {
            let session = ctx.store.read_session(&ctx.agent, &id)?;
            ctx.report_recoveries(&session);
            session.full_history()?
        }
        Backend::Postgres => ctx.storage()?.full_history(&ctx.agent, &id)?,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match format {
        ExportFormat::Events => {
            for event in &history {
                serde_json::to_writer(&mut out, event)?;
                out.write_all(b"\n")?;
            }
        }
        ExportFormat::OpenaiMessages => {
            serde_json::to_writer_pretty(&mut out, &to_openai_messages(&history))?;
            out.write_all(b"\n")?;
        }
    }
    Ok(out.flush()?)
}
