//! PII and secret redaction before anything enters long-term memory
//! (compaction summaries, episodic items, facts, MEMORY.md), and of a
//! compaction's span before a summarizer reads it.
//!
//! Credentials are always redacted: one must never reach a summary or a
//! fact. Emails, phone numbers and card numbers are redacted unless the
//! configuration turns them off (`[redaction]`).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;

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

/// Credentials known by their shape, and values given to a name that says
/// they are one (`AWS_SECRET_ACCESS_KEY=…`, `"client_secret": "…"`). Where
/// an inner group matched, only that part is replaced, so the name stays
/// readable. No match spans two lines.
static SECRET: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    // Bytes, not chars: the classes stay small, so the search stays fast;
    // every match starts and ends next to an ASCII byte.
    regex::bytes::Regex::new(concat!(
        r"(?x-u)",
        r"(?-u:\b)(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}", // OpenAI, Anthropic
        r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}", // GitHub
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}",             // Slack
        r"|AKIA[0-9A-Z]{16}",                          // AWS access key id
        r"|AIza[0-9A-Za-z_\-]{35}",                    // Google API key
        r"|glpat-[A-Za-z0-9_\-]{20,}",                 // GitLab
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",      // Stripe
        r"|hf_[A-Za-z0-9]{30,}",                       // Hugging Face
        r"|npm_[A-Za-z0-9]{36}",                       // npm
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", // JWT
        r")",
        r"|(?i:bearer)[\ \t]+(?P<bearer>[A-Za-z0-9._\-]{20,})",
        r#"|(?i:authorization)["']?[\ \t]*[:=][\ \t]*["']?(?i:basic)[\ \t]+(?P<basic>[A-Za-z0-9+/]{12,}={0,2})"#,
        // user:password@ in a URL
        r"|[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<url>[^\s@/]+)@",
        // A value given to a name that says it is secret. It must end where
        // a literal ends: `token = cache.read(key)` is code, not a token.
        r"|(?i:password|passwd|pwd|passphrase|secret|credentials?)",
        r#"["']?[\ \t]*[:=][\ \t]*["']?(?P<named>[^\s"',;()]{8,})(?:[\s"',;]|$)"#,
        // Keys and tokens are random: their values have a digit.
        r"|(?i:api[_-]?key|[_-]key|token)",
        r#"["']?[\ \t]*[:=][\ \t]*["']?(?P<keyed>[^\s"',;()]*[0-9][^\s"',;()]*)(?:[\s"',;]|$)"#,
        // A password given in prose: "the admin password is hunter2!".
        r#"|(?i:password|passphrase|passwd)[\ \t]+(?:is|was|of)[\ \t]+["'`]?(?P<said>[^\s"'`,;]{5,}[^\s"'`,;.!?)])"#,
    ))
    .expect("a valid pattern")
});
/// A private key block, to its end (or the text's, when it is cut).
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
    )
    .expect("a valid pattern")
});
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}(?-u:\b)")
        .expect("a valid pattern")
});
static CARD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)(?:[0-9][ \-]?){12,18}[0-9](?-u:\b)").expect("a valid pattern")
});
/// Digits a card number has at least.
const CARD_MIN_DIGITS: usize = 13;
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\+[0-9]{1,3}[ .\-]?)?\(?[0-9]{2,4}\)?[ .\-][0-9]{3,4}[ .\-][0-9]{3,4}(?-u:\b)")
        .expect("a valid pattern")
});
/// Digits a phone number has at least (see [`looks_like_phone`]).
const PHONE_MIN_DIGITS: usize = 10;

/// `text` with secrets and the personal data `policy` names replaced by
/// `[REDACTED:<kind>]`, and what was replaced.
///
/// Card and phone numbers are looked for only in lines with enough digits:
/// a compaction redacts megabytes of its span before summarizing it.
///
/// ```
/// use agentmem::memory::redact::{redact, RedactionPolicy};
/// let (clean, found) = redact("key sk-ant-api03-abcdefghijklmnopqrstu, mail jo@example.com", RedactionPolicy::default());
/// assert_eq!(clean, "key [REDACTED:secret], mail [REDACTED:email]");
/// assert_eq!((found.secrets, found.emails), (1, 1));
/// ```
pub fn redact(text: &str, policy: RedactionPolicy) -> (String, Redacted) {
    let mut found = Redacted::default();
    let mut out = redact_secrets(text, &mut found.secrets);
    if policy.emails {
        out = replace(&out, &EMAIL, "email", &mut found.emails, |_| true);
    }
    if policy.cards || policy.phones {
        out = by_line(&out, |line| {
            let digits = line.bytes().filter(u8::is_ascii_digit).count();
            if digits < CARD_MIN_DIGITS.min(PHONE_MIN_DIGITS) {
                return None;
            }
            let mut line = line.to_owned();
            if policy.cards && digits >= CARD_MIN_DIGITS {
                line = replace(&line, &CARD, "card", &mut found.cards, |caps| {
                    passes_luhn(&caps[0])
                });
            }
            if policy.phones {
                line = replace(&line, &PHONE, "phone", &mut found.phones, |caps| {
                    looks_like_phone(&caps[0])
                });
            }
            Some(line)
        });
    }
    (out, found)
}

