//! A sentence-transformers encoder's forward pass, as it runs for
//! embedding: token and position embeddings, then the layers
//! (self-attention, feed-forward, each with a residual and a layer norm),
//! then the pooled and normalized sentence vector. Two families share it:
//! BERT (MiniLM, BGE) and MPNet (all-mpnet-base-v2). Matrix products go
//! through `matrixmultiply`'s SGEMM; everything else is plain loops.

use std::collections::HashMap;

use serde_json::Value;

use crate::EmbedError;

/// Which encoder the weights are: the families name their tensors and
/// place their tokens differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// BERT and its distillations (MiniLM, BGE): positions counted from 0,
    /// and a segment embedding added to every token.
    Bert,
    /// MPNet: positions counted from `pad_token_id + 1`, as RoBERTa counts
    /// them, no segments, and a learned bias on every attention score for
    /// the bucket of its tokens' relative distance.
    MPNet,
}

impl Family {
    /// The prefix some checkpoints put before every tensor name.
    fn prefix(self) -> &'static str {
        match self {
            Family::Bert => "bert.",
            Family::MPNet => "mpnet.",
        }
    }
}

/// The shape of the encoder, from the model's `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub family: Family,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    /// The position embedding of a text's first token.
    pub first_position: usize,
    /// Buckets of relative distance, for MPNet's attention bias.
    pub relative_buckets: usize,
    pub layer_norm_eps: f32,
}

impl Shape {
    /// Reads the fields of a BERT or MPNet `config.json` the forward pass
    /// needs (a config without `model_type` is BERT's).
    pub fn from_config(config: &Value) -> Result<Shape, EmbedError> {
        let number = |key: &str| {
            config
                .get(key)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or_else(|| EmbedError::Model(format!("config.json has no number {key:?}")))
        };
        if let Some(act) = config.get("hidden_act").and_then(Value::as_str) {
            if act != "gelu" {
                return Err(EmbedError::Model(format!(
                    "hidden_act {act:?} is not supported (only gelu)"
                )));
            }
        }
        let family = match config.get("model_type").and_then(Value::as_str) {
            None | Some("bert") => Family::Bert,
            Some("mpnet") => Family::MPNet,
            Some(other) => {
                return Err(EmbedError::Model(format!(
                    "model_type {other:?} is not supported (bert or mpnet)"
                )))
            }
        };
        let (first_position, relative_buckets) = match family {
            Family::Bert => (0, 0),
            Family::MPNet => (
                number("pad_token_id")? + 1,
                number("relative_attention_num_buckets")?,
            ),
        };
        let shape = Shape {
            family,
            hidden: number("hidden_size")?,
            layers: number("num_hidden_layers")?,
            heads: number("num_attention_heads")?,
            intermediate: number("intermediate_size")?,
            max_positions: number("max_position_embeddings")?,
            first_position,
            relative_buckets,
            layer_norm_eps: config
                .get("layer_norm_eps")
                .and_then(Value::as_f64)
                .unwrap_or(1e-12) as f32,
        };
        if shape.heads == 0 || !shape.hidden.is_multiple_of(shape.heads) {
            return Err(EmbedError::Model(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                shape.hidden, shape.heads
            )));
        }
        if shape.family == Family::MPNet && shape.relative_buckets < 4 {
            return Err(EmbedError::Model(format!(
                "relative_attention_num_buckets {} is too few (at least 4)",
                shape.relative_buckets
            )));
        }
        if shape.first_position >= shape.max_positions {
            return Err(EmbedError::Model(format!(
                "pad_token_id leaves no position embedding for tokens (max_position_embeddings {})",
                shape.max_positions
            )));
        }
        Ok(shape)
    }
}

/// How token vectors become the sentence's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the tokens' vectors (all-MiniLM-L6-v2 and most
    /// sentence-transformers models).
    Mean,
    /// The first token's (`[CLS]`) vector (the BGE family).
    Cls,
}

