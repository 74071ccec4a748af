//! PII and secret redaction before anything enters long-term memory
//! (compaction summaries, episodic items, facts, MEMORY.md, session titles),
//! of a compaction's span before a summarizer reads it, and of what recall
//! shows a session of another one's history.
//!
//! Credentials are always redacted: one must never reach a summary or a
//! fact. Emails, phone numbers, card numbers, US social security numbers
//! and IBANs are redacted unless the configuration turns them off
//! (`[redaction]`).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::event::Event;

/// Which kinds of personal data are redacted (secrets always are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactionPolicy {
    /// Email addresses.
    pub emails: bool,
    /// Phone numbers.
    pub phones: bool,
    /// Payment card numbers.
    pub cards: bool,
    /// US social security numbers (`123-45-6789`).
    pub ssns: bool,
    /// International bank account numbers, checked by their mod-97 digits.
    pub ibans: bool,
}

impl Default for RedactionPolicy {
    fn default() -> Self {
        RedactionPolicy {
            emails: true,
            phones: true,
            cards: true,
            ssns: true,
            ibans: true,
        }
    }
}

/// What one redaction replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Redacted {
    /// Secrets (keys, tokens, passwords) redacted.
    pub secrets: usize,
    /// Email addresses redacted.
    pub emails: usize,
    /// Phone numbers redacted.
    pub phones: usize,
    /// Payment card numbers redacted.
    pub cards: usize,
    /// US social security numbers redacted.
    pub ssns: usize,
    /// IBANs redacted.
    pub ibans: usize,
}

