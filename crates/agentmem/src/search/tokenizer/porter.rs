//! The Porter stemmer of FTS5's `porter` tokenizer (`fts5PorterCb`), step
//! by step, on a folded token's bytes: bytes outside ASCII count as
//! consonants, and tokens shorter than 3 or longer than 64 bytes are left
//! as they are.

/// Tokens longer than this (in bytes) are not stemmed.
const MAX_STEMMED_BYTES: usize = 64;

/// A rule of a step: a suffix, what replaces it, and when.
struct Rule {
    suffix: &'static [u8],
    replacement: &'static [u8],
    condition: fn(&[u8]) -> bool,
}

const fn rule(
    suffix: &'static [u8],
    replacement: &'static [u8],
    condition: fn(&[u8]) -> bool,
) -> Rule {
    Rule {
        suffix,
        replacement,
        condition,
    }
}

/// Step 1b: the rule for `eed`, `ed` and `ing`; the last two report that
/// they applied (then step 1b's tidying follows).
const STEP_1B: [(Rule, bool); 3] = [
    (rule(b"eed", b"ee", m_gt0), false),
    (rule(b"ed", b"", has_vowel), true),
    (rule(b"ing", b"", has_vowel), true),
];

const STEP_1B2: [Rule; 3] = [
    rule(b"at", b"ate", always),
    rule(b"bl", b"ble", always),
    rule(b"iz", b"ize", always),
];

const STEP_2: [Rule; 21] = [
    rule(b"ational", b"ate", m_gt0),
    rule(b"tional", b"tion", m_gt0),
    rule(b"enci", b"ence", m_gt0),
    rule(b"anci", b"ance", m_gt0),
    rule(b"izer", b"ize", m_gt0),
    rule(b"logi", b"log", m_gt0),
    rule(b"bli", b"ble", m_gt0),
    rule(b"alli", b"al", m_gt0),
    rule(b"entli", b"ent", m_gt0),
    rule(b"eli", b"e", m_gt0),
    rule(b"ousli", b"ous", m_gt0),
    rule(b"ization", b"ize", m_gt0),
    rule(b"ation", b"ate", m_gt0),
    rule(b"ator", b"ate", m_gt0),
    rule(b"alism", b"al", m_gt0),
    rule(b"iveness", b"ive", m_gt0),
    rule(b"fulness", b"ful", m_gt0),
    rule(b"ousness", b"ous", m_gt0),
    rule(b"aliti", b"al", m_gt0),
    rule(b"iviti", b"ive", m_gt0),
    rule(b"biliti", b"ble", m_gt0),
];

const STEP_3: [Rule; 7] = [
    rule(b"ical", b"ic", m_gt0),
    rule(b"ness", b"", m_gt0),
    rule(b"icate", b"ic", m_gt0),
    rule(b"iciti", b"ic", m_gt0),
    rule(b"ful", b"", m_gt0),
    rule(b"ative", b"", m_gt0),
    rule(b"alize", b"al", m_gt0),
];

const STEP_4: [Rule; 19] = [
    rule(b"al", b"", m_gt1),
    rule(b"ance", b"", m_gt1),
    rule(b"ence", b"", m_gt1),
    rule(b"er", b"", m_gt1),
    rule(b"ic", b"", m_gt1),
    rule(b"able", b"", m_gt1),
    rule(b"ible", b"", m_gt1),
    rule(b"ant", b"", m_gt1),
    rule(b"ement", b"", m_gt1),
    rule(b"ment", b"", m_gt1),
    rule(b"ent", b"", m_gt1),
    rule(b"ion", b"", m_gt1_and_s_or_t),
    rule(b"ou", b"", m_gt1),
    rule(b"ism", b"", m_gt1),
    rule(b"ate", b"", m_gt1),
    rule(b"iti", b"", m_gt1),
    rule(b"ous", b"", m_gt1),
    rule(b"ive", b"", m_gt1),
    rule(b"ize", b"", m_gt1),
];

/// Stems `word` (a folded token's bytes) in place.
pub(super) fn stem(word: &mut Vec<u8>) {
    if word.len() > MAX_STEMMED_BYTES || word.len() < 3 {
        return;
    }
    step_1a(word);
    let step_1b = STEP_1B
        .iter()
        .find(|(rule, _)| ends_with(word, rule.suffix))
        .is_some_and(|(rule, reports)| apply(word, rule) && *reports);
    if step_1b && !first_match(word, &STEP_1B2).is_some_and(|rule| apply(word, rule)) {
        let n = word.len();
        let last = word[n - 1];
        if !is_vowel(last, false)
            && !matches!(last, b'l' | b's' | b'z')
            && n >= 2
            && last == word[n - 2]
        {
            word.pop();
        } else if m_eq1(word) && o_star(word) {
            word.push(b'e');
        }
    }
    // Step 1c.
    let n = word.len();
    if word[n - 1] == b'y' && has_vowel(&word[..n - 1]) {
        word[n - 1] = b'i';
    }
    // Steps 2 to 4: the first rule whose suffix the word ends with (one
    // shorter than the word) is the step's only candidate.
    for step in [&STEP_2[..], &STEP_3, &STEP_4] {
        if let Some(rule) = first_match(word, step) {
            apply(word, rule);
        }
    }
    // Step 5a.
    let n = word.len();
    if word[n - 1] == b'e' {
        let stem = &word[..n - 1];
        if m_gt1(stem) || (m_eq1(stem) && !o_star(stem)) {
            word.pop();
        }
    }
    // Step 5b.
    let n = word.len();
    if n > 1 && word[n - 1] == b'l' && word[n - 2] == b'l' && m_gt1(&word[..n - 1]) {
        word.pop();
    }
}

