//! Tokenizers: exact BPE for OpenAI's encodings, and a fast estimate.

use std::fmt;
use std::str::FromStr;

use either::Either;

use super::pretokenize::{ascii_pieces, mixed_pieces, Rules};

/// A way of turning text into a token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series, GPT-5: exact BPE.
    #[default]
    O200kBase,
    /// GPT-4, GPT-3.5: exact BPE.
    Cl100kBase,
    /// One token per four characters, rounded up: for when speed matters more than exactness.
    Approximate,
}

impl Encoding {
    /// Every encoding, in the order `--encoding` lists them.
    pub const ALL: [Encoding; 3] = [
        Encoding::O200kBase,
        Encoding::Cl100kBase,
        Encoding::Approximate,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::Approximate => "approximate",
        }
    }

    /// The encoding OpenAI uses for `model`; o200k_base for every model not
    /// known to use cl100k_base (the best stand-in for other providers).
    ///
    /// ```
    /// use agentmem::Encoding;
    /// assert_eq!(Encoding::for_model("gpt-4-0613"), Encoding::Cl100kBase);
    /// assert_eq!(Encoding::for_model("openai:gpt-4o-mini"), Encoding::O200kBase);
    /// ```
    pub fn for_model(model: &str) -> Encoding {
        let name = model
            .rsplit([':', '/'])
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let cl100k = name.starts_with("gpt-3.5")
            || name.starts_with("text-embedding-3")
            || name.starts_with("text-embedding-ada")
            || (name.starts_with("gpt-4")
                && !name.starts_with("gpt-4o")
                && !name.starts_with("gpt-4.")
                && !name.starts_with("gpt-4-o"));
        if cl100k {
            Encoding::Cl100kBase
        } else {
            Encoding::O200kBase
        }
    }

    /// The tokenizer of this encoding.
    pub fn tokenizer(self) -> Tokenizer {
        Tokenizer { encoding: self }
    }

    /// Compiles the pattern this encoding splits text by (text that is not
    /// ASCII needs it), without loading its tables.
    pub(crate) fn compile_split_pattern(self) {
        if let Some(bpe) = self.tokenizer().bpe() {
            super::pretokenize::splitting_regex_of(bpe.rules);
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "o200k_base" | "o200k" => Ok(Encoding::O200kBase),
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100kBase),
            "approximate" | "approx" | "chars/4" => Ok(Encoding::Approximate),
            other => Err(format!(
                "unknown encoding {other:?}; use o200k_base, cl100k_base or approximate"
            )),
        }
    }
}

/// Counts tokens of text in one encoding. Cheap to copy; the BPE tables load
/// once per process, on first use.
///
/// ```
/// use agentmem::Encoding;
/// let tokenizer = Encoding::O200kBase.tokenizer();
/// assert_eq!(tokenizer.count("Hello, world!"), 4);
/// assert_eq!(Encoding::Approximate.tokenizer().count("abcdefghi"), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokenizer {
    encoding: Encoding,
}

impl Tokenizer {
    /// The encoding this tokenizer counts in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The number of tokens in `text`. Special-token strings such as
    /// `<|endoftext|>` count as ordinary text, as they do in a prompt.
    pub fn count(&self, text: &str) -> usize {
        match self.bpe() {
            Some(bpe) if text.len() >= MEMO_TEXT_MIN_BYTES => count_remembered(bpe, text),
            Some(bpe) => count_pieces(bpe, text),
            None => text.chars().count().div_ceil(4),
        }
    }

    /// A quick lower bound of [`Tokenizer::count`]: the pre-tokenizer never
    /// joins two words, so a BPE count has at least a token per word; the
    /// estimate is cheap enough to give exactly.
    ///
    /// ```
    /// use agentmem::Encoding;
    /// let tokenizer = Encoding::O200kBase.tokenizer();
    /// assert_eq!(tokenizer.count_at_least("three short words"), 3);
    /// assert!(tokenizer.count("three short words") >= 3);
    /// ```
    pub fn count_at_least(&self, text: &str) -> usize {
        match self.encoding {
            Encoding::O200kBase | Encoding::Cl100kBase => text.split_whitespace().count(),
            Encoding::Approximate => self.count(text),
        }
    }

    /// The count of `text` when it was counted whole lately ([`Tokenizer::count`]
    /// remembers long texts).
    pub(crate) fn remembered(&self, text: &str) -> Option<usize> {
        let bpe = self.bpe().filter(|_| text.len() >= MEMO_TEXT_MIN_BYTES)?;
        let key = text_key(text);
        TEXT_COUNTS.with(|maps| maps.borrow()[bpe.memo()].counts.get(&key).copied())
    }