impl Redacted {
    /// Whether anything was replaced.
    pub fn is_empty(&self) -> bool {
        *self == Redacted::default()
    }
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
        r"|xox[abeprs]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}", // Slack
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}",                       // AWS access key id
        r"|AIza[0-9A-Za-z_\-]{35}|GOCSPX-[A-Za-z0-9_\-]{20,}", // Google
        r"|glpat-[A-Za-z0-9_\-]{20,}",                       // GitLab
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}", // Stripe
        r"|hf_[A-Za-z0-9]{30,}",                             // Hugging Face
        r"|npm_[A-Za-z0-9]{36}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{16,}", // npm, PyPI
        r"|dop_v1_[a-f0-9]{64}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dapi[a-f0-9]{32}", // DigitalOcean, Shopify, Databricks
        r"|SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",                            // SendGrid
        r"|SK[0-9a-fA-F]{32}(?-u:\b)", // Twilio API key
        r"|[A-Za-z0-9_\-.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}", // Azure AD client secret
        r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", // JWT
        r")",
        r#"|(?i:authorization)["']?[\ \t]*[:=][\ \t]*["']?"#,
        r"(?i:basic|bearer|token|bot|digest|apikey|api-key|ssws|sharedkey)[\ \t]+",
        r"(?P<auth>[A-Za-z0-9+/._~\-]{8,}={0,2})",
        r"|(?i:bearer)[\ \t]+(?P<bearer>[A-Za-z0-9._\-]{20,})",
        // user:password@ in a URL
        r"|[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<url>[^\s@/]+)@",
        r"|hooks\.slack\.com/(?:services|workflows|triggers)/(?P<slack>[A-Za-z0-9/_\-]{16,})",
        r"|discord(?:app)?\.com/api/webhooks/(?P<discord>[0-9]+/[A-Za-z0-9_\-]{16,})",
        // Azure storage and service bus keys, shared access signatures
        r"|(?i:accountkey|sharedaccesskey)=(?P<azure>[A-Za-z0-9+/]{16,}={0,2})",
        r"|[?&;]sig=(?P<sas>[A-Za-z0-9%+/]{16,}={0,2})",
        // A value given to a name that says it is secret, whatever quotes
        // (escaped ones too, as in JSON inside a JSON string) stand around
        // the name and the value: `"client_secret": "…"`, `\"SecretAccessKey\":
        // \"…\"`, `api_key = '…'`, YAML `password: …`. The name is matched
        // whole and judged in code ([`named_credential`]): `max_tokens` and
        // `token_count` name none. The value must end where a literal ends:
        // `token = cache.read(key)` is code, not a token.
        r"|[A-Za-z0-9_.\-]*(?i:pass|pwd|secret|credential|token|key)[A-Za-z0-9_.\-]*",
        r#"\\*["'`]?[\ \t]*(?::=|=>|[:=])[\ \t]*\\*["'`]?"#,
        r#"(?P<named>[^\s"'`\\,;(){}\[\]<>&]{4,})(?:[\s"'`\\,;&)}\]]|$)"#,
        // A password given in prose: "the admin password is hunter2!",
        // "signs in with the password Tr0ub4dor-3x", "my pwd is …".
        r#"|(?:(?i:password|passphrase|passwd)[\ \t]+(?:(?i:is|was|of)[\ \t]+)?"#,
        r"|(?i:pwd|passcode)[\ \t]+(?i:is|was)[\ \t]+)",
        r#"["'`]?(?P<said>[^\s"'`,;]{5,}[^\s"'`,;.!?)])"#,
    ))
    .expect("a valid pattern")
});
/// Passwords given to commands: `curl -u user:pw`, `mysql -ppw`, `sshpass
/// -p pw`, `redis-cli -a pw`. Apart from [`SECRET`], and looked for only in texts that name
/// one of the commands: a pattern that spans a command line costs every
/// other search a third more.
static COMMAND_PASSWORD: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(concat!(
        r"(?x-u)",
        r#"(?-u:\b)curl(?-u:\b)[^\n]*?[\ \t](?:-u[\ \t]*|--user[\ \t=]+)["']?[^\s:"']+:"#,
        r#"(?P<curl>[^\s"']+)"#,
        r"|(?-u:\b)(?:mysql|mysqldump|mysqladmin|mariadb)(?-u:\b)[^\n]*?[\ \t]-p",
        r#"(?P<mysql>'[^'\n]*'|\x22[^\x22\n]*\x22|[^\s"',;]+)"#,
        r#"|(?-u:\b)sshpass[\ \t]+-p[\ \t]*(?P<sshpass>'[^'\n]*'|\x22[^\x22\n]*\x22|[^\s"',;]+)"#,
        r"|(?-u:\b)redis-cli(?-u:\b)[^\n]*?[\ \t](?:-a|--pass)[\ \t]+",
        r#"(?P<redis>'[^'\n]*'|\x22[^\x22\n]*\x22|[^\s"',;]+)"#,
    ))
    .expect("a valid pattern")
});
/// The commands [`COMMAND_PASSWORD`] knows.
static PASSWORD_COMMANDS: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::new(["curl", "mysql", "mariadb", "sshpass", "redis-cli"])
        .expect("valid words")
});
/// A private key block, to its end (or the text's, when it is cut).
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    compiled(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    )
});
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| compiled(r"(?-u:\b)[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}(?-u:\b)"));
static CARD: LazyLock<Regex> =
    LazyLock::new(|| compiled(r"(?-u:\b)(?:[0-9][ \-]?){12,18}[0-9](?-u:\b)"));
/// Digits a card number has at least.
const CARD_MIN_DIGITS: usize = 13;
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    compiled(r"(?:\+[0-9]{1,3}[ .\-]?)?\(?[0-9]{2,4}\)?[ .\-][0-9]{3,4}[ .\-][0-9]{3,4}(?-u:\b)")
});
/// Digits a phone number has at least (see [`looks_like_phone`]).
const PHONE_MIN_DIGITS: usize = 10;
static SSN: LazyLock<Regex> =
    LazyLock::new(|| compiled(r"(?-u:\b)[0-9]{3}-[0-9]{2}-[0-9]{4}(?-u:\b)"));
/// Digits a social security number has.
const SSN_DIGITS: usize = 9;
/// Up to 34 characters, in groups of four when written for people.
static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    compiled(r"(?-u:\b)[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?(?-u:\b)")
});
/// Digits an IBAN has at least (its check digits and account number; the
/// Netherlands' have 12, most have more).
const IBAN_MIN_DIGITS: usize = 10;
/// The characters of an IBAN, spaces aside.
const IBAN_CHARS: std::ops::RangeInclusive<usize> = 15..=34;

/// Compiles every pattern now, if no text has needed them yet.
pub(crate) fn compile_patterns() {
    LazyLock::force(&SECRET);
    LazyLock::force(&PRIVATE_KEY);
    LazyLock::force(&EMAIL);
    LazyLock::force(&COMMAND_PASSWORD);
    LazyLock::force(&PASSWORD_COMMANDS);
    for pattern in [&CARD, &PHONE, &SSN, &IBAN] {
        LazyLock::force(pattern);
    }
}

