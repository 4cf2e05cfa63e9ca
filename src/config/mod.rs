//! `pins.toml` and `probes/*.toml`: what the user expects, validated once.
//!
//! Raw serde types mirror the files exactly (`deny_unknown_fields`); `load` turns them into one
//! validated `Config` whose fields are never optional "just in case". Every rejection names the
//! file, line and column, shows the line with a caret and, for unknown keys, the nearest valid key.
//!
//! Loading runs in stages, each of which must pass before the next starts: TOML syntax; `version`;
//! the literal-secret scan (every secret found is reported, masked); decoding into the raw types
//! (serde stops at its first mismatch, so one error); then validation, which reports every
//! independent problem in pins.toml and the probe files at once, ordered by file, line and column.

mod alerts;
mod check;
mod confusables;
mod decode;
mod diagnostic;
mod duration;
mod ident;
pub mod location;
mod pins;
mod probe;
mod probes;
mod providers;
mod raw;
pub mod schedule;
mod secrets;
mod settings;
#[cfg(test)]
pub(crate) use pins::DEFAULT_FIRST_TOKEN_SAMPLES;
pub(crate) use pins::{FIRST_TOKEN_INPUTS, MAX_SAMPLES};
pub(crate) use probe::probe_digest;
pub use settings::{
    DEFAULT_BEHAVIOR_CALLS_PER_DAY, DEFAULT_FALSE_ALARMS_PER_YEAR, DEFAULT_MAX_COST_USD,
};
pub(crate) use settings::{DEFAULT_LEASE, DEFAULT_WARN_BEFORE_DAYS};
mod source;
mod traffic;
mod url;
pub mod webhook_key;
pub use webhook_key::WebhookKey;

#[cfg(test)]
pub(crate) mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::NaiveDate;
use toml_edit::{Item, Value};

use crate::provider::{Endpoint, ProviderKind};
pub use crate::severity::Severity;
pub use crate::stats::expect::{Compare, Expect, Normalize};
pub use schedule::Schedule;

pub use diagnostic::{ConfigError, Diagnostic};
pub use duration::{ago, parse_duration, since as since_ago};

use check::Check;
use decode::decode;
use probes::Probes;
use raw::RawPins;
use source::Source;

/// The only `version` of pins.toml this build reads.
pub const PINS_VERSION: i64 = 1;

/// Loads and validates `path` (pins.toml) and the probe files it names, reading API keys through
/// `env` only. Relative paths in the file (lockfile, store, probe globs, local feeds) are resolved
/// against the directory of `path`; diagnostics show `path` as given. Alert channel secrets are
/// checked only when set (see `load_for`).
pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    load_with(path, env, env, ChannelSecrets::WhenSet)
}

/// Whether the variables holding alert channel secrets must be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelSecrets {
    /// Commands that deliver notifications (`daemon`, `alerts test`, `check --notify`): a
    /// channel whose secret variable is unset is a config error, never an unsigned or
    /// unauthenticated send.
    Required,
    /// Commands that only audit: secrets are checked when set, so CI needs no SMTP password.
    WhenSet,
}

/// What a command needs from the process environment besides pins.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Provider API keys (every command that calls a provider).
    pub provider_keys: bool,
    pub channel_secrets: ChannelSecrets,
}

/// `load` reading the process environment, requiring what `needs` says.
pub fn load_for(path: &Path, needs: Needs) -> Result<Config, ConfigError> {
    let real = |name: &str| std::env::var(name).ok();
    let keys = |name: &str| {
        std::env::var(name)
            .ok()
            .or_else(|| Some("(not needed)".to_owned()))
    };
    if needs.provider_keys {
        load_with(path, &real, &real, needs.channel_secrets)
    } else {
        load_with(path, &real, &keys, needs.channel_secrets)
    }
}

