//! `[settings]`: defaults exactly as DESIGN.md documents them, paths resolved against the
//! directory of pins.toml so the tool behaves the same from any working directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::Settings;
use super::check::Check;
use super::raw::RawSettings;
use super::schedule;
use super::url::strip_scheme;

pub(crate) const DEFAULT_LOCKFILE: &str = "modelpin.lock";
pub(crate) const DEFAULT_STORE: &str = ".modelpin";
pub(crate) const DEFAULT_SCHEDULE: &str = "0 0 * * * *";
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_BUDGET: Duration = Duration::from_secs(10 * 60);
pub(crate) const DEFAULT_CONCURRENCY: usize = 16;
pub(crate) const DEFAULT_ALPHA: f64 = 0.001;
/// One false alarm of a pin's accumulated evidence in a hundred years, on average: a team of 20
/// pins is woken by it about once in five years.
pub const DEFAULT_FALSE_ALARMS_PER_YEAR: f64 = 0.01;
/// `false_alarms_per_year` accepted: from one in ten thousand years to one a day (a schedule of
/// seconds standing for days, as the time-compressed benchmark runs it, needs the high end).
pub(crate) const FALSE_ALARMS_PER_YEAR_RANGE: (f64, f64) = (0.0001, 365.0);
/// Behaviour calls a day per pin when pins.toml names none: about one behaviour audit a day at
/// the default plan (310 calls beyond the identity tick's: 256 one-token calls of the first-token
/// tier, the probes' other 54 samples), so every 25 hours at an hourly schedule. B3IT, the
/// field's cheapest published monitor, audits with 200 one-token calls a day.
pub const DEFAULT_BEHAVIOR_CALLS_PER_DAY: u64 = 300;
/// `behavior_calls_per_day` accepted: at least one call, at most one call a second's worth.
pub(crate) const BEHAVIOR_CALLS_PER_DAY_RANGE: (u64, u64) = (1, 100_000_000);
/// One try and three retries: enough to ride out a blip, few enough to stay inside a budget.
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 4;
/// How long the daemon keeps audit history.
pub(crate) const DEFAULT_RETENTION: Duration = Duration::from_secs(90 * 86_400);
/// Spend cap per audit when pins.toml names none: a guard against a plan typed wrong, not a
/// budget (a check of ten pins × three probes × ten samples on a $10/Mtok model costs cents).
pub const DEFAULT_MAX_COST_USD: f64 = 1.0;
pub(crate) const DEFAULT_WARN_BEFORE_DAYS: [u64; 3] = [90, 30, 7];
pub(crate) const DEFAULT_METRICS: &str = "127.0.0.1:9464";
/// The fleet's lease: renewed every third of it, so a standby leads within two of them after
/// the leader dies (one for the lease to run out, a third for the standby's next look).
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(15);
/// Failed attempts in a row that open a provider's breaker: a few, so a provider that is down
/// costs a handful of attempts instead of the whole plan, and more than one call's retries
/// (`max_attempts`, 4), so one unlucky call does not stop an audit.
pub(crate) const DEFAULT_BREAKER_FAILURES: u32 = 5;
pub(crate) const BREAKER_FAILURES_MAX: u32 = 1_000;
/// How long an open breaker stays open before one call tries the provider again.
pub(crate) const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_secs(5 * 60);
pub(crate) const BREAKER_COOLDOWN_MIN: Duration = Duration::from_secs(1);
pub(crate) const BREAKER_COOLDOWN_MAX: Duration = Duration::from_secs(24 * 3600);

const DAY: u64 = 86_400;

