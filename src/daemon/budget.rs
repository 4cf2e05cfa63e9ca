//! The daemon's behaviour budget: which ticks of a pin's schedule buy a behaviour audit.
//!
//! Identity (served ID, upstream, tokenizer, price, lifecycle: one call per probe) is checked on
//! every tick. A behaviour audit (the first-token tier and every sample of the probes) makes
//! `extra` calls more than an identity tick; `behavior_calls_per_day` pays for one every
//! `spacing = 1 day × extra / behavior_calls_per_day`, so the calls a day beyond identity stay
//! within the budget (within `slack`) however the schedule is written. A behaviour audit is due on
//! the first tick at least `spacing` after the pin's last one against the same lock, as the
//! store holds it: a restart, a failover or a `store copy` keeps the rhythm, and a new lock
//! starts with a behaviour audit.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::audit::plan::Estimate;
use crate::audit::run::{Request, Samples, estimate};
use crate::config::schedule::{Schedule, first_from, runs_a_year};
use crate::config::{Config, Pin};
use crate::lock::LoadedLock;

const DAY: Duration = Duration::from_secs(86_400);
const YEAR_SECONDS: f64 = 365.0 * 86_400.0;
/// Behaviour audits simulated when counting them a year.
const SIMULATED: usize = 1_000;
/// A tick this much early still buys the behaviour audit, so an hourly schedule with a spacing
/// of exactly a day is not pushed to 25 hours by a tick that starts a few milliseconds late.
const MAX_SLACK: Duration = Duration::from_secs(5 * 60);

/// The request of one tick: a behaviour audit (the pin's plan) or identity only (one sample a
/// probe, no first-token tier, no behaviour test).
#[must_use]
pub fn request(pin: &Pin, behaviour: bool) -> Request<'_> {
    Request {
        pins: vec![pin],
        samples: if behaviour {
            Samples::Audit
        } else {
            Samples::Identity
        },
        max_cost: None,
        strict: false,
        resolve: None,
    }
}

/// One pin's two plans and how far apart its behaviour audits are.
#[derive(Debug, Clone)]
pub struct Budget {
    pub behaviour: Estimate,
    pub identity: Estimate,
    /// The least time between two behaviour audits.
    pub spacing: Duration,
}

impl Budget {
    /// `pin`'s plans against `lock` under `settings.behavior_calls_per_day`.
    #[must_use]
    pub fn of(config: &Config, pin: &Pin, lock: Option<&LoadedLock>) -> Budget {
        let behaviour = estimate(config, &request(pin, true), lock);
        let identity = estimate(config, &request(pin, false), lock);
        let extra = behaviour.calls.saturating_sub(identity.calls);
        Budget {
            spacing: spacing(extra, config.settings.behavior_calls_per_day),
            behaviour,
            identity,
        }
    }

    /// Whether a tick at `now` buys a behaviour audit, the last one having started at `last`
    /// (`None`: none against this lock yet).
    #[must_use]
    pub fn due(&self, last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        last.is_none_or(|last| now >= earliest_after(last, self.spacing))
    }

    /// When the next behaviour audit may run, the last having started at `last`.
    #[must_use]
    pub fn next_after(&self, last: DateTime<Utc>) -> DateTime<Utc> {
        earliest_after(last, self.spacing)
    }

    /// Ticks and behaviour audits a year at `schedule` from `now`; `None` when it never runs.
    #[must_use]
    pub fn rhythm(&self, schedule: &Schedule, now: DateTime<Utc>) -> Option<Rhythm> {
        rhythm(schedule, now, self.spacing)
    }
}

