//! Token counts kept between processes.
//!
//! Loading an encoding's tables takes tens of milliseconds, most of what a
//! short command costs, while the words a store's sessions use repeat from
//! one command to the next. A process loads the counts of the pieces (words,
//! numbers, punctuation runs) earlier processes counted, and the encoding's
//! tables are loaded only if a piece is new. Counts are exact either way: a
//! kept count is what the encoding gave for that piece.
//!
//! The file is a cache: one that is missing, from another version or
//! damaged (its checksum does not match) is ignored, never an error.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::tokens::tokenizer::{
    PieceMemo, MEMO_PIECE_MAX_BYTES, PACKED_PIECE_MAX_BYTES, PIECE_COUNTS,
};

/// The first bytes of a file of kept counts, with its format's version.
const MAGIC: &[u8] = b"agentmem piece counts 1\n";
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
        if let Some(records) = std::fs::read(&path).ok().as_deref().and_then(parse) {
            PIECE_COUNTS.with(|memos| {
                let mut memos = memos.borrow_mut();
                for (memo, piece, count) in records {
                    memos[memo].keep(piece, count);
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

    /// Writes this thread's memo to the file, atomically, if the thread
    /// counted a piece since [`KeptCounts::load`]; says whether it wrote.
    pub fn save(&self) -> Result<bool> {
        if counted() == self.counted_at_load {
            return Ok(false);
        }
        let bytes = PIECE_COUNTS.with(|memos| serialize(&memos.borrow()));
        crate::base::fs::write_atomic(&self.path, &bytes)?;
        Ok(true)
    }
}

/// How many pieces each memo of this thread had its encoding count.
fn counted() -> [usize; MEMOS] {
    PIECE_COUNTS.with(|memos| {
        let memos = memos.borrow();
        [memos[0].counted, memos[1].counted]
    })
}

/// The file: the magic, then per memo its record count and records (a
/// piece's length, its bytes, its count), then a checksum of all before.
fn serialize(memos: &[PieceMemo; MEMOS]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for memo in memos {
        let pieces = memo.pieces();
        out.extend_from_slice(&(pieces.len() as u32).to_le_bytes());
        for (piece, count) in pieces {
            out.push(piece.len() as u8);
            out.extend_from_slice(&piece);
            out.extend_from_slice(&count.to_le_bytes());
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The records of a file [`serialize`] wrote: `(memo, piece, count)`.
fn parse(bytes: &[u8]) -> Option<Vec<(usize, &str, u32)>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if checksum(body).to_le_bytes() != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let mut rest = &body[MAGIC.len()..];
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    // A record takes six bytes or more: room for all, touched only as filled.
    let mut records = Vec::with_capacity(body.len() / 6);
    for memo in 0..MEMOS {
        let len = u32::from_le_bytes(take(4)?.try_into().ok()?);
        for _ in 0..len {
            let n = usize::from(take(1)?[0]);
            if n > MEMO_PIECE_MAX_BYTES {
                return None;
            }
            let piece = std::str::from_utf8(take(n)?).ok()?;
            let count = u32::from_le_bytes(take(4)?.try_into().ok()?);
            records.push((memo, piece, count));
        }
    }
    Some(records)
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