/// Validates `[settings]`; an absent table means every default. Rejected values fall back to
/// their default so the remaining checks still run (the load fails anyway).
pub(crate) fn settings(check: &mut Check, raw: Option<RawSettings>, base: &Path) -> Settings {
    let raw = raw.unwrap_or_default();
    let public = raw.metrics_public.as_ref().is_some_and(|p| *p.get_ref());
    let lease = duration_or(check, raw.lease.as_ref(), "lease", DEFAULT_LEASE);
    Settings {
        lockfile: path_or(
            check,
            raw.lockfile.as_ref(),
            "lockfile",
            DEFAULT_LOCKFILE,
            base,
        ),
        store: with_lease(store(check, &raw, base), lease),
        lease,
        schedule: raw
            .schedule
            .and_then(|s| check.schedule(&s))
            .unwrap_or_else(|| {
                schedule::parse(DEFAULT_SCHEDULE).expect("the default schedule parses")
            }),
        timeout: duration_or(check, raw.timeout.as_ref(), "timeout", DEFAULT_TIMEOUT),
        budget: duration_or(check, raw.budget.as_ref(), "budget", DEFAULT_BUDGET),
        concurrency: raw
            .concurrency
            .and_then(|c| check.at_least_one(&c, "concurrency"))
            .unwrap_or(DEFAULT_CONCURRENCY),
        max_attempts: raw
            .max_attempts
            .and_then(|c| check.at_least_one(&c, "max_attempts"))
            .map_or(DEFAULT_MAX_ATTEMPTS, |n| {
                u32::try_from(n.min(100)).unwrap_or(100)
            }),
        max_cost_usd: match raw.max_cost_usd {
            Some(c) => positive_cost(check, &c),
            None => Some(DEFAULT_MAX_COST_USD),
        },
        retention: duration_or(
            check,
            raw.retention.as_ref(),
            "retention",
            DEFAULT_RETENTION,
        ),
        alpha: raw
            .alpha
            .and_then(|a| alpha(check, &a))
            .unwrap_or(DEFAULT_ALPHA),
        false_alarms_per_year: raw
            .false_alarms_per_year
            .and_then(|r| false_alarms_per_year(check, &r))
            .unwrap_or(DEFAULT_FALSE_ALARMS_PER_YEAR),
        behavior_calls_per_day: raw
            .behavior_calls_per_day
            .and_then(|n| behavior_calls_per_day(check, &n))
            .unwrap_or(DEFAULT_BEHAVIOR_CALLS_PER_DAY),
        warn_before: warn_before(check, raw.warn_before.as_deref()),
        deprecation_feeds: feeds(check, raw.deprecation_feeds.as_deref(), base),
        metrics: raw
            .metrics
            .and_then(|m| metrics(check, &m, public))
            .unwrap_or_else(|| DEFAULT_METRICS.parse().expect("valid default")),
        metrics_public: public,
        api_token_env: raw.api_token_env.and_then(|v| check.env_name(&v)),
        external_url: raw.external_url.and_then(|u| external_url(check, &u)),
        breaker_failures: raw
            .breaker_failures
            .and_then(|n| breaker_failures(check, &n))
            .unwrap_or(DEFAULT_BREAKER_FAILURES),
        breaker_cooldown: raw
            .breaker_cooldown
            .and_then(|d| breaker_cooldown(check, &d))
            .unwrap_or(DEFAULT_BREAKER_COOLDOWN),
    }
}

/// `external_url`: an `http(s)` URL without user info, query or fragment; kept without its
/// trailing slash so paths can follow it.
fn external_url(check: &mut Check, value: &Spanned<String>) -> Option<String> {
    let text = value.get_ref().trim_end_matches('/');
    let fine = url::Url::parse(text).ok().filter(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.has_host()
            && u.username().is_empty()
            && u.password().is_none()
            && u.query().is_none()
            && u.fragment().is_none()
    });
    if fine.is_some() {
        return Some(text.to_owned());
    }
    check
        .error(
            value.span(),
            "`external_url` must be an http(s) URL without user info, query or fragment",
        )
        .help("the address people open the status page at, like `https://modelpin.example.com`: alerts link to its pin pages");
    None
}

fn breaker_failures(check: &mut Check, value: &Spanned<u32>) -> Option<u32> {
    let n = *value.get_ref();
    if (1..=BREAKER_FAILURES_MAX).contains(&n) {
        return Some(n);
    }
    check
        .error(
            value.span(),
            format!("`breaker_failures` must be between 1 and {BREAKER_FAILURES_MAX}, found {n}"),
        )
        .help(format!(
            "failed attempts in a row to one provider before its calls stop; {DEFAULT_BREAKER_FAILURES} is the default"
        ));
    None
}

fn breaker_cooldown(check: &mut Check, value: &Spanned<String>) -> Option<Duration> {
    let d = check.duration(value, "breaker_cooldown")?;
    if (BREAKER_COOLDOWN_MIN..=BREAKER_COOLDOWN_MAX).contains(&d) {
        return Some(d);
    }
    check
        .error(
            value.span(),
            format!(
                "`breaker_cooldown` must be between 1s and 24h, found {}",
                value.get_ref()
            ),
        )
        .help("how long an open breaker waits before one call tries the provider again; 5m is the default");
    None
}

/// A PostgreSQL store's session timeouts follow the fleet's lease.
fn with_lease(location: super::location::Location, lease: Duration) -> super::location::Location {
    match location {
        super::location::Location::Postgres(target) => {
            super::location::Location::Postgres(target.with_lease(lease))
        }
        sled @ super::location::Location::Sled(_) => sled,
    }
}

/// `store`: a `postgres://` URL (checked here, the password never in the file), else a directory
/// joined onto pins.toml's directory.
fn store(check: &mut Check, raw: &RawSettings, base: &Path) -> super::location::Location {
    use super::location::{Location, Target, is_postgres};
    let password_env = raw
        .store_password_env
        .as_ref()
        .and_then(|v| check.env_name(v));
    match raw.store.as_ref() {
        Some(value) if is_postgres(value.get_ref()) => {
            match Target::parse(value.get_ref(), password_env) {
                Ok(target) => Location::Postgres(target),
                Err(why) => {
                    check
                        .error(value.span(), format!("invalid PostgreSQL `store`: {why}"))
                        .help("use a libpq URL, like `postgres://modelpin@db.internal:5432/modelpin?sslmode=verify-full`; the password comes from PGPASSWORD or the variable `store_password_env` names");
                    Location::Sled(base.join(DEFAULT_STORE))
                }
            }
        }
        _ => {
            if let Some(env) = &raw.store_password_env {
                check
                    .error(
                        env.span(),
                        "`store_password_env` applies only to a PostgreSQL `store`",
                    )
                    .help("remove it, or set `store` to a `postgres://` URL");
            }
            Location::Sled(path_or(
                check,
                raw.store.as_ref(),
                "store",
                DEFAULT_STORE,
                base,
            ))
        }
    }
}

