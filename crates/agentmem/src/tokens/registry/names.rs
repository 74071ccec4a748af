//! Name matching: provider names as other tools spell them, which
//! providers are first party for a model, and the keys a name is known by
//! (canonical, dashed, without its date).

use std::borrow::Cow;

/// Provider names as other tools spell them (LiteLLM, pydantic-ai, Hugging
/// Face orgs), mapped to models.dev provider ids.
pub(super) const PROVIDER_ALIASES: &[(&str, &str)] = &[
    ("aws", "amazon-bedrock"),
    ("bedrock", "amazon-bedrock"),
    ("bedrock_converse", "amazon-bedrock"),
    ("vertex", "google-vertex"),
    ("vertex_ai", "google-vertex"),
    ("vertex-ai", "google-vertex"),
    ("vertexai", "google-vertex"),
    ("gemini", "google"),
    ("google-gla", "google"),
    ("google_genai", "google"),
    ("google-genai", "google"),
    ("azure_ai", "azure"),
    ("azure_openai", "azure"),
    ("azure-openai", "azure"),
    ("together", "togetherai"),
    ("together_ai", "togetherai"),
    ("together-ai", "togetherai"),
    ("fireworks", "fireworks-ai"),
    ("fireworks_ai", "fireworks-ai"),
    ("mistralai", "mistral"),
    ("x-ai", "xai"),
    ("x.ai", "xai"),
    ("meta", "llama"),
    ("meta-llama", "llama"),
    ("moonshot", "moonshotai"),
    ("z-ai", "zai"),
    ("qwen", "alibaba"),
    ("dashscope", "alibaba"),
];

/// Name prefixes and the providers that publish those models.
pub(super) const FIRST_PARTY: &[(&str, &[&str])] = &[
    ("gpt-", &["openai"]),
    ("chatgpt", &["openai"]),
    ("text-embedding-", &["openai"]),
    ("codex-", &["openai"]),
    ("computer-use-", &["openai"]),
    ("claude", &["anthropic"]),
    ("gemini", &["google"]),
    ("gemma", &["google"]),
    ("mistral", &["mistral"]),
    ("mixtral", &["mistral"]),
    ("open-mistral", &["mistral"]),
    ("open-mixtral", &["mistral"]),
    ("codestral", &["mistral"]),
    ("devstral", &["mistral"]),
    ("magistral", &["mistral"]),
    ("ministral", &["mistral"]),
    ("pixtral", &["mistral"]),
    ("voxtral", &["mistral"]),
    ("deepseek", &["deepseek"]),
    ("grok", &["xai"]),
    ("llama", &["llama"]),
    ("meta-llama", &["llama"]),
    ("command", &["cohere"]),
    ("c4ai", &["cohere"]),
    ("kimi", &["moonshotai"]),
    ("moonshot", &["moonshotai"]),
    ("glm", &["zai", "zhipuai"]),
    ("qwen", &["alibaba"]),
    ("qwq", &["alibaba"]),
    ("qvq", &["alibaba"]),
    ("minimax", &["minimax"]),
    ("sonar", &["perplexity"]),
    ("mimo", &["xiaomi"]),
];

