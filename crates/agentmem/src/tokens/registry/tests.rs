use super::builtin::BUILTINS;
use super::names::{canonical, first_party, strip_date};
use super::table::{parse_row, table, Table};
use super::*;

fn lookup(name: &str) -> ModelInfo {
    ModelRegistry::builtin().lookup(name)
}

fn limits(name: &str) -> (u64, u64) {
    let info = lookup(name);
    (info.context_window, info.max_output_tokens)
}

#[test]
fn every_row_of_the_embedded_table_parses() {
    let mut rows = 0;
    for (n, line) in TABLE.lines().enumerate() {
        match parse_row(line) {
            Ok(Some(_)) => rows += 1,
            Ok(None) => assert!(
                n == 0 || line.trim().is_empty(),
                "comment past the header: {line}"
            ),
            Err(e) => panic!("line {}: {e}", n + 1),
        }
    }
    assert!(TABLE.starts_with("# Generated from models.dev"));
    assert!(rows > 1000, "{rows} rows");
    assert_eq!(table().entries.len(), rows + BUILTINS.len());
}

#[test]
fn parsing_the_table_is_fast() {
    let start = std::time::Instant::now();
    let parsed = Table::parse(TABLE);
    let elapsed = start.elapsed();
    println!("parsed {} entries in {elapsed:?}", parsed.entries.len());
    let start = std::time::Instant::now();
    for name in [
        "gpt-4.1",
        "claude-3-7-sonnet-20250219",
        "openrouter/anthropic/claude-sonnet-4",
        "nope-1",
    ] {
        std::hint::black_box(ModelRegistry::builtin().lookup(name));
    }
    println!("4 lookups in {:?}", start.elapsed());
}

#[test]
fn the_documented_examples() {
    assert_eq!(limits("gpt-4.1"), (1_047_576, 32_768));
    assert_eq!(limits("claude-3-7-sonnet-20250219"), (200_000, 64_000));
    assert_eq!(lookup("claude-3-7-sonnet-20250219").provider, "anthropic");
    assert_eq!(limits("gpt-5"), (400_000, 128_000));
    assert_eq!(limits("gemini-2.5-pro"), (1_048_576, 65_536));
    assert_eq!(limits("gemini-2.5-flash"), (1_048_576, 65_536));
    assert_eq!(limits("gemini-2.0-flash"), (1_048_576, 8_192));
    assert_eq!(limits("claude-opus-4-1"), (200_000, 32_000));
    assert_eq!(limits("o4-mini"), (200_000, 100_000));
}

#[test]
fn every_builtin_override_is_reachable_by_its_name() {
    for b in BUILTINS.iter() {
        let info = lookup(&b.model);
        assert_eq!(info.source, ModelSource::Override, "{}", b.model);
        assert_eq!(info.model, b.model);
        assert_eq!(info.provider, b.provider);
        for alias in &b.aliases {
            assert_eq!(lookup(alias).model, b.model, "{alias}");
        }
    }
}

#[test]
fn provider_prefixes_and_case() {
    for name in [
        "openai:gpt-4.1",
        "openai/gpt-4.1",
        "OpenAI/GPT-4.1",
        "  gpt-4.1  ",
        "openrouter/openai/gpt-4.1",
        "azure/gpt-4.1",
    ] {
        assert_eq!(limits(name), (1_047_576, 32_768), "{name}");
    }
    let claude = lookup("anthropic/claude-3-7-sonnet-20250219");
    assert_eq!(
        (claude.provider.as_str(), claude.max_output_tokens),
        ("anthropic", 64_000)
    );
    // Dots for dashes, OpenRouter style.
    assert_eq!(
        lookup("anthropic/claude-3.7-sonnet").model,
        "claude-3-7-sonnet"
    );
    assert_eq!(lookup("claude-sonnet-4.5").model, "claude-sonnet-4-5");
    // The provider named first is the one asked; its entry wins.
    let routed = lookup("openrouter/anthropic/claude-sonnet-4");
    assert_eq!(
        (routed.provider.as_str(), routed.model.as_str()),
        ("openrouter", "anthropic/claude-sonnet-4")
    );
    let routed = lookup("openrouter:anthropic/claude-haiku-4.5");
    assert_eq!(
        (routed.provider.as_str(), routed.max_output_tokens),
        ("openrouter", 64_000)
    );
}

