//! Dates a question names (`on 3 June, 2023`, `in May 2023`, `October 13`,
//! `2023-05-08`), so recall can favour what was said around them: asked
//! what was decided on a day, the memories of that day answer.
//!
//! Calendar dates are read — a day, a month or a year, in English or ISO
//! form — and, given the day the question is asked, relative ones:
//! `two months ago`, `yesterday`, `last week`, `in the past two months`.

use time::{Date, Month};

/// One stretch of calendar days a text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedDate {
    /// From `first` to `last`, both included: a day, a month or a year.
    Days {
        /// The first day.
        first: Date,
        /// The last day.
        last: Date,
    },
    /// A month named without a year (`in June`): that month of any year.
    MonthOfAnyYear(Month),
}

impl NamedDate {
    /// How many days `day` lies outside this date: 0 within it.
    ///
    /// ```
    /// use agentmem::search::when::dates_named_in;
    /// use time::macros::date;
    /// let june = dates_named_in("in June 2023")[0];
    /// assert_eq!(june.days_away(date!(2023 - 06 - 14)), 0);
    /// assert_eq!(june.days_away(date!(2023 - 07 - 03)), 3);
    /// ```
    pub fn days_away(self, day: Date) -> u32 {
        match self {
            NamedDate::Days { first, last } => {
                let distance = if day < first {
                    first - day
                } else if day > last {
                    day - last
                } else {
                    return 0;
                };
                distance
                    .whole_days()
                    .unsigned_abs()
                    .try_into()
                    .unwrap_or(u32::MAX)
            }
            NamedDate::MonthOfAnyYear(month) => {
                let in_year = |year| NamedDate::Days {
                    first: first_of(year, month),
                    last: last_of(year, month),
                };
                [day.year() - 1, day.year(), day.year() + 1]
                    .into_iter()
                    .map(|year| in_year(year).days_away(day))
                    .min()
                    .unwrap_or(u32::MAX)
            }
        }
    }
}

/// The calendar dates `text` names, in order of appearance.
///
/// ```
/// use agentmem::search::when::{dates_named_in, NamedDate};
/// use time::{macros::date, Month};
/// assert_eq!(
///     dates_named_in("What did Maria share on 16 June, 2023?"),
///     [NamedDate::Days { first: date!(2023 - 06 - 16), last: date!(2023 - 06 - 16) }]
/// );
/// assert_eq!(
///     dates_named_in("When did Melanie go camping in June?"),
///     [NamedDate::MonthOfAnyYear(Month::June)]
/// );
/// assert!(dates_named_in("May I ask what the build did?").is_empty());
/// ```
pub fn dates_named_in(text: &str) -> Vec<NamedDate> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut dates = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match date_at(&words, i) {
            Some((date, used)) => {
                dates.push(date);
                i += used;
            }
            None => i += 1,
        }
    }
    dates
}

/// The stretches of days `text` names relative to `today`, the day it is
/// asked: `3 days ago`, `two weeks ago` and `a month ago` (that day, give
/// or take a fifth of the unit), `yesterday`, `last week`/`month`/`year`
/// (the calendar one before today's), and `in the past two months` or `during the
/// last week` (up to today).
///
/// ```
/// use agentmem::search::when::{relative_dates_in, NamedDate};
/// use time::macros::date;
/// let today = date!(2023 - 03 - 11);
/// assert_eq!(
///     relative_dates_in("I visited a museum two months ago.", today),
///     [NamedDate::Days { first: date!(2023 - 01 - 04), last: date!(2023 - 01 - 16) }]
/// );
/// assert_eq!(
///     relative_dates_in("concerts in the past two months", today),
///     [NamedDate::Days { first: date!(2023 - 01 - 10), last: today }]
/// );
/// assert!(relative_dates_in("How many days ago did I meet Emma?", today).is_empty());
/// ```
pub fn relative_dates_in(text: &str, today: Date) -> Vec<NamedDate> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut dates = Vec::new();
    for (i, &word) in words.iter().enumerate() {
        let before = |back: usize| i.checked_sub(back).map(|at| words[at]);
        let span = match word {
            "ago" => before(1).and_then(unit_days).and_then(|unit| {
                let count = before(2).and_then(count_word)?;
                let days = count.saturating_mul(unit);
                let slack = (unit / 5).max(1);
                Some(days_back(today, days + slack, days.saturating_sub(slack)))
            }),
            "yesterday" => Some(days_back(today, 1, 1)),
            "week" | "month" | "year" | "weeks" | "months" | "years" | "days" => {
                match (before(1), before(2), before(3)) {
                    // "in the past two months", "during the last 3 weeks"
                    (Some(count), Some("past" | "last"), Some("the")) => count_word(count)
                        .zip(unit_days(word))
                        .map(|(n, unit)| days_back(today, n.saturating_mul(unit), 0)),
                    // "in the past month"
                    (Some("past" | "last"), Some("the"), _) => {
                        unit_days(word).map(|unit| days_back(today, unit, 0))
                    }
                    // "last week": the calendar week (month, year) before this one
                    (Some("last"), _, _) => the_one_before(today, word),
                    _ => None,
                }
            }
            _ => None,
        };
        dates.extend(span);
    }
    dates
}

