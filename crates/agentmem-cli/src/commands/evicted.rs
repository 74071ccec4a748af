//! `agentmem evicted`: read an evicted tool output, a page at a time.

use agentmem::files::evicted::read_evicted;

use super::Context;

pub fn run(
    ctx: &Context,
    id: &str,
    call_id: &str,
    offset: usize,
    limit: usize,
) -> anyhow::Result<()> {
    let session = ctx.store.read_session(&ctx.agent, &ctx.session_id(id)?)?;
    let page = read_evicted(&session.paths().evicted(), call_id, offset, limit)?;
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
