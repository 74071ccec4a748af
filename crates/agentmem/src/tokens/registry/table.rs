//! The embedded table (agentmem's own entries, then models.dev's rows),
//! parsed once with its indexes, and the tiers a lookup asks in turn.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use super::builtin::BUILTINS;
use super::names::{canonical, name_keys, strip_date, PROVIDER_ALIASES};
use super::query::Query;
use super::{default_max_output, ModelInfo, ModelSource, OPENROUTER, TABLE};

/// The parsed table with its indexes.
pub(super) struct Table {
    /// agentmem's overrides (`..overrides`), then the models.dev rows.
    pub(super) entries: Vec<ModelInfo>,
    pub(super) overrides: usize,
    /// Exact-level keys (the id, its canonical and dashed forms) → entries.
    pub(super) exact: Index,
    /// Family keys (date and `-latest` removed) → entries.
    pub(super) families: Index,
    /// Lower-case provider ids in the table.
    pub(super) providers: HashSet<String>,
}

pub(super) static BUILTIN_TABLE: LazyLock<Table> = LazyLock::new(|| Table::parse(TABLE));

pub(super) fn table() -> &'static Table {
    &BUILTIN_TABLE
}

/// A multimap from name keys to entries, built once: each key's entries are
/// a linked list in `postings`, so that no key needs a vector of its own.
pub(super) struct Index {
    pub(super) heads: foldhash::HashMap<Box<str>, u32>,
    /// (entry, next posting or `u32::MAX`).
    pub(super) postings: Vec<(u32, u32)>,
}

impl Index {
    pub(super) fn with_capacity(capacity: usize) -> Index {
        Index {
            heads: foldhash::HashMap::with_capacity_and_hasher(capacity, Default::default()),
            postings: Vec::with_capacity(capacity),
        }
    }

    pub(super) fn insert(&mut self, key: &str, entry: u32) {
        let posting = self.postings.len() as u32;
        let next = match self.heads.get_mut(key) {
            Some(head) => std::mem::replace(head, posting),
            None => {
                self.heads.insert(key.into(), posting);
                u32::MAX
            }
        };
        self.postings.push((entry, next));
    }

    pub(super) fn get<'a>(&'a self, key: &str) -> impl Iterator<Item = u32> + 'a {
        let mut posting = self.heads.get(key).copied().unwrap_or(u32::MAX);
        std::iter::from_fn(move || {
            let &(entry, next) = self.postings.get(posting as usize)?;
            posting = next;
            Some(entry)
        })
    }
}

/// Which rows a tier considers.
#[derive(Clone, Copy)]
pub(super) enum Tier<'a> {
    Provider(&'a str),
    Overrides,
    FirstParty(&'a [&'static str]),
    Rest,
}

impl Table {
    pub(super) fn parse(text: &str) -> Table {
        let mut entries: Vec<ModelInfo> = Vec::with_capacity(BUILTINS.len() + text.len() / 50);
        entries.extend(BUILTINS.iter().map(|b| ModelInfo {
            provider: b.provider.to_owned(),
            model: b.model.to_owned(),
            context_window: b.context_window,
            max_output_tokens: b.max_output_tokens,
            input_usd_per_mtok: Some(b.prices.0),
            output_usd_per_mtok: Some(b.prices.1),
            cache_read_usd_per_mtok: Some(b.prices.2),
            source: ModelSource::Override,
        }));
        let overrides = entries.len();
        entries.extend(
            text.lines()
                .filter_map(|line| parse_row(line).ok().flatten()),
        );
        let mut exact = Index::with_capacity(entries.len() * 2);
        let mut families = Index::with_capacity(entries.len());
        let mut providers = HashSet::new();
        let mut lower = String::new();
        for (index, entry) in entries.iter().enumerate() {
            if !providers.contains(entry.provider.as_str()) {
                providers.insert(entry.provider.to_ascii_lowercase());
            }
            let index = index as u32;
            if let Some(builtin) = BUILTINS.get(index as usize) {
                for alias in &builtin.aliases {
                    name_keys(alias, |key| exact.insert(key, index));
                }
            }
            lower.clear();
            lower.push_str(&entry.model);
            lower.make_ascii_lowercase();
            let family = name_keys(&lower, |key| exact.insert(key, index));
            families.insert(&family, index);
        }
        Table {
            entries,
            overrides,
            exact,
            families,
            providers,
        }
    }

