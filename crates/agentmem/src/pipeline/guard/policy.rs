//! What the guard is told: the truncation cap, the eviction threshold and
//! their defaults, and what it decides for one output ([`Guarded`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The default cap on a tool output the model sees, in tokens, before the
/// `SERIALIZATION_BUFFER`.
///
/// ```
/// use agentmem::pipeline::guard::{DEFAULT_TOOL_OUTPUT_CAP_TOKENS, Truncation};
/// assert_eq!(Truncation::default(), Truncation::Tokens(DEFAULT_TOOL_OUTPUT_CAP_TOKENS));
/// ```
pub const DEFAULT_TOOL_OUTPUT_CAP_TOKENS: u64 = 5_000;

/// Headroom applied to every truncation cap (5,000 tokens become 6,000): a
/// tool output grows a little once serialized into a provider payload, and the
/// cap is meant for what the model reads.
///
/// ```
/// use agentmem::pipeline::guard::Truncation;
/// assert_eq!(Truncation::Tokens(5_000).with_buffer(), Truncation::Tokens(6_000));
/// ```
pub(crate) const SERIALIZATION_BUFFER: f64 = 1.2;

/// Tool outputs over this many tokens are evicted to a file by default.
///
/// ```
/// use agentmem::pipeline::guard::{GuardPolicy, DEFAULT_EVICTION_THRESHOLD_TOKENS};
/// assert_eq!(GuardPolicy::default().evict_over_tokens, Some(DEFAULT_EVICTION_THRESHOLD_TOKENS));
/// ```
pub const DEFAULT_EVICTION_THRESHOLD_TOKENS: u64 = 20_000;

/// Outputs up to this many tokens get exact sizes even when eviction is off;
/// counting beyond it would mean tokenizing text that is cut anyway, so larger
/// sizes are estimates (see the [module docs](super)).
///
/// ```
/// use agentmem::pipeline::guard::{truncate_middle_tokens, EXACT_COUNT_LIMIT_TOKENS};
/// use agentmem::Encoding;
/// // ~10,000 tokens: under the limit, so the marker is exact (no tilde).
/// let log: String = (0..2_500).map(|i| format!("step {i} ok\n")).collect();
/// let cut = truncate_middle_tokens(&log, 1_000, Encoding::O200kBase.tokenizer()).unwrap();
/// assert!(cut.contains(" tokens truncated…") && !cut.contains("…~"));
/// # assert!(EXACT_COUNT_LIMIT_TOKENS >= 10_000);
/// ```
pub const EXACT_COUNT_LIMIT_TOKENS: u64 = 20_000;

/// How much of a tool output the model may see.
///
/// Caps are given *before* the `SERIALIZATION_BUFFER`; see
/// [`Truncation::with_buffer`]. In configuration files it reads
/// `{policy = "tokens", limit = 5000}`, `{policy = "bytes", limit = 20000}` or
/// `{policy = "none"}`.
///
/// ```
/// use agentmem::pipeline::guard::Truncation;
/// let policy: Truncation = serde_json::from_str(r#"{"policy": "bytes", "limit": 10000}"#).unwrap();
/// assert_eq!(policy, Truncation::Bytes(10_000));
/// assert_eq!(serde_json::to_string(&Truncation::None).unwrap(), r#"{"policy":"none"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "policy", content = "limit", rename_all = "lowercase")]
pub enum Truncation {
    /// Never truncate (eviction may still apply).
    None,
    /// Keep at most this many bytes (× the buffer), head and tail.
    Bytes(usize),
    /// Keep at most this many tokens (× the buffer), head and tail.
    Tokens(u64),
}

impl Default for Truncation {
    fn default() -> Self {
        Truncation::Tokens(DEFAULT_TOOL_OUTPUT_CAP_TOKENS)
    }
}

impl Truncation {
    /// The cap the model-visible copy actually gets: this cap ×
    /// `SERIALIZATION_BUFFER`, rounded.
    ///
    /// ```
    /// use agentmem::pipeline::guard::Truncation;
    /// assert_eq!(Truncation::default().with_buffer(), Truncation::Tokens(6_000));
    /// assert_eq!(Truncation::Bytes(1_000).with_buffer(), Truncation::Bytes(1_200));
    /// assert_eq!(Truncation::None.with_buffer(), Truncation::None);
    /// ```
    pub fn with_buffer(self) -> Truncation {
        let scale = |n: f64| (n * SERIALIZATION_BUFFER).round();
        match self {
            Truncation::None => Truncation::None,
            Truncation::Bytes(b) => Truncation::Bytes(scale(b as f64) as usize),
            Truncation::Tokens(t) => Truncation::Tokens(scale(t as f64) as u64),
        }
    }
}