fn first_match<'r>(word: &[u8], rules: &'r [Rule]) -> Option<&'r Rule> {
    rules.iter().find(|rule| ends_with(word, rule.suffix))
}

/// Whether `word` ends with `suffix` and is longer than it.
fn ends_with(word: &[u8], suffix: &[u8]) -> bool {
    word.len() > suffix.len() && word.ends_with(suffix)
}

/// Replaces `rule`'s suffix when its condition holds of the stem before
/// it; returns whether it did.
fn apply(word: &mut Vec<u8>, rule: &Rule) -> bool {
    let stem = word.len() - rule.suffix.len();
    if !(rule.condition)(&word[..stem]) {
        return false;
    }
    word.truncate(stem);
    word.extend_from_slice(rule.replacement);
    true
}

fn step_1a(word: &mut Vec<u8>) {
    let n = word.len();
    if word[n - 1] != b's' {
        return;
    }
    if word[n - 2] == b'e' {
        let sses = n > 4 && word[n - 4] == b's' && word[n - 3] == b's';
        let ies = n > 3 && word[n - 3] == b'i';
        word.truncate(if sses || ies { n - 2 } else { n - 1 });
    } else if word[n - 2] != b's' {
        word.truncate(n - 1);
    }
}

fn is_vowel(c: u8, y_is_vowel: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (y_is_vowel && c == b'y')
}

/// Past the first vowel-consonant sequence of `stem` (given whether the
/// byte before it was a consonant): the position after it, or 0 if none.
fn gobble_vc(stem: &[u8], previous_consonant: bool) -> usize {
    let mut consonant = previous_consonant;
    let mut i = 0;
    while i < stem.len() {
        consonant = !is_vowel(stem[i], consonant);
        if !consonant {
            break;
        }
        i += 1;
    }
    i += 1;
    while i < stem.len() {
        consonant = !is_vowel(stem[i], consonant);
        if consonant {
            return i + 1;
        }
        i += 1;
    }
    0
}

fn always(_: &[u8]) -> bool {
    true
}

/// m > 0.
fn m_gt0(stem: &[u8]) -> bool {
    gobble_vc(stem, false) != 0
}

/// m > 1.
fn m_gt1(stem: &[u8]) -> bool {
    let n = gobble_vc(stem, false);
    n != 0 && gobble_vc(&stem[n..], true) != 0
}

/// m = 1.
fn m_eq1(stem: &[u8]) -> bool {
    let n = gobble_vc(stem, false);
    n != 0 && gobble_vc(&stem[n..], true) == 0
}

/// *o: the stem ends consonant-vowel-consonant, the last not w, x or y.
fn o_star(stem: &[u8]) -> bool {
    let Some(&last) = stem.last() else {
        return false;
    };
    if matches!(last, b'w' | b'x' | b'y') {
        return false;
    }
    let mut mask = 0u32;
    let mut consonant = false;
    for &c in stem {
        consonant = !is_vowel(c, consonant);
        mask = (mask << 1) | u32::from(consonant);
    }
    mask & 7 == 5
}

/// m > 1 and the stem ends in s or t.
fn m_gt1_and_s_or_t(stem: &[u8]) -> bool {
    matches!(stem.last(), Some(b's' | b't')) && m_gt1(stem)
}

/// *v*: the stem holds a vowel (y counts after the first byte).
fn has_vowel(stem: &[u8]) -> bool {
    stem.iter().enumerate().any(|(i, &c)| is_vowel(c, i > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stemmed(word: &str) -> String {
        let mut bytes = word.as_bytes().to_vec();
        stem(&mut bytes);
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn stems_as_the_porter_algorithm_does() {
        for (word, expected) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("cats", "cat"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("hopping", "hop"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("generalization", "gener"),
            ("adjustment", "adjust"),
            ("controll", "control"),
            ("researching", "research"),
            ("agencies", "agenc"),
            ("is", "is"),
        ] {
            assert_eq!(stemmed(word), expected, "{word}");
        }
    }
}