/// `load_for` a command that calls no provider and sends nothing (`history`, `deprecations`):
/// provider key variables need not be set; everything else is read from the environment.
pub fn load_without_keys(path: &Path) -> Result<Config, ConfigError> {
    load_for(
        path,
        Needs {
            provider_keys: false,
            channel_secrets: ChannelSecrets::WhenSet,
        },
    )
}

fn load_with(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    key_env: &dyn Fn(&str) -> Option<String>,
    channel_secrets: ChannelSecrets,
) -> Result<Config, ConfigError> {
    let bytes = read_pins(path)?;
    let text =
        String::from_utf8(bytes).map_err(|e| not_utf8(path, e.as_bytes(), e.utf8_error()))?;
    let redactor = diagnostic_redactor(&text, env);
    from_text(path, text, env, key_env, channel_secrets).map_err(|e| e.scrubbed(&redactor))
}

/// Largest pins.toml read: a thousand pins with their prices are a few hundred kilobytes.
const MAX_PINS_BYTES: u64 = 4 * 1024 * 1024;

/// pins.toml's bytes, at most `MAX_PINS_BYTES`. The path is the command line's, so any file
/// is taken (`--config <(generate)` is a pipe); only the bound applies.
fn read_pins(path: &Path) -> Result<Vec<u8>, Diagnostic> {
    use std::io::Read as _;
    let cannot = |err: std::io::Error| {
        let mut d = Diagnostic::new(format!("cannot read `{}`: {err}", path.display()));
        if err.kind() == std::io::ErrorKind::NotFound {
            d.help("run `modelpin init` to write an example, or pass `--config PATH`");
        }
        d
    };
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|file| file.take(MAX_PINS_BYTES + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_PINS_BYTES {
        let mut d = Diagnostic::new(format!(
            "`{}` is larger than {} MiB: no pins.toml is",
            path.display(),
            MAX_PINS_BYTES / (1024 * 1024)
        ));
        d.help("check that `--config` names pins.toml");
        return Err(d);
    }
    Ok(bytes)
}

/// Masks, in config diagnostics, every value a diagnostic could quote that is a secret: the
/// variables pins.toml names (`api_key_env = "OPENAI_API_KEY"`) and every variable of the
/// process whose name says it holds one (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`). A snippet
/// quotes a line of whatever file it points at, and a probe path may lead to one that holds them.
fn diagnostic_redactor(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::redact::Redactor {
    let named = text
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .filter_map(env);
    let by_name = std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(names_a_secret))
        .filter_map(|(_, value)| value.into_string().ok());
    crate::redact::Redactor::new(named.chain(by_name))
}

/// Whether a variable's name says it holds a credential.
fn names_a_secret(name: &str) -> bool {
    const MARKS: [&str; 9] = [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "WEBHOOK",
    ];
    let upper = name.to_ascii_uppercase();
    MARKS.iter().any(|mark| upper.contains(mark))
}

/// Validates `text` as the contents of pins.toml at `path` (probe files are read relative to
/// it). The loader's whole logic without the first read: the entry point for property tests and
/// the fuzzer.
pub fn load_text(
    path: &Path,
    text: String,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    from_text(path, text, env, env, ChannelSecrets::WhenSet)
}

fn from_text(
    path: &Path,
    text: String,
    env: &dyn Fn(&str) -> Option<String>,
    key_env: &dyn Fn(&str) -> Option<String>,
    channel_secrets: ChannelSecrets,
) -> Result<Config, ConfigError> {
    let src = Source::parse(path, text)?;
    check_version(&src)?;
    let secrets = secrets::scan(&src);
    if !secrets.is_empty() {
        return Err(ConfigError::new(secrets));
    }
    let raw: RawPins = decode(&src)?;
    validate(&src, raw, env, key_env, channel_secrets)
}

/// Where the first byte that is not UTF-8 sits, as line and column (of characters before it).
fn not_utf8(path: &Path, bytes: &[u8], error: std::str::Utf8Error) -> Diagnostic {
    let good = &bytes[..error.valid_up_to()];
    let line = good.split(|b| *b == b'\n').count();
    let start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
    let mut d = Diagnostic::new(format!(
        "`{}` is not UTF-8 text: byte 0x{:02x} at {line}:{column}",
        path.display(),
        bytes[error.valid_up_to()]
    ));
    d.help("save the file as UTF-8 (pins.toml is TOML, which is UTF-8 only)");
    d
}

/// `load` with keys read from the process environment.
pub fn load_from_env(path: &Path) -> Result<Config, ConfigError> {
    load(path, &|name| std::env::var(name).ok())
}

fn validate(
    src: &Source,
    raw: RawPins,
    env: &dyn Fn(&str) -> Option<String>,
    key_env: &dyn Fn(&str) -> Option<String>,
    channel_secrets: ChannelSecrets,
) -> Result<Config, ConfigError> {
    let base = src.path.parent().unwrap_or(Path::new(""));
    let mut check = Check::new(src);
    let settings = settings::settings(&mut check, raw.settings, base);
    let (providers, known) =
        providers::providers(&mut check, raw.providers, settings.concurrency, key_env);
    let secrets = alerts::Secrets {
        env,
        required: channel_secrets == ChannelSecrets::Required,
    };
    let (alerts, channel_names) = alerts::alerts(&mut check, raw.alerts, &secrets);
    let mut probes = Probes::new(base);
    let refs = pins::Refs {
        providers: &known,
        alerts: &channel_names,
    };
    let pins = pins::pins(&mut check, raw.pin, &refs, &mut probes);
    let traffic = traffic::traffic(&mut check, raw.traffic);
    let scan = scan(&mut check, raw.scan);
    let warnings = ident::look_alikes(src, &check.names);
    let errors = check.finish();
    if !errors.is_empty() {
        return Err(ConfigError::new(errors));
    }
    let (probes, probe_bytes) = probes.finish();
    let mut digested = src.text.as_bytes().to_vec();
    digested.extend_from_slice(&probe_bytes);
    let mut shared = without_member_settings(src).into_bytes();
    shared.extend_from_slice(&probe_bytes);
    Ok(Config {
        path: src.path.clone(),
        digest: probe::sha256(&digested),
        fleet_digest: probe::sha256(&shared),
        settings,
        providers,
        pins,
        probes,
        alerts,
        traffic,
        scan,
        warnings,
    })
}

/// Settings that differ between members of one fleet without changing what they audit: how
/// each reaches the store and where each listens.
const MEMBER_SETTINGS: [&str; 4] = ["store", "store_password_env", "metrics", "metrics_public"];

/// pins.toml's text with the lines of `[settings]`' `MEMBER_SETTINGS` keys left out.
fn without_member_settings(src: &Source) -> String {
    let Some(settings) = src.root().get("settings").and_then(|s| s.as_table_like()) else {
        return src.text.clone();
    };
    let mut cuts: Vec<std::ops::Range<usize>> = MEMBER_SETTINGS
        .iter()
        .filter_map(|key| {
            let (k, v) = settings.get_key_value(key)?;
            let start = k.span()?.start;
            let end = v.span().map_or(start, |s| s.end);
            let line_start = src.text[..start].rfind('\n').map_or(0, |i| i + 1);
            let line_end = src.text[end..]
                .find('\n')
                .map_or(src.text.len(), |i| end + i);
            Some(line_start..line_end)
        })
        .collect();
    cuts.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(src.text.len());
    let mut at = 0;
    for cut in cuts {
        if cut.start >= at {
            out.push_str(&src.text[at..cut.start]);
            at = cut.end;
        }
    }
    out.push_str(&src.text[at..]);
    out
}

/// `[scan]`, each key checked where it is written.
fn scan(check: &mut Check, raw: Option<raw::RawScan>) -> Scan {
    use crate::severity::Severity as Level;
    let levels = [Level::Info, Level::Warning, Level::Error];
    let names: Vec<&str> = levels.iter().map(|l| l.as_str()).collect();
    let min_level = raw.and_then(|r| r.min_level).and_then(|value| {
        let name = check.choice(&value, "level", &names)?;
        levels.into_iter().find(|l| l.as_str() == name)
    });
    Scan { min_level }
}

/// `version = 1` must be there before anything else is read: another version's keys would only
/// produce confusing "unknown key" errors.
fn check_version(src: &Source) -> Result<(), Diagnostic> {
    let Some((key, item)) = src.root().get_key_value("version") else {
        let mut d = src.error(0..0, "missing `version` in pins.toml");
        d.help("add `version = 1` as the first line");
        return Err(d);
    };
    let span = item.span().or_else(|| key.span()).unwrap_or(0..0);
    match item {
        Item::Value(Value::Integer(v)) if *v.value() == PINS_VERSION => Ok(()),
        Item::Value(Value::Integer(v)) => {
            let mut d = src.error(span, format!("unsupported pins.toml version {}", v.value()));
            d.help("this modelpin reads `version = 1`; upgrade modelpin or rewrite the file for version 1");
            Err(d)
        }
        _ => {
            let mut d = src.error(span, "`version` must be an integer");
            d.help("write `version = 1`");
            Err(d)
        }
    }
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Path of `pins.toml` as given.
    pub path: PathBuf,
    /// `sha256:<hex>` of pins.toml's bytes followed by each loaded probe file's bytes in probe-id order.
    pub digest: String,
    /// `digest` without the settings each fleet member may set its own way (`MEMBER_SETTINGS`):
    /// what members on one store must agree on.
    pub fleet_digest: String,
    pub settings: Settings,
    /// In file order.
    pub providers: Vec<Provider>,
    /// In file order.
    pub pins: Vec<Pin>,
    /// Every probe any pin uses, sorted by id.
    pub probes: Vec<Probe>,
    /// In file order.
    pub alerts: Vec<AlertChannel>,
    pub traffic: Traffic,
    pub scan: Scan,
    /// What the file allows but a reader should know (ids that differ only in look-alike
    /// characters), one line each, with the places; the commands print them as warnings.
    pub warnings: Vec<String>,
}

/// `[scan]`: defaults for `modelpin scan` run in this project.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Findings below this level are left out (`--min-level` overrides it); `None`: every level.
    pub min_level: Option<Severity>,
}

