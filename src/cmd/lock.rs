//! `modelpin lock`: record what each pin serves as the baseline in modelpin.lock.

use std::path::Path;
use std::sync::Arc;

use crate::audit::locking::{Locked, estimate, lock};
use crate::audit::plan::select_pins;
use crate::audit::run::{Context, Request, Samples};
use crate::cli::LockArgs;
use crate::cmd::AppError;
use crate::cmd::{Output, transport_for};
use crate::config::Config;
use crate::exit::Exit;
use crate::lock::{LOCK_VERSION, LoadedLock, Lock, LockError};
use crate::problem::Problem;

/// Exit 0 when every selected pin was recorded, 1 when a pinned model does not exist, 3 when a
/// pin could not be measured (its previous baseline, if any, is kept).
pub async fn run(config_path: &Path, options: &LockArgs, out: Output) -> Result<Exit, AppError> {
    let config = crate::config::load_from_env(config_path)?;
    crate::cmd::warn_config(&config, out);
    lock_pins(&config, options, out).await
}

/// Locks the selected pins of an already loaded config.
pub async fn lock_pins(config: &Config, options: &LockArgs, out: Output) -> Result<Exit, AppError> {
    let path = &config.settings.lockfile;
    // Held from reading the previous lock to writing the new one: a second `lock` waits, on the
    // blocking pool so the runtime's workers stay free.
    let guarded = path.clone();
    let _guard = tokio::task::spawn_blocking(move || {
        crate::lock::WriterGuard::acquire(&guarded, |guard| {
            out.progress(&format!(
                "lock: another `modelpin lock` is writing {} (it holds {}); waiting for it to finish",
                guarded.display(),
                guard.display()
            ));
        })
    })
    .await
    .map_err(|e| AppError::Failed(format!("waiting for the lock file: {e}")))??;
    crate::lock::check_writable(path)?;
    let previous = match crate::lock::read(path) {
        Ok(previous) => previous,
        Err(e @ (LockError::Invalid { .. } | LockError::Conflict { .. })) => {
            Some(recover_previous(config, &options.pins, &e, out)?)
        }
        Err(e) => return Err(e.into()),
    };
    let pins = select_pins(config, &options.pins)?;
    let request = Request {
        pins,
        samples: options.samples.map_or(Samples::Baseline, Samples::Each),
        max_cost: options.max_cost,
        strict: false,
        resolve: None,
    };
    let spend = (options.max_cost, options.yes);
    let tally = Arc::default();
    let estimate = estimate(config, &request);
    let progress = crate::cmd::announce("lock", config, &estimate, spend, Arc::clone(&tally), out)?;
    let transport = transport_for(config)?;
    let ctx = Context {
        transport: &transport,
        facts: None,
        cancel: crate::cmd::interrupt_token(),
        progress: tally,
    };
    let locking = lock(config, previous, &request, &ctx).await;
    progress.finish();
    let path = config.settings.lockfile.display();
    // An interrupted lock records nothing, so what it would have recorded (served models,
    // sample-size advice) is not said: only that the lock was left alone.
    if locking.interrupted {
        out.progress(&format!(
            "interrupted: {} of {} answered; {path} left as it was (a baseline is recorded only by a lock that finishes)",
            locking.answered,
            crate::words::count(locking.planned, "planned call")
        ));
        return Ok(Exit::Inconclusive);
    }
    for notice in &locking.notices {
        out.progress(notice);
    }
    if locking.recorded == 0 {
        out.progress(&format!(
            "{path} not written: no pin could be recorded (see above)"
        ));
    } else {
        crate::lock::write(&config.settings.lockfile, &locking.lock)?;
        out.progress(&format!("wrote {path}"));
        if let Ok(Some(written)) = crate::lock::read(&config.settings.lockfile) {
            crate::cmd::check::watched(config, &request.pins, Some(&written), out);
        }
    }
    Ok(match locking.worst {
        Locked::Recorded => Exit::Ok,
        Locked::NotFound => Exit::Failed,
        Locked::Partial | Locked::Unmeasured => Exit::Inconclusive,
    })
}

/// The baselines an unreadable lock still holds, as the previous lock: the way out a check's
/// error names. A `lock --pin` never drops another pin's baseline silently: when the file's
/// pins cannot be told (not JSON at all), or some pin not being re-locked cannot be read back
/// (its entry is damaged, or the two sides of a merge conflict disagree on it), nothing is
/// written and the error says which baselines would be lost and how to go on. A full `lock`
/// re-records every pin, so it goes ahead with what could be read. Either way the unreadable
/// bytes are kept beside the lock.
fn recover_previous(
    config: &Config,
    selected: &[String],
    error: &LockError,
    out: Output,
) -> Result<LoadedLock, AppError> {
    let path = &config.settings.lockfile;
    let recovered = crate::lock::recover(path);
    let relocked = |id: &String| selected.is_empty() || selected.contains(id);
    let lost: Vec<&String> = recovered
        .disagree
        .iter()
        .chain(&recovered.unreadable)
        .filter(|id| !relocked(id))
        .collect();
    if !selected.is_empty() && recovered.unknown {
        return Err(AppError::Explained(
            Problem::new(error.to_string())
                .note("its pins cannot be read at all, so `lock --pin` would drop the baselines of every other pin it holds")
                .help("fix the file, or run `modelpin lock` (every pin) to record all baselines afresh; the unreadable file is then kept aside"),
        ));
    }
    if !lost.is_empty() {
        let ids: Vec<&str> = lost.iter().map(|s| s.as_str()).collect();
        let flags: Vec<String> = ids.iter().map(|id| format!("--pin {id}")).collect();
        let asked: Vec<String> = selected.iter().map(|id| format!("--pin {id}")).collect();
        return Err(AppError::Explained(
            Problem::new(error.to_string())
                .note(format!(
                    "the baselines of {} cannot be read back (damaged, or the two sides of a conflict disagree); re-locking only the pins asked for would drop them",
                    ids.join(", ")
                ))
                .help(format!(
                    "resolve the file, or re-lock those pins too: `modelpin lock {} {}`",
                    asked.join(" "),
                    flags.join(" ")
                )),
        ));
    }
    let aside = crate::lock::set_aside(path).map_err(|e| {
        AppError::io(
            format!("cannot move the unreadable {} aside", path.display()),
            e,
        )
    })?;
    let kept: Vec<&str> = recovered.pins.keys().map(String::as_str).collect();
    out.progress(&format!(
        "warning: {} was unreadable ({}); kept as {}; recording a new baseline, with the baselines it still holds ({})",
        path.display(),
        error,
        aside.display(),
        if kept.is_empty() {
            "none".to_owned()
        } else {
            kept.join(", ")
        }
    ));
    Ok(LoadedLock {
        lock: Lock {
            lock_version: LOCK_VERSION,
            modelpin_version: env!("CARGO_PKG_VERSION").to_owned(),
            config_digest: config.digest.clone(),
            pins: recovered.pins,
        },
        digest: String::new(),
    })
}