fn compiled(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

/// `text` with secrets and the personal data `policy` names replaced by
/// `[REDACTED:<kind>]`, and what was replaced.
///
/// Numbers (cards, phones, SSNs, IBANs) are looked for only in lines with
/// enough digits: a compaction redacts megabytes of its span before
/// summarizing it.
///
/// ```
/// use agentmem::redact::{redact, RedactionPolicy};
/// let (clean, found) = redact("key sk-ant-api03-abcdefghijklmnopqrstu, mail jo@example.com", RedactionPolicy::default());
/// assert_eq!(clean, "key [REDACTED:secret], mail [REDACTED:email]");
/// assert_eq!((found.secrets, found.emails), (1, 1));
/// ```
pub fn redact(text: &str, policy: RedactionPolicy) -> (String, Redacted) {
    let mut found = Redacted::default();
    let mut out = redact_secrets(text, &mut found.secrets);
    if policy.emails {
        out = replace(&out, &EMAIL, "email", &mut found.emails, |m| {
            looks_like_email(m.text()).then(|| 0..m.text().len())
        });
    }
    let least_digits = [
        (policy.cards, CARD_MIN_DIGITS),
        (policy.phones, PHONE_MIN_DIGITS),
        (policy.ssns, SSN_DIGITS),
        (policy.ibans, IBAN_MIN_DIGITS),
    ]
    .into_iter()
    .filter_map(|(on, digits)| on.then_some(digits))
    .min();
    if let Some(least_digits) = least_digits {
        out = by_line(&out, |line| {
            let digits = line.bytes().filter(u8::is_ascii_digit).count();
            (digits >= least_digits).then(|| redact_numbers(line, digits, policy, &mut found))
        });
    }
    (out, found)
}

/// `line` (holding `digits` digits) with the numbers `policy` names replaced.
fn redact_numbers(
    line: &str,
    digits: usize,
    policy: RedactionPolicy,
    found: &mut Redacted,
) -> String {
    let mut line = line.to_owned();
    if policy.ibans {
        line = replace(&line, &IBAN, "iban", &mut found.ibans, valid_iban_prefix);
    }
    if policy.cards && digits >= CARD_MIN_DIGITS {
        line = replace(&line, &CARD, "card", &mut found.cards, |m| {
            looks_like_card(m).then(|| 0..m.text().len())
        });
    }
    if policy.ssns {
        line = replace(&line, &SSN, "ssn", &mut found.ssns, |m| {
            looks_like_ssn(m).then(|| 0..m.text().len())
        });
    }
    if policy.phones && digits >= PHONE_MIN_DIGITS {
        line = replace(&line, &PHONE, "phone", &mut found.phones, |m| {
            (looks_like_phone(m.text()) && !m.is_inside_a_name()).then(|| 0..m.text().len())
        });
    }
    line
}

/// `text` with its secrets replaced, counted in `secrets`.
fn redact_secrets(text: &str, secrets: &mut usize) -> String {
    let text = replace(text, &PRIVATE_KEY, "secret", secrets, whole);
    let mut hidden = Vec::new();
    let mut text = hide(&text, &SECRET, secrets, &mut hidden);
    if PASSWORD_COMMANDS.is_match(&text) {
        text = hide(&text, &COMMAND_PASSWORD, secrets, &mut hidden);
    }
    hide_repeats(text, &hidden, secrets)
}

/// `text` with what each match of `pattern` that [`is_secret`] hides
/// replaced, counted in `secrets`; the values hidden are added to `hidden`.
fn hide(
    text: &str,
    pattern: &regex::bytes::Regex,
    secrets: &mut usize,
    hidden: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let bytes = text.as_bytes();
    // Finding is fast; resolving groups is not, so only matches are resolved.
    let mut at = 0;
    while let Some(found) = pattern.find_at(bytes, at) {
        let Some(caps) = pattern.captures_at(&bytes[..found.end()], found.start()) else {
            at = found.end().max(found.start() + 1);
            continue;
        };
        let value = inner_or_whole(&caps);
        if !is_secret(&caps, bytes) {
            // What a name that is no credential's is given may still be
            // one by its shape (`sort_key: sk-…`): looked for again.
            at = if value.start() > found.start() {
                value.start()
            } else {
                found.end().max(found.start() + 1)
            };
            continue;
        }
        out.push_str(&text[done..value.start()]);
        out.push_str(SECRET_MARKER);
        hidden.push(text[value.range()].to_owned());
        done = value.end();
        at = found.end().max(found.start() + 1);
        *secrets += 1;
    }
    out.push_str(&text[done..]);
    out
}

/// `text` with the values in `hidden` replaced wherever it says them again:
/// a password named once (`PGPASSWORD=…`) is as secret where a later
/// command gives it alone. Only values that look random are looked for
/// (at least [`REPEAT_MIN_BYTES`], with letters and digits): a name given
/// to a secret-named setting in code (`credentials = context.credentials`)
/// is no secret elsewhere.
fn hide_repeats(text: String, hidden: &[String], secrets: &mut usize) -> String {
    let mut text = text;
    let random = |value: &&String| {
        value.len() >= REPEAT_MIN_BYTES
            && value.bytes().any(|b| b.is_ascii_digit())
            && value.bytes().any(|b| b.is_ascii_alphabetic())
    };
    for value in hidden.iter().filter(random) {
        let repeats = text.matches(value.as_str()).count();
        if repeats > 0 {
            text = text.replace(value.as_str(), SECRET_MARKER);
            *secrets += repeats;
        }
    }
    text
}

/// What a secret is replaced by.
const SECRET_MARKER: &str = "[REDACTED:secret]";
/// The shortest hidden value also hidden where the text repeats it alone.
const REPEAT_MIN_BYTES: usize = 8;

/// A pattern's inner group, when one matched: the part to hide.
fn inner_or_whole<'h>(caps: &regex::bytes::Captures<'h>) -> regex::bytes::Match<'h> {
    caps.iter()
        .skip(1)
        .flatten()
        .next()
        .unwrap_or_else(|| caps.get(0).expect("a match"))
}

