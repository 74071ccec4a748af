//! The English phrases that mark constraints, preferences, decisions, work
//! done and next steps, and the sentence splitting and cleaning they are
//! matched on.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use crate::summarize::one_line;

pub(super) const CONSTRAINT_MARKERS: &[(&str, f32)] = &[
    ("never", 0.9),
    ("always", 0.9),
    ("must", 0.9),
    ("must not", 0.9),
    ("don't", 0.9),
    ("do not", 0.9),
    ("make sure", 0.9),
    ("be sure to", 0.9),
    ("remember to", 0.8),
    ("have to", 0.8),
    ("i want you to", 0.8),
    ("stick to", 0.8),
    ("stick with", 0.8),
    ("avoid", 0.8),
    ("should", 0.8),
    ("prefer", 0.8),
    ("i'd rather", 0.8),
    ("only", 0.7),
];

pub(super) const PREFERENCE_MARKERS: &[&str] = &[
    "prefer",
    "i'd rather",
    "rather than",
    "i like",
    "instead of",
];

pub(super) const STRONG_DECISION_MARKERS: &[&str] = &[
    "decided",
    "decide to",
    "going with",
    "chose",
    "chosen",
    "we will",
    "we'll use",
    "i'll use",
    "switch to",
    "switching to",
];

pub(super) const DECISION_MARKERS: &[&str] = &[
    "i'll", "i will", "we'll", "instead", "let's", "plan is", "opted",
];

pub(super) const DONE_MARKERS: &[&str] = &[
    "done",
    "fixed",
    "passes",
    "passed",
    "completed",
    "works",
    "now works",
    "resolved",
    "succeeded",
    "implemented",
];

pub(super) const NEXT_MARKERS: &[&str] = &[
    "next",
    "then",
    "todo",
    "to do",
    "remaining",
    "still",
    "left to",
    "need to",
    "follow-up",
    "follow up",
];

/// A sentence saying something was finished (not a question).
pub(super) fn is_done_sentence(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    !sentence.ends_with('?') && DONE.occurs_in(&lower)
}

/// The confidence of a sentence that lays down a rule, by its strongest
/// marker used as a directive ("Never push to main", "you must not…",
/// "Tests must pass"); `None` for one that only describes with the same
/// words ("the build never finishes", "it should work now").
pub(super) fn constraint_confidence(lower: &str) -> Option<f32> {
    CONSTRAINT
        .found_at(lower)
        .filter(|&(marker, start)| is_directive(&lower[..start], CONSTRAINT_MARKERS[marker].0))
        .map(|(marker, _)| CONSTRAINT_MARKERS[marker].1)
        .reduce(f32::max)
}

/// Words that may come before a directive in its clause: "Please never…",
/// "And from now on, always…".
pub(super) const DIRECTIVE_LEADS: &[&str] = &[
    "please",
    "and",
    "also",
    "but",
    "so",
    "then",
    "just",
    "now",
    "from",
    "on",
    "ok",
    "okay",
    "remember",
    "important",
    "note",
    "again",
    "still",
];
/// Who a rule is given to: "you must", "we should never", "you can only".
pub(super) const ADDRESSEES: &[&str] = &["you", "we", "u", "everyone", "please"];
/// Subjects that make "must" or "should" a guess or a report, not a rule:
/// "it should work now", "this must be the cache".
pub(super) const NOT_RULE_SUBJECTS: &[&str] = &[
    "it",
    "this",
    "that",
    "which",
    "there",
    "i",
    "he",
    "she",
    "they",
    "what",
    "who",
    "something",
    "nothing",
    "everything",
];

/// Whether `marker`, after `before` in a lowercase sentence, gives an order
/// or a preference: it states a preference ("I prefer…"), leads its clause,
/// follows whom the rule is for, or ("must", "should") follows a subject
/// that is not a guess's.
pub(super) fn is_directive(before: &str, marker: &str) -> bool {
    if matches!(marker, "prefer" | "i'd rather") {
        return true;
    }
    // A label or a condition ends before the rule: "Ground rules: always…",
    // "If the tests fail, don't commit".
    let clause = before
        .rsplit([':', ';', ',', '—', '('])
        .next()
        .unwrap_or(before);
    let words: Vec<&str> = clause
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().all(|w| DIRECTIVE_LEADS.contains(w)) {
        return true;
    }
    if words.iter().rev().take(2).any(|w| ADDRESSEES.contains(w)) {
        return true;
    }
    matches!(marker, "must" | "must not" | "should")
        && words.last().is_some_and(|w| !NOT_RULE_SUBJECTS.contains(w))
}