#[test]
fn bedrock_and_vertex_ids() {
    let sonnet = lookup("anthropic.claude-3-5-sonnet-20241022-v2:0");
    assert_eq!(
        (sonnet.provider.as_str(), sonnet.model.as_str()),
        ("anthropic", "claude-3-5-sonnet-20241022")
    );
    assert_eq!(
        (sonnet.context_window, sonnet.max_output_tokens),
        (200_000, 8_192)
    );
    let regional = lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    assert_eq!(regional.provider, "anthropic");
    assert_eq!(regional.max_output_tokens, 64_000);
    let on_bedrock = lookup("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    assert_eq!(on_bedrock.provider, "amazon-bedrock");
    assert_eq!(
        on_bedrock.model,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    );
    assert_eq!(limits("claude-3-7-sonnet@20250219"), (200_000, 64_000));
    assert_eq!(
        lookup("vertex_ai/claude-3-7-sonnet@20250219").provider,
        "google-vertex"
    );
}

#[test]
fn dated_names_and_their_families() {
    // Dated, not in the table: falls back to the undated model.
    let dated = lookup("gpt-4.1-2025-04-14");
    assert_eq!(
        (dated.provider.as_str(), dated.model.as_str()),
        ("openai", "gpt-4.1")
    );
    assert_eq!(lookup("gpt-4.1-mini-2025-04-14").model, "gpt-4.1-mini");
    assert_eq!(lookup("o3-2025-04-16").model, "o3");
    // Undated and -latest reach the dated entries and back.
    assert_eq!(limits("claude-3-7-sonnet"), (200_000, 64_000));
    assert_eq!(limits("claude-3-7-sonnet-latest"), (200_000, 64_000));
    assert_eq!(limits("claude-3-5-haiku-latest"), (200_000, 8_192));
    let opus3 = lookup("claude-3-opus");
    assert_eq!(
        (opus3.provider.as_str(), opus3.model.as_str()),
        ("anthropic", "claude-3-opus-20240229")
    );
    // An exact dated name beats its family: the 2507 Qwen is not the first one.
    assert_eq!(
        lookup("qwen/qwen3-235b-a22b-2507").model,
        "qwen/qwen3-235b-a22b-2507"
    );
    // A dated snapshot in the table keeps its own limits.
    let old = lookup("gpt-4o-2024-05-13");
    assert_eq!(
        (old.model.as_str(), old.max_output_tokens, old.source),
        ("gpt-4o-2024-05-13", 4_096, ModelSource::Registry)
    );
    assert_eq!(
        lookup("claude-3-5-sonnet-20240620").model,
        "claude-3-5-sonnet-20240620"
    );
    assert_eq!(lookup("claude-sonnet-4-20250514").max_output_tokens, 64_000);
}

#[test]
fn longest_prefix_at_a_dash_boundary() {
    assert_eq!(lookup("gpt-4.1-mini-x").model, "gpt-4.1-mini");
    assert_eq!(lookup("gpt-4.1-x").model, "gpt-4.1");
    assert_eq!(lookup("gpt-4.1-nano-experimental-7").model, "gpt-4.1-nano");
    assert_eq!(lookup("claude-opus-4-1-something").model, "claude-opus-4-1");
    // Never a bare family without a version.
    assert_eq!(lookup("claude-something").source, ModelSource::Unknown);
    assert_eq!(lookup("gpt-turbo-x").source, ModelSource::Unknown);
}

#[test]
fn first_party_providers_are_preferred() {
    // GitHub Copilot serves gpt-4.1 with a 128k window; OpenAI's is 1M.
    let gpt = lookup("gpt-4.1-nano");
    assert_eq!(
        (gpt.provider.as_str(), gpt.context_window),
        ("openai", 1_047_576)
    );
    assert_eq!(lookup("gpt-3.5-turbo").provider, "openai");
    assert_eq!(lookup("o1").provider, "openai");
    assert_eq!(lookup("claude-opus-4-5").provider, "anthropic");
    assert_eq!(lookup("gemini-2.5-flash-lite").provider, "google");
    assert_eq!(lookup("mistral-large-latest").provider, "mistral");
    assert_eq!(lookup("deepseek-chat").provider, "deepseek");
    assert_eq!(lookup("grok-4.3").provider, "xai");
    // Naming a re-hoster gets its entry.
    let copilot = lookup("github-copilot/gpt-4.1");
    assert_eq!(
        (copilot.provider.as_str(), copilot.context_window),
        ("github-copilot", 128_000)
    );
    // Absent from first parties: OpenRouter, then what most re-hosters say.
    let routed = lookup("gpt-4o-search-preview");
    assert!(routed.is_known());
    assert_eq!(routed.source, ModelSource::Registry);
}

#[test]
fn unknown_models_get_the_default_and_say_so() {
    let info = lookup("totally-made-up-model");
    assert_eq!(info.source, ModelSource::Unknown);
    assert!(!info.is_known());
    assert_eq!(info.context_window, DEFAULT_CONTEXT_WINDOW);
    assert_eq!(info.context_window, 200_000);
    assert_eq!(info.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
    assert_eq!(info.model, "totally-made-up-model");
    assert_eq!(info.cost_usd(1000, 0, 1000), None);
    let named = lookup("OpenAI/Some-Future-Model");
    assert_eq!(
        (named.provider.as_str(), named.model.as_str()),
        ("openai", "Some-Future-Model")
    );
    assert_eq!(named.source, ModelSource::Unknown);
    assert_eq!(lookup("").source, ModelSource::Unknown);
    assert_eq!(lookup("openai/").source, ModelSource::Unknown);
}

#[test]
fn configuration_overrides_win() {
    let registry = ModelRegistry::builtin().with_overrides(vec![
        ModelOverride {
            model: "gpt-4.1".into(),
            context_window: Some(500_000),
            ..Default::default()
        },
        ModelOverride {
            model: "my-local-llama".into(),
            context_window: Some(8_192),
            ..Default::default()
        },
        ModelOverride {
            model: "openrouter/anthropic/claude-sonnet-4".into(),
            context_window: Some(300_000),
            ..Default::default()
        },
        ModelOverride {
            model: "o3".into(),
            input_usd_per_mtok: Some(1.0),
            ..Default::default()
        },
    ]);
    let gpt = registry.lookup("openai/gpt-4.1-2025-04-14");
    assert_eq!(
        (gpt.context_window, gpt.max_output_tokens, gpt.source),
        (500_000, 32_768, ModelSource::Config)
    );
    assert_eq!(gpt.input_usd_per_mtok, Some(2.0));
    // Other models are untouched.
    assert_eq!(registry.lookup("gpt-4.1-mini").context_window, 1_047_576);
    // An unknown model made known; its output reserve is a quarter of the window.
    let llama = registry.lookup("My-Local-Llama");
    assert_eq!(
        (llama.context_window, llama.max_output_tokens, llama.source),
        (8_192, 2_048, ModelSource::Config)
    );
    // Scoped to the provider it names.
    assert_eq!(
        registry
            .lookup("openrouter/anthropic/claude-sonnet-4")
            .context_window,
        300_000
    );
    assert_eq!(registry.lookup("claude-sonnet-4").context_window, 200_000);
    // A price-only entry leaves the window's source alone.
    let o3 = registry.lookup("o3");
    assert_eq!(
        (o3.input_usd_per_mtok, o3.source),
        (Some(1.0), ModelSource::Override)
    );
    // The last of equal entries wins.
    let twice = ModelRegistry::builtin().with_overrides(vec![
        ModelOverride {
            model: "x-1".into(),
            context_window: Some(1),
            ..Default::default()
        },
        ModelOverride {
            model: "x-1".into(),
            context_window: Some(2),
            ..Default::default()
        },
    ]);
    assert_eq!(twice.lookup("x-1").context_window, 2);
    // Listed first.
    assert_eq!(
        registry.known_models().next().map(|m| m.context_window),
        Some(500_000)
    );
}

#[test]
fn overrides_deserialize_from_toml() {
    #[derive(Deserialize)]
    struct Config {
        models: Vec<ModelOverride>,
    }
    let config: Config = toml::from_str(
        "[[models]]\nmodel = \"gpt-4o\"\ncontext_window = 64000\ncache_read_usd_per_mtok = 1.0\n",
    )
    .unwrap();
    assert_eq!(config.models[0].context_window, Some(64_000));
    assert_eq!(config.models[0].max_output_tokens, None);
    assert!(toml::from_str::<Config>("[[models]]\nmodel = \"x\"\ncontext = 1\n").is_err());
}

#[test]
fn cost_computation() {
    let gpt = lookup("gpt-4.1");
    let cost = gpt.cost_usd(1_000_000, 200_000, 100_000).unwrap();
    assert!((cost - 2.5).abs() < 1e-9, "{cost}");
    // Cached tokens beyond the prompt are capped at the prompt.
    let all_cached = gpt.cost_usd(1_000, 5_000, 0).unwrap();
    assert!((all_cached - 0.0005).abs() < 1e-12, "{all_cached}");
    // Unknown cache-read price: charged as input.
    let mut no_cache = gpt.clone();
    no_cache.cache_read_usd_per_mtok = None;
    assert!((no_cache.cost_usd(1_000_000, 1_000_000, 0).unwrap() - 2.0).abs() < 1e-9);
    let sonnet = lookup("claude-3-7-sonnet");
    assert!((sonnet.cost_usd(10_000, 0, 1_000).unwrap() - 0.045).abs() < 1e-12);
}

#[test]
fn known_models_lists_overrides_and_registry() {
    let registry = ModelRegistry::builtin();
    let all: Vec<&ModelInfo> = registry.known_models().collect();
    assert_eq!(all.len(), table().entries.len());
    assert!(all
        .iter()
        .any(|m| m.model == "gpt-4.1" && m.source == ModelSource::Override));
    assert!(all
        .iter()
        .any(|m| m.provider == "anthropic" && m.model == "claude-3-7-sonnet-20250219"));
    assert!(all
        .iter()
        .all(|m| m.context_window > 0 && m.max_output_tokens > 0 || m.context_window < 4));
}

#[test]
fn name_helpers() {
    assert_eq!(
        strip_date("claude-3-7-sonnet-20250219"),
        "claude-3-7-sonnet"
    );
    assert_eq!(strip_date("gpt-4.1-2025-04-14"), "gpt-4.1");
    assert_eq!(
        strip_date("gemini-2.5-pro-preview-05-06"),
        "gemini-2.5-pro-preview"
    );
    assert_eq!(
        strip_date("gemini-2.5-flash-preview-09-2025"),
        "gemini-2.5-flash-preview"
    );
    assert_eq!(strip_date("deepseek-r1-0528"), "deepseek-r1");
    assert_eq!(strip_date("mistral-large-2411"), "mistral-large");
    assert_eq!(strip_date("claude-opus-4-5"), "claude-opus-4-5");
    assert_eq!(strip_date("gpt-4o"), "gpt-4o");
    assert_eq!(strip_date("20250219"), "20250219");
    assert_eq!(
        canonical("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        "claude-sonnet-4-5-20250929"
    );
    assert_eq!(canonical("anthropic.claude-opus-4-6-v1"), "claude-opus-4-6");
    assert_eq!(canonical("openai.gpt-oss-120b-1:0"), "gpt-oss-120b");
    assert_eq!(canonical("claude-opus-4-6@default"), "claude-opus-4-6");
    assert_eq!(
        canonical("~anthropic/claude-sonnet-latest"),
        "claude-sonnet-latest"
    );
    assert_eq!(canonical("nemotron-nano-12b-v2"), "nemotron-nano-12b-v2");
    assert_eq!(first_party("o4-mini"), &["openai"]);
    assert_eq!(first_party("o3"), &["openai"]);
    assert!(first_party("omni-moderation").is_empty());
    assert_eq!(first_party("claude-3-7-sonnet"), &["anthropic"]);
}