/// Whether a match of [`SECRET`] in `haystack` is one.
fn is_secret(caps: &regex::bytes::Captures<'_>, haystack: &[u8]) -> bool {
    let whole = caps.get(0).expect("a match");
    if let Some(value) = caps.name("named") {
        let name = setting_name(haystack, whole.start());
        let given = Given::of(haystack, value.start());
        let value = value.as_bytes();
        let credential = named_credential(name);
        if names_code(value, given, credential) {
            return false;
        }
        return match credential {
            // `password: string`, `secret: true` name no value; `PWD=/srv`
            // is the working directory.
            Some(Credential::Password { pwd }) => {
                (value.len() >= 8 || value.iter().any(|b| !b.is_ascii_alphabetic()))
                    && !(pwd && (value.starts_with(b"/") || value.starts_with(b"~")))
            }
            Some(Credential::Key) => value.len() >= 8,
            // Keys and tokens are random: their values have a digit.
            Some(Credential::MaybeKey) => value.len() >= 8 && value.iter().any(u8::is_ascii_digit),
            None => false,
        };
    }
    if let Some(said) = caps.name("said") {
        // "the password is incorrect" says no password, "my pwd is /srv"
        // a folder.
        let pwd = whole.as_bytes()[..3].eq_ignore_ascii_case(b"pwd");
        return looks_random(said.as_bytes()) && !(pwd && said.as_bytes().starts_with(b"/"));
    }
    true
}

/// How a setting's value is written after its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Given {
    /// In quotes: a literal.
    Quoted,
    /// Right after `=` (`DB_PASS=…`): a shell or `.env` literal.
    Tight,
    /// After a spaced `=` or a `:`: a literal or, in code, an expression.
    Spaced,
}

impl Given {
    /// How the value starting at `start` of `haystack` is given.
    fn of(haystack: &[u8], start: usize) -> Given {
        let before = |back: usize| start.checked_sub(back).map(|at| haystack[at]);
        match before(1) {
            Some(b'"' | b'\'' | b'`') => Given::Quoted,
            Some(b'=') if before(2).is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                Given::Tight
            }
            Some(_) | None => Given::Spaced,
        }
    }
}