/// A linear layer: `weight` is `[out, in]`, as PyTorch stores it.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// MPNet's learned attention bias: one value per head for each bucket
/// of relative distance.
struct RelativeBias {
    /// `[buckets, heads]`.
    weight: Vec<f32>,
    buckets: usize,
}

/// The encoder's weights.
pub struct Encoder {
    shape: Shape,
    word_embeddings: Vec<f32>,
    vocab_size: usize,
    position_embeddings: Vec<f32>,
    /// Added to every token: BERT's first segment; zeros for MPNet.
    segment_embedding: Vec<f32>,
    relative_bias: Option<RelativeBias>,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// Tensors by name: `(dims, values)`.
pub type Tensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// The farthest relative distance MPNet's buckets tell apart.
const RELATIVE_MAX_DISTANCE: usize = 128;

impl Encoder {
    /// The encoder of `shape` from `tensors`. Names may carry the family's
    /// prefix (`bert.`, `mpnet.`), as some checkpoints do.
    pub fn from_tensors(shape: Shape, tensors: Tensors) -> Result<Encoder, EmbedError> {
        let h = shape.hidden;
        let mut t = Named {
            tensors,
            prefix: shape.family.prefix(),
        };
        let vocab_size = t
            .dims_of("embeddings.word_embeddings.weight")
            .and_then(|dims| dims.first().copied())
            .filter(|rows| *rows > 0)
            .ok_or_else(|| EmbedError::Model("the weights have no word embeddings".into()))?;
        let mut layers = Vec::with_capacity(shape.layers);
        for l in 0..shape.layers {
            layers.push(t.layer(&shape, &format!("encoder.layer.{l}"))?);
        }
        let segment_embedding = match shape.family {
            Family::Bert => t.first_segment(h)?,
            Family::MPNet => vec![0.0; h],
        };
        let relative_bias = match shape.family {
            Family::Bert => None,
            Family::MPNet => Some(RelativeBias {
                weight: t.take(
                    "encoder.relative_attention_bias.weight",
                    &[shape.relative_buckets, shape.heads],
                )?,
                buckets: shape.relative_buckets,
            }),
        };
        Ok(Encoder {
            word_embeddings: t.take("embeddings.word_embeddings.weight", &[vocab_size, h])?,
            vocab_size,
            position_embeddings: t.take(
                "embeddings.position_embeddings.weight",
                &[shape.max_positions, h],
            )?,
            segment_embedding,
            relative_bias,
            embeddings_norm: t.norm("embeddings.LayerNorm", h)?,
            layers,
            shape,
        })
    }

    /// The most tokens one text may have, its first and last included.
    pub fn max_tokens(&self) -> usize {
        self.shape.max_positions - self.shape.first_position
    }

    /// The unit-length sentence vector of `ids` (framed by the model's
    /// first and last tokens, `[CLS]` … `[SEP]` or `<s>` … `</s>`).
    pub fn embed(&self, ids: &[u32], pooling: Pooling) -> Vec<f32> {
        self.embed_batch(&[ids], pooling).remove(0)
    }

    /// The sentence vectors of several inputs at once: their tokens are
    /// stacked, so every linear layer is one large matrix product instead
    /// of one small one per text (attention stays within each text).
    pub fn embed_batch(&self, inputs: &[&[u32]], pooling: Pooling) -> Vec<Vec<f32>> {
        let h = self.shape.hidden;
        let mut spans = Vec::with_capacity(inputs.len());
        let mut rows = 0;
        for ids in inputs {
            let n = ids.len().min(self.max_tokens());
            spans.push((rows, n));
            rows += n;
        }
        let mut x = vec![0f32; rows * h];
        for (ids, &(start, n)) in inputs.iter().zip(&spans) {
            for (t, id) in ids.iter().take(n).enumerate() {
                let id = (*id as usize).min(self.vocab_size - 1);
                let position = self.shape.first_position + t;
                let row = &mut x[(start + t) * h..(start + t + 1) * h];
                let word = &self.word_embeddings[id * h..(id + 1) * h];
                let position = &self.position_embeddings[position * h..(position + 1) * h];
                for (i, value) in row.iter_mut().enumerate() {
                    *value = word[i] + position[i] + self.segment_embedding[i];
                }
            }
        }
        layer_norm(&mut x, h, &self.embeddings_norm, self.shape.layer_norm_eps);
        // Every layer shares one grid of relative-distance buckets per text.
        let grids: Vec<Vec<usize>> = match &self.relative_bias {
            Some(bias) => spans
                .iter()
                .map(|&(_, n)| bucket_grid(n, bias.buckets))
                .collect(),
            None => Vec::new(),
        };
        for layer in &self.layers {
            self.encode(&mut x, rows, &spans, &grids, layer);
        }
        spans
            .iter()
            .map(|&(start, n)| pool(&x[start * h..(start + n) * h], h, pooling))
            .collect()
    }