/// `value` (or `default`) joined onto pins.toml's directory; absolute paths stay as they are.
fn path_or(
    check: &mut Check,
    value: Option<&Spanned<String>>,
    what: &str,
    default: &str,
    base: &Path,
) -> PathBuf {
    let relative = value
        .and_then(|v| check.non_empty(v, what))
        .unwrap_or_else(|| default.to_string());
    base.join(relative)
}

fn duration_or(
    check: &mut Check,
    value: Option<&Spanned<String>>,
    what: &str,
    default: Duration,
) -> Duration {
    value
        .and_then(|v| check.duration(v, what))
        .unwrap_or(default)
}

fn alpha(check: &mut Check, value: &Spanned<f64>) -> Option<f64> {
    let a = *value.get_ref();
    if a > 0.0 && a < 1.0 {
        return Some(a);
    }
    check
        .error(
            value.span(),
            format!("`alpha` must be between 0 and 1 (exclusive), found {a:?}"),
        )
        .help("it is the false-alarm rate per pin per audit; 0.001 is the default");
    None
}

fn false_alarms_per_year(check: &mut Check, value: &Spanned<f64>) -> Option<f64> {
    let r = *value.get_ref();
    let (low, high) = FALSE_ALARMS_PER_YEAR_RANGE;
    if (low..=high).contains(&r) {
        return Some(r);
    }
    check
        .error(
            value.span(),
            format!("`false_alarms_per_year` must be between {low} and {high}, found {r:?}"),
        )
        .help("it is how often, on average, one pin's accumulated behaviour evidence may alarm for nothing in a year; 0.01 (once in a hundred years) is the default");
    None
}

fn behavior_calls_per_day(check: &mut Check, value: &Spanned<u64>) -> Option<u64> {
    let n = *value.get_ref();
    let (low, high) = BEHAVIOR_CALLS_PER_DAY_RANGE;
    if (low..=high).contains(&n) {
        return Some(n);
    }
    check
        .error(
            value.span(),
            format!("`behavior_calls_per_day` must be between {low} and {high}, found {n}"),
        )
        .help("it is what the daemon spends a day per pin on behaviour audits beyond the identity calls of every tick; 300 (about one behaviour audit a day at the default plan) is the default");
    None
}

fn warn_before(check: &mut Check, raw: Option<&[Spanned<String>]>) -> Vec<Duration> {
    match raw {
        None => DEFAULT_WARN_BEFORE_DAYS
            .iter()
            .map(|d| Duration::from_secs(d * DAY))
            .collect(),
        Some(values) => values
            .iter()
            .filter_map(|v| check.duration(v, "warn_before"))
            .collect(),
    }
}

/// Local feed paths are resolved against pins.toml's directory; URLs must be `https://` (or
/// `http://` to loopback).
fn feeds(check: &mut Check, raw: Option<&[Spanned<String>]>, base: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for feed in raw.unwrap_or_default() {
        let value = feed.get_ref();
        let is_http = ["http://", "https://"]
            .iter()
            .any(|scheme| strip_scheme(value, scheme).is_some());
        let resolved = if !value.contains("://") {
            Some(base.join(value).to_string_lossy().into_owned())
        } else if is_http {
            check.http_url(feed, "deprecation_feeds")
        } else {
            check
                .error(feed.span(), format!("unsupported feed URL `{value}`"))
                .help("feeds are local paths or `https://` URLs");
            None
        };
        out.extend(resolved);
    }
    out
}

/// The daemon's listener: loopback unless `metrics_public = true` says otherwise, since history
/// and metrics name every pin, model and finding.
fn metrics(check: &mut Check, value: &Spanned<String>, public: bool) -> Option<SocketAddr> {
    let Ok(addr) = value.get_ref().parse::<SocketAddr>() else {
        check
            .error(
                value.span(),
                format!("invalid `metrics` address `{}`", value.get_ref()),
            )
            .help("use an IP address and port, like `127.0.0.1:9464`");
        return None;
    };
    if !addr.ip().is_loopback() && !public {
        check
            .error(
                value.span(),
                format!("refusing to serve metrics and history on `{addr}`, which is not loopback"),
            )
            .note("anyone who can reach it reads every pin, model and finding")
            .help("keep `127.0.0.1` and scrape through a proxy, or set `metrics_public = true` (and `api_token_env`) to expose it");
        return None;
    }
    Some(addr)
}

fn positive_cost(check: &mut Check, value: &Spanned<f64>) -> Option<f64> {
    let cost = *value.get_ref();
    if cost.is_finite() && cost > 0.0 {
        return Some(cost);
    }
    check
        .error(
            value.span(),
            format!("`max_cost_usd` must be a positive amount of USD, not {cost}"),
        )
        .help("remove it to audit without a spend cap");
    None
}
