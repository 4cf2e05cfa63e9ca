//! `modelpin check`: one audit of every pin, judged against modelpin.lock, rendered for CI.

use std::path::Path;
use std::sync::Arc;

use crate::audit::Plan;
use crate::audit::plan::select_pins;
use crate::audit::run::{Audited, Context, Request, Samples, audit};
use crate::cli::{CheckArgs, Format};
use crate::cmd::AppError;
use crate::cmd::{Output, transport_for};
use crate::config::Config;
use crate::exit::Exit;
use crate::report::{Report, github, human, junit, to_json};

/// Whether the lock exists and was recorded for this pins.toml, said before any call.
fn say_lock_state(
    config: &crate::config::Config,
    lock: Option<&crate::lock::LoadedLock>,
    out: Output,
) {
    match lock {
        None => out.progress(&format!(
            "warning: {} does not exist yet: nothing to compare with, so no provider call is made and every pin is inconclusive until you run `modelpin lock` to record a baseline",
            config.settings.lockfile.display()
        )),
        Some(l) if l.lock.config_digest != config.digest => out.progress(&format!(
            "note: {} was recorded for another pins.toml ({}); pins whose entries still match are compared, the others are inconclusive",
            config.settings.lockfile.display(),
            l.lock.config_digest
        )),
        Some(_) => {}
    }
}

/// Pins of a lock that holds no baseline for them: their calls are not made.
fn warn_unbaselined(config: &Config, unbaselined: &[&crate::config::Pin], out: Output) {
    if unbaselined.is_empty() {
        return;
    }
    let ids: Vec<&str> = unbaselined.iter().map(|p| p.id.as_str()).collect();
    out.progress(&format!(
        "warning: no baseline in {} for {}: their calls are not made (nothing to compare with); run `modelpin lock --pin ID` to record them",
        config.settings.lockfile.display(),
        ids.join(", ")
    ));
}

pub async fn run(config_path: &Path, options: &CheckArgs, out: Output) -> Result<Exit, AppError> {
    let channel_secrets = if options.notify {
        crate::config::ChannelSecrets::Required
    } else {
        crate::config::ChannelSecrets::WhenSet
    };
    let config = crate::config::load_for(
        config_path,
        crate::config::Needs {
            provider_keys: true,
            channel_secrets,
        },
    )?;
    crate::cmd::warn_config(&config, out);
    let lock = crate::lock::read(&config.settings.lockfile)?;
    let transport = transport_for(&config)?;
    let pins = select_pins(&config, &options.pins)?;
    say_lock_state(&config, lock.as_ref(), out);
    let request = Request {
        pins,
        samples: if options.no_probes {
            Samples::Identity
        } else {
            Samples::Audit
        },
        max_cost: options.max_cost,
        strict: options.strict,
        resolve: options.resolve,
    };
    let ctx = Context {
        transport: &transport,
        facts: None,
        cancel: crate::cmd::interrupt_token(),
        progress: Arc::default(),
    };
    let plan = Plan::for_audit(&config, &request, ctx.watch(), lock.as_ref());
    if lock.is_some() {
        warn_unbaselined(&config, &plan.unbaselined, out);
    }
    let estimate = plan.estimate();
    let spend = (options.max_cost, options.yes);
    let progress = crate::cmd::announce(
        "check",
        &config,
        &estimate,
        spend,
        ctx.progress.clone(),
        out,
    )?;
    watched(&config, &request.pins, lock.as_ref(), out);
    let planned = estimate.calls;
    let cancel = ctx.cancel.clone();
    let Audited {
        mut report,
        warnings,
    } = audit(&plan, lock.as_ref(), &ctx).await;
    progress.finish();
    if cancel.is_cancelled() {
        out.progress(&format!(
            "interrupted: {} of {} answered; the report is inconclusive for what was not measured (`modelpin check` again to finish)",
            report.summary.calls.ok,
            crate::words::count(planned, "planned call")
        ));
    }
    for warning in &warnings {
        out.progress(&format!("warning: {warning}"));
    }
    // Notifications go out before the report is printed, so the exit code the report states is
    // the one the process ends with, a failed notify included.
    if options.notify
        && let Err(e) = crate::cmd::alerts::notify(&config, &report, out).await
    {
        eprintln!("{}", e.render());
        report.exit_code = Exit::Error;
    }
    let human =
        |report: &Report| human::render_with(report, human::Detail::for_stdout(out.verbose));
    let text = match options.format {
        Format::Human => human(&report),
        other => render(&config, &report, other),
    };
    match &options.output {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| AppError::io(format!("cannot write {}", path.display()), e))?;
            crate::cmd::emit(&human(&report));
        }
        None => crate::cmd::emit(&text),
    }
    if options.format == Format::Github {
        append_step_summary(&report, out);
    }
    Ok(report.exit_code)
}

