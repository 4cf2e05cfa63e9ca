//! The files exactly as written: pins.toml version 1 and one probe file.
//!
//! No defaults and no checks beyond TOML types live here; `deny_unknown_fields` makes a typo an
//! error instead of a silently ignored key. Values a later check may complain about are
//! `Spanned`, so the complaint can point at them.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;
use toml::value::Datetime;

pub(crate) type Str = Spanned<String>;
/// Tables keyed by name (`[providers.NAME]`); the key's span gives back the file order.
pub(crate) type Named<T> = BTreeMap<Str, Spanned<T>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPins {
    /// Checked to be 1 before decoding, so it is not looked at again.
    #[allow(dead_code)]
    pub version: i64,
    pub settings: Option<RawSettings>,
    #[serde(default)]
    pub providers: Named<RawProvider>,
    #[serde(default)]
    pub pin: Vec<Spanned<RawPin>>,
    #[serde(default)]
    pub alerts: Named<RawAlert>,
    pub traffic: Option<RawTraffic>,
    pub scan: Option<RawScan>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScan {
    pub min_level: Option<Str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTraffic {
    pub enabled: Option<bool>,
    pub token_env: Option<Str>,
    pub services: Option<Vec<Str>>,
    pub server_addresses: Option<Vec<Str>>,
    pub provider_names: Option<Vec<Str>>,
    pub window: Option<Spanned<usize>>,
    pub interval: Option<Str>,
    pub max_requests: Option<Spanned<usize>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSettings {
    pub lockfile: Option<Str>,
    pub store: Option<Str>,
    pub store_password_env: Option<Str>,
    pub lease: Option<Str>,
    pub schedule: Option<Str>,
    pub timeout: Option<Str>,
    pub budget: Option<Str>,
    pub concurrency: Option<Spanned<usize>>,
    pub max_attempts: Option<Spanned<usize>>,
    pub retention: Option<Str>,
    pub max_cost_usd: Option<Spanned<f64>>,
    pub alpha: Option<Spanned<f64>>,
    pub false_alarms_per_year: Option<Spanned<f64>>,
    pub behavior_calls_per_day: Option<Spanned<u64>>,
    pub warn_before: Option<Vec<Str>>,
    pub deprecation_feeds: Option<Vec<Str>>,
    pub metrics: Option<Str>,
    pub metrics_public: Option<Spanned<bool>>,
    pub api_token_env: Option<Str>,
    pub external_url: Option<Str>,
    pub breaker_failures: Option<Spanned<u32>>,
    pub breaker_cooldown: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProvider {
    pub kind: Str,
    pub api_key_env: Option<Str>,
    pub base_url: Option<Str>,
    pub concurrency: Option<Spanned<usize>>,
    pub headers: Option<BTreeMap<Str, Str>>,
    pub api_version: Option<Str>,
    pub seed: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPin {
    pub id: Str,
    pub provider: Str,
    pub model: Str,
    pub deployment: Option<Str>,
    pub accept: Option<Spanned<Vec<Str>>>,
    pub probes: Option<Vec<Str>>,
    pub samples: Option<Spanned<u32>>,
    pub price: Option<RawPrice>,
    pub cost_tolerance: Option<Spanned<f64>>,
    pub upstream: Option<Spanned<Vec<Str>>>,
    pub retires_on: Option<Spanned<Datetime>>,
    pub schedule: Option<Str>,
    pub alerts: Option<Vec<Str>>,
    pub first_tokens: Option<bool>,
    pub first_token_samples: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrice {
    pub input: Spanned<f64>,
    pub output: Spanned<f64>,
    pub cached_input: Option<Spanned<f64>>,
}

/// One flat table for every channel kind: which keys a kind takes is checked after decoding, so
/// a key from another kind gets a precise message rather than "unknown field".
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAlert {
    pub kind: Str,
    pub smtp: Option<Str>,
    pub from: Option<Str>,
    pub to: Option<Spanned<Vec<Str>>>,
    pub username_env: Option<Str>,
    pub password_env: Option<Str>,
    pub url: Option<Str>,
    pub secret_env: Option<Str>,
    pub url_env: Option<Str>,
    pub send_resolved: Option<bool>,
    pub repeat: Option<Str>,
    pub min_severity: Option<Str>,
}

/// A `probes/*.toml` file. `normalize` sits at the top level, not in `[expect]`: it applies to
/// the categorical comparison with the baseline as well as to the pass/fail rule.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProbe {
    pub id: Str,
    pub prompt: Str,
    pub system: Option<Str>,
    pub max_tokens: Option<Spanned<u32>>,
    pub temperature: Option<Spanned<f64>>,
    pub compare: Option<Str>,
    pub normalize: Option<Vec<Str>>,
    pub expect: Option<Spanned<RawExpect>>,
}

/// Exactly one key must be present; checked after decoding.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpect {
    pub equals: Option<Str>,
    pub contains: Option<Str>,
    pub regex: Option<Str>,
    pub one_of: Option<Spanned<Vec<String>>>,
    pub json: Option<Spanned<bool>>,
}
