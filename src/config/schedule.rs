//! Cron expressions as pins.toml takes them: 6 fields (with seconds), UTC; a 5-field crontab
//! line is accepted by prepending `0` seconds. Parsed when the config loads, so a bad line is a
//! config error with its location, never a surprise at daemon start.

use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;

/// A schedule ready for the scheduler, with the note to log when it was rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub expression: String,
    pub rewritten_from: Option<String>,
}

/// Why an expression is not a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    pub message: String,
    /// Byte range of the offending field within the expression, when one field is to blame.
    pub field: Option<std::ops::Range<usize>>,
}

/// Field names in 6-field order.
const FIELDS: [&str; 6] = [
    "seconds",
    "minutes",
    "hours",
    "day of month",
    "month",
    "day of week",
];

/// Normalises and validates `expression`.
pub fn parse(expression: &str) -> Result<Schedule, String> {
    parse_located(expression).map_err(|e| e.message)
}

/// `parse`, saying which field is wrong.
pub fn parse_located(expression: &str) -> Result<Schedule, ScheduleError> {
    let spans = field_spans(expression);
    let offset = usize::from(spans.len() == 5);
    match parse_whole(expression) {
        Ok(schedule) => Ok(schedule),
        Err(message) if spans.len() == 5 || spans.len() == 6 => {
            let bad = (0..spans.len()).find(|&i| {
                let mut fields = ["*"; 6];
                fields[0] = "0";
                fields[i + offset] = &expression[spans[i].clone()];
                cron(&fields.join(" ")).is_err()
            });
            Err(match bad {
                Some(i) => ScheduleError {
                    message: format!(
                        "`{expression}`: the {} field `{}` is out of range or not cron syntax",
                        FIELDS[i + offset],
                        &expression[spans[i].clone()]
                    ),
                    field: Some(spans[i].clone()),
                },
                None => ScheduleError {
                    message,
                    field: None,
                },
            })
        }
        Err(message) => Err(ScheduleError {
            message,
            field: None,
        }),
    }
}