    /// Remembers `count`, counted piece by piece elsewhere, as the count of `text`.
    pub(crate) fn remember(&self, text: &str, count: usize) {
        if let Some(bpe) = self.bpe().filter(|_| text.len() >= MEMO_TEXT_MIN_BYTES) {
            remember_text(bpe, text_key(text), count);
        }
    }

    /// Where a cut of `text` fell when this encoding made it lately (see
    /// [`Cut`]): long tool outputs are cut the same way on every call and by
    /// every process.
    pub(crate) fn remembered_cut(&self, text: &str, cut: Cut) -> Option<[u64; 2]> {
        let bpe = self.bpe().filter(|_| text.len() >= MEMO_TEXT_MIN_BYTES)?;
        let key = (text_key(text), cut);
        TEXT_COUNTS.with(|maps| maps.borrow()[bpe.memo()].cuts.get(&key).copied())
    }

    /// Remembers where `cut` of `text` fell.
    pub(crate) fn remember_cut(&self, text: &str, cut: Cut, found: [u64; 2]) {
        if let Some(bpe) = self.bpe().filter(|_| text.len() >= MEMO_TEXT_MIN_BYTES) {
            TEXT_COUNTS.with(|memos| {
                memos.borrow_mut()[bpe.memo()].keep_cut((text_key(text), cut), found);
            });
        }
    }

    /// The byte-pair encoding behind this tokenizer; `None` for the estimate.
    pub(crate) fn bpe(&self) -> Option<Bpe> {
        match self.encoding {
            Encoding::O200kBase => Some(Bpe {
                rules: Rules::O200k,
            }),
            Encoding::Cl100kBase => Some(Bpe {
                rules: Rules::Cl100k,
            }),
            Encoding::Approximate => None,
        }
    }
}

/// One of OpenAI's byte-pair encodings, with the rules that split text into
/// the pieces it encodes one by one. Its tables (tens of milliseconds to
/// load) are loaded when a piece is not in the memo of counts, so a process
/// that finds every piece there never loads them.
#[derive(Clone, Copy)]
pub(crate) struct Bpe {
    rules: Rules,
}

impl Bpe {
    /// The encoding's tokenizer, loaded on first use.
    pub(crate) fn tokenizer(&self) -> &'static bpe_openai::Tokenizer {
        match self.rules {
            Rules::O200k => bpe_openai::o200k_base(),
            Rules::Cl100k => bpe_openai::cl100k_base(),
        }
    }

    /// The pieces of `text`, as the encoding's regex splits it (by hand in
    /// its ASCII stretches: the same pieces, several times faster), without
    /// loading the encoding's tables.
    pub(crate) fn pieces<'t>(&self, text: &'t str) -> impl Iterator<Item = &'t str> + use<'t> {
        if text.is_ascii() {
            Either::Left(ascii_pieces(text, self.rules))
        } else {
            Either::Right(mixed_pieces(text, self.rules))
        }
    }

    /// The tokens of one piece of [`Bpe::pieces`], remembered when it is short.
    pub(crate) fn piece_tokens(&self, piece: &str) -> usize {
        PIECE_COUNTS.with(|memos| self.piece_tokens_in(&mut memos.borrow_mut()[self.memo()], piece))
    }

    /// [`Bpe::piece_tokens`] with this encoding's `memo` already held.
    fn piece_tokens_in(&self, memo: &mut PieceMemo, piece: &str) -> usize {
        match piece.len() {
            // Every byte is a token of a byte-level BPE.
            0 | 1 => piece.len(),
            n if n > MEMO_PIECE_MAX_BYTES => self.tokenizer().bpe.count(piece.as_bytes()),
            _ => memo.count(*self, piece),
        }
    }

    /// The tokens of one piece if they are at most `limit`: a long piece is
    /// tokenized only until it passes the limit.
    pub(crate) fn piece_tokens_till(&self, piece: &str, limit: usize) -> Option<usize> {
        if piece.len() > MEMO_PIECE_MAX_BYTES {
            return self
                .tokenizer()
                .bpe
                .count_till_limit(piece.as_bytes(), limit);
        }
        Some(self.piece_tokens(piece)).filter(|&n| n <= limit)
    }

    /// Counts `text` piece by piece until the count would pass `limit`:
    /// `Ok` with its count when it never does, else `Err` with the count of
    /// the pieces before the one that passes it and where that piece starts
    /// and ends (a piece is tokenized up to its end at most).
    pub(crate) fn count_till(
        &self,
        text: &str,
        limit: usize,
    ) -> Result<usize, (usize, std::ops::Range<usize>)> {
        PIECE_COUNTS.with(|memos| {
            let mut memos = memos.borrow_mut();
            let memo = &mut memos[self.memo()];
            let mut tokens = 0usize;
            for piece in self.pieces(text) {
                let remaining = limit - tokens;
                // A long piece is tokenized only until it passes the limit.
                let counted = if piece.len() > MEMO_PIECE_MAX_BYTES {
                    self.tokenizer()
                        .bpe
                        .count_till_limit(piece.as_bytes(), remaining)
                } else {
                    Some(self.piece_tokens_in(memo, piece))
                };
                match counted.filter(|&n| n <= remaining) {
                    Some(n) => tokens += n,
                    None => {
                        let start = piece.as_ptr() as usize - text.as_ptr() as usize;
                        return Err((tokens, start..start + piece.len()));
                    }
                }
            }
            Ok(tokens)
        })
    }

    /// Each piece of `text` with its tokens, the memo held once for all.
    pub(crate) fn counted_pieces<'t>(&self, text: &'t str) -> Vec<(&'t str, usize)> {
        PIECE_COUNTS.with(|memos| {
            let mut memos = memos.borrow_mut();
            let memo = &mut memos[self.memo()];
            self.pieces(text)
                .map(|piece| (piece, self.piece_tokens_in(memo, piece)))
                .collect()
        })
    }

    /// Which memo of piece counts is this encoding's.
    pub(crate) fn memo(&self) -> usize {
        match self.rules {
            Rules::O200k => 0,
            Rules::Cl100k => 1,
        }
    }
}