    /// One encoder layer over the `rows` token vectors in `x`, whose texts
    /// are the `(first row, rows)` spans, with their bucket `grids` (MPNet).
    fn encode(
        &self,
        x: &mut [f32],
        rows: usize,
        spans: &[(usize, usize)],
        grids: &[Vec<usize>],
        layer: &Layer,
    ) {
        let h = self.shape.hidden;
        let heads = self.shape.heads;
        let head = h / heads;
        let q = layer.query.apply(x, rows);
        let k = layer.key.apply(x, rows);
        let v = layer.value.apply(x, rows);
        let mut context = vec![0f32; rows * h];
        let scale = 1.0 / (head as f32).sqrt();
        for (text, &(start, n)) in spans.iter().enumerate() {
            let mut scores = vec![0f32; n * n];
            for hd in 0..heads {
                let offset = start * h + hd * head;
                // scores = q_h · k_hᵀ, each an n × head view with row stride h.
                gemm(
                    n,
                    head,
                    n,
                    scale,
                    (&q[offset..], h, 1),
                    (&k[offset..], 1, h),
                    (&mut scores, n, 1),
                );
                if let (Some(bias), Some(buckets)) = (&self.relative_bias, grids.get(text)) {
                    for (score, bucket) in scores.iter_mut().zip(buckets) {
                        *score += bias.weight[bucket * heads + hd];
                    }
                }
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                gemm(
                    n,
                    n,
                    head,
                    1.0,
                    (&scores, n, 1),
                    (&v[offset..], h, 1),
                    (&mut context[offset..], h, 1),
                );
            }
        }
        let attended = layer.attention_out.apply(&context, rows);
        add_in_place(x, &attended);
        layer_norm(x, h, &layer.attention_norm, self.shape.layer_norm_eps);
        let mut inner = layer.intermediate.apply(x, rows);
        inner.iter_mut().for_each(|v| *v = gelu(*v));
        let out = layer.output.apply(&inner, rows);
        add_in_place(x, &out);
        layer_norm(x, h, &layer.output_norm, self.shape.layer_norm_eps);
    }
}

/// The relative-distance bucket of every (query, key) pair of an
/// `n`-token text, row by row.
fn bucket_grid(n: usize, buckets: usize) -> Vec<usize> {
    (0..n)
        .flat_map(|i| (0..n).map(move |j| relative_bucket(j as i64 - i as i64, buckets)))
        .collect()
}

/// MPNet's bucket for a key `relative` tokens after the query: half the
/// buckets for each direction, exact up to a quarter of them, then
/// logarithmic up to [`RELATIVE_MAX_DISTANCE`]. In f32 with an f64
/// scale, as PyTorch computes it, so the boundaries fall where the model
/// learned them.
fn relative_bucket(relative: i64, buckets: usize) -> usize {
    let half = buckets / 2;
    let behind = -relative;
    let side = if behind < 0 { half } else { 0 };
    let distance = behind.unsigned_abs() as usize;
    let exact = half / 2;
    if distance < exact {
        return side + distance;
    }
    let scale = (RELATIVE_MAX_DISTANCE as f64 / exact as f64).ln() as f32;
    let log = (distance as f32 / exact as f32).ln() / scale * (half - exact) as f32;
    side + (exact + log as usize).min(half - 1)
}

/// The checkpoint's tensors, taken by name as the encoder is built.
struct Named {
    tensors: Tensors,
    prefix: &'static str,
}

impl Named {
    fn dims_of(&self, name: &str) -> Option<Vec<usize>> {
        self.tensors
            .get(name)
            .or_else(|| self.tensors.get(&format!("{}{name}", self.prefix)))
            .map(|(dims, _)| dims.clone())
    }