    /// The models.dev provider id for a name segment, if it is one.
    pub(super) fn provider_id(&self, segment: &str) -> Option<String> {
        if let Some((_, id)) = PROVIDER_ALIASES.iter().find(|(alias, _)| *alias == segment) {
            return Some((*id).to_owned());
        }
        self.providers.contains(segment).then(|| segment.to_owned())
    }

    /// The whole lookup without configuration entries.
    pub(super) fn resolve(&self, query: &Query) -> ModelInfo {
        query
            .candidates()
            .iter()
            .find_map(|candidate| self.strong_match(candidate))
            .map_or_else(|| query.unknown(), |index| self.entries[index].clone())
    }

    /// The entry for `query` itself (no prefix fallback).
    ///
    /// The provider the name starts with comes first (when it is not the
    /// model's publisher), exact name then family. Then, level by level (the
    /// exact name, then its family): agentmem's overrides, the first-party
    /// rows, OpenRouter's. Last, everyone else, exact then family. So an exact
    /// dated entry beats its family (`gpt-4o-2024-05-13` has its own limits,
    /// `qwen3-235b-a22b-2507` is not `qwen3-235b-a22b`), and a first-party
    /// family entry beats an exact one from a re-hoster other than OpenRouter
    /// (`claude-3-opus` is Anthropic's `claude-3-opus-20240229`).
    pub(super) fn strong_match(&self, query: &Query) -> Option<usize> {
        let first_party = query.first_party.as_slice();
        let levels = [false, true];
        if let Some(hint) = query.hint.as_deref() {
            if !first_party.contains(&hint) {
                if let Some(index) = levels
                    .iter()
                    .find_map(|&family| self.pick(query, Tier::Provider(hint), family))
                {
                    return Some(index);
                }
            }
        }
        let tiers = [
            Tier::Overrides,
            Tier::FirstParty(first_party),
            Tier::Provider(OPENROUTER),
        ];
        for family in levels {
            if let Some(index) = tiers
                .iter()
                .find_map(|&tier| self.pick(query, tier, family))
            {
                return Some(index);
            }
        }
        levels
            .iter()
            .find_map(|&family| self.pick(query, Tier::Rest, family))
    }

    /// The best entry of `tier` matching `query` at one level.
    pub(super) fn pick(&self, query: &Query, tier: Tier, family: bool) -> Option<usize> {
        let mut candidates: Vec<u32> = if family {
            self.families.get(&query.keys.family).collect()
        } else {
            query
                .keys
                .exact
                .iter()
                .flat_map(|k| self.exact.get(k))
                .collect()
        };
        candidates.sort_unstable();
        candidates.dedup();
        let in_tier = |index: usize| {
            let entry = &self.entries[index];
            let is_override = index < self.overrides;
            match tier {
                Tier::Overrides => is_override,
                Tier::Provider(p) => !is_override && entry.provider.eq_ignore_ascii_case(p),
                Tier::FirstParty(ps) => {
                    !is_override && ps.iter().any(|p| entry.provider.eq_ignore_ascii_case(p))
                }
                Tier::Rest => {
                    !is_override
                        && !entry.provider.eq_ignore_ascii_case(OPENROUTER)
                        && !query
                            .first_party
                            .iter()
                            .any(|p| entry.provider.eq_ignore_ascii_case(p))
                        && query
                            .hint
                            .as_deref()
                            .is_none_or(|h| !entry.provider.eq_ignore_ascii_case(h))
                }
            }
        };
        let ranked: Vec<(RankKey, usize)> = candidates
            .into_iter()
            .map(|i| i as usize)
            .filter(|&i| in_tier(i))
            .map(|i| (self.rank(query, i, family), i))
            .collect();
        if let Tier::Rest = tier {
            // Re-hosters disagree: take the limits most of them give.
            let mut votes: HashMap<(u64, u64), usize> = HashMap::new();
            for (_, i) in &ranked {
                let e = &self.entries[*i];
                *votes
                    .entry((e.context_window, e.max_output_tokens))
                    .or_default() += 1;
            }
            return ranked
                .iter()
                .min_by(|(ka, a), (kb, b)| {
                    let va = votes[&(
                        self.entries[*a].context_window,
                        self.entries[*a].max_output_tokens,
                    )];
                    let vb = votes[&(
                        self.entries[*b].context_window,
                        self.entries[*b].max_output_tokens,
                    )];
                    vb.cmp(&va).then_with(|| ka.cmp(kb))
                })
                .map(|(_, i)| *i);
        }
        ranked.into_iter().min().map(|(_, i)| i)
    }