/// The calendar week (from Monday), month or year before `today`'s.
fn the_one_before(today: Date, unit: &str) -> Option<NamedDate> {
    match unit {
        "week" => {
            let monday =
                today - time::Duration::days(i64::from(today.weekday().number_days_from_monday()));
            let back = |days: i64| monday - time::Duration::days(days);
            Some(NamedDate::Days {
                first: back(7),
                last: back(1),
            })
        }
        "month" => {
            let month = today.month().previous();
            let year = match month {
                Month::December => today.year() - 1,
                _ => today.year(),
            };
            Some(month_span(year, month))
        }
        "year" => Some(year_span(today.year() - 1)),
        _ => None,
    }
}

/// The days from `first_back` to `last_back` days before `today`.
fn days_back(today: Date, first_back: u32, last_back: u32) -> NamedDate {
    let back = |days: u32| today - time::Duration::days(i64::from(days));
    NamedDate::Days {
        first: back(first_back),
        last: back(last_back),
    }
}

/// Days in a unit of time a text counts in.
fn unit_days(word: &str) -> Option<u32> {
    match word.trim_end_matches('s') {
        "day" => Some(1),
        "week" => Some(7),
        "month" => Some(30),
        "year" => Some(365),
        _ => None,
    }
}

/// A count written in digits or words: `3`, `two`, `a`.
fn count_word(word: &str) -> Option<u32> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        "few" | "couple" => Some(2),
        _ => word.parse().ok().or_else(|| {
            WORDS
                .iter()
                .position(|w| *w == word)
                .and_then(|at| u32::try_from(at + 1).ok())
        }),
    }
}

/// The date starting at `words[i]`, with how many words it takes.
fn date_at(words: &[&str], i: usize) -> Option<(NamedDate, usize)> {
    let word = |k: usize| words.get(i + k).copied();
    if let Some(date) = iso_date(words[i]) {
        return Some((day_span(date), 1));
    }
    // "13 October 2023", "13th Oct", "1 February, 2023"
    if let Some(day) = day_number(words[i]) {
        // "step 1 may fail" names no date; "1 May" and "1 may 2023" do.
        let year = word(2).and_then(year_number);
        let capitalized = |w: &str| w.starts_with(|c: char| c.is_ascii_uppercase());
        let month = word(1).and_then(|w| month_named(w, year.is_some() || capitalized(w)))?;
        return Some(with_year(month, Some(day), year, 2));
    }
    let after_in = i > 0 && words[i - 1].eq_ignore_ascii_case("in");
    // "in 2023"
    if let (true, Some(year)) = (after_in, year_number(words[i])) {
        return Some((year_span(year), 1));
    }
    // "October 13, 2023", "October 13", "May 2023", "in June"
    let day = word(1).and_then(day_number);
    let year = word(1).and_then(year_number);
    let month = month_named(words[i], day.is_some() || year.is_some() || after_in)?;
    match (day, year) {
        (Some(day), _) => Some(with_year(
            month,
            Some(day),
            word(2).and_then(year_number),
            2,
        )),
        (None, Some(year)) => Some((month_span(year, month), 2)),
        (None, None) => Some((NamedDate::MonthOfAnyYear(month), 1)),
    }
}

/// The month `word` names. Names that are mostly other words ("may",
/// "march") and three-letter abbreviations count only `in_date_context`.
fn month_named(word: &str, in_date_context: bool) -> Option<Month> {
    const MONTHS: [(&str, Month); 12] = [
        ("january", Month::January),
        ("february", Month::February),
        ("march", Month::March),
        ("april", Month::April),
        ("may", Month::May),
        ("june", Month::June),
        ("july", Month::July),
        ("august", Month::August),
        ("september", Month::September),
        ("october", Month::October),
        ("november", Month::November),
        ("december", Month::December),
    ];
    let lower = word.to_ascii_lowercase();
    let (name, month) = MONTHS
        .iter()
        .find(|(name, _)| lower == *name || (lower.len() == 3 && name.starts_with(&lower)))?;
    let plain = lower == *name && !matches!(month, Month::May | Month::March);
    (plain || in_date_context).then_some(*month)
}