/// What the guard does to tool outputs.
///
/// ```
/// use agentmem::pipeline::guard::{GuardPolicy, Truncation};
/// let policy = GuardPolicy::default();
/// assert_eq!(policy.truncation, Truncation::Tokens(5_000));
/// assert_eq!(policy.evict_over_tokens, Some(20_000));
/// // From configuration: missing fields keep their defaults.
/// let policy: GuardPolicy = serde_json::from_str(r#"{"evict_over_tokens": null}"#).unwrap();
/// assert_eq!(policy.evict_over_tokens, None);
/// assert_eq!(policy.truncation, Truncation::Tokens(5_000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct GuardPolicy {
    /// How outputs that are not evicted are cut.
    pub truncation: Truncation,
    /// Outputs over this many tokens are evicted to a file; `None` never evicts.
    pub evict_over_tokens: Option<u64>,
}

impl Default for GuardPolicy {
    fn default() -> Self {
        GuardPolicy {
            truncation: Truncation::default(),
            evict_over_tokens: Some(DEFAULT_EVICTION_THRESHOLD_TOKENS),
        }
    }
}

impl GuardPolicy {
    /// A policy that leaves every output as it is.
    ///
    /// ```
    /// use agentmem::pipeline::guard::{guard_tool_output, GuardPolicy, Guarded};
    /// use agentmem::Encoding;
    /// let huge = "x\n".repeat(1_000_000);
    /// let dir = std::path::Path::new("/nonexistent");
    /// let guarded = guard_tool_output("c1", &huge, &GuardPolicy::off(), Encoding::O200kBase.tokenizer(), dir).unwrap();
    /// assert_eq!(guarded, Guarded::Unchanged);
    /// ```
    pub fn off() -> GuardPolicy {
        GuardPolicy {
            truncation: Truncation::None,
            evict_over_tokens: None,
        }
    }
}

/// What the model sees of one tool output.
///
/// ```
/// use agentmem::pipeline::guard::{guard_tool_output, GuardPolicy, Guarded};
/// use agentmem::Encoding;
/// let dir = tempfile::tempdir().unwrap();
/// let small = guard_tool_output("c1", "ok", &GuardPolicy::default(), Encoding::O200kBase.tokenizer(), dir.path()).unwrap();
/// assert_eq!(small, Guarded::Unchanged);
/// assert_eq!(small.model_text("ok"), "ok");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Guarded {
    /// The output fits: the model sees it as it is.
    Unchanged,
    /// The model sees `content`: the head and tail of the output with a
    /// `Total output lines` header and a truncation marker.
    Truncated {
        /// What the model sees.
        content: String,
        /// The size of the whole output, in tokens of the guard's tokenizer.
        original_tokens: u64,
        /// `original_tokens` is an estimate (the output was not counted in full).
        estimated: bool,
    },
    /// The output was written to `path`; the model sees `preview`.
    Evicted {
        /// What the model sees in its place.
        preview: String,
        /// The file the whole output went to.
        path: PathBuf,
        /// The size of the whole output, in tokens of the guard's tokenizer.
        original_tokens: u64,
        /// `original_tokens` is an estimate (the output was not counted in full).
        estimated: bool,
    },
}

impl Guarded {
    /// The text the model sees in place of `original` (the output that was
    /// guarded).
    ///
    /// ```
    /// use agentmem::pipeline::guard::Guarded;
    /// let cut = Guarded::Truncated { content: "short".into(), original_tokens: 9_000, estimated: false };
    /// assert_eq!(cut.model_text("the long original"), "short");
    /// assert_eq!(Guarded::Unchanged.model_text("as is"), "as is");
    /// ```
    pub fn model_text<'a>(&'a self, original: &'a str) -> &'a str {
        match self {
            Guarded::Unchanged => original,
            Guarded::Truncated { content, .. } => content,
            Guarded::Evicted { preview, .. } => preview,
        }
    }
}
