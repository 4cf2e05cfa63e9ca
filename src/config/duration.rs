//! Durations as people write them in config files and on the command line: `90s`, `1h30m`.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// What a valid duration looks like, for error messages.
pub(crate) const DURATION_HELP: &str =
    "use whole numbers with units ms, s, m, h or d, largest first, like `90s`, `10m` or `1h30m`";

/// Parses `500ms`, `60s`, `10m`, `4h`, `90d` and combinations such as `1h30m` or `2d12h`.
///
/// Units must appear largest first and at most once each; numbers are whole. The error is a
/// complete sentence naming the input.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    parse(input).ok_or_else(|| format!("invalid duration `{input}`: {DURATION_HELP}"))
}

/// Units from largest to smallest, with their length in milliseconds.
const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Whether `input` is written as a duration (whole numbers with units, largest first) whose
/// length passes what milliseconds in 64 bits hold (over 500 million years): "longer than
/// anything", as opposed to no duration at all.
#[must_use]
pub fn overflows(input: &str) -> bool {
    millis(input).is_some_and(|ms| ms > u128::from(u64::MAX))
}

/// The instant `input` (a duration) before `now`; a duration reaching before the earliest time
/// there is (or past 64 bits of milliseconds) means the epoch: all of history, not an error.
/// `Err` when `input` is no duration.
pub fn since(input: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if overflows(input) {
        return Ok(DateTime::UNIX_EPOCH);
    }
    let back = parse_duration(input)?;
    Ok(ago(back, now).unwrap_or(DateTime::UNIX_EPOCH))
}

/// `back` before `now`; `None` before the earliest time there is.
#[must_use]
pub fn ago(back: Duration, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    chrono::TimeDelta::from_std(back)
        .ok()
        .and_then(|back| now.checked_sub_signed(back))
}

fn parse(input: &str) -> Option<Duration> {
    let ms = u64::try_from(millis(input)?).ok()?;
    Some(Duration::from_millis(ms))
}

/// The milliseconds a well-formed duration stands for, on 128 bits and saturating (a number
/// too long for them reads as the largest); `None` when `input` is not written as a duration.
fn millis(input: &str) -> Option<u128> {
    let mut rest = input;
    let mut total: u128 = 0;
    let mut smallest_so_far = usize::MAX;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        if digits == 0 {
            return None;
        }
        let number = rest[..digits].parse::<u128>().unwrap_or(u128::MAX);
        rest = &rest[digits..];
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = UNITS.iter().position(|(u, _)| *u == &rest[..letters])?;
        if smallest_so_far != usize::MAX && unit <= smallest_so_far {
            return None;
        }
        smallest_so_far = unit;
        total = total.saturating_add(number.saturating_mul(u128::from(UNITS[unit].1)));
        rest = &rest[letters..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{overflows, parse_duration};

    #[test]
    fn only_a_well_formed_duration_too_long_for_64_bits_overflows() {
        let table = [
            ("213503982335d", true),
            ("99999999999999999999999999999999999999999d", true),
            ("18446744073709551616ms", true),
            ("18446744073709551615ms", false),
            ("7d", false),
            ("99999999999999999999x", false),
            ("1m1h", false),
            ("", false),
            ("d", false),
        ];
        for (input, want) in table {
            assert_eq!(overflows(input), want, "{input}");
        }
    }

    #[test]
    fn parses_the_documented_forms() {
        let table = [
            ("500ms", 500),
            ("60s", 60_000),
            ("10m", 600_000),
            ("4h", 14_400_000),
            ("90d", 7_776_000_000),
            ("1h30m", 5_400_000),
            ("2d12h", 216_000_000),
            ("1m30s250ms", 90_250),
            ("0s", 0),
        ];
        for (input, millis) in table {
            assert_eq!(
                parse_duration(input),
                Ok(Duration::from_millis(millis)),
                "{input}"
            );
        }
    }

    #[test]
    fn rejects_everything_else() {
        for input in [
            "",
            "10",
            "s",
            "10x",
            "1.5h",
            "-5s",
            " 5s",
            "5s ",
            "5 s",
            "30m1h",
            "1h1h",
            "1H",
            "99999999999999999999d",
            "999999999999999d",
        ] {
            assert!(parse_duration(input).is_err(), "{input:?} parsed");
        }
    }

    #[test]
    fn error_names_the_input_and_the_fix() {
        assert_eq!(
            parse_duration("10x").unwrap_err(),
            "invalid duration `10x`: use whole numbers with units ms, s, m, h or d, largest first, like `90s`, `10m` or `1h30m`"
        );
    }
}
