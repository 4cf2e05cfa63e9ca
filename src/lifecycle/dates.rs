//! Dates as lifecycle sources write them.
//!
//! Feeds, headers and SDK tables each have their own spelling — `2026-10-23`,
//! `2026-01-31T12:00:00Z`, `Wed, 11 Nov 2026 23:59:59 GMT`, `November 6th, 2024` — and a
//! hostile or sloppy value must come back as `None`, never a panic or a guessed date.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::lifecycle::Retirement;

/// A calendar date (`2026-10-23`) or a timestamp (RFC 3339, or ISO 8601 without an offset,
/// read as UTC). Surrounding whitespace is ignored; letters may be lowercase.
pub(crate) fn iso(raw: &str) -> Option<Retirement> {
    let value = raw.trim().to_ascii_uppercase();
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    if let Ok(date) = NaiveDate::parse_from_str(&value, "%Y-%m-%d") {
        return Some(Retirement::On(date));
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(&value) {
        return Some(Retirement::At(at.with_timezone(&Utc)));
    }
    NaiveDateTime::parse_from_str(&value, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|naive| Retirement::At(naive.and_utc()))
}

/// Only a calendar date, or the UTC day of a timestamp (for `announced` / `captured`).
pub(crate) fn day(raw: &str) -> Option<NaiveDate> {
    iso(raw).and_then(Retirement::date)
}

/// An HTTP-date (RFC 9110: IMF-fixdate, RFC 850 or asctime), case-insensitive.
pub(crate) fn http(raw: &str) -> Option<DateTime<Utc>> {
    let value = raw.trim();
    if value.is_empty() || value.len() > 64 || !value.is_ascii() {
        return None;
    }
    if let Ok(at) = DateTime::parse_from_rfc2822(value) {
        return Some(at.with_timezone(&Utc));
    }
    httpdate::parse_http_date(&title_case(value))
        .ok()
        .map(DateTime::<Utc>::from)
}

/// `wed, 11-nov-26 23:59:59 gmt` → `Wed, 11-Nov-26 23:59:59 GMT`, the only case httpdate reads.
fn title_case(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut after_letter = false;
    for c in value.chars() {
        out.push(if after_letter {
            c.to_ascii_lowercase()
        } else {
            c.to_ascii_uppercase()
        });
        after_letter = c.is_ascii_alphabetic();
    }
    out.replace("Gmt", "GMT")
}

/// English long dates: `January 4, 2024`, `November 6th, 2024`, `July 21st 2025`.
pub(crate) fn english(raw: &str) -> Option<NaiveDate> {
    let cleaned: String = raw.trim().replace(',', " ");
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let [month, day, year] = words.as_slice() else {
        return None;
    };
    let day = day.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let day: u32 = day.parse().ok()?;
    let year: i32 = year.parse().ok()?;
    let month = month_number(month)?;
    NaiveDate::from_ymd_opt(year, month, day)
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = name.to_ascii_lowercase();
    let index = MONTHS
        .iter()
        .position(|m| *m == lower || (lower.len() >= 3 && m.starts_with(&lower)))?;
    u32::try_from(index + 1).ok()
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};

    use super::{english, http, iso};
    use crate::lifecycle::Retirement;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn iso_dates_and_timestamps() {
        let noon = Utc.with_ymd_and_hms(2026, 1, 31, 12, 0, 0).unwrap();
        let table = [
            ("2026-10-23", Some(Retirement::On(date(2026, 10, 23)))),
            ("  2026-10-23\n", Some(Retirement::On(date(2026, 10, 23)))),
            ("2026-01-31T12:00:00Z", Some(Retirement::At(noon))),
            ("2026-01-31t12:00:00z", Some(Retirement::At(noon))),
            ("2026-01-31T13:00:00+01:00", Some(Retirement::At(noon))),
            ("2026-01-31T12:00:00", Some(Retirement::At(noon))),
            ("2026-01-31T12:00:00.000Z", Some(Retirement::At(noon))),
            ("2026-02-30", None),
            ("2026-13-01", None),
            ("", None),
            ("   ", None),
            ("null", None),
            ("tomorrow", None),
            ("2026/10/23", None),
            ("99999999999-01-01", None),
        ];
        for (raw, want) in table {
            assert_eq!(iso(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn http_dates_in_every_case_and_form() {
        let at = Utc.with_ymd_and_hms(2026, 11, 11, 23, 59, 59).unwrap();
        let table = [
            ("Wed, 11 Nov 2026 23:59:59 GMT", Some(at)),
            ("wed, 11 nov 2026 23:59:59 gmt", Some(at)),
            ("  Wed, 11 Nov 2026 23:59:59 GMT  ", Some(at)),
            ("Wednesday, 11-Nov-26 23:59:59 GMT", Some(at)),
            ("wednesday, 11-nov-26 23:59:59 gmt", Some(at)),
            ("Wed Nov 11 23:59:59 2026", Some(at)),
            (
                "Sun, 11 Nov 2018 23:59:59 GMT",
                Some(Utc.with_ymd_and_hms(2018, 11, 11, 23, 59, 59).unwrap()),
            ),
            ("Wed, 31 Nov 2026 23:59:59 GMT", None),
            ("not a date", None),
            ("", None),
            ("Wed, 11 Nov 2026 23:59:59 GMT\u{0}", None),
            ("Wéd, 11 Nov 2026 23:59:59 GMT", None),
        ];
        for (raw, want) in table {
            assert_eq!(http(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn english_long_dates() {
        let table = [
            ("November 6th, 2024", Some(date(2024, 11, 6))),
            ("July 21st, 2025", Some(date(2025, 7, 21))),
            ("January 4, 2024", Some(date(2024, 1, 4))),
            ("February 19th 2026", Some(date(2026, 2, 19))),
            ("june 30th, 2026", Some(date(2026, 6, 30))),
            ("Sept 3, 2026", Some(date(2026, 9, 3))),
            ("February 30th, 2026", None),
            ("Smarch 1, 2026", None),
            ("2026-01-01", None),
            ("", None),
        ];
        for (raw, want) in table {
            assert_eq!(english(raw), want, "{raw:?}");
        }
    }
}
