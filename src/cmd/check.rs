//! `modelpin check`: one audit of every pin, judged against modelpin.lock.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::app::AppError;
use crate::audit::judge::{Case, judge};
use crate::audit::{Plan, observe};
use crate::cli::Format;
use crate::cmd::{Output, now_rfc3339, plan_line, probes_of, select_pins, transport_for};
use crate::config::Config;
use crate::lock::LoadedLock;
use crate::report::{PinReport, Report, human, to_json};
use crate::transport::Transport;

pub struct Options {
    pub pins: Vec<String>,
    pub format: Format,
    pub strict: bool,
    pub no_probes: bool,
}

pub async fn run(config_path: &Path, options: &Options, out: Output) -> Result<u8, AppError> {
    let config = crate::config::load_from_env(config_path)?;
    let lock = crate::lock::read(&config.settings.lockfile)?;
    let cancel = crate::cmd::interrupt_token(out);
    let transport = transport_for(&config)?;
    let report = audit(&config, lock.as_ref(), options, out, cancel, &transport).await?;
    let text = match options.format {
        Format::Human => human::render(&report),
        Format::Json => to_json(&report),
    };
    print!("{text}");
    Ok(report.exit_code)
}

/// Runs the audit and judges it: the report `check` prints.
pub async fn audit(
    config: &Config,
    lock: Option<&LoadedLock>,
    options: &Options,
    out: Output,
    cancel: CancellationToken,
    transport: &Transport,
) -> Result<Report, AppError> {
    let pins = select_pins(config, &options.pins)?;
    if lock.is_none() {
        out.progress(&format!(
            "warning: {} does not exist yet: run `modelpin lock` to record a baseline",
            config.settings.lockfile.display()
        ));
    }
    let samples = options.no_probes.then_some(1);
    out.progress(&format!("check: {}", plan_line(config, &pins, samples)));
    let started_at = now_rfc3339();
    let plan = Plan {
        config,
        pins: pins.clone(),
        samples,
        retry: crate::retry::RetryPolicy {
            max_attempts: config.settings.max_attempts,
            ..crate::retry::RetryPolicy::default()
        },
        cancel,
    };
    let observations = observe(&plan, transport).await;
    let finished_at = now_rfc3339();
    let reports = pins
        .iter()
        .zip(&observations)
        .map(|(pin, obs)| {
            let locked = lock.and_then(|l| l.lock.pins.get(&pin.id));
            let findings = judge(&Case::new(pin, probes_of(config, pin), obs, locked));
            PinReport::new(pin, obs, locked, findings)
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
