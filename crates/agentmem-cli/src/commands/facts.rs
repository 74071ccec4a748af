//! `agentmem facts list|add|supersede|delete`: the agent's semantic facts.

use agentmem::base::event::format_ts;
use agentmem::files::records::{NewFact, Provenance, Trust};

use super::Context;
use crate::cli::FactsCommand;
use crate::output::{print_json, print_table};

pub fn run(ctx: &Context, command: FactsCommand) -> anyhow::Result<()> {
    let store =
        agentmem::memory::facts::FactStore::on(ctx.memory()?.clone(), &ctx.agent, ctx.redaction());
    let by_hand = || Provenance {
        extractor: "agentmem facts".into(),
        ..Provenance::default()
    };
    match command {
        FactsCommand::List { all } => {
            let facts = if all { store.all()? } else { store.current()? };
            if ctx.json {
                return print_json(&facts);
            }
            let rows: Vec<Vec<String>> = facts
                .iter()
                .map(|f| {
                    vec![
                        f.id.clone(),
                        f.fact.clone(),
                        format!("{:.2}", f.confidence),
                        format!("{:?}", f.trust).to_lowercase(),
                        f.superseded_by
                            .clone()
                            .map_or_else(|| format_ts(f.valid_from), |by| format!("→ {by}")),
                    ]
                })
                .collect();
            print_table(&["ID", "FACT", "CONFIDENCE", "FROM", "VALID"], &rows);
            Ok(())
        }
        FactsCommand::Add {
            text,
            tags,
            confidence,
        } => {
            let added = store.add(NewFact {
                fact: text,
                tags,
                confidence,
                salience: 0.7,
                provenance: by_hand(),
                trust: Trust::User,
            })?;
            print_json(&added)
        }
        FactsCommand::Supersede { id, text } => {
            println!("{}", store.supersede(&id, &text, by_hand())?);
            Ok(())
        }
        FactsCommand::Delete { id } => {
            store.delete(&id)?;
            eprintln!("agentmem: deleted fact {id}");
            Ok(())
        }
    }
}