/// Whether a setting's value is code, words or a label, not a credential:
/// a path through fields (`env.OPENAI_API_KEY`, `config.password`), a bare
/// name a key is set to in code (`apiKey: isLiteLLM ? …`), words joined by
/// `-` or `_`, each in one case (`'proxy-handled'`, `REDACTED_API_KEY`), or
/// the next name (`auth_token: Authorization: Token …`).
fn names_code(value: &[u8], given: Given, credential: Option<Credential>) -> bool {
    let identifier = |part: &[u8]| {
        part.first()
            .is_some_and(|b| b.is_ascii_alphabetic() || b"_$".contains(b))
            && part
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"_$".contains(b))
    };
    if value.ends_with(b":") {
        return true;
    }
    let fields: Vec<&[u8]> = value.split(|&b| b == b'.').collect();
    if fields.len() >= 2 && fields.iter().all(|field| identifier(field)) {
        return true;
    }
    let a_key = matches!(credential, Some(Credential::Key | Credential::MaybeKey));
    if a_key && given == Given::Spaced && identifier(value) && !value.iter().any(u8::is_ascii_digit)
    {
        return true;
    }
    let words: Vec<&[u8]> = value.split(|&b| b == b'-' || b == b'_').collect();
    words.len() >= 2
        && words.iter().all(|word| {
            (1..=12).contains(&word.len())
                && (word.iter().all(u8::is_ascii_lowercase)
                    || word.iter().all(u8::is_ascii_uppercase))
        })
}

/// Whether a word said in prose is not one: it has a digit or a sign, or
/// capitals inside it beside small letters (`vQmTzRbKpLwX`, not `Incorrect`).
fn looks_random(word: &[u8]) -> bool {
    let inner_capitals = word
        .iter()
        .skip(1)
        .filter(|b| b.is_ascii_uppercase())
        .count();
    word.iter().any(|b| !b.is_ascii_alphabetic())
        || (word.len() >= 8 && inner_capitals >= 2 && word.iter().any(u8::is_ascii_lowercase))
}

/// What a setting's name says its value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    /// A password or a secret (`pwd` when the name is the shell's `PWD`).
    Password { pwd: bool },
    /// A key or a token: `api_key`, `SecretAccessKey`, `access_token`.
    Key,
    /// Some other key (`cache_key`, `primary_key`): one only when random.
    MaybeKey,
}

/// The words before `key` that make it a credential's name.
const KEY_KINDS: [&str; 14] = [
    "api",
    "access",
    "secret",
    "private",
    "signing",
    "master",
    "encryption",
    "client",
    "auth",
    "account",
    "shared",
    "subscription",
    "license",
    "session",
];

/// What the setting named `name` holds, judged by its last word (split at
/// `_`, `-`, `.` and between small letters and capitals): `client_secret`
/// and `SecretAccessKey` name credentials, `token_count`, `max_tokens` and
/// `bypass` do not.
fn named_credential(name: &[u8]) -> Option<Credential> {
    let words = words_of(name);
    let (last, before) = match words.as_slice() {
        [] => return None,
        [last] => (last.as_str(), ""),
        [.., before, last] => (last.as_str(), before.as_str()),
    };
    let password = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "credential",
        "credentials",
    ];
    if password.iter().any(|word| last.ends_with(word)) || last == "pass" || last == "pw" {
        return Some(Credential::Password { pwd: false });
    }
    if last.ends_with("pwd") {
        return Some(Credential::Password { pwd: true });
    }
    if last.ends_with("token") {
        return Some(Credential::Key);
    }
    if let Some(kind) = last.strip_suffix("key") {
        if KEY_KINDS.contains(&kind) || (kind.is_empty() && KEY_KINDS.contains(&before)) {
            return Some(Credential::Key);
        }
        if kind.is_empty() && !before.is_empty() {
            return Some(Credential::MaybeKey);
        }
    }
    None
}

/// The lowercase words of a setting's name.
fn words_of(name: &[u8]) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for (i, &b) in name.iter().enumerate() {
        if !b.is_ascii_alphanumeric() {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            continue;
        }
        let previous = i.checked_sub(1).map(|p| name[p]);
        let next = name.get(i + 1);
        let starts_word = b.is_ascii_uppercase()
            && (previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                || (previous.is_some_and(|p| p.is_ascii_uppercase())
                    && next.is_some_and(u8::is_ascii_lowercase)));
        if starts_word && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.push(char::from(b.to_ascii_lowercase()));
    }
    words.extend((!word.is_empty()).then_some(word));
    words
}