/// `[traffic]`: the daemon's OTLP traces receiver and how spans match pins.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// `POST /v1/traces` is served (default true).
    pub enabled: bool,
    /// The variable holding the bearer token `/v1/traces` requires, when set.
    pub token_env: Option<String>,
    /// `service.name` values whose spans are read; empty means every service.
    pub services: Vec<String>,
    /// `server.address` values whose spans are read; empty means any (or none).
    pub server_addresses: Vec<String>,
    /// Provider names, lowercase, that match every pin besides its kind's own.
    pub provider_names: Vec<String>,
    /// Spans kept per pin for judging (the newest).
    pub window: usize,
    /// How often pins with new spans are judged.
    pub interval: Duration,
    /// Trace requests decoded at once.
    pub max_requests: usize,
}

impl Config {
    /// The directory of pins.toml (`""` for a bare `pins.toml`): files the config names inside
    /// it are read only when they stay inside it (`files::read`).
    #[must_use]
    pub fn project(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new(""))
    }

    /// The probes a pin uses, in its order.
    #[must_use]
    pub fn probes_of(&self, pin: &Pin) -> Vec<&Probe> {
        pin.probes
            .iter()
            .filter_map(|id| self.probes.iter().find(|p| &p.id == id))
            .collect()
    }

    /// A redactor for every secret this config names: the provider keys, the alert channels'
    /// secrets and the daemon's bearer tokens, read through `env`.
    #[must_use]
    pub fn redactor(&self, env: &dyn Fn(&str) -> Option<String>) -> crate::redact::Redactor {
        let keys = self
            .providers
            .iter()
            .filter_map(|p| p.endpoint.api_key.as_ref())
            .map(|k| k.expose().to_owned());
        let alert_vars = self.alerts.iter().flat_map(|c| c.kind.secret_vars());
        let token_var = self
            .settings
            .api_token_env
            .iter()
            .chain(&self.traffic.token_env)
            .cloned();
        let values = alert_vars.chain(token_var).filter_map(|var| env(&var));
        crate::redact::Redactor::new(keys.chain(values))
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// Resolved relative to the directory of pins.toml.
    pub lockfile: PathBuf,
    /// A directory (resolved relative to the directory of pins.toml) or a PostgreSQL URL.
    pub store: location::Location,
    /// How long the fleet's lease lasts without a renewal (PostgreSQL stores only): a standby
    /// takes over within two of these after the leader dies.
    pub lease: Duration,
    pub schedule: Schedule,
    pub timeout: Duration,
    pub budget: Duration,
    pub concurrency: usize,
    /// HTTP attempts per call, retries included.
    pub max_attempts: u32,
    /// Audit history older than this is pruned by the daemon.
    pub retention: Duration,
    /// Spend cap per audit, USD: probing stops when it is reached.
    /// Spend cap per audit (`DEFAULT_MAX_COST_USD` when pins.toml names none).
    pub max_cost_usd: Option<f64>,
    pub alpha: f64,
    /// The daemon's lifetime level: false `behavior_drift` alarms a pin's accumulated evidence
    /// may raise a year, on average (`alert::lifetime`). `alpha` stays the level of one audit.
    pub false_alarms_per_year: f64,
    /// The daemon's behaviour budget: calls a day per pin beyond the identity calls every tick
    /// makes (`daemon::budget`). A behaviour audit (the first-token tier and every sample of the
    /// probes) runs when the budget has paid for it; the other ticks check identity only.
    pub behavior_calls_per_day: u64,
    pub warn_before: Vec<Duration>,
    pub deprecation_feeds: Vec<String>,
    pub metrics: std::net::SocketAddr,
    /// `metrics` may be a non-loopback address (an explicit opt-in; the daemon warns).
    pub metrics_public: bool,
    /// The variable holding the bearer token `/api/*` requires, when set.
    pub api_token_env: Option<String>,
    /// Where people reach the daemon's pages (`https://modelpin.example.com`), for links in
    /// alerts; no link without it.
    pub external_url: Option<String>,
    /// The circuit breaker: this many failed attempts in a row to one provider (5xx, 429,
    /// timeouts, refused or broken connections) open it.
    pub breaker_failures: u32,
    /// How long an open breaker stays open before one call tries the provider again.
    pub breaker_cooldown: Duration,
}