    /// Orders the entries one level of one tier matched: the named provider,
    /// the closest name, an undated or `-latest` entry before dated ones (the
    /// newest date first), the shortest id, table order.
    pub(super) fn rank(&self, query: &Query, index: usize, family: bool) -> RankKey {
        let entry = &self.entries[index];
        let id = entry.model.to_ascii_lowercase();
        let named = query
            .hint
            .as_deref()
            .is_some_and(|h| entry.provider.eq_ignore_ascii_case(h));
        let provider_rank = if named {
            0
        } else {
            query
                .first_party
                .iter()
                .position(|p| entry.provider.eq_ignore_ascii_case(p))
                .map_or(u8::MAX, |i| i as u8 + 1)
        };
        let (closeness, dated) = if family {
            let canon = canonical(&id).into_owned();
            if canon.ends_with("-latest") {
                (1, Reverse(String::new()))
            } else if strip_date(&canon).len() == canon.len() {
                (0, Reverse(String::new()))
            } else {
                (2, Reverse(canon))
            }
        } else {
            (query.exactness(&id), Reverse(String::new()))
        };
        (closeness, provider_rank, dated, id.len(), index)
    }
}

pub(super) type RankKey = (u8, u8, Reverse<String>, usize, usize);

/// One table row; `Ok(None)` for comments and blank lines.
pub(super) fn parse_row(line: &str) -> Result<Option<ModelInfo>, String> {
    if line.trim().is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut cells = [""; 7];
    let mut found = 0;
    for cell in line.split('\t') {
        if let Some(slot) = cells.get_mut(found) {
            *slot = cell;
        }
        found += 1;
    }
    if found != cells.len() {
        return Err(format!("expected 7 cells, got {found}: {line:?}"));
    }
    let count = |cell: &str| -> Result<Option<u64>, String> {
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse()
            .map(Some)
            .map_err(|e| format!("bad count {cell:?}: {e}"))
    };
    let price = |cell: &str| -> Result<Option<f64>, String> {
        if cell.is_empty() {
            return Ok(None);
        }
        match cell.parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Ok(Some(p)),
            _ => Err(format!("bad price {cell:?}")),
        }
    };
    if cells[0].is_empty() || cells[1].is_empty() {
        return Err(format!("empty provider or model: {line:?}"));
    }
    let context_window = count(cells[2])?
        .filter(|&c| c > 0)
        .ok_or_else(|| format!("no context window: {line:?}"))?;
    let max_output_tokens = count(cells[3])?
        .filter(|&o| o > 0)
        .unwrap_or_else(|| default_max_output(context_window));
    Ok(Some(ModelInfo {
        provider: cells[0].to_owned(),
        model: cells[1].to_owned(),
        context_window,
        max_output_tokens,
        input_usd_per_mtok: price(cells[4])?,
        output_usd_per_mtok: price(cells[5])?,
        cache_read_usd_per_mtok: price(cells[6])?,
        source: ModelSource::Registry,
    }))
}
