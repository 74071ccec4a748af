//! `agentmem evicted`: read an evicted tool output, a page at a time.

use agentmem::files::evicted::page_of;

use super::Context;

pub fn run(
    ctx: &Context,
    id: &str,
    call_id: &str,
    offset: usize,
    limit: usize,
) -> anyhow::Result<()> {
    let id = ctx.session_id(id)?;
    ctx.storage()?.session_meta(&ctx.agent, &id)?;
    let text = ctx.memory()?.read_evicted(&ctx.agent, &id, call_id)?;
    let page = page_of(&text, offset, limit);
    if ctx.json {
        return crate::output::print_json(&page);
    }
    print!("{}", page.text);
    if !page.text.ends_with('\n') && !page.text.is_empty() {
        println!();
    }
    eprintln!(
        "agentmem: lines {}–{} of {}{}",
        page.offset,
        page.offset + page.lines_returned,
        page.total_lines,
        if page.has_more {
            format!("; more with --offset {}", page.offset + page.lines_returned)
        } else {
            String::new()
        }
    );
    Ok(())
}
