//! What `unicode61` asks of a code point: its category (token character or
//! separator), whether it is a diacritical mark, and its folded form —
//! SQLite's own functions over SQLite's own tables ([`super::tables`]).

use super::tables::{
    CATEGORY_BLOCK, CATEGORY_DATA, CATEGORY_MAP, DIACRITIC_BASES, DIACRITIC_RANGES, FOLD_OFFSETS,
    FOLD_RULES,
};

/// The categories that make token characters with `unicode61`'s default
/// `categories 'L* N* Co'`, by SQLite's category number: the letters
/// (5–9 and 30, "LC"), the numbers (13–15), private use (31) — and 0, the
/// code points SQLite's tables do not know, which its category parser
/// always marks as token characters.
const TOKEN_CATEGORIES: [bool; 32] = {
    let mut token = [false; 32];
    let mut i = 0;
    let chosen = [0, 5, 6, 7, 8, 9, 30, 13, 14, 15, 31];
    while i < chosen.len() {
        token[chosen[i]] = true;
        i += 1;
    }
    token
};

/// The code point FTS5 reads for `c` from valid UTF-8: U+FFFE and U+FFFF
/// read as U+FFFD, the replacement character.
pub(super) fn code_point(c: char) -> u32 {
    match c {
        '\u{FFFE}' | '\u{FFFF}' => 0xFFFD,
        other => u32::from(other),
    }
}

/// SQLite's category number of `code` (`sqlite3Fts5UnicodeCategory`).
fn category(code: u32) -> usize {
    if code >= 1 << 20 {
        return 0;
    }
    let plane = (code >> 16) as usize;
    let (mut low, mut high) = (
        usize::from(CATEGORY_BLOCK[plane]),
        usize::from(CATEGORY_BLOCK[plane + 1]),
    );
    let key = (code & 0xFFFF) as u16;
    let mut found = None;
    while high > low {
        let test = (high + low) / 2;
        if key >= CATEGORY_MAP[test] {
            found = Some(test);
            low = test + 1;
        } else {
            high = test;
        }
    }
    let Some(range) = found else { return 0 };
    let start = u32::from(CATEGORY_MAP[range]);
    if u32::from(key) >= start + u32::from(CATEGORY_DATA[range] >> 5) {
        return 0;
    }
    match usize::from(CATEGORY_DATA[range] & 0x1F) {
        // Alternating upper and lower case letters.
        30 if (u32::from(key) - start) & 1 == 1 => 5,
        30 => 9,
        other => other,
    }
}

/// Whether `code` is a token character (not a separator).
pub(super) fn is_token_char(code: u32) -> bool {
    code != 0 && TOKEN_CATEGORIES[category(code)]
}

/// Whether `code` is one of the combining diacritical marks `unicode61`
/// keeps inside a token (and folds away).
pub(super) fn is_diacritic(code: u32) -> bool {
    if !(768..=817).contains(&code) {
        return false;
    }
    let (mask, bit) = if code < 768 + 32 {
        (0x0802_9FDF_u32, code - 768)
    } else {
        (0x0003_61F8_u32, code - 768 - 32)
    };
    mask & (1 << bit) != 0
}

/// `code` lower-cased and, outside ASCII, stripped of its diacritic
/// (`sqlite3Fts5UnicodeFold` with `remove_diacritics 2`); 0 for a mark
/// that folds to nothing.
pub(super) fn fold(code: u32) -> u32 {
    if code < 128 {
        return if (u32::from(b'A')..=u32::from(b'Z')).contains(&code) {
            code + 32
        } else {
            code
        };
    }
    if code < 65536 {
        let rule = FOLD_RULES.partition_point(|&(first, _, _)| u32::from(first) <= code) - 1;
        let (first, flags, length) = FOLD_RULES[rule];
        let (first, flags) = (u32::from(first), u32::from(flags));
        let mut folded = code;
        if code < first + u32::from(length) && 0 == (1 & flags & (first ^ code)) {
            folded = (code + u32::from(FOLD_OFFSETS[(flags >> 1) as usize])) & 0xFFFF;
        }
        return without_diacritic(folded);
    }
    if (66560..66600).contains(&code) {
        return code + 40;
    }
    code
}

/// The plain letter of a lower-case letter with a diacritic
/// (`fts5_remove_diacritic` removing them fully), else `code` itself.
fn without_diacritic(code: u32) -> u32 {
    let key = (code << 3) | 7;
    let range = DIACRITIC_RANGES.partition_point(|&entry| u32::from(entry) <= key) - 1;
    let entry = u32::from(DIACRITIC_RANGES[range]);
    if code > (entry >> 3) + (entry & 7) {
        code
    } else {
        u32::from(DIACRITIC_BASES[range] & 0x7F)
    }
}