impl fmt::Debug for Bpe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bpe({:?})", self.rules)
    }
}

/// Pieces (pre-tokenizer splits: words, numbers, punctuation runs) at most
/// this long have their counts remembered: text repeats its words, and a
/// remembered count skips the BPE, whose every call allocates.
pub(crate) const MEMO_PIECE_MAX_BYTES: usize = 255;
/// Remembered pieces per encoding and thread; the memo starts over when full.
const MEMO_MAX_PIECES: usize = 1 << 16;

thread_local! {
    /// Token counts of short pieces, one memo per BPE encoding.
    pub(crate) static PIECE_COUNTS: std::cell::RefCell<[PieceMemo; 2]> = Default::default();
}

/// Remembered token counts of short pieces. Looking one up is most of what
/// counting a text costs, so pieces of up to 16 bytes (most of them: words
/// with their leading space) are keyed by their bytes read as two integers,
/// one map per length, and compared without a call to `memcmp`. Hashed with
/// foldhash: keys are a few bytes.
#[derive(Default)]
pub(crate) struct PieceMemo {
    pub(crate) packed: [foldhash::HashMap<(u64, u64), u32>; PACKED_PIECE_MAX_BYTES + 1],
    pub(crate) longer: foldhash::HashMap<Box<str>, u32>,
    len: usize,
    /// Pieces counted by the encoding since the memo was made: the memo
    /// learnt something a file of kept counts lacks.
    pub(crate) counted: usize,
}

/// Pieces at most this long are keyed by [`packed_piece`].
pub(crate) const PACKED_PIECE_MAX_BYTES: usize = 16;

impl PieceMemo {
    /// The count of a short piece, counted and kept if new.
    fn count(&mut self, bpe: Bpe, piece: &str) -> usize {
        let bytes = piece.as_bytes();
        let remembered = match bytes.len() {
            n @ ..=PACKED_PIECE_MAX_BYTES => self.packed[n].get(&packed_piece(bytes)),
            _ => self.longer.get(piece),
        };
        if let Some(&count) = remembered {
            return count as usize;
        }
        let count = bpe.tokenizer().bpe.count(bytes);
        self.counted += 1;
        self.keep(piece, count as u32);
        count
    }

    /// Keeps `count` as the count of `piece` (at most [`MEMO_PIECE_MAX_BYTES`]).
    pub(crate) fn keep(&mut self, piece: &str, count: u32) {
        if self.len >= MEMO_MAX_PIECES {
            let counted = self.counted;
            *self = PieceMemo {
                counted,
                ..PieceMemo::default()
            };
        }
        self.len += 1;
        let bytes = piece.as_bytes();
        match bytes.len() {
            n @ ..=PACKED_PIECE_MAX_BYTES => self.packed[n].insert(packed_piece(bytes), count),
            _ => self.longer.insert(piece.into(), count),
        };
    }
}