/// `text` with its secrets replaced, counted in `secrets`.
fn redact_secrets(text: &str, secrets: &mut usize) -> String {
    let text = replace(text, &PRIVATE_KEY, "secret", secrets, |_| true);
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let bytes = text.as_bytes();
    // Finding is fast; resolving groups is not, so only matches are resolved.
    for found in SECRET.find_iter(bytes) {
        let Some(caps) = SECRET.captures_at(&bytes[..found.end()], found.start()) else {
            continue;
        };
        if !is_secret(&caps) {
            continue;
        }
        let hidden = inner_or_whole(&caps);
        out.push_str(&text[done..hidden.start()]);
        out.push_str("[REDACTED:secret]");
        done = hidden.end();
        *secrets += 1;
    }
    out.push_str(&text[done..]);
    out
}

/// A pattern's inner group, when one matched: the part to hide.
fn inner_or_whole<'h>(caps: &regex::bytes::Captures<'h>) -> regex::bytes::Match<'h> {
    caps.iter()
        .skip(1)
        .flatten()
        .next()
        .unwrap_or_else(|| caps.get(0).expect("a match"))
}

/// Whether a match of [`SECRET`] is one.
fn is_secret(caps: &regex::bytes::Captures<'_>) -> bool {
    if let Some(value) = caps.name("keyed") {
        return value.len() >= 8;
    }
    if let Some(said) = caps.name("said") {
        // "the password is incorrect" says no password.
        return said.as_bytes().iter().any(|b| !b.is_ascii_alphabetic());
    }
    true
}

/// `text` with each line `change` returns a new version of replaced by it.
fn by_line(text: &str, mut change: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match change(line) {
            Some(changed) => out.push_str(&changed),
            None => out.push_str(line),
        }
    }
    out
}

/// `event` with its content, error text and the strings of its tool
/// arguments redacted: what a summarizer may read. A summary restructures
/// what it reads (a `KEY=value` line becomes a list of identifiers, the
/// value alone), so secrets are taken out before, not only after.
///
/// ```
/// use agentmem::{event::Event, memory::redact::{redact_event, RedactionPolicy}};
/// let call = Event::tool_call("c1", "bash", serde_json::json!({"cmd": "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG"}));
/// let clean = redact_event(call, RedactionPolicy::default());
/// assert_eq!(clean.tool_args.unwrap()["cmd"], "export AWS_SECRET_ACCESS_KEY=[REDACTED:secret]");
/// ```
pub fn redact_event(mut event: Event, policy: RedactionPolicy) -> Event {
    event.content = redact(&event.content, policy).0;
    event.tool_error = event.tool_error.map(|e| redact(&e, policy).0);
    if let Some(args) = &mut event.tool_args {
        redact_strings(args, policy);
    }
    event
}

fn redact_strings(value: &mut Value, policy: RedactionPolicy) {
    match value {
        Value::String(text) => *text = redact(text, policy).0,
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, policy)),
        Value::Object(fields) => fields.values_mut().for_each(|v| redact_strings(v, policy)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn replace(
    text: &str,
    pattern: &Regex,
    kind: &str,
    count: &mut usize,
    keep: impl Fn(&regex::Captures<'_>) -> bool,
) -> String {
    pattern
        .replace_all(text, |caps: &regex::Captures<'_>| {
            if keep(caps) {
                *count += 1;
                format!("[REDACTED:{kind}]")
            } else {
                caps[0].to_owned()
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
    fn named_credentials_lose_their_value_and_keep_their_name() {
        let cases = [
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCY",
                "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]",
            ),
            (
                r#"{"client_secret": "Gq7Wz2Lk9Xp4Rt6Y"}"#,
                r#"{"client_secret": "[REDACTED:secret]"}"#,
            ),
            (
                "postgres://admin:Tr0ub4dor-3@db.internal:5432/app",
                "postgres://admin:[REDACTED:secret]@db.internal:5432/app",
            ),
            (
                "curl -H 'Authorization: Basic YWRtaW46czNjcjN0'",
                "curl -H 'Authorization: Basic [REDACTED:secret]'",
            ),
            (
                "the admin password is correct-horse-9.",
                "the admin password is [REDACTED:secret].",
            ),
            (
                "STRIPE=sk_live_51HqLkJ2eZvKYlo2C9mN8 HF=hf_QwErTyUiOpAsDfGhJkLzXcVbNm012345",
                "STRIPE=[REDACTED:secret] HF=[REDACTED:secret]",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nok",
                "[REDACTED:secret]\nok",
            ),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk…", "[REDACTED:secret]"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                redact(text, RedactionPolicy::default()).0,
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn words_that_only_look_like_credentials_are_kept() {
        let text = "max_tokens: 4096000, primary_key=True, the password is incorrect, \
                    basic configuration works, commit 3f9d2c1b7a5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c, \
                    see https://docs.example.com:8443/api/v2, tokenizer: o200k_base";
        assert_eq!(redact(text, RedactionPolicy::default()).0, text);
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
