//! Cron expressions as the daemon takes them: 6 fields (with seconds), UTC; a 5-field crontab
//! line is accepted by prepending `0` seconds.

use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;

/// A schedule ready for the scheduler, with the note to log when it was rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub expression: String,
    pub rewritten_from: Option<String>,
}

/// Normalises and validates `expression`.
pub fn parse(expression: &str) -> Result<Schedule, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
                .contains("not a valid cron")
        );
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
