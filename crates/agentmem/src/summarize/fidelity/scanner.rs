//! The identifier scanner: hand-written (no regex), deterministic, word by
//! word, with the word lists (units, file extensions, errno names) that
//! tell identifiers from plain English.

use std::collections::BTreeSet;

/// The identifiers in `text`, deduplicated, in order of first appearance.
///
/// ```
/// use agentmem::summarize::extract_identifiers;
/// let text = "Build failed with error[E0425] in crates/parser/src/header.rs:88 after commit \
///             3f9d2c1b; see https://github.com/org/repo/issues/12 — the worker needs 512 MB \
///             and a 30s timeout on port 8080.";
/// assert_eq!(
///     extract_identifiers(text),
///     ["E0425", "crates/parser/src/header.rs:88", "3f9d2c1b", "https://github.com/org/repo/issues/12",
///      "512 MB", "30s", "port 8080"]
/// );
/// assert!(extract_identifiers("The quick brown fox jumps over the lazy dog, and/or not.").is_empty());
/// ```
pub fn extract_identifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    scan(text, &mut |id: String| {
        if seen.insert(id.clone()) {
            out.push(id);
        }
    });
    out
}

/// Units written right after a number: `30s`, `200ms`, `1.5GB`.
pub(super) const ATTACHED_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "s", "sec", "secs", "m", "min", "mins", "h", "hr", "hrs", "d", "B",
    "KB", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "Kb", "Mb", "Gb", "Hz", "kHz",
    "MHz", "GHz", "rps", "qps",
];

/// Units written after a number and a space: `512 MB`, `30 seconds`.
pub(super) const SPACED_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes",
    "hr", "hrs", "hour", "hours", "day", "days", "B", "bytes", "KB", "kB", "MB", "GB", "TB", "PB",
    "KiB", "MiB", "GiB", "TiB", "Kb", "Mb", "Gb", "Hz", "kHz", "MHz", "GHz", "rps", "qps", "req/s",
];

/// File extensions a bare name (`Cargo.toml`) must end with to count as a
/// path. Extensions that are also common words or attribute names (`log`,
/// `lock`, `env`, `db`, `cfg`) are left out: such names count inside a
/// directory (`logs/server.log`) or when well known ([`WELL_KNOWN_FILES`]).
pub(super) const FILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "kts", "scala",
    "rb", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "swift", "sh", "bash", "zsh",
    "fish", "ps1", "bat", "json", "jsonl", "ndjson", "yaml", "yml", "toml", "ini", "md",
    "markdown", "rst", "txt", "csv", "tsv", "xml", "html", "htm", "css", "scss", "sass", "less",
    "sql", "proto", "graphql", "gql", "vue", "svelte", "dart", "lua", "ipynb", "gradle", "mk",
    "cmake", "tf", "tfvars", "hcl", "patch", "diff", "svg", "png", "jpg", "jpeg", "gif", "pdf",
    "zip", "gz", "tgz", "tar", "wasm", "so", "dylib", "dll", "exe", "pem", "crt", "traj", "sqlite",
    "parquet",
];

/// Extensions that collide with attribute access in code (`event.ts`,
/// `self.c`): a bare name with one counts unless its stem is a usual receiver.
pub(super) const AMBIGUOUS_EXTENSIONS: &[&str] = &[
    "ts", "c", "h", "go", "rs", "py", "sh", "so", "tf", "js", "md", "zip", "gz", "tar", "diff",
    "patch",
];

/// Stems that name a value, not a file, before an ambiguous extension.
pub(super) const RECEIVER_STEMS: &[&str] = &[
    "self", "this", "cls", "event", "ev", "e", "msg", "message", "row", "item", "obj", "ctx",
    "req", "res", "resp", "node", "el", "t", "x", "y", "s", "r", "a", "b", "v", "o", "i", "j", "k",
    "args", "opts", "state", "props", "window", "document", "console", "process", "module",
    "exports", "os", "sys", "np", "pd", "it", "record", "entry", "result", "response", "request",
];

/// Names that look like files but are product names (`Node.js`).
pub(super) const NOT_FILES: &[&str] = &[
    "node.js",
    "next.js",
    "vue.js",
    "react.js",
    "nuxt.js",
    "three.js",
    "d3.js",
    "chart.js",
    "express.js",
];