#[derive(Debug, Clone)]
pub struct Provider {
    /// The table name: `[providers.NAME]`.
    pub name: String,
    pub endpoint: Endpoint,
    pub api_key_env: Option<String>,
    /// Calls in flight to this provider; defaults to `settings.concurrency`.
    pub concurrency: usize,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Defaults to `input` when not given.
    pub cached_input: f64,
}

#[derive(Debug, Clone)]
pub struct Pin {
    pub id: String,
    /// Name of a `[providers.NAME]` table.
    pub provider: String,
    pub kind: ProviderKind,
    pub model: String,
    /// Azure deployment name; defaults to `model`.
    pub deployment: String,
    /// Served IDs that count as this pin, from the file; `[model]` when not given. The lock's
    /// recorded served IDs are added by the auditor, not here.
    pub accept: Vec<String>,
    /// Probe ids, sorted, deduplicated.
    pub probes: Vec<String>,
    pub samples: u32,
    pub price: Option<Price>,
    pub cost_tolerance: f64,
    /// Accepted upstream hosts (kind `openrouter` only); empty means "not checked".
    pub upstream: Vec<String>,
    pub retires_on: Option<NaiveDate>,
    pub schedule: Option<Schedule>,
    /// Alert channel names; empty means all.
    pub alerts: Vec<String>,
    /// The first-token tier (border inputs, and logprobs where the provider reports them); on
    /// unless `first_tokens = false`.
    pub first_tokens: bool,
    /// One-token calls per border input in each audit (`first_token_samples`, default
    /// `DEFAULT_FIRST_TOKEN_SAMPLES`): the tier's cost and power; the lock is not affected.
    pub first_token_samples: u32,
}