/// The name a match of the named-value pattern starting at `start` gives:
/// its run of name characters, without the letter of an escape before it
/// (`\npassword: …` in a JSON string names `password`).
fn setting_name(haystack: &[u8], start: usize) -> &[u8] {
    let rest = &haystack[start..];
    let len = rest
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b"_.-".contains(&b)))
        .unwrap_or(rest.len());
    let name = &rest[..len];
    let escaped = start > 0
        && haystack[start - 1] == b'\\'
        && name.first().is_some_and(|b| b"ntr".contains(b));
    if escaped {
        &name[1..]
    } else {
        name
    }
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

/// The start of `text`, at most `max_bytes` of it, redacted. A longer text
/// is cut where no credential or number can be split (at its last line
/// break, else its last space, in the second half of the room), so what is
/// shown of a long text never ends in part of one.
///
/// ```
/// use agentmem::redact::{redact_start, RedactionPolicy};
/// let text = format!("{}token=ghp_{} done", "word ".repeat(10), "a1".repeat(20));
/// assert_eq!(redact_start(&text, 60, RedactionPolicy::default()), "word ".repeat(10).trim_end());
/// ```
pub fn redact_start(text: &str, max_bytes: usize, policy: RedactionPolicy) -> String {
    let start = if text.len() <= max_bytes {
        text
    } else {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = &text[..end];
        let boundary = head
            .rfind('\n')
            .filter(|&at| at >= end / 2)
            .or_else(|| head.rfind(char::is_whitespace).filter(|&at| at >= end / 2));
        &head[..boundary.unwrap_or(end)]
    };
    redact(start, policy).0
}

/// `event` with every text it carries redacted (content, error text,
/// arguments, structured result, provider items, working-memory patch,
/// unknown fields): what a summarizer may read and a compaction keeps. A
/// summary restructures what it reads (a `KEY=value` line becomes a list of
/// identifiers, the value alone), so secrets are taken out before, not only
/// after. Ids, names, times and labels are kept: they pair and order events.
///
/// ```
/// use agentmem::{Event, redact::{redact_event, RedactionPolicy}};
/// let call = Event::tool_call("c1", "bash", serde_json::json!({"cmd": "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG"}));
/// let clean = redact_event(call, RedactionPolicy::default());
/// assert_eq!(clean.tool_args.unwrap()["cmd"], "export AWS_SECRET_ACCESS_KEY=[REDACTED:secret]");
/// ```
pub fn redact_event(mut event: Event, policy: RedactionPolicy) -> Event {
    // Every field is named, so a field added to `Event` does not compile
    // here until it is decided whether it holds text to redact.
    let Event {
        id: _,
        ts: _,
        turn_id: _,
        seq: _,
        trace_type: _,
        content,
        source_event: _,
        media: _,
        tool_name: _,
        tool_call_id: _,
        tool_args,
        tool_result,
        tool_error,
        correlation_id: _,
        tags: _,
        tool_result_ref: _,
        usage: _,
        opaque,
        working_memory,
        extra,
    } = &mut event;
    *content = redact(content, policy).0;
    if let Some(error) = tool_error {
        *error = redact(error, policy).0;
    }
    for value in [tool_args, tool_result, opaque].into_iter().flatten() {
        redact_strings(value, policy);
    }
    if let Some(update) = working_memory {
        redact_strings(&mut update.patch.patch, policy);
    }
    let redacted: Vec<(String, Value)> = extra
        .iter()
        .filter_map(|(key, raw)| {
            let mut value: Value = serde_json::from_str(raw.get()).ok()?;
            let before = value.clone();
            redact_strings(&mut value, policy);
            // A field with nothing to hide keeps its text as written.
            (value != before).then(|| (key.to_owned(), value))
        })
        .collect();
    for (key, value) in redacted {
        extra.insert(key, value);
    }
    event
}

/// Redacts every string inside `value`.
pub(crate) fn redact_strings(value: &mut Value, policy: RedactionPolicy) {
    match value {
        Value::String(text) => *text = redact(text, policy).0,
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, policy)),
        Value::Object(fields) => fields.values_mut().for_each(|v| redact_strings(v, policy)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A match of a personal-data pattern, with the text around it.
struct Candidate<'t> {
    line: &'t str,
    at: Range<usize>,
}

