//! Embeddings over the OpenAI protocol (`POST {base}/embeddings`), which
//! OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio and Hugging Face's
//! text-embeddings-inference all speak: the engine's [`Embedder`] for
//! recall's vector score.

use agentmem::Embedder;
use serde_json::{json, Value};

use crate::client::Client;

/// An [`Embedder`] that asks an embeddings endpoint.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    client: Client,
    model: String,
}

impl OpenAiEmbedder {
    /// Embeds with `model` through `client` (an OpenAI-compatible endpoint).
    pub fn new(client: Client, model: &str) -> OpenAiEmbedder {
        OpenAiEmbedder {
            client,
            model: model.to_owned(),
        }
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        let fail = |message: String| agentmem::Error::Embedder {
            model: self.model.clone(),
            message,
        };
        let answer = self
            .client
            .post_json("embeddings", &json!({"model": self.model, "input": texts}))
            .map_err(|e| fail(e.to_string()))?;
        vectors_of(&answer, texts.len()).map_err(fail)
    }
}

/// The vectors of an embeddings answer, put in input order by their `index`.
fn vectors_of(answer: &Value, count: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or("the answer has no \"data\" array")?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(position, |i| i as usize);
        let embedding = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("item {position} has no \"embedding\" array of numbers"))?;
        let vector = embedding
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| format!("item {position}'s embedding holds a non-number"))?;
        *vectors.get_mut(index).ok_or_else(|| {
            format!("item {position} has index {index}, beyond the {count} inputs")
        })? = Some(vector);
    }
    vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("no embedding for input {i}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_put_in_input_order_and_gaps_are_errors() {
        let answer = json!({"data": [
            {"index": 1, "embedding": [0.5, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]});
        assert_eq!(
            vectors_of(&answer, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.5, 1.0]]
        );
        assert_eq!(
            vectors_of(&answer, 3).unwrap_err(),
            "no embedding for input 2"
        );
        assert!(vectors_of(&json!({"error": "x"}), 1).is_err());
    }
}
