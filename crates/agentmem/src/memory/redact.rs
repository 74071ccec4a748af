//! PII and secret redaction before anything enters long-term memory
//! (compaction summaries, episodic items, MEMORY.md).
//!
//! API keys and tokens are always redacted: a credential must never reach a
//! summary or a fact. Emails, phone numbers and card numbers are redacted
//! unless the configuration turns them off (`[redaction]`).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Which kinds of personal data are redacted (secrets always are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactionPolicy {
    pub emails: bool,
    pub phones: bool,
    pub cards: bool,
}

impl Default for RedactionPolicy {
    fn default() -> Self {
        RedactionPolicy {
            emails: true,
            phones: true,
            cards: true,
        }
    }
}

/// What one redaction replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Redacted {
    pub secrets: usize,
    pub emails: usize,
    pub phones: usize,
    pub cards: usize,
}

static SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?x)",
        r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}", // OpenAI, Anthropic
        r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}", // GitHub
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}",             // Slack
        r"|AKIA[0-9A-Z]{16}",                          // AWS access key id
        r"|AIza[0-9A-Za-z_\-]{35}",                    // Google API key
        r"|glpat-[A-Za-z0-9_\-]{20,}",                 // GitLab
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", // JWT
        r")",
        r"|(?i:bearer)\s+[A-Za-z0-9._\-]{20,}",
        r#"|(?i:(?:api[_-]?key|secret|token|password|passwd)["']?\s*[:=]\s*["']?)[^\s"',;]{8,}"#,
    ))
    .expect("a valid pattern")
});
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b").expect("a valid pattern")
});
static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:\d[ \-]?){12,18}\d\b").expect("a valid pattern"));
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\+\d{1,3}[ .\-]?)?\(?\d{2,4}\)?[ .\-]\d{3,4}[ .\-]\d{3,4}\b")
        .expect("a valid pattern")
});

/// `text` with secrets and the personal data `policy` names replaced by
/// `[REDACTED:<kind>]`, and what was replaced.
///
/// ```
/// use agentmem::memory::redact::{redact, RedactionPolicy};
/// let (clean, found) = redact("key sk-ant-api03-abcdefghijklmnopqrstu, mail jo@example.com", RedactionPolicy::default());
/// assert_eq!(clean, "key [REDACTED:secret], mail [REDACTED:email]");
/// assert_eq!((found.secrets, found.emails), (1, 1));
/// ```
pub fn redact(text: &str, policy: RedactionPolicy) -> (String, Redacted) {
    let mut found = Redacted::default();
    let mut out = replace(text, &SECRET, "secret", &mut found.secrets, |_| true);
    if policy.emails {
        out = replace(&out, &EMAIL, "email", &mut found.emails, |_| true);
    }
    if policy.cards {
        out = replace(&out, &CARD, "card", &mut found.cards, passes_luhn);
    }
    if policy.phones {
        out = replace(&out, &PHONE, "phone", &mut found.phones, looks_like_phone);
    }
    (out, found)
}

fn replace(
    text: &str,
    pattern: &Regex,
    kind: &str,
    count: &mut usize,
    keep: impl Fn(&str) -> bool,
) -> String {
    pattern
        .replace_all(text, |caps: &regex::Captures<'_>| {
            let matched = &caps[0];
            if keep(matched) {
                *count += 1;
                format!("[REDACTED:{kind}]")
            } else {
                matched.to_owned()
            }
        })
        .into_owned()
}

/// Card numbers pass the Luhn check; most other long digit runs do not.
fn passes_luhn(candidate: &str) -> bool {
    let digits: Vec<u32> = candidate.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                if d * 2 > 9 {
                    d * 2 - 9
                } else {
                    d * 2
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A phone number has 10 to 15 digits; dates and versions have fewer.
fn looks_like_phone(candidate: &str) -> bool {
    let digits = candidate.chars().filter(char::is_ascii_digit).count();
    (10..=15).contains(&digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_every_kind_and_keeps_the_rest() {
        let text = "Use OPENAI key sk-proj-AbCdEf0123456789xyzXYZ and AKIAIOSFODNN7EXAMPLE; \
                    token: ghp_0123456789abcdefghijklmnopqrstuvwxyz; Authorization: Bearer abc.def-ghi_jkl0123456789; \
                    password=hunter2hunter2; mail ada@lovelace.org or call +44 20 7946 0958; \
                    card 4111 1111 1111 1111. Build 1.2.3 ran 2026-11-22 in 12 ms on port 8080.";
        let (clean, found) = redact(text, RedactionPolicy::default());
        for secret in [
            "sk-proj", "AKIA", "ghp_", "abc.def", "hunter2", "ada@", "7946", "4111",
        ] {
            assert!(!clean.contains(secret), "{secret} survived: {clean}");
        }
        for kept in ["Build 1.2.3", "2026-11-22", "12 ms", "port 8080"] {
            assert!(clean.contains(kept), "{kept} was redacted: {clean}");
        }
        assert_eq!(
            found,
            Redacted {
                secrets: 5,
                emails: 1,
                phones: 1,
                cards: 1
            }
        );
    }

    #[test]
    fn personal_data_can_be_kept_but_secrets_never() {
        let policy = RedactionPolicy {
            emails: false,
            phones: false,
            cards: false,
        };
        let (clean, _) = redact(
            "ada@lovelace.org sk-ant-api03-abcdefghijklmnopqrstu",
            policy,
        );
        assert_eq!(clean, "ada@lovelace.org [REDACTED:secret]");
    }
}