impl<'t> Candidate<'t> {
    fn text(&self) -> &'t str {
        &self.line[self.at.clone()]
    }

    fn before(&self) -> Option<char> {
        self.line[..self.at.start].chars().next_back()
    }

    fn after(&self) -> &'t str {
        &self.line[self.at.end..]
    }

    /// Whether the match is part of a name (`log-1700000000129.txt`,
    /// `trace_…`, `v2.…`) rather than a number standing on its own.
    fn is_inside_a_name(&self) -> bool {
        let mut after = self.after().chars();
        let joined_before = self
            .before()
            .is_some_and(|c| c.is_alphanumeric() || "-_./\\".contains(c));
        let joined_after = match (after.next(), after.next()) {
            (Some('_'), _) => true,
            (Some('.' | '-' | '/'), Some(next)) => next.is_alphanumeric(),
            _ => false,
        };
        joined_before || joined_after
    }
}

/// Replaces, in each match of `pattern` in `text`, the part `hide` names
/// (a range within the match; `None` keeps it), counting in `count`.
fn replace(
    text: &str,
    pattern: &Regex,
    kind: &str,
    count: &mut usize,
    hide: impl Fn(&Candidate<'_>) -> Option<Range<usize>>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for found in pattern.find_iter(text) {
        let candidate = Candidate {
            line: text,
            at: found.range(),
        };
        let Some(hidden) = hide(&candidate) else {
            continue;
        };
        out.push_str(&text[done..found.start() + hidden.start]);
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        done = found.start() + hidden.end;
        *count += 1;
    }
    out.push_str(&text[done..]);
    out
}

/// The whole of every match.
fn whole(candidate: &Candidate<'_>) -> Option<Range<usize>> {
    Some(0..candidate.text().len())
}

/// Card numbers pass the Luhn check, start as the card networks' numbers
/// do (2 to 6: a millisecond timestamp starts with 1), and stand on their own.
fn looks_like_card(candidate: &Candidate<'_>) -> bool {
    let first = candidate.text().bytes().next().unwrap_or(b'0');
    (b'2'..=b'6').contains(&first) && passes_luhn(candidate.text()) && !candidate.is_inside_a_name()
}

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

/// `git@github.com` names a remote, not a person.
fn looks_like_email(candidate: &str) -> bool {
    !candidate.starts_with("git@")
}

/// A phone number has 10 to 15 digits; dates and versions have fewer.
fn looks_like_phone(candidate: &str) -> bool {
    let digits = candidate.chars().filter(char::is_ascii_digit).count();
    (10..=15).contains(&digits)
}

/// A social security number stands on its own, and no part of it is all
/// zeros; no area number is 666 or starts with 9.
fn looks_like_ssn(candidate: &Candidate<'_>) -> bool {
    let mut parts = candidate.text().split('-');
    let (area, group, serial) = (
        parts.next().unwrap_or("000"),
        parts.next().unwrap_or("00"),
        parts.next().unwrap_or("0000"),
    );
    let zeros = |part: &str| part.bytes().all(|b| b == b'0');
    let never_issued =
        zeros(area) || zeros(group) || zeros(serial) || area == "666" || area.starts_with('9');
    !never_issued && !candidate.is_inside_a_name()
}

/// The longest start of the match, ending with a whole group, that is an
/// IBAN: its check digits make it 1 modulo 97. (A word in capitals after
/// an IBAN can match as one more group.)
fn valid_iban_prefix(candidate: &Candidate<'_>) -> Option<Range<usize>> {
    let text = candidate.text();
    let ends = text
        .char_indices()
        .filter(|&(_, c)| c == ' ')
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()));
    let mut ends: Vec<usize> = ends.collect();
    ends.reverse();
    ends.into_iter()
        .find(|&end| is_iban(&text[..end]))
        .map(|end| 0..end)
}

fn is_iban(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if !IBAN_CHARS.contains(&compact.len()) {
        return false;
    }
    let (head, rest) = compact.split_at(4);
    let mut remainder = 0u32;
    for &b in rest.iter().chain(head) {
        let value = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        let scale = if value >= 10 { 100 } else { 10 };
        remainder = (remainder * scale + value) % 97;
    }
    remainder == 1
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
