//! What the daemon will spend at the schedules in force, said once at start: calls, tokens and
//! USD a day and a month, from the plan each pin's audit would make (`audit::run::estimate`)
//! times the runs its schedule has in the next day.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::audit::run::{Request, estimate};
use crate::config::schedule::{runs_a_year, runs_within};
use crate::config::{Config, Pin};
use crate::daemon::state::schedule_of;
use crate::lock::LoadedLock;

const DAY: Duration = Duration::from_secs(86_400);
/// Days a month is counted as.
const MONTH_DAYS: u64 = 30;
/// Runs a day counted at most per pin (a schedule every second has 86,400).
const MAX_RUNS: u64 = 86_400;

/// Planned spend over every pin for one day.
#[derive(Debug, Default)]
pub struct Daily {
    pub audits: u64,
    pub calls: u64,
    pub tokens: u64,
    /// USD for the priced pins.
    pub usd: f64,
    /// Pins with no price (their cost is not in `usd`).
    pub unpriced: usize,
    /// Pins without a baseline: no call until `modelpin lock`.
    pub unbaselined: usize,
}

/// Audits a year at `pin`'s schedule, averaged over its next 1,000 runs (a weekly or weekday
/// schedule over its whole pattern); at least one.
#[must_use]
pub fn audits_a_year(config: &Config, pin: &str, now: DateTime<Utc>) -> f64 {
    schedule_of(config, pin)
        .and_then(|s| runs_a_year(&s, now, 1_000))
        .unwrap_or(1.0)
        .max(1.0)
}

impl Daily {
    /// Each pin's audit plan against `lock`, times its schedule's runs in the day after `now`.
    #[must_use]
    pub fn of(config: &Config, lock: Option<&LoadedLock>, now: DateTime<Utc>) -> Daily {
        let pins: Vec<&Pin> = config.pins.iter().collect();
        Daily::of_pins(config, &pins, lock, now)
    }

    /// `of`, for `pins` only.
    #[must_use]
    pub fn of_pins(
        config: &Config,
        pins: &[&Pin],
        lock: Option<&LoadedLock>,
        now: DateTime<Utc>,
    ) -> Daily {
        let mut daily = Daily::default();
        for &pin in pins {
            let Some(schedule) = schedule_of(config, &pin.id) else {
                continue;
            };
            let runs = runs_within(&schedule, now, DAY, MAX_RUNS);
            let request = Request {
                pins: vec![pin],
                samples: None,
                max_cost: None,
                strict: false,
            };
            let one = estimate(config, &request, lock);
            daily.audits += runs;
            daily.calls += one.calls * runs;
            daily.tokens += one.tokens * runs;
            daily.usd += one.usd * runs as f64;
            daily.unpriced += usize::from(!one.unpriced.is_empty());
            daily.unbaselined += one.unbaselined;
        }
        daily
    }

    /// The line the daemon logs at start.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("planned spend at these schedules: {}", self.figures())
    }

    /// The figures: audits, calls and tokens a day, USD a day and a month, and what they leave
    /// out.
    #[must_use]
    pub fn figures(&self) -> String {
        let words = crate::words::count;
        let mut line = format!(
            "{} a day ({}, about {}), about ${:.4} a day and ${:.2} a month ({MONTH_DAYS} days)",
            words(self.audits, "audit"),
            words(self.calls, "call"),
            words(self.tokens, "token"),
            self.usd,
            self.usd * MONTH_DAYS as f64
        );
        if self.unpriced > 0 {
            let _ = write!(
                line,
                "; {} without a `price` not counted",
                crate::words::count_of(self.unpriced, "pin")
            );
        }
        if self.unbaselined > 0 {
            let _ = write!(
                line,
                "; {} without a baseline make no call until `modelpin lock`",
                crate::words::count_of(self.unbaselined, "pin")
            );
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::Daily;

    #[test]
    fn the_line_says_a_day_and_a_month_and_what_it_leaves_out() {
        let daily = Daily {
            audits: 24,
            calls: 7_584,
            tokens: 91_008,
            usd: 1.3,
            unpriced: 1,
            unbaselined: 0,
        };
        assert_eq!(
            daily.describe(),
            "planned spend at these schedules: 24 audits a day (7584 calls, about 91008 tokens), about $1.3000 a day and $39.00 a month (30 days); 1 pin without a `price` not counted"
        );
    }
}
