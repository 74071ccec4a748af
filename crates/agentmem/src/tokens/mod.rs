//! Token accounting: tokenizers, message-level counting, model registry, budgets.
//!
//! Counting follows OpenAI's published rules for chat messages (a fixed
//! overhead per message and per reply), with exact BPE counts (o200k_base,
//! cl100k_base) for text. Other providers' tokenizers are not public; their
//! counts use o200k_base and are corrected by the calibration factor learned
//! from the usage they report.

pub mod budget;
pub(crate) mod count;
mod kept;
mod pretokenize;
pub mod registry;
pub(crate) mod tokenizer;

pub use count::TokenCounts;
pub use count::{count_message, count_tool_schemas};
pub use kept::KeptCounts;
pub use registry::{ModelInfo, ModelOverride, ModelRegistry, ModelSource};
pub use tokenizer::{Encoding, Tokenizer};