/// Byte ranges of the whitespace-separated fields.
fn field_spans(expression: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in expression.char_indices().chain([(expression.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                spans.push(s..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    spans
}

fn parse_whole(expression: &str) -> Result<Schedule, String> {
    let trimmed = expression.split_whitespace().collect::<Vec<_>>().join(" ");
    let fields = trimmed.split(' ').count();
    let (full, rewritten_from) = match fields {
        6 => (trimmed, None),
        5 => (format!("0 {trimmed}"), Some(trimmed)),
        n => {
            return Err(format!(
                "`{expression}` has {n} fields; expected 6 (sec min hour dom mon dow) or 5"
            ));
        }
    };
    cron(&full).map_err(|e| format!("`{expression}` is not a valid cron expression: {e}"))?;
    Ok(Schedule {
        expression: full,
        rewritten_from,
    })
}

fn cron(expression: &str) -> Result<Cron, croner::errors::CronError> {
    Cron::new(expression).with_seconds_required().parse()
}

/// The time between two consecutive runs after `now` (the schedule's interval, as seen now).
#[must_use]
pub fn interval(schedule: &Schedule, now: DateTime<Utc>) -> Option<Duration> {
    let cron = cron(&schedule.expression).ok()?;
    let mut runs = cron.iter_after(now);
    let first = runs.next()?;
    let second = runs.next()?;
    (second - first).to_std().ok()
}

/// How many times the schedule runs in the `span` after `now`, counting at most `cap` (a
/// schedule every second runs 86,400 times a day).
#[must_use]
pub fn runs_within(schedule: &Schedule, now: DateTime<Utc>, span: Duration, cap: u64) -> u64 {
    let Ok(cron) = cron(&schedule.expression) else {
        return 0;
    };
    let Ok(span) = chrono::Duration::from_std(span) else {
        return cap;
    };
    let until = now + span;
    let mut runs = 0;
    for at in cron.iter_after(now) {
        if at > until || runs >= cap {
            break;
        }
        runs += 1;
    }
    runs
}

/// The schedule's first run at or after `at`; `None` when it never runs again.
#[must_use]
pub fn first_from(schedule: &Schedule, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let cron = cron(&schedule.expression).ok()?;
    let run = cron.find_next_occurrence(&at, true).ok()?;
    // A run inside `at`'s second counts from its start: only one at or after `at` is wanted.
    if run >= at {
        Some(run)
    } else {
        cron.find_next_occurrence(&at, false).ok()
    }
}

/// Runs a year on average, from the span the next `runs` runs after `now` take: a weekly or a
/// weekday schedule is counted over its whole pattern, not by the day after `now` alone.
/// `None` when the schedule never runs again.
#[must_use]
pub fn runs_a_year(schedule: &Schedule, now: DateTime<Utc>, runs: usize) -> Option<f64> {
    let cron = cron(&schedule.expression).ok()?;
    let mut last = now;
    let mut counted = 0usize;
    for at in cron.iter_after(now).take(runs.max(1)) {
        last = at;
        counted += 1;
    }
    let span = (last - now).num_milliseconds() as f64 / 1000.0;
    (counted > 0 && span > 0.0).then(|| counted as f64 * 365.0 * 86_400.0 / span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_a_year_average_over_the_schedule_s_pattern() {
        let now = DateTime::parse_from_rfc3339("2026-12-04T10:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for (expression, per_year) in [
            ("0 0 * * * *", 8_760.0),
            ("* * * * * *", 31_536_000.0),
            // Weekly, from a Friday: 52 a year, not 0 (none in the next day).
            ("0 0 9 * * MON", 52.14),
            // Weekdays at 09:00: 5 of 7 days.
            ("0 0 9 * * MON-FRI", 260.7),
        ] {
            let got = runs_a_year(&parse(expression).unwrap(), now, 1_000).unwrap();
            assert!(
                (got - per_year).abs() / per_year < 0.01,
                "{expression}: {got}"
            );
        }
    }

    #[test]
    fn runs_in_a_day_follow_the_schedule() {
        let day = Duration::from_secs(86_400);
        let now = DateTime::parse_from_rfc3339("2026-12-05T10:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for (expression, runs) in [
            ("0 0 * * * *", 24),
            ("0 */15 * * * *", 96),
            ("0 0 6 * * *", 1),
            ("* * * * * *", 1_000),
        ] {
            let schedule = parse(expression).unwrap();
            assert_eq!(
                runs_within(&schedule, now, day, 1_000),
                runs,
                "{expression}"
            );
        }
    }

    #[test]
    fn five_fields_get_seconds_and_six_stay() {
        let s = parse("*/15 * * * *").unwrap();
        assert_eq!(s.expression, "0 */15 * * * *");
        assert_eq!(s.rewritten_from.as_deref(), Some("*/15 * * * *"));
        let s = parse("0 0 * * * *").unwrap();
        assert_eq!(
            (s.expression.as_str(), s.rewritten_from),
            ("0 0 * * * *", None)
        );
        assert!(parse("* * *").unwrap_err().contains("3 fields"));
        assert!(
            parse("99 * * * * *")
                .unwrap_err()
                .contains("seconds field `99`")
        );
    }

    #[test]
    fn the_bad_field_is_located() {
        for (expression, field, at) in [
            ("61 * * * * *", "seconds", 0..2),
            ("0 0 25 * * *", "hours", 4..6),
            ("0 0 * * 13 *", "month", 8..10),
            ("*/5 * 32 * *", "day of month", 6..8),
            ("*/5 * * 32 *", "month", 8..10),
            ("0  0 * * * nine", "day of week", 11..15),
        ] {
            let e = parse_located(expression).unwrap_err();
            assert!(e.message.contains(field), "{expression}: {}", e.message);
            assert_eq!(e.field, Some(at), "{expression}");
        }
        assert_eq!(parse_located("* * *").unwrap_err().field, None);
    }

    #[test]
    fn interval_between_runs() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let hourly = parse("0 0 * * * *").unwrap();
        assert_eq!(interval(&hourly, now), Some(Duration::from_secs(3600)));
        let every_two = parse("*/2 * * * * *").unwrap();
        assert_eq!(interval(&every_two, now), Some(Duration::from_secs(2)));
    }
}
