//! `agentmem memory show|append|replace`: the agent's MEMORY.md.

use super::Context;
use crate::cli::MemoryCommand;

pub fn run(ctx: &Context, command: MemoryCommand) -> anyhow::Result<()> {
    let notebook = agentmem::memory::notebook::Notebook::on(
        ctx.memory()?.clone(),
        &ctx.agent,
        ctx.redaction(),
    );
    let version = match command {
        MemoryCommand::Show => notebook.read()?,
        MemoryCommand::Append { text, expect_hash } => {
            notebook.append(&text, expect_hash.as_deref())?
        }
        MemoryCommand::Replace {
            old,
            new,
            expect_hash,
        } => notebook.update(&old, &new, expect_hash.as_deref())?,
    };
    if ctx.json {
        return crate::output::print_json(&version);
    }
    print!("{}", version.content);
    eprintln!(
        "agentmem: {} (version {})",
        notebook.location(),
        version.hash
    );
    Ok(())
}
