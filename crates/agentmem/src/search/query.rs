//! Free text to an FTS5 query.
//!
//! Every word becomes a quoted term and the terms are joined by `OR`: a
//! question then matches the events that share most of its rarer words (BM25
//! does the weighting), and no input — quotes, `NEAR`, `*`, a stray
//! parenthesis — can be misread as query syntax.

/// The most words a query keeps: a pasted log as a question would otherwise
/// make every search scan most of the index.
pub(crate) const MAX_QUERY_TERMS: usize = 32;

/// Words too common to tell one event from another.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "for", "from", "had", "has", "have", "having", "he", "her", "here",
    "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "me", "might", "more", "most", "my", "myself", "no", "nor", "not", "now",
    "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "yourself",
];

/// Words that answer or acknowledge without asking anything: "ok, go
/// ahead", "yes please", "thanks!". Kept apart from [`STOPWORDS`]: "go",
/// "right" and "continue" are words worth searching for in other company.
const ACKNOWLEDGEMENTS: &[&str] = &[
    "ahead", "alright", "cool", "continue", "do", "done", "fine", "go", "good", "great", "k",
    "lgtm", "nice", "ok", "okay", "perfect", "please", "proceed", "right", "sure", "thank",
    "thanks", "thx", "y", "yeah", "yep", "yes",
];

/// Whether `text` says something a search could look for: a word that is
/// neither a stopword nor an acknowledgement. "ok, go ahead" says nothing,
/// so recall keeps the question before it.
///
/// ```
/// use agentmem::search::query::says_something;
/// assert!(says_something("fix the flaky auth test"));
/// assert!(!says_something("Ok, go ahead!"));
/// assert!(!says_something("yes please, thanks"));
/// ```
pub fn says_something(text: &str) -> bool {
    word_sequence(text)
        .any(|w| !STOPWORDS.contains(&w.as_str()) && !ACKNOWLEDGEMENTS.contains(&w.as_str()))
}

/// The distinct searchable words of `text`, lowercased, stopwords left out
/// (unless nothing else is left), in order of first appearance, at most
/// `MAX_QUERY_TERMS`.
///
/// ```
/// use agentmem::search::query::terms;
/// assert_eq!(terms("What did Caroline research?"), ["caroline", "research"]);
/// assert_eq!(terms("what is it"), ["what", "is", "it"]);
/// ```
pub fn terms(text: &str) -> Vec<String> {
    // Read only as far as the terms go: a query may be a whole log.
    let mut seen = std::collections::HashSet::new();
    let (mut content, mut stopwords) = (Vec::new(), Vec::new());
    for word in word_sequence(text) {
        if content.len() == MAX_QUERY_TERMS {
            break;
        }
        if seen.contains(&word) {
            continue;
        }
        seen.insert(word.clone());
        if !STOPWORDS.contains(&word.as_str()) {
            content.push(word);
        } else if stopwords.len() < MAX_QUERY_TERMS {
            stopwords.push(word);
        }
    }
    if content.is_empty() {
        stopwords
    } else {
        content
    }
}

/// The FTS5 `MATCH` expression for `text`, or `None` when it has no words.
///
/// ```
/// use agentmem::search::query::match_expression;
/// assert_eq!(match_expression("error: \"E0502\" (borrow)").unwrap(), r#""error" OR "e0502" OR "borrow""#);
/// assert!(match_expression("?!").is_none());
/// ```
pub fn match_expression(text: &str) -> Option<String> {
    any_of(&terms(text))
}

/// The FTS5 expression matching documents with any of `terms`.
pub fn any_of(terms: &[String]) -> Option<String> {
    joined(terms, " OR ")
}

/// The FTS5 expression matching documents with all of `terms`.
pub fn all_of(terms: &[String]) -> Option<String> {
    joined(terms, " AND ")
}

fn joined(terms: &[String], operator: &str) -> Option<String> {
    (!terms.is_empty()).then(|| {
        terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(operator)
    })
}

/// Those of `names` that `text` holds as whole words, in any case
/// (`What does Melanie's son like?` names `Melanie`).
pub fn names_in(text: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    let words: Vec<String> = word_sequence(text).collect();
    names
        .into_iter()
        .filter(|name| {
            let name_words: Vec<String> = word_sequence(name).collect();
            !name_words.is_empty() && words.windows(name_words.len()).any(|w| w == name_words)
        })
        .collect()
}

/// The words of `text`, lowercased, in order.
pub(crate) fn word_sequence(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}
