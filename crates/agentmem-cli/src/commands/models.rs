//! `agentmem models`: what the registry knows about models.

use agentmem::tokens::registry::ModelInfo;

use super::Context;
use crate::output::{print_json, print_table};

pub fn run(ctx: &Context, names: &[String]) -> anyhow::Result<()> {
    let registry = ctx.store.registry();
    let models: Vec<ModelInfo> = if names.is_empty() {
        registry.known_models().cloned().collect()
    } else {
        names.iter().map(|name| registry.lookup(name)).collect()
    };
    if ctx.json {
        return print_json(&models);
    }
    let price = |p: Option<f64>| p.map_or_else(|| "-".to_owned(), |p| format!("{p}"));
    let rows: Vec<Vec<String>> = models
        .iter()
        .map(|m| {
            vec![
                m.provider.clone(),
                m.model.clone(),
                m.context_window.to_string(),
                m.max_output_tokens.to_string(),
                price(m.input_usd_per_mtok),
                price(m.output_usd_per_mtok),
                format!("{:?}", m.source).to_lowercase(),
            ]
        })
        .collect();
    print_table(
        &[
            "PROVIDER",
            "MODEL",
            "CONTEXT",
            "MAX OUTPUT",
            "$/M IN",
            "$/M OUT",
            "SOURCE",
        ],
        &rows,
    );
    Ok(())
}