/// File names without a telling extension that are still files.
pub(crate) const WELL_KNOWN_FILES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Vagrantfile",
    "Jenkinsfile",
    "Cargo.lock",
    "yarn.lock",
    "poetry.lock",
    "Gemfile.lock",
    "Pipfile",
    "Pipfile.lock",
    "pnpm-lock.yaml",
    "setup.cfg",
    "tox.ini",
    ".env",
    ".gitignore",
    ".dockerignore",
    ".editorconfig",
    ".bashrc",
    ".zshrc",
    ".npmrc",
    ".profile",
];

/// errno and signal names.
pub(super) const ERRNO_NAMES: &[&str] = &[
    "ENOENT",
    "EACCES",
    "EPERM",
    "EEXIST",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENOSPC",
    "ENOMEM",
    "EAGAIN",
    "EBADF",
    "EPIPE",
    "EBUSY",
    "EMFILE",
    "ENOTEMPTY",
    "ECONNREFUSED",
    "ECONNRESET",
    "ECONNABORTED",
    "ETIMEDOUT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "SIGSEGV",
    "SIGKILL",
    "SIGTERM",
    "SIGABRT",
    "SIGBUS",
    "SIGPIPE",
    "SIGINT",
    "SIGHUP",
    "OOMKilled",
];

/// Characters that end a word besides whitespace.
pub(super) fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';' | '|' | '='
    )
}

/// Scans `text` and calls `emit` for each identifier occurrence.
pub(super) fn scan(text: &str, emit: &mut dyn FnMut(String)) {
    let mut words: Vec<&str> = Vec::new();
    for line in text.lines() {
        let diff_header = line.starts_with("diff --git ")
            || line.starts_with("--- a/")
            || line.starts_with("+++ b/");
        words.clear();
        for chunk in line.split_whitespace() {
            split_chunk(chunk, &mut words);
        }
        for i in 0..words.len() {
            classify(&words, i, diff_header, emit);
        }
    }
}

/// Splits one whitespace-separated chunk into words, URLs kept whole.
pub(super) fn split_chunk<'t>(chunk: &'t str, words: &mut Vec<&'t str>) {
    let mut rest = chunk;
    while !rest.is_empty() {
        match find_url(rest) {
            Some((start, end)) => {
                push_words(&rest[..start], words);
                words.push(&rest[start..end]);
                rest = &rest[end..];
            }
            None => {
                push_words(rest, words);
                break;
            }
        }
    }
}

pub(super) fn push_words<'t>(text: &'t str, words: &mut Vec<&'t str>) {
    let mut push = |word: &'t str| {
        let word = trim_word(word);
        if !word.is_empty() {
            words.push(word);
        }
    };
    for piece in text.split(is_delimiter) {
        // `::` separates path segments of code (`crate::cfg`, `test.py::test_x`).
        if has_byte(piece, b':') {
            piece.split("::").for_each(&mut push);
        } else {
            push(piece);
        }
    }
}

/// Whether `text` holds the ASCII byte `byte`: a quick test before a
/// substring search, which costs more to set up than most words are long.
pub(super) fn has_byte(text: &str, byte: u8) -> bool {
    // A plain loop: words are short, and a call to memchr costs more than
    // looking at a dozen bytes.
    text.bytes().any(|b| b == byte)
}

pub(super) fn trim_word(word: &str) -> &str {
    word.trim_start_matches(['*', '_'])
        .trim_end_matches(['.', ',', ':', ';', '!', '?', '*', '_'])
}

/// The byte range of a URL in `text` (no whitespace inside), if any.
pub(super) fn find_url(text: &str) -> Option<(usize, usize)> {
    if !has_byte(text, b':') {
        return None; // neither `scheme://` nor `user@host:path`
    }
    let start = if let Some(i) = text.find("://") {
        // Walk back over the scheme.
        let scheme_start = text[..i]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .last()
            .map(|(j, _)| j)?;
        let scheme = &text[scheme_start..i];
        if !scheme.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        scheme_start
    } else if let Some(at) = text.find('@') {
        // scp-like git remote: git@host:owner/repo.git
        let colon = text[at..].find(':')? + at;
        let user = &text[..at];
        let host = &text[at + 1..colon];
        let user_start = user
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .last()
            .map(|(j, _)| j)?;
        if host.is_empty()
            || !host.contains('.')
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
            || !text[colon + 1..].contains('/')
        {
            return None;
        }
        user_start
    } else {
        return None;
    };
    let body = &text[start..];
    let mut end = body
        .find(['"', '\'', '`', '<', '>', '|', '\\', '{', '}'])
        .unwrap_or(body.len());
    // Trailing punctuation and an unbalanced closing bracket are not part of it.
    loop {
        let url = &body[..end];
        let Some(last) = url.chars().last() else {
            break;
        };
        let unbalanced = (last == ')' && url.matches('(').count() < url.matches(')').count())
            || (last == ']' && url.matches('[').count() < url.matches(']').count());
        if matches!(last, '.' | ',' | ';' | ':' | '!' | '?' | '*') || unbalanced {
            end -= last.len_utf8();
        } else {
            break;
        }
    }
    let url = &body[..end];
    // Something after the scheme or host is needed.
    let after = url.split_once("://").map_or(url, |(_, a)| a);
    if after.len() < 3 {
        return None;
    }
    Some((start, start + end))
}