/// The providers that publish the model `canon` (a canonical name).
pub(super) fn first_party(canon: &str) -> &'static [&'static str] {
    // The o-series: o1, o3, o4-mini, o3-pro-2025-06-10, …
    let bytes = canon.as_bytes();
    if bytes.len() >= 2
        && bytes[0] == b'o'
        && bytes[1].is_ascii_digit()
        && bytes[2..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .is_none_or(|i| bytes[2 + i] == b'-')
    {
        return &["openai"];
    }
    FIRST_PARTY
        .iter()
        .find(|(prefix, _)| canon.starts_with(prefix))
        .map_or(&[], |(_, providers)| providers)
}

/// Bedrock's vendor prefixes (`anthropic.claude-…`), after an optional region.
pub(super) const BEDROCK_VENDORS: &[&str] = &[
    "ai21.",
    "amazon.",
    "anthropic.",
    "cohere.",
    "deepseek.",
    "google.",
    "meta.",
    "minimax.",
    "mistral.",
    "moonshot.",
    "moonshotai.",
    "nvidia.",
    "openai.",
    "qwen.",
    "stability.",
    "writer.",
    "zai.",
];
pub(super) const BEDROCK_REGIONS: &[&str] = &[
    "us.", "eu.", "apac.", "au.", "jp.", "ca.", "global.", "us-gov.",
];

/// The canonical form of a lower-case model id: its last path segment, without
/// Bedrock's region, vendor and version, with Vertex's `@date` as `-date`.
pub(super) fn canonical(id: &str) -> Cow<'_, str> {
    let last = id.rsplit('/').next().unwrap_or(id).trim_start_matches('~');
    let mut name = last;
    let mut bedrock = false;
    if name.contains('.') {
        let without_region = BEDROCK_REGIONS
            .iter()
            .find_map(|r| name.strip_prefix(r))
            .unwrap_or(name);
        if let Some(rest) = BEDROCK_VENDORS
            .iter()
            .find_map(|v| without_region.strip_prefix(v))
        {
            if !rest.is_empty() {
                name = rest;
                bedrock = true;
            }
        }
    }
    // Bedrock versions: `-v2:0`, `-1:0`, and (Bedrock ids only) `-v1`.
    let mut versioned = false;
    if let Some((head, tail)) = name.rsplit_once(':') {
        if is_digits(tail) {
            name = head;
            versioned = true;
        }
    }
    if bedrock || versioned {
        if let Some((head, tail)) = name.rsplit_once('-') {
            let number = tail
                .strip_prefix('v')
                .unwrap_or(if versioned { tail } else { "" });
            if is_digits(number) && !head.is_empty() {
                name = head;
            }
        }
    }
    let name = name.strip_suffix(":latest").unwrap_or(name);
    if name.contains('@') {
        let mut out = name.replace('@', "-");
        if let Some(stripped) = out.strip_suffix("-default") {
            out.truncate(stripped.len());
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(name)
    }
}

pub(super) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The value of a two-digit token, if it is one.
pub(super) fn two_digits(t: &str) -> Option<u32> {
    (t.len() == 2 && is_digits(t)).then(|| t.parse().unwrap_or(0))
}

/// `name` without a trailing release date: `-20250219`, `-2025-04-14`,
/// `-05-06`, `-09-2025`, `-0528` (MMDD) or `-2411` (YYMM). At least one
/// token is always left.
pub(super) fn strip_date(name: &str) -> &str {
    let mut parts = name.rsplitn(4, '-');
    let t1 = parts.next().unwrap_or("");
    let t2 = parts.next();
    let t3 = parts.next();
    let tokens = 1
        + usize::from(t2.is_some())
        + usize::from(t3.is_some())
        + usize::from(parts.next().is_some());
    let cut = |k: usize| {
        if k >= tokens {
            return name;
        }
        let removed: usize = [t1, t2.unwrap_or(""), t3.unwrap_or("")][..k]
            .iter()
            .map(|t| t.len() + 1)
            .sum();
        &name[..name.len() - removed]
    };
    let month = |t: Option<&str>| {
        t.and_then(two_digits)
            .is_some_and(|m| (1..=12).contains(&m))
    };
    let day = |t: Option<&str>| {
        t.and_then(two_digits)
            .is_some_and(|d| (1..=31).contains(&d))
    };
    let year =
        |t: Option<&str>| t.is_some_and(|t| t.len() == 4 && is_digits(t) && t.starts_with("20"));
    if t1.len() == 8 && is_digits(t1) && t1.starts_with("20") {
        return cut(1);
    }
    if year(t3) && month(t2) && day(Some(t1)) {
        return cut(3);
    }
    if month(t2) && (day(Some(t1)) || year(Some(t1))) {
        return cut(2);
    }
    if t1.len() == 4 && is_digits(t1) {
        let (a, b) = (Some(&t1[..2]), Some(&t1[2..]));
        let yymm = a
            .and_then(two_digits)
            .is_some_and(|y| (23..=29).contains(&y))
            && month(b);
        if (month(a) && day(b)) || yymm {
            return cut(1);
        }
    }
    name
}

/// `.` → `-`, so that `claude-3.7-sonnet` meets `claude-3-7-sonnet`.
pub(super) fn dashed(name: &str) -> Cow<'_, str> {
    if name.contains('.') {
        Cow::Owned(name.replace('.', "-"))
    } else {
        Cow::Borrowed(name)
    }
}

/// The family key of a canonical name: dashed, without date and `-latest`.
pub(super) fn family(canon: &str) -> Cow<'_, str> {
    let undated = strip_date(canon.strip_suffix("-latest").unwrap_or(canon));
    dashed(undated.strip_suffix("-latest").unwrap_or(undated))
}

/// Calls `f` with each exact-level key of the lower-case id `id` (the id, its
/// canonical and dashed forms, without repeats), then returns its family key.
pub(super) fn name_keys<'a>(id: &'a str, mut f: impl FnMut(&str)) -> Cow<'a, str> {
    let canon = canonical(id);
    let dash = dashed(&canon);
    if !id.is_empty() {
        f(id);
    }
    if canon != id {
        f(&canon);
    }
    if dash != canon && dash != id {
        f(&dash);
    }
    match canon {
        Cow::Borrowed(canon) => family(canon),
        Cow::Owned(canon) => Cow::Owned(family(&canon).into_owned()),
    }
}

/// The keys a name is matched by.
#[derive(Debug, Clone, Default)]
pub(super) struct NameKeys {
    /// Exact level: the lower-case id, its canonical and dashed forms.
    pub(super) exact: Vec<String>,
    /// Family level: the dashed canonical form without date and `-latest`.
    pub(super) family: String,
}

impl NameKeys {
    pub(super) fn of(id: &str) -> NameKeys {
        let mut exact = Vec::with_capacity(4);
        let family = name_keys(id, |k| exact.push(k.to_owned())).into_owned();
        NameKeys { exact, family }
    }
}
