//! agentmem's own table of the models users meet most, kept as data in
//! `data/models.toml` and read once, on the first lookup.

use std::sync::LazyLock;

use serde::Deserialize;

/// One entry of agentmem's own table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Builtin {
    pub(super) provider: String,
    pub(super) model: String,
    /// Other names of the same model that the name rules do not derive.
    #[serde(default)]
    pub(super) aliases: Vec<String>,
    pub(super) context_window: u64,
    pub(super) max_output_tokens: u64,
    /// USD per million tokens: input, output, cache read.
    pub(super) prices: (f64, f64, f64),
}

/// The file's layout: a list of `[[model]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinFile {
    model: Vec<Builtin>,
}

/// The models users meet most, with the limits their providers document for
/// the standard API (see the file's header).
const MODELS_TOML: &str = include_str!("../../../data/models.toml");

/// agentmem's table, in the file's order.
pub(super) static BUILTINS: LazyLock<Vec<Builtin>> = LazyLock::new(|| {
    parse(MODELS_TOML).expect("data/models.toml parses (a unit test checks every entry)")
});

fn parse(text: &str) -> Result<Vec<Builtin>, toml::de::Error> {
    toml::from_str::<BuiltinFile>(text).map(|file| file.model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_table_parses_and_every_entry_is_valid() {
        let builtins = parse(MODELS_TOML).unwrap();
        assert!(builtins.len() >= 20, "{} entries", builtins.len());
        let mut seen = std::collections::HashSet::new();
        for b in &builtins {
            let name = format!("{}/{}", b.provider, b.model);
            assert!(seen.insert(name.clone()), "{name} is listed twice");
            for part in [&b.provider, &b.model].into_iter().chain(&b.aliases) {
                assert!(!part.is_empty() && part.trim() == part, "{name}: {part:?}");
                assert_eq!(*part, part.to_ascii_lowercase(), "{name}");
            }
            assert!(b.max_output_tokens > 0, "{name}");
            assert!(b.max_output_tokens <= b.context_window, "{name}");
            let (input, output, cache_read) = b.prices;
            for price in [input, output, cache_read] {
                assert!(price.is_finite() && price >= 0.0, "{name}: {price}");
            }
            assert!(
                cache_read <= input && input <= output,
                "{name}: {:?}",
                b.prices
            );
        }
        assert_eq!(builtins.len(), BUILTINS.len());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let typo = "[[model]]\nprovider = \"x\"\nmodel = \"y\"\ncontext_window = 1\n\
                    max_output_tokens = 1\nprices = [0.0, 0.0, 0.0]\ncontext = 2\n";
        assert!(parse(typo).is_err());
    }
}