/// Classifies `words[i]` (with its neighbours as context) and emits it if it
/// is an identifier.
pub(super) fn classify(words: &[&str], i: usize, diff_header: bool, emit: &mut dyn FnMut(String)) {
    let word = words[i];
    // Most words are plain words: of all the shapes below, only a well-known
    // file name or an errno name can be spelled with letters alone, and
    // both start with a capital.
    if word.bytes().all(|b| b.is_ascii_alphabetic()) {
        let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
        if capital && (WELL_KNOWN_FILES.contains(&word) || ERRNO_NAMES.contains(&word)) {
            emit(word.to_string());
        }
        return;
    }
    let prev = i.checked_sub(1).map(|j| words[j]);
    let next = words.get(i + 1).copied();

    if has_byte(word, b':') && find_url(word) == Some((0, word.len())) {
        emit(word.to_string());
        return;
    }
    if let Some(digits) = word.strip_prefix('#') {
        if digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit()) {
            emit(word.to_string());
        }
        return;
    }
    if is_uuid(word) {
        emit(word.to_string());
        return;
    }
    if let Some(path) = as_path(word, diff_header) {
        emit(path.to_string());
        return;
    }
    if is_ipv4_or_host_port(word) {
        emit(word.to_string());
        return;
    }
    if is_hex_hash(word) {
        emit(word.to_string());
        return;
    }
    if is_number(word) {
        if let Some(next) = next.map(trim_word) {
            if SPACED_UNITS.contains(&next) {
                emit(format!("{word} {next}"));
                return;
            }
        }
        if let Some(prev) = prev {
            let prev_plain = prev.trim_start_matches('-').to_ascii_lowercase();
            let digits = word.chars().all(|c| c.is_ascii_digit());
            if digits && prev_plain == "port" && (2..=5).contains(&word.len()) {
                emit(format!("port {word}"));
                return;
            }
            let code: u32 = if digits && word.len() == 3 {
                word.parse().unwrap_or(0)
            } else {
                0
            };
            if (100..=599).contains(&code) && prev_plain.starts_with("http") {
                emit(format!("HTTP {word}"));
                return;
            }
            if (prev_plain == "code" || prev_plain == "status") && digits && word != "0" {
                let before = i.checked_sub(2).map(|j| words[j].to_ascii_lowercase());
                if before.as_deref() == Some("exit") {
                    emit(format!("exit {prev_plain} {word}"));
                    return;
                }
                if (100..=599).contains(&code) {
                    emit(format!("{prev_plain} {word}"));
                    return;
                }
            }
        }
        return;
    }
    if let Some(split) = word.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        let (number, unit) = word.split_at(split);
        if is_number(number) && ATTACHED_UNITS.contains(&unit) {
            emit(word.to_string());
            return;
        }
    }
    if is_error_code(word) || ERRNO_NAMES.contains(&word) || is_upper_snake(word) {
        emit(word.to_string());
        return;
    }
    if is_separated_id(word) || is_opaque_token(word) {
        emit(word.to_string());
    }
}

pub(super) fn is_number(word: &str) -> bool {
    let mut parts = word.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    !int.is_empty()
        && int.chars().all(|c| c.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()))
}

pub(super) fn is_uuid(word: &str) -> bool {
    word.len() == 36
        && word.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// 7–40 (or 64) hex characters with at least one digit and one letter.
pub(super) fn is_hex_hash(word: &str) -> bool {
    ((7..=40).contains(&word.len()) || word.len() == 64)
        && word.chars().all(|c| c.is_ascii_hexdigit())
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
        // One case only, as hashes are written.
        && !(word.chars().any(|c| c.is_ascii_lowercase()) && word.chars().any(|c| c.is_ascii_uppercase()))
}

/// `E0425`, `TS2304`, `C2065`: 1–4 capitals then 3–5 digits.
pub(super) fn is_error_code(word: &str) -> bool {
    let letters = word.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = &word[letters..];
    (1..=4).contains(&letters)
        && (3..=5).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
}

/// `ERR_CONNECTION_REFUSED`, `AGENTMEM_DIR`: capitals and digits joined by `_`.
pub(super) fn is_upper_snake(word: &str) -> bool {
    word.len() >= 6
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.contains('_')
        && !word.starts_with('_')
        && !word.ends_with('_')
        && !word.contains("__")
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && word.chars().filter(|c| c.is_ascii_uppercase()).count() >= 4
}

/// `call_abc123`, `toolu_01A7…`, `req-7f3a9`: alphanumeric parts joined by `_`
/// or `-`, with a digit and a letter, at least 6 characters.
pub(super) fn is_separated_id(word: &str) -> bool {
    word.len() >= 6
        && word.contains(['_', '-'])
        && word
            .split(['_', '-'])
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric()))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

