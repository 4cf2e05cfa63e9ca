//! What the daemon will spend at the schedules in force, said once at start (and by `lock` and
//! `check`): audits, calls, tokens and USD a day and a month. Each pin's schedule ticks with an
//! identity check; its behaviour budget (`daemon::budget`) makes some ticks behaviour audits. The
//! figures are averages over the schedule's next runs (`budget::Rhythm`), so a weekly pin counts
//! a seventh of an audit a day, not zero or one.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use crate::config::{Config, Pin};
use crate::daemon::budget::Budget;
use crate::daemon::state::schedule_of;
use crate::lock::LoadedLock;

/// Days a month is counted as.
const MONTH_DAYS: f64 = 30.0;
const YEAR_DAYS: f64 = 365.0;

/// Planned spend over every pin for one day, on average over the schedules.
#[derive(Debug, Default)]
pub struct Daily {
    /// Ticks of the schedules.
    pub audits: f64,
    /// Of them, behaviour audits, and their calls.
    pub behaviour: f64,
    pub behaviour_calls: f64,
    /// The identity-only ticks' calls.
    pub identity_calls: f64,
    pub calls: f64,
    pub tokens: f64,
    /// USD for the priced pins.
    pub usd: f64,
    /// Pins with no price (their cost is not in `usd`).
    pub unpriced: usize,
    /// Pins without a baseline: no call until `modelpin lock`.
    pub unbaselined: usize,
}

/// Behaviour audits a year at `pin`'s schedule and behaviour budget, averaged over the
/// schedule's next runs; at least one.
#[must_use]
pub fn audits_a_year(config: &Config, pin: &Pin, budget: &Budget, now: DateTime<Utc>) -> f64 {
    schedule_of(config, &pin.id)
        .and_then(|s| budget.rhythm(&s, now))
        .map_or(1.0, |r| r.behaviour)
        .max(1.0)
}

impl Daily {
    /// Each pin's two plans against `lock`, times its ticks of either kind a day.
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
            let budget = Budget::of(config, pin, lock);
            let Some(rhythm) = budget.rhythm(&schedule, now) else {
                continue;
            };
            let behaviour = rhythm.behaviour / YEAR_DAYS;
            let identity = rhythm.identity() / YEAR_DAYS;
            let (b, i) = (&budget.behaviour, &budget.identity);
            daily.audits += rhythm.ticks / YEAR_DAYS;
            daily.behaviour += behaviour;
            daily.behaviour_calls += b.calls as f64 * behaviour;
            daily.identity_calls += i.calls as f64 * identity;
            daily.calls += b.calls as f64 * behaviour + i.calls as f64 * identity;
            daily.tokens += b.tokens as f64 * behaviour + i.tokens as f64 * identity;
            daily.usd += b.usd * behaviour + i.usd * identity;
            daily.unpriced += usize::from(!b.unpriced.is_empty());
            daily.unbaselined += b.unbaselined;
        }
        daily
    }

    /// The line the daemon logs at start.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("planned spend at these schedules: {}", self.figures())
    }

    /// The figures: audits a day and of which kind, calls and tokens a day, USD a day and a
    /// month, and what they leave out.
    #[must_use]
    pub fn figures(&self) -> String {
        let mut line = format!(
            "{} audits a day, {} of them behaviour audits ({} calls) and the rest identity only ({} calls): about {} calls and {} tokens a day, about ${:.4} a day and ${:.2} a month ({MONTH_DAYS} days)",
            amount(self.audits),
            amount(self.behaviour),
            amount(self.behaviour_calls),
            amount(self.identity_calls),
            amount(self.calls),
            amount(self.tokens),
            self.usd,
            self.usd * MONTH_DAYS
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

/// A count a day: whole when it is one or at least 10, else to two places (0.96 behaviour
/// audits a day).
fn amount(x: f64) -> String {
    if (x - x.round()).abs() < 0.005 || x >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::{Daily, amount};

    #[test]
    fn the_line_says_a_day_and_a_month_of_either_kind_and_what_it_leaves_out() {
        // Hourly at the defaults: a behaviour audit of 316 calls every 25th tick, 6 otherwise.
        let behaviour = 24.0 / 25.0;
        let identity = 24.0 - behaviour;
        let daily = Daily {
            audits: 24.0,
            behaviour,
            behaviour_calls: 316.0 * behaviour,
            identity_calls: 6.0 * identity,
            calls: 316.0 * behaviour + 6.0 * identity,
            tokens: 3_800.0 * behaviour + 60.0 * identity,
            usd: 0.013,
            unpriced: 1,
            unbaselined: 0,
        };
        assert_eq!(
            daily.describe(),
            "planned spend at these schedules: 24 audits a day, 0.96 of them behaviour audits (303 calls) and the rest identity only (138 calls): about 442 calls and 5030 tokens a day, about $0.0130 a day and $0.39 a month (30 days); 1 pin without a `price` not counted"
        );
    }

    #[test]
    fn amounts_are_whole_when_they_are() {
        for (x, text) in [
            (24.0, "24"),
            (0.96, "0.96"),
            (23.999_9, "24"),
            (1.0 / 7.0, "0.14"),
            (7_584.4, "7584"),
            (12.4, "12"),
            (0.0, "0"),
        ] {
            assert_eq!(amount(x), text, "{x}");
        }
    }
}