    /// Removes tensor `name`, holding it to `dims`.
    fn take(&mut self, name: &str, dims: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let prefixed = format!("{}{name}", self.prefix);
        let (found, values) = self
            .tensors
            .remove(name)
            .or_else(|| self.tensors.remove(&prefixed))
            .ok_or_else(|| EmbedError::Model(format!("the weights have no tensor {name}")))?;
        if found != dims {
            return Err(EmbedError::Model(format!(
                "tensor {name} is {found:?}, expected {dims:?}"
            )));
        }
        Ok(values)
    }

    fn linear(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, EmbedError> {
        Ok(Linear {
            weight: self.take(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.take(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&mut self, name: &str, h: usize) -> Result<LayerNorm, EmbedError> {
        Ok(LayerNorm {
            weight: self.take(&format!("{name}.weight"), &[h])?,
            bias: self.take(&format!("{name}.bias"), &[h])?,
        })
    }

    /// Layer `p`, whose attention tensors each family names its own way.
    fn layer(&mut self, shape: &Shape, p: &str) -> Result<Layer, EmbedError> {
        let h = shape.hidden;
        let (query, key, value, out, out_norm) = match shape.family {
            Family::Bert => (
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "attention.output.LayerNorm",
            ),
            Family::MPNet => (
                "attention.attn.q",
                "attention.attn.k",
                "attention.attn.v",
                "attention.attn.o",
                "attention.LayerNorm",
            ),
        };
        Ok(Layer {
            query: self.linear(&format!("{p}.{query}"), h, h)?,
            key: self.linear(&format!("{p}.{key}"), h, h)?,
            value: self.linear(&format!("{p}.{value}"), h, h)?,
            attention_out: self.linear(&format!("{p}.{out}"), h, h)?,
            attention_norm: self.norm(&format!("{p}.{out_norm}"), h)?,
            intermediate: self.linear(&format!("{p}.intermediate.dense"), h, shape.intermediate)?,
            output: self.linear(&format!("{p}.output.dense"), shape.intermediate, h)?,
            output_norm: self.norm(&format!("{p}.output.LayerNorm"), h)?,
        })
    }

    /// BERT's first segment embedding, which every token of one text gets.
    fn first_segment(&mut self, h: usize) -> Result<Vec<f32>, EmbedError> {
        let name = "embeddings.token_type_embeddings.weight";
        let dims = self
            .dims_of(name)
            .ok_or_else(|| EmbedError::Model("the weights have no token type embeddings".into()))?;
        let segments = self.take(name, &dims)?;
        segments.get(..h).map(<[f32]>::to_vec).ok_or_else(|| {
            EmbedError::Model("token type embeddings are shorter than one row".into())
        })
    }
}

impl Linear {
    /// `x · weightᵀ + bias` for `n` rows of `x`.
    fn apply(&self, x: &[f32], n: usize) -> Vec<f32> {
        let mut y = Vec::with_capacity(n * self.outputs);
        for _ in 0..n {
            y.extend_from_slice(&self.bias);
        }
        // β = 1 adds the product to the bias rows already there.
        gemm_into(
            n,
            self.inputs,
            self.outputs,
            1.0,
            (x, self.inputs, 1),
            (&self.weight, 1, self.inputs),
            1.0,
            (&mut y, self.outputs, 1),
        );
        y
    }
}

/// `c = α·a·b` for an `m × k` view `a` and a `k × n` view `b`, each given
/// with its row and column strides.
fn gemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: (&[f32], usize, usize),
    b: (&[f32], usize, usize),
    c: (&mut [f32], usize, usize),
) {
    gemm_into(m, k, n, alpha, a, b, 0.0, c);
}

#[allow(clippy::too_many_arguments)]
#[allow(unsafe_code)]
fn gemm_into(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    (a, rsa, csa): (&[f32], usize, usize),
    (b, rsb, csb): (&[f32], usize, usize),
    beta: f32,
    (c, rsc, csc): (&mut [f32], usize, usize),
) {
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| {
        (rows.saturating_sub(1)) * rs + (cols.saturating_sub(1)) * cs
    };
    // The views must lie inside their slices: SGEMM reads and writes
    // through raw pointers.
    assert!(m == 0 || k == 0 || last(m, k, rsa, csa) < a.len());
    assert!(k == 0 || n == 0 || last(k, n, rsb, csb) < b.len());
    assert!(m == 0 || n == 0 || last(m, n, rsc, csc) < c.len());
    // SAFETY: the asserts above keep every element SGEMM touches in bounds,
    // and `c` is borrowed mutably, so it aliases neither `a` nor `b`.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            beta,
            c.as_mut_ptr(),
            rsc as isize,
            csc as isize,
        );
    }
}

/// One text's unit-length vector from its `n × h` token vectors (zeros
/// for no tokens).
fn pool(x: &[f32], h: usize, pooling: Pooling) -> Vec<f32> {
    let n = x.len() / h;
    if n == 0 {
        return vec![0.0; h];
    }
    let mut pooled = match pooling {
        Pooling::Cls => x[..h].to_vec(),
        Pooling::Mean => (0..h)
            .map(|i| (0..n).map(|t| x[t * h + i]).sum::<f32>() / n as f32)
            .collect(),
    };
    let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    pooled.iter_mut().for_each(|v| *v /= norm);
    pooled
}

fn add_in_place(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

fn layer_norm(x: &mut [f32], h: usize, norm: &LayerNorm, eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((value, weight), bias) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *value = (*value - mean) * inv * weight + bias;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// BERT's exact GELU, `x·Φ(x)`, with erf from Abramowitz and Stegun
/// 7.1.26 (error below 1.5e-7).
fn gelu(x: f32) -> f32 {
    let z = x.abs() / std::f32::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_72 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(x);
    0.5 * x * (1.0 + erf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_known_values() {
        // x·Φ(x) at a few points.
        for (x, expected) in [
            (0.0, 0.0),
            (1.0, 0.841_344_7),
            (-1.0, -0.158_655_3),
            (2.5, 2.484_473),
        ] {
            assert!((gelu(x) - expected).abs() < 1e-5, "gelu({x}) = {}", gelu(x));
        }
    }

    #[test]
    fn pooling_gives_unit_vectors_and_zeros_for_no_tokens() {
        let x = [2.0, 0.0, 4.0, 8.0];
        assert_eq!(pool(&x, 2, Pooling::Cls), vec![1.0, 0.0]);
        assert_eq!(pool(&x, 2, Pooling::Mean), vec![0.6, 0.8]);
        assert_eq!(pool(&[], 2, Pooling::Mean), vec![0.0, 0.0]);
    }

    #[test]
    fn relative_buckets_are_exact_near_and_logarithmic_far_on_each_side() {
        // Keys before the query (negative) take the first half of the
        // buckets, keys after it the second.
        for (relative, bucket) in [
            (0, 0),
            (-1, 1),
            (-7, 7),
            (-8, 8),
            (-16, 10),
            (-32, 12),
            (-127, 15),
            (-500, 15),
            (1, 17),
            (16, 26),
            (500, 31),
        ] {
            assert_eq!(relative_bucket(relative, 32), bucket, "distance {relative}");
        }
    }

    #[test]
    fn gemm_multiplies_strided_views() {
        // [[1, 2], [3, 4]] · [[5, 6], [7, 8]]ᵀ (b given transposed by its strides).
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let mut c = [0.0; 4];
        gemm(2, 2, 2, 1.0, (&a, 2, 1), (&b, 1, 2), (&mut c, 2, 1));
        assert_eq!(c, [17.0, 23.0, 39.0, 53.0]);
    }
}
