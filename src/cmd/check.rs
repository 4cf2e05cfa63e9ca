//! `modelpin check`: one audit of every pin, judged against modelpin.lock.

use std::path::Path;

use chrono::Utc;
use tokio_util::sync::CancellationToken;

use crate::app::AppError;
use crate::audit::judge::{Case, judge_with_statistics};
use crate::audit::lifecycle::{Facts, ProviderSignals, load_facts, provider_signals};

use crate::audit::{Observation, Plan, observe};
use crate::cli::Format;
use crate::cmd::progress::{Progress, planned};
use crate::cmd::{Output, now_rfc3339, plan_line, probes_of, select_pins, transport_for};
use crate::config::{Config, Pin};
use crate::lifecycle::signals::from_hint;
use crate::lifecycle::{Fact, Lifecycle, PinRef, resolve};
use crate::lock::LoadedLock;
use crate::report::{PinReport, Report, github, human, junit, to_json};
use crate::transport::Transport;

pub struct Options {
    pub pins: Vec<String>,
    pub format: Format,
    pub strict: bool,
    pub no_probes: bool,
    /// Send notifications for the report (`--notify`).
    pub notify: bool,
    /// Spend cap for this audit (`--max-cost`), over `settings.max_cost_usd`.
    pub max_cost: Option<f64>,
    /// Also write the report in `format` here; the human table still goes to stdout.
    pub output: Option<std::path::PathBuf>,
}

/// What an audit runs with besides the config and the lock.
pub struct Env<'a> {
    pub out: Output,
    pub cancel: CancellationToken,
    pub transport: &'a Transport,
    /// Lifecycle facts (built-in table and feeds), loaded once per run.
    pub facts: &'a Facts,
}

pub async fn run(config_path: &Path, options: &Options, out: Output) -> Result<u8, AppError> {
    let config = crate::config::load_from_env(config_path)?;
    let lock = crate::lock::read(&config.settings.lockfile)?;
    let transport = transport_for(&config)?;
    let facts = load_facts(&config, &transport).await;
    for warning in &facts.warnings {
        out.progress(&format!("warning: {warning}"));
    }
    let env = Env {
        out,
        cancel: crate::cmd::interrupt_token(out),
        transport: &transport,
        facts: &facts,
    };
    let report = audit(&config, lock.as_ref(), options, &env).await?;
    let text = render(&config, &report, options.format);
    match &options.output {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| AppError::Io(format!("cannot write {}: {e}", path.display())))?;
            crate::cmd::emit(&human::render(&report));
        }
        None => crate::cmd::emit(&text),
    }
    if options.format == Format::Github {
        append_step_summary(&report, out);
    }
    if options.notify {
        crate::cmd::alerts::notify(&config, &report, out).await?;
    }
    Ok(report.exit_code)
}

fn render(config: &Config, report: &Report, format: Format) -> String {
    match format {
        Format::Human => human::render(report),
        Format::Json => to_json(report),
        Format::Junit => junit::render(report),
        Format::Github => {
            let text = std::fs::read_to_string(&config.path).unwrap_or_default();
            let line = |pin: &str| pin_line(&text, pin);
            github::render(report, &config.path.to_string_lossy(), &line)
        }
    }
}

/// The line of `id = "<pin>"` in pins.toml, for annotations that point at the pin.
fn pin_line(text: &str, pin: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim();
            l.starts_with("id")
                && l.split_once('=')
                    .is_some_and(|(k, v)| k.trim() == "id" && v.trim().trim_matches('"') == pin)
        })
        .map(|i| i + 1)
}

/// Appends the Markdown summary to `$GITHUB_STEP_SUMMARY` when the runner sets it.
fn append_step_summary(report: &Report, out: Output) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, github::summary(report).as_bytes()));
    if let Err(e) = appended {
        out.progress(&format!(
            "warning: cannot append to $GITHUB_STEP_SUMMARY: {e}"
        ));
    }
}

/// Runs the audit and judges it: the report `check` prints.
pub async fn audit(
    config: &Config,
    lock: Option<&LoadedLock>,
    options: &Options,
    env: &Env<'_>,
) -> Result<Report, AppError> {
    let pins = select_pins(config, &options.pins)?;
    if lock.is_none() {
        env.out.progress(&format!(
            "warning: {} does not exist yet: run `modelpin lock` to record a baseline",
            config.settings.lockfile.display()
        ));
    }
    let samples = options.no_probes.then_some(1);
    env.out
        .progress(&format!("check: {}", plan_line(config, &pins, samples)));
    let progress = Progress::start(env.out, "check", planned(config, &pins, samples));
    let started_at = now_rfc3339();
    let plan = Plan::new(
        config,
        pins.clone(),
        samples,
        options.max_cost,
        env.cancel.clone(),
        progress.counter(),
    );
    let (observations, mut signals) = tokio::join!(
        observe(&plan, env.transport),
        provider_signals(config, &pins, env.transport)
    );
    progress.finish();
    let finished_at = now_rfc3339();
    let reports = pins
        .iter()
        .zip(&observations)
        .map(|(pin, obs)| {
            let locked = lock.and_then(|l| l.lock.pins.get(&pin.id));
            let seen = signals.remove(&pin.id).unwrap_or_default();
            let life = lifecycle_of(config, pin, obs, &seen, env.facts);
            let case = Case::new(pin, probes_of(config, pin), obs, locked)
                .with_lifecycle(life.clone(), seen.signals)
                .with_alpha(config.settings.alpha);
            let (findings, verdict) = judge_with_statistics(&case);
            PinReport::new(pin, obs, locked, findings)
                .with_lifecycle(&life)
                .with_behaviour(verdict.as_ref())
        })
        .collect();
    Ok(Report::new(
        config.digest.clone(),
        lock.map(|l| l.digest.clone()),
        started_at,
        finished_at,
        reports,
        options.strict,
    ))
}

/// The pin's lifecycle from every source: table and feeds, the provider's models endpoint, and
/// the lifecycle headers on its own answers.
fn lifecycle_of(
    config: &Config,
    pin: &Pin,
    obs: &Observation,
    seen: &ProviderSignals,
    facts: &Facts,
) -> Lifecycle {
    let pin_ref = PinRef::from(pin);
    let now = Utc::now();
    let hints = obs
        .replies()
        .flat_map(|(_, r)| r.lifecycle.iter())
        .filter_map(from_hint);
    let live: Vec<Fact> = seen
        .signals
        .iter()
        .cloned()
        .chain(hints)
        .map(|signal| signal.fact_for(&pin_ref, now))
        .collect();
    resolve(
        &pin_ref,
        facts.facts.iter().chain(&live),
        now,
        &config.settings.warn_before,
    )
}