/// A piece of at most [`PACKED_PIECE_MAX_BYTES`] as two integers: its first
/// and last eight bytes (or four, or two, or one), which overlap when it is
/// shorter than 16 and so, for one length, never stand for two pieces.
pub(crate) fn packed_piece(bytes: &[u8]) -> (u64, u64) {
    let n = bytes.len();
    let word = |at: usize, width: usize| {
        let mut buffer = [0u8; 8];
        buffer[..width].copy_from_slice(&bytes[at..at + width]);
        u64::from_le_bytes(buffer)
    };
    match n {
        0 => (0, 0),
        1 => (word(0, 1), 0),
        2..=3 => (word(0, 2), word(n - 2, 2)),
        4..=7 => (word(0, 4), word(n - 4, 4)),
        _ => (word(0, 8), word(n - 8, 8)),
    }
}

/// Texts at least this long have their counts remembered whole: the same
/// message or tool output is counted when it arrives, and again when a
/// compaction weighs its span or a view is rebuilt; hashing it costs a small
/// fraction of counting it.
const MEMO_TEXT_MIN_BYTES: usize = 256;
/// Remembered texts per encoding and thread; the memo starts over when full.
const MEMO_MAX_TEXTS: usize = 1 << 13;

thread_local! {
    /// Token counts of long texts, one memo per BPE encoding.
    pub(crate) static TEXT_COUNTS: std::cell::RefCell<[TextMemo; 2]> = Default::default();
}

/// What a long text is remembered by: a 64-bit hash and the length.
pub(crate) type TextKey = (u64, usize);
/// What a cut of a long text is remembered by.
pub(crate) type CutKey = (TextKey, Cut);

/// A count of a long text that stops at a number of tokens, by what it
/// finds: the guard cuts a tool output to a head and a tail this way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cut {
    /// The end of the longest head within the budget: `[end, 0]`.
    Head(u64),
    /// The start of the longest tail within the budget: `[start, 0]`.
    Tail(u64),
    /// A count from the start that stopped past the limit:
    /// `[tokens counted, bytes counted]`.
    Prefix(u64),
}

/// Token counts of long texts, by a 64-bit hash and the length: a collision
/// among the few thousand texts kept is far less likely than a hardware fault.
#[derive(Default)]
pub(crate) struct TextMemo {
    pub(crate) counts: foldhash::HashMap<TextKey, usize>,
    /// Where cuts of long texts fell, by the text and the cut.
    pub(crate) cuts: foldhash::HashMap<CutKey, [u64; 2]>,
    /// Texts counted or cut since the memo was made (see [`PieceMemo::counted`]).
    pub(crate) counted: usize,
}

impl TextMemo {
    /// Keeps `count` as the count of the text `key` stands for.
    pub(crate) fn keep(&mut self, key: TextKey, count: usize) {
        if self.counts.len() >= MEMO_MAX_TEXTS {
            self.counts.clear();
        }
        self.counts.insert(key, count);
    }

    /// Keeps where a cut of a text fell; a cut new to the memo counts as counted.
    pub(crate) fn keep_cut(&mut self, key: CutKey, found: [u64; 2]) {
        if self.cuts.len() >= MEMO_MAX_TEXTS {
            self.cuts.clear();
        }
        if self.cuts.insert(key, found).is_none() {
            self.counted += 1;
        }
    }
}

/// Exactly `bpe.tokenizer().count(text)`, remembered for the text.
fn count_remembered(bpe: Bpe, text: &str) -> usize {
    let key = text_key(text);
    let known = TEXT_COUNTS.with(|memos| memos.borrow()[bpe.memo()].counts.get(&key).copied());
    if let Some(count) = known {
        return count;
    }
    let count = count_pieces(bpe, text);
    remember_text(bpe, key, count);
    count
}

/// What a long text's count is remembered by.
fn text_key(text: &str) -> TextKey {
    use std::hash::{Hash, Hasher};
    let mut hasher = crate::base::hash::fingerprint_hasher();
    text.hash(&mut hasher);
    (hasher.finish(), text.len())
}

fn remember_text(bpe: Bpe, key: TextKey, count: usize) {
    TEXT_COUNTS.with(|memos| {
        let memo = &mut memos.borrow_mut()[bpe.memo()];
        if !memo.counts.contains_key(&key) {
            memo.counted += 1;
        }
        memo.keep(key, count);
    });
}

/// Exactly `bpe.tokenizer().count(text)`, with the counts of short pieces
/// remembered. Neither encoding normalizes its input (NFC is for others).
fn count_pieces(bpe: Bpe, text: &str) -> usize {
    PIECE_COUNTS.with(|memos| {
        let mut memos = memos.borrow_mut();
        let memo = &mut memos[bpe.memo()];
        bpe.pieces(text)
            .map(|piece| bpe.piece_tokens_in(memo, piece))
            .sum()
    })
}
