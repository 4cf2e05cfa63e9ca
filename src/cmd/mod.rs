//! One module per subcommand: parse its options, call the core, render. Each returns the
//! process's `Exit` or an `AppError`.

pub mod alerts;
pub mod check;
pub mod demo;
pub mod deprecations;
mod error;
pub mod history;
pub mod init;
pub mod init_scan;
pub mod lock;
pub mod manual;
pub mod progress;
pub mod scan;
pub mod sim;
pub mod store;
pub mod traffic;

use tokio_util::sync::CancellationToken;

pub use error::AppError;
use std::io::IsTerminal as _;

use crate::audit::plan::Estimate;
use crate::config::Config;
use crate::transport::Transport;

/// Where progress goes: stderr, unless `--quiet`.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
    /// Every evidence line in the human report (`-v`).
    pub verbose: bool,
}

impl Output {
    /// One line on stderr, control characters escaped: progress carries provider text (served
    /// IDs, refusal messages) and none of it may steer the terminal or start a line.
    pub fn progress(self, line: &str) {
        if !self.quiet {
            eprintln!("{}", crate::text::terminal(line));
        }
    }
}

/// The config's warnings (look-alike ids), one `warning:` line each on stderr.
pub fn warn_config(config: &Config, out: Output) {
    for warning in &config.warnings {
        out.progress(&format!("warning: {warning}"));
    }
}

/// The one transport of a command, as the config asks for it.
pub fn transport_for(config: &Config) -> Result<Transport, AppError> {
    Transport::for_config(config).map_err(|f| AppError::Failed(f.message))
}

/// Says what an audit will do (`estimate`, the plan's), refuses it when the estimate passes
/// the spend cap (`--max-cost`, else `settings.max_cost_usd`), and starts drawing `tally`, the
/// one the audit advances.
pub fn announce(
    label: &'static str,
    config: &Config,
    estimate: &Estimate,
    (max_cost, yes): (Option<f64>, bool),
    tally: std::sync::Arc<crate::audit::tally::Tally>,
    out: Output,
) -> Result<progress::Progress, AppError> {
    out.progress(&format!("{label}: {estimate}"));
    let cap = max_cost.or(config.settings.max_cost_usd);
    if let Some(warning) = estimate.unpriced_warning(cap) {
        out.progress(&format!("warning: {warning}"));
    }
    guard_spend(estimate, cap, yes, out)?;
    Ok(progress::Progress::start(
        out,
        label,
        progress::Planned {
            calls: estimate.calls,
            pins: estimate.pins as u64,
        },
        tally,
    ))
}

/// Plans above this many calls are confirmed on a terminal before they start: above what the
/// defaults plan for one pin (a `lock` of 1,624 calls: 240 probe calls, 104 discovery and 1,280
/// baseline one-token calls), so only a plan larger than that is questioned.
const CONFIRM_ABOVE_CALLS: u64 = 2_000;

/// Refuses a plan whose estimated cost passes the spend cap, before the first call; on a
/// terminal, asks before a large plan (`--yes` answers for the user).
pub fn guard_spend(
    estimate: &Estimate,
    cap: Option<f64>,
    yes: bool,
    out: Output,
) -> Result<(), AppError> {
    if let Some(cap) = cap
        && estimate.usd > cap
    {
        return Err(AppError::Explained(
            crate::problem::Problem::new(format!(
                "the plan ({}) is estimated at ${:.4}, over the spend cap of ${cap:.2} per audit; nothing was sent",
                crate::words::count(estimate.calls, "call"),
                estimate.usd,
            ))
            .help(format!(
                "raise the cap for this run with `--max-cost {:.2}`, or set `max_cost_usd` in [settings]; lower `samples` to spend less",
                (estimate.usd * 1.2).max(0.01)
            )),
        ));
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if yes || !interactive || out.quiet || estimate.calls <= CONFIRM_ABOVE_CALLS {
        return Ok(());
    }
    eprint!("{estimate}. Proceed? [y/N] ");
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(AppError::Usage(
            "not confirmed; nothing was sent (`--yes` skips the question)".to_owned(),
        ))
    }
}

/// A token cancelled by Ctrl-C or SIGTERM: the audit drops in-flight calls and reports them as
/// cancelled instead of dying with nothing printed.
#[must_use]
pub fn interrupt_token() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    // The command says once, at the end, what was cut short and with which counts.
    tokio::spawn(async move {
        shutdown_signal().await;
        cancel.cancel();
    });
    token
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Writes results to stdout. A reader that went away (`modelpin check | head`) is not an error
/// worth a panic: the rest of the output is dropped quietly.
pub fn emit(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}