#[derive(Debug, Clone)]
pub struct Probe {
    pub id: String,
    /// The file it came from.
    pub source: PathBuf,
    pub system: Option<String>,
    pub prompt: String,
    /// Default 16.
    pub max_tokens: u32,
    /// Default 1.0, the providers' own default; 0 to 2.
    pub temperature: f64,
    /// Default `Choice`.
    pub compare: Compare,
    /// `None`: no pass/fail rule.
    pub expect: Option<Expect>,
    /// Applied, in order, to answers before both the comparison and `expect`; default none.
    pub normalize: Vec<Normalize>,
    /// `sha256:<hex>` over what is sent (system, prompt, `max_tokens`, temperature): a change makes
    /// the baseline incomparable.
    pub digest: String,
}

#[derive(Debug, Clone)]
pub struct AlertChannel {
    pub name: String,
    pub kind: AlertKind,
    pub send_resolved: bool,
    pub repeat: Duration,
    pub min_severity: Severity,
}

/// A channel's kind and where it sends. Secrets are read from the variables named by the `*_env`
/// fields when the config loads (never echoed); a value is `None` only where the variable may be
/// unset, in commands that send nothing (`ChannelSecrets::WhenSet`).
#[derive(Debug, Clone)]
pub enum AlertKind {
    Email {
        smtp: String,
        from: String,
        to: Vec<String>,
        username_env: Option<String>,
        password_env: Option<String>,
        username: Option<crate::provider::Secret>,
        password: Option<crate::provider::Secret>,
    },
    Webhook {
        url: String,
        secret_env: Option<String>,
        /// The decoded `whsec_` secret of `secret_env`.
        signing_key: Option<WebhookKey>,
    },
    Slack {
        url_env: String,
        /// The incoming-webhook URL in `url_env`.
        url: Option<crate::provider::Secret>,
    },
    Alertmanager {
        url: String,
    },
}