/// A list of marker phrases, searched for all at once (one pass of an
/// Aho-Corasick automaton over a sentence, not one search per marker).
pub(super) struct Phrases(AhoCorasick);

impl Phrases {
    fn new<'a>(markers: impl IntoIterator<Item = &'a str>) -> Phrases {
        Phrases(AhoCorasick::new(markers).expect("marker lists are small"))
    }

    /// The markers that occur in `text` (both lowercase) as whole words, by
    /// their index in the list, with where each occurrence starts; one may
    /// come more than once.
    fn found_at<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (usize, usize)> + 't {
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '\'');
        self.0
            .find_overlapping_iter(text)
            .filter(move |found| {
                boundary(text[..found.start()].chars().next_back())
                    && boundary(text[found.end()..].chars().next())
            })
            .map(|found| (found.pattern().as_usize(), found.start()))
    }

    /// Whether any marker occurs in `text` as whole words.
    pub(super) fn occurs_in(&self, text: &str) -> bool {
        self.found_at(text).next().is_some()
    }
}

pub(super) static CONSTRAINT: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(CONSTRAINT_MARKERS.iter().map(|(m, _)| *m)));
pub(super) static PREFERENCE: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(PREFERENCE_MARKERS.iter().copied()));
pub(super) static STRONG_DECISION: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(STRONG_DECISION_MARKERS.iter().copied()));
pub(super) static DECISION: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(DECISION_MARKERS.iter().copied()));
pub(super) static DONE: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(DONE_MARKERS.iter().copied()));
pub(super) static NEXT: LazyLock<Phrases> =
    LazyLock::new(|| Phrases::new(NEXT_MARKERS.iter().copied()));

/// Whether `phrase` occurs in `text` (both lowercase) as whole words.
#[cfg(test)]
pub(super) fn has_phrase(text: &str, phrase: &str) -> bool {
    Phrases::new([phrase]).occurs_in(text)
}

pub(super) fn normalize_quotes(text: &str) -> String {
    text.replace(['\u{2019}', '\u{2018}'], "'")
}

/// The sentences of prose: lines outside code fences, split after `.`, `!`
/// or `?` (outside backticks) followed by a space; markdown bullets and
/// headings stripped; XML-ish tag lines dropped. Each is on one line.
pub(super) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || trimmed.is_empty() || is_tag_line(trimmed) {
            continue;
        }
        let body = strip_list_marker(trimmed);
        let mut start = 0;
        let mut in_code = false;
        // Bytes, not chars: the marks are ASCII, and no byte of a longer
        // character is; a compaction splits megabytes of text.
        for (i, &byte) in body.as_bytes().iter().enumerate() {
            if byte == b'`' {
                in_code = !in_code;
            }
            if in_code || !matches!(byte, b'.' | b'!' | b'?') {
                continue;
            }
            if body[i + 1..]
                .chars()
                .next()
                .is_some_and(char::is_whitespace)
            {
                push_sentence(&body[start..=i], &mut out);
                start = i + 1;
            }
        }
        push_sentence(&body[start..], &mut out);
    }
    out
}

pub(super) fn push_sentence(text: &str, out: &mut Vec<String>) {
    let sentence = one_line(text);
    if sentence
        .chars()
        .filter(|c| c.is_alphabetic())
        .nth(2)
        .is_some()
    {
        out.push(sentence);
    }
}

pub(super) fn strip_list_marker(line: &str) -> &str {
    let line = line.trim_start_matches('#').trim_start();
    for marker in ["- ", "* ", "+ ", "> "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = line[digits..]
            .strip_prefix(". ")
            .or_else(|| line[digits..].strip_prefix(") "))
        {
            return rest.trim_start();
        }
    }
    line
}

/// `<tag>`, `</tag>`, `<tag attr="x">` alone on a line.
pub(super) fn is_tag_line(line: &str) -> bool {
    line.starts_with('<') && line.ends_with('>') && !line[1..line.len() - 1].contains(['<', '>'])
}

/// A user message as a goal: tag-only lines dropped, on one line.
pub(super) fn clean_user_text(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_tag_line(l))
        .collect();
    one_line(&kept.join(" "))
}

pub(super) fn first_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("").to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}
