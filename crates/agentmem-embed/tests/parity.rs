//! The forward pass against an independent one: a tiny BERT and a tiny
//! MPNet of random weights (`tests/tiny-bert`, `tests/tiny-mpnet`, written
//! by `make_tiny_models.py`), whose expected token ids come from Hugging
//! Face's `tokenizers` and whose expected vectors come from numpy.

use std::path::{Path, PathBuf};

use agentmem::Embedder;
use agentmem_embed::{EmbedError, LocalEmbedder};
use serde_json::Value;

fn tiny(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/tiny-{family}"))
}

fn tiny_bert() -> PathBuf {
    tiny("bert")
}

#[test]
fn bert_token_ids_and_vectors_match_the_reference() {
    assert_matches_reference(&tiny_bert());
}

/// MPNet frames texts with `<s>` … `</s>`, counts positions from 2 and
/// biases attention by relative distance: the 52-token text reaches the
/// logarithmic buckets.
#[test]
fn mpnet_token_ids_and_vectors_match_the_reference() {
    assert_matches_reference(&tiny("mpnet"));
}

fn assert_matches_reference(model: &Path) {
    let embedder = LocalEmbedder::open(model, "tiny").unwrap();
    let expected: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(model.join("expected.json")).unwrap())
            .unwrap();
    let texts: Vec<&str> = expected
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let vectors = embedder.embed(&texts).unwrap();
    for (case, vector) in expected.iter().zip(&vectors) {
        let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        assert_eq!(
            embedder.token_ids(case["text"].as_str().unwrap()),
            ids,
            "{case}"
        );
        let reference: Vec<f32> = serde_json::from_value(case["vector"].clone()).unwrap();
        let worst = vector
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-5, "{}: off by {worst}", case["text"]);
    }
    assert_eq!(
        embedder.embed(&texts).unwrap(),
        vectors,
        "the same from the cache"
    );
    assert_eq!(embedder.model(), "tiny");
}

#[test]
fn a_folder_that_is_not_a_model_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let error = LocalEmbedder::open(empty.path(), "x").unwrap_err();
    assert!(matches!(error, EmbedError::Io { .. }));
    assert!(error.to_string().contains("config.json"), "{error}");

    let other = tempfile::tempdir().unwrap();
    for file in ["vocab.txt", "model.safetensors"] {
        std::fs::copy(tiny_bert().join(file), other.path().join(file)).unwrap();
    }
    let config = std::fs::read_to_string(tiny_bert().join("config.json")).unwrap();
    std::fs::write(
        other.path().join("config.json"),
        config.replace("\"gelu\"", "\"relu\""),
    )
    .unwrap();
    let error = LocalEmbedder::open(other.path(), "x").unwrap_err();
    assert!(error.to_string().contains("relu"), "{error}");

    let mpnet = tiny("mpnet");
    let broken = tempfile::tempdir().unwrap();
    for file in ["vocab.txt", "model.safetensors", "special_tokens_map.json"] {
        std::fs::copy(mpnet.join(file), broken.path().join(file)).unwrap();
    }
    let config = std::fs::read_to_string(mpnet.join("config.json")).unwrap();
    for (from, to, named) in [
        ("\"mpnet\"", "\"roberta\"", "roberta"),
        (
            "\"relative_attention_num_buckets\": 32",
            "\"relative_attention_num_buckets\": 0",
            "relative_attention_num_buckets",
        ),
    ] {
        assert!(config.contains(from), "{config}");
        std::fs::write(broken.path().join("config.json"), config.replace(from, to)).unwrap();
        let error = LocalEmbedder::open(broken.path(), "x").unwrap_err();
        assert!(error.to_string().contains(named), "{error}");
    }
}

#[test]
fn a_model_opened_on_first_use_reads_nothing_until_asked() {
    let lazy = agentmem_embed::OnFirstUse::new(&tiny_bert(), "tiny");
    let eager = LocalEmbedder::open(&tiny_bert(), "tiny").unwrap();
    assert_eq!(lazy.model(), "tiny");
    assert_eq!(
        lazy.embed(&["Undoable?"]).unwrap(),
        eager.embed(&["Undoable?"]).unwrap()
    );

    let missing = agentmem_embed::OnFirstUse::new(Path::new("/nonexistent/model"), "gone");
    let error = missing.embed(&["hello"]).unwrap_err();
    assert!(
        matches!(&error, agentmem::Error::Embedder { model, message }
            if model == "gone" && message.contains("config.json")),
        "{error}"
    );
}
