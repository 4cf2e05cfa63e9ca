//! `[traffic]`: the daemon's OTLP/HTTP traces receiver and how GenAI spans are matched to pins.
//!
//! With no table every default applies: the receiver is on, open on the daemon's (loopback)
//! listener, and a pin matches spans that asked for its model from its provider kind. The
//! allow-lists narrow that (a service, a gateway's address); `provider_names` widens it to the
//! names a gateway or custom instrumentation writes.

use std::time::Duration;

use toml::Spanned;

use super::Traffic;
use super::check::Check;
use super::raw::RawTraffic;

/// Spans kept per pin for judging: enough for counts and examples, bounded in memory.
pub(crate) const DEFAULT_WINDOW: usize = 1000;
/// How often pins with new spans are judged.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Trace requests decoded at once; one more is answered 429 (the OTLP back-pressure signal).
pub(crate) const DEFAULT_MAX_REQUESTS: usize = 4;

const MAX_WINDOW: usize = 100_000;
const MAX_INTERVAL: Duration = Duration::from_secs(60);
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest service name, address or provider name accepted: what a span's values are cut to.
const MAX_NAME: usize = 256;

pub(crate) fn traffic(check: &mut Check, raw: Option<RawTraffic>) -> Traffic {
    let raw = raw.unwrap_or_default();
    Traffic {
        enabled: raw.enabled.unwrap_or(true),
        token_env: raw.token_env.and_then(|v| check.env_name(&v)),
        services: names(check, raw.services, "services"),
        server_addresses: names(check, raw.server_addresses, "server_addresses"),
        provider_names: names(check, raw.provider_names, "provider_names")
            .into_iter()
            .map(|n| n.to_ascii_lowercase())
            .collect(),
        window: raw
            .window
            .and_then(|w| bounded_count(check, &w, "window", MAX_WINDOW))
            .unwrap_or(DEFAULT_WINDOW),
        interval: raw
            .interval
            .and_then(|i| interval(check, &i))
            .unwrap_or(DEFAULT_INTERVAL),
        max_requests: raw
            .max_requests
            .and_then(|m| bounded_count(check, &m, "max_requests", 64))
            .unwrap_or(DEFAULT_MAX_REQUESTS),
    }
}

fn names(check: &mut Check, raw: Option<Vec<Spanned<String>>>, what: &str) -> Vec<String> {
    raw.unwrap_or_default()
        .iter()
        .filter_map(|n| check.label(n, what, MAX_NAME))
        .collect()
}

fn bounded_count(
    check: &mut Check,
    value: &Spanned<usize>,
    what: &str,
    max: usize,
) -> Option<usize> {
    let n = check.at_least_one(value, what)?;
    if n <= max {
        return Some(n);
    }
    check.error(
        value.span(),
        format!("`{what}` is {n}; at most {max} is allowed"),
    );
    None
}

fn interval(check: &mut Check, value: &Spanned<String>) -> Option<Duration> {
    let d = check.duration(value, "interval")?;
    if (MIN_INTERVAL..=MAX_INTERVAL).contains(&d) {
        return Some(d);
    }
    check
        .error(
            value.span(),
            format!(
                "`interval` must be between 100ms and 60s, found `{}`",
                value.get_ref()
            ),
        )
        .help("traffic is judged this often; 1s shows a reroute within two seconds");
    None
}
