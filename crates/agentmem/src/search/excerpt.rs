//! The excerpt a search hit is shown by: the part of the event around what
//! matched, wherever in the event it lies, matched terms in `[brackets]`.

/// What the index puts before each matched term (see [`excerpt`]): a
/// control character, which no query term contains.
pub(crate) const MATCH_OPEN: char = '\u{2}';
/// What the index puts after each matched term.
pub(crate) const MATCH_CLOSE: char = '\u{3}';
/// Characters shown before the excerpt's first matched term.
const EXCERPT_BEFORE_CHARS: usize = 80;
/// Characters shown from the excerpt's first matched term on.
const EXCERPT_AFTER_CHARS: usize = 240;
/// How far a cut moves to fall between words rather than inside one.
const WORD_SNAP_CHARS: usize = 20;

/// `highlighted` (an event's text with each matched term between
/// [`MATCH_OPEN`] and [`MATCH_CLOSE`]) on one line, cut to the window that
/// holds the most distinct matched terms, with `…` where it was cut.
pub(crate) fn excerpt(highlighted: &str) -> String {
    let chars: Vec<char> = flattened(highlighted).chars().collect();
    let terms = matched_terms(&chars);
    let start = densest_start(&terms);
    let mut low = start.saturating_sub(EXCERPT_BEFORE_CHARS);
    let mut high = start.saturating_add(EXCERPT_AFTER_CHARS).min(chars.len());
    if low > 0 {
        low = snap(&chars, low, start, Snap::Forward);
    }
    if high < chars.len() {
        high = snap(&chars, high, start, Snap::Backward);
    }
    let mut text = String::new();
    if low > 0 {
        text.push_str("… ");
    }
    text.push_str(&bracketed(&chars[low..high]));
    if high < chars.len() {
        text.push_str(" …");
    }
    text
}

/// The text with every run of whitespace made one space.
fn flattened(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where each matched term starts (at its [`MATCH_OPEN`]), with the term in
/// lower case.
fn matched_terms(chars: &[char]) -> Vec<(usize, String)> {
    let mut terms = Vec::new();
    let mut open: Option<usize> = None;
    for (at, &c) in chars.iter().enumerate() {
        match (c, open) {
            (MATCH_OPEN, _) => open = Some(at),
            (MATCH_CLOSE, Some(start)) => {
                let term: String = chars[start + 1..at].iter().collect();
                terms.push((start, term.to_lowercase()));
                open = None;
            }
            _ => {}
        }
    }
    terms
}

/// The start of the matched term whose window holds the most distinct
/// terms (the first such); 0 when nothing is marked.
fn densest_start(terms: &[(usize, String)]) -> usize {
    let distinct_from = |from: usize| {
        let mut seen: Vec<&str> = terms
            .iter()
            .filter(|(at, _)| (from..from.saturating_add(EXCERPT_AFTER_CHARS)).contains(at))
            .map(|(_, term)| term.as_str())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    terms
        .iter()
        .map(|(at, _)| (distinct_from(*at), *at))
        .fold(
            None,
            |best: Option<(usize, usize)>, (count, at)| match best {
                Some((most, _)) if most >= count => best,
                Some(_) | None => Some((count, at)),
            },
        )
        .map_or(0, |(_, at)| at)
}

/// Which way a cut moves to reach a space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Snap {
    Forward,
    Backward,
}

/// `cut` moved to the nearest space within [`WORD_SNAP_CHARS`], never past
/// `keep` (the first matched term); `cut` itself when there is none.
fn snap(chars: &[char], cut: usize, keep: usize, way: Snap) -> usize {
    let found = match way {
        Snap::Forward => (cut..cut.saturating_add(WORD_SNAP_CHARS).min(keep))
            .find(|&at| chars[at] == ' ')
            .map(|at| at + 1),
        Snap::Backward => (cut.saturating_sub(WORD_SNAP_CHARS).max(keep + 1)..cut)
            .rev()
            .find(|&at| chars[at] == ' '),
    };
    found.unwrap_or(cut)
}

/// The window with its marks made brackets; a mark whose partner lies
/// outside the window is dropped or closed.
fn bracketed(window: &[char]) -> String {
    let mut text = String::with_capacity(window.len());
    let mut open = false;
    for &c in window {
        match (c, open) {
            (MATCH_OPEN, _) => {
                text.push('[');
                open = true;
            }
            (MATCH_CLOSE, true) => {
                text.push(']');
                open = false;
            }
            (MATCH_CLOSE, false) => {}
            (other, _) => text.push(other),
        }
    }
    if open {
        text.push(']');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(text: &str) -> String {
        text.replace('[', &MATCH_OPEN.to_string())
            .replace(']', &MATCH_CLOSE.to_string())
    }

    #[test]
    fn a_match_deep_in_a_long_text_is_shown_with_what_comes_before_it() {
        let filler = "word ".repeat(200);
        let text = marked(&format!(
            "{filler}panicked at lexer.rs:88: [unterminated] [heredoc] {filler}"
        ));
        let shown = excerpt(&text);
        assert!(shown.starts_with("… word"), "{shown}");
        assert!(shown.ends_with(" …"), "{shown}");
        assert!(
            shown.contains("lexer.rs:88: [unterminated] [heredoc] word"),
            "{shown}"
        );
        assert!(shown.chars().count() <= EXCERPT_BEFORE_CHARS + EXCERPT_AFTER_CHARS + 4);
    }

    #[test]
    fn the_window_with_every_term_wins_over_an_earlier_lone_one() {
        let filler = "word ".repeat(100);
        let text = marked(&format!(
            "[index] early {filler} a [composite] [index] here {filler}"
        ));
        let shown = excerpt(&text);
        assert!(shown.contains("a [composite] [index] here"), "{shown}");
        assert!(!shown.contains("early"), "{shown}");
    }

    #[test]
    fn a_short_text_is_shown_whole_and_unmarked_text_from_its_start() {
        assert_eq!(
            excerpt(&marked("the [build]\n  fails")),
            "the [build] fails"
        );
        assert_eq!(excerpt("no marks"), "no marks");
    }
}
