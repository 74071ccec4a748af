//! A lookup name parsed: the provider it names, the name after it, its
//! keys, and how exactly a table id matches it.

use super::names::{canonical, first_party, strip_date, NameKeys};
use super::table::Table;
use super::ModelInfo;

/// A parsed lookup name.
#[derive(Debug, Clone)]
pub(super) struct Query {
    /// The name as given, trimmed.
    pub(super) original: String,
    /// Byte offset in `original` where the part after the named provider starts.
    pub(super) rest_start: usize,
    /// The provider the name starts with (`openrouter` in `openrouter/anthropic/…`).
    pub(super) hint: Option<String>,
    /// A second provider segment (`anthropic` in `openrouter/anthropic/…`).
    pub(super) vendor: Option<String>,
    /// The lower-case name after the named provider (`anthropic/claude-sonnet-4`).
    pub(super) rest: String,
    pub(super) canon: String,
    pub(super) keys: NameKeys,
    pub(super) first_party: Vec<&'static str>,
}

impl Query {
    pub(super) fn parse(name: &str, table: &Table) -> Query {
        let original = name.trim().to_owned();
        let lower = original.to_ascii_lowercase();
        let mut start = 0;
        let mut hint = None;
        let mut vendor = None;
        if let Some((head, _)) = lower.split_once(':') {
            if !head.contains('/') {
                if let Some(provider) = table.provider_id(head) {
                    hint = Some(provider);
                    start = head.len() + 1;
                }
            }
        }
        let mut rest_start = start;
        while let Some((segment, _)) = lower[start..].split_once('/') {
            let Some(provider) = table.provider_id(segment) else {
                break;
            };
            start += segment.len() + 1;
            if hint.is_none() {
                hint = Some(provider);
                rest_start = start;
            } else if vendor.is_none() {
                vendor = Some(provider);
            } else {
                break;
            }
        }
        let rest = lower[rest_start..].to_owned();
        let mut query = Query::with_name(rest, hint, vendor);
        query.original = original;
        query.rest_start = rest_start;
        query
    }

    pub(super) fn with_name(rest: String, hint: Option<String>, vendor: Option<String>) -> Query {
        let canon = canonical(&rest).into_owned();
        let mut keys = NameKeys::of(&rest);
        let tail = rest.rsplit('/').next().unwrap_or(&rest).to_owned();
        if !tail.is_empty() && !keys.exact.contains(&tail) {
            keys.exact.push(tail);
        }
        let mut first_party: Vec<&'static str> = first_party(&canon).to_vec();
        if let Some(vendor) = &vendor {
            if let Some(known) = FIRST_PARTY_IDS.iter().find(|p| **p == vendor.as_str()) {
                if !first_party.contains(known) {
                    first_party.push(known);
                }
            }
        }
        Query {
            original: String::new(),
            rest_start: 0,
            hint,
            vendor,
            rest,
            canon,
            keys,
            first_party,
        }
    }

    /// This query, then its prefixes at `-` boundaries that hold a version
    /// digit, longest first (`gpt-4.1-mini-x` → `gpt-4.1-mini` → `gpt-4.1`).
    pub(super) fn candidates(&self) -> Vec<Query> {
        let mut out = vec![self.clone()];
        let undated = strip_date(self.canon.strip_suffix("-latest").unwrap_or(&self.canon));
        let mut prefix = undated;
        while let Some((head, _)) = prefix.rsplit_once('-') {
            prefix = head;
            if !prefix.bytes().any(|b| b.is_ascii_digit()) {
                break;
            }
            let mut query =
                Query::with_name(prefix.to_owned(), self.hint.clone(), self.vendor.clone());
            query.original.clone_from(&self.original);
            query.rest_start = self.rest_start;
            out.push(query);
        }
        out
    }

    pub(super) fn unknown(&self) -> ModelInfo {
        ModelInfo::unknown(
            self.hint.clone().unwrap_or_default(),
            self.original[self.rest_start..].to_owned(),
        )
    }

    /// How well entry `id` (lower-case) matches at the exact level: 0 the same
    /// id, 1 the same canonical name, 2 the same dashed name.
    pub(super) fn exactness(&self, id: &str) -> u8 {
        if id == self.rest {
            0
        } else if canonical(id) == self.canon.as_str() {
            1
        } else {
            2
        }
    }
}

/// Providers that can be first party, for a vendor segment in a name.
pub(super) const FIRST_PARTY_IDS: &[&str] = &[
    "alibaba",
    "anthropic",
    "cohere",
    "deepseek",
    "google",
    "llama",
    "minimax",
    "mistral",
    "moonshotai",
    "openai",
    "perplexity",
    "xai",
    "xiaomi",
    "zai",
    "zhipuai",
];
