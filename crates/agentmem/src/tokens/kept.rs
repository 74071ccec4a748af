//! Token counts kept between processes.
//!
//! Loading an encoding's tables takes tens of milliseconds, most of what a
//! short command costs, while the words a store's sessions use repeat from
//! one command to the next. A process loads the counts of the pieces (words,
//! numbers, punctuation runs) earlier processes counted, and the encoding's
//! tables are loaded only if a piece is new. It also loads the counts of the
//! long texts (messages, tool outputs) they counted whole: the next command
//! counts the same events again, and a text found by its hash is not split
//! into pieces at all; nor is a tool output the guard cuts to a head and a
//! tail, whose cuts are kept by its hash too. Counts are exact either way: a
//! kept count or cut is what the encoding gave for that piece or text.
//!
//! The file is a cache: one that is missing, from another version or
//! damaged (its checksum does not match) is ignored, never an error.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::fs::Flush;
use crate::tokens::tokenizer::{
    Cut, CutKey, PieceMemo, TextKey, TextMemo, MEMO_PIECE_MAX_BYTES, PACKED_PIECE_MAX_BYTES,
    PIECE_COUNTS, TEXT_COUNTS,
};

/// The first bytes of a file of kept counts, with its format's version.
const MAGIC: &[u8] = b"agentmem token counts 3\n";
/// The encodings with a memo, in the memos' order.
const MEMOS: usize = 2;

/// The counts kept in one file, loaded into this thread's memo of piece
/// counts; [`KeptCounts::save`] writes back what the thread counted since.
///
/// ```
/// use agentmem::tokens::KeptCounts;
/// use agentmem::Encoding;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("token-counts");
/// let kept = KeptCounts::load(&path);
/// Encoding::O200kBase.tokenizer().count("words counted once, kept for the next process");
/// assert!(kept.save().unwrap(), "new pieces were counted, so they are written");
/// assert!(path.exists());
/// ```
#[derive(Debug)]
pub struct KeptCounts {
    path: PathBuf,
    counted_at_load: [usize; MEMOS],
}

impl KeptCounts {
    /// Loads the counts kept at `path` into this thread's memo (none when the
    /// file is missing or not a file of kept counts).
    pub fn load(path: impl Into<PathBuf>) -> KeptCounts {
        let path = path.into();
        if let Some(kept) = std::fs::read(&path).ok().as_deref().and_then(parse) {
            PIECE_COUNTS.with(|memos| {
                let mut memos = memos.borrow_mut();
                for (memo, piece, count) in kept.pieces {
                    memos[memo].keep(piece, count);
                }
            });
            TEXT_COUNTS.with(|memos| {
                let mut memos = memos.borrow_mut();
                for (memo, key, count) in kept.texts {
                    memos[memo].keep(key, count);
                }
                for (memo, key, found) in kept.cuts {
                    memos[memo].keep_cut(key, found);
                }
            });
        }
        KeptCounts {
            path,
            counted_at_load: counted(),
        }
    }

    /// Where the counts are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes this thread's memos to the file, atomically, if the thread
    /// counted a piece or a long text since [`KeptCounts::load`]; says
    /// whether it wrote.
    pub fn save(&self) -> Result<bool> {
        if counted() == self.counted_at_load {
            return Ok(false);
        }
        let bytes = PIECE_COUNTS
            .with(|pieces| TEXT_COUNTS.with(|texts| serialize(&pieces.borrow(), &texts.borrow())));
        // A cache: a file lost to a power cut costs the next command time,
        // and a damaged one fails its checksum.
        crate::base::fs::write_atomic_flushed(&self.path, &bytes, Flush::ByOs)?;
        Ok(true)
    }
}

/// How many pieces and long texts each encoding's memos had it count.
fn counted() -> [usize; MEMOS] {
    let pieces = PIECE_COUNTS.with(|memos| memos.borrow().each_ref().map(|m| m.counted));
    let texts = TEXT_COUNTS.with(|memos| memos.borrow().each_ref().map(|m| m.counted));
    [pieces[0] + texts[0], pieces[1] + texts[1]]
}

/// The records of a file of kept counts.
struct Kept<'a> {
    /// `(memo, piece, count)`.
    pieces: Vec<(usize, &'a str, u32)>,
    /// `(memo, (hash, length), count)`.
    texts: Vec<(usize, TextKey, usize)>,
    /// `(memo, ((hash, length), cut), found)`.
    cuts: Vec<(usize, CutKey, [u64; 2])>,
}

