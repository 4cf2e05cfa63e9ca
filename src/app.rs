//! Runs one command line to an exit code; the only place that prints tool errors.

use std::io::Write as _;

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::exit::Exit;

/// The tool itself failed (as opposed to a model drifting, which is a finding).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Lock(#[from] crate::lock::LockError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("error: {0}")]
    Usage(String),
    #[error("error: {0}")]
    Audit(#[from] crate::audit::plan::AuditError),
    #[error("{0}")]
    Daemon(#[from] crate::daemon::DaemonError),
    #[error("error: {0}")]
    Io(String),
}

/// Runs the command and returns the process's exit code.
#[must_use]
pub fn run(cli: &Cli) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Error;
        }
    };
    let outcome = runtime.block_on(dispatch(cli));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "{error}");
            Exit::Error
        }
    }
}

async fn dispatch(cli: &Cli) -> Result<Exit, AppError> {
    let out = cmd::Output { quiet: cli.quiet };
    match &cli.command {
        Command::Init { force } => cmd::init::run(&cli.config, *force, out),
        Command::Lock {
            pins,
            samples,
            max_cost,
        } => {
            let options = cmd::lock::LockOptions {
                pins: pins.clone(),
                samples: *samples,
                max_cost: *max_cost,
            };
            cmd::lock::run(&cli.config, &options, out).await
        }
        Command::Check {
            pins,
            format,
            strict,
            no_probes,
            notify,
            max_cost,
            output,
        } => {
            let options = cmd::check::Options {
                pins: pins.clone(),
                format: *format,
                strict: *strict,
                no_probes: *no_probes,
                notify: *notify,
                max_cost: *max_cost,
                output: output.clone(),
            };
            cmd::check::run(&cli.config, &options, out).await
        }
        Command::Daemon { reset_store } => {
            Ok(crate::daemon::run(&cli.config, *reset_store, cli.quiet).await?)
        }
        Command::History { pin, since, format } => {
            cmd::history::run(&cli.config, pin.as_deref(), since, *format).await
        }
        Command::Deprecations {
            within,
            data,
            format,
        } => cmd::deprecations::run(&cli.config, within.as_deref(), *data, *format, out).await,
        Command::Alerts {
            command: crate::cli::AlertsCommand::Test { channel },
        } => cmd::alerts::test(&cli.config, channel.as_deref(), out).await,
        Command::Demo => cmd::demo::run(out).await,
        Command::Sim { scenario, listen } => cmd::sim::run(scenario, *listen, out).await,
    }
}
