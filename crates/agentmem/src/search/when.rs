//! Dates a question names (`on 3 June, 2023`, `in May 2023`, `October 13`,
//! `2023-05-08`), so recall can favour what was said around them: asked
//! what was decided on a day, the memories of that day answer.
//!
//! Only calendar dates are read — a day, a month or a year, in English or
//! ISO form. Relative phrases (`last week`) need a "now" the question does
//! not give, and are left to the text match.

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
    fn a_month_of_any_year_is_near_that_month_in_every_year() {
        let june = NamedDate::MonthOfAnyYear(Month::June);
        assert_eq!(june.days_away(date!(2021 - 06 - 30)), 0);
        assert_eq!(june.days_away(date!(2023 - 07 - 02)), 2);
        assert_eq!(june.days_away(date!(2023 - 01 - 01)), 151);
    }
}