/// The file: the magic; per piece memo its record count and records (a
/// piece's length, its bytes, its count); per text memo its record count
/// and records (a text's hash, its length, its count); per text memo its
/// cut count and records (a text's hash, its length, the cut's kind and
/// budget, the two numbers it found); then a checksum of all before.
fn serialize(pieces: &[PieceMemo; MEMOS], texts: &[TextMemo; MEMOS]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for memo in pieces {
        let pieces = memo.pieces();
        out.extend_from_slice(&(pieces.len() as u32).to_le_bytes());
        for (piece, count) in pieces {
            out.push(piece.len() as u8);
            out.extend_from_slice(&piece);
            out.extend_from_slice(&count.to_le_bytes());
        }
    }
    for memo in texts {
        out.extend_from_slice(&(memo.counts.len() as u32).to_le_bytes());
        for (&(hash, len), &count) in &memo.counts {
            out.extend_from_slice(&hash.to_le_bytes());
            out.extend_from_slice(&(len as u64).to_le_bytes());
            out.extend_from_slice(&(count as u64).to_le_bytes());
        }
    }
    for memo in texts {
        out.extend_from_slice(&(memo.cuts.len() as u32).to_le_bytes());
        for (&((hash, len), cut), found) in &memo.cuts {
            let (kind, budget) = cut_code(cut);
            out.extend_from_slice(&hash.to_le_bytes());
            out.extend_from_slice(&(len as u64).to_le_bytes());
            out.push(kind);
            out.extend_from_slice(&budget.to_le_bytes());
            for number in found {
                out.extend_from_slice(&number.to_le_bytes());
            }
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The records of a file [`serialize`] wrote.
fn parse(bytes: &[u8]) -> Option<Kept<'_>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if checksum(body).to_le_bytes() != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let mut rest = Reader(&body[MAGIC.len()..]);
    // A record takes six bytes or more: room for all, touched only as filled.
    let mut kept = Kept {
        pieces: Vec::with_capacity(body.len() / 6),
        texts: Vec::new(),
        cuts: Vec::new(),
    };
    for memo in 0..MEMOS {
        let len = rest.number(4)?;
        for _ in 0..len {
            let n = usize::try_from(rest.number(1)?).ok()?;
            if n > MEMO_PIECE_MAX_BYTES {
                return None;
            }
            let piece = std::str::from_utf8(rest.take(n)?).ok()?;
            let count = u32::try_from(rest.number(4)?).ok()?;
            kept.pieces.push((memo, piece, count));
        }
    }
    for memo in 0..MEMOS {
        let len = rest.number(4)?;
        for _ in 0..len {
            let key = (rest.number(8)?, usize::try_from(rest.number(8)?).ok()?);
            let count = usize::try_from(rest.number(8)?).ok()?;
            kept.texts.push((memo, key, count));
        }
    }
    for memo in 0..MEMOS {
        let len = rest.number(4)?;
        for _ in 0..len {
            let text = (rest.number(8)?, usize::try_from(rest.number(8)?).ok()?);
            let cut = cut_of(rest.number(1)?, rest.number(8)?)?;
            let found = [rest.number(8)?, rest.number(8)?];
            kept.cuts.push((memo, (text, cut), found));
        }
    }
    rest.0.is_empty().then_some(kept)
}

/// A cut's kind, as its code in the file, and its budget.
fn cut_code(cut: Cut) -> (u8, u64) {
    match cut {
        Cut::Head(budget) => (0, budget),
        Cut::Tail(budget) => (1, budget),
        Cut::Prefix(limit) => (2, limit),
    }
}

/// The cut [`cut_code`] gave `code` and `budget`.
fn cut_of(code: u64, budget: u64) -> Option<Cut> {
    match code {
        0 => Some(Cut::Head(budget)),
        1 => Some(Cut::Tail(budget)),
        2 => Some(Cut::Prefix(budget)),
        _ => None,
    }
}

/// Bytes read from the front.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    /// A little-endian number of `n` bytes (at most eight).
    fn number(&mut self, n: usize) -> Option<u64> {
        let mut buffer = [0; 8];
        buffer[..n].copy_from_slice(self.take(n)?);
        Some(u64::from_le_bytes(buffer))
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut hasher = crate::base::hash::fingerprint_hasher();
    hasher.write(bytes);
    hasher.finish()
}

impl PieceMemo {
    /// Every piece the memo holds with its count, its bytes rebuilt from a
    /// packed key (see `packed_piece`: the first and last bytes, overlapping).
    fn pieces(&self) -> Vec<(Vec<u8>, u32)> {
        let mut pieces = Vec::new();
        for (n, map) in self
            .packed
            .iter()
            .enumerate()
            .take(PACKED_PIECE_MAX_BYTES + 1)
        {
            for (&(first, last), &count) in map {
                pieces.push((unpack(n, first, last), count));
            }
        }
        for (piece, &count) in &self.longer {
            pieces.push((piece.as_bytes().to_vec(), count));
        }
        pieces
    }
}

/// The `n` bytes `packed_piece` packed into `(first, last)`.
fn unpack(n: usize, first: u64, last: u64) -> Vec<u8> {
    let (first, last) = (first.to_le_bytes(), last.to_le_bytes());
    let width = match n {
        0 | 1 => return first[..n].to_vec(),
        2..=3 => 2,
        4..=7 => 4,
        _ => 8,
    };
    let mut bytes = vec![0; n];
    bytes[n - width..].copy_from_slice(&last[..width]);
    bytes[..width].copy_from_slice(&first[..width]);
    bytes
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;