fn with_year(month: Month, day: Option<u8>, year: Option<i32>, used: usize) -> (NamedDate, usize) {
    match (year, day) {
        (Some(year), Some(day)) => match Date::from_calendar_date(year, month, day) {
            Ok(date) => (day_span(date), used + 1),
            Err(_) => (month_span(year, month), used + 1),
        },
        (Some(year), None) => (month_span(year, month), used + 1),
        (None, _) => (NamedDate::MonthOfAnyYear(month), used),
    }
}

fn day_span(date: Date) -> NamedDate {
    NamedDate::Days {
        first: date,
        last: date,
    }
}

fn month_span(year: i32, month: Month) -> NamedDate {
    NamedDate::Days {
        first: first_of(year, month),
        last: last_of(year, month),
    }
}

fn year_span(year: i32) -> NamedDate {
    NamedDate::Days {
        first: first_of(year, Month::January),
        last: last_of(year, Month::December),
    }
}

fn first_of(year: i32, month: Month) -> Date {
    Date::from_calendar_date(year, month, 1).unwrap_or(Date::MIN)
}

fn last_of(year: i32, month: Month) -> Date {
    let days = month.length(year);
    Date::from_calendar_date(year, month, days).unwrap_or(Date::MAX)
}

/// `2023-05-08`: the day an ISO date names.
pub(crate) fn iso_date(text: &str) -> Option<Date> {
    Date::parse(
        text,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .ok()
}

/// `13`, `13th`, `1st`: a day of the month.
fn day_number(word: &str) -> Option<u8> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|day| (1..=31).contains(day))
}

/// A four-digit year from 1900 to 2199.
fn year_number(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse().ok())
        .flatten()
        .filter(|year| (1900..2200).contains(year))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn day(date: Date) -> NamedDate {
        day_span(date)
    }

    #[test]
    fn days_months_and_years_are_read_in_english_and_iso_forms() {
        let cases: [(&str, Vec<NamedDate>); 10] = [
            (
                "What painting did Melanie show on October 13, 2023?",
                vec![day(date!(2023 - 10 - 13))],
            ),
            (
                "What did Gina find on 1 February, 2023?",
                vec![day(date!(2023 - 02 - 01))],
            ),
            (
                "the week before 3rd Aug 2023",
                vec![day(date!(2023 - 08 - 03))],
            ),
            (
                "What did John host in May 2023?",
                vec![month_span(2023, Month::May)],
            ),
            (
                "logs from 2023-05-08 and 2024-02-30",
                vec![day(date!(2023 - 05 - 08))],
            ),
            (
                "When did Melanie go camping in June?",
                vec![NamedDate::MonthOfAnyYear(Month::June)],
            ),
            ("May I march on? The March report; step 1 may fail", vec![]),
            ("beach trips in 2023, port 2023", vec![year_span(2023)]),
            (
                "shipped 13th Oct",
                vec![NamedDate::MonthOfAnyYear(Month::October)],
            ),
            (
                "between 30 February 2023 and Dec 2024",
                vec![
                    month_span(2023, Month::February),
                    month_span(2024, Month::December),
                ],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(dates_named_in(text), expected, "{text}");
        }
    }

    #[test]
    fn dates_relative_to_the_day_asked_are_read() {
        let today = date!(2023 - 04 - 20);
        let cases = [
            ("what did I cook yesterday?", day(date!(2023 - 04 - 19))),
            (
                "I met her 3 days ago",
                span(date!(2023 - 04 - 16), date!(2023 - 04 - 18)),
            ),
            (
                "a week ago",
                span(date!(2023 - 04 - 12), date!(2023 - 04 - 14)),
            ),
            (
                "last week",
                span(date!(2023 - 04 - 10), date!(2023 - 04 - 16)),
            ),
            (
                "last month",
                span(date!(2023 - 03 - 01), date!(2023 - 03 - 31)),
            ),
            (
                "last year",
                span(date!(2022 - 01 - 01), date!(2022 - 12 - 31)),
            ),
            (
                "during the last 2 weeks",
                span(date!(2023 - 04 - 06), today),
            ),
            ("over the past year", span(date!(2022 - 04 - 20), today)),
        ];
        for (text, expected) in cases {
            assert_eq!(relative_dates_in(text, today), [expected], "{text}");
        }
        for text in ["How many days ago did I meet Emma?", "the last time", "ago"] {
            assert!(relative_dates_in(text, today).is_empty(), "{text}");
        }
    }

    fn span(first: Date, last: Date) -> NamedDate {
        NamedDate::Days { first, last }
    }

    #[test]
    fn a_month_of_any_year_is_near_that_month_in_every_year() {
        let june = NamedDate::MonthOfAnyYear(Month::June);
        assert_eq!(june.days_away(date!(2021 - 06 - 30)), 0);
        assert_eq!(june.days_away(date!(2023 - 07 - 02)), 2);
        assert_eq!(june.days_away(date!(2023 - 01 - 01)), 151);
    }
}