/// A day × `extra` / `per_day`: zero when a behaviour audit costs nothing more than identity.
#[must_use]
pub fn spacing(extra: u64, per_day: u64) -> Duration {
    let nanos = DAY.as_nanos() * u128::from(extra) / u128::from(per_day.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// A hundredth of `spacing`, at most `MAX_SLACK`: what the budget may be overspent by.
fn slack(spacing: Duration) -> Duration {
    (spacing / 100).min(MAX_SLACK)
}

fn earliest_after(last: DateTime<Utc>, spacing: Duration) -> DateTime<Utc> {
    let wait = chrono::Duration::from_std(spacing.saturating_sub(slack(spacing)))
        .unwrap_or(chrono::Duration::MAX);
    last.checked_add_signed(wait)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// How often a pin is audited, a year.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rhythm {
    /// Ticks of the schedule (`runs_a_year` over its next 1,000).
    pub ticks: f64,
    /// Of them, behaviour audits: the due rule simulated over the next `SIMULATED` of them.
    pub behaviour: f64,
}

impl Rhythm {
    /// Identity-only ticks a year.
    #[must_use]
    pub fn identity(&self) -> f64 {
        (self.ticks - self.behaviour).max(0.0)
    }
}

/// Ticks and behaviour audits a year at `schedule` from `now`, behaviour audits at least
/// `spacing` apart; `None` when it never runs.
#[must_use]
pub fn rhythm(schedule: &Schedule, now: DateTime<Utc>, spacing: Duration) -> Option<Rhythm> {
    let ticks = runs_a_year(schedule, now, 1_000)?;
    let wait = spacing.saturating_sub(slack(spacing));
    if wait.is_zero() {
        return Some(Rhythm {
            ticks,
            behaviour: ticks,
        });
    }
    let first = first_from(schedule, now)?;
    let mut last = first;
    let mut audits = 0usize;
    while audits < SIMULATED {
        // Never the same run again: the schedule counts whole seconds.
        let from = earliest_after(last, spacing).max(last + chrono::Duration::milliseconds(1));
        let Some(next) = first_from(schedule, from).filter(|next| *next > last) else {
            break;
        };
        last = next;
        audits += 1;
    }
    let span = (last - first).num_milliseconds() as f64 / 1000.0;
    let behaviour = if audits == 0 || span <= 0.0 {
        // The schedule runs once more at most: one behaviour audit, then none.
        1.0
    } else {
        audits as f64 * YEAR_SECONDS / span
    };
    Some(Rhythm {
        ticks,
        behaviour: behaviour.min(ticks),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schedule::parse;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn spacing_is_a_day_times_the_extra_calls_over_the_budget() {
        for (extra, per_day, hours) in [
            // The defaults: 310 calls beyond identity, 300 a day.
            (310, 300, 24.8),
            (300, 300, 24.0),
            (150, 300, 12.0),
            (310, 100_000_000, 310.0 * 24.0 / 100_000_000.0),
            (0, 300, 0.0),
            (310, 0, 310.0 * 24.0),
        ] {
            let got = spacing(extra, per_day).as_secs_f64() / 3600.0;
            assert!((got - hours).abs() < 1e-6, "{extra}/{per_day}: {got} h");
        }
    }

    #[test]
    fn a_tick_buys_a_behaviour_audit_once_the_spacing_has_passed_within_its_slack() {
        let budget = |hours: f64| Budget {
            behaviour: Estimate::default(),
            identity: Estimate::default(),
            spacing: Duration::from_secs_f64(hours * 3600.0),
        };
        let last = "2026-12-06T00:00:00.700Z";
        for (hours, last, now, due) in [
            // No behaviour audit against this lock yet: the first tick buys one.
            (24.8, None, "2026-12-06T00:00:00Z", true),
            (24.8, Some(last), "2026-12-07T00:00:00.100Z", false),
            (24.8, Some(last), "2026-12-07T00:59:59Z", true),
            (24.8, Some(last), "2026-12-07T01:00:00.200Z", true),
            // Exactly a day: a tick a little earlier in its second than the last still buys it.
            (24.0, Some(last), "2026-12-07T00:00:00.100Z", true),
            (24.0, Some(last), "2026-12-06T23:54:00Z", false),
            // A tenth of an hour: the slack is a hundredth of it (3.6 s), so from 00:05:57.1.
            (0.1, Some(last), "2026-12-06T00:05:57.200Z", true),
            (0.1, Some(last), "2026-12-06T00:05:57Z", false),
            (0.0, Some(last), "2026-12-06T00:00:00.700Z", true),
        ] {
            let got = budget(hours).due(last.map(at), at(now));
            assert_eq!(got, due, "{hours} h after {last:?} at {now}");
        }
    }

    #[test]
    fn behaviour_audits_a_year_follow_the_schedule_and_the_spacing() {
        let now = at("2026-12-04T10:30:00Z");
        for (expression, hours, ticks, behaviour) in [
            // Hourly at the default budget: every 25th tick.
            ("0 0 * * * *", 24.8, 8_760.0, 8_760.0 / 25.0),
            ("0 0 * * * *", 24.0, 8_760.0, 365.0),
            ("0 0 * * * *", 0.0, 8_760.0, 8_760.0),
            ("0 0 * * * *", 0.5, 8_760.0, 8_760.0),
            // Every 20 s, a budget paying for every tick.
            ("*/20 * * * * *", 0.000_07, 1_576_800.0, 1_576_800.0),
            // Every minute, a behaviour audit every day.
            ("0 * * * * *", 24.0, 525_600.0, 365.0),
            // Weekdays at 09:00, every day's budget: every weekday tick.
            ("0 0 9 * * MON-FRI", 24.0, 260.7, 260.7),
            // Weekly: every tick.
            ("0 0 9 * * MON", 24.8, 52.14, 52.14),
        ] {
            let got = rhythm(
                &parse(expression).unwrap(),
                now,
                Duration::from_secs_f64(hours * 3600.0),
            )
            .unwrap();
            let near = |a: f64, b: f64| (a - b).abs() <= b * 0.01;
            assert!(near(got.ticks, ticks), "{expression}: {got:?}");
            assert!(
                near(got.behaviour, behaviour),
                "{expression} at {hours} h: {got:?}"
            );
            assert!(near(got.identity() + got.behaviour, got.ticks), "{got:?}");
        }
    }
}