pub(crate) fn render(config: &Config, report: &Report, format: Format) -> String {
    match format {
        Format::Human => human::render(report),
        Format::Json => to_json(report),
        Format::Junit => junit::render(report),
        Format::Github => {
            let text = std::fs::read_to_string(&config.path).unwrap_or_default();
            let lines = pin_lines(&text);
            let line = |pin: &str| lines.get(pin).copied();
            github::render(report, &config.path.to_string_lossy(), &line)
        }
    }
}

/// The line of `id = "<pin>"` in pins.toml, for annotations that point at the pin.
/// The 1-based line of each pin's `id = "…"` in pins.toml (its first, if written twice): read
/// once, so annotating every finding of every pin stays linear in the file.
fn pin_lines(text: &str) -> std::collections::HashMap<&str, usize> {
    let mut lines = std::collections::HashMap::new();
    for (i, l) in text.lines().enumerate() {
        let Some((key, value)) = l.trim().split_once('=') else {
            continue;
        };
        if key.trim() == "id" {
            lines.entry(value.trim().trim_matches('"')).or_insert(i + 1);
        }
    }
    lines
}

/// Appends the Markdown summary to `$GITHUB_STEP_SUMMARY` when the runner sets it.
pub(crate) fn append_step_summary(report: &Report, out: Output) {
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

/// What watching `pins` would spend: the daemon's plan at their schedules, a day and a month.
pub(crate) fn watched(
    config: &Config,
    pins: &[&crate::config::Pin],
    lock: Option<&crate::lock::LoadedLock>,
    out: Output,
) {
    let daily = crate::daemon::spend::Daily::of_pins(config, pins, lock, chrono::Utc::now());
    out.progress(&format!(
        "watched by `modelpin daemon` at these schedules: {}",
        daily.figures()
    ));
}

#[cfg(test)]
mod tests {
    use super::pin_lines;

    #[test]
    fn pin_lines_finds_each_id_once_in_one_pass() {
        let text = "version = 1\n\n[[pin]]\nid = \"a\"\nmodel = \"m\"\n\n[[pin]]\n  id=\"b\"\n# id = \"c\"\n[[pin]]\nid = \"a\"\n";
        let lines = pin_lines(text);
        let cases: [(&str, Option<usize>); 4] = [
            ("a", Some(4)),
            ("b", Some(8)),
            ("m", None),
            ("version", None),
        ];
        for (pin, want) in cases {
            assert_eq!(lines.get(pin).copied(), want, "{pin}");
        }
    }

    #[test]
    fn pin_lines_of_ten_thousand_pins_are_all_found() {
        let mut text = String::new();
        for i in 0..10_000 {
            text.push_str("[[pin]]\nid = \"p");
            text.push_str(&i.to_string());
            text.push_str("\"\nprovider = \"x\"\n");
        }
        let lines = pin_lines(&text);
        assert_eq!(lines.len(), 10_000);
        assert_eq!(lines.get("p0"), Some(&2));
        assert_eq!(lines.get("p9999"), Some(&(9_999 * 3 + 2)));
    }
}