impl AlertKind {
    /// The names of the variables that hold this channel's secrets.
    #[must_use]
    pub fn secret_vars(&self) -> Vec<String> {
        match self {
            AlertKind::Email {
                username_env,
                password_env,
                ..
            } => username_env.iter().chain(password_env).cloned().collect(),
            AlertKind::Webhook { secret_env, .. } => secret_env.iter().cloned().collect(),
            AlertKind::Slack { url_env, .. } => vec![url_env.clone()],
            AlertKind::Alertmanager { .. } => Vec::new(),
        }
    }
}

/// Configs for unit tests elsewhere in the crate, loaded through the real loader.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::Config;

    /// One OpenAI pin (`support-bot`) with one choice probe and one webhook channel.
    pub(crate) fn minimal_config() -> Config {
        config_with(super::tests::BASE, super::tests::PROBE)
    }

    /// Loads `pins` (probes from `probes/*.toml` unless it says otherwise) with `probe` as
    /// `probes/probe.toml`; provider keys come from a fixed fake environment.
    pub(crate) fn config_with(pins: &str, probe: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let pins = if pins.contains("probes =") {
            pins.to_owned()
        } else {
            pins.replacen(
                "model = \"gpt-4o-2024-08-06\"",
                "model = \"gpt-4o-2024-08-06\"\nprobes = [\"probes/*.toml\"]",
                1,
            )
        };
        std::fs::create_dir_all(dir.path().join("probes")).unwrap();
        std::fs::write(dir.path().join("pins.toml"), pins).unwrap();
        std::fs::write(dir.path().join("probes/probe.toml"), probe).unwrap();
        let env = |name: &str| name.ends_with("_KEY").then(|| "sk-test".to_owned());
        super::load(&dir.path().join("pins.toml"), &env).unwrap()
    }
}