/// A long opaque token (`01HqW8tK3VfL2pN6xYd9aBcE`): 16+ alphanumerics with
/// at least two digits and two letters.
pub(super) fn is_opaque_token(word: &str) -> bool {
    word.len() >= 16
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.chars().filter(|c| c.is_ascii_digit()).count() >= 2
        && word.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 2
}

/// `10.0.0.1`, `10.0.0.1:5432`, `localhost:8080`, `db.internal:5432`.
pub(super) fn is_ipv4_or_host_port(word: &str) -> bool {
    let (host, port) = match word.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (word, None),
    };
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
    }
    let octets: Vec<&str> = host.split('.').collect();
    let ipv4 = octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.chars().all(|c| c.is_ascii_digit())
                && o.parse::<u16>().is_ok_and(|n| n <= 255)
        });
    if ipv4 {
        return true;
    }
    port.is_some()
        && (host == "localhost"
            || (host.contains('.')
                && host.split('.').all(|l| {
                    !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
                && host.rsplit('.').next().is_some_and(|tld| {
                    tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
                })))
}

/// The path in `word` (with a `:line[:col]` suffix), if it is one.
pub(super) fn as_path(word: &str, diff_header: bool) -> Option<&str> {
    let word = if diff_header {
        word.strip_prefix("a/")
            .or_else(|| word.strip_prefix("b/"))
            .unwrap_or(word)
    } else {
        word
    };
    // Windows: C:\dir\file.ext
    let bytes = word.as_bytes();
    if bytes.len() > 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'\\' {
        return Some(word);
    }
    let (base, suffix) = match word.find(':') {
        Some(i) => (&word[..i], &word[i + 1..]),
        None => (word, ""),
    };
    if !suffix.is_empty() {
        let mut parts = suffix.split(':');
        let ok = parts
            .next()
            .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            && parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return None;
        }
    } else if word.ends_with(':') {
        return None;
    }
    if base.is_empty()
        || !base
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '~' | '@' | '+'))
        || !base.chars().any(|c| c.is_alphabetic())
        || base.starts_with("//")
        || base.contains("//")
    {
        return None;
    }
    let segments: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    let last = *segments.last()?;
    let has_ext = has_file_extension(last, false);
    let is_path = if base.contains('/') {
        if !segments
            .iter()
            .any(|s| s.chars().any(|c| c.is_alphabetic()))
        {
            false
        } else if base.starts_with('/') || base.starts_with("~/") {
            segments.len() >= 2 || has_ext
        } else {
            has_file_extension(last, true)
                || segments.len() >= 3
                || (base.ends_with('/') && segments.len() >= 2)
        }
    } else {
        WELL_KNOWN_FILES.contains(&base)
            || (has_ext
                && !NOT_FILES.contains(&base.to_ascii_lowercase().as_str())
                && !is_receiver(base))
    };
    is_path.then_some(word)
}

/// `event.ts`, `self.c`: a value's attribute, not a file.
pub(super) fn is_receiver(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        AMBIGUOUS_EXTENSIONS.contains(&ext)
            && RECEIVER_STEMS.contains(&stem.to_ascii_lowercase().as_str())
    })
}

/// Whether `name` ends with a file extension: a known one, or (when `loose`,
/// for names inside a directory) any short alphanumeric one with a letter.
pub(super) fn has_file_extension(name: &str, loose: bool) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if stem.is_empty() || stem.chars().all(|c| c == '.') || ext.is_empty() {
        // Dotfiles (`.env`, `.gitignore`) inside a directory still count.
        return loose
            && stem.is_empty()
            && ext.len() >= 2
            && ext.chars().all(|c| c.is_ascii_alphanumeric());
    }
    if FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
        return true;
    }
    loose
        && ext.len() <= 10
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
}
