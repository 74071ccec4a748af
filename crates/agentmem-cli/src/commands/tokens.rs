//! `agentmem tokens`: count the tokens of stdin.

use std::io::Read;

use agentmem::Encoding;

use super::Context;

pub fn run(ctx: &Context, encoding: Option<&str>, model: Option<&str>) -> anyhow::Result<()> {
    let encoding = match (encoding, model) {
        (Some(name), _) => name.parse::<Encoding>().map_err(anyhow::Error::msg)?,
        (None, Some(model)) => Encoding::for_model(model),
        (None, None) => Encoding::default(),
    };
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let tokens = encoding.tokenizer().count(&text);
    if ctx.json {
        crate::output::print_json(&serde_json::json!({
            "tokens": tokens,
            "encoding": encoding.name(),
            "bytes": text.len(),
            "chars": text.chars().count(),
        }))
    } else {
        println!("{tokens}");
        Ok(())
    }
}
